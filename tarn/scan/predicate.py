"""Row predicates: build them with `col("a") > 5`, evaluate them three ways.

- `to_arrow(p)`: a `pyarrow.compute.Expression` filtering rows (vectorised);
- `may_match_stats(p, mins, maxs, null_counts, row_count)`: can a file / manifest with these
  per-column stats hold a matching row? (False only when it certainly cannot);
- `eval_values(p, values)`: exact truth over one row of Python values (used for partitions).

Unknown columns in stats/partition evaluation count as "may match". `bind(p, fields, table)`
checks a predicate against a table's columns and converts its literals to the columns' types
('2026-11-20' for a DATE column, 10 for a DECIMAL one) before any of the three runs.
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import InvalidArgument, InvalidFilter, SchemaMismatch
from tarn.types import DataField, type_to_sql

_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
_REPR_VALUES = 8  # values an isin/not_in repr shows before "... N more"


class Predicate:
    """A row filter built from `col(...)`: combine with `&` (and), `|` (or), `~` (not) and pass
    it as `table.scan(filter=...)`, `table.delete(filter=...)` or `table.update(filter=...)`.
    Literals are converted to the column's type when the scan binds the predicate."""

    def __and__(self, other: "Predicate") -> "Predicate":
        """`p & q`: rows matching both."""
        return And((self, other))

    def __or__(self, other: "Predicate") -> "Predicate":
        """`p | q`: rows matching either."""
        return Or((self, other))

    def __invert__(self) -> "Predicate":
        """`~p`: rows not matching `p` (a null compares as unknown and is not matched either)."""
        return Not(self)

    def __bool__(self):
        raise InvalidArgument(
            f"the truth value of a predicate ({self!r}) is ambiguous: combine predicates with "
            "& (and), | (or) and ~ (not), not with the Python keywords 'and', 'or', 'not'; write "
            "a range as (col('x') > 1) & (col('x') < 5), not 1 < col('x') < 5")


@dataclass(frozen=True)
class Compare(Predicate):
    """`col(column) <op> value`, op one of ==, !=, <, <=, >, >=."""

    column: str
    op: str
    value: Any

    def __repr__(self) -> str:
        return f"col({self.column!r}) {self.op} {self.value!r}"


@dataclass(frozen=True)
class In(Predicate):
    """`col(column).isin(values)`, or `not_in` when `negated`."""

    column: str
    values: tuple
    negated: bool = False

    def __repr__(self) -> str:
        shown = ", ".join(repr(v) for v in self.values[:_REPR_VALUES])
        if len(self.values) > _REPR_VALUES:
            shown += f", ... {len(self.values) - _REPR_VALUES} more"
        return f"col({self.column!r}).{'not_in' if self.negated else 'isin'}([{shown}])"


@dataclass(frozen=True)
class IsNull(Predicate):
    """`col(column).is_null()`, or `is_not_null()` when `negated`."""

    column: str
    negated: bool = False

    def __repr__(self) -> str:
        return f"col({self.column!r}).{'is_not_null' if self.negated else 'is_null'}()"


@dataclass(frozen=True)
class StartsWith(Predicate):
    """`col(column).startswith(prefix)` on a string column."""

    column: str
    prefix: str

    def __repr__(self) -> str:
        return f"col({self.column!r}).startswith({self.prefix!r})"


@dataclass(frozen=True)
class And(Predicate):
    """`p & q & ...`: every child matches."""

    children: tuple

    def __repr__(self) -> str:
        return " & ".join(f"({c!r})" for c in self.children)


@dataclass(frozen=True)
class Or(Predicate):
    """`p | q | ...`: some child matches."""

    children: tuple

    def __repr__(self) -> str:
        return " | ".join(f"({c!r})" for c in self.children)


@dataclass(frozen=True)
class Not(Predicate):
    """`~p`: the child does not match."""

    child: Predicate

    def __repr__(self) -> str:
        return f"~({self.child!r})"


