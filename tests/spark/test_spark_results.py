"""tarn.spark.write and the Spark DML helpers return the CommitResult the local verbs do."""

from __future__ import annotations

import tarn
import tarn.spark


def test_spark_verbs_return_commit_results(spark, tmp_path):
    path = str(tmp_path / "wh" / "t")
    df = spark.createDataFrame([(i, f"v{i}") for i in range(10)], "id bigint, v string")
    written = tarn.spark.write(df, path, **{"primary-key": "id", "bucket": "2"})
    assert isinstance(written, tarn.CommitResult) and written.operation == "write"
    assert written.rows_added == 10 and written.files_added == 2 and written.snapshot_ids == [1]
    deleted = tarn.spark.delete(spark, path, "id < 3")
    assert deleted.operation == "delete" and deleted.rows_deleted == 3
    updated = tarn.spark.update(spark, path, {"v": "x"}, "id = 5")
    assert updated.rows_updated == 1 and "update" in repr(updated)
    source = spark.createDataFrame([(5, "m"), (42, "n")], "id bigint, v string")
    merged = tarn.spark.merge_into(spark, path, source, when_matched_update="*")
    assert merged.operation == "merge" and merged.rows_written == 2
    assert sorted(r["id"] for r in tarn.load_table(path).scan().to_arrow().to_pylist()) == [3, 4, 5, 6, 7, 8, 9, 42]
    append = str(tmp_path / "wh" / "a")
    appended = tarn.spark.write(df, append)
    assert appended.rows_added == 10 and appended.commit_kind == "APPEND"


def test_sources_are_registered_once_per_session(spark, tmp_path, monkeypatch):
    from tarn.spark.session import register

    register(spark)  # already registered by the session fixture
    calls = []
    monkeypatch.setattr(type(spark.dataSource), "register", lambda self, source: calls.append(source))
    register(spark)
    path = str(tmp_path / "wh" / "r")
    tarn.spark.write(spark.createDataFrame([(1, "a")], "id bigint, v string"), path, **{"primary-key": "id",
                                                                                     "bucket": "1"})
    tarn.spark.compact(spark, path, full=True)
    assert calls == []  # no "replaced a previously registered data source" warning per helper call


def test_a_plain_stream_into_a_primary_key_table_compacts(spark, tmp_path):
    """Paimon's writers compact after their commits: a plain writeStream (no bucket shuffle)
    no longer piles up one level-0 run per micro-batch."""
    import uuid

    source = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.src", __import__("pyarrow").schema([("id", "int64"), ("v", "string")]))
    target = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.dst", __import__("pyarrow").schema([("id", "int64"), ("v", "string")]), primary_key=["id"],
        options={"bucket": "1", "num-sorted-run.compaction-trigger": "3"})
    checkpoint = str(tmp_path / f"ck-{uuid.uuid4().hex[:6]}")
    for batch in range(7):
        source.write({"id": [batch * 10 + i for i in range(5)], "v": [f"b{batch}"] * 5})
        query = (spark.readStream.format("tarn").load(source.root).writeStream.format("tarn")
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start(target.root))
        query.awaitTermination()
    level0 = [e for e in target.live_entries(target.latest_snapshot()) if e.file.level == 0]
    assert len(level0) <= 3  # compacted as num-sorted-run.compaction-trigger says
    assert target.scan().count() == 35


def test_read_option_filter_prunes_and_filters(spark, tmp_path):
    import pyarrow as pa

    table = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.p", pa.schema([("dt", pa.string()), ("id", pa.int64())]), partition_keys=["dt"])
    for day in ("a", "b", "c"):
        table.write(pa.table({"dt": [day] * 3, "id": pa.array([1, 2, 3], pa.int64())}))
    frame = spark.read.format("tarn").option("filter", "dt = 'b' and id >= 2").load(table.root)
    assert sorted((r.dt, r.id) for r in frame.collect()) == [("b", 2), ("b", 3)]
    from tarn.spark.target import ReadTarget

    target = ReadTarget.of({"path": table.root, "filter": "dt = 'b'"})
    splits = target.scan(target.open()).plan()
    assert {s.partition_values for s in splits} == {("b",)}  # the other partitions are not even planned
    import pytest
    with pytest.raises(Exception, match="nope"):
        spark.read.format("tarn").option("filter", "nope = 1").load(table.root).collect()


def test_merge_into_reads_only_the_source_keys(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "wh" / "m")
    df = spark.createDataFrame([(i, f"v{i}") for i in range(200)], "id bigint, v string")
    tarn.spark.write(df, path, **{"primary-key": "id", "bucket": "4"})
    from tarn.spark import dml

    seen = []
    original = dml._read

    def spy(*args, **kwargs):
        seen.append(kwargs.get("filter_text"))
        return original(*args, **kwargs)
    monkeypatch.setattr(dml, "_read", spy)
    source = spark.createDataFrame([(5, "x"), (500, "y")], "id bigint, v string")
    result = tarn.spark.merge_into(spark, path, source, when_matched_update="*")
    assert seen == ['"id" IN (5, 500)']
    rows = {r["id"]: r["v"] for r in tarn.load_table(path).scan().to_arrow().to_pylist()}
    assert rows[5] == "x" and rows[500] == "y" and len(rows) == 201 and result.rows_written == 2
