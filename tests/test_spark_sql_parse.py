"""tarn.spark.sql's reading of statements (tarn/spark/sql_plan.py), without Spark."""

from __future__ import annotations

import pytest

from tarn.errors import InvalidArgument
from tarn.spark.sql_plan import (AlterTable, Call, Clause, Column, CreateTable, Delete, Insert, Merge, Passthrough,
                                 Update, merge_arguments, plan)

TABLES = {"db.t", "db.s"}


def resolve(parts):
    if len(parts) == 3 and parts[0] == "cat":
        parts = parts[1:]
    name = ".".join(parts)
    return name if name in TABLES else None


def test_reads_of_attached_tables_go_through_views_and_time_travel_gets_its_own():
    done = plan("SELECT * FROM db.t VERSION AS OF 3 x JOIN cat.db.s ON x.id = s.id", resolve)
    assert done.sql == "SELECT * FROM `db.t VERSION AS OF 3` AS x JOIN `db.s` AS s ON x.id = s.id"
    assert done.reads == (("db.t VERSION AS OF 3", "db.t", (("versionasof", "3"),)), ("db.s", "db.s", ()))
    stamp = plan("SELECT * FROM db.t TIMESTAMP AS OF '2026-11-20 10:00:00'", resolve)
    assert stamp.reads[0][2] == (("timestampasof", "2026-11-20 10:00:00"),)
    tag = plan("SELECT * FROM db.t VERSION AS OF 'nightly'", resolve)
    assert tag.reads[0][2] == (("versionasof", "nightly"),)


@pytest.mark.parametrize("statement", ["SELECT * FROM other.t", "SHOW TABLES", "CREATE TABLE x (a INT) USING parquet",
                                       "INSERT INTO other.t VALUES (1)", "ALTER TABLE x.y UNSET TBLPROPERTIES ('a')"])
def test_other_statements_pass_unchanged(statement):
    assert plan(statement, resolve) == Passthrough(statement)


def test_create_table_as_paimon_spark_ddl():
    done = plan("CREATE TABLE IF NOT EXISTS db.n (id BIGINT NOT NULL, v STRING, dt STRING) USING paimon "
                "PARTITIONED BY (dt) COMMENT 'orders' TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2')", resolve)
    assert done == CreateTable("db.n", (Column("id", "BIGINT", False), Column("v", "STRING"), Column("dt", "STRING")),
                               ("id", "dt"), ("dt",), {"bucket": "2"}, "orders", True)
    assert plan("CREATE TABLE cat.db.n (a INT)", resolve).catalog == "cat"
    ctas = plan("CREATE TABLE db.n USING paimon PARTITIONED BY (a) AS SELECT 1 AS a, v FROM db.s", resolve)
    assert (ctas.columns, ctas.partition_keys, ctas.query) == (
        (), ("a",), Passthrough("SELECT 1 AS a, v FROM `db.s` AS s", (("db.s", "db.s", ()),)))
    with pytest.raises(InvalidArgument, match="AS SELECT takes its columns from the query"):
        plan("CREATE TABLE db.n (a INT) AS SELECT 1 AS a", resolve)
    commented = plan("CREATE TABLE db.c (a INT COMMENT 'the a') USING paimon", resolve)
    assert commented.columns == (Column("a", "INT", True, "the a"),)
    assert plan("INSERT INTO db.t BY NAME SELECT 1 AS id", resolve).by_name


def test_insert_update_delete():
    assert plan("INSERT OVERWRITE db.t PARTITION (dt = '1') SELECT id, v FROM db.s", resolve) == Insert(
        "db.t", Passthrough("SELECT id, v FROM `db.s` AS s", (("db.s", "db.s", ()),)), None, {"dt": "1"}, True)
    values = plan("INSERT INTO db.t (id, v) VALUES (1, 'a')", resolve)
    assert (values.columns, values.query.sql, values.overwrite) == (("id", "v"), "VALUES (1, 'a')", False)
    assert plan("UPDATE cat.db.t SET v = 'x', n = n + 1 WHERE id = 1", resolve) == Update(
        "db.t", {"v": "'x'", "n": "n + 1"}, "id = 1")
    assert plan("DELETE FROM db.t WHERE id IN (1, 2)", resolve) == Delete("db.t", "id IN (1, 2)")


