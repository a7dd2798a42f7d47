"""File-index benchmark: a point lookup `id == x` on an append table of 200 files, with and
without a bloom-filter index on `id`.

    .venv/bin/python bench/bench_file_index.py [--files 200] [--rows-per-file 20000] [--items N]

Both tables get the same rows: ids are spread over all files (each file's min/max covers
nearly the whole id range, so stats skip nothing). The indexed table declares
`file-index.bloom-filter.columns=id` (default `items` 1,000,000: each file's index is a
`<file>.index` of about 600 KB, read by the planner). Printed (medians of 5): planned files,
files read (splits the scan reads) and rows found for the lookup, plan time and plan + read
time, with and without the index, and the write time of both tables. Target: the indexed
lookup reads <= 3 files.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
from tarn import col  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string()), ("v", pa.float64())])


def file_rows(f: int, rows: int, files: int) -> pa.Table:
    # file f holds ids f, f + files, f + 2*files, ...: every file spans the whole range
    ids = np.arange(rows, dtype=np.int64) * files + f
    return pa.table({"id": ids, "payload": pa.array([f"p{f}"] * rows),
                     "v": np.random.default_rng(f).random(rows)}, schema=SCHEMA)


def build(catalog, name: str, options: dict, files: int, rows: int) -> tuple[tarn.Table, float]:
    table = catalog.create_table(name, schema=SCHEMA, options={"bucket": "-1", **options})
    t0 = time.perf_counter()
    for f in range(files):
        table.write(file_rows(f, rows, files))
    return table, time.perf_counter() - t0


def lookup(table, key: int) -> dict:
    plans, totals, found, planned = [], [], 0, 0
    for _ in range(5):
        t0 = time.perf_counter()
        scan = table.scan(filter=col("id") == key)
        splits = scan.plan()
        t1 = time.perf_counter()
        found = scan.to_arrow().num_rows
        t2 = time.perf_counter()
        plans.append(t1 - t0)
        totals.append(t2 - t0)
        planned = sum(len(s.files) for s in splits)
    return {"planned": planned, "read": planned, "found": found,
            "plan_s": statistics.median(plans), "total_s": statistics.median(totals)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows-per-file", type=int, default=20000)
    parser.add_argument("--items", type=int, default=None, help="file-index.bloom-filter.id.items")
    args = parser.parse_args()
    options = {"file-index.bloom-filter.columns": "id"}
    if args.items:
        options["file-index.bloom-filter.id.items"] = str(args.items)
    root = tempfile.mkdtemp(prefix="tarn-bench-fi-")
    try:
        catalog = tarn.Catalog(root)
        plain, plain_write = build(catalog, "db.plain", {}, args.files, args.rows_per_file)
        indexed, indexed_write = build(catalog, "db.indexed", options, args.files, args.rows_per_file)
        files = [f for s in indexed.scan().plan() for f in s.files]
        index_bytes = sum((Path(s.bucket_path) / x).stat().st_size
                          for s in indexed.scan().plan() for f in s.files for x in f.extra_files)
        embedded = sum(len(f.embedded_index or b"") for f in files)
        key = (args.rows_per_file // 2) * args.files + 17 % args.files
        print(f"{args.files} files x {args.rows_per_file} rows; index: {index_bytes / 1e6:.1f} MB in .index files, "
              f"{embedded} bytes embedded")
        print(f"write: without index {plain_write:.2f} s, with index {indexed_write:.2f} s")
        for name, table in (("without index", plain), ("with bloom index", indexed)):
            r = lookup(table, key)
            print(f"id == {key} {name:17s}: planned {r['planned']:4d} files, read {r['read']:4d} files, "
                  f"found {r['found']} row(s); plan {r['plan_s'] * 1000:8.1f} ms, plan+read {r['total_s'] * 1000:8.1f} ms")
        r = lookup(indexed, key)
        status = "OK" if r["read"] <= 3 else "MISSED"
        print(f"target: indexed lookup reads <= 3 files: {r['read']} ({status})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
