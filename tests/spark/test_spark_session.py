"""What `tarn.spark.session()` sets on the session it returns."""

from __future__ import annotations

import pyarrow as pa


def test_arrow_batches_to_python_are_cut_by_rows_only(spark):
    """Spark's byte limit per Arrow batch (64 MiB unless told) is off, so it does not measure
    its vectors after every row: 65536 rows of 1.1 KB (72 MB) arrive as one batch."""
    from tarn.spark.session import NO_BYTE_LIMIT

    assert spark.conf.get("spark.sql.execution.arrow.maxBytesPerBatch").rstrip("b") == NO_BYTE_LIMIT
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "65536"
    wide = spark.range(70_000, numPartitions=1).selectExpr("id", "repeat('x', 1100) AS s")

    def sizes(batches):
        for batch in batches:
            yield pa.RecordBatch.from_arrays([pa.array([batch.num_rows], pa.int64())], names=["n"])

    assert [r.n for r in wide.mapInArrow(sizes, "n long").collect()] == [65_536, 70_000 - 65_536]
