"""Commits: atomicity, retries on lost races, conflict detection, idempotence, failure cleanup."""

import os
import threading

import pyarrow as pa
import pytest

import tarn
from tarn.commit.requirements import LandsOn
from tarn.meta.snapshot import Snapshot
from tests.helpers import ORDERS_SCHEMA, orders_rows, rows_by_key


def make(catalog, **options):
    return catalog.create_table("db.t", schema=ORDERS_SCHEMA, primary_key=["dt", "id"],
                                partition_keys=["dt"], options={"bucket": "2", **options})


def table_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_lost_race_retries_on_fresh_base(catalog, monkeypatch):
    t = make(catalog)
    writer_a = t.new_writer()
    writer_a.write(orders_rows(["d1"], [1]))
    writer_b = t.new_writer()
    writer_b.write(orders_rows(["d2"], [2]))
    messages_a, messages_b = writer_a.prepare_commit(), writer_b.prepare_commit()
    # B's committer reads "latest = none" first, then A commits in between.
    committer_b = t.committer()
    real_latest = committer_b.snapshots.latest
    calls = {"n": 0}

    def stale_latest():
        calls["n"] += 1
        if calls["n"] == 1:
            t.commit(messages_a)
            return None
        return real_latest()

    monkeypatch.setattr(committer_b.snapshots, "latest", stale_latest)
    snap = committer_b.commit(messages_b, "user-b")
    assert snap.id == 2
    assert set(rows_by_key(t.scan().to_arrow(), ["dt", "id"])) == {("d1", 1), ("d2", 2)}
    # the losing attempt's manifests were removed: every manifest on disk is referenced
    manifests_on_disk = set(os.listdir(os.path.join(t.root, "manifest")))
    referenced = set()
    planner = t.planner(t.schema())
    for s in t.snapshots():
        referenced |= {s.base_manifest_list, s.delta_manifest_list}
        referenced |= {m.file_name for m in planner.manifest_metas(s)}
    assert manifests_on_disk == referenced


def test_concurrent_writers_all_land(catalog):
    t = make(catalog)
    errors = []

    def work(i):
        try:
            tarn.load_table(t.root).write(orders_rows([f"d{i}"], [i]))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5, 6]
    assert len(t.scan().to_arrow()) == 6
    assert t.latest_snapshot().total_record_count == 6


def test_conflict_deleting_already_removed_file(catalog):
    t = make(catalog)
    t.write(orders_rows(["d1"], [1]))
    entry = t.planner(t.schema()).live_entries(t.latest_snapshot())[0]
    from tarn.write.message import CommitMessage

    remove = CommitMessage(entry.partition, entry.bucket, entry.total_buckets, compact_before=[entry.file])
    t.commit([remove])  # first removal lands (a COMPACT with no outputs)
    assert t.latest_snapshot().commit_kind == "COMPACT"
    before = table_files(t.root)
    with pytest.raises(tarn.CommitConflict, match=entry.file.file_name):
        t.commit([CommitMessage(entry.partition, entry.bucket, entry.total_buckets, compact_before=[entry.file])])
    assert table_files(t.root) == before
    assert t.latest_snapshot().id == 2


def test_streaming_identifier_is_idempotent(catalog):
    t = make(catalog)
    for attempt in range(2):
        w = t.new_writer()
        w.write(orders_rows(["d1"], [1]))
        result = t.commit(w.prepare_commit(), commit_user="stream-1", commit_identifier=7)
        if attempt == 0:
            assert result is not None
        else:
            assert result is None  # replay skipped
    assert [s.commit_identifier for s in t.snapshots()] == [7]
    # the skipped replay's data files were not committed; they are not referenced
    w = t.new_writer()
    w.write(orders_rows(["d1"], [2]))
    assert t.commit(w.prepare_commit(), commit_user="stream-1", commit_identifier=8).id == 2