@dataclass(frozen=True)
class Column:
    """`col("x")`: build predicates with Python operators: `==`, `!=`, `<`, `<=`, `>`, `>=` against
    a literal, and `isin`, `not_in`, `is_null`, `is_not_null`, `startswith`."""

    name: str

    def __eq__(self, value):  # type: ignore[override]
        return Compare(self.name, "==", value)

    def __ne__(self, value):  # type: ignore[override]
        return Compare(self.name, "!=", value)

    def __lt__(self, value):
        return Compare(self.name, "<", value)

    def __le__(self, value):
        return Compare(self.name, "<=", value)

    def __gt__(self, value):
        return Compare(self.name, ">", value)

    def __ge__(self, value):
        return Compare(self.name, ">=", value)

    def isin(self, values) -> In:
        """`x IN (values)`; one value (a string too) counts as a list of one."""
        return In(self.name, _value_tuple(values))

    def not_in(self, values) -> In:
        """`x NOT IN (values)`; one value counts as a list of one."""
        return In(self.name, _value_tuple(values), negated=True)

    def is_null(self) -> IsNull:
        """`x IS NULL`."""
        return IsNull(self.name)

    def is_not_null(self) -> IsNull:
        """`x IS NOT NULL`."""
        return IsNull(self.name, negated=True)

    def startswith(self, prefix: str) -> StartsWith:
        """`x LIKE 'prefix%'` on a string column (files are pruned by their min/max)."""
        return StartsWith(self.name, prefix)

    __hash__ = object.__hash__


def col(name: str) -> Column:
    """A column to build a filter with: `col("amount") > 10`, `col("dt").isin([...])`."""
    if not isinstance(name, str):
        raise InvalidArgument(f"col() takes a column name (a string), got {name!r}")
    return Column(name)


def _value_tuple(values) -> tuple:
    if isinstance(values, (str, bytes, bytearray)) or not hasattr(values, "__iter__"):
        return (values,)
    return tuple(values)


def columns_of(p: Predicate) -> set[str]:
    if isinstance(p, (And, Or)):
        return set().union(*(columns_of(c) for c in p.children))
    if isinstance(p, Not):
        return columns_of(p.child)
    return {p.column}


def check_columns(p: Predicate, known: list[str], table_name: str) -> None:
    missing = sorted(columns_of(p) - set(known))
    if missing:
        raise SchemaMismatch(f"table {table_name}: filter names unknown column(s) {missing}")


# ---------------------------------------------------------------- binding to a table

def bind(p: Predicate, fields: Sequence[DataField], table_name: str) -> Predicate:
    """`p` checked against the table's columns, its literals converted to their column's
    type: dates, times and timestamps from ISO strings (or dates, datetimes), decimals from
    strings, ints and floats, numbers from strings; numpy and Arrow scalars become Python
    values. A literal that does not fit raises InvalidFilter naming the table and column."""
    if isinstance(p, Column):
        raise InvalidFilter(f"table {table_name}: the filter is the column {p.name!r} itself, not a "
                            f"condition on it; write e.g. col({p.name!r}) == True")
    if not isinstance(p, Predicate):
        raise InvalidFilter(f"table {table_name}: a filter must be a predicate (col('x') > 1), a "
                            f"pyarrow.compute.Expression or a SQL-like string, got {type(p).__name__} {p!r}")
    _check_structure(p, table_name)
    check_columns(p, [f.name for f in fields], table_name)
    return _bind({f.name: f for f in fields}, p, table_name)


def _check_structure(p, table_name: str) -> None:
    if isinstance(p, (And, Or)):
        if not p.children:
            raise InvalidFilter(f"table {table_name}: {type(p).__name__} of no predicates")
        for c in p.children:
            _check_structure(c, table_name)
    elif isinstance(p, Not):
        _check_structure(p.child, table_name)
    elif not isinstance(p, Predicate):
        raise InvalidFilter(f"table {table_name}: {p!r} inside a filter is not a predicate")
    elif not isinstance(getattr(p, "column", None), str):
        raise InvalidFilter(f"table {table_name}: {p!r} names no column")


