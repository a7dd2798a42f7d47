"""Partition pruning on Spark without filter pushdown (pyspark 4.3): the read option `filter`.

    .venv/bin/python bench/bench_spark_filter.py [--rows 2000000] [--days 20] [--repeat 3]

A table partitioned by day (`--days` partitions). Counting one day's rows with
`df.filter("dt = ...")` on pyspark 4.3 reads every partition (no filter reaches tarn); with
`.option("filter", "dt = ...")` tarn plans only that partition. Printed: medians and the ratio.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
import tarn.spark  # noqa: E402
from bench.bench_core import timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--days", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="tarn-bench-filter-")
    spark = tarn.spark.session("local[2]", "tarn-bench-filter", {"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rng = np.random.default_rng(1)
        days = np.array([f"2026-11-{d + 1:02d}" for d in range(args.days)])
        rows = pa.table({"dt": pa.array(days[rng.integers(0, args.days, args.rows)]),
                         "id": pa.array(np.arange(args.rows, dtype=np.int64)),
                         "amount": pa.array(rng.random(args.rows))})
        table = tarn.create_table(f"{work}/t", rows.schema, partition_keys=["dt"])
        table.write(rows)
        day = str(days[0])

        def spark_filter():
            return spark.read.format("tarn").load(table.root).filter(f"dt = '{day}'").count()

        def tarn_filter():
            return spark.read.format("tarn").option("filter", f"dt = '{day}'").load(table.root).count()

        pruned, count = timed(tarn_filter, args.repeat)
        full, expected = timed(spark_filter, args.repeat)
        assert count == expected
        print(f"{args.rows:,} rows in {args.days} partitions; count of one partition ({count:,} rows), "
              f"medians of {args.repeat}")
        print(f"  df.filter (Spark filters every row read)  {full:7.3f} s")
        print(f"  option('filter') (tarn plans one partition) {pruned:7.3f} s   ratio {pruned / full:5.2f}x")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