def test_failed_write_leaves_table_unchanged(catalog, monkeypatch):
    t = make(catalog)
    t.write(orders_rows(["d1"], [1]))
    before = table_files(t.root)
    from tarn.store import snapshots as snapshots_module

    def boom(self, snapshot):
        raise OSError("disk full")

    monkeypatch.setattr(snapshots_module.SnapshotStore, "create", boom)
    with pytest.raises(OSError):
        t.write(orders_rows(["d1", "d2"], [2, 3]))
    monkeypatch.undo()
    assert table_files(t.root) == before
    assert t.latest_snapshot().id == 1


def test_uncertain_publish_settled_by_uuid(catalog):
    t = make(catalog)
    t.write(orders_rows(["d1"], [1]))
    snap = t.latest_snapshot()
    # publishing the very same snapshot again counts as success (same uuid)...
    assert t.snapshot_store.create(snap)
    # ...a different snapshot with the same id does not
    other = Snapshot.from_json(snap.to_json()).replace(uuid="another")
    assert not t.snapshot_store.create(other)


def test_bad_input_commits_nothing(catalog):
    t = make(catalog)
    t.write(orders_rows(["d1"], [1]))
    before = table_files(t.root)
    bad_inputs = [
        pa.table({"dt": ["d1"], "id": [2]}),  # missing columns
        pa.table({"dt": ["d1"], "id": ["x"], "item": ["a"], "qty": [1]}),  # wrong type
        pa.table({"dt": ["d1"], "id": pa.array([None], pa.int64()), "item": ["a"], "qty": [1]}),  # null key
        pa.table({"dt": ["d1"], "id": [1], "item": ["a"], "qty": [1], "zzz": [1]}),  # extra column
    ]
    for bad in bad_inputs:
        with pytest.raises(tarn.SchemaMismatch) as info:
            t.write(bad)
        assert "db.t" in str(info.value)
    assert table_files(t.root) == before


def test_error_messages_name_things(catalog):
    t = make(catalog)
    with pytest.raises(tarn.SchemaMismatch, match="'id'"):
        t.write(pa.table({"dt": ["d1"], "id": pa.array([None], pa.int64()), "item": ["a"], "qty": [1]}))
    with pytest.raises(tarn.SnapshotNotFound, match="snapshot 5"):
        t.scan(snapshot_id=5)
    with pytest.raises(tarn.InvalidOption, match="bucket"):
        catalog.create_table("db.x", schema=ORDERS_SCHEMA, options={"bukcet": "2"})
    with pytest.raises(tarn.TableNotFound, match="db.nope"):
        catalog.load_table("db.nope")


def test_corrupt_snapshot_and_manifest_are_named(catalog):
    t = make(catalog)
    t.write(orders_rows(["d1"], [1]))
    snap_path = os.path.join(t.root, "snapshot", "snapshot-1")
    manifest_list = os.path.join(t.root, "manifest", t.latest_snapshot().delta_manifest_list)
    with open(manifest_list, "wb") as f:
        f.write(b"garbage")
    with pytest.raises(tarn.CorruptFile, match=os.path.basename(manifest_list)):
        t.scan().to_arrow()
    with open(snap_path, "w") as f:
        f.write("{not json")
    with pytest.raises(tarn.CorruptFile, match="snapshot-1"):
        t.latest_snapshot()


