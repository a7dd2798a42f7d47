"""tarn on Spark through PySpark's Python Data Source API (`pip install tarn[spark]`).

    spark = tarn.spark.session()                      # or tarn.spark.register(existing_session)
    spark.read.format("tarn").load(path)
    df.write.format("tarn").mode("append").save(path)
    tarn.spark.write(df, path, mode="append")         # primary-key tables: one writer per bucket
    spark.readStream.format("tarn").load(path)
    df.writeStream.format("tarn").option("checkpointLocation", cp).start(path)
    tarn.spark.compact(spark, path, full=True)

See docs/guide-spark.md.
"""

from __future__ import annotations

import os
import sys

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("tarn.spark needs pyspark 4: pip install 'tarn[spark]'") from exc

from tarn.spark.maintenance import (CompactSource, compact, create_tag, delete_tag, expire_snapshots,
                                    list_tags, remove_orphan_files, rollback_to)
from tarn.spark.source import FORMAT, TarnDataSource
from tarn.spark.batch_write import by_bucket, write

__all__ = ["FORMAT", "TarnDataSource", "register", "session", "write", "by_bucket", "compact", "expire_snapshots",
           "create_tag", "delete_tag", "list_tags", "rollback_to", "remove_orphan_files"]

SESSION_DEFAULTS = {
    # Spark hands filters to Python data sources only with this on (partition pruning, stats skipping).
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def register(spark) -> None:
    """Register the "tarn" format (and the internal compaction writer) with a session; sets the
    runtime SQL options tarn relies on."""
    spark.dataSource.register(TarnDataSource)
    spark.dataSource.register(CompactSource)
    for key, value in SESSION_DEFAULTS.items():
        spark.conf.set(key, value)


def session(master: str = "local[2]", app_name: str = "tarn", config: dict | None = None):
    """A SparkSession (the active one if it exists) with tarn registered.

    Python workers run this interpreter (PYSPARK_PYTHON), so they import the same tarn; on a
    local master the shuffle uses a few partitions instead of Spark's 200."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = dict(SESSION_DEFAULTS)
    settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    if master.startswith("local"):
        settings["spark.sql.shuffle.partitions"] = "8"
        settings["spark.ui.enabled"] = "false"
    settings.update(config or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
