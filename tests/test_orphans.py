"""Orphan files: unreferenced files older than the bound go (or are listed in a dry run);
referenced files, young files and table metadata stay."""

import datetime as dt
import os
import time

import pytest

from tarn.errors import InvalidArgument
from tarn.ops import tags as T
from tarn.ops.expire import expire_snapshots
from tarn.ops.orphans import remove_orphan_files
from tarn.ops.time_travel import snapshot_by_tag
from tests.maintenance_checks import events, make_events, missing_files, rows, tree, unreferenced_files

FUTURE = int(time.time() * 1000) + 10**9


def age(path, seconds):
    past = time.time() - seconds
    os.utime(path, (past, past))


def plant(t):
    """Leftovers of failed writes: a data file, a manifest, a temp snapshot file."""
    planted = [os.path.join(t.root, "p=a", "bucket-0", "data-dead-0.parquet"),
               os.path.join(t.root, "manifest", "manifest-dead-0"),
               os.path.join(t.root, "snapshot", ".snapshot-9.abc.tmp"),
               os.path.join(t.root, "p=zz", "bucket-0", "data-dead-1.parquet")]
    for path in planted:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"junk")
    return planted


def test_old_orphans_go_young_ones_stay(catalog):
    t = make_events(catalog)
    t.write(events("a", [1, 2]))
    t.write(events("b", [3]))
    want = rows(t, t.latest_snapshot())
    planted = plant(t)
    assert remove_orphan_files(t) == []  # default bound: one day
    for path in planted[:3]:
        age(path, 2 * 86400)
    before = tree(t.root)
    listed = remove_orphan_files(t, dry_run=True)
    assert listed == sorted(planted[:3])
    assert tree(t.root) == before
    assert remove_orphan_files(t) == sorted(planted[:3])
    assert all(not os.path.exists(p) for p in planted[:3]) and os.path.exists(planted[3])
    assert rows(t, t.latest_snapshot()) == want
    assert remove_orphan_files(t, older_than=FUTURE) == [planted[3]]
    assert not os.path.exists(os.path.join(t.root, "p=zz"))  # its emptied directories went too
    assert not unreferenced_files(t) and not missing_files(t)


def test_tagged_files_are_not_orphans(catalog):
    t = make_events(catalog)
    for i in range(4):
        t.overwrite(events("a", [i]), partition={"p": "a"})
    T.create_tag(t, "keep", 2)
    want = rows(t, t.snapshot(2))
    expire_snapshots(t, retain_min=1, older_than_ms=FUTURE, max_deletes=10)
    assert remove_orphan_files(t, older_than=FUTURE) == []
    assert rows(t, snapshot_by_tag(t, "keep")) == want
    # files left behind by an interrupted expiration (snapshot files gone, data still there)
    t.overwrite(events("a", [9]), partition={"p": "a"})
    t.overwrite(events("a", [10]), partition={"p": "a"})
    old = t.snapshot_store.earliest_id()
    os.remove(os.path.join(t.root, "snapshot", f"snapshot-{old}"))
    orphans = remove_orphan_files(t, older_than=FUTURE)
    assert orphans and all("schema" not in p and "/tag/" not in p for p in orphans)
    assert not unreferenced_files(t) and not missing_files(t)
    assert rows(t, snapshot_by_tag(t, "keep")) == want


def test_bound_as_datetime_and_bad_bound(catalog):
    t = make_events(catalog)
    t.write(events("a", [1]))
    planted = plant(t)
    soon = dt.datetime.now() + dt.timedelta(minutes=1)
    assert remove_orphan_files(t, older_than=soon, dry_run=True) == sorted(planted)
    before = tree(t.root)
    with pytest.raises(InvalidArgument):
        remove_orphan_files(t, older_than="yesterday")
    assert tree(t.root) == before
