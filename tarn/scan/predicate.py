"""Row predicates: build them with `col("a") > 5`, evaluate them three ways.

- `to_arrow(p)`: a `pyarrow.compute.Expression` filtering rows (vectorised);
- `may_match_stats(p, mins, maxs, null_counts, row_count)`: can a file / manifest with these
  per-column stats hold a matching row? (False only when it certainly cannot);
- `eval_values(p, values)`: exact truth over one row of Python values (used for partitions).

Unknown columns in stats/partition evaluation count as "may match".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import InvalidArgument, SchemaMismatch

_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


class Predicate:
    def __and__(self, other: "Predicate") -> "Predicate":
        return And((self, other))

    def __or__(self, other: "Predicate") -> "Predicate":
        return Or((self, other))

    def __invert__(self) -> "Predicate":
        return Not(self)

    def __bool__(self):
        raise InvalidArgument(
            f"the truth value of a predicate ({self!r}) is ambiguous: combine predicates with "
            "& (and), | (or) and ~ (not), not with the Python keywords 'and', 'or', 'not'; write "
            "a range as (col('x') > 1) & (col('x') < 5), not 1 < col('x') < 5")


@dataclass(frozen=True)
class Compare(Predicate):
    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class In(Predicate):
    column: str
    values: tuple
    negated: bool = False


@dataclass(frozen=True)
class IsNull(Predicate):
    column: str
    negated: bool = False


@dataclass(frozen=True)
class StartsWith(Predicate):
    column: str
    prefix: str


@dataclass(frozen=True)
class And(Predicate):
    children: tuple


@dataclass(frozen=True)
class Or(Predicate):
    children: tuple


@dataclass(frozen=True)
class Not(Predicate):
    child: Predicate


@dataclass(frozen=True)
class Column:
    """`col("x")`: build predicates with Python operators."""

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
        return In(self.name, tuple(values))

    def not_in(self, values) -> In:
        return In(self.name, tuple(values), negated=True)

    def is_null(self) -> IsNull:
        return IsNull(self.name)

    def is_not_null(self) -> IsNull:
        return IsNull(self.name, negated=True)

    def startswith(self, prefix: str) -> StartsWith:
        return StartsWith(self.name, prefix)

    __hash__ = object.__hash__


def col(name: str) -> Column:
    return Column(name)


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


# ---------------------------------------------------------------- Arrow expressions

def to_arrow(p: Predicate) -> pc.Expression:
    """A pyarrow Expression with SQL semantics (comparisons with NULL are not true)."""
    if isinstance(p, Compare):
        field = pc.field(p.column)
        if p.value is None:
            return pc.scalar(False)
        return {
            "==": field == p.value, "!=": field != p.value, "<": field < p.value,
            "<=": field <= p.value, ">": field > p.value, ">=": field >= p.value,
        }[p.op]
    if isinstance(p, In):
        values = [v for v in p.values if v is not None]
        field = pc.field(p.column)
        # is_in answers false (not null) on a NULL value; SQL wants unknown so NOT stays unknown.
        expr = pc.if_else(field.is_valid(), field.isin(values), pa.scalar(None, pa.bool_()))
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
    if p is None or table.num_rows == 0:
        return table
    return table.filter(to_arrow(p))


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
        hit = v in [x for x in p.values if x is not None]
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
        return _may_match_negated(p.child, stats, row_count)
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


def _may_match_negated(p: Predicate, stats, row_count) -> bool:
    """Stats pruning for NOT p: push the negation down where it has an exact dual."""
    if isinstance(p, Compare):
        dual = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[p.op]
        return may_match_stats(Compare(p.column, dual, p.value), stats, row_count)
    if isinstance(p, In):
        return may_match_stats(In(p.column, p.values, not p.negated), stats, row_count)
    if isinstance(p, IsNull):
        return may_match_stats(IsNull(p.column, not p.negated), stats, row_count)
    if isinstance(p, And):
        return any(_may_match_negated(c, stats, row_count) for c in p.children)
    if isinstance(p, Or):
        return all(_may_match_negated(c, stats, row_count) for c in p.children)
    if isinstance(p, Not):
        return may_match_stats(p.child, stats, row_count)
    return True
