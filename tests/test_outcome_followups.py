"""The three outcomes (docs/concurrency.md) beyond `Table.commit`: branch listing and tag
lookups through FileIO, Spark's abort after a commit of unknown outcome, tags, rollback, and
storage errors while reading data files. Failures are injected into FileIO in one process;
the Spark writers are called directly, without a Spark session."""

import os

import pyarrow as pa
import pytest

import tarn
from tarn.errors import CorruptFile, FileMissing, OutcomeUnknown, StorageError
from tarn.fs import FileIO
from tarn.store.snapshots import SnapshotStore

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def rows(keys, value="x"):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{value}{k}" for k in keys]})


def read(table, **kwargs):
    data = table.scan(**kwargs).to_arrow().sort_by("k")
    return list(zip(data.column("k").to_pylist(), data.column("v").to_pylist()))


def files_under(root):
    return {f for _, _, fs in os.walk(root) for f in fs}


class _FailingFs:
    """A filesystem whose every call fails like a dropped connection."""

    type_name = "s3"

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise OSError(f"AWS Error NETWORK_CONNECTION during {name}")
        return fail


# ---------------------------------------------------------------------------------------------
# 1. branch listing and tag lookups go through FileIO


def test_listing_branches_on_a_failing_store_is_a_storage_error(tmp_path):
    from tarn.store.branches import branch_names
    from tarn.store.tags import TagStore

    bad = FileIO(_FailingFs())
    with pytest.raises(StorageError, match=f"{tmp_path}/t/branch"):
        branch_names(bad, str(tmp_path / "t"))
    with pytest.raises(StorageError, match="tag-a"):
        TagStore(bad, str(tmp_path / "t")).modification_time_ms("a")


def test_branch_names_still_lists_branch_directories(catalog):
    from tarn.store.branches import branch_names

    t = catalog.create_table("db.t", schema=SCHEMA)
    t.write(rows([1]))
    for name in ("b2", "b1"):
        t.file_io.mkdirs(f"{t.root}/branch/branch-{name}")
    t.file_io.write_bytes(f"{t.root}/branch/branch-file", b"")  # a file, not a branch
    assert branch_names(t.file_io, t.root) == ["b1", "b2"]


# ---------------------------------------------------------------------------------------------
# 2. Spark's abort after a commit of unknown outcome keeps every file


def _create_then_unknown(monkeypatch, create=True):
    """SnapshotStore.create creates the file (or not), then says its outcome is unknown."""
    real_create = SnapshotStore.create

    def unknown(store, snapshot):
        if create:
            real_create(store, snapshot)
        raise OutcomeUnknown(f"injected: snapshot-{snapshot.id} may or may not exist")

    monkeypatch.setattr(SnapshotStore, "create", unknown)


def _pk_table(catalog):
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    for n in range(3):
        t.write(rows([1, 2, 3], value=f"v{n}-"))
    return t


def _compact_job(table, writer_cls, plan):
    from tarn.spark import maintenance

    if writer_cls is maintenance.AppendCompactWriter:
        import pickle

        from tarn.ops import append_compaction

        groups = append_compaction.plan(table, True, None)
        batch = pa.record_batch({"group": pa.array([pickle.dumps(g) for g in groups], pa.binary()),
                                 "task": pa.array([0] * len(groups), pa.int32())})
    else:
        sizes = maintenance.bucket_sizes(table, None)
        batch = pa.record_batch({"partition": pa.array([p for p, _ in sizes], pa.binary()),
                                 "bucket": pa.array([b for _, b in sizes], pa.int32()),
                                 "task": pa.array([0] * len(sizes), pa.int32())})
    writer = writer_cls(plan)
    return writer, [writer.write(iter([batch]))]


