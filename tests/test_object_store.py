"""Object stores as the warehouse: S3 settings, the conditional PUT that commits rest on (races
between threads and between processes on a real S3 server), uncertain answers, pickling, and
stores without a conditional create (a lock or a clear error)."""

from __future__ import annotations

import io as _io
import multiprocessing
import pickle
import threading

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from fsspec.implementations.local import LocalFileSystem as FsspecLocal
from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

import tarn
from tarn.errors import InvalidOption, OutcomeUnknown, TarnError
from tarn.fs import FileLock, file_io_for
from tarn.s3 import S3Config

s3 = pytest.mark.s3


@pytest.fixture
def s3_io(s3_server):
    """(FileIO, root) at a fresh prefix of the S3 server."""
    return file_io_for(s3_server.new_prefix(), s3_server.storage_options)


def race(create, contenders: int) -> list[bool]:
    """Run `create(i)` in `contenders` threads released at once; their results."""
    barrier = threading.Barrier(contenders)
    results = [None] * contenders

    def run(i):
        barrier.wait()
        results[i] = create(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(contenders)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


# ------------------------------------------------------------------------------- settings


def test_options_override_environment(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://env-host:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    from_env = S3Config.resolve()
    assert (from_env.endpoint, from_env.access_key, from_env.secret_key, from_env.region, from_env.path_style) == \
        ("http://env-host:1", "env-key", "env-secret", "eu-west-1", True)
    given = S3Config.resolve({"s3.endpoint": "https://minio:9000", "s3.region": "us-west-2",
                              "s3.path.style.access": "false"})  # Paimon's spelling
    assert (given.endpoint, given.access_key, given.region, given.path_style) == \
        ("https://minio:9000", "env-key", "us-west-2", False)
    assert "env-secret" not in repr(given)  # secrets stay out of reprs and logs


def test_unknown_storage_option_fails_naming_it(tmp_path):
    with pytest.raises(InvalidOption, match="'s3.endpoint-url'.*s3.endpoint"):
        tarn.Catalog("s3://bucket/wh", {"s3.endpoint-url": "http://x"})
    with pytest.raises(InvalidOption, match="apply to s3://"):
        file_io_for("gs://bucket/wh", {"s3.region": "us-east-1"})


def test_s3_uri_schemes_and_filesystem_settings():
    io, path = file_io_for("s3a://bucket/wh/", {"s3.endpoint": "http://127.0.0.1:9", "s3.region": "eu-west-1"})
    assert path == "bucket/wh" and io.is_s3 and io.conditional.config.path_style
    given = pafs.S3FileSystem(endpoint_override="127.0.0.1:7", scheme="http", access_key="k",
                              secret_key="s", region="ap-south-1")
    io, path = file_io_for("s3://bucket/wh", filesystem=given)
    config = io.conditional.config
    assert path == "bucket/wh" and io.fs is given
    assert (config.endpoint, config.access_key, config.secret_key, config.region) == \
        ("http://127.0.0.1:7", "k", "s", "ap-south-1")


# ------------------------------------------------------------------------------- S3: conditional PUT


@s3
def test_write_if_absent_creates_once(s3_io):
    io, root = s3_io
    path = f"{root}/snapshot/snapshot-1"
    assert io.write_if_absent(path, b"first")
    assert not io.write_if_absent(path, b"second")
    assert io.read_bytes(path) == b"first"


@s3
def test_racing_threads_exactly_one_wins(s3_io):
    io, root = s3_io
    for key in range(5):
        path = f"{root}/snapshot/snapshot-{key}"
        results = race(lambda i: io.write_if_absent(path, f"writer-{i}".encode()), 8)
        assert results.count(True) == 1
        assert io.read_bytes(path) == f"writer-{results.index(True)}".encode()


def _contend(io, paths: list[str], i: int, barrier, queue) -> None:
    for path in paths:
        barrier.wait()
        queue.put((path, i, io.write_if_absent(path, f"process-{i}".encode())))


@s3
def test_racing_processes_exactly_one_wins(s3_io):
    io, root = s3_io
    context = multiprocessing.get_context("spawn")  # fresh interpreters: FileIO crosses as a pickle
    paths = [f"{root}/snapshot/snapshot-{key}" for key in range(3)]
    barrier, queue = context.Barrier(3), context.Queue()
    workers = [context.Process(target=_contend, args=(io, paths, i, barrier, queue)) for i in range(3)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=60) for _ in range(len(paths) * len(workers))]
    for w in workers:
        w.join(30)
    for path in paths:
        winners = [i for p, i, won in results if p == path and won]
        assert len(winners) == 1
        assert io.read_bytes(path) == f"process-{winners[0]}".encode()


@s3
def test_file_io_pickles_without_its_client(s3_io):
    io, root = s3_io
    assert io.write_if_absent(f"{root}/a", b"a")  # the client exists now
    copy = pickle.loads(pickle.dumps(io))
    assert copy.conditional._client is None
    assert not copy.write_if_absent(f"{root}/a", b"other")
    assert copy.write_if_absent(f"{root}/b", b"b") and io.read_bytes(f"{root}/b") == b"b"


@s3
def test_settings_from_the_environment(s3_server, monkeypatch):
    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    catalog = tarn.Catalog(s3_server.new_prefix())
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table("db.t", schema=schema)
    table.write(pa.table({"id": [1, 2]}, schema=schema))
    assert sorted(tarn.load_table(f"s3://{table.root}").scan().to_arrow().column("id").to_pylist()) == [1, 2]


@s3
def test_wrong_credentials_fail_naming_the_file(s3_server):
    io, root = file_io_for(s3_server.new_prefix(), {**s3_server.storage_options, "s3.access-key": "nobody"})
    io.conditional.client().meta.events.register(  # moto accepts any key: refuse like S3 would
        "before-send.s3.PutObject", lambda **_: _forbidden())
    with pytest.raises(TarnError, match=f"s3://{root}/snapshot/snapshot-1.*Forbidden"):
        io.write_if_absent(f"{root}/snapshot/snapshot-1", b"x")


def _forbidden():
    raise ClientError({"Error": {"Code": "Forbidden", "Message": "Forbidden"},
                       "ResponseMetadata": {"HTTPStatusCode": 403}}, "PutObject")


# ------------------------------------------------------------------------------- S3: uncertain answers


class Flaky:
    """A boto3 client whose put_object misbehaves as scripted, around the real client.

    Script steps: 'ok' (real call), 'lost' (real call, then the answer is lost: a read timeout),
    'timeout' (a read timeout, nothing sent), 'conflict' (a 409 ConditionalRequestConflict),
    'other' (another writer creates the object, then our call proceeds)."""

    def __init__(self, real, script):
        self.real, self.script, self.calls = real, list(script), 0

    def put_object(self, **kwargs):
        self.calls += 1
        step = self.script.pop(0) if self.script else "ok"
        if step == "timeout":
            raise ReadTimeoutError(endpoint_url="http://s3")
        if step == "conflict":
            raise ClientError({"Error": {"Code": "ConditionalRequestConflict"},
                               "ResponseMetadata": {"HTTPStatusCode": 409}}, "PutObject")
        if step == "other":
            self.real.put_object(**{**kwargs, "Body": b"someone else"})
        result = self.real.put_object(**kwargs)
        if step == "lost":
            raise ReadTimeoutError(endpoint_url="http://s3")
        return result

    def get_object(self, **kwargs):
        return self.real.get_object(**kwargs)


def flaky(io, script) -> Flaky:
    client = Flaky(io.conditional.client(), script)
    io.conditional._client = client
    return client


@s3
def test_lost_answer_of_a_landed_put_is_a_win(s3_io):
    io, root = s3_io
    client = flaky(io, ["lost"])
    assert io.write_if_absent(f"{root}/s", b"mine")
    assert client.calls == 1 and io.read_bytes(f"{root}/s") == b"mine"


@s3
def test_timeout_before_landing_is_retried(s3_io):
    io, root = s3_io
    client = flaky(io, ["timeout", "timeout"])
    assert io.write_if_absent(f"{root}/s", b"mine")
    assert client.calls == 3 and io.read_bytes(f"{root}/s") == b"mine"


@s3
def test_timeout_then_another_writer_is_a_loss(s3_io):
    io, root = s3_io
    flaky(io, ["timeout", "other"])
    assert not io.write_if_absent(f"{root}/s", b"mine")
    assert io.read_bytes(f"{root}/s") == b"someone else"


@s3
def test_conflicts_are_retried_then_the_other_writer_wins(s3_io):
    io, root = s3_io
    client = flaky(io, ["conflict", "conflict"])
    assert io.write_if_absent(f"{root}/a", b"mine") and client.calls == 3
    client = flaky(io, ["other", "conflict"])  # the other writer lands, we keep getting 412
    assert not io.write_if_absent(f"{root}/b", b"mine")
    assert io.read_bytes(f"{root}/b") == b"someone else"


@s3
def test_no_answer_at_all_is_outcome_unknown(s3_io, s3_server):
    io, root = s3_io
    flaky(io, ["timeout"] * 10)
    io.conditional._client.get_object = lambda **_: (_ for _ in ()).throw(ReadTimeoutError(endpoint_url="x"))
    with pytest.raises(OutcomeUnknown, match=f"s3://{root}/s"):
        io.write_if_absent(f"{root}/s", b"mine")


# ------------------------------------------------------------------------------- other stores


def test_store_without_conditional_create_needs_a_lock():
    memory = MemoryFileSystem()
    catalog = tarn.Catalog("/wh-nolock", filesystem=memory)
    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(TarnError, match=r"schema-0 atomically on the 'py::fsspec\+memory' store.*lock"):
        catalog.create_table("db.t", schema=schema)


class PutStore(MemoryFileSystem):
    """An fsspec store like most object stores: whole-object writes appear at once (on
    close), reads get their own copy, and there is no conditional create."""

    def _open(self, path, mode="rb", **kwargs):
        path = self._strip_protocol(path)
        if "r" in mode:
            return _io.BytesIO(self.cat_file(path))
        store = self

        class Upload(_io.BytesIO):
            def close(self):
                if not self.closed:
                    store.store[path] = MemoryFile(store, path, self.getvalue())
                super().close()

        return Upload()


def test_lock_makes_a_generic_store_safe_for_threads():
    guard = threading.Lock()
    catalog = tarn.Catalog("/wh-locked", filesystem=PutStore(), lock=lambda path: guard)
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table("db.t", schema=schema)
    race(lambda i: catalog.load_table("db.t").write(pa.table({"id": [i]}, schema=schema)), 4)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 3]
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4]


