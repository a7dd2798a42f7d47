"""Dynamic-bucket benchmark: writes into a `bucket` = -1 primary-key table vs raw pyarrow.

    .venv/bin/python bench/bench_dynamic_bucket.py [--rows 2000000] [--repeat 5]

Rows as in bench_core.py (int64 key, int64 value, 20-character string). Each timing is the
median of `--repeat` runs, every run on its own table prepared untimed:

- first write: all keys new (every key assigned, HASH files written from scratch);
- upsert: the same keys again in another order with new values, into a table holding them
  (the index loaded, every key found in it, no HASH file rewritten);
- mixed: half the keys known, half new (known keys looked up, new ones assigned, HASH files
  rewritten).

Target (issue 12): the upsert <= 2.5x the raw pyarrow write of the same rows (zstd).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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

TARGET = 2.5


def median_time(prepare, run, repeat: int) -> float:
    """Median wall time of `run(prepare())` over `repeat` runs (prepare untimed)."""
    times = []
    for _ in range(repeat):
        state = prepare()
        t0 = time.perf_counter()
        run(state)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = make_rows(args.rows)
    n = rows.num_rows
    rng = np.random.default_rng(11)
    upsert = rows.take(rng.permutation(n)).set_column(1, "v", pa.array(rng.integers(0, 1 << 40, n)))
    half = n // 2
    mixed = pa.concat_tables([upsert.slice(0, half),
                              rows.slice(0, n - half).set_column(0, "k", pa.array(np.arange(n, 2 * n - half)))])
    workdir = tempfile.mkdtemp(prefix="tarn-bench-dyn-")
    try:
        raw_path = os.path.join(workdir, "raw.parquet")
        raw = median_time(lambda: None, lambda _: pq.write_table(rows, raw_path, compression="zstd"), args.repeat)
        catalog = tarn.Catalog(os.path.join(workdir, "tarn"))
        names = iter(range(10_000))

        def fresh():
            return catalog.create_table(f"b.t{next(names)}", schema=rows.schema, primary_key=["k"])

        def loaded():
            table = fresh()
            table.write(rows)
            return table

        first = median_time(fresh, lambda t: t.write(rows), args.repeat)
        up = median_time(loaded, lambda t: t.write(upsert), args.repeat)
        mix = median_time(loaded, lambda t: t.write(mixed), args.repeat)
        check = loaded()
        check.write(mixed)
        assert check.scan().count() == 2 * n - half
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"rows: {n:,} (int64 key, int64 value, 20-char string); median of {args.repeat}\n")
    print(f"{'operation':46} {'seconds':>8} {'x raw':>7}")
    for label, t in (("raw pyarrow parquet write (zstd)", raw),
                     ("dynamic bucket: first write (all keys new)", first),
                     ("dynamic bucket: upsert (all keys known)", up),
                     ("dynamic bucket: mixed (half known, half new)", mix)):
        print(f"{label:46} {t:8.3f} {t / raw:7.2f}")
    print(f"\ntarget: upsert <= {TARGET}x raw write -> {up / raw:.2f}x")


if __name__ == "__main__":
    main()
