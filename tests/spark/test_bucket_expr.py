"""tarn's bucket function computed by Spark expressions equals tarn.bucket.bucket_ids."""

from __future__ import annotations

import datetime as dt
import json
import os
from contextlib import contextmanager

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
import tarn.spark
from tarn.bucket import bucket_ids
from tarn.errors import InvalidOption
from tarn.spark import bucket_expr
from tarn.spark.dataframe import BUCKET_COLUMN, by_bucket
from tarn.types import BIGINT, BOOLEAN, DATE, INT, SMALLINT, STRING, TINYINT, DataField

SPARK_TYPES = {"BIGINT": "bigint", "INT": "int", "SMALLINT": "smallint", "TINYINT": "tinyint",
               "BOOLEAN": "boolean", "DATE": "date"}
MAKERS = {"BIGINT": BIGINT, "INT": INT, "SMALLINT": SMALLINT, "TINYINT": TINYINT, "BOOLEAN": BOOLEAN, "DATE": DATE}
VALUES = {
    "BIGINT": st.integers(-2**63, 2**63 - 1),
    "INT": st.integers(-2**31, 2**31 - 1),
    "SMALLINT": st.integers(-2**15, 2**15 - 1),
    "TINYINT": st.integers(-128, 127),
    "BOOLEAN": st.booleans(),
    "DATE": st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1)),
}


def spark_buckets(spark, rows, fields, num_buckets, function="default"):
    schema = ", ".join(f"{f.name} {SPARK_TYPES[f.type.root]}" for f in fields)
    df = spark.createDataFrame(rows, schema)
    out = bucket_expr.with_bucket(df, [f.name for f in fields], fields, num_buckets, "b", function).toArrow()
    assert out.column_names == [f.name for f in fields] + ["b"]  # intermediate columns dropped
    return out.column("b").to_pylist(), out.select([f.name for f in fields])


@st.composite
def keyed_rows(draw):
    roots = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=4))
    fields = [DataField(i, f"c{i}", MAKERS[r]()) for i, r in enumerate(roots)]
    rows = draw(st.lists(st.tuples(*[st.one_of(st.none(), VALUES[r]) for r in roots]), min_size=1, max_size=20))
    return fields, rows, draw(st.integers(1, 1000))


@contextmanager
def checked_arithmetic(spark):
    yield bucket_expr.CHECKED


@pytest.fixture(params=["wrapping", "checked"])
def arithmetic(request, monkeypatch):
    """Both forms of the hash: int arithmetic parsed with ANSI mode off (classic sessions) and
    the ANSI-safe bigint form (where the mode cannot be switched, Spark Connect)."""
    if request.param == "checked":
        monkeypatch.setattr(bucket_expr, "_arithmetic", checked_arithmetic)
    return request.param


# each example is a Spark job (~2 s): 15 per arithmetic form keeps the suite short;
# TARN_HYPOTHESIS_PROFILE=long runs 100
@settings(max_examples=100 if os.environ.get("TARN_HYPOTHESIS_PROFILE") == "long" else 15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keyed_rows())
def test_expressions_hash_like_tarn(spark, arithmetic, case):
    fields, rows, num_buckets = case
    got, keys = spark_buckets(spark, rows, fields, num_buckets)
    assert got == bucket_ids(keys, fields, num_buckets).tolist()


@pytest.mark.parametrize("setting", [None, "true", "false"])
def test_the_sessions_ansi_mode_is_restored_and_rules_later_queries(spark, setting):
    if setting is None:
        spark.conf.unset("spark.sql.ansi.enabled")
    else:
        spark.conf.set("spark.sql.ansi.enabled", setting)
    try:
        fields = [DataField(0, "k", BIGINT())]
        got, keys = spark_buckets(spark, [(2**63 - 1,), (-2**63,), (7,)], fields, 5)
        assert got == bucket_ids(keys, fields, 5).tolist()  # the hash's products wrapped
        assert spark.conf.get("spark.sql.ansi.enabled", None) == setting  # as it was, unset included
        if setting != "false":
            with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
                spark.sql("SELECT CAST(2147483647 AS INT) * 2").collect()  # ANSI mode is back on
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def test_extremes_and_many_fields(spark, arithmetic):
    fields = [DataField(i, f"c{i}", BIGINT()) for i in range(30)]  # null bits spill into the second header word
    rows = [tuple(None if (i + j) % 3 == 0 else (-1) ** j * 2**62 + i for j in range(30)) for i in range(10)]
    rows.append(tuple([-2**63] * 30))
    got, keys = spark_buckets(spark, rows, fields, 97)
    assert got == bucket_ids(keys, fields, 97).tolist()