def _contend_locked(root: str, lock_dir: str, i: int, start, queue) -> None:
    io, path = file_io_for(root, filesystem=FsspecLocal(), lock=FileLock(lock_dir))
    start.wait()
    queue.put((i, io.write_if_absent(f"{path}/snapshot-1", f"process-{i}".encode())))


def test_file_lock_makes_check_then_write_safe_across_processes(tmp_path):
    context = multiprocessing.get_context("spawn")
    start, queue = context.Event(), context.Queue()
    (tmp_path / "store").mkdir()
    args = (str(tmp_path / "store"), str(tmp_path / "locks"))
    workers = [context.Process(target=_contend_locked, args=(*args, i, start, queue)) for i in range(3)]
    for w in workers:
        w.start()
    start.set()
    results = dict(queue.get(timeout=60) for _ in workers)
    for w in workers:
        w.join(30)
    winners = [i for i, won in results.items() if won]
    assert len(winners) == 1
    assert (tmp_path / "store" / "snapshot-1").read_bytes() == f"process-{winners[0]}".encode()


def test_unknown_uri_scheme_is_named():
    with pytest.raises(TarnError, match="cannot open 'nosuch://bucket/wh'"):
        tarn.Catalog("nosuch://bucket/wh")


def test_filesystem_must_be_a_filesystem():
    with pytest.raises(TarnError, match="must be a pyarrow.fs.FileSystem or an fsspec filesystem"):
        tarn.Catalog("/wh", filesystem=object())
