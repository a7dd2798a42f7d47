"""Row tracking under racing writer processes and kill -9: appenders in separate processes
(one of them killed mid-run, repeatedly) never share a row id, every acknowledged commit's rows
are there, and `nextRowId` counts exactly the rows that landed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tarn

pytestmark = pytest.mark.stress

WRITER = r"""
import sys, pyarrow as pa, tarn
root, worker, commits, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
table = tarn.load_table(root)
for k in range(commits):
    ids = [worker * 100000 + k * 10 + j for j in range(3)]
    table.write(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"w{worker}"] * 3}))
    with open(log, "a") as f:
        f.write(" ".join(map(str, ids)) + "\n")
"""


def start(root: Path, worker: int, commits: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(worker), str(commits), str(log)], env=env)


def test_racing_and_killed_appenders_keep_row_ids_unique(tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", __import__("pyarrow").schema([("id", "int64"), ("name", "string")]),
        options={"row-tracking.enabled": "true", "data-evolution.enabled": "true", "commit.max-retries": "200"})
    logs = [tmp_path / f"w{w}.log" for w in range(4)]
    racers = [start(Path(table.root), w, 8, logs[w]) for w in range(3)]
    for attempt in range(3):  # writer 3 is killed -9 at a different moment each time
        victim = start(Path(table.root), 3, 50, logs[3])
        time.sleep(1.5 + attempt)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
    for p in racers:
        assert p.wait(timeout=300) == 0
    table = tarn.load_table(table.root)
    rows = table.scan(columns=["id", "_ROW_ID"]).to_arrow()
    row_ids = rows.column("_ROW_ID").to_pylist()
    assert len(set(row_ids)) == len(row_ids)
    assert sorted(row_ids) == list(range(len(row_ids)))  # dense: a landed commit's ids, nothing else
    assert table.latest_snapshot().next_row_id == len(row_ids)
    present = set(rows.column("id").to_pylist())
    for log in logs:
        acknowledged = {int(x) for line in log.read_text().split("\n") if line for x in line.split()} \
            if log.exists() else set()
        assert acknowledged <= present
    assert {i for i in present if i < 300000} == {w * 100000 + k * 10 + j for w in range(3) for k in range(8)
                                                  for j in range(3)}