def test_unsupported_key_types_use_the_udf():
    assert bucket_expr.supported([DataField(0, "k", BIGINT()), DataField(1, "d", DATE())])
    assert not bucket_expr.supported([DataField(0, "k", STRING())])
    assert not bucket_expr.supported([])


@pytest.mark.parametrize("key_type", ["bigint", "string"])
def test_by_bucket_puts_each_bucket_in_one_partition(spark, path, key_type):
    """Both ways (expressions, Arrow UDF) route each row to the Spark partition of its bucket."""
    df = spark.range(0, 3000, numPartitions=3).selectExpr(f"cast(id * 7 AS {key_type}) AS k", "id AS v")
    tarn.spark.write(df.limit(0), path, **{"primary-key": "k", "bucket": "5"})
    table = tarn.load_table(path)
    shuffled = by_bucket(df, path)
    assert shuffled.columns == ["k", "v"]

    def tag(index, rows):
        for row in rows:
            yield (index, row.k)

    pairs = shuffled.rdd.mapPartitionsWithIndex(tag).collect()
    keys = pa.table({"k": pa.array([k for _, k in pairs], type=pa.int64() if key_type == "bigint" else pa.string())})
    buckets = bucket_ids(keys, [table.schema().field("k")], 5).tolist()
    assert len(pairs) == 3000
    assert {(p, b) for (p, _), b in zip(pairs, buckets)} == {(b, b) for b in buckets}  # partition i holds bucket i
    assert BUCKET_COLUMN not in shuffled.columns


def test_a_session_refusing_the_ansi_setting_hashes_ansi_safe(spark, monkeypatch):
    def refuse(key, value):
        raise RuntimeError(f"cannot modify {key}")

    monkeypatch.setattr(spark.conf, "set", refuse)
    with bucket_expr._arithmetic(spark) as arithmetic:
        assert arithmetic is bucket_expr.CHECKED
    fields = [DataField(0, "k", BIGINT()), DataField(1, "d", DATE())]
    rows = [(2**63 - 1, dt.date(2026, 1, 1)), (-5, None), (None, dt.date(1970, 1, 2))]
    got, keys = spark_buckets(spark, rows, fields, 7)
    assert got == bucket_ids(keys, fields, 7).tolist()


# ---------------------------------------------------------------------------------------------
# bucket-function.type = mod / hive (tarn.bucket, checked there against Java's algorithm)


@st.composite
def function_rows(draw, function):
    if function == "mod":
        roots = [draw(st.sampled_from(["INT", "BIGINT"]))]
    else:
        roots = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=5))
    fields = [DataField(i, f"c{i}", MAKERS[r]()) for i, r in enumerate(roots)]
    rows = draw(st.lists(st.tuples(*[st.one_of(st.none(), VALUES[r]) for r in roots]), min_size=1, max_size=20))
    return fields, rows, draw(st.integers(1, 1000))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(function_rows("mod"))
def test_mod_expression_equals_tarn(spark, case):
    fields, rows, num_buckets = case
    got, keys = spark_buckets(spark, rows, fields, num_buckets, "mod")
    assert got == bucket_ids(keys, fields, num_buckets, "mod").tolist()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(function_rows("hive"))
