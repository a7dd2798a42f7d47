"""filter_table against two oracles: Arrow's own expression filter of the same predicate, and
the row-by-row three-valued evaluation (`eval_values`), on random tables and predicates."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tarn.scan.predicate import And, Compare, In, IsNull, Not, Or, StartsWith, eval_values, filter_table, to_arrow

COLUMNS = {
    "i": (pa.int32(), st.integers(-5, 5)),
    "b": (pa.int64(), st.integers(-(2**62), 2**62)),
    "f": (pa.float64(), st.one_of(st.floats(-3, 3, allow_nan=False), st.just(math.nan), st.just(-0.0))),
    "s": (pa.string(), st.sampled_from(["", "a", "ab", "b", "ba", "ä"])),
    "d": (pa.date32(), st.dates(dt.date(2020, 1, 1), dt.date(2020, 1, 10))),
    "t": (pa.timestamp("us"), st.datetimes(dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2))),
    "z": (pa.timestamp("us", tz="UTC"),
          st.datetimes(dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2)).map(lambda v: v.replace(tzinfo=dt.timezone.utc))),
    "m": (pa.decimal128(6, 2), st.decimals(-99, 99, places=2, allow_nan=False, allow_infinity=False)),
    "o": (pa.bool_(), st.booleans()),
}
OPS = ["==", "!=", "<", "<=", ">", ">="]


@st.composite
def tables(draw):
    n = draw(st.integers(1, 12))
    arrays = {}
    for name, (arrow_type, values) in COLUMNS.items():
        column = draw(st.lists(st.one_of(st.none(), values), min_size=n, max_size=n))
        arrays[name] = pa.array(column, type=arrow_type)
    table = pa.table(arrays)
    cut = draw(st.integers(0, n))  # columns of several chunks, as reads produce them
    return pa.concat_tables([table.slice(0, cut), table.slice(cut)]) if 0 < cut < n else table


def leaves():
    def compare(name):
        return st.builds(Compare, st.just(name), st.sampled_from(OPS), st.one_of(st.none(), COLUMNS[name][1]))

    def in_set(name):  # no NaN in a set: Arrow's is_in finds NaN, the row evaluation does not
        values = st.floats(-3, 3, allow_nan=False) if name == "f" else COLUMNS[name][1]
        return st.builds(In, st.just(name), st.lists(st.one_of(st.none(), values), max_size=3).map(tuple),
                         st.booleans())

    names = st.sampled_from(list(COLUMNS))
    return st.one_of(
        names.flatmap(compare),
        names.flatmap(in_set),
        st.builds(IsNull, names, st.booleans()),
        st.builds(StartsWith, st.just("s"), st.sampled_from(["", "a", "b"])),
    )


predicates = st.recursive(
    leaves(),
    lambda inner: st.one_of(
        st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(Not, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(tables(), predicates)
def test_filter_table_matches_arrow_and_row_evaluation(table, predicate):
    got = filter_table(table, predicate)
    assert got.schema == table.schema
    assert _comparable(got.to_pylist()) == _comparable(table.filter(to_arrow(predicate)).to_pylist())
    expected = [row for row in table.to_pylist() if eval_values(predicate, row) is True]
    assert _comparable(got.to_pylist()) == _comparable(expected)


def _comparable(rows):
    """NaN equals itself here (rows are compared as lists of values)."""
    return [{k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()} for row in rows]


def test_values_of_another_type_are_still_compared_exactly():
    """A value that does not fit the column's type (a fraction against integers, a wider
    decimal) is compared as Arrow's expression compares it, not refused or truncated."""
    table = pa.table({"i": pa.array([1, 2, 3], pa.int32()), "m": pa.array([decimal.Decimal("1.25")], pa.decimal128(6, 2))
                      .take([0, 0, 0])})
    assert filter_table(table, Compare("i", "<", 2.5)).column("i").to_pylist() == [1, 2]
    assert filter_table(table, Compare("i", ">", 2**40)).num_rows == 0
    assert filter_table(table, Compare("m", "==", decimal.Decimal("1.250"))).num_rows == 3
    assert filter_table(table, Compare("m", "<", decimal.Decimal("1.255"))).num_rows == 3


def test_mixed_types_filter_as_arrow_expressions_do():
    """Every pairing of column type and value type: the same rows as Arrow's expression filter,
    or the same refusal."""
    columns = {
        "i8": pa.array([-3, 0, 2, None], pa.int8()), "i64": pa.array([-3, 0, 2**40, None], pa.int64()),
        "f32": pa.array([0.1, 1.5, None, -2.0], pa.float32()), "f64": pa.array([0.1, 1.5, None, math.nan]),
        "ms": pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, 1000), None, dt.datetime(2020, 1, 1), None],
                       pa.timestamp("ms")),
        "ns": pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, 1), None, dt.datetime(2020, 1, 1), None], pa.timestamp("ns")),
        "utc": pa.array([dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)] * 3 + [None], pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2020, 1, 1), dt.date(2020, 1, 2), None, dt.date(2019, 12, 31)]),
        "ls": pa.array(["a", "b", None, "c"], pa.large_string()),
        "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50"), decimal.Decimal("0.00")],
                        pa.decimal128(10, 2)),
    }
    table = pa.table(columns)
    values = [0, 2, -3, 2**40, 300, 0.1, 1.5, math.nan, dt.datetime(2020, 1, 1, 0, 0, 0, 1000),
              dt.datetime(2020, 1, 1, 0, 0, 0, 1001), dt.datetime(2020, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
              dt.date(2020, 1, 1), "b", decimal.Decimal("1.25"), decimal.Decimal("1.255"), decimal.Decimal("-3.5"),
              True]
    for name in columns:
        for value in values:
            for op in OPS:
                predicate = Compare(name, op, value)
                try:
                    expected = _comparable(table.filter(to_arrow(predicate)).to_pylist())
                except (pa.ArrowException, TypeError) as exc:
                    try:
                        filter_table(table, predicate)
                    except type(exc):
                        continue
                    raise AssertionError(f"{predicate!r}: Arrow refuses ({exc}), filter_table does not")
                assert _comparable(filter_table(table, predicate).to_pylist()) == expected, repr(predicate)
