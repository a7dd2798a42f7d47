"""A failed call means nothing landed, against an S3 that fails requests (tests/fault_proxy.py
in front of moto's server; the workload and the judgement are tests/stress/faults.py).

Writers append and upsert, a compactor compacts and an expirer expires, all through the proxy,
for a bounded time; then, with the proxy quiet, every call's outcome is checked against the
tables: acknowledged rows exactly once, nothing of a call that raised (unless it raised
OutcomeUnknown), every snapshot readable. `TARN_FAULT_SECONDS` sets the load time (default 30)."""

import os

import pytest

import tarn
from tests.fault_proxy import FaultProxy
from tests.stress import faults, workload

pytestmark = [pytest.mark.stress, pytest.mark.s3]

SECONDS = float(os.environ.get("TARN_FAULT_SECONDS", "30"))


@pytest.fixture
def proxy(s3_server):
    proxy = FaultProxy(s3_server.endpoint, seed=int(os.environ.get("TARN_FAULT_SEED", "11")),
                       refuse=0.03, fail=0.02, drop=0.02, delay=0.05, max_delay_s=0.3,
                       outage_rate=0.002, max_outage_s=2.5, conditional_scale=4.0).start()
    yield proxy
    proxy.stop()


def test_failed_calls_leave_nothing_behind(s3_server, proxy, tmp_path):
    uri = s3_server.new_prefix()
    options = {**s3_server.storage_options, "s3.endpoint": proxy.endpoint}
    faults.create_tables(tarn.Catalog(uri, options))  # the proxy is quiet until the load starts
    plan = faults.Plan(seconds=SECONDS)
    outcome = faults.run(uri, options, plan, str(tmp_path / "work"), workload.context(), proxy)
    print(outcome.summary())
    print(proxy.summary())
    print("maintenance errors kept (not raised) after landed commits:", outcome.figures["maintenance_errors"])
    for call in outcome.calls:
        for text in call.get("raw_maintenance", []):
            print(f"  {call['op']} {call['marker']}: a non-tarn error after the commit: {text}")
        if call["outcome"] != "ok":
            print(f"  {call['op']} {call['marker']} {call['outcome']} after {call['seconds']} s: {call['error'][:300]}")
    assert not outcome.problems, outcome.summary() + "\n" + "\n".join(outcome.problems[:40])
    acked = [c for c in outcome.calls if c["outcome"] == "ok" and c["op"] in ("append", "upsert")]
    assert len(acked) >= 10, outcome.summary()
    assert proxy.counts["refused"] and proxy.counts["failed"] and proxy.counts["dropped"], proxy.summary()
    # retries are bounded: no call waits out minutes of retries
    assert outcome.figures["slowest_s"] < 60, outcome.summary()