@pytest.mark.parametrize("kind", ["pk", "append"])
def test_spark_compaction_abort_after_an_unknown_outcome_keeps_the_files(catalog, monkeypatch, kind):
    from tarn.spark import maintenance

    if kind == "pk":
        t = _pk_table(catalog)
        writer_cls = maintenance.CompactWriter
    else:
        t = catalog.create_table("db.log", schema=SCHEMA, options={"compaction.min.file-num": "2"})
        for n in range(3):
            t.write(rows([n]))
        writer_cls = maintenance.AppendCompactWriter
    plan = maintenance.CompactPlan(t.root, True, maintenance.new_job_token())
    writer, results = _compact_job(t, writer_cls, plan)
    outputs = {m.file_name for r in results for msg in r.messages for m in msg.compact_after}
    assert outputs
    _create_then_unknown(monkeypatch)
    with pytest.raises(OutcomeUnknown):
        writer.commit(results)
    monkeypatch.undo()
    # Spark calls abort on a fresh copy of the writer (unpickled again on the driver)
    writer_cls(maintenance.CompactPlan(t.root, True, plan.job_token)).abort(results)
    assert outputs <= files_under(t.root)  # the COMPACT snapshot landed: its files stay
    assert t.latest_snapshot().commit_kind == "COMPACT"
    for s in t.snapshots():
        t.scan(snapshot_id=s.id).to_arrow()


def test_spark_compaction_abort_after_a_failed_commit_deletes_the_files(catalog, monkeypatch):
    from tarn.spark import maintenance

    t = _pk_table(catalog)
    plan = maintenance.CompactPlan(t.root, True, maintenance.new_job_token())
    writer, results = _compact_job(t, maintenance.CompactWriter, plan)
    outputs = {m.file_name for r in results for msg in r.messages for m in msg.compact_after}

    def refuse(store, snapshot):
        raise StorageError(f"injected: creating snapshot-{snapshot.id} failed")

    monkeypatch.setattr(SnapshotStore, "create", refuse)
    with pytest.raises(StorageError):
        writer.commit(results)
    monkeypatch.undo()
    writer.abort(results)
    assert not outputs & files_under(t.root)


def _batch_plan(t, **options):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from tarn.spark.batch_write import plan_write

    schema = StructType([StructField("k", LongType()), StructField("v", StringType())])
    return plan_write({"path": t.root, **options}, schema, overwrite=False)


@pytest.mark.parametrize("created", [True, False])
def test_spark_batch_abort_after_an_unknown_outcome_keeps_the_files(catalog, monkeypatch, created):
    """Also when the snapshot was not (yet) created: a PUT that timed out may still land."""
    from tarn.spark.batch_write import BatchWriter

    t = catalog.create_table("db.log", schema=SCHEMA)
    t.write(rows([1]))
    plan = _batch_plan(t)
    results = [plan.write_task(iter(rows([2, 3]).to_batches()))]
    written = {m.file_name for r in results for msg in r.messages for m in msg.new_files}
    _create_then_unknown(monkeypatch, create=created)
    with pytest.raises(OutcomeUnknown):
        BatchWriter(plan).commit(results)
    monkeypatch.undo()
    BatchWriter(plan).abort(results)
    assert written <= files_under(t.root)
    assert read(t) == ([(1, "x1"), (2, "x2"), (3, "x3")] if created else [(1, "x1")])


def test_spark_stream_abort_after_an_unknown_outcome_keeps_the_files(catalog, monkeypatch):
    from tarn.spark.stream_write import StreamWriter

    t = catalog.create_table("db.log", schema=SCHEMA)
    plan = _batch_plan(t)
    plan.commit_user = "tarn-spark-test"
    results = [plan.write_task(iter(rows([2]).to_batches()), batch_id=7)]
    written = {m.file_name for r in results for msg in r.messages for m in msg.new_files}
    _create_then_unknown(monkeypatch, create=False)
    with pytest.raises(OutcomeUnknown):
        StreamWriter(plan).commit(results, 7)
    monkeypatch.undo()
    StreamWriter(plan).abort(results, 7)
    assert written <= files_under(t.root)


