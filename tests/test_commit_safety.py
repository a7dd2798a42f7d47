"""Commits never lose data: each test reproduces one defect of the commit-safety issue."""

import os

import pyarrow as pa
import pytest

import tarn
from tarn.store.snapshots import SnapshotStore

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def pk_table(catalog, name="db.pk", **options):
    return catalog.create_table(name, schema=SCHEMA, primary_key=["k"],
                                options={"bucket": "1", **options})


def append_table(catalog, name="db.log", **options):
    return catalog.create_table(name, schema=SCHEMA, options=options)


def rows(keys, value="x"):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{value}{k}" for k in keys]})


def read(table, snapshot_id=None):
    data = table.scan(snapshot_id=snapshot_id).to_arrow().sort_by("k")
    return list(zip(data.column("k").to_pylist(), data.column("v").to_pylist()))


def every_snapshot_reads(table):
    for snapshot in table.snapshots():
        read(table, snapshot.id)


# ------------------------------------------------------------------ compaction conflicts


def test_compaction_conflict_keeps_the_data_commit(catalog):
    t = pk_table(catalog, **{"num-sorted-run.compaction-trigger": "2"})
    t.write(rows([1]))
    writer = t.new_writer()
    writer.write(rows([2]))
    writer.flush()  # level-0 run + compaction of k=1's file in this writer
    t.compact(full=True)  # a compaction job removes that input first
    snapshot = t.commit(writer.prepare_commit())
    assert read(t) == [(1, "x1"), (2, "x2")]
    assert snapshot.commit_kind == "APPEND"  # the compaction was given up, the data stands
    every_snapshot_reads(t)
    t.write(rows([3]))
    assert read(t) == [(1, "x1"), (2, "x2"), (3, "x3")]
    every_snapshot_reads(t)


def test_dropped_compaction_deletes_only_its_outputs(catalog):
    t = pk_table(catalog, **{"num-sorted-run.compaction-trigger": "2"})
    t.write(rows([1]))
    writer = t.new_writer()
    writer.write(rows([2]))
    messages = writer.prepare_commit()
    outputs = {m.file_name for msg in messages for m in msg.compact_after}
    inputs = {m.file_name for msg in messages for m in msg.compact_before}
    assert outputs - inputs, "the writer should have compacted into a new file"
    t.compact(full=True)
    t.commit(messages)
    on_disk = {f for _, _, fs in os.walk(t.root) for f in fs}
    assert not (outputs - inputs) & on_disk
    t.remove_orphan_files(older_than=2**62)  # nothing referenced may go: reads still work
    assert read(t) == [(1, "x1"), (2, "x2")]


def test_failed_compaction_job_raises_and_keeps_inputs(catalog):
    t = pk_table(catalog, **{"num-sorted-run.compaction-trigger": "5"})
    for k in range(3):
        t.write(rows([k]))
    writer = t.new_writer()
    messages = writer.compact(sorted(writer.restored_buckets()), full=True)
    t.compact(full=True)
    with pytest.raises(tarn.CommitConflict):
        t.commit(messages)
    assert read(t) == [(0, "x0"), (1, "x1"), (2, "x2")]
    every_snapshot_reads(t)


# ------------------------------------------------------------------ reused snapshot ids


def before_first_create(monkeypatch, action) -> None:
    """Run `action` (another writer's work) once, just before the next snapshot file is created."""
    real_create = SnapshotStore.create
    pending = [action]

    def create(store, snapshot):
        while pending:
            pending.pop()()
        return real_create(store, snapshot)

    monkeypatch.setattr(SnapshotStore, "create", create)


def test_expired_snapshot_id_is_never_reused(catalog, monkeypatch):
    """A writer builds snapshot 2 on 1; meanwhile others commit 2 and 3 and expiry removes 1
    and 2. Creating snapshot-2 then succeeds, but it lies behind snapshot 3: the commit must
    retry on top instead of landing where no reader looks."""
    t = append_table(catalog)
    t.write(rows([1]))
    other = catalog.load_table("db.log")

    def interfere():
        other.write(rows([2]))
        other.write(rows([3]))
        assert other.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62) == 2

    before_first_create(monkeypatch, interfere)
    t.write(rows([4]))
    monkeypatch.undo()
    assert read(t) == [(1, "x1"), (2, "x2"), (3, "x3"), (4, "x4")]
    assert t.latest_snapshot().id == 4
    assert t.snapshot_store.list_ids() == [3, 4]


def test_commit_on_a_rolled_back_base_retries(catalog, monkeypatch):
    t = append_table(catalog)
    t.write(rows([1]))
    t.write(rows([2]))
    other = catalog.load_table("db.log")
    before_first_create(monkeypatch, lambda: other.rollback_to(1))
    t.write(rows([3]))
    monkeypatch.undo()
    assert read(t) == [(1, "x1"), (3, "x3")]
    assert t.snapshot_store.list_ids() == [1, 2]


