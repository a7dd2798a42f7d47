"""Spark read of a deletion-vector table (issue 11): `tarn.spark.read` vs `spark.read.parquet`.

    .venv/bin/python bench/bench_spark_dv.py [--rows 2000000] [--upserts 100000] [--buckets 2] [--repeat 21]

The table (k int64 primary key, v int64, s 20-char string) is written by tarn in Python: one
commit of `--rows` rows, then 4 overlapping commits of `--upserts` random existing keys, so its
buckets hold a compacted file with deleted rows and a smaller upper-level file. Its live rows are
then written by pyarrow as one zstd parquet file (the baseline, what a plain parquet table of the
same rows costs Spark). Both are read into Spark on local[2] with every column (the `noop` sink),
alternating, `--repeat` times; printed: the median of the per-pair ratios (target <= 1.2x), the
best times, the CPU both use (JVM and Python driver: the steadier figure when other processes load
the machine), and the tarn source (`spark.read.format("tarn")`, every row through a Python worker)
for reference. `tarn.spark.read` keeps the frame it planned for a snapshot, so a read of a snapshot
read before skips tarn's planning and Spark's analysis of the mask; the first read of a snapshot
(kept frames dropped before each) is timed in the same pairs and printed too.
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

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
import tarn.spark  # noqa: E402
from tarn.spark.native_read import forget_frames  # noqa: E402
from bench.bench_core import make_rows  # noqa: E402
from bench.bench_dv import upserts  # noqa: E402


def read_all(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def jvm_cpu(spark) -> float:
    """CPU seconds the driver JVM (local mode: the executors too) has used, from /proc."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(spark, fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the JVM and this Python process) of `fn()`. CPU time is
    what load from other processes changes least: on a busy machine it is the steadier ratio."""
    cpu0, py0, t0 = jvm_cpu(spark), time.process_time(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    return wall, jvm_cpu(spark) - cpu0 + time.process_time() - py0


def build(warehouse: str, rows: pa.Table, upsert_rows: int, buckets: int):
    table = tarn.Catalog(warehouse).create_table(
        "b.dv", schema=rows.schema, primary_key=["k"],
        options={"bucket": str(buckets), "deletion-vectors.enabled": "true"})
    table.write(rows)
    for seed in range(4):
        table.write(upserts(rows, upsert_rows, seed))
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--upserts", type=int, default=100_000)
    parser.add_argument("--buckets", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    rows = make_rows(args.rows)
    rows = rows.cast(pa.schema([pa.field("k", pa.int64(), nullable=False), *list(rows.schema)[1:]]))
    work = tempfile.mkdtemp(prefix="tarn-bench-spark-dv-")
    spark = tarn.spark.session("local[2]", "tarn-bench-dv", {"spark.driver.memory": "2g",
                                                             "spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        table = build(os.path.join(work, "wh"), rows, args.upserts, args.buckets)
        live = table.scan().to_arrow()
        raw_path = os.path.join(work, "raw.parquet")
        pq.write_table(live, raw_path, compression="zstd")
        files = table.system_table("files").to_arrow()
        stored = sum(files.column("record_count").to_pylist())
        deleted = sum(files.column("deleted_row_count").to_pylist())
        assert tarn.spark.read(spark, table.root).count() == live.num_rows == spark.read.parquet(raw_path).count()
        for _ in range(3):  # the JVM compiles both paths before either is timed
            read_all(spark.read.parquet(raw_path))
            read_all(tarn.spark.read(spark, table.root))
        native, raw, native_cpu, raw_cpu, first = [], [], [], [], []
        for _ in range(args.repeat):
            wall, cpu = timed(spark, lambda: read_all(spark.read.parquet(raw_path)))
            raw.append(wall)
            raw_cpu.append(cpu)
            wall, cpu = timed(spark, lambda: read_all(tarn.spark.read(spark, table.root)))
            native.append(wall)
            native_cpu.append(cpu)
            forget_frames()
            first.append(seconds(lambda: read_all(tarn.spark.read(spark, table.root))))
        source = min(seconds(lambda: read_all(spark.read.format("tarn").load(table.root))) for _ in range(3))
        ratios = [n / r for n, r in zip(native, raw)]
        cpu_ratios = [n / r for n, r in zip(native_cpu, raw_cpu)]
        plan = tarn.spark.read(spark, table.root)._jdf.queryExecution().executedPlan().toString()
        print(f"rows: {live.num_rows:,} live of {stored:,} stored ({deleted / stored:.1%} deleted by vectors) "
              f"in {len(files)} files, {args.buckets} buckets; local[2]; {args.repeat} alternating pairs")
        print(f"  spark.read.parquet of the live rows  best {min(raw):6.3f} s   median {statistics.median(raw):6.3f} s")
        print(f"  tarn.spark.read (native + vectors)   best {min(native):6.3f} s   "
              f"median {statistics.median(native):6.3f} s")
        ratio = statistics.median(ratios)
        print(f"  ratio: median of pairs {ratio:4.2f}x (best-to-best {min(native) / min(raw):4.2f}x; "
              f"pairs {', '.join(f'{r:.2f}' for r in ratios)}) target <= 1.2x {'ok' if ratio <= 1.2 else 'MISSED'}")
        print(f"  first read of the snapshot (planned) best {min(first):6.3f} s   median {statistics.median(first):6.3f} s"
              f"   ratio: median of pairs {statistics.median(f / r for f, r in zip(first, raw)):4.2f}x")
        print(f"  CPU (JVM + Python driver): raw median {statistics.median(raw_cpu):.2f} s, tarn median "
              f"{statistics.median(native_cpu):.2f} s: median of pairs {statistics.median(cpu_ratios):4.2f}x")
        print(f"  for reference: spark.read.format('tarn') best {source:6.3f} s = {source / min(raw):4.2f}x")
        print(f"  native plan scans: {plan.count('FileScan parquet')}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
