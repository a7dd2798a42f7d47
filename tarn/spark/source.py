"""The Spark data source "tarn": `spark.read.format("tarn")`, `df.write.format("tarn")` and
their streaming counterparts, each handing the work to its reader or writer module.

Every Spark Python worker imports this module (through `pyspark_tarn`) before it is told what
to run, so it imports only the target; each method imports its reader or writer when called.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from tarn.spark.target import FORMAT, ReadTarget, plain_options


class TarnDataSource(DataSource):
    """`spark.read.format("tarn").load(path)`, `df.write.format("tarn").save(path)`, and the
    streaming counterparts. Register with `tarn.spark.register(spark)`."""

    filter_pushdown = True  # use the filters Spark pushes (see tarn.spark.pushdown_is_safe)

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self):
        # Spark asks for the schema before it says whether the read is batch or streaming: an
        # explicit `scan.mode` (a streaming start position) reads with the latest schema.
        streaming = plain_options(self.options).get("scan.mode") not in (None, "default")
        return ReadTarget.of(self.options, for_stream=streaming).spark_schema()

    def reader(self, schema: StructType):
        # Spark plans the read when a DataFrame is first used and keeps the plan of its
        # unfiltered scan: a new DataFrame, or REFRESH TABLE for a view, sees later commits.
        from tarn.spark.batch_read import BatchReader, FilteringBatchReader

        reader = FilteringBatchReader if self.filter_pushdown else BatchReader
        return reader(ReadTarget.of(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool):
        from tarn.spark.batch_write import BatchWriter

        return BatchWriter.prepare(plain_options(self.options), schema, overwrite)

    def streamReader(self, schema: StructType):
        from tarn.spark.stream_read import StreamReader

        return StreamReader.prepare(plain_options(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool):
        from tarn.spark.stream_write import StreamWriter

        return StreamWriter.prepare(plain_options(self.options), schema, overwrite)


class TarnDataSourceWithoutPushdown(TarnDataSource):
    """The "tarn" format for Spark releases whose filter pushdown leaks into other scans:
    every filter is left to Spark."""

    filter_pushdown = False
