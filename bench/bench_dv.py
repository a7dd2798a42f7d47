"""Deletion-vector benchmark: reads and writes of a primary-key table with deletion vectors,
against raw pyarrow parquet of the same rows and against the same table without vectors.

    .venv/bin/python bench/bench_dv.py [--rows 2000000] [--upserts 100000] [--no-pypaimon]

The table (bucket 1, so one 2M-row bucket) takes one commit of all rows, then 4 overlapping
commits of `--upserts` random existing keys. Printed, in one run (medians of 3):
- DV read vs raw pyarrow read of the same final rows (one zstd file): target <= 1.3x;
- tarn merge-read of the same commits without vectors, kept as 5 sorted runs (deduplicate reads
  them newest file first without sorting; partial-update merges every key) vs the DV read:
  target >= 2x faster;
- a commit of `--upserts` upserts into the 2M-row bucket with vectors (flush, lookup, vectors,
  APPEND + COMPACT) vs the same commit into the table without vectors: target <= 3x;
- pypaimon 2.1 reading the DV table, where it can.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
from bench.bench_core import make_rows  # noqa: E402

PYPAIMON_READ = r'''
import json, sys, time
from pypaimon import CatalogFactory
spec = json.loads(sys.stdin.read())
table = CatalogFactory.create({"warehouse": spec["warehouse"]}).get_table(spec["table"])
times = []
for _ in range(3):
    t0 = time.perf_counter()
    rb = table.new_read_builder()
    n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
    times.append(time.perf_counter() - t0)
print(json.dumps({"read": sorted(times)[1], "rows": n}))
'''


def timed(fn, repeat: int = 3):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def upserts(rows: pa.Table, count: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    chosen = rng.choice(rows.num_rows, size=count, replace=False)
    picked = rows.take(pa.array(chosen))
    return picked.set_column(1, "v", pa.array(rng.integers(0, 1 << 40, count)))


def build(catalog, name: str, rows: pa.Table, batches: list[pa.Table], dv: bool, **extra):
    options = {"bucket": "1", "deletion-vectors.enabled": str(dv).lower(), **extra}
    table = catalog.create_table(name, schema=rows.schema, primary_key=["k"], options=options)
    table.write(rows)
    times = []
    for batch in batches:
        t0 = time.perf_counter()
        table.write(batch)
        times.append(time.perf_counter() - t0)
    return table, times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--upserts", type=int, default=100_000)
    parser.add_argument("--no-pypaimon", action="store_true")
    args = parser.parse_args()
    rows = make_rows(args.rows)
    rows = rows.cast(pa.schema([pa.field("k", pa.int64(), nullable=False), *list(rows.schema)[1:]]))
    batches = [upserts(rows, args.upserts, seed) for seed in range(4)]
    workdir = tempfile.mkdtemp(prefix="tarn-bench-dv-")
    try:
        catalog = tarn.Catalog(os.path.join(workdir, "wh"))
        dv_table, dv_commits = build(catalog, "b.dv", rows, batches, dv=True)
        plain, plain_commits = build(catalog, "b.plain", rows, batches, dv=False)
        # the same 5 commits kept as 5 sorted runs, so that a read has to merge them
        runs, _ = build(catalog, "b.runs", rows, batches, dv=False, **{"num-sorted-run.compaction-trigger": "10"})
        partial, _ = build(catalog, "b.partial", rows, batches, dv=False,
                           **{"num-sorted-run.compaction-trigger": "10", "merge-engine": "partial-update"})
        final = dv_table.scan().to_arrow()
        raw_path = os.path.join(workdir, "raw.parquet")
        pq.write_table(final, raw_path, compression="zstd")
        raw_read, _ = timed(lambda: pq.read_table(raw_path))
        dv_read, got = timed(lambda: dv_table.scan().to_arrow())
        assert got.num_rows == args.rows
        merge_read, got = timed(lambda: runs.scan().to_arrow())
        assert got.num_rows == args.rows
        partial_read, got = timed(lambda: partial.scan().to_arrow())
        assert got.num_rows == args.rows
        files = [(m.level, m.row_count) for s in dv_table.scan().plan() for m in s.files]
        vectors = dv_table.system_table("files").to_arrow().column("deleted_row_count").to_pylist()
        theirs = None if args.no_pypaimon else pypaimon_read(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    dv_commit, plain_commit = statistics.median(dv_commits[1:]), statistics.median(plain_commits[1:])
    print(f"rows: {args.rows:,} in one bucket, then 4 commits of {args.upserts:,} upserts")
    print(f"DV table files (level, rows): {sorted(files)}; deleted rows per file: {vectors}\n")
    print(f"{'operation':52} {'s':>8} {'ratio':>8}")
    print(f"{'raw pyarrow read of the same rows (zstd)':52} {raw_read:8.3f}")
    print(f"{'DV read (tarn)':52} {dv_read:8.3f} {dv_read / raw_read:7.2f}x raw   (target <= 1.3x)")
    print(f"{'merge-read of the 5 runs without vectors (dedup)':52} {merge_read:8.3f} "
          f"{merge_read / dv_read:7.2f}x DV    (target >= 2x)")
    print(f"{'merge-read of the 5 runs without vectors (partial)':52} {partial_read:8.3f} "
          f"{partial_read / dv_read:7.2f}x DV")
    print(f"{'commit of upserts with vectors (median of 3)':52} {dv_commit:8.3f} "
          f"{dv_commit / plain_commit:7.2f}x plain (target <= 3x)")
    print(f"{'commit of upserts without vectors (median of 3)':52} {plain_commit:8.3f}")
    if theirs:
        print(f"{'pypaimon 2.1 read of the DV table':52} {theirs['read']:8.3f} {theirs['read'] / raw_read:7.2f}x raw"
              f"  ({theirs['rows']:,} rows)")


def pypaimon_read(workdir: str) -> dict | None:
    from tests.interop.pypaimon_env import peer_python

    spec = {"warehouse": os.path.join(workdir, "wh"), "table": "b.dv"}
    result = subprocess.run([str(peer_python()), "-c", PYPAIMON_READ], input=json.dumps(spec),
                            capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        print("pypaimon failed:", result.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