def test_spark_batch_abort_after_a_failed_commit_deletes_the_files(catalog, monkeypatch):
    from tarn.spark.batch_write import BatchWriter

    t = catalog.create_table("db.log", schema=SCHEMA)
    plan = _batch_plan(t)
    results = [plan.write_task(iter(rows([2]).to_batches()))]
    written = {m.file_name for r in results for msg in r.messages for m in msg.new_files}

    def refuse(store, snapshot):
        raise StorageError(f"injected: creating snapshot-{snapshot.id} failed")

    monkeypatch.setattr(SnapshotStore, "create", refuse)
    with pytest.raises(StorageError):
        BatchWriter(plan).commit(results)
    monkeypatch.undo()
    BatchWriter(plan).abort(results)
    assert not written & files_under(t.root)


# ---------------------------------------------------------------------------------------------
# 3. tags: a request that failed is settled by looking at the tag file


@pytest.fixture
def no_pauses(monkeypatch):
    """Retries of settled writes (tarn/store/tags.py) without their pauses."""
    import types

    import tarn.store.tags as store_tags

    monkeypatch.setattr(store_tags, "time", types.SimpleNamespace(sleep=lambda s: None))


def failing(times, original, match, error=None, after=False):
    """A FileIO method failing `times` times (-1: always) on paths containing `match`;
    `after`: the call is made first, then fails (its answer lost)."""
    left = [times]

    def method(io, path, *args, **kwargs):
        if match in str(path) and left[0] != 0:
            left[0] -= 1
            if after:
                original(io, path, *args, **kwargs)
            raise error or StorageError(f"injected: {path}")
        return original(io, path, *args, **kwargs)

    return method


@pytest.fixture
def tagged(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.write(rows([1]))
    t.write(rows([2]))
    return t


def test_a_tag_created_before_its_answer_was_lost_is_created(tagged, monkeypatch, no_pauses):
    monkeypatch.setattr(FileIO, "write_if_absent", failing(1, FileIO.write_if_absent, "/tag/", after=True))
    tag = tagged.create_tag("a", snapshot_id=1)
    assert tag.snapshot_id == 1 and tagged.tag_store.get("a").snapshot_id == 1


def test_a_tag_create_that_failed_creates_nothing(tagged, monkeypatch, no_pauses):
    monkeypatch.setattr(FileIO, "write_if_absent", failing(1, FileIO.write_if_absent, "/tag/"))
    with pytest.raises(StorageError, match="tag-a"):
        tagged.create_tag("a", snapshot_id=1)
    assert tagged.tag_store.names() == []
    tagged.create_tag("a", snapshot_id=1)  # a retry works


def test_a_tag_create_that_cannot_be_read_back_is_unknown(tagged, monkeypatch, no_pauses):
    monkeypatch.setattr(FileIO, "write_if_absent", failing(1, FileIO.write_if_absent, "/tag/", after=True))
    monkeypatch.setattr(FileIO, "read_bytes", failing(-1, FileIO.read_bytes, "/tag/tag-a"))
    with pytest.raises(OutcomeUnknown, match="tag-a"):
        tagged.create_tag("a", snapshot_id=1)


@pytest.mark.parametrize("times", [1, -1])
def test_a_failing_check_after_the_tag_landed_is_retried_then_unknown(tagged, monkeypatch, no_pauses, times):
    created = []
    real = FileIO.write_if_absent

    def create(io, path, data):
        created.append(path)
        return real(io, path, data)

    real_exists = FileIO.exists
    left = [times]

    def exists(io, path):
        if created and "/snapshot/snapshot-1" in path and left[0] != 0:
            left[0] -= 1
            raise StorageError(f"injected: {path}")
        return real_exists(io, path)

    monkeypatch.setattr(FileIO, "write_if_absent", create)
    monkeypatch.setattr(FileIO, "exists", exists)
    if times == 1:
        assert tagged.create_tag("a", snapshot_id=1).snapshot_id == 1
    else:
        with pytest.raises(OutcomeUnknown, match="tag 'a' was created"):
            tagged.create_tag("a", snapshot_id=1)
    monkeypatch.undo()
    assert tagged.tag_store.get("a").snapshot_id == 1


def test_a_rename_whose_old_name_cannot_be_deleted_returns(tagged, monkeypatch, no_pauses, caplog):
    tagged.create_tag("old", snapshot_id=1)
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "/tag/tag-old"))
    tagged.rename_tag("old", "new")
    monkeypatch.undo()
    assert tagged.tag_store.get("new").snapshot_id == 1
    assert isinstance(tagged.last_maintenance_errors[0], StorageError)
    assert "tag-old" in str(tagged.last_maintenance_errors[0]) and "renamed" in caplog.text
    tagged.delete_tag("old")  # what the log says to do
    assert tagged.tag_store.names() == ["new"] and tagged.last_maintenance_errors == []


