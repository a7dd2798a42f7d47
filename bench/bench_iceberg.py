"""Iceberg metadata benchmark (issue 41): a small commit on a table with
``metadata.iceberg.storage = table-location`` against the same commit without it, after 1, 100 and
1000 earlier commits; prints the medians and their ratio (target: at most 1.3x, not growing with
the table's history).

    .venv/bin/python bench/bench_iceberg.py [--history 1,100,1000] [--commits 15] [--rows 100]

Both tables are partitioned append tables built by the same small writes (``--rows`` rows each,
spread over 4 partitions); the timed commits are ``--commits`` more such writes, alternating
between the two tables so machine noise hits both alike. Each history is built once per size
and extended for the next one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("amount", pa.float64())])


def batch(start: int, rows: int) -> pa.Table:
    ids = pa.array(range(start, start + rows), pa.int64())
    return pa.table({"dt": [f"2026-11-{27 + i % 4}" for i in range(rows)], "id": ids,
                     "amount": pa.array([i / 4 for i in range(start, start + rows)], pa.float64())})


def timed_write(table, rows: pa.Table) -> float:
    started = time.perf_counter()
    table.write(rows)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", default="1,100,1000")
    parser.add_argument("--commits", type=int, default=15)
    parser.add_argument("--rows", type=int, default=100)
    args = parser.parse_args()
    catalog = tarn.Catalog(tempfile.mkdtemp(prefix="bench-iceberg-"))
    plain = catalog.create_table("db.plain", schema=SCHEMA, partition_keys=["dt"])
    mirrored = catalog.create_table("db.mirrored", schema=SCHEMA, partition_keys=["dt"],
                                    options={"metadata.iceberg.storage": "table-location"})
    written = 0
    print(f"{'history':>8} {'plain ms':>9} {'iceberg ms':>11} {'ratio':>6}")
    for history in sorted(int(h) for h in args.history.split(",")):
        while written < history:
            rows = batch(written * args.rows, args.rows)
            plain.write(rows)
            mirrored.write(rows)
            written += 1
        plain_times, mirrored_times = [], []
        for _ in range(args.commits):
            rows = batch(written * args.rows, args.rows)
            plain_times.append(timed_write(plain, rows))
            mirrored_times.append(timed_write(mirrored, rows))
            written += 1
        plain_ms = statistics.median(plain_times) * 1000
        mirrored_ms = statistics.median(mirrored_times) * 1000
        print(f"{history:>8} {plain_ms:>9.1f} {mirrored_ms:>11.1f} {mirrored_ms / plain_ms:>5.2f}x", flush=True)


if __name__ == "__main__":
    main()
