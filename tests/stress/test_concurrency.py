"""N writer processes x K commits on one table (issue 9, item 11): every acknowledged write
is in the latest snapshot exactly once, no failed write is visible, every snapshot and tag
reads, snapshot ids are continuous. TARN_STRESS=long runs the bigger versions."""

import pytest

from tests.stress import workload
from tests.stress.conftest import LONG

pytestmark = pytest.mark.stress
SCENARIOS = workload.LONG_SCENARIOS if LONG else workload.SHORT_SCENARIOS


def check(outcome: workload.Outcome) -> None:
    print(outcome.summary())
    assert not outcome.problems, outcome.summary() + "\n" + "\n".join(outcome.problems[:40])
    assert outcome.figures["acked"] > 0, outcome.summary()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_concurrent_writers(local_warehouse, tmp_path, scenario):
    check(workload.run(local_warehouse, scenario, str(tmp_path / "work")))


@pytest.mark.parametrize("scenario", workload.EXPIRY_RACE_SCENARIOS, ids=lambda s: s.name)
def test_writers_racing_expiry_that_keeps_one_snapshot(local_warehouse, tmp_path, scenario):
    """Issue 38: no acknowledged row lost or doubled, no snapshot id told to two calls, no
    call that raised landed, while every commit's expiry deletes all but the latest snapshot."""
    check(workload.run(local_warehouse, scenario, str(tmp_path / "work")))
