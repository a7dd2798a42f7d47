"""tarn.spark.sql: each statement kind against a dict model of the table."""

from __future__ import annotations

import tarn
import tarn.spark


def rows(spark, statement="SELECT id, dt, v, n FROM db.orders"):
    return {(r["id"], r["dt"]): (r["v"], r["n"]) for r in tarn.spark.sql(spark, statement).collect()}


def test_statements_against_a_model(spark, tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    tarn.spark.attach(spark, catalog)
    run = lambda statement: tarn.spark.sql(spark, statement)  # noqa: E731

    run("CREATE TABLE db.orders (id BIGINT NOT NULL, dt STRING NOT NULL, v STRING, n INT) USING paimon "
        "PARTITIONED BY (dt) TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '1')")
    table = catalog.load_table("db.orders")
    assert (table.primary_keys, table.partition_keys, table.options.bucket) == (("id", "dt"), ("dt",), 1)

    run("INSERT INTO db.orders VALUES (1, 'a', 'x', 1), (2, 'a', 'y', 2), (3, 'b', 'z', 3)")
    model = {(1, "a"): ("x", 1), (2, "a"): ("y", 2), (3, "b"): ("z", 3)}
    assert rows(spark) == model

    run("UPDATE db.orders SET n = n + 10, v = 'u' WHERE id = 1")
    model[(1, "a")] = ("u", 11)
    run("DELETE FROM db.orders WHERE id = 2")
    del model[(2, "a")]
    assert rows(spark) == model

    run("MERGE INTO db.orders t USING (SELECT * FROM VALUES (1, 'a', 'm', 0), (3, 'b', NULL, 0), (4, 'b', 'w', 4) "
        "AS s(id, dt, v, n)) s ON t.id = s.id AND t.dt = s.dt "
        "WHEN MATCHED AND s.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT *")
    model[(1, "a")] = ("m", 11)
    del model[(3, "b")]
    model[(4, "b")] = ("w", 4)
    assert rows(spark) == model

    run("CALL sys.create_tag(table => 'db.orders', tag => 'before_overwrite')")
    run("INSERT OVERWRITE db.orders PARTITION (dt = 'b') SELECT 9, 'nine', 9")
    tagged = dict(model)
    model = {k: v for k, v in model.items() if k[1] != "b"} | {(9, "b"): ("nine", 9)}
    assert rows(spark) == model
    assert rows(spark, "SELECT * FROM db.orders VERSION AS OF 'before_overwrite'") == tagged

    assert run("CALL sys.compact(table => 'db.orders')") is not None
    assert rows(spark) == model
    run("CALL sys.rollback(table => 'db.orders', version => 'before_overwrite')")
    assert rows(spark) == tagged

    run("ALTER TABLE db.orders ADD COLUMNS (note STRING)")
    run("ALTER TABLE db.orders RENAME COLUMN v TO label")
    run("ALTER TABLE db.orders SET TBLPROPERTIES ('snapshot.num-retained.min' = '5')")
    run("ALTER TABLE db.orders UNSET TBLPROPERTIES ('snapshot.num-retained.min')")
    schema = catalog.load_table("db.orders").schema()
    assert schema.field_names == ["id", "dt", "label", "n", "note"]
    assert "snapshot.num-retained.min" not in schema.options
    assert rows(spark, "SELECT id, dt, label AS v, n FROM db.orders WHERE note IS NULL") == tagged

    assert [r[0] for r in run("SHOW DATABASES").collect()] == ["default"]  # Spark's own, unchanged


def test_create_as_select_comments_and_insert_by_name(spark, tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    tarn.spark.attach(spark, catalog)
    run = lambda statement: tarn.spark.sql(spark, statement)  # noqa: E731

    run("CREATE TABLE db.items (id BIGINT NOT NULL COMMENT 'the item', name STRING COMMENT 'shown to people', "
        "price DOUBLE) USING paimon TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')")
    fields = {f.name: f.description for f in catalog.load_table("db.items").schema().fields}
    assert fields == {"id": "the item", "name": "shown to people", "price": None}

    run("INSERT INTO db.items BY NAME SELECT 2.5 AS price, 1 AS id")  # name left NULL
    run("INSERT INTO db.items BY NAME SELECT 'pen' AS NAME, 2 AS id, 1.0 AS price")
    assert sorted(tuple(r) for r in run("SELECT id, name, price FROM db.items").collect()) == \
        [(1, None, 2.5), (2, "pen", 1.0)]
    try:
        run("INSERT INTO db.items BY NAME SELECT 3 AS id, 'x' AS colour")
        raise AssertionError("an unknown column was accepted")
    except tarn.errors.InvalidArgument as error:
        assert "colour" in str(error) and "db.items" in str(error)

    run("CREATE TABLE db.cheap USING paimon PARTITIONED BY (band) TBLPROPERTIES ('primary-key' = 'id,band') "
        "AS SELECT id, name, CASE WHEN price < 2 THEN 'low' ELSE 'high' END AS band FROM db.items")
    cheap = catalog.load_table("db.cheap")
    assert (cheap.primary_keys, cheap.partition_keys) == (("id", "band"), ("band",))
    assert sorted(tuple(r) for r in run("SELECT id, name, band FROM db.cheap").collect()) == \
        [(1, None, "high"), (2, "pen", "low")]
    run("CREATE TABLE IF NOT EXISTS db.cheap USING paimon AS SELECT id, name, 'x' AS band FROM db.items")
    assert run("SELECT count(*) FROM db.cheap").first()[0] == 2  # left as it was


def test_call_expire_partitions(spark, tmp_path):
    """CALL sys.expire_partitions as Paimon's procedure: its arguments, one row per dropped
    partition, "No expired partitions." when none."""
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    tarn.spark.attach(spark, catalog)
    run = lambda statement: tarn.spark.sql(spark, statement)  # noqa: E731
    run("CREATE TABLE db.days (dt STRING, id BIGINT) USING paimon PARTITIONED BY (dt)")
    run("INSERT INTO db.days VALUES ('20200101', 1), ('20200102', 2), ('29990101', 3)")
    out = run("CALL sys.expire_partitions(table => 'db.days', expiration_time => '1 d', "
              "timestamp_formatter => 'yyyyMMdd', max_expires => 1)")
    assert [r.expired_partitions for r in out.collect()] == ["dt=20200101"]
    out = run("CALL sys.expire_partitions(table => 'db.days', expiration_time => '1 d', "
              "timestamp_formatter => 'yyyyMMdd')")
    assert [r.expired_partitions for r in out.collect()] == ["dt=20200102"]
    out = run("CALL sys.expire_partitions(table => 'db.days', expiration_time => '1 d', "
              "timestamp_formatter => 'yyyyMMdd')")
    assert [r.expired_partitions for r in out.collect()] == ["No expired partitions."]
    assert [r.id for r in run("SELECT id FROM db.days").collect()] == [3]
