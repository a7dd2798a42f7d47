"""The tarn data source on S3 in the shared local session: storage options given as data source
options open the table on the driver and in every task, and never become table options."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import tarn
import tarn.spark
from tarn.errors import InvalidOption

pytestmark = pytest.mark.s3


def test_write_read_and_maintenance_with_storage_options(spark, s3_server):
    storage = s3_server.storage_options
    path = f"{s3_server.new_prefix()}/db.db/orders"
    df = spark.createDataFrame([(i, f"v{i}") for i in range(20)], "id long, v string")
    tarn.spark.write(df, path, **{"primary-key": "id", "bucket": "2", **storage})
    spark.createDataFrame([(3, "new")], "id long, v string").write.format("tarn") \
        .mode("append").options(**storage).save(path)

    rows = {r.id: r.v for r in spark.read.format("tarn").options(**storage).load(path).collect()}
    assert len(rows) == 20 and rows[3] == "new" and rows[4] == "v4"
    assert tarn.spark.read(spark, path, **storage).count() == 20  # the tarn source: no native S3 scan

    compacted = tarn.spark.compact(spark, path, full=True, storage_options=storage)
    table = tarn.load_table(path, storage)
    assert compacted is not None and table.latest_snapshot().commit_kind == "COMPACT"
    tarn.spark.create_tag(spark, path, "t1", storage_options=storage)
    assert [t.name for t in tarn.spark.list_tags(spark, path, storage_options=storage)] == ["t1"]
    assert not [k for k in table.schema().options if k.startswith("s3.")]
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(20))


def test_unknown_storage_option_is_named(spark, s3_server):
    path = f"{s3_server.new_prefix()}/db.db/t"
    df = spark.createDataFrame([(1,)], "id long")
    with pytest.raises(Exception, match="s3.endpoint-url"):
        df.write.format("tarn").mode("append").options(**s3_server.storage_options) \
            .option("s3.endpoint-url", "http://x").save(path)


def test_storage_options_are_checked_before_any_task(s3_server):
    with pytest.raises(InvalidOption, match="unknown storage option"):
        tarn.load_table("s3://bucket/t", {"s3.bogus": "1"})
    catalog = tarn.Catalog(s3_server.new_prefix(), s3_server.storage_options)
    table = catalog.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    assert table.file_io.is_s3


# ---------------------------------------------------------------------------------------------
# issue 38: every Spark entry point on S3 (the table's location keeps its scheme on the way
# to by_bucket and the executors)

def _orders(spark, s3_server, primary_key: bool = True) -> tuple[str, dict]:
    storage = s3_server.storage_options
    path = f"{s3_server.new_prefix()}/wh/db.db/orders"
    df = spark.createDataFrame([(i, f"c{i % 3}", float(i)) for i in range(12)],
                               "id long, customer string, amount double")
    options = {"primary-key": "id", "bucket": "2"} if primary_key else {}
    tarn.spark.write(df, path, **options, **storage)
    return path, storage


def _rows(path: str, storage: dict) -> dict:
    return {r["id"]: (r["customer"], r["amount"]) for r in tarn.load_table(path, storage).scan().to_arrow().to_pylist()}


def test_dml_on_s3(spark, s3_server):
    path, storage = _orders(spark, s3_server)
    model = {i: (f"c{i % 3}", float(i)) for i in range(12)}
    assert tarn.spark.delete(spark, path, "amount < 2", storage_options=storage) is not None
    model = {k: v for k, v in model.items() if v[1] >= 2}
    assert _rows(path, storage) == model
    tarn.spark.update(spark, path, {"amount": 0.5}, "customer = 'c1'", storage_options=storage)
    model = {k: (c, 0.5 if c == "c1" else a) for k, (c, a) in model.items()}
    assert _rows(path, storage) == model
    source = spark.createDataFrame([(3, "new", 30.0), (100, "c9", 1.0), (4, "gone", 0.0)],
                                   "id long, customer string, amount double")
    tarn.spark.merge_into(spark, path, source, when_matched_update="*",
                          when_matched_delete="source.customer = 'gone'", storage_options=storage)
    model[3] = ("new", 30.0)
    model[100] = ("c9", 1.0)
    del model[4]
    assert _rows(path, storage) == model


def test_dml_on_an_s3_append_table(spark, s3_server):
    path, storage = _orders(spark, s3_server, primary_key=False)
    tarn.spark.delete(spark, path, "id >= 6", storage_options=storage)
    assert sorted(_rows(path, storage)) == list(range(6))


def test_maintenance_on_s3(spark, s3_server):
    path, storage = _orders(spark, s3_server)
    more = spark.createDataFrame([(i, "late", 1.0) for i in range(5)], "id long, customer string, amount double")
    tarn.spark.write(more, path, **storage)
    tarn.spark.compact(spark, path, full=True, storage_options=storage)
    table = tarn.load_table(path, storage)
    assert table.latest_snapshot().commit_kind == "COMPACT"
    assert tarn.spark.expire_snapshots(spark, path, retain_min=1, retain_max=1, storage_options=storage) == 2
    assert [s.id for s in table.snapshots()] == [3]
    tarn.spark.create_tag(spark, path, "kept", storage_options=storage)
    stray = table.file_io.uri(table.root) + "/bucket-0/data-stray.parquet"
    table.file_io.write_bytes(table.root + "/bucket-0/data-stray.parquet", b"x")
    found = tarn.spark.remove_orphan_files(spark, path, older_than_ms=int(time.time() * 1000) + 60_000,
                                          storage_options=storage)
    assert [f for f in found if f.endswith("data-stray.parquet")], (stray, found)
    assert not table.file_io.exists(table.root + "/bucket-0/data-stray.parquet")
    assert len(_rows(path, storage)) == 12


def test_streaming_on_s3_is_exactly_once_across_a_restart(spark, s3_server, tmp_path):
    storage = s3_server.storage_options
    prefix = s3_server.new_prefix()
    catalog = tarn.Catalog(prefix, storage)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    source = catalog.create_table("db.events", schema)
    target = catalog.create_table("db.sink", schema)
    source.write(pa.table({"id": [1, 2, 3], "v": ["x"] * 3}, schema=schema))
    checkpoint = str(tmp_path / "checkpoint")

    def run():
        query = (spark.readStream.format("tarn").options(**storage).load(f"{prefix}/db.db/events")
                 .writeStream.format("tarn").options(**storage).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start(f"{prefix}/db.db/sink"))
        query.awaitTermination()

    run()
    source.write(pa.table({"id": [4], "v": ["y"]}, schema=schema))
    run()
    run()  # nothing new: no commit, no duplicate
    assert sorted(target.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    assert [s.commit_identifier for s in target.snapshots()] == [0, 1]
