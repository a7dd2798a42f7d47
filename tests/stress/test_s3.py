"""The short concurrency and crash cases against an object store (a local S3 server, moto's;
tests/s3server.py): conditional PUTs instead of hard links, single PUTs instead of renames."""

import pytest

from tests.stress import crash, workload
from tests.stress.workload import Scenario, Warehouse

pytestmark = [pytest.mark.stress, pytest.mark.s3]

SCENARIOS = [Scenario("pk", writers=4, commits=2, expiry=True, reader=False)]  # ~1 s per commit on moto


@pytest.fixture
def s3_warehouse(s3_server) -> Warehouse:
    return Warehouse(s3_server.new_prefix(), tuple(s3_server.env.items()),
                     tuple(s3_server.storage_options.items()))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_concurrent_writers_s3(s3_warehouse, tmp_path, scenario):
    outcome = workload.run(s3_warehouse, scenario, str(tmp_path / "work"))
    print(outcome.summary())
    assert not outcome.problems, outcome.summary() + "\n" + "\n".join(outcome.problems[:40])
    assert outcome.figures["acked"] > 0


@pytest.mark.parametrize("op", ["commit"])
def test_kill_during_s3(s3_warehouse, tmp_path, op):
    trials = crash.run_op(s3_warehouse, op, 1, str(tmp_path / "work"), seed=7)  # one hook kill: ~8 s on moto
    print(crash.summary(op, trials))
    report = "\n".join(f"trial {t.number} ({t.mode}, killed {t.killed_at}): {p}"
                       for t in trials for p in t.problems[:8])
    assert not report, crash.summary(op, trials) + "\n" + report