def test_hive_expression_equals_tarn(spark, case):
    fields, rows, num_buckets = case
    got, keys = spark_buckets(spark, rows, fields, num_buckets, "hive")
    assert got == bucket_ids(keys, fields, num_buckets, "hive").tolist()


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_function_expressions_known_answers_in_both_ansi_modes(spark, ansi):
    """floorMod of negative keys (ModBucketFunctionTest: -2 -> 3, -3 -> 2 of 5) and Hive's hash
    of a bigint (-1: 0xffffffff ^ 0xffffffff = 0) and of a row (31 * h + field), whatever the
    session's ANSI mode: the SQL never overflows."""
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        ints = [DataField(0, "k", INT())]
        assert spark_buckets(spark, [(-2,), (7,), (None,), (-2**31,)], ints, 5, "mod")[0] == [3, 2, 0, 2]
        longs = [DataField(0, "k", BIGINT())]
        assert spark_buckets(spark, [(-3,), (-2**63,), (2**63 - 1,)], longs, 7, "mod")[0] == [4, 6, 0]
        assert spark_buckets(spark, [(-1,), (2**32,), (5,)], longs, 1000, "hive")[0] == [0, 1, 5]
        pair = [DataField(0, "x", INT()), DataField(1, "y", BOOLEAN())]
        assert spark_buckets(spark, [(7, True), (-1, None)], pair, 1000, "hive")[0] == \
            [(31 * 7 + 1) % 1000, ((-31) & 0x7FFFFFFF) % 1000]  # -1 * 31 + 0 = -31
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def test_supported_by_function():
    assert bucket_expr.supported([DataField(0, "k", INT())], "mod")
    assert bucket_expr.supported([DataField(0, "k", BIGINT())], "MOD")
    assert not bucket_expr.supported([DataField(0, "k", SMALLINT())], "mod")
    assert not bucket_expr.supported([DataField(0, "k", INT()), DataField(1, "j", INT())], "mod")
    assert bucket_expr.supported([DataField(0, "k", DATE()), DataField(1, "b", BOOLEAN())], "hive")
    assert not bucket_expr.supported([DataField(0, "k", STRING())], "hive")  # strings: the Arrow UDF


@pytest.mark.parametrize("function, key_type", [("mod", "int"), ("hive", "bigint"), ("hive", "string")])
def test_by_bucket_routes_by_the_tables_function(spark, path, function, key_type):
    """Expressions (mod, hive of integers) and the Arrow UDF (hive of strings) put each row in the
    Spark partition of the bucket the table's function gives it; the write lands it there."""
    df = spark.range(-500, 500, numPartitions=3).selectExpr(f"cast(id * 7 AS {key_type}) AS k", "id AS v")
    tarn.spark.write(df.limit(0), path, **{"primary-key": "k", "bucket": "5", "bucket-function.type": function})
    table = tarn.load_table(path)
    shuffled = by_bucket(df, path)

    def tag(index, rows):
        for row in rows:
            yield (index, row.k)

    pairs = shuffled.rdd.mapPartitionsWithIndex(tag).collect()
    arrow_type = {"int": pa.int32(), "bigint": pa.int64(), "string": pa.string()}[key_type]
    keys = pa.table({"k": pa.array([k for _, k in pairs], type=arrow_type)})
    buckets = bucket_ids(keys, [table.schema().field("k")], 5, function).tolist()
    assert len(pairs) == 1000
    assert {(p, b) for (p, _), b in zip(pairs, buckets)} == {(b, b) for b in buckets}
    if function == "mod":
        assert {p for p, k in pairs if k == -7} == {(-7) % 5}  # floorMod: bucket 3
        tarn.spark.write(df, path)
        assert tarn.load_table(path).scan(filter="k = -7").to_arrow().column("v").to_pylist() == [-1]


def test_by_bucket_refuses_a_key_the_function_cannot_take(spark, path):
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.int64())])
    table = tarn.Catalog(os.path.dirname(path)).create_table("default.t", schema=schema, primary_key=["k"],
                                                            options={"bucket": "3"})
    document_path = os.path.join(table.root, "schema", "schema-0")
    with open(document_path) as source:
        document = json.load(source)
    document["options"]["bucket-function.type"] = "mod"  # as another engine could have made it
    with open(document_path, "w") as out:
        json.dump(document, out)
    df = spark.createDataFrame([("a", 1)], "k string, v bigint")
    with pytest.raises(InvalidOption, match="'bucket-function.type'='mod' needs a bucket key of type INT or BIGINT"):
        by_bucket(df, table.root)
