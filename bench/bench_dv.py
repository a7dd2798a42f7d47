"""Deletion-vector benchmark: reads and writes of a primary-key table with deletion vectors,
against raw pyarrow parquet of the same rows and against the same table without vectors.

    .venv/bin/python bench/bench_dv.py [--rows 2000000] [--upserts 100000] [--runs 3] [--no-pypaimon]

The table (bucket 1, so one 2M-row bucket) takes one commit of all rows, then 4 overlapping
commits of `--upserts` random existing keys. Each run builds fresh tables and times what a ratio
compares back to back (raw and DV reads alternate, each upsert goes to the DV table and then to
the plain one), so that load from other processes hits both sides. Printed, per run and as
medians over runs:
- DV read vs raw pyarrow read of the same final rows (one zstd file): target <= 1.3x;
- tarn merge-read of the same commits without vectors, kept as 5 sorted runs (deduplicate reads
  them newest file first without sorting; partial-update merges every key) vs the DV read:
  target >= 2x faster;
- a commit of `--upserts` upserts into the 2M-row bucket with vectors (flush, lookup, vectors,
  APPEND + COMPACT) vs the same commit into the table without vectors (median of the per-commit
  ratios of commits 2-4, which include the plain table's own compactions): target <= 3x;
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


def build(catalog, name: str, rows: pa.Table, dv: bool, **extra):
    options = {"bucket": "1", "deletion-vectors.enabled": str(dv).lower(), **extra}
    table = catalog.create_table(name, schema=rows.schema, primary_key=["k"], options=options)
    table.write(rows)
    return table


def timed_write(table, batch: pa.Table) -> float:
    t0 = time.perf_counter()
    table.write(batch)
    return time.perf_counter() - t0


def run_once(rows: pa.Table, batches: list[pa.Table], workdir: str, tag: int, pypaimon: bool) -> dict:
    """One run on fresh tables: every timing that a ratio compares is taken back to back."""
    catalog = tarn.Catalog(os.path.join(workdir, f"wh{tag}"))
    dv_table, plain = build(catalog, "b.dv", rows, dv=True), build(catalog, "b.plain", rows, dv=False)
    # the same commits kept as 5 sorted runs, so that a read has to merge them
    runs = build(catalog, "b.runs", rows, dv=False, **{"num-sorted-run.compaction-trigger": "10"})
    partial = build(catalog, "b.partial", rows, dv=False,
                    **{"num-sorted-run.compaction-trigger": "10", "merge-engine": "partial-update"})
    write_ratios = []
    for batch in batches:
        dv_commit, plain_commit = timed_write(dv_table, batch), timed_write(plain, batch)
        write_ratios.append(dv_commit / plain_commit)
        runs.write(batch)
        partial.write(batch)
    final = dv_table.scan().to_arrow()
    assert final.num_rows == rows.num_rows
    raw_path = os.path.join(workdir, f"raw{tag}.parquet")
    pq.write_table(final, raw_path, compression="zstd")
    raw_read, dv_read, merge_read, partial_read = [], [], [], []
    for _ in range(3):
        raw_read.append(timed(lambda: pq.read_table(raw_path), 1)[0])
        dv_read.append(timed(lambda: dv_table.scan().to_arrow(), 1)[0])
        merge_read.append(timed(lambda: runs.scan().to_arrow(), 1)[0])
        partial_read.append(timed(lambda: partial.scan().to_arrow(), 1)[0])
    assert runs.scan().to_arrow().num_rows == partial.scan().to_arrow().num_rows == rows.num_rows
    median = statistics.median
    return {
        "raw": median(raw_read), "dv": median(dv_read), "merge": median(merge_read), "partial": median(partial_read),
        "dv_vs_raw": median([d / r for d, r in zip(dv_read, raw_read)]),
        "merge_vs_dv": median([m / d for m, d in zip(merge_read, dv_read)]),
        "partial_vs_dv": median([m / d for m, d in zip(partial_read, dv_read)]),
        # the first upsert commit compacts level 0 into the table's single file: later ones are typical
        "write_ratio": median(write_ratios[1:]), "write_ratios": write_ratios,
        "files": sorted((m.level, m.row_count) for s in dv_table.scan().plan() for m in s.files),
        "pypaimon": pypaimon_read(os.path.join(workdir, f"wh{tag}")) if pypaimon else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--upserts", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh tables per run; medians over runs")
    parser.add_argument("--no-pypaimon", action="store_true")
    args = parser.parse_args()
    rows = make_rows(args.rows)
    rows = rows.cast(pa.schema([pa.field("k", pa.int64(), nullable=False), *list(rows.schema)[1:]]))
    batches = [upserts(rows, args.upserts, seed) for seed in range(4)]
    print(f"rows: {args.rows:,} in one bucket, then 4 commits of {args.upserts:,} upserts; {args.runs} runs")
    results = []
    for run in range(args.runs):
        workdir = tempfile.mkdtemp(prefix="tarn-bench-dv-")
        try:
            result = run_once(rows, batches, workdir, run, pypaimon=not args.no_pypaimon and run == 0)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        results.append(result)
        print(f"run {run + 1}: DV read {result['dv_vs_raw']:.2f}x raw, merge-read {result['merge_vs_dv']:.2f}x DV, "
              f"DV commit {result['write_ratio']:.2f}x plain "
              f"(per commit: {', '.join(f'{r:.2f}' for r in result['write_ratios'])})", flush=True)
    report(results)


def report(results: list[dict]) -> None:
    def mid(key: str) -> float:
        return statistics.median(r[key] for r in results)

    print(f"DV table files (level, rows): {results[0]['files']}\n")
    print(f"{'operation (medians over runs)':52} {'s':>8} {'ratio':>8}")
    print(f"{'raw pyarrow read of the same rows (zstd)':52} {mid('raw'):8.3f}")
    print(f"{'DV read (tarn)':52} {mid('dv'):8.3f} {mid('dv_vs_raw'):7.2f}x raw   (target <= 1.3x)")
    print(f"{'merge-read of the 5 runs without vectors (dedup)':52} {mid('merge'):8.3f} "
          f"{mid('merge_vs_dv'):7.2f}x DV    (target >= 2x)")
    print(f"{'merge-read of the 5 runs without vectors (partial)':52} {mid('partial'):8.3f} "
          f"{mid('partial_vs_dv'):7.2f}x DV")
    print(f"{'commit of upserts with vectors vs without':52} {'':8} {mid('write_ratio'):7.2f}x plain (target <= 3x)")
    theirs = results[0]["pypaimon"]
    if theirs:
        print(f"{'pypaimon 2.1 read of the DV table':52} {theirs['read']:8.3f} "
              f"{theirs['read'] / results[0]['raw']:7.2f}x raw  ({theirs['rows']:,} rows)")


def pypaimon_read(warehouse: str) -> dict | None:
    from tests.interop.pypaimon_env import peer_python

    spec = {"warehouse": warehouse, "table": "b.dv"}
    result = subprocess.run([str(peer_python()), "-c", PYPAIMON_READ], input=json.dumps(spec),
                            capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        print("pypaimon failed:", result.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
