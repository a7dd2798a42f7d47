"""tarn.spark on data-evolution tables: reading `_ROW_ID`, update writing files of the set
columns (the row-id join done in Spark), merge_into keyed on business columns, delete with
deletion vectors, and compaction; checked against a dict of row id -> row."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
import tarn.spark
from pyspark.sql import functions as F

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())])
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "deletion-vectors.enabled": "true"}


def _table(path: str) -> tarn.Table:
    root, _, name = path.rpartition("/")
    table = tarn.Catalog(root).create_table(f"db.{name}", SCHEMA, options=OPTIONS)
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["a", "b", "c"], "score": [1.0, 2.0, 3.0]}))
    table.write(pa.table({"id": pa.array([4, 5], pa.int32()), "name": ["d", "e"], "score": [4.0, 5.0]}))
    return table


def _by_row_id(table: tarn.Table) -> dict:
    rows = table.scan(columns=["id", "name", "score", "_ROW_ID"]).to_arrow().to_pylist()
    return {r.pop("_ROW_ID"): r for r in rows}


def test_spark_reads_row_ids(spark, path):
    table = _table(path)
    df = spark.read.format("tarn").option("columns", "id,_ROW_ID").load(table.root)
    assert sorted((r["id"], r["_ROW_ID"]) for r in df.collect()) == [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4)]


def test_spark_update_writes_only_the_set_column(spark, path):
    table = _table(path)
    snapshot = tarn.spark.update(spark, table.root, {"score": F.expr("score * 10")}, "id in (2, 4)")
    assert snapshot.id == 3
    assert _by_row_id(table) == {0: {"id": 1, "name": "a", "score": 1.0}, 1: {"id": 2, "name": "b", "score": 20.0},
                                 2: {"id": 3, "name": "c", "score": 3.0}, 3: {"id": 4, "name": "d", "score": 40.0},
                                 4: {"id": 5, "name": "e", "score": 5.0}}
    added = [e.file for e in table.live_entries(table.latest_snapshot()) if e.file.write_cols]
    assert sorted(f.write_cols for f in added) == [("score",), ("score",)]


def test_spark_merge_into_on_business_key(spark, path):
    table = _table(path)
    source = spark.createDataFrame([(2, "B", 22.0), (9, "i", 9.0)], "id int, name string, score double")
    tarn.spark.merge_into(spark, table.root, source, on="id", when_matched_update={"name": "source.name"},
                          when_not_matched_insert="*")
    found = _by_row_id(table)
    assert found[1] == {"id": 2, "name": "B", "score": 2.0}
    assert found[5] == {"id": 9, "name": "i", "score": 9.0} and len(found) == 6
    assert len(table.snapshots()) == 3  # one commit


def test_spark_delete_then_compact_keeps_row_ids(spark, path):
    table = _table(path)
    tarn.spark.update(spark, table.root, {"name": F.expr("upper(name)")})
    tarn.spark.delete(spark, table.root, "id = 3")
    tarn.spark.compact(spark, table.root, full=True)
    assert _by_row_id(table) == {0: {"id": 1, "name": "A", "score": 1.0}, 1: {"id": 2, "name": "B", "score": 2.0},
                                 3: {"id": 4, "name": "D", "score": 4.0}, 4: {"id": 5, "name": "E", "score": 5.0}}
