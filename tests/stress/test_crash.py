"""SIGKILL at random points of write / commit / compact / expire_snapshots / create_tag /
rollback_to (issue 9, item 12). After each kill the table opens, what was readable reads the
same, no metadata file is empty or torn, orphan removal leaves only referenced files, and the
next write works. 2 trials per operation by default (a hook kill and a timed kill), 50 with
TARN_STRESS=long; KILL_POINTS replay kill points that broke tables before."""

import zlib

import pytest

from tests.stress import checks, crash
from tests.stress.conftest import LONG

pytestmark = pytest.mark.stress

TRIALS = 50 if LONG else 2  # one hook-placed kill, one timed kill


@pytest.mark.parametrize("op", crash.OPS)
def test_kill_during(local_warehouse, tmp_path, op):
    trials = crash.run_op(local_warehouse, op, TRIALS, str(tmp_path / "work"), seed=zlib.crc32(op.encode()))
    print(crash.summary(op, trials))
    broken = [t for t in trials if t.problems]
    report = "\n".join(f"trial {t.number} ({t.mode}, killed {t.killed_at}): {p}"
                       for t in broken for p in t.problems[:8])
    assert not broken, crash.summary(op, trials) + "\n" + report
    assert len(trials) == TRIALS
    assert all(t.torn_writes for t in trials), "the mid-write kill points were not installed"


# Kill points that broke tables before the issue-9 fixes: the file being written or deleted
# when the process died (see crash.py for how points are described).
KILL_POINTS = [
    ("create_tag", "mid-write tag/"),                    # torn / 0-byte tag file
    ("create_tag", "before rename tag/|before link tag/"),  # temp file left in tag/
    ("write", "mid-write snapshot/.LATEST"),             # torn LATEST hint (non-atomic before)
    ("write", "before link snapshot/snapshot-"),         # snapshot file not yet published
    ("commit", "mid-write manifest/"),                   # half a manifest written
    ("compact", "after write_if_absent snapshot/"),      # COMPACT landed, hint not yet moved
    ("expire_snapshots", "before delete snapshot/snapshot-"),  # data gone, snapshot file left
    ("expire_snapshots", "after write_bytes snapshot/EARLIEST"),
    ("expire_snapshots", "mid-write consumer/"),         # temp file left in consumer/
    ("rollback_to", "before delete snapshot/snapshot-"),
    ("rollback_to", "after delete tag/"),
    ("rollback_to", "after delete snapshot/snapshot-"),  # tag left on a snapshot id to be reused
]


@pytest.mark.parametrize("op,label", KILL_POINTS, ids=[f"{op}-{label}" for op, label in KILL_POINTS])
def test_kill_at(local_warehouse, tmp_path, op, label):
    trial = crash.CrashRun(local_warehouse, op, str(tmp_path / "work")).run_at(label)
    assert trial.killed_at and any(part in trial.killed_at for part in label.split("|")), (
        f"killed at {trial.killed_at!r}: {trial.problems}")
    assert not trial.problems, f"{op} killed at '{trial.killed_at}':\n" + "\n".join(trial.problems)


def test_tag_left_by_interrupted_rollback_keeps_its_files(local_warehouse, tmp_path):
    """A rollback killed after deleting snapshot N+1 but before the tags on it leaves tag x
    on the old N+1; the next commit makes a new N+1 and a new tag lands on it. Orphan removal
    must not then delete the files tag x still reads (tags told apart by id alone)."""
    run = crash.CrashRun(local_warehouse, "rollback_to", str(tmp_path / "work"))
    run.run_at("after delete snapshot/snapshot-")  # the trial's next write reuses the id
    table = local_warehouse.catalog().load_table(run.ident)
    table.create_tag("after")
    checks.remove_orphans_now(table)
    back = checks.read_everything(table)
    assert not back.errors, "\n".join(back.unreadable())
