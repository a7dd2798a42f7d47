"""Table statistics (ANALYZE): the Java text of min/max, the statistics file, the values
`analyze` gathers against a pyarrow oracle of the merged table, distinct-count accuracy, the
lifecycle of statistics files (carried on, dropped after a schema change, expiry, rollback,
orphans, tags), reading them back (`statistics()`, `$statistics`), and counts and estimates
answered from metadata."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tarn
from tarn.errors import CorruptFile, FileMissing, SchemaMismatch, SnapshotNotFound
from tarn.ops import analyze as S
from tarn.ops.orphans import remove_orphan_files
from tarn.meta.statistics import (ColStats, Statistics, java_float_text, parse_java_float, text_of,
                                  timestamp_text, value_of)
from tarn.scan import reader as scan_reader
from tarn.types import parse_type
from tests.maintenance_checks import missing_files, unreferenced_files

FAR_FUTURE = int(time.time() * 1000) + 10**9

# (type, Python value, the text Java Paimon 1.0 wrote for it). Produced by javaref's
# commit-statistics, which hands Paimon internal values to StatsFileHandler.writeStats
# (serializeToString of each type's serializer); see tests/interop/test_statistics_interop.py,
# which checks these against Java again.
JAVA_VECTORS = [
    ("BOOLEAN", False, "false"), ("BOOLEAN", True, "true"),
    ("TINYINT", -128, "-128"), ("TINYINT", 127, "127"),
    ("SMALLINT", -32768, "-32768"), ("SMALLINT", 32767, "32767"),
    ("INT", -2147483648, "-2147483648"), ("INT", 2147483647, "2147483647"),
    ("BIGINT", -9223372036854775808, "-9223372036854775808"), ("BIGINT", 9223372036854775807, "9223372036854775807"),
    ("FLOAT", float("-inf"), "-Infinity"), ("FLOAT", float(np.float32(1.1)), "1.1"),
    ("DOUBLE", 1e-5, "1.0E-5"), ("DOUBLE", 1e20, "1.0E20"),
    ("DECIMAL(10, 2)", decimal.Decimal("-12.30"), "-12.30"), ("DECIMAL(10, 2)", decimal.Decimal("0.05"), "0.05"),
    ("DECIMAL(38, 10)", decimal.Decimal("-1234567890123456789012345678.0123456789"),
     "-1234567890123456789012345678.0123456789"),
    ("DECIMAL(38, 10)", decimal.Decimal("0E-10"), "0.0000000000"),
    ("STRING", 'a"b', 'a"b'), ("STRING", "zé", "zé"), ("CHAR(5)", "abcde", "abcde"),
    ("DATE", dt.date(1969, 12, 31), "-1"), ("DATE", dt.date(2024, 2, 29), "19782"),
    ("TIME(3)", dt.time(0, 0), "0"), ("TIME(3)", dt.time(23, 59, 59, 999000), "86399999"),
    ("TIMESTAMP(0)", dt.datetime(2024, 1, 1), "2024-01-01 00:00:00"),
    ("TIMESTAMP(0)", dt.datetime(2024, 1, 1, 12, 34, 56), "2024-01-01 12:34:56"),
    ("TIMESTAMP(3)", dt.datetime(2024, 1, 1), "2024-01-01 00:00:00.000"),
    ("TIMESTAMP(3)", dt.datetime(2024, 1, 1, 12, 34, 56, 120000), "2024-01-01 12:34:56.120"),
    ("TIMESTAMP(6)", dt.datetime(1960, 1, 1), "1960-01-01 00:00:00.000000"),
    ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 12, 34, 56, 123456), "2024-01-01 12:34:56.123456"),
    ("TIMESTAMP(9)", 1704067200000000001, "2024-01-01 00:00:00.000000001"),
    ("TIMESTAMP(9)", dt.datetime(2024, 1, 1, 12, 34, 56, 100000), "2024-01-01 12:34:56.100000000"),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
     "2024-01-01 00:00:00.000000"),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", dt.datetime(2024, 6, 1, 12, 0, 0, 500000, tzinfo=dt.timezone.utc),
     "2024-06-01 12:00:00.500000"),
]

# Java's Float.toString / Double.toString (JDK 17) of values whose text has a known shape.
JAVA_DOUBLES = [(0.1, "0.1"), (100.0, "100.0"), (1e7, "1.0E7"), (1234567.0, "1234567.0"), (0.001, "0.001"),
                (1e-4, "1.0E-4"), (-0.0, "-0.0"), (0.0, "0.0"), (math.nan, "NaN"), (math.inf, "Infinity"),
                (5e-324, "4.9E-324"), (1.7976931348623157e308, "1.7976931348623157E308"), (-2.5, "-2.5"),
                (123456.789, "123456.789"), (1.0e-3 * 3, "0.003"),
                # JDK 8-18 (Paimon's JDKs) are not always shortest; values checked against Java 17
                (1e23, "9.999999999999999E22"), (2.3780253101263498e18, "2.3780253101263498E18"),
                (1e-323, "1.0E-323"), (1.8617186635765542e18, "1.86171866357655424E18"),
                (3.645561009778199e-304, "3.6455610097781987E-304")]
JAVA_FLOATS = [(3.4028234663852886e38, "3.4028235E38"), (1.401298464324817e-45, "1.4E-45"), (0.1, "0.1"),
               (16777216.0, "1.6777216E7"), (1.5, "1.5"), (6.7569209e17, "6.7569209E17"),
               (9.671406556917033e24, "9.6714065E24")]


@pytest.mark.parametrize("type_text, value, java", JAVA_VECTORS)
def test_min_max_text_is_what_java_writes(type_text, value, java):
    t = parse_type(type_text)
    assert text_of(value, t) == java
    back = value_of(java, t)
    assert text_of(back, t) == java
    if not isinstance(value, int) or type_text.startswith(("TINY", "SMALL", "INT", "BIG")):
        assert back == value or (isinstance(back, float) and math.isclose(back, value))


@pytest.mark.parametrize("value, java", JAVA_DOUBLES)
def test_double_text(value, java):
    assert java_float_text(value) == java
    back = parse_java_float(java)
    assert (math.isnan(back) and math.isnan(value)) or back == value


@pytest.mark.parametrize("value, java", JAVA_FLOATS)
def test_float_text(value, java):
    assert java_float_text(float(np.float32(value)), single=True) == java


def test_reading_java_texts_leniently():
    assert value_of("TRUE", parse_type("BOOLEAN")) is True
    assert value_of("yes", parse_type("BOOLEAN")) is False  # Boolean.valueOf
    assert parse_java_float("1.5f") == 1.5 and parse_java_float("-Infinity") == -math.inf
    assert parse_java_float("0x1.0p3") == 8.0
    assert value_of("1.005", parse_type("DECIMAL(5, 2)")) == decimal.Decimal("1.01")  # HALF_UP
    assert value_of("123456", parse_type("DECIMAL(5, 2)")) is None  # overflow: Paimon reads null
    ts = parse_type("TIMESTAMP(3)")
    assert value_of("2024-01-01T10:20", ts) == dt.datetime(2024, 1, 1, 10, 20)
    assert value_of("2024-1-2 03:04:05.123999", ts) == dt.datetime(2024, 1, 2, 3, 4, 5, 123000)  # floor
    assert value_of("2024-01-02", ts) == dt.datetime(2024, 1, 2)
    assert timestamp_text(0, 9) == "1970-01-01 00:00:00.000000000"
    for bad, type_text in [("x", "INT"), ("128", "TINYINT"), ("1.5", "BIGINT"), ("nope", "DOUBLE"),
                           ("2024/01/01", "TIMESTAMP(3)"), ("abc", "DECIMAL(5, 2)")]:
        with pytest.raises(ValueError):
            value_of(bad, parse_type(type_text))
    # types without a text form: never written, ignored when read
    for type_text in ("BYTES", "BINARY(4)"):
        assert text_of(b"ab", parse_type(type_text)) is None
        assert value_of("ab", parse_type(type_text)) is None


def test_statistics_file_json():
    # FORMAT.md section 9, verified with Java
    text = ('{"snapshotId":5,"schemaId":0,"mergedRecordCount":10,"mergedRecordSize":1000,"colStats":{"a":'
            '{"colId":0,"distinctCount":3,"min":"1","max":"9","nullCount":0,"avgLen":4,"maxLen":4}}}')
    stats = Statistics.from_json(text)
    assert stats.to_dict() == json.loads(text)
    assert stats.col_stats["a"] == ColStats(0, 3, None, None, 0, 4, 4, "1", "9")
    typed = stats.typed([tarn.types.DataField(0, "a", parse_type("INT"))])
    assert (typed.col_stats["a"].min, typed.col_stats["a"].max) == (1, 9)
    # absent values are left out, never null; Jackson's pretty printing
    bare = Statistics(7, 1, None, None, {"x": ColStats(3, null_count=2)})
    assert bare.to_json() == ('{\n  "snapshotId" : 7,\n  "schemaId" : 1,\n  "colStats" : {\n    "x" : {\n'
                              '      "colId" : 3,\n      "nullCount" : 2\n    }\n  }\n}')
    assert Statistics.from_json('{"snapshotId": 1, "schemaId": 0}').col_stats == {}
    for bad in ("nope", "[]", '{"schemaId": 0}', '{"snapshotId": 1, "schemaId": 0, "colStats": {"a": {}}}',
                '{"snapshotId": 1, "schemaId": 0, "colStats": {"a": {"colId": 0, "min": 5}}}',
                '{"snapshotId": 1, "schemaId": 0, "mergedRecordCount": "ten"}'):
        with pytest.raises(CorruptFile):
            Statistics.from_json(bad, "f")
    with pytest.raises(CorruptFile, match="column 'a', which schema 0 does not have"):
        stats.typed([tarn.types.DataField(0, "b", parse_type("INT"))], "f")


# ---------------------------------------------------------------------------------------------
# distinct counts


def test_distinct_counter_exact_below_the_limit_and_merges():
    rng = np.random.default_rng(1)
    hashes = S.hash_words(rng.integers(0, 50_000, 300_000))
    whole = S.DistinctCounter()
    whole.add(hashes)
    parts = [S.DistinctCounter() for _ in range(3)]
    for i, part in enumerate(parts):
        part.add(hashes[i::3])
    merged = S.DistinctCounter()
    for part in parts:
        merged.merge(part)
    truth = len(np.unique(hashes))
    assert whole.is_exact and merged.is_exact
    assert whole.count() == merged.count() == truth
    assert np.array_equal(whole.registers, merged.registers)


@pytest.mark.parametrize("n", [150_000, 1_000_000, 3_000_000])
def test_hyperloglog_error_within_two_percent(n):
    rng = np.random.default_rng(n)
    values = rng.permutation(n * 2)[:n]  # n distinct values
    counter = S.DistinctCounter()
    for chunk in np.array_split(values, 7):
        counter.add(S.hash_words(np.concatenate([chunk, chunk[: len(chunk) // 3]])))  # repeats too
    assert not counter.is_exact
    assert abs(counter.count() - n) / n < 0.02


def test_string_hashes_depend_on_the_bytes_only():
    words = ["", "a", "ab", "abcdefgh", "abcdefghi", "abcdefgh\0", "x" * 100, "é", "abcdefghabcdefgh"]
    arr = pa.array(words + [None] + words)
    hashes = S.value_hashes(arr, "VARCHAR")
    assert len(hashes) == 2 * len(words)
    assert list(hashes[: len(words)]) == list(hashes[len(words):])
    assert len(set(hashes[: len(words)].tolist())) == len(words)
    sliced = S.value_hashes(arr.slice(len(words) + 1), "VARCHAR")
    assert list(sliced) == list(hashes[len(words):])
    large = S.value_hashes(pa.array(words, pa.large_string()), "VARCHAR")
    assert list(large) == list(hashes[: len(words)])
    floats = S.value_hashes(pa.array([0.0, -0.0, math.nan, float("nan"), 1.0]), "DOUBLE")
    assert floats[0] == floats[1] and floats[2] == floats[3] and floats[0] != floats[4]


# ---------------------------------------------------------------------------------------------
# analyze against an oracle


ALL_TYPES = pa.schema([
    ("b", pa.bool_()), ("ti", pa.int8()), ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()),
    ("d", pa.float64()), ("dec", pa.decimal128(10, 2)), ("s", pa.string()), ("bin", pa.binary()),
    ("dt", pa.date32()), ("tm", pa.time32("ms")), ("ts", pa.timestamp("us")), ("ts9", pa.timestamp("ns")),
    ("ltz", pa.timestamp("us", tz="UTC")), ("arr", pa.list_(pa.int32())),
    ("st", pa.struct([("x", pa.int32())])), ("m", pa.map_(pa.string(), pa.int32()))])


def all_types_rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    null = rng.random(n) < 0.1

    def arr(values, t):
        return pa.array(values, t, mask=null)

    floats = rng.normal(size=n).astype(np.float32)
    floats[rng.random(n) < 0.01] = np.nan
    return pa.table({
        "b": arr(rng.random(n) < 0.5, pa.bool_()),
        "ti": arr(rng.integers(-128, 128, n), pa.int8()),
        "i": arr(rng.integers(-1000, 1000, n), pa.int32()),
        "l": arr(rng.integers(-(1 << 62), 1 << 62, n), pa.int64()),
        "f": arr(floats, pa.float32()),
        "d": arr(rng.normal(size=n) * 1e6, pa.float64()),
        "dec": arr([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**6, 10**6, n)], pa.decimal128(10, 2)),
        "s": arr([f"s{'é' * int(v % 3)}{v}" for v in rng.integers(0, 5000, n)], pa.string()),
        "bin": arr([bytes(int(v % 7)) for v in rng.integers(0, 100, n)], pa.binary()),
        "dt": arr(rng.integers(-1000, 30000, n).astype(np.int32), pa.date32()),
        "tm": arr(rng.integers(0, 86_400_000, n).astype(np.int32), pa.time32("ms")),
        "ts": arr(rng.integers(0, 2 * 10**15, n), pa.timestamp("us")),
        "ts9": arr(rng.integers(0, 2 * 10**18, n), pa.timestamp("ns")),
        "ltz": arr(rng.integers(0, 2 * 10**15, n), pa.timestamp("us", tz="UTC")),
        "arr": pa.array([[int(v)] for v in rng.integers(0, 5, n)], pa.list_(pa.int32()), mask=null),
        "st": pa.array([{"x": int(v)} for v in rng.integers(0, 5, n)], ALL_TYPES.field("st").type, mask=null),
        "m": pa.array([[("k", int(v))] for v in rng.integers(0, 5, n)], ALL_TYPES.field("m").type, mask=null),
    }, schema=ALL_TYPES)


def oracle(table: pa.Table, name: str, t) -> dict:
    """What the statistics of column `name` must be, computed with pyarrow on the merged rows."""
    col = table.column(name)
    nulls = col.null_count
    root = t.root
    if root in ("ARRAY", "MAP", "ROW", "MULTISET"):
        return {"null_count": nulls, "distinct_count": None, "min": None, "max": None, "avg_len": None,
                "max_len": None}
    valid = pc.drop_null(col)
    if pa.types.is_floating(col.type):
        values = valid.to_numpy()
        values = np.where(values == 0, 0.0, values)
        distinct = len(set(v for v in values.tolist() if v == v)) + (1 if np.isnan(values).any() else 0)
    else:
        distinct = pc.count_distinct(valid).as_py()
    expected = {"null_count": nulls, "distinct_count": distinct}
    if root in ("VARCHAR", "CHAR", "BINARY", "VARBINARY"):
        lengths = pc.utf8_length(valid) if root in ("VARCHAR", "CHAR") else pc.binary_length(valid)
        size = S.default_size(t)
        expected.update(min=None, max=None,
                        avg_len=math.ceil(pc.sum(lengths).as_py() / len(valid)) if len(valid) else size,
                        max_len=pc.max(lengths).as_py() if len(valid) else size)
        return expected
    if pa.types.is_floating(col.type):
        values = valid.to_numpy()
        finite = values[~np.isnan(values)]
        low = float(finite.min()) if len(finite) else math.nan
        high = math.nan if np.isnan(values).any() else float(values.max())
    else:
        mm = pc.min_max(valid)
        low, high = mm["min"].as_py(), mm["max"].as_py()
    expected.update(min=low, max=high, avg_len=S.default_size(t), max_len=S.default_size(t))
    return expected


def check_against_oracle(stats, merged: pa.Table, schema, exact: bool = True):
    assert stats.merged_record_count == merged.num_rows
    for f in schema.fields:
        got = stats.col_stats[f.name]
        want = oracle(merged, f.name, f.type)
        assert got.col_id == f.id
        for key in ("null_count", "avg_len", "max_len"):
            assert getattr(got, key) == want[key], (f.name, key)
        for key in ("min", "max"):
            a, b = getattr(got, key), want[key]
            if isinstance(a, float) and math.isnan(a):
                assert isinstance(b, float) and math.isnan(b), (f.name, key)
            elif f.type.root == "TIMESTAMP" and f.type.precision == 9 and b is not None:
                assert pa.scalar(a, pa.timestamp("ns")) == pa.scalar(b, pa.timestamp("ns")), (f.name, key)
            else:
                assert a == b, (f.name, key, a, b)
        if want["distinct_count"] is None:
            assert got.distinct_count is None
        elif exact or want["distinct_count"] <= S.EXACT_DISTINCT_LIMIT:
            assert got.distinct_count == want["distinct_count"], f.name
        else:
            assert abs(got.distinct_count - want["distinct_count"]) <= 0.02 * want["distinct_count"], f.name


def test_analyze_append_table_every_type(catalog):
    t = catalog.create_table("db.all", schema=ALL_TYPES)
    t.write(all_types_rows(3000, 1))
    t.write(all_types_rows(2000, 2))
    snapshot = t.analyze()
    assert snapshot.commit_kind == "ANALYZE" and snapshot.delta_record_count == 0
    assert snapshot.total_record_count == 5000
    merged = t.scan().to_arrow()
    stats = t.statistics()
    assert stats.snapshot_id == snapshot.id - 1 and stats.schema_id == 0
    check_against_oracle(stats, merged, t.schema())
    sizes = sum(e.file.file_size for e in t.live_entries(snapshot))
    assert stats.merged_record_size == sizes  # nothing merged away
    # nested types: nulls only, as Paimon
    assert stats.col_stats["arr"] == ColStats(t.schema().field("arr").id, null_count=merged.column("arr").null_count)
    # the file says what Java would write
    raw = json.loads(open(os.path.join(t.root, "statistics", snapshot.statistics)).read())
    assert snapshot.statistics.startswith("stat-") and snapshot.statistics.endswith("-0")
    assert set(raw["colStats"]["s"]) == {"colId", "distinctCount", "nullCount", "avgLen", "maxLen"}
    assert raw["colStats"]["dt"]["min"] == str((stats.col_stats["dt"].min - dt.date(1970, 1, 1)).days)
    assert raw["colStats"]["f"]["max"] == "NaN"


def test_analyze_primary_key_table_counts_merged_rows(catalog):
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.float64()), ("s", pa.string())])
    t = catalog.create_table("db.pk", schema=schema, primary_key=["k"], options={"bucket": "3", "write-only": "true"})
    rng = np.random.default_rng(3)
    for i in range(4):
        keys = rng.integers(0, 2000, 1500)
        t.write(pa.table({"k": keys, "v": rng.normal(size=1500), "s": [f"v{i}-{k % 97}" for k in keys]}, schema=schema))
    t.delete(pa.table({"k": list(range(0, 400))}))
    merged = t.scan().to_arrow()
    snapshot = t.analyze()
    stats = t.statistics()
    check_against_oracle(stats, merged, t.schema())
    total = t.snapshot(stats.snapshot_id).total_record_count
    assert total > merged.num_rows
    sizes = sum(e.file.file_size for e in t.live_entries(snapshot))
    assert stats.merged_record_size == int(sizes * merged.num_rows / total)


def test_analyze_beyond_the_exact_limit(catalog, monkeypatch):
    monkeypatch.setattr(S, "EXACT_DISTINCT_LIMIT", 2000)
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("low", pa.int32())])
    t = catalog.create_table("db.big", schema=schema)
    rng = np.random.default_rng(5)
    for _ in range(3):
        a = rng.integers(0, 60_000, 40_000)
        t.write(pa.table({"a": a, "s": [f"x{v}" for v in a], "low": (a % 50).astype(np.int32)}, schema=schema))
    t.analyze()
    stats = t.statistics()
    merged = t.scan().to_arrow()
    check_against_oracle(stats, merged, t.schema(), exact=False)
    assert stats.col_stats["low"].distinct_count == 50


def test_analyze_named_columns_and_errors(catalog):
    t = catalog.create_table("db.cols", schema=ALL_TYPES)
    assert t.analyze() is None  # no snapshot: nothing to analyze
    assert t.statistics() is None
    t.write(all_types_rows(500, 7))
    t.analyze(columns=["s", "i", "s"])
    stats = t.statistics()
    assert list(stats.col_stats) == ["s", "i"] and stats.merged_record_count == 500
    with pytest.raises(SchemaMismatch, match=r"unknown column\(s\) \['nope'\]"):
        t.analyze(columns=["i", "nope"])
    with pytest.raises(SchemaMismatch):
        t.analyze(columns="i")
    t.analyze(columns=[])
    stats = t.statistics()
    assert stats.col_stats == {} and stats.merged_record_count == 500 and stats.merged_record_size > 0


def test_statistics_of_an_older_snapshot_and_the_system_table(catalog):
    t = catalog.create_table("db.sys", schema=ALL_TYPES)
    assert t.system_table("statistics").to_arrow().num_rows == 0
    t.write(all_types_rows(100, 1))
    first = t.analyze(columns=["i"])
    t.write(all_types_rows(100, 2))
    t.analyze(columns=["l"])
    assert list(t.statistics(first.id).col_stats) == ["i"]
    assert list(t.statistics().col_stats) == ["l"]
    assert t.statistics(1) is None
    with pytest.raises(SnapshotNotFound):
        t.statistics(99)
    rows = t.system_table("$statistics").to_arrow()
    assert rows.schema.names == ["snapshot_id", "schema_id", "mergedRecordCount", "mergedRecordSize", "colstat"]
    row = rows.to_pylist()[0]
    assert row["snapshot_id"] == 3 and row["mergedRecordCount"] == 200
    assert json.loads(row["colstat"]) == {"l": t.statistics().col_stats["l"].to_dict()}


# ---------------------------------------------------------------------------------------------
# lifecycle


def simple_table(catalog, name="db.life", **options):
    schema = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    return catalog.create_table(name, schema=schema, partition_keys=["p"],
                                options={k: str(v) for k, v in options.items()})


def rows_of(p, ks):
    return pa.table({"p": [p] * len(ks), "k": list(ks), "v": [f"v{k}" for k in ks]})


def test_statistics_carried_on_until_the_schema_changes(catalog):
    t = simple_table(catalog)
    t.write(rows_of("a", [1, 2]))
    analyzed = t.analyze()
    t.write(rows_of("a", [3]))
    t.compact(full=True) if t.primary_keys else None
    assert t.latest_snapshot().statistics == analyzed.statistics
    assert t.statistics().snapshot_id == 1  # outdated, still kept (the PIP's rule)
    t.alter(tarn.AddColumn("w", tarn.types.INT()))
    t.write(rows_of("a", [4]).append_column("w", pa.array([1], pa.int32())))
    assert t.latest_snapshot().statistics is None
    t.analyze()
    stats = t.statistics()
    assert stats.schema_id == 1 and "w" in stats.col_stats


def test_analyze_after_an_alter_without_commits_uses_the_new_schema(catalog):
    t = simple_table(catalog, "db.alter")
    t.write(rows_of("a", [1]))
    t.alter(tarn.AddColumn("w", tarn.types.INT()))
    t.analyze()
    assert t.statistics().schema_id == 1 and t.statistics().col_stats["w"].null_count == 1
    t.write(rows_of("a", [2]).append_column("w", pa.array([1], pa.int32())))
    assert t.latest_snapshot().statistics is not None  # gathered with schema 1, the commit's schema


def test_expiry_keeps_exactly_the_referenced_statistics_files(catalog):
    t = simple_table(catalog, "db.expire")
    names = []
    for i in range(4):
        t.write(rows_of("a", [i]))
        names.append(t.analyze().statistics)
    t.create_tag("keep", 2)  # snapshot 2 is the first ANALYZE: carries names[0]
    t.write(rows_of("b", [9]))
    expired = t.expire_snapshots(retain_min=2, older_than_ms=FAR_FUTURE)
    assert expired > 0
    stat_dir = os.path.join(t.root, "statistics")
    assert sorted(os.listdir(stat_dir)) == sorted([names[0], names[3]])
    assert not missing_files(t) and not unreferenced_files(t)
    t.delete_tag("keep")
    assert sorted(os.listdir(stat_dir)) == [names[3]]
    assert t.statistics().snapshot_id == 7


def test_rollback_removes_statistics_only_later_snapshots_used(catalog):
    t = simple_table(catalog, "db.rollback")
    t.write(rows_of("a", [1]))
    early = t.analyze()
    t.write(rows_of("a", [2]))
    late = t.analyze()
    t.rollback_to(early.id + 1)  # the APPEND after the first ANALYZE still carries it
    stat_dir = os.path.join(t.root, "statistics")
    assert os.listdir(stat_dir) == [early.statistics]
    assert late.statistics not in os.listdir(stat_dir)
    assert not missing_files(t) and not unreferenced_files(t)


def test_orphan_removal_keeps_referenced_statistics(catalog):
    t = simple_table(catalog, "db.orphans")
    t.write(rows_of("a", [1]))
    kept = t.analyze().statistics
    stat_dir = os.path.join(t.root, "statistics")
    for stray in ("stat-00000000-0000-0000-0000-000000000000-0", "stats-11111111-1111-1111-1111-111111111111-0"):
        open(os.path.join(stat_dir, stray), "w").write("{}")
    removed = remove_orphan_files(t, older_than=FAR_FUTURE)
    assert sorted(os.path.basename(p) for p in removed) == [
        "stat-00000000-0000-0000-0000-000000000000-0", "stats-11111111-1111-1111-1111-111111111111-0"]
    assert os.listdir(stat_dir) == [kept]


def test_a_failed_analyze_commit_leaves_no_statistics_file(catalog, monkeypatch):
    t = simple_table(catalog, "db.fail")
    t.write(rows_of("a", [1]))

    def boom(*args, **kwargs):
        raise tarn.CommitConflict("lost")

    monkeypatch.setattr(tarn.commit.committer.Committer, "commit_statistics", boom)
    with pytest.raises(tarn.CommitConflict):
        t.analyze()
    assert os.listdir(os.path.join(t.root, "statistics")) == []
    assert t.latest_snapshot().id == 1


def test_broken_statistics_files(catalog):
    t = simple_table(catalog, "db.broken")
    t.write(rows_of("a", [1, 2]))
    name = t.analyze().statistics
    path = os.path.join(t.root, "statistics", name)
    with open(path, "w") as f:
        f.write("not json")
    with pytest.raises(CorruptFile, match=name):
        t.statistics()
    assert t.scan().count() == 2  # scans never fail because of statistics
    assert t.scan().to_arrow().num_rows == 2
    os.remove(path)
    with pytest.raises(FileMissing, match="analyze"):
        t.statistics()
    with pytest.raises(FileMissing):
        t.system_table("statistics")
    assert [e.rows for e in t.scan().estimates()] == [2]
    t.write(rows_of("a", [3]))  # a dangling file is not carried on
    assert t.latest_snapshot().statistics is None and t.statistics() is None


# ---------------------------------------------------------------------------------------------
# counts and estimates from metadata


def no_data_reads(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("a data file was read")

    monkeypatch.setattr(scan_reader.SplitReader, "read_chunks", fail)


def test_count_of_append_tables_reads_no_data(catalog, monkeypatch):
    t = simple_table(catalog, "db.count", **{"deletion-vectors.enabled": "true"})
    t.write(rows_of("a", range(10)))
    t.write(rows_of("b", range(5)))
    t.delete(filter=tarn.col("k") < 3)
    want = t.scan().to_arrow().num_rows
    by_partition = t.scan(filter=tarn.col("p") == "a").to_arrow().num_rows
    filtered = t.scan(filter=tarn.col("k") > 5).to_arrow().num_rows
    assert filtered == 4
    no_data_reads(monkeypatch)
    assert t.scan().count() == want == 9
    assert t.scan(filter=tarn.col("p") == "a").count() == by_partition == 7
    assert t.scan(snapshot_id=2).count() == 15
    monkeypatch.undo()
    assert t.scan(filter=tarn.col("k") > 5).count() == 4  # needs the rows


def test_count_of_primary_key_tables(catalog, monkeypatch):
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                        ("v", pa.string())])
    t = catalog.create_table("db.pkcount", schema=schema, primary_key=["p", "k"], partition_keys=["p"],
                             options={"bucket": "2"})
    t.write(rows_of("a", range(100)))
    t.write(rows_of("a", range(50, 150)))
    t.write(rows_of("b", range(10)))
    t.delete(pa.table({"p": ["a"], "k": [7]}))
    want = t.scan().to_arrow().num_rows
    assert want == 159
    assert t.scan().count() == want  # buckets needing a merge are read (keys only)
    assert t.scan(filter=tarn.col("p") == "b").count() == 10
    t.analyze(columns=[])
    no_data_reads(monkeypatch)
    assert t.scan().count() == want  # fresh statistics answer
    monkeypatch.undo()
    t.write(rows_of("b", [99]))  # now stale: counted again
    assert t.scan().count() == want + 1
    t.compact(full=True)
    no_data_reads(monkeypatch)
    assert t.scan().count() == want + 1  # one compacted file per bucket: no merge needed


@pytest.mark.parametrize("options", [{"merge-engine": "partial-update"}, {"merge-engine": "first-row"},
                                     {"merge-engine": "aggregation", "fields.v.aggregate-function": "max"},
                                     {"deletion-vectors.enabled": "true"}])
def test_count_matches_the_read_for_every_engine(catalog, options):
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.engines", schema=schema, primary_key=["k"],
                             options={"bucket": "2", **options})
    for i in range(3):
        t.write(pa.table({"k": list(range(i * 10, i * 10 + 30)), "v": [f"x{i}"] * 30}, schema=schema))
    if "merge-engine" not in options:
        t.delete(pa.table({"k": [1, 2, 3]}))
    assert t.scan().count() == t.scan().to_arrow().num_rows
    t.analyze()
    assert t.statistics().merged_record_count == t.scan().to_arrow().num_rows


def test_split_estimates(catalog):
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.est", schema=schema, primary_key=["k"], options={"bucket": "1"})
    t.write(pa.table({"k": list(range(1000)), "v": ["a" * 30] * 1000}, schema=schema))
    t.write(pa.table({"k": list(range(1000)), "v": ["b" * 30] * 1000}, schema=schema))
    before = t.scan().estimates()
    assert [e.rows for e in before] == [2000]  # no statistics: every stored row
    t.analyze()
    after = t.scan().estimates()
    assert [e.rows for e in after] == [1000]  # half of the rows merge away
    narrow = t.scan(columns=["k"]).estimates()
    assert 0 < narrow[0].bytes < after[0].bytes


def test_partitions_table_counts_from_manifests(catalog, monkeypatch):
    t = simple_table(catalog, "db.parts")
    t.write(rows_of("a", range(10)))
    t.write(rows_of("a", range(3)))
    t.write(rows_of("b", range(4)))
    no_data_reads(monkeypatch)
    rows = {r["partition"]: r for r in t.system_table("partitions").to_arrow().to_pylist()}
    live = t.live_entries(t.latest_snapshot())
    for name, p in (("p=a", "a"), ("p=b", "b")):
        files = [e.file for e in live if t.planner().partition_values(e.partition) == (p,)]
        assert rows[name]["record_count"] == sum(f.row_count for f in files)
        assert rows[name]["file_count"] == len(files)
        assert rows[name]["file_size_in_bytes"] == sum(f.file_size for f in files)
    assert rows["p=a"]["record_count"] == 13 and rows["p=b"]["file_count"] == 1


def test_analyze_reads_through_schema_evolution_and_deletion_vectors(catalog):
    t = simple_table(catalog, "db.evolved", **{"deletion-vectors.enabled": "true"})
    t.write(rows_of("a", range(10)))
    t.alter(tarn.RenameColumn("v", "label"), tarn.AddColumn("w", tarn.types.INT()))
    t.write(pa.table({"p": ["b"] * 3, "k": [20, 21, 22], "label": ["x", "y", None], "w": [1, 2, 2]}))
    t.delete(filter=tarn.col("k") < 4)
    merged = t.scan().to_arrow()
    t.analyze()
    stats = t.statistics()
    assert stats.schema_id == 1 and list(stats.col_stats) == ["p", "k", "label", "w"]
    check_against_oracle(stats, merged, t.schema())
    assert stats.merged_record_count == 9 and stats.col_stats["w"].null_count == 6
    assert stats.col_stats["label"].distinct_count == 8


def test_analyze_streams_big_append_files_in_batches(catalog, monkeypatch):
    monkeypatch.setattr(S, "STREAM_ROWS", 1000)
    monkeypatch.setattr(S, "SLICE_ROWS", 700)
    t = catalog.create_table("db.stream", schema=ALL_TYPES)
    data = all_types_rows(5000, 4)
    t.write(data)
    seen = []
    update = S.StatsCollector.update
    monkeypatch.setattr(S.StatsCollector, "update", lambda self, chunk: (seen.append(chunk.num_rows),
                                                                         update(self, chunk))[1])
    t.analyze()
    assert len(seen) == 5 and sum(seen) == 5000
    check_against_oracle(t.statistics(), t.scan().to_arrow(), t.schema())
