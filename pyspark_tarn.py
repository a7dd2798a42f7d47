"""Spark's static registration of the "tarn" data source.

Spark 4 looks, once per JVM, for top-level Python modules named `pyspark_*` with a
`DefaultSource` and registers each in every session (`pyspark.sql.worker.lookup_data_sources`).
So `spark.read.format("tarn")` works in any session and any thread, also ones `tarn.spark`
never saw (`spark.newSession()`, a session made elsewhere). This one leaves filters to Spark;
`tarn.spark.register(spark)` (which `tarn.spark.session()` calls) replaces it in its session
with the source that pushes filters down where the Spark release runs that correctly.
"""

from tarn.spark.source import TarnDataSourceWithoutPushdown as DefaultSource

__all__ = ["DefaultSource"]
