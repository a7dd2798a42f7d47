"""tarn on Spark through PySpark's Python Data Source API (`pip install 'tarn-lake[spark]'`).

    spark = tarn.spark.session()                      # or tarn.spark.register(existing_session)
    spark.read.format("tarn").load(path)
    tarn.spark.read(spark, path)                      # Spark's own parquet scan where nothing needs merging
    df.write.format("tarn").mode("append").save(path)
    tarn.spark.write(df, path, mode="append")         # primary-key tables: one writer per bucket
    spark.readStream.format("tarn").load(path)
    df.writeStream.format("tarn").option("checkpointLocation", cp).start(path)
    tarn.spark.compact(spark, path, full=True)           # primary-key and append tables
    tarn.spark.rescale(spark, path, bucket=8)         # rewrite into another bucket count
    tarn.spark.expire_snapshots(spark, path, retain_min=5)   # data files deleted on executors
    tarn.spark.analyze(spark, path)                   # table statistics gathered on executors
    tarn.spark.statistics(spark, path)                # ... shown as a DataFrame
    tarn.spark.delete(spark, path, "amount < 0")      # DELETE (Spark SQL's cannot reach a Python source)
    tarn.spark.update(spark, path, {"status": "'paid'"}, "id = 1")          # UPDATE
    tarn.spark.merge_into(spark, path, updates_df, when_matched_update="*")   # MERGE INTO
    tarn.spark.attach(spark, catalog)                 # every table of a catalog as views `db.t`
    tarn.spark.sql(spark, "MERGE INTO db.t ...")      # Paimon's Spark SQL over the attached catalog
    df.writeStream.format("tarn").option("like", src_path)...   # a new table with src's keys and options

Errors tarn raises inside Spark reach the caller with tarn's message first (tarn.spark.errors).

See docs/guide-spark.md.
"""

from __future__ import annotations

from tarn.lazy import lazy_getattr

try:
    import pyspark  # noqa: F401  (fail early, with the install hint)
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("tarn.spark needs pyspark 4: pip install 'tarn-lake[spark]'") from exc


# name -> the module that defines it, imported on first use (PEP 562): a Spark Python worker
# imports `pyspark_tarn` -> `tarn.spark.source`, and should load just what its task runs, not
# every helper here (Spark gives a new worker a fixed 10 s to connect back; tarn/spark/errors.py)
_LAZY = {
    "attach": "tarn.spark.attach", "create_table_like": "tarn.spark.batch_write",
    "by_bucket": "tarn.spark.dataframe", "rescale": "tarn.spark.dataframe", "write": "tarn.spark.dataframe",
    "delete": "tarn.spark.dml", "merge_into": "tarn.spark.dml", "update": "tarn.spark.dml",
    "compact": "tarn.spark.maintenance", "create_tag": "tarn.spark.maintenance",
    "delete_on_executors": "tarn.spark.maintenance", "delete_tag": "tarn.spark.maintenance",
    "expire_snapshots": "tarn.spark.maintenance", "list_tags": "tarn.spark.maintenance",
    "expire_partitions": "tarn.spark.maintenance",
    "remove_orphan_files": "tarn.spark.maintenance", "rollback_to": "tarn.spark.maintenance",
    "read": "tarn.spark.native_read", "pushdown_is_safe": "tarn.spark.session", "register": "tarn.spark.session",
    "session": "tarn.spark.session", "sql": "tarn.spark.statements", "analyze": "tarn.spark.statistics",
    "count": "tarn.spark.statistics", "statistics": "tarn.spark.statistics", "TarnDataSource": "tarn.spark.source",
    "FORMAT": "tarn.spark.target",
}

__all__ = ["FORMAT", "TarnDataSource", "pushdown_is_safe", "register", "session", "read", "write", "by_bucket",
           "rescale", "compact", "expire_snapshots", "expire_partitions", "create_tag", "delete_tag", "list_tags", "rollback_to",
           "remove_orphan_files", "delete_on_executors", "analyze", "statistics", "count", "delete", "update",
           "merge_into", "create_table_like", "attach", "sql"]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(__all__)


# Two helpers share their module's name: importing the module would bind the package attribute
# to the module, so these are bound now (both modules are light).
from tarn.spark.session import pushdown_is_safe, register, session  # noqa: E402
from tarn.spark.statistics import analyze, count, statistics  # noqa: E402