def _bind(fields: dict[str, DataField], p: Predicate, table_name: str) -> Predicate:
    if isinstance(p, (And, Or)):
        return type(p)(tuple(_bind(fields, c, table_name) for c in p.children))
    if isinstance(p, Not):
        return Not(_bind(fields, p.child, table_name))
    f = fields[p.column]
    if isinstance(p, Compare):
        if p.op not in _COMPARISONS:
            raise InvalidFilter(f"table {table_name}: unknown comparison {p.op!r} on column '{p.column}'")
        return Compare(p.column, p.op, coerce_literal(p.value, f, table_name))
    if isinstance(p, In):
        return In(p.column, tuple(coerce_literal(v, f, table_name) for v in p.values), p.negated)
    if isinstance(p, StartsWith):
        if f.type.root not in ("CHAR", "VARCHAR") or not isinstance(p.prefix, str):
            raise InvalidFilter(f"table {table_name}: startswith (LIKE 'prefix%') needs a string column and a "
                                f"string prefix; column '{p.column}' is {type_to_sql(f.type)}, the prefix "
                                f"{p.prefix!r}")
        return p
    return p  # IsNull


def coerce_literal(value, f: DataField, table_name: str):
    """`value` as the Python value of `f`'s type (what its statistics and Arrow compare with)."""
    value = plain_value(value)
    if value is None:
        return None
    if isinstance(value, Column):
        raise InvalidFilter(f"table {table_name}: column '{f.name}' is compared with column "
                            f"{value.name!r}; filters compare a column with values only")
    convert = _CONVERTERS.get(f.type.root)
    if convert is None:
        if f.type.root in ("ARRAY", "MAP", "MULTISET", "ROW"):
            raise InvalidFilter(f"table {table_name}: column '{f.name}' is {type_to_sql(f.type)}; filters "
                                "compare only columns of atomic types (IS NULL works on any)")
        return value
    try:
        return convert(value)
    except (ValueError, TypeError, ArithmeticError, OverflowError) as e:
        raise InvalidFilter(f"table {table_name}: filter value {value!r} does not fit column '{f.name}' of "
                            f"type {type_to_sql(f.type)}: {e}") from None


def plain_value(value):
    """A Python value for Arrow scalars, numpy scalars and pandas Timestamps."""
    if isinstance(value, pa.Scalar):
        return value.as_py()
    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else value.astype("datetime64[us]").item()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dt.datetime) and hasattr(value, "to_pydatetime"):
        return value.to_pydatetime(warn=False)
    return value


def _no_bool(value):
    if isinstance(value, bool):
        raise TypeError("a bool is not a number")
    return value


def _to_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise TypeError("expected true or false")


