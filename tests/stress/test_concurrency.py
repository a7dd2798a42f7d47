"""N writer processes x K commits on one table (issue 9, item 11): every acknowledged write
is in the latest snapshot exactly once, no failed write is visible, every snapshot and tag
reads, snapshot ids are continuous. TARN_STRESS=long runs the bigger versions."""

import pytest

from tests.stress import workload
from tests.stress.conftest import LONG
from tests.stress.workload import Scenario

pytestmark = pytest.mark.stress

SHORT = [
    Scenario("append", writers=4, commits=8),
    Scenario("append", writers=8, commits=6, expiry=True),
    Scenario("pk", writers=4, commits=8, compactor=True),
    Scenario("pk", writers=4, commits=8, compactor=True, expiry=True),
    Scenario("pk-partitioned", writers=4, commits=8, compactor=True, expiry=True),
]
LONG_RUNS = [
    Scenario("append", writers=4, commits=50),
    Scenario("append", writers=8, commits=50, expiry=True),
    Scenario("pk", writers=4, commits=40),
    Scenario("pk", writers=8, commits=30, compactor=True),
    Scenario("pk", writers=8, commits=30, compactor=True, expiry=True),
    Scenario("pk-partitioned", writers=4, commits=40, compactor=True),
    Scenario("pk-partitioned", writers=8, commits=30, compactor=True, expiry=True),
]


def check(outcome: workload.Outcome) -> None:
    print(outcome.summary())
    assert not outcome.problems, outcome.summary() + "\n" + "\n".join(outcome.problems[:40])
    assert outcome.figures["acked"] > 0, outcome.summary()


@pytest.mark.parametrize("scenario", LONG_RUNS if LONG else SHORT, ids=lambda s: s.name)
def test_concurrent_writers(local_warehouse, tmp_path, scenario):
    check(workload.run(local_warehouse, scenario, str(tmp_path / "work")))