def test_a_rename_whose_new_name_failed_changes_nothing(tagged, monkeypatch, no_pauses):
    tagged.create_tag("old", snapshot_id=1)
    monkeypatch.setattr(FileIO, "write_if_absent", failing(-1, FileIO.write_if_absent, "/tag/tag-new"))
    with pytest.raises(StorageError, match="tag-new"):
        tagged.rename_tag("old", "new")
    assert tagged.tag_store.names() == ["old"]


def test_a_tag_delete_that_keeps_failing_leaves_the_tag(tagged, monkeypatch, no_pauses):
    tagged.create_tag("a", snapshot_id=1)
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "/tag/tag-a"))
    with pytest.raises(StorageError, match="tag-a"):
        tagged.delete_tag("a")
    assert tagged.tag_store.names() == ["a"]


def test_a_tag_delete_whose_answer_was_lost_is_done(tagged, monkeypatch, no_pauses):
    tagged.create_tag("a", snapshot_id=1)
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "/tag/tag-a", after=True))
    tagged.delete_tag("a")
    assert tagged.tag_store.names() == []


def test_a_tag_delete_that_cannot_tell_is_unknown(tagged, monkeypatch, no_pauses):
    tagged.create_tag("a", snapshot_id=1)
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "/tag/tag-a"))
    monkeypatch.setattr(FileIO, "exists", failing(-1, FileIO.exists, "/tag/tag-a"))
    with pytest.raises(OutcomeUnknown, match="tag-a"):
        tagged.delete_tag("a")