def test_uncertain_create_that_landed_counts_once(catalog, monkeypatch):
    t = append_table(catalog)
    real_create = SnapshotStore.create

    def create_then_time_out(store, snapshot):
        real_create(store, snapshot)
        raise TimeoutError("the store answered too late")

    monkeypatch.setattr(SnapshotStore, "create", create_then_time_out)
    t.write(rows([1]))
    monkeypatch.undo()
    assert read(t) == [(1, "x1")]
    assert t.snapshot_store.list_ids() == [1]


def test_unknown_outcome_keeps_every_file(catalog, monkeypatch):
    t = append_table(catalog)
    t.write(rows([1]))

    def create_fails(store, snapshot):
        raise TimeoutError("no answer")

    def find_fails(store, snapshot_id):
        raise TimeoutError("still no answer")

    monkeypatch.setattr(SnapshotStore, "create", create_fails)
    monkeypatch.setattr(SnapshotStore, "find", find_fails)
    before = {f for _, _, fs in os.walk(t.root) for f in fs}
    with pytest.raises(tarn.OutcomeUnknown):
        t.write(rows([2]))
    monkeypatch.undo()
    after = {f for _, _, fs in os.walk(t.root) for f in fs}
    assert any(n.startswith("data-") for n in after - before)  # may have landed: kept
    assert read(t) == [(1, "x1")]


# ------------------------------------------------------------------ maintenance after commit


def test_maintenance_failure_does_not_fail_a_landed_write(catalog):
    t = append_table(catalog)
    t.write(rows([1]))
    tag_dir = os.path.join(t.root, "tag")
    os.makedirs(tag_dir, exist_ok=True)
    with open(os.path.join(tag_dir, "tag-broken"), "w") as f:
        f.write("{ not json")
    snapshot = t.write(rows([2]))  # expiry reads the tags and fails: reported, not raised
    assert snapshot.id == 2
    assert read(t) == [(1, "x1"), (2, "x2")]
    assert t.last_maintenance_errors and isinstance(t.last_maintenance_errors[0], tarn.CorruptFile)


def test_expiry_vanishing_manifest_mid_commit_is_retried(catalog, monkeypatch):
    t = append_table(catalog)
    t.write(rows([1]))
    other = catalog.load_table("db.log")
    committer_cls = type(t.committer())
    real_try = committer_cls._try_once
    state = {"interfered": False}

    def try_after_expiry(self, latest, messages, request):
        if not state["interfered"]:
            state["interfered"] = True
            other.write(rows([2]))
            other.write(rows([3]))
            other.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
        return real_try(self, latest, messages, request)

    monkeypatch.setattr(committer_cls, "_try_once", try_after_expiry)
    t.write(rows([4]))
    monkeypatch.undo()
    assert read(t) == [(1, "x1"), (2, "x2"), (3, "x3"), (4, "x4")]


def test_missing_file_is_reported_as_missing(catalog):
    t = append_table(catalog)
    t.write(rows([1]))
    os.remove(os.path.join(t.root, "snapshot", "snapshot-1"))
    with pytest.raises(tarn.SnapshotNotFound):
        t.snapshot(1)
    manifest_dir = os.path.join(t.root, "manifest")
    t.write(rows([2]))
    for name in os.listdir(manifest_dir):
        os.remove(os.path.join(manifest_dir, name))
    with pytest.raises(tarn.FileMissing, match="not found"):
        t.scan().to_arrow()


# ------------------------------------------------------------------ atomic metadata files


def test_tag_files_appear_whole_and_only_once(catalog, monkeypatch):
    t = append_table(catalog)
    t.write(rows([1]))
    from tarn.fs import FileIO

    real_open = FileIO.open_output_stream
    seen = []

    def spy(self, path):
        seen.append(path)
        return real_open(self, path)

    monkeypatch.setattr(FileIO, "open_output_stream", spy)
    t.create_tag("t1")
    monkeypatch.undo()
    tag_path = os.path.join(t.root, "tag", "tag-t1")
    assert os.path.getsize(tag_path) > 0
    # written under a temporary name, then moved into place: never opened under its own name
    assert tag_path not in [os.path.normpath(p) for p in seen]
    with pytest.raises(tarn.InvalidArgument, match="already exists"):
        t.create_tag("t1")


