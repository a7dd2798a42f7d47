"""The three outcomes of a commit, one escape path per test (docs/concurrency.md): a call
returns when its snapshot landed, raises OutcomeUnknown when that cannot be told, and raises
anything else only when it did not land. Failures are injected into FileIO in one process;
tests/stress/test_s3_faults.py checks the same against a failing S3 server."""

import os

import pyarrow as pa
import pytest

import tarn
from tarn import s3
from tarn.errors import FileMissing, OutcomeUnknown, StorageError
from tarn.fs import FileIO
from tarn.store.snapshots import SnapshotStore

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def rows(keys, value="x"):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{value}{k}" for k in keys]})


def read(table):
    data = table.scan().to_arrow().sort_by("k")
    return list(zip(data.column("k").to_pylist(), data.column("v").to_pylist()))


def files_under(root):
    return {f for _, _, fs in os.walk(root) for f in fs}


def failing(times, original, match, error=None):
    """A FileIO method that fails `times` times on paths containing `match`, then works."""
    left = [times]

    def method(io, path, *args, **kwargs):
        if match in str(path) and left[0] != 0:
            left[0] -= 1
            raise error or StorageError(f"injected: {path}")
        return original(io, path, *args, **kwargs)

    return method


@pytest.fixture
def log_table(catalog):
    t = catalog.create_table("db.log", schema=SCHEMA)
    t.write(rows([1]))
    return t


# ---------------------------------------------------------------------------------------------
# after the snapshot file was created


def arm_after_create(monkeypatch, method, times, match="/snapshot/snapshot-"):
    """Fail FileIO.`method` on `match` paths `times` times (-1: always), from the moment a
    snapshot file has been created."""
    real_create = SnapshotStore.create
    armed = []

    def create(store, snapshot):
        created = real_create(store, snapshot)
        armed.append(True)
        return created

    original = getattr(FileIO, method)
    left = [times]

    def hooked(io, path, *args, **kwargs):
        if armed and match in str(path) and left[0] != 0:
            left[0] -= 1
            raise StorageError(f"injected after the create: {path}")
        return original(io, path, *args, **kwargs)

    monkeypatch.setattr(SnapshotStore, "create", create)
    monkeypatch.setattr(FileIO, method, hooked)


def test_a_check_after_the_create_that_fails_once_is_retried(log_table, monkeypatch):
    arm_after_create(monkeypatch, "read_bytes", 1)
    snapshot = log_table.write(rows([2]))
    monkeypatch.undo()
    assert snapshot.id == 2 and read(log_table) == [(1, "x1"), (2, "x2")]


def test_a_check_after_the_create_that_keeps_failing_is_outcome_unknown(log_table, monkeypatch):
    before = files_under(log_table.root)
    arm_after_create(monkeypatch, "read_bytes", -1)
    with pytest.raises(OutcomeUnknown, match="snapshot 2, which was created"):
        log_table.write(rows([2]))
    monkeypatch.undo()
    new = files_under(log_table.root) - before
    assert "snapshot-2" in new and any(n.startswith("data-") for n in new)  # landed: every file kept
    assert read(log_table) == [(1, "x1"), (2, "x2")]
    for s in log_table.snapshots():
        log_table.scan(snapshot_id=s.id).to_arrow()


def test_a_latest_hint_that_cannot_be_written_does_not_fail_the_commit(log_table, monkeypatch, caplog):
    monkeypatch.setattr(FileIO, "write_bytes", failing(-1, FileIO.write_bytes, "/snapshot/LATEST"))
    snapshot = log_table.write(rows([2]))
    monkeypatch.undo()
    assert snapshot.id == 2 and read(log_table) == [(1, "x1"), (2, "x2")]
    assert "LATEST hint (snapshot 2) was not written" in caplog.text
    assert log_table.latest_snapshot().id == 2  # a stale hint: readers list


def test_an_earliest_hint_that_cannot_be_written_stops_expiry(catalog, monkeypatch):
    t = catalog.create_table("db.log", schema=SCHEMA)
    for k in range(4):
        t.write(rows([k]))
    monkeypatch.setattr(FileIO, "write_bytes", failing(-1, FileIO.write_bytes, "/snapshot/EARLIEST"))
    with pytest.raises(StorageError, match="EARLIEST"):
        t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
    monkeypatch.undo()
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]  # nothing deleted


def test_maintenance_failing_after_a_landed_commit_is_kept_not_raised(catalog, monkeypatch):
    t = catalog.create_table("db.log", schema=SCHEMA, options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1 ms"})
    t.write(rows([1]))
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "/snapshot/snapshot-"))
    snapshot = t.write(rows([2]))
    monkeypatch.undo()
    assert snapshot.id == 2 and read(t) == [(1, "x1"), (2, "x2")]
    assert t.last_maintenance_errors and isinstance(t.last_maintenance_errors[0], StorageError)
    assert "snapshot-1" in str(t.last_maintenance_errors[0])
    t.write(rows([3]))
    assert t.last_maintenance_errors == []  # reset by the next commit