def test_merge_clauses_map_onto_merge_into_in_sql_order():
    done = plan("MERGE INTO db.t AS t USING db.s AS s ON t.id = s.id AND s.dt = t.dt "
                "WHEN MATCHED AND s.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET * "
                "WHEN NOT MATCHED THEN INSERT (id, dt, v) VALUES (s.id, s.dt, upper(s.v))", resolve)
    assert isinstance(done, Merge) and done.on == ("id", "dt")
    assert done.clauses == (Clause(True, "delete", "source.v IS NULL"), Clause(True, "update", None, "*"),
                            Clause(False, "insert", None, {"id": "source.id", "dt": "source.dt", "v": "UPPER(source.v)"}))
    args = merge_arguments(done, ["id", "dt", "v"], "db.t")
    assert args["when_matched_delete"] == "(coalesce(source.v IS NULL, false))"
    assert args["when_matched_update"]["v"] == "CASE WHEN coalesce(true, false) THEN source.`v` ELSE target.`v` END"
    assert args["when_not_matched_insert"] == {"id": "source.id", "dt": "source.dt", "v": "UPPER(source.v)"}
    later = plan("MERGE INTO db.t USING (SELECT * FROM db.s) src ON db.t.id = src.id "
                 "WHEN MATCHED AND t.v = 'a' THEN UPDATE SET v = src.v WHEN MATCHED THEN DELETE", resolve)
    args = merge_arguments(later, ["id", "v"], "db.t")
    assert args == {"when_matched_update": {"v": "CASE WHEN coalesce(target.v = 'a', false) THEN source.v "
                                                 "ELSE target.`v` END"},
                    "when_matched_delete": "(true AND NOT coalesce(target.v = 'a', false))",
                    "when_not_matched_insert": None}
    plain = plan("MERGE INTO db.t t USING db.s s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                 "WHEN NOT MATCHED THEN INSERT *", resolve)
    assert merge_arguments(plain, ["id", "v"], "db.t") == {
        "when_matched_update": "*", "when_matched_delete": None, "when_not_matched_insert": "*"}


@pytest.mark.parametrize("statement, clause", [
    ("MERGE INTO db.t t USING db.s s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE", "NOT MATCHED BY SOURCE"),
    ("MERGE INTO db.t t USING db.s s ON t.id < s.id WHEN MATCHED THEN DELETE", "ON"),
    ("CALL sys.compact(table => 'db.t', order_by => 'a')", "order_by"),
    ("CALL sys.migrate_table('hive', 'db.t')", "migrate_table"),
    ("ALTER TABLE db.t ALTER COLUMN v TYPE BIGINT", "ALTER TABLE"),
])
def test_what_tarn_cannot_do_is_refused_naming_the_clause(statement, clause):
    with pytest.raises(InvalidArgument, match=clause):
        plan(statement, resolve)


def test_conditional_insert_is_refused_naming_the_clause():
    done = plan("MERGE INTO db.t t USING db.s s ON t.id = s.id WHEN NOT MATCHED AND s.v > 0 THEN INSERT *", resolve)
    with pytest.raises(InvalidArgument, match="WHEN NOT MATCHED AND source.v > 0"):
        merge_arguments(done, ["id", "v"], "db.t")


def test_calls_take_paimon_argument_names_and_positions():
    assert plan("CALL sys.compact(table => 'db.t', partitions => 'dt=1;dt=2', compact_strategy => 'minor')",
                resolve) == Call("compact", "db.t", {"partitions": "dt=1;dt=2", "compact_strategy": "minor"})
    assert plan("CALL sys.create_tag('db.t', 'nightly', 3)", resolve) == Call(
        "create_tag", "db.t", {"tag": "nightly", "snapshot": 3})
    assert plan("CALL sys.remove_orphan_files(table => 'db.t', dry_run => true)", resolve) == Call(
        "remove_orphan_files", "db.t", {"dry_run": True})


def test_alter_table_changes():
    assert plan("ALTER TABLE db.t ADD COLUMNS (c INT COMMENT 'x', d STRING)", resolve) == AlterTable(
        "db.t", (("add", Column("c", "INT", True, "x")), ("add", Column("d", "STRING"))))
    assert plan("ALTER TABLE db.t ADD COLUMN c INT AFTER v", resolve).changes == (
        ("add", Column("c", "INT", position=("after", "v"))),)
    assert plan("ALTER TABLE db.t RENAME COLUMN a TO b", resolve).changes == (("rename", "a", "b"),)
    assert plan("ALTER TABLE db.t DROP COLUMNS (a, b)", resolve).changes == (("drop", "a"), ("drop", "b"))
    assert plan("ALTER TABLE db.t SET TBLPROPERTIES ('a' = 'b')", resolve).changes == (("set", "a", "b"),)
    assert plan("ALTER TABLE db.t UNSET TBLPROPERTIES IF EXISTS ('a', 'c')", resolve).changes == (
        ("unset", "a"), ("unset", "c"))
