"""tarn.spark.delete and merge_into against a Python oracle, tarn errors first in what Spark
raises (read, write, task and streaming failures), and writes with option `like` creating a
table with the source's keys and options."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException, PySparkException

import tarn
import tarn.spark
from tests.helpers import canonical_rows

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("n", pa.int32())])
DDL = "dt string, id long, v string, n int"


def _rows(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)


def _table(path: str, bucket: str = "2", **options) -> tarn.Table:
    root, _, name = path.rpartition("/")
    catalog = tarn.Catalog(root)
    return catalog.create_table(f"db.{name}", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": bucket, **options})


def _content(table: tarn.Table) -> list[dict]:
    return canonical_rows(table.scan().to_arrow())


START = [("a", 1, "x", 1), ("a", 2, "y", 2), ("b", 3, "z", 3), ("b", 4, "w", 4)]


# ---------------------------------------------------------------------------------------------
# delete


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_delete_by_sql_condition_is_one_commit(spark, path, bucket):
    table = _table(path, bucket)
    table.write(_rows(START))
    snapshot = tarn.spark.delete(spark, table.root, "n % 2 = 0 or v = 'x'")
    assert snapshot.id == 2 and table.latest_snapshot().id == 2
    assert _content(table) == canonical_rows(_rows([("b", 3, "z", 3)]))


def test_delete_by_column_and_nothing_matched(spark, path):
    from pyspark.sql import functions as F

    table = _table(path)
    table.write(_rows(START))
    assert tarn.spark.delete(spark, table.root, F.col("id") > 100) is None
    assert table.latest_snapshot().id == 1
    tarn.spark.delete(spark, table.root, F.col("dt") == "a")
    assert _content(table) == canonical_rows(_rows(START[2:]))


def test_delete_on_append_table_rewrites_on_the_driver(spark, tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.a", schema=SCHEMA)
    table.write(_rows(START))
    assert tarn.spark.delete(spark, table.root, "id <= 2").commit_kind == "OVERWRITE"
    assert _content(table) == canonical_rows(_rows(START[2:]))
    from pyspark.sql import functions as F
    with pytest.raises(tarn.InvalidArgument, match="SQL-like text"):
        tarn.spark.delete(spark, table.root, F.col("id") > 1)
    with pytest.raises(tarn.InvalidFilter) as raised:  # a bad filter: tarn's error, its message first
        tarn.spark.delete(spark, table.root, "id = 'three'")
    assert _first_line(raised.value).startswith(f"table {table.root}: filter value 'three' does not fit column 'id'")
    assert "tarn's filter parser" in str(raised.value)


# ---------------------------------------------------------------------------------------------
# update


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_update_sets_expressions_on_matching_rows_in_one_commit(spark, path, bucket):
    from pyspark.sql import functions as F

    table = _table(path, bucket)
    table.write(_rows(START))
    snapshot = tarn.spark.update(spark, table.root, {"v": F.expr("upper(v) || '!'"), "n": F.col("n") * 10}, "n >= 3")
    assert snapshot.id == 2 and table.latest_snapshot().id == 2
    expected = START[:2] + [("b", 3, "Z!", 30), ("b", 4, "W!", 40)]
    assert _content(table) == canonical_rows(_rows(expected))
    assert tarn.spark.update(spark, table.root, {"n": 0}, "id > 100") is None


def test_update_refusals(spark, path, tmp_path):
    table = _table(path)
    table.write(_rows(START))
    with pytest.raises(tarn.InvalidArgument, match=r"cannot set primary-key column\(s\) \['id'\]"):
        tarn.spark.update(spark, table.root, {"id": "id + 1"})
    with pytest.raises(tarn.SchemaMismatch, match=r"unknown column\(s\) \['zz'\]"):
        tarn.spark.update(spark, table.root, {"zz": 1})
    appendable = tarn.Catalog(str(tmp_path / "other")).create_table("db.a", schema=SCHEMA)
    with pytest.raises(tarn.InvalidArgument, match="needs a primary-key or data-evolution table"):
        tarn.spark.update(spark, appendable.root, {"v": "x"})
    assert table.latest_snapshot().id == 1


# ---------------------------------------------------------------------------------------------
# merge_into


def _oracle_merge(start, source, update, delete, insert) -> list[tuple]:
    rows = {(r[0], r[1]): r for r in start}
    for s in source:
        key = (s[0], s[1])
        if key in rows:
            if delete(s, rows[key]):
                del rows[key]
            elif update is not None:
                rows[key] = update(s, rows[key])
        elif insert:
            rows[key] = s
    return list(rows.values())


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_merge_into_updates_deletes_and_inserts_in_one_commit(spark, path, bucket):
    table = _table(path, bucket)
    table.write(_rows(START))
    source_rows = [("a", 1, "X", 10), ("a", 2, "Y", -1), ("c", 9, "new", 9)]
    source = spark.createDataFrame(source_rows, DDL)
    snapshot = tarn.spark.merge_into(spark, table.root, source,
                                     when_matched_update={"n": "target.n + source.n", "v": "source.v"},
                                     when_matched_delete="source.n < 0")
    assert snapshot.id == 2 and table.latest_snapshot().id == 2
    expected = _oracle_merge(START, source_rows, lambda s, t: (t[0], t[1], s[2], t[3] + s[3]),
                             lambda s, t: s[3] < 0, insert=True)
    assert _content(table) == canonical_rows(_rows(expected))


def test_merge_into_star_and_no_insert(spark, path):
    table = _table(path)
    table.write(_rows(START))
    source_rows = [("b", 3, "Z", 30), ("c", 9, "new", 9)]
    tarn.spark.merge_into(spark, table.root, spark.createDataFrame(source_rows, DDL), on=["dt", "id"],
                          when_matched_update="*", when_not_matched_insert=None)
    expected = _oracle_merge(START, source_rows, lambda s, t: s, lambda s, t: False, insert=False)
    assert _content(table) == canonical_rows(_rows(expected))


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_merge_into_an_empty_table_inserts(spark, path, bucket):
    table = _table(path, bucket)
    tarn.spark.merge_into(spark, table.root, spark.createDataFrame(START, DDL))
    assert _content(table) == canonical_rows(_rows(START))


@pytest.mark.parametrize("kwargs, error, words", [
    ({"on": "id"}, tarn.InvalidArgument, "matches rows on the primary key"),
    ({"when_matched_update": "*", "dup": True}, tarn.InvalidArgument, "holds key"),
])
def test_merge_into_refusals(spark, path, kwargs, error, words):
    table = _table(path)
    table.write(_rows(START))
    rows = [("a", 1, "X", 10)] * (2 if kwargs.pop("dup", False) else 1)
    with pytest.raises(error, match=words):
        tarn.spark.merge_into(spark, table.root, spark.createDataFrame(rows, DDL), **kwargs)
    assert table.latest_snapshot().id == 1


def test_merge_into_null_delete_condition_updates_and_insert_dict(spark, path):
    table = _table(path)
    table.write(_rows(START))
    source = spark.createDataFrame([("a", 1, "X", None), ("c", 9, "new", 9)], DDL)
    tarn.spark.merge_into(spark, table.root, source, when_matched_update={"v": "source.v"},
                          when_matched_delete="source.n < 0",  # NULL for (a, 1): not deleted, updated
                          when_not_matched_insert={"dt": "source.dt", "id": "source.id", "n": "source.n * 2"})
    expected = [("a", 1, "X", 1)] + START[1:] + [("c", 9, None, 18)]
    assert _content(table) == canonical_rows(_rows(expected))


def test_merge_into_refuses_inserts_without_keys_and_sources_without_keys(spark, path):
    table = _table(path)
    with pytest.raises(tarn.InvalidArgument, match=r"must set the primary key column\(s\) \['id'\]"):
        tarn.spark.merge_into(spark, table.root, spark.createDataFrame(START, DDL),
                              when_not_matched_insert={"dt": "source.dt"})
    with pytest.raises(tarn.SchemaMismatch, match=r"lacks the key column\(s\) \['id'\]"):
        tarn.spark.merge_into(spark, table.root, spark.createDataFrame([("a", "x")], "dt string, v string"))
    assert table.latest_snapshot() is None


def test_merge_into_refuses_append_tables(spark, tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.a", schema=SCHEMA)
    with pytest.raises(tarn.InvalidArgument, match="needs a primary-key table"):
        tarn.spark.merge_into(spark, table.root, spark.createDataFrame(START, DDL))


# ---------------------------------------------------------------------------------------------
# tarn's message first


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0]


def test_bad_read_option_raises_tarn_error_first(spark, path):
    table = _table(path)
    table.write(_rows(START))
    path = table.root
    with pytest.raises(tarn.InvalidOption) as raised:
        spark.read.format("tarn").option("bukket", "2").load(path).collect()
    assert isinstance(raised.value, AnalysisException)  # still Spark's class too
    assert _first_line(raised.value).startswith(f"table {path}: unknown option 'bukket'")
    assert "closest Paimon option: 'bucket')" in _first_line(raised.value)
    assert len(str(raised.value).splitlines()) == 2 and "Traceback" not in str(raised.value)


def test_missing_table_raises_table_not_found_first(spark, path):
    with pytest.raises(tarn.TableNotFound) as raised:
        spark.read.format("tarn").load(path + "_nope").collect()
    assert _first_line(raised.value).startswith(f"no Paimon table at {path}_nope")


def test_bad_write_option_and_task_failure_raise_tarn_error_first(spark, path):
    table = _table(path, "1")
    table.write(_rows(START))
    path = table.root
    df = spark.createDataFrame([("a", 1, "x", 1)], DDL)
    with pytest.raises(tarn.InvalidOption) as raised:
        df.write.format("tarn").option("bukket", "3").mode("append").save(path)
    assert _first_line(raised.value).startswith(f"table {path}: unknown option 'bukket'")
    nulls = spark.createDataFrame([("a", None, "x", 1)], DDL)  # a null key: found by the write task
    with pytest.raises(tarn.SchemaMismatch) as raised:
        nulls.write.format("tarn").mode("append").save(path)
    assert isinstance(raised.value, PySparkException)
    assert _first_line(raised.value) == f"table {path}: primary key column 'id' has 1 null value(s)"
    assert table.latest_snapshot().id == 1


def test_streaming_batch_failure_raises_tarn_error_first(spark, tmp_path):
    from pyspark.errors import StreamingQueryException

    source = tarn.Catalog(str(tmp_path / "wh")).create_table("db.raw", schema=SCHEMA)
    source.write(_rows([("a", None, "x", 1)]))  # a null key: refused by the sink's write task
    target = _table(str(tmp_path / "wh" / "keyed"), "1")
    query = (spark.readStream.format("tarn").load(source.root).writeStream.format("tarn")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start(target.root))
    with pytest.raises(tarn.SchemaMismatch) as raised:
        query.awaitTermination()
    assert isinstance(raised.value, StreamingQueryException)
    assert _first_line(raised.value) == f"table {target.root}: primary key column 'id' has 1 null value(s)"


def test_spark_errors_without_tarn_inside_are_untouched(spark):
    with pytest.raises(AnalysisException) as raised:
        spark.sql("select nope_column from range(1)").collect()
    assert not isinstance(raised.value, tarn.TarnError)


# ---------------------------------------------------------------------------------------------
# option("like")


def test_streaming_copy_like_the_source_keeps_keys_and_options(spark, tmp_path):
    source = _table(str(tmp_path / "wh" / "src"), "2", **{"changelog-producer": "input"})
    source.write(_rows(START))
    source.write(_rows([("a", 1, "x2", 5)]))  # an update of key (a, 1)
    target = str(tmp_path / "wh" / "dst")
    query = (spark.readStream.format("tarn").option("scan.mode", "latest-full").load(source.root)
             .writeStream.format("tarn").option("like", source.root)
             .option("checkpointLocation", str(tmp_path / f"cp-{uuid.uuid4().hex[:6]}"))
             .trigger(availableNow=True).start(target))
    query.awaitTermination()
    copy = tarn.load_table(target)
    schema = copy.schema()
    assert schema.primary_keys == ("dt", "id") and schema.partition_keys == ("dt",)
    assert schema.options["bucket"] == "2" and schema.options["changelog-producer"] == "input"
    assert [f.type for f in schema.fields] == [f.type for f in source.schema().fields]
    assert _content(copy) == _content(source)
    copy.write(_rows([("a", 1, "x3", 6)]))  # keys still upsert
    assert len(copy.scan().to_arrow()) == 4


def test_batch_write_like_an_existing_table_with_other_keys_is_refused(spark, tmp_path):
    source = _table(str(tmp_path / "wh" / "src"))
    other = str(tmp_path / "wh" / "other")
    spark.createDataFrame([("a", 1, "x", 1)], DDL).write.format("tarn").mode("append").save(other)
    with pytest.raises(tarn.InvalidOption, match="option 'like' names table"):
        (spark.createDataFrame([("a", 1, "x", 1)], DDL).write.format("tarn").option("like", source.root)
         .mode("append").save(other))


def test_without_like_a_new_path_gets_an_append_table(spark, tmp_path):
    source = _table(str(tmp_path / "wh" / "src"))
    source.write(_rows(START))
    target = str(tmp_path / "wh" / "plain")
    spark.read.format("tarn").load(source.root).write.format("tarn").mode("append").save(target)
    assert tarn.load_table(target).primary_keys == ()


def test_cross_partition_tables_are_refused_with_the_local_alternative(spark, tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.cross", schema=SCHEMA, primary_key=["id"],
                                                     partition_keys=["dt"])
    table.write(_rows(START))
    with pytest.raises(tarn.InvalidArgument, match="cross-partition upsert table .* use Table.delete"):
        tarn.spark.delete(spark, table.root, "id = 1")
    assert table.latest_snapshot().id == 1


def test_local_and_spark_merges_agree_on_a_cdc_source(spark, tmp_path):
    """Issue 44 item 1: one feature set: a source column the table lacks (`op`), conditions on
    every clause, `when_not_matched_by_source_delete`; same rows and same counts locally and
    on Spark."""
    import pyarrow.compute as pc

    start = START + [("c", 5, "old", 5)]
    cdc = [("a", 1, "X", 10, "U"), ("a", 2, "Y", 20, "D"), ("b", 7, "new", 7, "I"), ("b", 8, "skip", -1, "I")]
    arrow_cdc = pa.table({"dt": [r[0] for r in cdc], "id": [r[1] for r in cdc], "v": [r[2] for r in cdc],
                          "n": pa.array([r[3] for r in cdc], pa.int32()), "op": [r[4] for r in cdc]})
    local = _table(str(tmp_path / "local"))
    on_spark = _table(str(tmp_path / "spark"))
    for t in (local, on_spark):
        t.write(_rows(start))
    mine = local.merge(arrow_cdc, on=["dt", "id"], when_matched_delete="source.op = 'D'",
                       when_matched_update="*", matched_update_if=pc.field("source.n") > pc.field("target.n"),
                       when_not_matched_insert="*", not_matched_insert_if="source.n > 0",
                       when_not_matched_by_source_delete="target.dt = 'c'")
    theirs = tarn.spark.merge_into(spark, on_spark.root, spark.createDataFrame(cdc, DDL + ", op string"),
                                   when_matched_delete="source.op = 'D'", when_matched_update="*",
                                   matched_update_if="source.n > target.n", when_not_matched_insert="*",
                                   not_matched_insert_if="source.n > 0",
                                   when_not_matched_by_source_delete="target.dt = 'c'")
    assert _content(local) == _content(on_spark) == canonical_rows(_rows(
        [("a", 1, "X", 10), ("b", 3, "z", 3), ("b", 4, "w", 4), ("b", 7, "new", 7)]))
    assert (mine.rows_inserted, mine.rows_updated, mine.rows_deleted) == \
        (theirs.rows_inserted, theirs.rows_updated, theirs.rows_deleted) == (1, 1, 2)