def _to_integer(value):
    value = _no_bool(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            value = _parse_decimal(text)
    if isinstance(value, (float, decimal.Decimal)):
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            raise ValueError("not a finite number")
        if isinstance(value, float) and value != value:
            return value
        # An integral value compares as an int; any other as a float (x > 1.5 is x >= 2).
        return int(value) if value == int(value) else float(value)
    raise TypeError("expected a number")


def _parse_decimal(text: str) -> decimal.Decimal:
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise ValueError("not a number") from None


def _to_float(value) -> float:
    value = _no_bool(value)
    if isinstance(value, str):
        return float(value.strip())
    if isinstance(value, (int, float, decimal.Decimal)):
        return float(value)
    raise TypeError("expected a number")


def _to_decimal(value) -> decimal.Decimal:
    value = _no_bool(value)
    if isinstance(value, float):
        value = repr(value)  # 0.1 -> Decimal('0.1'), not its binary expansion
    if isinstance(value, str):
        value = value.strip()
    if not isinstance(value, (str, int, decimal.Decimal)):
        raise TypeError("expected a number or a decimal string")
    out = _parse_decimal(value) if isinstance(value, str) else decimal.Decimal(value)
    if not out.is_finite():
        raise ValueError("not a finite number")
    return out


def _to_string(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()  # a date kept in a string column: 'YYYY-MM-DD'
    raise TypeError("expected a string")


def _to_bytes(value) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError("expected bytes")


def _parse_datetime(text: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError("expected an ISO date or time ('2026-11-20', '2026-11-20 10:30:00')") from None


def _to_date(value) -> dt.date:
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            value = _parse_datetime(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None or value.time() != dt.time(0):
            raise ValueError("a DATE holds no time of day; give a date")
        return value.date()
    if isinstance(value, dt.date):
        return value
    raise TypeError("expected a date or 'YYYY-MM-DD'")


def _to_time(value) -> dt.time:
    if isinstance(value, str):
        try:
            return dt.time.fromisoformat(value.strip())
        except ValueError:
            raise ValueError("expected an ISO time ('10:30:00')") from None
    if isinstance(value, dt.time):
        return value
    raise TypeError("expected a time or 'HH:MM:SS'")


def _as_datetime(value) -> dt.datetime:
    if isinstance(value, str):
        value = _parse_datetime(value)
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    raise TypeError("expected a datetime or an ISO timestamp string")


def _to_timestamp(value) -> dt.datetime:
    """TIMESTAMP (no time zone) holds wall-clock times: a naive datetime."""
    value = _as_datetime(value)
    if value.tzinfo is not None:
        raise ValueError("a TIMESTAMP column holds times without a time zone; give a naive datetime "
                         "(TIMESTAMP_LTZ columns take zoned ones)")
    return value


def _to_instant(value) -> dt.datetime:
    """TIMESTAMP_LTZ holds instants: an aware datetime in UTC (a naive one is local time)."""
    return _as_datetime(value).astimezone(dt.timezone.utc)


_CONVERTERS = {
    "BOOLEAN": _to_bool, "TINYINT": _to_integer, "SMALLINT": _to_integer, "INT": _to_integer,
    "BIGINT": _to_integer, "FLOAT": _to_float, "DOUBLE": _to_float, "DECIMAL": _to_decimal,
    "CHAR": _to_string, "VARCHAR": _to_string, "BINARY": _to_bytes, "VARBINARY": _to_bytes,
    "DATE": _to_date, "TIME": _to_time, "TIMESTAMP": _to_timestamp, "TIMESTAMP_LTZ": _to_instant,
}


# ---------------------------------------------------------------- Arrow expressions

def to_arrow(p: Predicate) -> pc.Expression:
    """A pyarrow Expression with SQL semantics (comparisons with NULL are not true)."""
    if isinstance(p, Compare):
        field = pc.field(p.column)
        if p.value is None:  # x = NULL is unknown, and so is NOT (x = NULL)
            return pc.scalar(pa.scalar(None, pa.bool_()))
        return {
            "==": field == p.value, "!=": field != p.value, "<": field < p.value,
            "<=": field <= p.value, ">": field > p.value, ">=": field >= p.value,
        }[p.op]
    if isinstance(p, In):
        values = [v for v in p.values if v is not None]
        field = pc.field(p.column)
        unknown = pa.scalar(None, pa.bool_())
        # is_in answers false (not null) on a NULL value; SQL wants unknown so NOT stays unknown.
        found = field.isin(values) if values else pc.scalar(False)  # an empty set has no type to match
        if len(values) < len(p.values):  # SQL: x IN (1, NULL) is true or unknown, never false
            found = pc.if_else(found, True, unknown)
        expr = pc.if_else(field.is_valid(), found, unknown)
        return ~expr if p.negated else expr
    if isinstance(p, IsNull):
        return pc.field(p.column).is_valid() if p.negated else pc.field(p.column).is_null()
    if isinstance(p, StartsWith):
        return pc.starts_with(pc.field(p.column), p.prefix)
    if isinstance(p, And):
        return _fold(p.children, lambda a, b: a & b)
    if isinstance(p, Or):
        return _fold(p.children, lambda a, b: a | b)
    if isinstance(p, Not):
        return ~to_arrow(p.child)
    raise TypeError(f"not a predicate: {p!r}")


def _fold(children, combine):
    exprs = [to_arrow(c) for c in children]
    out = exprs[0]
    for e in exprs[1:]:
        out = combine(out, e)
    return out


def filter_table(table: pa.Table, p: Predicate | None) -> pa.Table:
    """The rows of `table` where `p` is true (not false, not unknown)."""
    if p is None or table.num_rows == 0:
        return table
    try:
        mask = _mask(table, p)
    except (pa.ArrowException, TypeError, ValueError, KeyError, OverflowError):
        mask = None  # no direct form for these values: Acero binds them as it knows how
    return table.filter(to_arrow(p) if mask is None else mask)


_KERNELS = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
            ">=": pc.greater_equal}


def _mask(table: pa.Table, p: Predicate):
    """`p`'s truth per row (null: unknown) from compute kernels on the columns, for comparisons
    with values of the column's type, null tests and their AND/OR/NOT; None for other forms.
    The same kernels and three-valued logic as `to_arrow`'s expression, without planning an
    Acero filter (which costs a small table several times the filtering)."""
    if isinstance(p, Compare):
        if p.value is None:
            return None
        column = table.column(p.column)
        value = _exact_scalar(p.value, column.type)
        return None if value is None else _KERNELS[p.op](column, value)
    if isinstance(p, IsNull):
        column = table.column(p.column)
        return pc.is_valid(column) if p.negated else pc.is_null(column)
    if isinstance(p, (And, Or)):
        masks = [_mask(table, c) for c in p.children]
        if any(m is None for m in masks):
            return None
        combine = pc.and_kleene if isinstance(p, And) else pc.or_kleene
        out = masks[0]
        for m in masks[1:]:
            out = combine(out, m)
        return out
    if isinstance(p, Not):
        inner = _mask(table, p.child)
        return None if inner is None else pc.invert(inner)
    return None


def _exact_scalar(value, arrow_type: pa.DataType) -> pa.Scalar | None:
    """`value` as a scalar of the column's type when that is exact: its own Arrow type, or a
    cast Arrow checks for loss (integers, decimals, timestamps of the same zone-ness, string
    and binary widths). None otherwise (a fraction against integers, floats of other widths):
    those compare as the expression compares them."""
    scalar = pa.scalar(value)
    if scalar.type == arrow_type:
        return scalar
    source, target = scalar.type, arrow_type
    same_kind = (
        (pa.types.is_integer(source) and pa.types.is_integer(target))
        or (pa.types.is_decimal(source) and pa.types.is_decimal(target))
        or (pa.types.is_timestamp(source) and pa.types.is_timestamp(target) and (source.tz is None) == (target.tz is None))
        or (pa.types.is_string(source) and pa.types.is_large_string(target))
        or (pa.types.is_binary(source) and pa.types.is_large_binary(target))
    )
    return scalar.cast(target, safe=True) if same_kind else None


# ---------------------------------------------------------------- exact evaluation on one row

def eval_values(p: Predicate, values: dict[str, Any]) -> bool | None:
    """Three-valued truth (None = unknown / NULL) over a dict of column -> Python value.
    Columns absent from `values` make the result unknown."""
    if isinstance(p, And):
        results = [eval_values(c, values) for c in p.children]
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True
    if isinstance(p, Or):
        results = [eval_values(c, values) for c in p.children]
        if any(r is True for r in results):
            return True
        return None if any(r is None for r in results) else False
    if isinstance(p, Not):
        inner = eval_values(p.child, values)
        return None if inner is None else not inner
    if p.column not in values:
        return None
    v = values[p.column]
    if isinstance(p, IsNull):
        return (v is not None) if p.negated else (v is None)
    if v is None:
        return None
    if isinstance(p, Compare):
        return None if p.value is None else _compare(v, p.op, p.value)
    if isinstance(p, In):
        present = [x for x in p.values if x is not None]
        hit = v in present
        if not hit and len(present) < len(p.values):
            return None  # x IN (1, NULL) with x = 2 is unknown
        return (not hit) if p.negated else hit
    if isinstance(p, StartsWith):
        return isinstance(v, str) and v.startswith(p.prefix)
    raise TypeError(f"not a predicate: {p!r}")


def _compare(a, op: str, b) -> bool | None:
    try:
        return {
            "==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
        }[op]
    except TypeError:
        return None


# ---------------------------------------------------------------- stats pruning

@dataclass(frozen=True)
class ColumnStats:
    min: Any
    max: Any
    null_count: int | None


def may_match_stats(p: Predicate, stats: dict[str, ColumnStats], row_count: int) -> bool:
    """False only if no row described by `stats` can satisfy `p`."""
    if isinstance(p, And):
        return all(may_match_stats(c, stats, row_count) for c in p.children)
    if isinstance(p, Or):
        return any(may_match_stats(c, stats, row_count) for c in p.children)
    if isinstance(p, Not):
        dual = negate(p.child)
        return True if isinstance(dual, Not) else may_match_stats(dual, stats, row_count)
    if isinstance(p, In) and p.negated and any(v is None for v in p.values):
        return False  # x NOT IN (..., NULL) is never true
    s = stats.get(p.column)
    if s is None:
        return True
    all_null = s.null_count is not None and s.null_count >= row_count
    if isinstance(p, IsNull):
        if p.negated:
            return not all_null
        return s.null_count is None or s.null_count > 0
    if all_null:
        return False
    if s.min is None or s.max is None:
        return True
    try:
        if isinstance(p, Compare):
            return _compare_may_match(p.op, p.value, s.min, s.max)
        if isinstance(p, In):
            if p.negated:
                return not (s.min == s.max and s.min in p.values)
            return any(v is not None and s.min <= v <= s.max for v in p.values)
        if isinstance(p, StartsWith):
            if not isinstance(s.min, str):
                return True
            lo = s.min[: len(p.prefix)]
            hi = s.max[: len(p.prefix)]
            return lo <= p.prefix <= hi
    except TypeError:
        return True
    return True


def _compare_may_match(op: str, value, lo, hi) -> bool:
    if value is None:
        return False
    if op == "==":
        return lo <= value <= hi
    if op == "!=":
        return not (lo == hi == value)
    if op == "<":
        return lo < value
    if op == "<=":
        return lo <= value
    if op == ">":
        return hi > value
    if op == ">=":
        return hi >= value
    return True


_DUAL = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def negate(p: Predicate) -> Predicate:
    """NOT p with the negation pushed down to the leaves where each has an exact dual: De Morgan
    over And / Or, a comparison's opposite, In and IsNull flipped, NOT NOT x as x. A leaf
    without a dual (StartsWith) stays `Not(leaf)`, so a Not in the result wraps only such a
    leaf: what pruning (stats, file indexes) reads as "may match"."""
    if isinstance(p, Compare):
        return Compare(p.column, _DUAL[p.op], p.value)
    if isinstance(p, In):
        return In(p.column, p.values, not p.negated)
    if isinstance(p, IsNull):
        return IsNull(p.column, not p.negated)
    if isinstance(p, And):
        return Or(tuple(negate(c) for c in p.children))
    if isinstance(p, Or):
        return And(tuple(negate(c) for c in p.children))
    if isinstance(p, Not):
        return p.child
    return Not(p)
