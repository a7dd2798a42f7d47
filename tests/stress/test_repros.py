"""Deterministic repros of the issue-9 defects the random harness hunts for.

Each test forces one interleaving inside a single process (a second table handle commits at
a chosen storage call of the first) and checks the promise: a write either returns and its
rows are in the latest snapshot, or raises (CommitConflict) and none of its rows are
visible; every snapshot and tag stays readable; snapshot ids stay continuous.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
from tarn.fs import FileIO

from tests.stress import checks

pytestmark = pytest.mark.stress

KV = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
AGGRESSIVE_EXPIRY = {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "5",
                     "snapshot.time-retained": "1 ms"}


def kv(keys, value: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [value] * len(keys)}, schema=KV)


def attempt(action) -> BaseException | None:
    """None if `action()` returned, else the exception it raised."""
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - judged by the caller
        return exc
    return None


def latest_rows(table) -> dict:
    return {r["k"]: r["v"] for r in table.scan().to_arrow().to_pylist()}


def assert_sound(table) -> None:
    """Every snapshot and tag reads, ids are continuous, metadata parses."""
    back = checks.read_everything(table)
    problems = back.unreadable() + checks.continuity_problems(back) + checks.metadata_problems(table)
    assert not problems, "\n".join(problems)


def assert_all_or_nothing(table, outcome: BaseException | None, keys, value: str) -> None:
    rows = latest_rows(table)
    visible = [k for k in keys if rows.get(k) == value]
    if outcome is None:
        assert len(visible) == len(keys), f"write returned but only {len(visible)}/{len(keys)} rows are visible"
    else:
        assert not visible, (f"write raised {type(outcome).__name__}: {outcome} "
                             f"but {len(visible)}/{len(keys)} of its rows are visible")
        assert isinstance(outcome, tarn.CommitConflict), (
            f"a failed commit should raise CommitConflict, got {type(outcome).__name__}: {outcome}")


class Interference:
    """Runs `action` once, just before the first matching call of FileIO.`method` made while
    armed (its own storage calls pass through)."""

    def __init__(self, monkeypatch, method: str, path_part: str, action):
        self.fired = False
        self.armed = False
        original = getattr(FileIO, method)

        def hooked(io, path, *args, **kwargs):
            if self.armed and not self.fired and path_part in path:
                self.fired = True
                self.armed = False
                action()
            return original(io, path, *args, **kwargs)

        monkeypatch.setattr(FileIO, method, hooked)


def test_compaction_conflict_keeps_the_data_commit(catalog):
    """Defect 1: a PK write commits APPEND then COMPACT; when the COMPACT half conflicts,
    the abort must not delete files the APPEND snapshot references."""
    t = catalog.create_table("db.t", schema=KV, primary_key=["k"],
                             options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})
    t.write(kv([1], "a"))
    w = t.new_writer()
    w.write(kv([2], "b"))
    w.flush()
    t.compact(full=True)
    outcome = attempt(lambda: t.commit(w.prepare_commit()))
    assert_sound(t)
    assert latest_rows(t).get(1) == "a"
    assert_all_or_nothing(t, outcome, [2], "b")


def test_slow_writer_does_not_reuse_an_expired_snapshot_id(catalog, monkeypatch):
    """Defect 2: a writer about to create snapshot-(N+1) stalls; others commit N+1.. and
    expiry deletes N and N+1; the slow writer's snapshot-(N+1) must not be acknowledged
    while the table's latest snapshot lacks its rows."""
    t = catalog.create_table("db.t", schema=KV, options=AGGRESSIVE_EXPIRY)
    other = catalog.load_table("db.t")
    for i in range(3):
        t.write(kv([i], "base"))
    hook = Interference(monkeypatch, "write_if_absent", "/snapshot/snapshot-",
                        lambda: [other.write(kv([100 + i], "other")) for i in range(7)])
    hook.armed = True
    outcome = attempt(lambda: t.write(kv([50, 51], "slow")))
    assert hook.fired
    assert_sound(t)
    assert all(latest_rows(t).get(100 + i) == "other" for i in range(7))
    assert_all_or_nothing(t, outcome, [50, 51], "slow")


def test_expiry_deleting_the_base_mid_commit_is_a_retry(catalog, monkeypatch):
    """Defect 6: while a commit reads its base snapshot's manifest lists, other writers
    commit and expiry deletes that base; the commit must retry on the new latest snapshot
    (or fail with CommitConflict), not fail with a missing-file error."""
    t = catalog.create_table("db.t", schema=KV, options=AGGRESSIVE_EXPIRY)
    other = catalog.load_table("db.t")
    for i in range(3):
        t.write(kv([i], "base"))
    writer = t.new_writer()
    writer.write(kv([50, 51], "slow"))
    messages = writer.prepare_commit()
    hook = Interference(monkeypatch, "read_bytes", "/manifest/manifest-list-",
                        lambda: [other.write(kv([100 + i], "other")) for i in range(7)])
    hook.armed = True
    outcome = attempt(lambda: t.commit(messages))
    assert hook.fired
    assert_sound(t)
    assert_all_or_nothing(t, outcome, [50, 51], "slow")