def test_a_compaction_of_unknown_outcome_keeps_its_files(catalog, monkeypatch):
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})
    t.write(rows([1]))
    writer = t.new_writer()
    writer.write(rows([2]))
    messages = writer.prepare_commit()
    outputs = {m.file_name for msg in messages for m in msg.compact_after}
    assert outputs, "the writer should have compacted"
    real_create = SnapshotStore.create

    def create(store, snapshot):
        if snapshot.commit_kind == "COMPACT":
            real_create(store, snapshot)
            raise OutcomeUnknown(f"injected: snapshot-{snapshot.id} may or may not exist")
        return real_create(store, snapshot)

    monkeypatch.setattr(SnapshotStore, "create", create)
    snapshot = t.commit(messages)
    monkeypatch.undo()
    assert snapshot.commit_kind == "APPEND"  # the data landed: the call returns
    assert isinstance(t.last_maintenance_errors[0], OutcomeUnknown)
    assert outputs <= files_under(t.root)  # the COMPACT snapshot did land: its outputs stay
    assert read(t) == [(1, "x1"), (2, "x2")]
    for s in t.snapshots():
        t.scan(snapshot_id=s.id).to_arrow()


def test_cleanup_failing_after_a_failed_commit_keeps_the_commit_error(log_table, monkeypatch):
    def conflict(self, latest, messages, request):
        raise tarn.CommitConflict("injected conflict")

    committer_cls = type(log_table.committer())
    monkeypatch.setattr(committer_cls, "_try_once", conflict)
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "data-"))
    with pytest.raises(tarn.CommitConflict, match="injected"):
        log_table.write(rows([2]))
    monkeypatch.undo()
    assert read(log_table) == [(1, "x1")]


# ---------------------------------------------------------------------------------------------
# FileIO: errors name the file


def test_storage_errors_name_the_file(tmp_path):
    io = tarn.fs.local_file_io()
    path = str(tmp_path / "a" / "f")
    io.write_bytes(path, b"x")
    with pytest.raises(FileMissing, match="nope"):
        io.read_bytes(str(tmp_path / "nope"))
    bad = FileIO(_FailingFs(io.fs))
    for call in (lambda: bad.read_bytes(path), lambda: bad.exists(path), lambda: bad.list_dir(str(tmp_path)),
                 lambda: bad.delete(path), lambda: bad.size(path), lambda: bad.open_input_file(path)):
        with pytest.raises(StorageError) as caught:
            call()
        assert isinstance(caught.value, tarn.TarnError) and isinstance(caught.value, OSError)
        assert str(tmp_path) in str(caught.value) and "NETWORK_CONNECTION" in str(caught.value)


def test_an_s3_404_that_pyarrow_words_as_an_oserror_is_file_missing(tmp_path):
    """Expiry deleted the file between pyarrow's HEAD and its GET."""
    gone = FileIO(_FailingFs(tarn.fs.local_file_io().fs, "AWS Error RESOURCE_NOT_FOUND during GetObject"))
    with pytest.raises(FileMissing, match="snapshot-1"):
        gone.read_bytes(str(tmp_path / "snapshot-1"))
    gone.delete(str(tmp_path / "snapshot-1"))  # deleting a missing file is fine


class _FailingFs:
    """A filesystem whose every call fails like a dropped connection."""

    def __init__(self, fs, message="AWS Error NETWORK_CONNECTION during {name}"):
        self.type_name = fs.type_name
        self.message = message

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise OSError(self.message.format(name=name))
        return fail


def test_an_upload_failing_on_close_is_a_storage_error(tmp_path):
    class Stream:
        def write(self, data):
            return len(data)

        def close(self):
            raise OSError("AWS Error INTERNAL_FAILURE during PutObject operation")

    class Fs:
        type_name = "s3"

        def open_output_stream(self, path):
            return Stream()

        def create_dir(self, path, recursive=True):
            pass

    io = FileIO(Fs())
    with pytest.raises(StorageError, match="writing .*f.parquet.*PutObject"):
        with io.open_output_stream(str(tmp_path / "f.parquet")) as out:
            out.write(b"data")


