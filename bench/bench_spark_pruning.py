"""Partition pruning from a DataFrame's own filter (issue 42): the bytes Spark reads counting one
partition of a 30-partition table through `tarn.spark.read(...).filter(...)`, against counting
the whole table (target: at most 1/20), and the time against `spark.read.parquet` of the same
files with the same filter.

    .venv/bin/python bench/bench_spark_pruning.py [--rows 3000000] [--partitions 30] [--repeat 5]

Bytes and files are Spark's own scan metrics ("size of files read", "number of files read").
"""

from __future__ import annotations

import argparse
import glob
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
import tarn.spark  # noqa: E402


def files_read(frame) -> tuple[int, int]:
    """(files, bytes) the scans of `frame`'s last run read: Spark's scan metrics "number of
    files read" and "size of files read", summed over the scans of its final plan."""
    files = size = 0
    pending = [frame._jdf.queryExecution().executedPlan()]
    while pending:
        node = pending.pop()
        name = node.nodeName()
        if name.startswith("AdaptiveSparkPlan"):
            pending.append(node.executedPlan())
            continue
        if "QueryStage" in name:
            pending.append(node.plan())
            continue
        metrics = node.metrics()
        if metrics.contains("filesSize"):
            files += metrics.apply("numFiles").value()
            size += metrics.apply("filesSize").value()
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.length()))
    return files, size


def measured(query) -> tuple[float, int, int]:
    """(seconds, files, bytes) of collecting the DataFrame `query()` makes."""
    frame = query()
    started = time.perf_counter()
    frame.collect()
    elapsed = time.perf_counter() - started
    return (elapsed, *files_read(frame))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    spark = tarn.spark.session("local[2]", "tarn-bench-pruning", {"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    catalog = tarn.Catalog(tempfile.mkdtemp(prefix="tarn-bench-pruning-"))
    table = catalog.create_table("db.t", pa.schema([("day", pa.string()), ("id", pa.int64()), ("v", pa.float64())]),
                                 partition_keys=["day"])
    ids = np.arange(args.rows)
    table.write(pa.table({"day": pa.array((ids % args.partitions).astype(str)), "id": ids, "v": ids / 3.0}))
    df = tarn.spark.read(spark, table.root)
    parquet = spark.read.parquet(*glob.glob(f"{table.root}/day=*/bucket-*/*.parquet"))
    one = "day = '3'"
    queries = {"tarn full": lambda: df.agg({"v": "sum"}),
               "tarn one partition": lambda: df.filter(one).agg({"v": "sum"}),
               "parquet one partition": lambda: parquet.filter(one).agg({"v": "sum"})}
    results = {}
    for label, query in queries.items():
        measured(query)  # warm
        runs = [measured(query) for _ in range(args.repeat)]
        results[label] = tuple(statistics.median(r[k] for r in runs) for k in range(3))
    print(f"{'query':<24} {'ms':>8} {'files':>6} {'MB read':>9}")
    for label, (seconds, files, read) in results.items():
        print(f"{label:<24} {seconds * 1000:>8.1f} {files:>6.0f} {read / 2**20:>9.2f}")
    share = results["tarn one partition"][2] / max(results["tarn full"][2], 1)
    ratio = results["tarn one partition"][0] / results["parquet one partition"][0]
    print(f"one partition reads {share:.3f} of the table's bytes (target <= 0.05); "
          f"time vs spark.read.parquet with the same filter: {ratio:.2f}x")


if __name__ == "__main__":
    main()
