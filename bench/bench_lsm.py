"""LSM benchmark: merge-read of overlapping level-0 runs, full compaction, bounded-memory writes.

    .venv/bin/python bench/bench_lsm.py [--rows-per-run 400000] [--big-rows 20000000] [--repeat 3]

Targets (issue 31; medians of `--repeat` runs, each ratio against the same work done raw):
- merge-read of a bucket with 5 overlapping level-0 runs <= 1.0x the raw parquet read of the same
  input (all rows of the 5 runs, read raw from one parquet file);
- full compaction of those 5 runs <= 2.0x (raw read + raw write of the same input);
- writing 20M rows to one bucket with write-buffer-size = 256 mb keeps peak RSS <= 1.0 GB.
The partial-update merge-read is printed for reference (it merges column by column).
"""

from __future__ import annotations

import argparse
import os
import resource
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
sys.path.insert(0, str(REPO / "bench"))

import tarn  # noqa: E402
from bench_core import make_rows  # noqa: E402


def timed(fn, repeat=3):
    """Median seconds of `repeat` calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def overlapping_runs(n: int, runs: int) -> list[pa.Table]:
    """`runs` batches over the same key space (each a permutation of 0..n-1) with new values."""
    base = make_rows(n)
    rng = np.random.default_rng(3)
    out = []
    for i in range(runs):
        out.append(base.set_column(1, "v", pa.array(rng.integers(0, 1 << 40, n))))
    return out


def bench_merge_read(workdir: str, n: int, engine: str) -> tuple[float, float]:
    runs = overlapping_runs(n, 5)
    raw_path = os.path.join(workdir, f"raw-{engine}.parquet")
    pq.write_table(pa.concat_tables(runs), raw_path)
    raw = timed(lambda: pq.read_table(raw_path))
    options = {"bucket": "1", "write-only": "true", "merge-engine": engine}
    table = tarn.Catalog(os.path.join(workdir, "wh")).create_table(
        f"b.read_{engine.replace('-', '_')}", schema=runs[0].schema, primary_key=["k"], options=options)
    for run in runs:
        table.write(run)
    assert len(table.latest_snapshot().id.__str__()) and all(
        e.file.level == 0 for e in table.planner(table.schema()).live_entries(table.latest_snapshot()))
    merged = timed(lambda: table.scan().to_arrow())
    assert table.scan().to_arrow().num_rows == n
    return raw, merged


def bench_full_compaction(workdir: str, n: int, repeat: int) -> tuple[float, float, float]:
    runs = overlapping_runs(n, 5)
    rows = pa.concat_tables(runs)
    raw_path = os.path.join(workdir, "raw-compact.parquet")
    raw_write = timed(lambda: pq.write_table(rows, raw_path, compression="zstd"), repeat)
    raw_read = timed(lambda: pq.read_table(raw_path), repeat)
    times = []
    for attempt in range(repeat):
        table = tarn.Catalog(os.path.join(workdir, "wh")).create_table(
            f"b.compact{attempt}", schema=rows.schema, primary_key=["k"],
            options={"bucket": "1", "write-only": "true"})
        for run in runs:
            table.write(run)
        times.append(timed(lambda: table.compact(full=True), 1))
        assert table.scan().to_arrow().num_rows == n
    return raw_read, raw_write, statistics.median(times)


BIG_WRITE = r'''
import os, resource, sys, time
sys.path.insert(0, sys.argv[3])
import numpy as np, pyarrow as pa
import tarn
total, workdir = int(sys.argv[1]), sys.argv[2]
schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
table = tarn.Catalog(workdir).create_table("b.big", schema=schema, primary_key=["k"],
                                           options={"bucket": "1", "write-buffer-size": "256 mb"})
def batches(batch=1_000_000):
    rng = np.random.default_rng(5)
    for start in range(0, total, batch):
        n = min(batch, total - start)
        chars = rng.integers(97, 123, size=(n, 20), dtype=np.uint8)  # a-z, no int64 temporary
        s = pa.StringArray.from_buffers(n, pa.py_buffer(np.arange(0, 20 * (n + 1), 20, dtype=np.int32)),
                                        pa.py_buffer(chars.tobytes()))
        yield pa.record_batch([pa.array(rng.integers(0, total, n)), pa.array(np.arange(start, start + n)), s],
                              schema=schema)
t0 = time.perf_counter()
table.write(batches())
elapsed = time.perf_counter() - t0
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
files = len(table.planner(table.schema()).live_entries(table.latest_snapshot()))
print(f"{elapsed:.1f} {peak_mb:.0f} {files}")
'''


def bench_big_write(workdir: str, rows: int) -> tuple[float, float, int]:
    out = subprocess.run([sys.executable, "-c", BIG_WRITE, str(rows), tempfile.mkdtemp(dir=workdir), str(REPO)],
                         capture_output=True, text=True, check=True)
    elapsed, peak, files = out.stdout.split()
    return float(elapsed), float(peak), int(files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows-per-run", type=int, default=400_000)
    parser.add_argument("--big-rows", type=int, default=20_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="tarn-bench-lsm-")
    try:
        print(f"merge-read, 5 overlapping level-0 runs x {args.rows_per_run:,} rows (one bucket), "
              f"medians of {args.repeat}")
        for engine in ("deduplicate", "partial-update"):
            raw, merged = bench_merge_read(workdir, args.rows_per_run, engine)
            target = "(target <= 1.0x)" if engine == "deduplicate" else "(for reference)"
            print(f"  {engine:15} raw read of the 5 runs {raw:.3f}s  tarn merge-read {merged:.3f}s"
                  f"  -> {merged / raw:.2f}x {target}")
        raw_read, raw_write, compact = bench_full_compaction(workdir, args.rows_per_run, args.repeat)
        print(f"full compaction, 5 runs x {args.rows_per_run:,} rows: {compact:.3f}s; raw read {raw_read:.3f}s"
              f" + raw write {raw_write:.3f}s -> {compact / (raw_read + raw_write):.2f}x (target <= 2.0x)")
        if args.big_rows:
            results = [bench_big_write(workdir, args.big_rows) for _ in range(args.repeat)]
            elapsed = statistics.median(r[0] for r in results)
            peak = statistics.median(r[1] for r in results)
            print(f"write {args.big_rows:,} rows to one bucket (write-buffer-size 256 mb): {elapsed:.1f}s, "
                  f"peak RSS {peak:.0f} MB (target <= 1024 MB), {results[0][2]} live files")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
