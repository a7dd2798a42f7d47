"""Rollback to a snapshot or a tag: the table holds exactly that data again, later snapshots,
later tags and the files only they used are gone; bad targets change nothing."""

import os
import time

import pytest

from tarn.errors import InvalidArgument, SnapshotNotFound
from tarn.ops import tags as T
from tarn.ops import time_travel as TT
from tarn.ops.expire import expire_snapshots
from tarn.ops.rollback import rollback_to
from tests.maintenance_checks import events, make_events, missing_files, rows, tree, unreferenced_files

FAR_FUTURE = int(time.time() * 1000) + 10**9


def history(catalog, n=6):
    t = make_events(catalog)
    t.write(events("b", [100]))
    for i in range(n):
        if i % 2:
            t.overwrite(events("a", [i], tag=f"o{i}"), partition={"p": "a"})
        else:
            t.write(events("a", [i, i + 10], tag=f"w{i}"))
    return t


def test_rollback_to_snapshot(catalog):
    t = history(catalog)
    want = rows(t, t.snapshot(3))
    T.create_tag(t, "early", 2)
    T.create_tag(t, "late", 5)
    rollback_to(t, 3)
    assert t.snapshot_store.list_ids() == [1, 2, 3]
    assert open(os.path.join(t.root, "snapshot", "LATEST")).read() == "3"
    assert rows(t, t.latest_snapshot()) == want
    assert [x.name for x in T.list_tags(t)] == ["early"]
    assert not missing_files(t) and not unreferenced_files(t)
    # the table goes on from there
    s = t.write(events("c", [7]))
    assert s.id == 4 and len(rows(t, s)) == len(want) + 1


def test_rollback_to_tag(catalog):
    t = history(catalog)
    T.create_tag(t, "mid", 4)
    T.create_tag(t, "after", 6)
    want = rows(t, TT.snapshot_by_tag(t, "mid"))
    rollback_to(t, "mid")
    assert t.latest_snapshot().id == 4 and rows(t, t.latest_snapshot()) == want
    assert [x.name for x in T.list_tags(t)] == ["mid"]
    assert not missing_files(t) and not unreferenced_files(t)


def test_rollback_to_expired_tagged_snapshot(catalog):
    t = history(catalog)
    T.create_tag(t, "old", 2)
    T.create_tag(t, "newer", 4)
    want = rows(t, t.snapshot(2))
    expire_snapshots(t, retain_min=1, older_than_ms=FAR_FUTURE, max_deletes=100)
    assert t.snapshot_store.list_ids() == [7]
    rollback_to(t, 2)  # by id: the tag on snapshot 2 holds it
    assert t.snapshot_store.list_ids() == [2]
    assert open(os.path.join(t.root, "snapshot", "EARLIEST")).read() == "2"
    assert rows(t, t.latest_snapshot()) == want
    assert [x.name for x in T.list_tags(t)] == ["old"]
    assert not missing_files(t) and not unreferenced_files(t)
    assert t.write(events("z", [1])).id == 3


def test_rollback_to_latest_is_a_no_op(catalog):
    t = history(catalog, 2)
    before = tree(t.root)
    rollback_to(t, 3)
    assert tree(t.root) == before


@pytest.mark.parametrize("target, error", [(1, SnapshotNotFound), (99, SnapshotNotFound),
                                           ("nope", SnapshotNotFound), (2.5, InvalidArgument),
                                           (True, InvalidArgument)])
def test_bad_rollback_targets_change_nothing(catalog, target, error):
    t = history(catalog, 4)
    expire_snapshots(t, retain_min=2, older_than_ms=FAR_FUTURE, max_deletes=2)  # snapshots 1, 2 expire
    before = tree(t.root)
    with pytest.raises(error):
        rollback_to(t, target)
    assert tree(t.root) == before
