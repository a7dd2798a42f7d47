"""The tarn data source on S3 in the shared local session: storage options given as data source
options open the table on the driver and in every task, and never become table options."""

from __future__ import annotations

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