def test_maintenance_failure_after_commit(catalog, monkeypatch):
    """Defect 3: post-commit maintenance (snapshot expiry) fails with an I/O error after the
    snapshot landed; write() must then not raise as if nothing had been written."""
    t = catalog.create_table("db.t", schema=KV, options=AGGRESSIVE_EXPIRY)
    for i in range(6):
        t.write(kv([i], "base"))

    def failing_delete(io, path, *args, **kwargs):
        raise OSError(f"injected: cannot delete {path}")

    monkeypatch.setattr(FileIO, "delete", failing_delete)
    outcome = attempt(lambda: t.write(kv([50, 51], "new")))
    monkeypatch.undo()
    assert_sound(t)
    rows = latest_rows(t)
    visible = [k for k in (50, 51) if rows.get(k) == "new"]
    assert (outcome is None) == (len(visible) == 2), (
        f"write {'returned' if outcome is None else f'raised {type(outcome).__name__}: {outcome}'} "
        f"and {len(visible)}/2 of its rows are visible")


def test_unreadable_tag_after_commit(catalog):
    """Defect 3, second trigger: a damaged tag file (another engine's crash) makes expiry
    fail after the commit landed; write() must not report failure for a landed commit."""
    t = catalog.create_table("db.t", schema=KV, options=AGGRESSIVE_EXPIRY)
    for i in range(6):
        t.write(kv([i], "base"))
    t.file_io.write_bytes(f"{t.root}/tag/tag-damaged", b'{"id" : ')
    outcome = attempt(lambda: t.write(kv([50, 51], "new")))
    rows = latest_rows(t)
    visible = [k for k in (50, 51) if rows.get(k) == "new"]
    assert (outcome is None) == (len(visible) == 2), (
        f"write {'returned' if outcome is None else f'raised {type(outcome).__name__}: {outcome}'} "
        f"and {len(visible)}/2 of its rows are visible")


def slow_write_while_others_commit(catalog, monkeypatch, t, method: str, path_part: str) -> None:
    """Three base writes; then a write during whose first matching storage call seven other
    commits land (and aggressive expiry runs): it must land whole or fail cleanly."""
    other = catalog.load_table("db.t")
    for i in range(3):
        t.write(kv([i], "base"))
    hook = Interference(monkeypatch, method, path_part,
                        lambda: [other.write(kv([100 + i], "other")) for i in range(7)])
    hook.armed = True
    outcome = attempt(lambda: t.write(kv([50, 51], "slow")))
    assert hook.fired
    assert_sound(t)
    assert_all_or_nothing(t, outcome, [50, 51], "slow")


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_expiry_during_a_writers_restore_is_not_an_error(catalog, monkeypatch, primary_key):
    """Defect 6, write side: a writer restores its buckets from the latest snapshot's
    manifests; other writers commit and expiry deletes that snapshot meanwhile. The write
    must restore from the new latest snapshot (or fail with CommitConflict), not raise
    FileMissing from the restore."""
    options = dict(AGGRESSIVE_EXPIRY, **({"bucket": "1"} if primary_key else {}))
    t = catalog.create_table("db.t", schema=KV, primary_key=["k"] if primary_key else None, options=options)
    slow_write_while_others_commit(catalog, monkeypatch, t, "read_bytes", "/manifest/manifest-list-")


def test_expiry_during_a_writers_compaction_is_not_an_error(catalog, monkeypatch):
    """Defect 6, compaction side: a primary-key writer's own compaction reads the files it
    restored; meanwhile other writers compact them away and expiry deletes them. The write
    must drop (or redo) that compaction, or fail with CommitConflict, not raise FileMissing
    for a data file."""
    t = catalog.create_table("db.t", schema=KV, primary_key=["k"],
                             options=dict(AGGRESSIVE_EXPIRY, **{"bucket": "1",
                                                                "num-sorted-run.compaction-trigger": "2"}))
    slow_write_while_others_commit(catalog, monkeypatch, t, "open_input_file", "/bucket-0/data-")


def test_tagging_a_snapshot_that_expiry_takes_meanwhile(catalog, monkeypatch):
    """create_tag(snapshot_id=earliest) reads the snapshot, then writes the tag file; if
    expiry removes that snapshot and its files in between, the tag must not be left behind
    unreadable: create_tag raises SnapshotNotFound (no tag), or the tag reads."""
    t = catalog.create_table("db.t", schema=KV, options=AGGRESSIVE_EXPIRY)
    other = catalog.load_table("db.t")
    for i in range(6):
        t.write(kv([i], "base"))
    earliest = t.snapshot_store.earliest_id()
    fired = []
    for method in ("write_if_absent", "write_bytes"):  # however the tag file is written
        original = getattr(FileIO, method)

        def hooked(io, path, *args, _original=original, **kwargs):
            if "/tag/" in path and not fired:
                fired.append(path)
                for i in range(7):
                    other.write(kv([100 + i], "other"))
            return _original(io, path, *args, **kwargs)

        monkeypatch.setattr(FileIO, method, hooked)
    outcome = attempt(lambda: t.create_tag("old", snapshot_id=earliest))
    monkeypatch.undo()
    assert fired
    tags = [tag.name for tag in t.list_tags()]
    if outcome is not None:
        assert isinstance(outcome, tarn.SnapshotNotFound), f"{type(outcome).__name__}: {outcome}"
        assert "old" not in tags
    assert_sound(t)
