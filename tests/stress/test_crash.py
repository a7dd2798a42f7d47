"""SIGKILL at random points of write / commit / compact / expire_snapshots / create_tag /
rollback_to (issue 9, item 12). After each kill the table opens, what was readable reads the
same, no metadata file is empty or torn, orphan removal leaves only referenced files, and the
next write works. 2-3 trials per operation by default, 50 with TARN_STRESS=long."""

import pytest

from tests.stress import crash
from tests.stress.conftest import LONG

pytestmark = pytest.mark.stress

TRIALS = 50 if LONG else 3


@pytest.mark.parametrize("op", crash.OPS)
def test_kill_during(local_warehouse, tmp_path, op):
    trials = crash.run_op(local_warehouse, op, TRIALS, str(tmp_path / "work"), seed=hash(op) % 1000)
    print(crash.summary(op, trials))
    broken = [t for t in trials if t.problems]
    report = "\n".join(f"trial {t.number} ({t.mode}, killed {t.killed_at}): {p}"
                       for t in broken for p in t.problems[:8])
    assert not broken, crash.summary(op, trials) + "\n" + report
    assert len(trials) == TRIALS
