"""Spark sessions with tarn: registering the "tarn" format (filter pushdown only where Spark
runs it correctly) and a ready local session."""

from __future__ import annotations

import os
import sys

from tarn.spark.errors import install as install_error_hook
from tarn.spark.source import TarnDataSource, TarnDataSourceWithoutPushdown

# What `session()` sets unless told otherwise: Arrow batches of 64k rows (Spark's 10k costs tarn's
# write and the bucket UDF about a third more time), bounded by rows only (NO_BYTE_LIMIT), Arrow
# for pandas conversions.
NO_BYTE_LIMIT = str(2**31 - 1)
SESSION_DEFAULTS = {"spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
                    "spark.sql.execution.arrow.maxBytesPerBatch": NO_BYTE_LIMIT,
                    "spark.sql.execution.arrow.pyspark.enabled": "true"}
# Why no byte limit: Spark 4 cuts the Arrow batches it sends to Python workers (the data source
# writer, mapInArrow, Arrow UDFs) at `spark.sql.execution.arrow.maxBytesPerBatch` (64 MiB by
# default) and, to know when, asks its Arrow vectors for their size after every row, which walks
# every column. Only the value 2^31-1 skips that check. Measured on local[2], 5M rows of
# (bigint, bigint, string[20]) handed to Python workers: 2.8 CPU-s with the check, 1.8 without;
# a fixed-bucket tarn.spark.write of them 8.1 -> 6.5 CPU-s. A batch then holds at most
# maxRecordsPerBatch rows whatever their width: lower that for rows of hundreds of KB.
# The JVM reads the Arrow batches Python sources hand it through ArrowColumnVector, whose every
# get checks bounds and reference counts unless these are set (they act only on a JVM started
# with them: a session `session()` creates). Measured in the TPC-H bench (bench/bench_tpch.py),
# JVM CPU of Q6 over `format("tarn")` 6.5 -> 4.4 s. The batches come from pyarrow, well formed.
ARROW_JVM_OPTIONS = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"
SESSION_DEFAULTS["spark.driver.extraJavaOptions"] = ARROW_JVM_OPTIONS
SESSION_DEFAULTS["spark.executor.extraJavaOptions"] = ARROW_JVM_OPTIONS
# Spark hands filters to Python data sources only with this on (partition pruning, stats skipping).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
SCAN_BUILDER = "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder"


def pushdown_is_safe(spark) -> bool:
    """Does this Spark keep a pushed-down read plan with its own scan?

    Spark 4.1-4.3 store the plan made by `pushFilters` on the relation's data source object,
    so a later scan of the same DataFrame or view reuses it: `df.filter(f).count()` followed by
    `df.count()` counts only the rows matching `f`. Releases whose scan builder keeps the plan
    itself (a `readInfo` field) are safe."""
    try:
        fields = spark._jvm.java.lang.Class.forName(SCAN_BUILDER).getDeclaredFields()
    except Exception:  # Spark Connect (no JVM access) or an unexpected layout: assume unsafe
        return False
    return any(f.getName() == "readInfo" for f in fields)


def register(spark) -> None:
    """Register the "tarn" format (and the internal compaction writer) with a session.

    Filter pushdown is switched on (and used by tarn) only where Spark runs it correctly;
    see `pushdown_is_safe`. tarn errors raised in Spark's Python workers reach the caller
    with tarn's message first (`tarn.spark.errors`): catch them as the tarn error class or
    as Spark's."""
    install_error_hook()
    if getattr(spark, REGISTERED, False):  # once per session: Spark warns on every re-registration
        return
    safe = pushdown_is_safe(spark)
    spark.dataSource.register(TarnDataSource if safe else TarnDataSourceWithoutPushdown)
    from tarn.spark.maintenance import register_compaction  # not at import: Python workers import this package

    register_compaction(spark)
    if safe:
        spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        setattr(spark, REGISTERED, True)
    except AttributeError:  # a session object that takes no attributes registers again next time
        pass


REGISTERED = "_tarn_sources_registered"


def local_shuffle_partitions(master: str) -> int:
    """Two shuffle partitions per core of a local master (`local`, `local[N]`, `local[*]`,
    `local[N,F]`): a dynamic-bucket write gets that many assigner tasks. On local[2], 4 tasks
    wrote 5M new keys in 3.58 s where 8 took 3.72 s and 2 took 3.66 s (a task's fixed costs
    against cores left idle)."""
    inside = [p.strip() for p in master[master.find("[") + 1:master.find("]")].split(",")] if "[" in master else ["1"]
    if master.startswith("local-cluster") and len(inside) > 1 and all(p.isdigit() for p in inside[:2]):
        count = int(inside[0]) * int(inside[1])  # workers x cores each
    elif inside[0] == "*":
        count = os.cpu_count() or 1
    else:
        count = int(inside[0]) if inside[0].isdigit() else 1
    return 2 * max(count, 1)


def session(master: str = "local[2]", app_name: str = "tarn", config: dict | None = None):
    """A SparkSession (the active one if it exists) with tarn registered and SESSION_DEFAULTS
    set (`config` overrides them). Python workers run this interpreter (PYSPARK_PYTHON), so
    they import the same tarn; on a local master the shuffle uses two partitions per core
    (`local_shuffle_partitions`), not 200."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = dict(SESSION_DEFAULTS)
    settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    if master.startswith("local"):
        settings["spark.sql.shuffle.partitions"] = str(local_shuffle_partitions(master))
        settings["spark.ui.enabled"] = "false"
    settings.update(config or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
