"""Postpone-bucket benchmark: a write of 2M rows into a `bucket = -2` table and its postpone
compaction, against raw pyarrow parquet doing the same bytes.

    .venv/bin/python bench/bench_postpone.py [--rows 2000000] [--repeat 3]

Printed (medians of `--repeat` runs), in one run:
- a postpone write (rows land unsorted in `bucket-postpone/`, nothing looked up) against
  `pyarrow.parquet.write_table` of the same rows (zstd, as tarn writes). Target: <= 1.3x.
- the postpone compaction of that write (read the postponed files, hash rows into 4 buckets,
  sort and merge by key, write the bucket files, commit) against a raw read of the postponed
  files plus a raw write of the rows. Target: <= 2.5x.
- for scale: a write of the same rows into a fixed `bucket = 4` table (sorted and merged at
  write time).

Spark: a postpone table needs no bucket shuffle (`tarn.spark.write` leaves the DataFrame's
partitioning alone), so a Spark write of it costs what an append-table write does
(bench/bench_spark.py measures that against raw parquet) instead of a primary-key write's
shuffle and sort.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
from bench.bench_core import timed  # noqa: E402


def make_rows(n: int) -> pa.Table:
    rng = np.random.default_rng(5)
    return pa.table({
        "id": pa.array(rng.permutation(n).astype(np.int64)),
        "customer": pa.array(rng.integers(0, 100_000, n).astype(np.int64)),
        "amount": pa.array(rng.random(n) * 1000),
        "status": pa.array(np.char.add("s", rng.integers(0, 8, n).astype(str))),
        "note": pa.array(np.char.add("note-", rng.integers(0, 1_000_000, n).astype(str))),
    })


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = make_rows(args.rows)
    with tempfile.TemporaryDirectory() as workdir:
        catalog = tarn.Catalog(os.path.join(workdir, "wh"))
        fresh = iter(range(1000))

        def new_table(bucket: str) -> tarn.Table:
            return catalog.create_table(f"b.t{next(fresh)}", schema=rows.schema, primary_key=["id"],
                                        options={"bucket": bucket, "postpone.default-bucket-num": "4"})

        raw_path = os.path.join(workdir, "raw.parquet")
        raw_write, _ = timed(lambda: pq.write_table(rows, raw_path, compression="zstd"), args.repeat)
        postpone_write, _ = timed(lambda: new_table("-2").write(rows), args.repeat)
        fixed_write, _ = timed(lambda: new_table("4").write(rows), args.repeat)

        tables = [new_table("-2") for _ in range(args.repeat)]
        for table in tables:
            table.write(rows)
        postponed = sorted(glob.glob(os.path.join(tables[0].root, "bucket-postpone", "*")))
        raw_cycle, _ = timed(lambda: pq.write_table(pa.concat_tables([pq.read_table(p) for p in postponed]),
                                                    raw_path, compression="zstd"), args.repeat)
        pending = iter(tables)
        compaction, _ = timed(lambda: next(pending).compact(), args.repeat)
        assert tables[0].scan().count() == args.rows
        print(f"rows {args.rows:,} x {rows.num_columns} columns, {os.cpu_count()} cpu(s)")
        print(f"postpone write: tarn {postpone_write:.3f}s, raw pyarrow write {raw_write:.3f}s, ratio "
              f"{postpone_write / raw_write:.2f}x (target <= 1.3x); fixed bucket=4 write {fixed_write:.3f}s "
              f"({fixed_write / raw_write:.2f}x)")
        print(f"postpone compaction into 4 buckets: tarn {compaction:.3f}s, raw read + write {raw_cycle:.3f}s, "
              f"ratio {compaction / raw_cycle:.2f}x (target <= 2.5x)")


if __name__ == "__main__":
    main()