def test_tag_creation_race_has_one_winner(catalog):
    import threading

    t = append_table(catalog)
    t.write(rows([1]))
    t.write(rows([2]))
    results = []

    def create(snapshot_id):
        try:
            results.append(catalog.load_table("db.log").create_tag("race", snapshot_id))
        except tarn.InvalidArgument as exc:
            results.append(exc)

    threads = [threading.Thread(target=create, args=(i % 2 + 1,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    winners = [r for r in results if not isinstance(r, Exception)]
    assert len(winners) == 1
    assert t.list_tags()[0].snapshot_id == winners[0].snapshot_id


def test_unreadable_tag_file_can_be_deleted(catalog):
    t = append_table(catalog)
    t.write(rows([1]))
    os.makedirs(os.path.join(t.root, "tag"), exist_ok=True)
    open(os.path.join(t.root, "tag", "tag-empty"), "wb").close()  # another engine's crash
    with pytest.raises(tarn.CorruptFile, match="tag-empty"):
        t.list_tags()
    t.delete_tag("empty")
    assert t.list_tags() == []
    t.write(rows([2]))
    assert read(t) == [(1, "x1"), (2, "x2")]


def test_hints_are_replaced_atomically(catalog, monkeypatch):
    t = append_table(catalog)
    import tarn.fs as fs_module

    replaced = []
    real_replace = fs_module.os.replace

    def spy(src, dst):
        replaced.append(os.path.basename(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(fs_module.os, "replace", spy)
    t.write(rows([1]))
    assert "LATEST" in replaced


# ------------------------------------------------------------------ names and options


@pytest.mark.parametrize("call", [
    lambda c: c.drop_table(""),
    lambda c: c.create_table("", schema=SCHEMA),
    lambda c: c.create_database("../escaped"),
    lambda c: c.list_tables("../other/x"),
    lambda c: c.create_table("db./x", schema=SCHEMA),
    lambda c: c.create_table("db...", schema=SCHEMA),
    lambda c: c.load_table("../db.t"),
    lambda c: c.create_table("db.a\\b", schema=SCHEMA),
])
def test_names_stay_inside_the_warehouse(catalog, call, tmp_path):
    catalog.create_table("default.keep", schema=SCHEMA).write(rows([1]))
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(tarn.InvalidArgument):
        call(catalog)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert read(catalog.load_table("keep")) == [(1, "x1")]


@pytest.mark.parametrize("option, value", [
    ("commit.max-retries", "-1"), ("target-file-size", "0"), ("target-file-size", "0 mb"),
    ("write-buffer-size", "0"), ("num-sorted-run.compaction-trigger", "0"), ("num-levels", "1"),
    ("file.compression.zstd-level", "99"), ("manifest.target-file-size", "-5"),
])
def test_nonsense_option_values_are_refused(catalog, option, value):
    with pytest.raises(tarn.InvalidOption, match=option):
        catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", option: value})
    assert not catalog.table_exists("db.t")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    with pytest.raises(tarn.InvalidOption, match=option):
        t.alter(tarn.SetOption(option, value))
    assert option not in t.schema().options


def test_empty_schema_is_refused(catalog):
    with pytest.raises(tarn.SchemaMismatch, match="db.t"):
        catalog.create_table("db.t", schema=pa.schema([]))
    assert not catalog.table_exists("db.t")


def test_no_table_is_created_over_existing_snapshots(catalog):
    t = append_table(catalog)
    t.write(rows([1]))
    os.remove(os.path.join(t.root, "schema", "schema-0"))
    with pytest.raises(tarn.TableAlreadyExists, match="snapshot"):
        catalog.create_table("db.log", schema=SCHEMA)
    assert os.path.exists(os.path.join(t.root, "snapshot", "snapshot-1"))


# ------------------------------------------------------------------ interrupted expiry


def test_interrupted_expiry_leaves_only_unreferenced_files(catalog, monkeypatch):
    from tarn.ops import expire

    t = append_table(catalog)
    for k in range(6):
        t.write(rows([k]))
    t.overwrite(rows([9]))  # files removed by a delta: expiry deletes them
    for k in range(3):
        t.write(rows([10 + k]))

    def die(paths):
        raise KeyboardInterrupt("killed while deleting data files")

    monkeypatch.setattr(expire, "delete_paths", lambda file_io, paths: die(paths))
    with pytest.raises(KeyboardInterrupt):
        t.expire_snapshots(retain_min=2, retain_max=2, older_than_ms=2**62)
    monkeypatch.undo()
    every_snapshot_reads(t)  # every listed snapshot still has its files
    assert read(t) == [(9, "x9"), (10, "x10"), (11, "x11"), (12, "x12")]
    t.remove_orphan_files(older_than=2**62)
    every_snapshot_reads(t)


# ------------------------------------------------------------------ readers during expiry


def test_latest_scan_moves_on_when_its_snapshot_expires(catalog):
    t = append_table(catalog)
    t.write(rows([1]))
    scan = t.scan()  # pinned to snapshot 1
    other = catalog.load_table("db.log")
    other.overwrite(rows([2]))
    other.write(rows([3]))
    other.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
    assert sorted(scan.to_arrow().column("k").to_pylist()) == [2, 3]
    pinned = t.scan(snapshot_id=3)
    assert pinned.to_arrow().num_rows == 2


# ------------------------------------------------------------------ predicates


def test_predicates_refuse_python_boolean_keywords():
    from tarn import col

    with pytest.raises(tarn.InvalidArgument, match="&"):
        _ = (col("a") > 1) and (col("b") > 1)
    with pytest.raises(tarn.InvalidArgument, match="&"):
        _ = 1 < col("x") < 5
    with pytest.raises(tarn.InvalidArgument):
        _ = not (col("a") == 1)
    assert (col("a") > 1) & (col("b") > 1) is not None
