"""The decoupled changelog lifecycle (issue 43 item 1): `changelog.num-retained.min/max` and
`changelog.time-retained` beyond the snapshot retention keep each expired snapshot's changelog
(`changelog/changelog-<id>` and its files) for streams, until changelog expiry removes them —
with a producer (its changelog files) and without one (its delta's files)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import tarn
from tarn.errors import SnapshotNotFound
from tarn.ops.expire import changelog_decoupled
from tarn.options import Options

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def make(tmp_path, producer: str, changelog_max: int = 10, **extra) -> tarn.Table:
    options = {"bucket": "1", "changelog-producer": producer, "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "2", "changelog.num-retained.max": str(changelog_max),
               "num-sorted-run.compaction-trigger": "50", **extra}  # no compaction unless asked
    return tarn.Catalog(str(tmp_path)).create_table("db.c", SCHEMA, primary_key="k", options=options)


def on_disk(root: str) -> set[str]:
    return {os.path.join(os.path.relpath(d, root), n) for d, _, names in os.walk(root) for n in names}


def changes(table, snapshot_id: int) -> list[tuple]:
    got = table.changes(snapshot_id)
    return sorted(zip(got.column("_ROW_KIND").to_pylist(), got.column("k").to_pylist(), got.column("v").to_pylist()))


def test_decoupled_is_beyond_the_snapshot_retention():
    assert not changelog_decoupled(Options({}))
    assert not changelog_decoupled(Options({"changelog.num-retained.max": "2147483647"}))
    assert changelog_decoupled(Options({"snapshot.num-retained.max": "5", "changelog.num-retained.max": "6"}))
    assert changelog_decoupled(Options({"changelog.time-retained": "2 h"}))
    assert changelog_decoupled(Options({"changelog.num-retained.min": "11"}))


def test_input_changelog_outlives_its_snapshot_until_changelog_expiry(tmp_path):
    t = make(tmp_path, "input", changelog_max=4)
    for i in range(1, 7):
        t.write(pa.table({"k": [i, 1], "v": [f"v{i}", f"one{i}"]}, schema=SCHEMA))
    assert t.snapshot_store.list_ids() == [5, 6]
    assert t.changelog_store.list_ids() == [3, 4]  # 6 - 4 + 1 = 3: changelogs 1 and 2 expired
    assert changes(t, 3) == [("+I", 1, "one3"), ("+I", 3, "v3")]
    assert changes(t, 4) == [("+I", 1, "one4"), ("+I", 4, "v4")]
    with pytest.raises(SnapshotNotFound):
        t.changes(2)
    names = {os.path.basename(p) for p in on_disk(t.root)}
    for i in (3, 4):  # each kept changelog's changelog manifests and files are on disk
        snap = t.changelog_store.get(i)
        for meta in t.core.manifests().read_manifest_list(snap.changelog_manifest_list):
            assert meta.file_name in names
            for entry in t.core.manifests().read_manifest(meta.file_name):
                assert entry.file.file_name in names
    # no changelog file of an expired changelog (1, 2) stays behind
    changelog_files = {n for n in names if n.startswith("changelog-") and n.endswith(".parquet")}
    assert len(changelog_files) == 4  # snapshots 3..6


def test_without_a_producer_the_delta_files_stay_through_compactions(tmp_path):
    t = make(tmp_path, "none", changelog_max=5)
    for i in range(1, 5):
        t.write(pa.table({"k": [1], "v": [f"v{i}"]}, schema=SCHEMA))
    t.compact(full=True)  # removes the APPEND files 1..4; snapshots 1..3 then expire
    t.write(pa.table({"k": [2], "v": ["w"]}, schema=SCHEMA))
    assert t.snapshot_store.list_ids() == [5, 6]
    assert t.changelog_store.list_ids() == [2, 3, 4]
    assert [changes(t, i) for i in (2, 3, 4)] == [[("+I", 1, "v2")], [("+I", 1, "v3")], [("+I", 1, "v4")]]
    assert sorted(t.scan().to_arrow().column("v").to_pylist()) == ["v4", "w"]


def test_rollback_drops_newer_changelogs_and_orphans_keep_theirs(tmp_path):
    t = make(tmp_path, "input")
    for i in range(1, 6):
        t.write(pa.table({"k": [i], "v": [f"v{i}"]}, schema=SCHEMA))
    t.create_tag("t2", snapshot_id=4)
    assert t.changelog_store.list_ids() == [1, 2, 3]
    before = on_disk(t.root)
    import time
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000) == []
    assert on_disk(t.root) == before
    t.rollback_to("t2")
    assert t.changelog_store.list_ids() == [1, 2, 3]
    assert changes(t, 1) == [("+I", 1, "v1")]


def test_stream_start_at_a_long_lived_changelog(tmp_path):
    from tarn.scan.changes import snapshot_changes

    t = make(tmp_path, "input")
    for i in range(1, 5):
        t.write(pa.table({"k": [i], "v": [f"v{i}"]}, schema=SCHEMA))
    assert t.changelog_store.list_ids() == [1, 2]
    assert t.changes_of(1).id == 1 and snapshot_changes(t.core, 2).num_rows == 1


@pytest.mark.parametrize("changelog_only", [True, False])
def test_consumers_hold_changelogs_and_with_changelog_only_not_snapshots(tmp_path, changelog_only):
    """A consumer's next snapshot keeps what it has not read: with `consumer.changelog-only`
    (and a decoupled lifecycle) only the changelogs, otherwise the snapshots themselves."""
    t = make(tmp_path, "input", changelog_max=3, **({"consumer.changelog-only": "true"} if changelog_only else {}))
    t.write(pa.table({"k": [1], "v": ["v1"]}, schema=SCHEMA))
    t.consumer_store.write("reader", 1)
    for i in range(2, 7):
        t.write(pa.table({"k": [i], "v": [f"v{i}"]}, schema=SCHEMA))
    if changelog_only:
        assert t.snapshot_store.list_ids() == [5, 6]
        assert t.changelog_store.list_ids() == [1, 2, 3, 4]  # beyond changelog.num-retained.max: the consumer
    else:
        assert t.snapshot_store.list_ids() == [1, 2, 3, 4, 5, 6]
        assert t.changelog_store.list_ids() == []
    assert changes(t, 1) == [("+I", 1, "v1")]
