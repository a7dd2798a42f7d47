"""Partition pruning from a DataFrame's own filter (issue 42): the bytes Spark reads counting one
partition of a 30-partition table through `tarn.spark.read(...).filter(...)`, against counting
the whole table (target: at most 1/20), and the time against `spark.read.parquet` of the same
files with the same filter.

    .venv/bin/python bench/bench_spark_pruning.py [--rows 3000000] [--partitions 30] [--repeat 5]

Bytes are the input bytes of the query's stages, from the Spark UI's REST API.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
import tarn.spark  # noqa: E402


def input_bytes(spark, group: str) -> int:
    """The input bytes of every stage of the jobs run in job group `group`."""
    context = spark.sparkContext
    tracker = context.statusTracker()
    stages = [s for job in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(job).stageIds]
    total = 0
    for stage in stages:
        url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/stages/{stage}"
        for attempt in json.load(urllib.request.urlopen(url)):
            total += attempt.get("inputBytes", 0)
    return total


def measured(spark, label: str, action) -> tuple[float, int]:
    group = f"{label}-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, label)
    started = time.perf_counter()
    action()
    elapsed = time.perf_counter() - started
    time.sleep(0.5)  # the UI's listener catches up
    return elapsed, input_bytes(spark, group)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    spark = tarn.spark.session("local[2]", "tarn-bench-pruning",
                               {"spark.ui.enabled": "true", "spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    catalog = tarn.Catalog(tempfile.mkdtemp(prefix="tarn-bench-pruning-"))
    table = catalog.create_table("db.t", pa.schema([("day", pa.string()), ("id", pa.int64()), ("v", pa.float64())]),
                                 partition_keys=["day"])
    ids = np.arange(args.rows)
    table.write(pa.table({"day": pa.array((ids % args.partitions).astype(str)), "id": ids, "v": ids / 3.0}))
    df = tarn.spark.read(spark, table.root)
    parquet = spark.read.parquet(*glob.glob(f"{table.root}/day=*/bucket-*/*.parquet"))
    one = "day = '3'"
    rows = {"tarn full": lambda: df.agg({"v": "sum"}).collect(),
            "tarn one partition": lambda: df.filter(one).agg({"v": "sum"}).collect(),
            "parquet one partition": lambda: parquet.filter(one).agg({"v": "sum"}).collect()}
    results = {}
    for label, action in rows.items():
        action()  # warm
        runs = [measured(spark, label, action) for _ in range(args.repeat)]
        results[label] = (statistics.median(t for t, _ in runs), statistics.median(b for _, b in runs))
    print(f"{'query':<24} {'ms':>8} {'MB read':>9}")
    for label, (seconds, read) in results.items():
        print(f"{label:<24} {seconds * 1000:>8.1f} {read / 2**20:>9.2f}")
    share = results["tarn one partition"][1] / max(results["tarn full"][1], 1)
    ratio = results["tarn one partition"][0] / results["parquet one partition"][0]
    print(f"one partition reads {share:.3f} of the table's bytes (target <= 0.05); "
          f"time vs spark.read.parquet with the same filter: {ratio:.2f}x")


if __name__ == "__main__":
    main()