def test_a_locked_create_whose_write_fails_after_landing_is_settled(tmp_path, monkeypatch):
    """Under a lock (stores without a conditional create) a write that failed after it took
    effect is read back: our bytes, created."""
    import pyarrow.fs as pafs

    io = FileIO(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()),
                lock=tarn.fs.FileLock(str(tmp_path / "locks")))
    real_write = FileIO.write_bytes

    def write_then_fail(self, path, data):
        real_write(self, path, data)
        raise StorageError(f"injected: the answer to writing {path} was lost")

    monkeypatch.setattr(FileIO, "write_bytes", write_then_fail)
    assert io.write_if_absent("t/snapshot-1", b"ours") is True
    assert io.write_if_absent("t/snapshot-1", b"other") is False

    def fail(self, path, data):
        raise StorageError(f"injected: writing {path} failed")

    monkeypatch.setattr(FileIO, "write_bytes", fail)
    with pytest.raises(StorageError):  # nothing there: a clean failure
        io.write_if_absent("t/snapshot-2", b"ours")


# ---------------------------------------------------------------------------------------------
# the conditional PUT (tarn/s3.py) against a scripted client


def _client_error(status, code):
    from botocore.exceptions import ClientError as BotoClientError

    return BotoClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")


class ScriptedS3:
    """put_object/get_object answering from scripts: each entry is 'apply' (store and answer),
    'apply-then-500', 'apply-then-drop', '503', 'timeout', or an exception to raise."""

    def __init__(self, puts, gets=()):
        self.puts, self.gets, self.objects = list(puts), list(gets), {}

    def put_object(self, Bucket, Key, Body, IfNoneMatch):
        from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

        step = self.puts.pop(0) if self.puts else "apply"
        if step == "503":
            raise _client_error(503, "SlowDown")
        if step == "timeout":
            raise ReadTimeoutError(endpoint_url=f"http://s3/{Key}")
        if Key in self.objects:
            raise _client_error(412, "PreconditionFailed")
        self.objects[Key] = Body
        if step == "apply-then-500":
            raise _client_error(500, "InternalError")
        if step == "apply-then-drop":
            raise ConnectionClosedError(endpoint_url=f"http://s3/{Key}")

    def get_object(self, Bucket, Key):
        import io

        step = self.gets.pop(0) if self.gets else "ok"
        if step == "503":
            raise _client_error(503, "SlowDown")
        if Key not in self.objects:
            raise _client_error(404, "NoSuchKey")
        return {"Body": io.BytesIO(self.objects[Key])}


def conditional(client, monkeypatch):
    monkeypatch.setattr(s3.time, "sleep", lambda s: None)
    put = s3.ConditionalPut(s3.S3Config())
    put._client, put._pid = client, os.getpid()
    return put


@pytest.mark.parametrize("script", [["apply-then-500"], ["apply-then-drop"], ["503", "503", "apply"],
                                    ["timeout", "apply-then-500"]])
def test_a_put_that_failed_after_landing_is_settled_by_reading_back(script, monkeypatch):
    client = ScriptedS3(script)
    assert conditional(client, monkeypatch).put_if_absent("b/snapshot-1", b"ours") is True
    assert client.objects == {"snapshot-1": b"ours"}


def test_a_put_refused_every_time_is_a_storage_error_not_created(monkeypatch):
    client = ScriptedS3(["503"] * 10)
    with pytest.raises(StorageError, match="not created"):
        conditional(client, monkeypatch).put_if_absent("b/snapshot-1", b"ours")
    assert client.objects == {}


def test_a_put_that_timed_out_and_never_showed_up_is_unknown(monkeypatch):
    client = ScriptedS3(["timeout"] + ["503"] * 10)
    with pytest.raises(OutcomeUnknown, match="timed out"):
        conditional(client, monkeypatch).put_if_absent("b/snapshot-1", b"ours")


def test_a_put_whose_read_back_keeps_failing_is_unknown(monkeypatch):
    client = ScriptedS3(["apply-then-500"], gets=["503"] * 20)
    with pytest.raises(OutcomeUnknown, match="could not read the object back"):
        conditional(client, monkeypatch).put_if_absent("b/snapshot-1", b"ours")


def test_a_put_that_lost_the_race_after_a_failure_is_false(monkeypatch):
    client = ScriptedS3(["503"])
    client.objects["snapshot-1"] = b"theirs"
    assert conditional(client, monkeypatch).put_if_absent("b/snapshot-1", b"ours") is False


def test_pyarrow_retries_are_bounded():
    """A store that refuses every connection: pyarrow retries (AWS default strategy, 25 ms
    doubling), then tarn raises a StorageError naming the file, within seconds (pyarrow's
    default "standard" strategy took about 15 s)."""
    import socket
    import time

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = s3.S3Config(endpoint=f"http://127.0.0.1:{port}", access_key="k", secret_key="s", path_style=True)
    io = FileIO(config.filesystem(), s3.ConditionalPut(config))
    began = time.monotonic()
    with pytest.raises(StorageError, match="bucket/table/snapshot/LATEST"):
        io.read_bytes("bucket/table/snapshot/LATEST")
    assert time.monotonic() - began < 6
