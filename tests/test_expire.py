"""Snapshot expiration: which snapshots go (retain min/max, time, limit, consumers), which files
go with them (tags keep theirs), each manifest read once, bad options change nothing."""

import collections
import os
import time

import pytest

from tarn.errors import InvalidOption
from tarn.ops.post_commit import after_commit
from tarn.ops import tags as T
from tarn.ops import time_travel as TT
from tarn.ops.expire import check_retention_options, expire_snapshots
from tarn.store.consumers import ConsumerStore
from tarn.store.manifests import ManifestStore
from tests.maintenance_checks import (
    events, make_events, missing_files, rows, set_options_on_disk, tree, unreferenced_files,
)

FAR_FUTURE = int(time.time() * 1000) + 10**9


def table_with(catalog, n, **options):
    t = make_events(catalog, **options)
    for i in range(n):
        t.write(events("a", [i]))
    return t


def earliest_hint(t):
    return open(os.path.join(t.root, "snapshot", "EARLIEST")).read()


def test_retain_min_and_hint(catalog):
    t = table_with(catalog, 10)
    assert expire_snapshots(t, retain_min=3, older_than_ms=FAR_FUTURE, max_deletes=100) == 7
    assert t.snapshot_store.list_ids() == [8, 9, 10]
    assert earliest_hint(t) == "8"
    assert len(rows(t, t.snapshot(8))) == 8
    assert not missing_files(t) and not unreferenced_files(t)


def test_retain_max_overrides_time(catalog):
    t = table_with(catalog, 8)
    # nothing is old enough, but at most 5 may stay
    assert expire_snapshots(t, retain_min=1, retain_max=5, older_than_ms=0, max_deletes=100) == 3
    assert t.snapshot_store.list_ids() == [4, 5, 6, 7, 8]


def test_time_retained_stops_at_young_successor(catalog):
    t = make_events(catalog)
    for i in range(6):
        t.write(events("a", [i]))
        time.sleep(0.003)
    # snapshot k may go only when snapshot k+1 was committed before the cutoff
    assert expire_snapshots(t, retain_min=1, older_than_ms=t.snapshot(3).time_millis, max_deletes=100) == 1
    assert expire_snapshots(t, retain_min=1, older_than_ms=t.snapshot(4).time_millis + 1,
                            max_deletes=100) == 2
    assert t.snapshot_store.list_ids() == [4, 5, 6]
    # the default (1 h) keeps everything just written
    assert expire_snapshots(t, retain_min=1) == 0


def test_expire_limit(catalog):
    t = table_with(catalog, 8)
    assert expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE, max_deletes=2) == 2
    assert t.snapshot_store.earliest_id() == 3
    assert expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE, max_deletes=2) == 2
    assert t.snapshot_store.earliest_id() == 5


def test_consumer_keeps_its_next_snapshot(catalog):
    t = table_with(catalog, 8)
    ConsumerStore(t.file_io, t.root).write("reader", 4)
    assert expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE, max_deletes=100) == 3
    assert t.snapshot_store.list_ids()[0] == 4
    ConsumerStore(t.file_io, t.root).delete("reader")
    expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE, max_deletes=100)
    assert t.snapshot_store.list_ids() == [8]


def test_no_snapshots_and_nothing_to_expire(catalog):
    t = make_events(catalog)
    assert expire_snapshots(t) == 0
    t.write(events("a", [1]))
    assert expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE) == 0
    assert earliest_hint(t) == "1"


def overwrites(catalog, n, **options):
    t = make_events(catalog, **options)
    t.write(events("b", [100]))
    for i in range(n):
        t.overwrite(events("a", [i, i + 50], tag=f"s{i}"), partition={"p": "a"})
    return t


