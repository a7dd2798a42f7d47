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

try:
    import pyspark  # noqa: F401  (fail early, with the install hint)
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("tarn.spark needs pyspark 4: pip install 'tarn-lake[spark]'") from exc

from tarn.spark.attach import attach
from tarn.spark.batch_write import create_table_like
from tarn.spark.dataframe import by_bucket, rescale, write
from tarn.spark.dml import delete, merge_into, update
from tarn.spark.maintenance import (compact, create_tag, delete_on_executors, delete_tag, expire_snapshots,
                                    list_tags, remove_orphan_files, rollback_to)
from tarn.spark.native_read import read
from tarn.spark.session import pushdown_is_safe, register, session
from tarn.spark.statements import sql
from tarn.spark.statistics import analyze, count, statistics
from tarn.spark.source import TarnDataSource
from tarn.spark.target import FORMAT

__all__ = ["FORMAT", "TarnDataSource", "pushdown_is_safe", "register", "session", "read", "write", "by_bucket", "rescale", "compact", "expire_snapshots",
           "create_tag", "delete_tag", "list_tags", "rollback_to", "remove_orphan_files", "delete_on_executors",
           "analyze", "statistics", "count", "delete", "update", "merge_into", "create_table_like",
           "attach", "sql"]