def test_expected_base_lands_only_directly_on_that_snapshot(catalog, monkeypatch):
    t = make(catalog)
    first = t.new_writer()
    first.write(orders_rows(["d1"], [1]))
    assert t.commit(first.prepare_commit(), expected_base=0).id == 1
    # stale from the start: nothing lands and the writer's files are gone
    stale = t.new_writer()
    stale.write(orders_rows(["d2"], [2]))
    messages = stale.prepare_commit()
    other = t.new_writer()
    other.write(orders_rows(["d3"], [3]))
    t.commit(other.prepare_commit())
    with pytest.raises(tarn.CommitConflict, match=f"table {t.name}: the rows were placed against snapshot 1, "
                                                  "but the latest snapshot is 2"):
        t.commit(messages, expected_base=1)
    assert [s.id for s in t.snapshots()] == [1, 2]
    assert messages[0].new_files and not [f for _, _, fs in os.walk(os.path.join(t.root, "dt=d2")) for f in fs]
    # a lost race is not retried on top of the winner: the winner moved the base
    late = t.new_writer()
    late.write(orders_rows(["d4"], [4]))
    winner = t.new_writer()
    winner.write(orders_rows(["d5"], [5]))
    committer = t.committer()
    real_latest, calls = committer.snapshots.latest, {"n": 0}

    def racing_latest():
        calls["n"] += 1
        seen = real_latest()
        if calls["n"] == 1:
            t.commit(winner.prepare_commit())  # lands as snapshot 3 after this attempt read snapshot 2
        return seen

    monkeypatch.setattr(committer.snapshots, "latest", racing_latest)
    with pytest.raises(tarn.CommitConflict, match="placed against snapshot 2, but the latest snapshot is 3"):
        committer.commit(late.prepare_commit(), "user-late", requirements=(LandsOn(2),))
    assert set(rows_by_key(t.scan().to_arrow(), ["dt", "id"])) == {("d1", 1), ("d3", 3), ("d5", 5)}


def test_snapshots_carry_tarns_writer_version(tmp_path):
    """`writerVersion` (Paimon 2.1) in the form pypaimon writes its own: python-tarn-<version>,
    right after commitUser as Java lays the file out; the $snapshots table shows it."""
    import json

    import pyarrow as pa

    import tarn

    t = tarn.Catalog(str(tmp_path)).create_table("db.w", pa.schema([("a", pa.int64())]))
    t.write(pa.table({"a": [1]}))
    with open(f"{t.root}/snapshot/snapshot-1") as f:
        text = f.read()
    obj = json.loads(text)
    assert obj["writerVersion"] == f"python-tarn-{tarn.__version__}"
    keys = list(obj)
    assert keys.index("writerVersion") == keys.index("commitUser") + 1
    assert t.latest_snapshot().writer_version == obj["writerVersion"]


def test_strict_mode_last_safe_snapshot(tmp_path):
    """`commit.strict-mode.last-safe-snapshot` (Java's StrictModeChecker): after that snapshot,
    another user's COMPACT or OVERWRITE of a partition this commit changes, or another user's
    APPEND to a partition this commit overwrites, fails the commit; nothing lands."""
    import pyarrow as pa

    import tarn
    from tarn.commit.committer import Overwrite
    from tarn.errors import CommitConflict

    schema = pa.schema([("p", pa.string()), ("a", pa.int64())])
    t = tarn.Catalog(str(tmp_path)).create_table("db.s", schema, partition_keys="p")

    def commit(user, rows, overwrite=None):
        writer = t.core.new_writer(ignore_previous_files=overwrite is not None)
        writer.write(pa.table({"p": [r[0] for r in rows], "a": [r[1] for r in rows]}, schema=schema))
        return t.commit(writer.prepare_commit(), commit_user=user, overwrite=overwrite)

    commit("me", [("x", 1), ("y", 1)])  # snapshot 1
    t.alter(tarn.SetOption("commit.strict-mode.last-safe-snapshot", "1"))
    commit("other", [("x", 2)], overwrite=Overwrite({"p": "x"}))  # snapshot 2: OVERWRITE of x
    with pytest.raises(CommitConflict, match="OVERWRITE snapshot \\(id: 2\\) by another user other"):
        commit("me", [("x", 3)])
    assert t.latest_snapshot().id == 2
    assert commit("me", [("y", 3)]).id == 3  # another partition: fine
    assert commit("other", [("x", 4)]).id == 4  # its own OVERWRITE does not count against it
    commit("third", [("y", 5)])  # snapshot 5: another user's APPEND to y
    with pytest.raises(CommitConflict, match="APPEND snapshot \\(id: 5\\)"):
        commit("me", [("y", 6)], overwrite=Overwrite({"p": "y"}))
    t.alter(tarn.SetOption("commit.strict-mode.last-safe-snapshot", "5"))
    assert commit("me", [("y", 6)], overwrite=Overwrite({"p": "y"})).commit_kind == "OVERWRITE"