def _expired_tag(catalog):
    """A table whose snapshot 1 expired but is tagged 'a' (its files kept only by the tag)."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    t.write(rows([1]))
    t.create_tag("a", snapshot_id=1)
    t.write(rows([1], value="y"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
    assert not t.snapshot_store.exists(1)
    return t


def test_a_tag_delete_whose_file_cleanup_fails_returns(catalog, monkeypatch, no_pauses):
    t = _expired_tag(catalog)
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "data-"))
    t.delete_tag("a")
    monkeypatch.undo()
    assert t.tag_store.names() == []
    assert t.last_maintenance_errors and isinstance(t.last_maintenance_errors[0], StorageError)
    assert read(t) == [(1, "y1")]


@pytest.mark.parametrize("landed", [True, False])
def test_a_replace_tag_whose_write_failed_is_settled(tagged, monkeypatch, no_pauses, landed):
    tagged.create_tag("a", snapshot_id=1)
    monkeypatch.setattr(FileIO, "write_bytes", failing(1, FileIO.write_bytes, "/tag/tag-a", after=landed))
    if landed:
        assert tagged.replace_tag("a", snapshot_id=2).snapshot_id == 2
    else:
        with pytest.raises(StorageError, match="tag-a"):
            tagged.replace_tag("a", snapshot_id=2)
    assert tagged.tag_store.get("a").snapshot_id == (2 if landed else 1)


# ---------------------------------------------------------------------------------------------
# 4. rollback: the metadata steps decide; file deletions after them never raise


@pytest.fixture
def history(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    for k in range(1, 5):
        t.write(rows([k]))
    t.create_tag("late", snapshot_id=4)
    return t


def test_a_rollback_whose_file_deletions_fail_returns(history, monkeypatch, no_pauses):
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "data-"))
    assert history.rollback_to(2).id == 2
    monkeypatch.undo()
    assert [s.id for s in history.snapshots()] == [1, 2] and history.tag_store.names() == []
    assert read(history) == [(1, "x1"), (2, "x2")]
    assert history.last_maintenance_errors and isinstance(history.last_maintenance_errors[0], StorageError)


def test_a_rollback_failing_before_any_change_changes_nothing(history, monkeypatch, no_pauses):
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "/tag/tag-late"))
    with pytest.raises(StorageError, match="tag-late"):
        history.rollback_to(2)
    monkeypatch.undo()
    assert [s.id for s in history.snapshots()] == [1, 2, 3, 4] and history.tag_store.names() == ["late"]


def test_a_rollback_failing_halfway_is_unknown_and_finishes_when_repeated(history, monkeypatch, no_pauses):
    monkeypatch.setattr(FileIO, "delete", failing(-1, FileIO.delete, "/snapshot/snapshot-3"))
    with pytest.raises(OutcomeUnknown, match="partly done.*snapshot 3"):
        history.rollback_to(2)
    monkeypatch.undo()
    assert [s.id for s in history.snapshots()] == [1, 2, 3]  # readable: newest first removed
    for s in history.snapshots():
        history.scan(snapshot_id=s.id).to_arrow()
    assert history.rollback_to(2).id == 2
    assert [s.id for s in history.snapshots()] == [1, 2] and read(history) == [(1, "x1"), (2, "x2")]


def test_a_rollback_whose_restore_fails_is_unknown_and_finishes_when_repeated(catalog, monkeypatch, no_pauses):
    t = _expired_tag(catalog)
    monkeypatch.setattr(FileIO, "write_if_absent", failing(-1, FileIO.write_if_absent, "/snapshot/snapshot-1"))
    with pytest.raises(OutcomeUnknown, match="re-creating snapshot 1"):
        t.rollback_to("a")
    monkeypatch.undo()
    assert t.rollback_to("a").id == 1
    assert read(t) == [(1, "x1")] and [s.id for s in t.snapshots()] == [1]


def test_a_rollback_whose_restore_landed_before_its_answer_was_lost_returns(catalog, monkeypatch, no_pauses):
    t = _expired_tag(catalog)
    monkeypatch.setattr(FileIO, "write_if_absent",
                        failing(1, FileIO.write_if_absent, "/snapshot/snapshot-1", after=True))
    assert t.rollback_to("a").id == 1
    monkeypatch.undo()
    assert read(t) == [(1, "x1")] and [s.id for s in t.snapshots()] == [1]


# ---------------------------------------------------------------------------------------------
# 5. reading a data file: gone, a failing store, or bytes that do not parse


@pytest.fixture
def data_file(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.write(rows([1, 2, 3]))
    entry = next(iter(t.live_entries(t.latest_snapshot(), t.schema())))
    path = next(os.path.join(d, f) for d, _, fs in os.walk(t.root) for f in fs if f == entry.file.file_name)
    return t, path


def _readers(t, path):
    from tarn.codec import data_file as codec

    fields = list(t.schema().fields)
    return {
        "read_data_file": lambda: codec.read_data_file(t.file_io, path, "parquet", fields),
        "iter_data_file": lambda: list(codec.iter_data_file(t.file_io, path, "parquet", fields)),
        "parquet_row_groups": lambda: codec.parquet_row_groups(t.file_io, path, fields),
        "read_parquet_groups": lambda: codec.read_parquet_groups(t.file_io, path, fields, [0]),
        "scan": lambda: t.scan().to_arrow(),
    }


READERS = ["read_data_file", "iter_data_file", "parquet_row_groups", "read_parquet_groups", "scan"]


def _failing_reads(monkeypatch, path, message):
    """Opening `path` works; every read of it fails with OSError(message), as pyarrow's S3
    file does when the connection drops mid-read."""
    import io

    class Flaky(io.BytesIO):
        def read(self, *args):
            raise OSError(message)

        def readinto(self, buffer):
            raise OSError(message)

    real = FileIO.open_input_file

    def open_input_file(io_, p):
        if p == path:
            with open(p, "rb") as f:
                return pa.PythonFile(Flaky(f.read()), mode="r")
        return real(io_, p)

    monkeypatch.setattr(FileIO, "open_input_file", open_input_file)


@pytest.mark.parametrize("reader", READERS)
def test_a_store_failing_mid_read_is_a_storage_error(data_file, monkeypatch, reader):
    t, path = data_file
    _failing_reads(monkeypatch, path, "AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 56")
    with pytest.raises(StorageError, match=os.path.basename(path)) as caught:
        _readers(t, path)[reader]()
    assert not isinstance(caught.value, CorruptFile)


def test_an_unsigned_os_error_while_the_store_fails_is_a_storage_error(data_file, monkeypatch):
    t, path = data_file
    _failing_reads(monkeypatch, path, "connection reset")
    monkeypatch.setattr(FileIO, "info", failing(-1, FileIO.info, path))
    with pytest.raises(StorageError, match=os.path.basename(path)):
        _readers(t, path)["read_data_file"]()


@pytest.mark.parametrize("reader", READERS)
def test_a_file_deleted_mid_read_is_file_missing(data_file, monkeypatch, reader):
    t, path = data_file
    _failing_reads(monkeypatch, path, "AWS Error RESOURCE_NOT_FOUND during GetObject operation")
    with pytest.raises(FileMissing, match=os.path.basename(path)):
        _readers(t, path)[reader]()


@pytest.mark.parametrize("reader", READERS)
def test_an_absent_file_is_file_missing(data_file, reader):
    t, path = data_file
    os.remove(path)
    with pytest.raises(FileMissing, match=os.path.basename(path)):
        _readers(t, path)[reader]()


@pytest.mark.parametrize("damage", ["garbage", "footer"])
@pytest.mark.parametrize("reader", READERS)
def test_bytes_that_do_not_parse_are_corrupt_file(data_file, reader, damage):
    """pyarrow raises ArrowInvalid for bytes without parquet's magic, OSError for a footer
    whose thrift does not decode: both are the file's fault, not the store's."""
    t, path = data_file
    with open(path, "rb") as f:
        data = f.read()
    if damage == "garbage":
        data = b"\x13" * len(data)
    else:
        data = data[:-200] + bytes(b ^ 0xFF for b in data[-200:-8]) + data[-8:]
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(CorruptFile, match=os.path.basename(path)) as caught:
        _readers(t, path)[reader]()
    assert not isinstance(caught.value, StorageError)


# ---------------------------------------------------------------------------------------------
# 6. the top-level package


def test_storage_error_is_exported():
    assert tarn.StorageError is StorageError and "StorageError" in tarn.__all__
    assert issubclass(tarn.StorageError, tarn.TarnError) and issubclass(tarn.StorageError, OSError)


def test_failures_maintenance_keeps_after_a_commit_are_not_lost(tmp_path, monkeypatch):
    """A maintenance step that keeps its failure on the table (tag clean-up after its change
    landed) and one that returns it both reach `last_maintenance_errors`; the write returns."""
    from tarn.ops import post_commit
    from tarn.ops.tags import kept_error

    kept, returned = StorageError("deleting an expired tag's files"), StorageError("expiring snapshots")

    def after_commit(table):
        kept_error(table, "tag expiry", kept)
        return [returned]

    monkeypatch.setattr(post_commit, "after_commit", after_commit)
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", schema=SCHEMA, primary_key=["k"],
                                                     options={"bucket": "1"})
    assert table.write(rows([1])) is not None
    assert table.last_maintenance_errors == [kept, returned]
    assert read(table) == [(1, "x1")]


def test_a_store_failing_while_looking_for_a_users_snapshot_is_not_taken_for_expiry(tmp_path, monkeypatch):
    """Committer.latest_of_user answers "this user has no snapshot" only when the history ran
    out (expired); a store error is raised, never read as "not landed"."""
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", schema=SCHEMA, primary_key=["k"],
                                                     options={"bucket": "1"})
    table.write(rows([1]))
    table.commit(table.new_writer().prepare_commit() or [], commit_user="other")
    table.write(rows([2]))
    committer = table.committer()
    mine = table.snapshot(1).commit_user

    def failing_get(snapshot_id):
        raise StorageError(f"reading snapshot-{snapshot_id}: connection reset")

    monkeypatch.setattr(committer.snapshots, "get", failing_get)
    with pytest.raises(StorageError):
        committer.latest_of_user(table.latest_snapshot(), mine)
