"""Data-evolution benchmark: updating one column of 10% of the rows of a 2M-row, 20-column
table, and reading the table back after 5 such updates.

    .venv/bin/python bench/bench_row_tracking.py [--rows 2000000] [--files 4] [--repeat 3]

Printed (medians of `--repeat` runs), in one run:
- `update_columns` of one column for 10% of the rows (random row ids) on a data-evolution
  table: one file of that column per row-id group, against the copy-on-write `update` of the
  same rows on the same table without data evolution, which rewrites whole rows (every file
  holding a match). Target: <= 0.2x.
- a full read of the data-evolution table after 5 such updates (each column stitched from
  the newest file holding it) against a raw `pyarrow.parquet` read of the same rows (the base
  files). Target: <= 1.5x.
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
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
from bench.bench_core import timed  # noqa: E402

COLUMNS = 20


def make_rows(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    columns = {"id": pa.array(np.arange(n, dtype=np.int64))}
    for i in range(1, COLUMNS):
        if i % 4 == 0:
            columns[f"c{i}"] = pa.array(np.char.add("v", rng.integers(0, 10_000, n).astype(str)))
        else:
            columns[f"c{i}"] = pa.array(rng.random(n))
    return pa.table(columns)


def table_of(warehouse: str, name: str, rows: pa.Table, files: int, options: dict) -> tarn.Table:
    table = tarn.Catalog(warehouse).create_table(f"bench.{name}", schema=rows.schema, options=options)
    step = -(-rows.num_rows // files)
    for start in range(0, rows.num_rows, step):
        table.write(rows.slice(start, step))
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = make_rows(args.rows)
    rng = np.random.default_rng(11)
    chosen = np.sort(rng.choice(args.rows, args.rows // 10, replace=False))
    with tempfile.TemporaryDirectory() as warehouse:
        evolving = table_of(warehouse, "evolving", rows, args.files,
                            {"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
        plain = table_of(warehouse, "plain", rows, args.files, {})
        base_files = sorted(glob.glob(os.path.join(evolving.root, "bucket-0", "*.parquet")))
        counter = iter(range(1_000_000))

        def update_columns():
            values = pa.array(np.full(len(chosen), float(next(counter))))
            return evolving.update_columns(pa.table({"_ROW_ID": pa.array(chosen), "c1": values}))

        def cow_update():
            return plain.update({"c1": float(next(counter))}, filter=pc.field("id").isin(pa.array(chosen)))

        narrow, _ = timed(update_columns, args.repeat)
        whole, _ = timed(cow_update, args.repeat)
        for _ in range(max(0, 5 - args.repeat)):
            update_columns()
        raw, raw_rows = timed(lambda: pa.concat_tables([pq.read_table(f) for f in base_files]), args.repeat)
        read, read_rows = timed(lambda: evolving.scan().to_arrow(), args.repeat)
        assert read_rows.num_rows == raw_rows.num_rows == args.rows
        print(f"rows {args.rows:,} x {COLUMNS} columns in {len(base_files)} files, {os.cpu_count()} cpu(s)")
        print(f"update one column of {len(chosen):,} rows: data evolution {narrow:.3f}s, copy-on-write "
              f"{whole:.3f}s, ratio {narrow / whole:.2f}x (target <= 0.2x)")
        print(f"full read after 5 updates: tarn {read:.3f}s, raw pyarrow {raw:.3f}s, ratio {read / raw:.2f}x "
              f"(target <= 1.5x)")


if __name__ == "__main__":
    main()
