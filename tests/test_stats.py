"""Column statistics: modes, truncation, Java comparison rules, format gaps, mode resolution."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarn.codec.binary_row import serialize_row
from tarn.errors import InvalidOption
from tarn.meta.manifest import EMPTY_STATS
from tarn.stats import (
    collect_stats,
    decode_stats,
    parse_mode,
    stats_modes,
    truncate_max,
    truncate_min,
)
from tarn.types import (
    ARRAY, BIGINT, BINARY, BOOLEAN, BYTES, CHAR, DATE, DECIMAL, DOUBLE, FLOAT, INT, MAP, ROW,
    SMALLINT, STRING, TIME, TIMESTAMP, TIMESTAMP_LTZ, TINYINT, DataField, arrow_schema,
)

UTC = dt.timezone.utc


def table_of(fields, columns) -> pa.Table:
    schema = arrow_schema(fields)
    return pa.Table.from_arrays([pa.array(c, type=schema.field(i).type) for i, c in enumerate(columns)],
                                schema=schema)


def stats_of(fields, columns, mode="full", file_format=None):
    stats = collect_stats(table_of(fields, columns), fields, [mode] * len(fields), file_format)
    return stats, decode_stats(stats, fields)


def test_known_bytes_of_a_string_stat():
    fields = [DataField(0, "s", STRING(False))]
    stats, _ = stats_of(fields, [["a"]])
    assert stats.min_values.hex() == "00000001" + "0000000000000000" + "6100000000000081"
    assert stats.max_values == stats.min_values
    assert stats.null_counts == [0]


ATOMIC_CASES = [
    (BOOLEAN(), [True, None, False], False, True),
    (TINYINT(), [3, -128, None], -128, 3),
    (SMALLINT(), [300, -2, None], -2, 300),
    (INT(), [7, None, -9], -9, 7),
    (BIGINT(), [2**62, -(2**63), None], -(2**63), 2**62),
    (FLOAT(), [1.5, -2.5, None], -2.5, 1.5),
    (DOUBLE(), [1e300, -1e-300, None], -1e-300, 1e300),
    (DECIMAL(9, 2), [decimal.Decimal("1.25"), decimal.Decimal("-3.50"), None],
     decimal.Decimal("-3.50"), decimal.Decimal("1.25")),
    (DECIMAL(30, 4), [decimal.Decimal("12345678901234567890.1234"), decimal.Decimal("-1.0000"), None],
     decimal.Decimal("-1.0000"), decimal.Decimal("12345678901234567890.1234")),
    (STRING(), ["b", "ab", None, "é"], "ab", "é"),
    (CHAR(2), ["zz", "aa", None], "aa", "zz"),
    (BYTES(), [b"\x80", b"\x7f\xff", None], b"\x7f\xff", b"\x80"),  # unsigned byte order
    (BINARY(2), [b"ab", b"aa", None], b"aa", b"ab"),
    (DATE(), [dt.date(2024, 1, 2), dt.date(1969, 12, 31), None], dt.date(1969, 12, 31),
     dt.date(2024, 1, 2)),
    (TIME(), [dt.time(1, 2, 3), dt.time(0, 0, 0, 5000), None], dt.time(0, 0, 0, 5000),
     dt.time(1, 2, 3)),
    (TIMESTAMP(3), [dt.datetime(2024, 1, 1, 0, 0, 0, 123000), dt.datetime(1960, 1, 1), None],
     dt.datetime(1960, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 123000)),
    (TIMESTAMP(6), [dt.datetime(2024, 1, 1, 0, 0, 0, 123456), dt.datetime(2024, 1, 1), None],
     dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 123456)),
    (TIMESTAMP_LTZ(3), [dt.datetime(2024, 1, 1, tzinfo=UTC), None,
                        dt.datetime(2023, 1, 1, tzinfo=UTC)],
     dt.datetime(2023, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, tzinfo=UTC)),
]


@pytest.mark.parametrize("data_type,values,low,high", ATOMIC_CASES,
                         ids=[str(c[0]) for c in ATOMIC_CASES])
def test_full_min_max_and_nulls_of_every_atomic_type(data_type, values, low, high):
    fields = [DataField(0, "c", data_type)]
    stats, (mins, maxs, nulls) = stats_of(fields, [values])
    assert mins == [low] and maxs == [high]
    assert nulls == [values.count(None)]
    assert stats.min_values == serialize_row([low], [data_type])


def test_timestamp_nanos_exact():
    fields = [DataField(0, "t", TIMESTAMP(9))]
    table = pa.Table.from_arrays([pa.array([5, 1_000_000_001, None], pa.timestamp("ns"))],
                                 schema=arrow_schema(fields))
    mins, maxs, nulls = decode_stats(collect_stats(table, fields, ["full"]), fields)
    assert mins[0].value == 5 and maxs[0].value == 1_000_000_001 and nulls == [1]


def test_truncate_16_on_long_strings():
    fields = [DataField(0, "s", STRING())]
    long_value = "abcdefghijklmnopqrstuvwxyz"
    _, (mins, maxs, nulls) = stats_of(fields, [[long_value, "b" * 40, None]], "truncate(16)")
    assert mins == ["abcdefghijklmnop"]
    assert maxs == ["b" * 15 + "c"]
    assert nulls == [1]
    # short values are kept as they are
    _, (mins, maxs, _) = stats_of(fields, [["short", "a"]], "truncate(16)")
    assert (mins, maxs) == (["a"], ["short"])


def test_truncate_counts_code_points_and_increments_the_last():
    assert truncate_min("ééééé", 3) == "ééé"
    assert truncate_max("ééééé", 3) == "éé" + chr(ord("é") + 1)
    assert truncate_max("ab\U0010FFFFz", 3) == "ac"  # the max code point cannot grow: carry left
    assert truncate_max("\U0010FFFF" * 4, 3) is None
    assert truncate_max("a\ud7ffz", 2) == "a\ue000"  # skips the surrogate range (no UTF-8 form)
    assert truncate_max("abc", 3) == "abc"
    assert truncate_min(b"\x01\x02\x03", 2) == b"\x01\x02"
    assert truncate_max(b"\x01\x02\x03", 2) == b"\x01\x03"
    assert truncate_max(b"\x01\xff\x03", 2) == b"\x02"
    assert truncate_max(b"\xff\xff\x03", 2) is None
    assert truncate_max(7, 1) == 7


def test_truncate_failure_drops_min_and_max_but_keeps_null_count():
    fields = [DataField(0, "s", STRING()), DataField(1, "b", BYTES())]
    _, (mins, maxs, nulls) = stats_of(
        fields, [["\U0010FFFF" * 20, None], [b"\xff" * 20, None]], "truncate(16)")
    assert mins == [None, None] and maxs == [None, None] and nulls == [1, 1]


def test_truncate_leaves_other_types_exact():
    fields = [DataField(0, "d", DECIMAL(20, 2)), DataField(1, "l", BIGINT())]
    values = [[decimal.Decimal("123456789012345678.91"), None], [1, 2]]
    _, (mins, maxs, _) = stats_of(fields, values, "truncate(1)")
    assert mins == [decimal.Decimal("123456789012345678.91"), 1]
    assert maxs == [decimal.Decimal("123456789012345678.91"), 2]


def test_none_and_counts_modes():
    fields = [DataField(0, "a", INT()), DataField(1, "b", STRING())]
    table = table_of(fields, [[1, None, 3], ["x", "y", None]])
    stats = collect_stats(table, fields, ["none", "counts"])
    mins, maxs, nulls = decode_stats(stats, fields)
    assert mins == [None, None] and maxs == [None, None] and nulls == [None, 1]
    assert stats.null_counts == [None, 1]


def test_nested_types_have_no_min_max():
    fields = [DataField(0, "a", ARRAY(INT())), DataField(1, "m", MAP(STRING(False), INT())),
              DataField(2, "r", ROW([DataField(3, "x", INT())]))]
    columns = [[[1], None, []], [[("k", 1)], None, None], [{"x": 1}, None, None]]
    _, (mins, maxs, nulls) = stats_of(fields, columns)
    assert mins == [None] * 3 and maxs == [None] * 3 and nulls == [1, 2, 2]
    # Java's parquet footer has no stats at all for nested columns (null count too)
    _, (_, _, nulls) = stats_of(fields, columns, file_format="parquet")
    assert nulls == [None, None, None]


def test_format_gaps():
    fields = [DataField(0, "t9", TIMESTAMP(9)), DataField(1, "t6", TIMESTAMP(6)),
              DataField(2, "b", BYTES())]
    table = pa.Table.from_arrays(
        [pa.array([1000, None], pa.timestamp("ns")), pa.array([1, None], pa.timestamp("us")),
         pa.array([b"x", None])], schema=arrow_schema(fields))
    modes = ["full"] * 3
    mins, _, nulls = decode_stats(collect_stats(table, fields, modes, "parquet"), fields)
    assert mins[0] is None and mins[1] is not None and mins[2] == b"x" and nulls == [1, 1, 1]
    mins, _, _ = decode_stats(collect_stats(table, fields, modes, "orc"), fields)
    assert mins[0] is not None and mins[2] is None
    mins, _, _ = decode_stats(collect_stats(table, fields, modes, "avro"), fields)
    assert None not in mins


def test_float_nan_and_signed_zero_follow_java_compare():
    fields = [DataField(0, "d", DOUBLE()), DataField(1, "f", FLOAT())]
    _, (mins, maxs, _) = stats_of(fields, [[1.0, math.nan, -2.0, None], [0.0, -0.0, None, 0.0]])
    assert mins[0] == -2.0 and math.isnan(maxs[0])
    assert math.copysign(1, mins[1]) == -1 and math.copysign(1, maxs[1]) == 1
    _, (mins, maxs, _) = stats_of(fields, [[math.nan], [-0.0]])
    assert math.isnan(mins[0]) and math.isnan(maxs[0])
    assert math.copysign(1, mins[1]) == -1 and math.copysign(1, maxs[1]) == -1


def test_all_null_and_empty_tables():
    fields = [DataField(0, "a", INT()), DataField(1, "s", STRING())]
    stats, (mins, maxs, nulls) = stats_of(fields, [[None, None], [None, None]], "truncate(16)")
    assert mins == [None, None] and maxs == [None, None] and nulls == [2, 2]
    assert stats.min_values == serialize_row([None, None], [INT(), STRING()])
    empty = table_of(fields, [[], []])
    mins, maxs, nulls = decode_stats(collect_stats(empty, fields, ["full", "full"]), fields)
    assert mins == [None, None] and maxs == [None, None] and nulls == [0, 0]
    no_columns = collect_stats(pa.table({}), [], [])
    assert no_columns == EMPTY_STATS


def test_decode_empty_stats_against_fields():
    fields = [DataField(0, "a", INT())]
    assert decode_stats(EMPTY_STATS, fields) == ([None], [None], [None])


def test_chunked_columns():
    fields = [DataField(0, "a", DOUBLE())]
    table = pa.Table.from_batches([
        pa.record_batch([pa.array([0.0, 5.0])], schema=arrow_schema(fields)),
        pa.record_batch([pa.array([-0.0, None])], schema=arrow_schema(fields))])
    mins, maxs, nulls = decode_stats(collect_stats(table, fields, ["full"]), fields)
    assert math.copysign(1, mins[0]) == -1 and maxs == [5.0] and nulls == [1]


def test_stats_modes_resolution():
    fields = [DataField(2147483646, "_SEQUENCE_NUMBER", BIGINT(False)),
              DataField(1073741823, "_KEY_id", INT(False)),
              DataField(0, "id", INT(False)), DataField(1, "a", STRING()),
              DataField(2, "b", STRING()), DataField(3, "c", STRING())]
    assert stats_modes(fields, {}) == ["truncate(128)", "truncate(128)"] + ["truncate(16)"] * 4
    options = {"metadata.stats-mode": "FULL", "fields.b.stats-mode": "Truncate(4)",
               "metadata.stats-keep-first-n-columns": "2"}
    assert stats_modes(fields, options) == [
        "truncate(128)", "truncate(128)", "full", "full", "truncate(4)", "none"]
    options = {"fields._SEQUENCE_NUMBER.stats-mode": "none", "metadata.stats-mode": "counts",
               "metadata.stats-mode.per.level": "0:none,5:full"}
    assert stats_modes(fields, options)[:3] == ["none", "truncate(128)", "counts"]
    assert stats_modes(fields, options, level=0)[2:] == ["none"] * 4
    assert stats_modes(fields, options, level=5)[2:] == ["full"] * 4
    assert stats_modes(fields, options, level=3)[2:] == ["counts"] * 4
    # thin mode: value columns that are keys keep key-style stats
    assert stats_modes(fields, {"metadata.stats-mode": "none"}, key_names=["_KEY_id"])[2] == \
        "truncate(128)"


def test_invalid_modes_name_the_option():
    with pytest.raises(InvalidOption, match="fields.a.stats-mode"):
        stats_modes([DataField(0, "a", INT())], {"fields.a.stats-mode": "truncate(0)"})
    with pytest.raises(InvalidOption, match="metadata.stats-mode"):
        stats_modes([DataField(0, "a", INT())], {"metadata.stats-mode": "some"})
    assert parse_mode(" TRUNCATE(08) ") == "truncate(8)"


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=20),
       st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), max_size=20),
       st.integers(1, 20))
def test_bounds_property(strings, ints, length):
    fields = [DataField(0, "s", STRING())]
    strings = [s for s in strings if s is None or not any(0xD800 <= ord(c) <= 0xDFFF for c in s)]
    _, (mins, maxs, nulls) = stats_of(fields, [strings])
    present = [s for s in strings if s is not None]
    assert nulls == [len(strings) - len(present)]
    assert mins == [min(present) if present else None]
    assert maxs == [max(present) if present else None]
    _, (mins, maxs, _) = stats_of(fields, [strings], f"truncate({length})")
    if present and maxs[0] is not None:
        assert mins[0] <= min(present) and maxs[0] >= max(present)
        assert len(mins[0]) <= length and len(maxs[0]) <= length
    int_fields = [DataField(0, "i", BIGINT())]
    _, (mins, maxs, _) = stats_of(int_fields, [ints])
    present_ints = [i for i in ints if i is not None]
    assert mins == [min(present_ints) if present_ints else None]
    assert maxs == [max(present_ints) if present_ints else None]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=24)),
                          st.one_of(st.none(), st.floats(allow_nan=True), st.just(-0.0), st.just(0.0)),
                          st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
                          st.one_of(st.none(), st.binary(max_size=20))), min_size=1, max_size=30),
       st.lists(st.integers(1, 29), max_size=4), st.sampled_from(["full", "truncate(4)", "counts", "none"]))
def test_running_stats_over_chunks_equal_stats_of_the_whole(rows, cuts, mode):
    """Stats collected chunk by chunk (as a file written a row group at a time collects them)
    are the stats of all its rows at once, with Java's float order and truncation."""
    from tarn.stats import RunningStats

    fields = [DataField(0, "s", STRING()), DataField(1, "f", DOUBLE()), DataField(2, "i", BIGINT()),
              DataField(3, "b", BYTES())]
    whole = table_of(fields, [list(c) for c in zip(*rows)])
    running = RunningStats(fields, [mode] * 4)
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    for lo, hi in zip(bounds, bounds[1:]):
        running.add(whole.slice(lo, hi - lo))
    expected = collect_stats(whole, fields, [mode] * 4)
    got = running.result()
    assert got.null_counts == expected.null_counts
    assert _same_values(decode_stats(got, fields), decode_stats(expected, fields))


def _same_values(a, b) -> bool:
    def norm(v):
        return ("nan",) if isinstance(v, float) and math.isnan(v) else (v, math.copysign(1, v)) \
            if isinstance(v, float) else v
    return [[norm(v) for v in part] for part in a] == [[norm(v) for v in part] for part in b]
