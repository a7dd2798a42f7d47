"""Spark by catalog and identifier: `format("tarn").option("catalog", NAME).load("db.t")`, the
helpers with `storage_options={"catalog": NAME}`. Tasks get explicit catalog options (the
session's Python workers never see the driver's config file: they started before it existed)."""

from __future__ import annotations

import pytest

import tarn
import tarn.spark
from tarn.spark.ref import for_tasks


@pytest.fixture
def lake(tmp_path, monkeypatch):
    config = tmp_path / "tarn.yaml"
    config.write_text(f"catalog:\n  lake:\n    warehouse: {tmp_path}/wh\n")
    monkeypatch.setenv("TARN_CONFIG", str(config))
    return tmp_path / "wh"


def test_read_write_and_dml_by_identifier(spark, lake):
    df = spark.createDataFrame([(i, f"v{i}") for i in range(10)], "id long, v string")
    tarn.spark.write(df, "shop.orders", catalog="lake", **{"primary-key": "id", "bucket": "2"})
    assert (lake / "shop.db" / "orders" / "schema" / "schema-0").is_file()
    read = tarn.spark.read(spark, "shop.orders", catalog="lake")
    assert sorted(r.id for r in read.collect()) == list(range(10))

    tarn.spark.delete(spark, "shop.orders", "id < 3", storage_options={"catalog": "lake"})
    tarn.spark.update(spark, "shop.orders", {"v": "x"}, "id = 5", storage_options={"catalog": "lake"})
    rows = {r["id"]: r["v"] for r in tarn.load_catalog("lake").load_table("shop.orders").scan().to_arrow().to_pylist()}
    assert sorted(rows) == list(range(3, 10)) and rows[5] == "x"


def test_format_with_explicit_catalog_options_and_what_tasks_receive(spark, lake):
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    df.write.format("tarn").option("catalog.warehouse", str(lake)).mode("append").save("db.t")
    assert tarn.load_catalog(warehouse=str(lake)).load_table("db.t").scan().to_arrow().num_rows == 2
    read = spark.read.format("tarn").option("catalog.warehouse", str(lake)).load("db.t")
    assert sorted(r.v for r in read.collect()) == ["a", "b"]
    assert for_tasks({"catalog": "lake"}) == {"catalog.warehouse": str(lake)}
    jdbc = {"catalog.metastore": "jdbc", "catalog.uri": "jdbc:sqlite:/x.db", "catalog.warehouse": "/wh",
            "catalog.jdbc.password": "secret"}
    assert for_tasks(jdbc) == {"catalog.warehouse": "/wh"}  # tasks open the directory, never get the password


def test_a_rest_table_commits_through_the_server_from_spark(spark, tmp_path):
    from tarn.server.run import ServerThread
    from tests.test_rest_client import TOKEN, CountingCatalog

    served = CountingCatalog(str(tmp_path / "served"))
    with ServerThread(served, [TOKEN]) as server:
        options = {"catalog.metastore": "rest", "catalog.uri": server.url, "catalog.warehouse": "wh",
                   "catalog.token.provider": "bear", "catalog.token": TOKEN}
        df = spark.createDataFrame([(i, f"v{i}") for i in range(6)], "id long, v string")
        tarn.spark.write(df, "db.t", **options, **{"primary-key": "id", "bucket": "2"})
        tarn.spark.delete(spark, "db.t", "id >= 4", storage_options=options)
        read = spark.read.format("tarn").options(**options).load("db.t")
        assert sorted(r.id for r in read.collect()) == [0, 1, 2, 3]
        on_disk = [s.id for s in served.inner.load_table("db.t").snapshots()]
        assert on_disk == served.published and len(on_disk) == 2  # every snapshot by the server
