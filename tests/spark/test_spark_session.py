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


def test_the_tarn_source_is_found_from_any_thread_and_session(spark, tmp_path):
    """Issue 38: `pyspark_tarn` registers the source statically, so a write from another
    Python thread, through another session of the same Spark (`newSession()`), finds it."""
    import threading

    import tarn

    other = spark.newSession()
    outcome = {}

    def write_and_read(session, name):
        try:
            path = str(tmp_path / name)
            session.createDataFrame([(1, "a"), (2, "b")], "id long, v string").write.format("tarn") \
                .mode("append").save(path)
            outcome[name] = session.read.format("tarn").load(path).count()
        except Exception as exc:  # noqa: BLE001 - reported below
            outcome[name] = f"{type(exc).__name__}: {exc}"[:400]

    threads = [threading.Thread(target=write_and_read, args=(s, n)) for s, n in ((spark, "same"), (other, "new"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert outcome == {"same": 2, "new": 2}
    assert sorted(tarn.load_table(str(tmp_path / "new")).scan().to_arrow().column("id").to_pylist()) == [1, 2]
