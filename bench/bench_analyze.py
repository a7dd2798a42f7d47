"""ANALYZE benchmark: `Table.analyze()` of a 2M-row, 3-column append table (BIGINT key, BIGINT
value, 20-character STRING: bench_core's rows) against a raw pyarrow read of the same rows.

    .venv/bin/python bench/bench_analyze.py [--rows 2000000] [--files 1] [--repeat 5]

`--files N` writes the rows in N commits (N data files). Printed (medians of `--repeat` runs):
the raw read (`pyarrow.parquet.read_table` of every data file), `analyze()` (read + every
column's statistics + the ANALYZE commit), their ratio (target <= 2x), and the distinct-count
error of each column against the exact count.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
from bench.bench_core import make_rows  # noqa: E402


def timed(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = make_rows(args.rows)
    with tempfile.TemporaryDirectory() as warehouse:
        table = tarn.Catalog(warehouse).create_table("bench.analyze", schema=rows.schema)
        step = -(-args.rows // args.files)
        for start in range(0, args.rows, step):
            table.write(rows.slice(start, step))
        files = sorted(glob.glob(os.path.join(table.root, "bucket-*", "*.parquet")))
        raw, read = timed(lambda: pa.concat_tables([pq.read_table(f) for f in files]), args.repeat)
        assert read.num_rows == args.rows
        analyze, _ = timed(table.analyze, args.repeat)
        stats = table.statistics()
        print(f"rows {args.rows:,} in {len(files)} file(s), {os.cpu_count()} cpu(s)")
        print(f"raw pyarrow read  {raw:7.3f} s")
        print(f"analyze()         {analyze:7.3f} s")
        print(f"ratio             {analyze / raw:7.2f} x   (target <= 2x)")
        for name in rows.column_names:
            exact = pc.count_distinct(rows.column(name)).as_py()
            got = stats.col_stats[name].distinct_count
            print(f"distinct {name}: {got:,} vs exact {exact:,} ({(got - exact) / exact:+.3%})")


if __name__ == "__main__":
    main()
