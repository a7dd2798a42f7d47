"""Postpone-bucket tables under racing processes and kill -9: postpone writers (one killed
mid-run, repeatedly) race a compactor process that compacts in a loop (one compactor killed
mid-compaction too). Every acknowledged row is there after a final compaction, with the value
of the writer's last acknowledged write of its key, and the table reads the same in every
engine-visible way (no postponed file left in the latest snapshot)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import tarn

pytestmark = pytest.mark.stress

WRITER = r"""
import sys, pyarrow as pa, tarn
root, worker, commits, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
table = tarn.load_table(root)
for k in range(commits):
    ids = [worker * 1000 + (k * 7 + j) % 40 for j in range(5)]  # keys rewritten over and over
    table.write(pa.table({"dt": [f"p{j % 3}" for j in range(5)], "id": pa.array(ids, pa.int64()),
                          "v": pa.array([k] * 5, pa.int64())}))
    with open(log, "a") as f:
        f.write(" ".join(f"{j % 3}:{i}:{k}" for j, i in enumerate(ids)) + "\n")
"""

COMPACTOR = r"""
import sys, time, tarn
root, seconds, least = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
end = time.time() + seconds
def placed():  # COMPACT snapshots so far (a busy machine may need longer for `least` of them)
    return sum(s.commit_kind == "COMPACT" for s in tarn.load_table(root).snapshots())
while time.time() < end or placed() < least:
    try:
        tarn.load_table(root).compact()
    except tarn.CommitConflict:
        pass
"""


def start(script: str, *args) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], env=env)


def test_racing_postpone_writers_and_compactors_lose_nothing(tmp_path):
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    table = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", schema, primary_key=["dt", "id"], partition_keys=["dt"],
        options={"bucket": "-2", "postpone.default-bucket-num": "2", "commit.max-retries": "200"})
    logs = [tmp_path / f"w{w}.log" for w in range(4)]
    writers = [start(WRITER, table.root, w, 25, logs[w]) for w in range(2)]
    compactor = start(COMPACTOR, table.root, 12, 2)
    for attempt in range(2):  # a writer and a compactor killed -9 at different moments
        victim = start(WRITER, table.root, 2 + attempt, 200, logs[2 + attempt])
        doomed = start(COMPACTOR, table.root, 30, 0)
        time.sleep(1.5 + attempt)
        victim.send_signal(signal.SIGKILL)
        doomed.send_signal(signal.SIGKILL)
        victim.wait()
        doomed.wait()
    for p in writers:
        assert p.wait(timeout=300) == 0
    assert compactor.wait(timeout=300) == 0
    table = tarn.load_table(table.root)
    compactions = sum(s.commit_kind == "COMPACT" for s in table.snapshots())
    table.compact()
    assert compactions >= 2  # the compactors placed rows while the writers ran
    assert all(e.bucket >= 0 for e in table.live_entries(table.latest_snapshot()))
    got = {(r["dt"], r["id"]): r["v"] for r in table.scan().to_arrow().to_pylist()}
    for log in logs:
        if not log.exists():
            continue
        newest: dict[tuple, int] = {}
        for line in log.read_text().split("\n"):
            for item in line.split():
                part, key, commit = item.split(":")
                newest[(f"p{part}", int(key))] = int(commit)
        for key, commit in newest.items():
            # the killed writer's last write may have landed unacknowledged: never older than acknowledged
            assert key in got and got[key] >= commit, (key, got.get(key), commit)
    for w in range(2):  # writers that finished: exactly their last write of each key
        expected: dict[tuple, int] = {}
        for k in range(25):
            for j in range(5):
                expected[(f"p{j % 3}", w * 1000 + (k * 7 + j) % 40)] = k
        assert {key: got[key] for key in expected} == expected
