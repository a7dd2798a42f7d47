"""tarn.spark.attach: a catalog's tables by name in Spark SQL; new commits and time travel."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
import tarn.spark


def test_tables_by_name_see_new_commits_and_travel(spark, tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    orders = catalog.create_table("shop.orders", pa.schema([("id", pa.int64()), ("amount", pa.float64())]),
                                  primary_key=["id"], options={"bucket": "1"})
    orders.write(pa.table({"id": [1, 2], "amount": [1.0, 2.0]}))
    attached = tarn.spark.attach(spark, str(tmp_path / "wh"), name="lake")

    assert spark.sql("SELECT sum(amount) FROM `shop.orders`").first()[0] == 3.0
    assert spark.sql("SELECT count(*) FROM `lake.shop.orders`").first()[0] == 2

    orders.write(pa.table({"id": [2, 3], "amount": [20.0, 30.0]}))  # snapshot 2: an upsert and a new key
    by_name = tarn.spark.sql(spark, "SELECT id, amount FROM shop.orders ORDER BY id")
    assert [tuple(r) for r in by_name.collect()] == [(1, 1.0), (2, 20.0), (3, 30.0)]
    assert tarn.spark.sql(spark, "SELECT count(*) FROM lake.shop.orders").first()[0] == 3

    old = tarn.spark.sql(spark, "SELECT o.id, o.amount FROM shop.orders VERSION AS OF 1 AS o ORDER BY o.id")
    assert [tuple(r) for r in old.collect()] == [(1, 1.0), (2, 2.0)]
    orders.create_tag("first", snapshot_id=1)
    assert tarn.spark.sql(spark, "SELECT sum(amount) FROM shop.orders VERSION AS OF 'first'").first()[0] == 3.0

    attached.refresh()  # plain spark.sql sees what the views were remade at
    assert spark.sql("SELECT sum(amount) FROM `shop.orders`").first()[0] == 51.0


def test_attach_refuses_what_is_no_catalog(spark):
    with pytest.raises(tarn.errors.TarnError, match="catalog"):
        tarn.spark.attach(spark, 42)