def test_expired_files_go_tagged_files_stay(catalog):
    t = overwrites(catalog, 6)
    T.create_tag(t, "t3", 3)
    T.create_tag(t, "t5", 5)
    want = {n: rows(t, TT.snapshot_by_tag(t, n)) for n in ("t3", "t5")}
    latest = rows(t, t.latest_snapshot())
    data_before = {p for p in tree(t.root) if "/bucket-" in p}
    assert expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE, max_deletes=100) == 6
    data_after = {p for p in tree(t.root) if "/bucket-" in p}
    # the files of snapshots 2, 4, 6 (overwritten, untagged) went; 3 and 5 stay for their tags
    assert len(data_before) - len(data_after) == 3
    assert {n: rows(t, TT.snapshot_by_tag(t, n)) for n in ("t3", "t5")} == want
    assert rows(t, t.latest_snapshot()) == latest
    assert not missing_files(t) and not unreferenced_files(t)
    manifests_left = [p for p in tree(t.root) if p.startswith("manifest/")]
    assert len(manifests_left) < 40


def test_each_manifest_read_at_most_once(catalog, monkeypatch):
    t = overwrites(catalog, 8)
    T.create_tag(t, "t4", 4)
    T.create_tag(t, "t6", 6)
    reads = collections.Counter()
    original = ManifestStore.read_manifest

    def counting(self, name):
        reads[name] += 1
        return original(self, name)

    monkeypatch.setattr(ManifestStore, "read_manifest", counting)
    assert expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE, max_deletes=100) == 8
    assert reads and max(reads.values()) == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"retain_min": 0}, "snapshot.num-retained.min should be at least 1"),
    ({"retain_min": 5, "retain_max": 2}, "retain_min is larger than retain_max"),
    ({"max_deletes": 0}, "snapshot.expire.limit"),
])
def test_invalid_arguments_change_nothing(catalog, kwargs, message):
    t = table_with(catalog, 4)
    before = tree(t.root)
    with pytest.raises(InvalidOption, match=message):
        expire_snapshots(t, older_than_ms=FAR_FUTURE, **kwargs)
    assert tree(t.root) == before


def test_invalid_retention_options(catalog):
    with pytest.raises(InvalidOption, match="snapshot.num-retained.min"):
        check_retention_options({"snapshot.num-retained.min": "0"}, "db.t")
    with pytest.raises(InvalidOption, match="snapshot.num-retained.max"):
        check_retention_options({"snapshot.num-retained.min": "8", "snapshot.num-retained.max": "3"}, "db.t")
    with pytest.raises(InvalidOption, match="snapshot.time-retained"):
        check_retention_options({"snapshot.time-retained": "soon"}, "db.t")
    check_retention_options({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}, "db.t")
    t = table_with(catalog, 3)
    # a table another engine wrote with retention options that contradict each other
    set_options_on_disk(t, {"snapshot.num-retained.min": "3", "snapshot.num-retained.max": "2"})
    before = tree(t.root)
    errors = after_commit(t)  # reported, never raised: the commit before it has landed
    assert len(errors) == 1 and isinstance(errors[0], InvalidOption)
    assert tree(t.root) == before


def test_after_commit_uses_table_options(catalog):
    opts = {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"}
    t = table_with(catalog, 6, **opts)
    after_commit(t)
    assert t.snapshot_store.list_ids() == [4, 5, 6]
    ro = make_events(catalog, "db.ro", **opts, **{"write-only": "true"})
    for i in range(5):
        ro.write(events("a", [i]))
    after_commit(ro)
    assert ro.snapshot_store.list_ids() == [1, 2, 3, 4, 5]


def test_clean_empty_directories(catalog):
    t = make_events(catalog, **{"snapshot.clean-empty-directories": "true"})
    t.write(events("gone", [1]))
    t.overwrite(events("b", [2]), dynamic=False)
    t.write(events("b", [3]))
    assert os.path.isdir(os.path.join(t.root, "p=gone"))
    expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE)
    assert not os.path.exists(os.path.join(t.root, "p=gone"))
    assert len(rows(t, t.latest_snapshot())) == 2
