"""The field aggregate functions, defined once for the aggregation and partial-update engines.

Java Paimon has one FieldAggregator per function (`agg(acc, v)`, `aggReversed(acc, v)` which
defaults to `agg(v, acc)`, `retract(acc, v)`); AggregateMergeFunction folds every column of a key
through one, and PartialUpdateMergeFunction reuses them for the fields of its sequence groups.
Here each function folds a column for all keys at once: it takes the column, a
`tarn.lsm.folds.Fold` (which rows of each key reach the aggregator, and how) and the field's
options, and gives one value per key, with numpy segment reductions and Arrow kernels.

This module also holds what both engines check a table against: the functions tarn merges and
the column types each accepts, the aliases, the functions that can retract and those that take
reversed rows (which partial-update needs inside a sequence group).

Exceptions to "no Python loop per row": product with retractions (or on DECIMAL) folds in
order, one vectorised step per position within a key, so its cost grows with the longest key
run rather than with the row count; rbm32, rbm64, hll_sketch and theta_sketch merge their
serialised values two at a time as Java does (a Python loop over the rows of the keys holding
two or more non-null values, each step numpy per bitmap container or one DataSketches call),
because the bytes Java writes depend on that order of steps. That replay costs about 0.3 ms per
bitmap value (numpy calls per container) in keys that hold several values.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import encode_rows
from tarn.codec.roaring import (COOKIE, COOKIE_NO_RUN, BadValue, merge_rbm64, or_rbm32, read_rbm32, read_rbm64,
                                write_rbm32, write_rbm64)
from tarn.codec.sketches import merge_hll, merge_theta, read_hll, read_theta
from tarn.errors import InvalidOption, TarnError
from tarn.lsm import kv
from tarn.lsm.folds import Fold, hash_fold, take_rows
from tarn.options import AGGREGATE_FUNCTIONS, Options
from tarn.types import INTEGER_ROOTS, MAX_LENGTH, NUMERIC_ROOTS, DataField, DataType

LAST_NON_NULL = "last_non_null_value"
PRIMARY_KEY = "primary-key"

# Functions tarn merges, with the test each column type must pass.
_ANY = lambda t: True  # noqa: E731
ACCEPTS = {
    "sum": lambda t: t.root in NUMERIC_ROOTS,
    "count": lambda t: t.root in ("INT", "BIGINT"),
    "product": lambda t: t.root in NUMERIC_ROOTS,
    "max": lambda t: t.root not in ("ARRAY", "MAP", "MULTISET", "ROW"),
    "min": lambda t: t.root not in ("ARRAY", "MAP", "MULTISET", "ROW"),
    "last_value": _ANY,
    LAST_NON_NULL: _ANY,
    "first_value": _ANY,
    "first_non_null_value": _ANY,
    "first_not_null_value": _ANY,  # Paimon's legacy name of first_non_null_value
    "listagg": lambda t: t.root == "VARCHAR" and t.length == MAX_LENGTH,
    "bool_and": lambda t: t.root == "BOOLEAN",
    "bool_or": lambda t: t.root == "BOOLEAN",
    "nested_update": lambda t: t.root == "ARRAY" and t.element.root == "ROW",
    "nested-update": lambda t: t.root == "ARRAY" and t.element.root == "ROW",  # the seed's spelling
    "collect": lambda t: t.root == "ARRAY",
    "merge_map": lambda t: t.root == "MAP",
    "merge_map_with_keytime": lambda t: (t.root == "MAP" and t.value.root == "ROW"
                                         and len(t.value.fields) >= 2),
    "nested_partial_update": lambda t: t.root == "ARRAY" and t.element.root == "ROW",
    "rbm32": lambda t: t.root == "VARBINARY",
    "rbm64": lambda t: t.root == "VARBINARY",
    "hll_sketch": lambda t: t.root == "VARBINARY",
    "theta_sketch": lambda t: t.root == "VARBINARY",
    PRIMARY_KEY: _ANY,
}
ALIASES = {"first_not_null_value": "first_non_null_value", "nested-update": "nested_update"}
EXPECTED = {
    "sum": "a numeric type", "count": "INT or BIGINT", "product": "a numeric type", "max": "a comparable type",
    "min": "a comparable type", "listagg": "STRING", "bool_and": "BOOLEAN", "bool_or": "BOOLEAN",
    "nested_update": "ARRAY<ROW<...>>", "nested-update": "ARRAY<ROW<...>>", "collect": "ARRAY<...>",
    "merge_map": "MAP<...>", "merge_map_with_keytime": "MAP<..., ROW<...>> with a ROW of at least 2 fields",
    "nested_partial_update": "ARRAY<ROW<...>>", "rbm32": "VARBINARY (BYTES)", "rbm64": "VARBINARY (BYTES)",
    "hll_sketch": "VARBINARY (BYTES)", "theta_sketch": "VARBINARY (BYTES)",
}
# Functions whose values are serialised structures (checked when a merge reads them).
BINARY = ("rbm32", "rbm64", "hll_sketch", "theta_sketch")
# Functions that read `fields.<f>.distinct`.
DISTINCT = ("collect", "listagg")
# Paimon functions tarn does not merge (yet).
NOT_SUPPORTED = tuple(f for f in AGGREGATE_FUNCTIONS if f not in ACCEPTS)
RETRACTABLE = ("sum", "count", "product", "last_value", LAST_NON_NULL, "nested_update", "collect", "merge_map",
               PRIMARY_KEY)
# Functions that fold reversed rows, which partial-update needs inside a sequence group. count
# is not a FieldAggregator (it starts from the value of a key's first row) and has no reversed
# form; tarn does not fold merge_map_with_keytime's reversed form (Java's agg(v, acc) of it).
REVERSIBLE = ("sum", "product", "max", "min", "last_value", LAST_NON_NULL, "first_value",
              "first_non_null_value", "listagg", "bool_and", "bool_or", "nested_update", "collect",
              "merge_map", "nested_partial_update", "rbm32", "rbm64", "hll_sketch", "theta_sketch")

# Java's Character.isWhitespace, the test StringUtils.isBlank applies to every char (listagg).
_BLANK = r"^[\t\n\x{0B}\f\r\x{1C}-\x{1F} \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200A}\x{2028}\x{2029}\x{205F}\x{3000}]*$"


def canonical(function: str) -> str:
    """The function a name stands for (aliases resolved)."""
    return ALIASES.get(function, function)


@dataclass(frozen=True)
class FieldAgg:
    """How one column aggregates: its function and that function's per-column options."""

    name: str
    type: DataType
    function: str
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False
    nested_key: tuple[str, ...] = ()
    nested_sequence: tuple[str, ...] = ()
    null_strategy: str = "merge"
    count_limit: int = 2147483647
    ts_field: str | None = None


def field_agg(f: DataField, options: Options, function: str) -> FieldAgg:
    """The column `f` aggregated by `function`, with its `fields.<f>.*` options."""
    prefix = f"fields.{f.name}."
    return FieldAgg(
        name=f.name, type=f.type, function=function,
        ignore_retract=bool(options.bool(prefix + "ignore-retract")),
        delimiter=options.get(prefix + "list-agg-delimiter"),
        distinct=bool(options.bool(prefix + "distinct")),
        nested_key=tuple(options.list(prefix + "nested-key")),
        nested_sequence=tuple(options.list(prefix + "nested-sequence-field")),
        null_strategy=(options.get(prefix + "nested-key-null-strategy") or "merge").lower(),
        count_limit=options.int(prefix + "count-limit"),
        ts_field=options.get(prefix + "ts-field"),
    )


# ---------------------------------------------------------------------------------------------
# checks at table creation


def check_name(name: str, key: str, table_name: str) -> None:
    """Refuse a function name tarn does not know or does not merge (`key`: the option)."""
    if name in ACCEPTS:
        return
    if name in NOT_SUPPORTED:
        raise InvalidOption(f"table {table_name}: option '{key}': aggregate function '{name}' is not supported by tarn")
    raise InvalidOption(f"table {table_name}: option '{key}': unknown aggregate function '{name}'; "
                        f"known: {', '.join(sorted(ACCEPTS))}")


def check_field(agg: FieldAgg, key: str, table_name: str) -> None:
    """Refuse a function that does not fit its column's type, or options of it that do not fit
    the column (`key`: the option that chose the function)."""
    if not ACCEPTS[agg.function](agg.type):
        raise InvalidOption(f"table {table_name}: option '{key}': aggregate function '{agg.function}' "
                            f"needs {EXPECTED[agg.function]} but column '{agg.name}' is {agg.type}")
    function = canonical(agg.function)
    if function in ("nested_update", "nested_partial_update"):
        _check_nested(agg, table_name)
    if function == "nested_partial_update" and not agg.nested_key:
        raise InvalidOption(f"table {table_name}: aggregate function 'nested_partial_update' on column "
                            f"'{agg.name}' needs option 'fields.{agg.name}.nested-key'")
    if function == "merge_map_with_keytime":
        _check_keytime(agg, table_name)
    if agg.distinct and function not in DISTINCT:
        raise InvalidOption(f"table {table_name}: option 'fields.{agg.name}.distinct' applies to collect and "
                            f"listagg, not to '{agg.function}' (column '{agg.name}')")
    if agg.function == "listagg" and agg.distinct and not agg.delimiter:
        raise InvalidOption(f"table {table_name}: option 'fields.{agg.name}.list-agg-delimiter' must not "
                            f"be empty when 'fields.{agg.name}.distinct' is set")


def _check_keytime(agg: FieldAgg, table_name: str) -> None:
    row = agg.type.value
    names = [f.name for f in row.fields]
    if agg.ts_field is not None and agg.ts_field not in names:
        raise InvalidOption(f"table {table_name}: option 'fields.{agg.name}.ts-field': timestamp field "
                            f"'{agg.ts_field}' is not a field of {row} (fields: {', '.join(names)})")
    stamp = row.fields[names.index(agg.ts_field) if agg.ts_field else len(names) - 1]
    if stamp.type.root not in ("CHAR", "VARCHAR"):
        raise InvalidOption(f"table {table_name}: aggregate function 'merge_map_with_keytime' on column "
                            f"'{agg.name}' compares the timestamp field '{stamp.name}' as a string, but it is "
                            f"{stamp.type}")


def _check_nested(agg: FieldAgg, table_name: str) -> None:
    names = {f.name for f in agg.type.element.fields}
    for option, columns in (("nested-key", agg.nested_key), ("nested-sequence-field", agg.nested_sequence)):
        for c in columns:
            if c not in names:
                raise InvalidOption(f"table {table_name}: option 'fields.{agg.name}.{option}': "
                                    f"'{c}' is not a field of {agg.type}")
    if agg.nested_sequence and not agg.nested_key:
        raise InvalidOption(f"table {table_name}: option 'fields.{agg.name}.nested-sequence-field' needs "
                            f"'fields.{agg.name}.nested-key'")
    if agg.null_strategy not in ("merge", "ignore", "error"):
        raise InvalidOption(f"table {table_name}: option 'fields.{agg.name}.nested-key-null-strategy' "
                            f"must be merge, ignore or error, not '{agg.null_strategy}'")


# ---------------------------------------------------------------------------------------------
# folding


def aggregate(column, fold: Fold, agg: FieldAgg) -> pa.Array:
    """The value of every key of `fold` for the column aggregated as `agg` says, typed as `column`."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    function = canonical(agg.function)
    if function not in _FUNCTIONS:
        raise InvalidOption(f"column '{agg.name}': aggregate function '{agg.function}' is not supported by tarn")
    if agg.ignore_retract:
        fold = fold.without_retract()
    return _FUNCTIONS[function](column, agg, fold).cast(column.type)


def _valid(column: pa.Array) -> np.ndarray:
    if column.null_count == 0:
        return np.ones(len(column), dtype=bool)
    return column.is_valid().to_numpy(zero_copy_only=False)


def _added(fold: Fold) -> np.ndarray:
    """Rows whose value goes into the accumulator: initial, agg and reversed rows."""
    return fold.init_rows() | fold.agg | fold.reversed


def _primary_key(column, agg, fold):
    return column.take(pa.array(fold.lasts))


# -- last / first values --------------------------------------------------------------------------


def _last_value(column, agg, fold):
    """The last value set (a reversed row keeps the accumulator); null after a retraction."""
    last = fold.last(fold.init_rows() | fold.agg | fold.retract)
    return take_rows(column, np.where((last >= 0) & fold.retract[np.maximum(last, 0)], -1, last))


def _last_non_null_value(column, agg, fold):
    """The last non-null value set; a retracted non-null value clears it; a reversed row fills
    it only while it is null."""
    valid = _valid(column)
    last = fold.last((fold.agg | fold.retract) & valid)
    acc = np.where(last >= 0, np.where(fold.retract[np.maximum(last, 0)], -1, last), fold.init)
    acc_null = (acc < 0) | ~valid[np.maximum(acc, 0)]
    fill = fold.first(fold.reversed & valid & fold.after(np.maximum(last, fold.init)))
    return take_rows(column, np.where(acc_null, fill, acc))


def _last_after(fold: Fold, mask: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Per key: the last row of `mask` after `position`, else -1."""
    last = fold.last(mask)
    return np.where(last > position, last, -1)


def _first_value(column, agg, fold):
    """The first value folded in. The first agg or reversed row initialises the aggregator (a
    reversed one keeps the accumulator); once initialised, a reversed row takes over (Java's
    aggReversed is agg(v, acc)). An initial row keeps the state the rows before it left."""
    n, init = fold.rows, fold.init
    seen = fold.any(fold.seen)
    first = fold.first(fold.agg | fold.reversed, n)
    started = np.where(seen, init, first)  # from here on a reversed row takes over
    value = np.where(seen | (first == n) | ~fold.agg[np.minimum(first, n - 1)], init, first)
    late = _last_after(fold, fold.reversed, started)
    return take_rows(column, np.where(late >= 0, late, value))


def _first_non_null_value(column, agg, fold):
    """The first non-null value folded in (a non-null accumulator initialises the aggregator
    when a reversed row meets it). Before the initial row, the state is modelled as "some
    non-null value reached it" (exact unless it only ever met reversed rows there)."""
    n, init = fold.rows, fold.init
    valid = _valid(column)
    seen = fold.any(fold.seen & valid)
    init_valid = (init >= 0) & valid[np.maximum(init, 0)]
    first_add = fold.first(fold.agg & valid, n)
    first_any_r = fold.first(fold.reversed, n)
    first_r = fold.first(fold.reversed & valid, n)
    second_r = fold.first(fold.reversed & fold.after(np.minimum(first_r, n - 1)) & (first_r < n)[fold.key_of], n)
    # state "filled, not yet initialised" (a non-null initial value): the next non-null agg row
    # wins, or a reversed row initialises it as it is
    entry1 = np.minimum(first_add, first_any_r)
    acc1 = np.where(first_add < first_any_r, first_add, init)
    # state "empty": a non-null agg row, or a second reversed row after a non-null reversed one
    entry0 = np.minimum(first_add, second_r)
    acc0 = np.where(first_add < second_r, first_add, first_r)
    acc0 = np.where(entry0 == n, np.where(first_r < n, first_r, init), acc0)
    entry = np.where(seen, init, np.where(init_valid, entry1, entry0))
    acc = np.where(seen, init, np.where(init_valid, np.where(entry1 == n, init, acc1), acc0))
    late = np.where(entry < n, _last_after(fold, fold.reversed, entry), -1)
    return take_rows(column, np.where(late >= 0, late, acc))


# -- min / max / bool_and / bool_or ---------------------------------------------------------------


def _max(column, agg, fold):
    return hash_fold(column, _added(fold) & _valid(column), fold.key_of, fold.keys, "max")


def _min(column, agg, fold):
    return hash_fold(column, _added(fold) & _valid(column), fold.key_of, fold.keys, "min")


def _bool(column, fold, is_and: bool):
    mask = _added(fold) & _valid(column)
    values = np.where(mask, column.fill_null(is_and).to_numpy(zero_copy_only=False), is_and)
    reduced = (np.logical_and if is_and else np.logical_or).reduceat(values, fold.starts)
    return pa.array(reduced, mask=~fold.any(mask))


def _bool_and(column, agg, fold):
    return _bool(column, fold, True)


def _bool_or(column, agg, fold):
    return _bool(column, fold, False)


# -- sum / count ----------------------------------------------------------------------------------

_INT_RANGE = {"TINYINT": 2 ** 7, "SMALLINT": 2 ** 15, "INT": 2 ** 31, "BIGINT": 2 ** 63}


def _sum(column, agg, fold):
    """Adds agg, reversed and initial values, subtracts retracted ones (an initial row that is
    retracted adds nothing, yet makes the sum non-null)."""
    valid = _valid(column)
    added = _added(fold)
    used = (added | fold.retract) & valid
    negative = fold.retract & ~added
    cancelled = fold.retract & added & valid
    present = fold.any(used)
    if agg.type.root == "DECIMAL":
        signed = pc.if_else(pa.array(negative), pc.negate(column), column)
        if cancelled.any():
            signed = pc.if_else(pa.array(cancelled), pa.scalar(Decimal(0)).cast(column.type), signed)
        return _fit_decimal(hash_fold(signed, used, fold.key_of, fold.keys, "sum"), agg.type)
    dtype = _numpy_type(agg.type)
    values = np.where(used & ~cancelled, column.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype), 0)
    values = np.where(negative, -values, values).astype(dtype)
    if agg.type.root in INTEGER_ROOTS:
        _check_prefix_sums(values, agg, fold)
    return pa.array(fold.total(values), mask=~present)


def _count(column, agg, fold):
    """count (Paimon <= 0.8, documented in the primary-key table page): the value of the key's
    first row (its initial row, if any) starts the count (a fresh row carries 1, a merged row its
    count so far), every later non-null value adds one, every later retracted non-null value
    takes one away."""
    valid = _valid(column)
    origin = np.where(fold.init >= 0, fold.init, fold.starts)
    later = fold.after(origin)
    steps = np.where(later & valid & fold.agg, 1, 0) - np.where(later & valid & fold.retract, 1, 0)
    first = column.take(pa.array(origin)).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    counted = first + fold.total(steps.astype(np.int64))
    present = fold.any(valid & (fold.init_rows() | fold.agg | fold.retract))
    return pa.array(counted, mask=~present)


def _numpy_type(t: DataType):
    return {"FLOAT": np.float32, "DOUBLE": np.float64}.get(t.root, np.int64)


def _check_prefix_sums(values: np.ndarray, agg: FieldAgg, fold: Fold) -> None:
    """Java adds with overflow checks at every step: check every running sum of every key."""
    with np.errstate(over="ignore"):
        exact = np.cumsum(values)
        approx = np.cumsum(values.astype(np.float64))
        sizes = fold.sizes
        before = np.repeat(exact[fold.starts] - values[fold.starts], sizes)
        before_f = np.repeat(approx[fold.starts] - values[fold.starts], sizes)
        running, running_f = exact - before, approx - before_f
    limit = _INT_RANGE[agg.type.root]
    bad = (np.abs(running_f - running.astype(np.float64)) > 2.0 ** 62) | (running < -limit) | (running > limit - 1)
    if bad.any():
        raise TarnError(f"column '{agg.name}': sum overflows {agg.type}")


def _fit_decimal(values: pa.Array, t: DataType) -> pa.Array:
    """Java's Decimal.fromBigDecimal: null when the value needs more than the type's precision."""
    target = pa.decimal128(t.precision, t.scale)
    wide = pc.cast(values, pa.decimal256(76, t.scale))
    limit = pa.scalar(10 ** (t.precision - t.scale), pa.decimal256(76, 0)).cast(pa.decimal256(76, t.scale))
    too_big = pc.fill_null(pc.greater_equal(pc.abs(wide), limit), False)
    return pc.cast(pc.if_else(too_big, pa.nulls(len(values), wide.type), wide), target)


# -- product --------------------------------------------------------------------------------------


def _product(column, agg, fold):
    if agg.type.root == "DECIMAL":
        return _product_decimal(column, agg, fold)
    valid = _valid(column)
    if (fold.retract & valid).any():
        return _product_in_order(column, agg, fold)
    used = _added(fold) & valid
    dtype = _numpy_type(agg.type)
    values = np.where(used, column.fill_null(1).to_numpy(zero_copy_only=False).astype(dtype), 1).astype(dtype)
    with np.errstate(over="ignore"):  # int64 products wrap modulo 2**64, as Java's long does
        product = np.multiply.reduceat(values, fold.starts)
    return pa.array(_wrap(product, agg.type), mask=~fold.any(used))


def _wrap(values: np.ndarray, t: DataType) -> np.ndarray:
    """Java's integer arithmetic: keep the low bits of the type's width (two's complement)."""
    if t.root not in ("TINYINT", "SMALLINT", "INT"):
        return values
    return values.astype({"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32}[t.root]).astype(np.int64)


def _in_order(fold: Fold):
    """(keys, rows) of each step of an in-order fold: the n-th row of every key long enough."""
    sizes = fold.sizes
    for step in range(int(sizes.max())):
        keys = np.flatnonzero(sizes > step)
        yield keys, fold.starts[keys] + step


def _product_in_order(column, agg, fold):
    """The product fold row by row in order, one vectorised step per position within a key,
    as Java's FieldProductAgg: a null accumulator takes the next value (retracted or not),
    integers multiply and divide (truncating) with wrapping arithmetic, division by zero fails."""
    dtype = _numpy_type(agg.type)
    integer = agg.type.root in INTEGER_ROOTS
    values = column.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype)
    valid = _valid(column)
    has = (fold.init >= 0) & valid[np.maximum(fold.init, 0)]
    acc = np.where(has, values[np.maximum(fold.init, 0)], 0).astype(dtype)
    used = (fold.agg | fold.reversed | fold.retract) & valid
    for keys, row in _in_order(fold):
        x, use, back = values[row], used[row], fold.retract[row]
        a = acc[keys]
        start = use & ~has[keys]
        mul = use & ~back & has[keys]
        div = use & back & has[keys]
        with np.errstate(all="ignore"):
            if integer:
                if (div & (x == 0)).any():
                    raise TarnError(f"column '{agg.name}': product retraction divides by zero")
                product = _wrap(a * x, agg.type)
                quotient = _wrap(_truncating_divide(a, np.where(x == 0, 1, x)), agg.type)
            else:
                product, quotient = a * x, a / x
        acc[keys] = np.where(start, x, np.where(mul, product, np.where(div, quotient, a)))
        has[keys] |= start
    return pa.array(acc, mask=~has)


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Java integer division: rounds toward zero; Long.MIN_VALUE / -1 wraps to itself."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        return q + ((q * b != a) & ((a < 0) != (b < 0)))


def _product_decimal(column, agg, fold):
    """DECIMAL product in order: every step rounds HALF_UP to the column's scale and turns null
    when it overflows the precision (Java's Decimal.fromBigDecimal); a null accumulator takes the
    next value, as in Java."""
    t = agg.type
    if t.precision > 37:
        raise TarnError(f"column '{agg.name}': product on {t} is not supported (precision above 37)")
    exact = pa.decimal256(t.precision, t.scale)
    values = pc.cast(column, exact)
    used = (fold.agg | fold.reversed | fold.retract) & _valid(column)
    zero = ~np.asarray(pc.fill_null(pc.not_equal(values, pa.scalar(0, exact)), True))
    acc = take_rows(values, fold.init)
    for keys, row in _in_order(fold):
        x, a = values.take(pa.array(row)), acc.take(pa.array(keys))
        use, back, empty = used[row], fold.retract[row], ~_valid(a)
        start, mul, div = use & ~back & empty, use & ~back & ~empty, use & back & ~empty
        if (div & zero[row]).any():
            raise TarnError(f"column '{agg.name}': product retraction divides by zero")
        divisor = pc.if_else(pa.array(div), x, pa.scalar(1, exact))
        product = _fit_decimal(_round_to(pc.multiply(a, x), t), t).cast(exact)
        quotient = _fit_decimal(_round_to(pc.divide(a, divisor), t), t).cast(exact)
        new = pc.if_else(pa.array(start), x, pc.if_else(pa.array(mul), product,
                                                         pc.if_else(pa.array(div), quotient, a)))
        slot = np.full(fold.keys, -1)
        slot[keys] = np.arange(len(keys))
        acc = pc.if_else(pa.array(slot >= 0), take_rows(new, slot), acc)
    return acc.cast(pa.decimal128(t.precision, t.scale))


def _round_to(values: pa.Array, t: DataType) -> pa.Array:
    return pc.round(values, ndigits=t.scale, round_mode="half_towards_infinity")


# -- listagg --------------------------------------------------------------------------------------


def _blank(strings: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(strings, _BLANK), True).to_numpy(zero_copy_only=False)


def _lists(values: pa.Array, key_of_value: np.ndarray, count: int, present: np.ndarray) -> pa.ListArray:
    """One list per key of the values (grouped by key, in order); null where not `present`."""
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.bincount(key_of_value, minlength=count), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(~present))


def _placed(fold: Fold, rows: np.ndarray) -> np.ndarray:
    """`rows` (ascending) in the order their values end up in an accumulator that agg rows
    append to and reversed rows prepend to (Java's aggReversed is agg(v, acc)): per key, the
    reversed rows newest first, then the others oldest first."""
    if not fold.reversed[rows].any():
        return rows
    place = np.where(fold.reversed[rows], -rows - 1, rows)
    return rows[np.lexsort((place, fold.key_of[rows]))]


def _listagg(column, agg, fold):
    """The non-blank strings joined by the delimiter (reversed rows in front). With nothing
    non-blank, Java keeps the accumulator as it is: the initial row's value, or the last
    reversed row's (agg(v, acc) takes v while acc is blank)."""
    blank = _blank(column)
    rows = _placed(fold, np.flatnonzero(_added(fold) & ~blank))
    strings = column.take(pa.array(rows, type=pa.int64()))
    key_of = fold.key_of[rows]
    present = np.bincount(key_of, minlength=fold.keys) > 0
    if agg.distinct:
        strings, key_of = _distinct_tokens(strings, key_of, agg.delimiter)
    joined = pc.binary_join(_lists(strings, key_of, fold.keys, present), agg.delimiter)
    if present.all():
        return joined
    last_reversed = fold.last(fold.reversed)
    kept = take_rows(column, np.where(last_reversed >= 0, last_reversed, fold.init))
    return pc.if_else(pa.array(present), joined, kept.cast(joined.type))


def _distinct_tokens(strings: pa.Array, key_of: np.ndarray, delimiter: str):
    """The tokens a distinct listagg keeps: all of the key's first string (Java keeps it as it
    is), then each later non-blank token not seen before for the key."""
    first_string = np.ones(len(key_of), dtype=bool)
    first_string[1:] = key_of[1:] != key_of[:-1]
    split = pc.split_pattern(strings, delimiter)
    tokens = pc.list_flatten(split)
    parent = pc.list_parent_indices(split).to_numpy()
    token_key = key_of[parent]
    by_value = pa.table({"r": token_key, "t": tokens, "p": np.arange(len(tokens))})
    order = pc.sort_indices(by_value, sort_keys=[("r", "ascending"), ("t", "ascending"), ("p", "ascending")])
    order = order.to_numpy().astype(np.int64)
    first_seen = np.zeros(len(tokens), dtype=bool)
    if len(order):
        sorted_table = pa.table({"r": token_key[order], "t": tokens.take(pa.array(order))})
        last_of_value = kv.key_changes(sorted_table, ["r", "t"])
        first_of_value = np.concatenate([[True], last_of_value[:-1]])
        first_seen[order] = first_of_value
    keep = first_string[parent] | (first_seen & ~_blank(tokens))
    return tokens.filter(pa.array(keep)), token_key[keep]


# -- nested_update --------------------------------------------------------------------------------


def _nested_update(column, agg, fold):
    """ARRAY<ROW> merged by nested key (the last or highest nested-sequence element wins, a
    retraction removes the key) or, without a key, appended (a retraction removes equal elements
    added before it); reversed rows go in front and lose ties (Java's agg(v, acc) merges acc into
    v). Elements keep the order in which their key first appears in the result (Java's order is a
    HashMap's)."""
    valid = _valid(column)
    added = _added(fold) & valid
    retracted = fold.retract & valid
    # one entry per row and role: a retracted initial row adds its elements, then removes them
    rows = np.concatenate([np.flatnonzero(added), np.flatnonzero(retracted)])
    entry_retract = np.arange(len(rows)) >= np.count_nonzero(added)
    entry_time = 2 * rows + entry_retract
    entry_place = np.where(fold.reversed[rows] & ~entry_retract, -2 * rows - 1, 2 * rows)
    lists = column.take(pa.array(rows, type=pa.int64()))
    present = fold.any(added)
    parent = pc.list_parent_indices(lists).to_numpy()
    elements = pc.list_flatten(lists)
    real = _valid(elements)
    elements, parent = elements.filter(pa.array(real)), parent[real]
    element_key = fold.key_of[rows][parent]
    element_retract, element_time = entry_retract[parent], entry_time[parent]
    # the order of the elements in the result: per key, by entry place, then within the entry
    place = np.empty(len(parent), dtype=np.int64)
    place[np.lexsort((np.arange(len(parent)), entry_place[parent], element_key))] = np.arange(len(parent))
    row_type = agg.type.element
    key_names = agg.nested_key or tuple(f.name for f in row_type.fields)
    key_fields = [next(f for f in row_type.fields if f.name == k) for k in key_names]
    key_columns = [elements.field(k) for k in key_names]
    if agg.nested_key and agg.null_strategy != "merge" and len(elements):
        any_null = np.zeros(len(elements), dtype=bool)
        for c in key_columns:
            any_null |= ~_valid(c)
        if any_null.any() and agg.null_strategy == "error":
            raise TarnError(f"column '{agg.name}': nested key {list(key_names)} contains null")
        keep = ~any_null
        elements, key_columns = elements.filter(pa.array(keep)), [c.filter(pa.array(keep)) for c in key_columns]
        element_key, element_retract = element_key[keep], element_retract[keep]
        element_time, place = element_time[keep], place[keep]
    winners = _nested_winners(elements, key_columns, key_fields, element_key, element_retract, element_time,
                              place, agg)
    values = elements.take(pa.array(winners)) if len(winners) else elements.slice(0, 0)
    merged = _lists(values, element_key[winners], fold.keys, present).cast(column.type)
    # Java takes a value as it is when it becomes the accumulator whole: the initial row's, or a
    # reversed row's meeting a null accumulator (agg(v, null) is v); a key that nothing changes
    # after that keeps it exactly
    first = fold.first((fold.agg | fold.reversed) & valid)
    taken = np.where((fold.init >= 0) & valid[np.maximum(fold.init, 0)], fold.init,
                     np.where((first >= 0) & fold.reversed[np.maximum(first, 0)], first, -1))
    changes = (fold.agg & valid) | fold.reversed | retracted
    untouched = (taken >= 0) & ~fold.any(changes & (fold.after(taken) | (fold.init_rows() & retracted)))
    if not untouched.any():
        return merged
    return pc.if_else(pa.array(untouched), take_rows(column, np.where(untouched, taken, -1)).cast(merged.type),
                      merged)


def _nested_winners(elements, key_columns, key_fields, element_key, element_retract, element_time, place,
                    agg) -> np.ndarray:
    """Indices of the surviving elements, grouped by fold key and in order of first place."""
    n = len(elements)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    buffer, offsets = encode_rows(key_columns, [f.type for f in key_fields])
    nested = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(buffer)])
    sort_table = {"r": element_key, "k": nested}
    sort_keys = [("r", "ascending"), ("k", "ascending")]
    for i, name in enumerate(agg.nested_sequence):
        sort_table[f"s{i}"] = elements.field(name)
        sort_keys.append((f"s{i}", "ascending", "at_start"))  # Java compares nulls first
    sort_table["p"] = place
    sort_keys.append(("p", "ascending"))
    order = pc.sort_indices(pa.table(sort_table), sort_keys=sort_keys).to_numpy().astype(np.int64)
    by_key = pa.table({"r": element_key[order], "k": nested.take(pa.array(order))})
    last_of_key = kv.key_changes(by_key, ["r", "k"])
    group_starts = np.concatenate([[0], np.flatnonzero(last_of_key)[:-1] + 1])
    group_sizes = np.diff(np.append(group_starts, n))
    # a retraction removes its key (or equal elements) from everything added before it
    time = element_time[order]
    last_retract = np.maximum.reduceat(np.where(element_retract[order], time, -1), group_starts)
    live = ~element_retract[order] & (time > np.repeat(last_retract, group_sizes))
    if agg.nested_key:
        first_place = np.minimum.reduceat(np.where(live, place[order], n), group_starts)
        last_live_slot = np.maximum.reduceat(np.where(live, np.arange(n), -1), group_starts)
        found = last_live_slot >= 0
        chosen, appear = order[last_live_slot[found]], first_place[found]
    else:
        chosen = order[live]
        appear = place[chosen]
    chosen = chosen[np.argsort(appear, kind="stable")]
    return _limit_per_key(chosen, element_key, agg.count_limit)


def _limit_per_key(chosen: np.ndarray, element_key: np.ndarray, limit: int) -> np.ndarray:
    """Keep the first `limit` chosen elements of each key (count-limit)."""
    if len(chosen) == 0 or limit >= len(chosen):
        return chosen
    keys_of = element_key[chosen]
    first = np.concatenate([[True], keys_of[1:] != keys_of[:-1]])
    start_index = np.maximum.accumulate(np.where(first, np.arange(len(chosen)), 0))
    return chosen[np.arange(len(chosen)) - start_index < limit]


# -- collect / merge_map / merge_map_with_keytime / nested_partial_update ---------------------------
#
# These fold collections element by element. Each non-null value that reaches the aggregator is
# an "entry" (its row and role: added or retracted); its elements are flattened, given an id
# (equal values, equal ids: BinaryRow bytes, Java's equality) and the fold of every (key, element
# id) is worked out with sorts and segment reductions. Java builds the results in HashSets and
# HashMaps, whose order is unspecified; tarn orders elements by where they first appear in the
# accumulator as it stands (reversed rows in front, see `_placed`).


def _value_ids(values: pa.Array, t: DataType) -> np.ndarray:
    """Dense ids of `values`: equal ids for values whose BinaryRow bytes are equal."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    buffer, offsets = encode_rows([values], [t])
    encoded = pa.Array.from_buffers(pa.large_binary(), len(values),
                                    [None, pa.py_buffer(offsets), pa.py_buffer(buffer)])
    return pc.dictionary_encode(encoded).indices.to_numpy().astype(np.int64)


@dataclass(frozen=True)
class _Flat:
    """The elements of a fold's entries, one row of arrays per element."""

    values: pa.Array  # the flattened elements (map: struct<key, value>)
    key: np.ndarray  # fold key
    row: np.ndarray  # the entry's row
    retract: np.ndarray  # element of a retracted value
    time: np.ndarray  # when it reaches the accumulator: 2 * row (+1 for a retraction)
    place: np.ndarray  # where its entry goes in the accumulator (reversed rows in front)
    position: np.ndarray  # index within its value


def _flatten(column, fold: Fold, added: np.ndarray, retracted: np.ndarray, prepend_reversed: bool) -> _Flat:
    """Elements of the `added` and `retracted` rows' values (a row can be both: an initial row
    retracted right away). Retractions before the accumulator holds a value are dropped (Java's
    retract(null, v) is null)."""
    add_rows, retract_rows = np.flatnonzero(added), np.flatnonzero(retracted)
    rows = np.concatenate([add_rows, retract_rows])
    retract = np.arange(len(rows)) >= len(add_rows)
    time = 2 * rows + retract
    start = np.full(fold.keys, np.iinfo(np.int64).max)
    np.minimum.at(start, fold.key_of[add_rows], 2 * add_rows)
    keep = ~retract | (time > start[fold.key_of[rows]])
    rows, retract, time = rows[keep], retract[keep], time[keep]
    front = prepend_reversed & fold.reversed[rows] & ~retract
    place = np.where(front, -2 * rows - 1, 2 * rows)
    lists = _as_lists(column).take(pa.array(rows, type=pa.int64()))
    parent = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
    counts = np.bincount(parent, minlength=len(rows))
    position = np.arange(len(parent)) - np.repeat(np.cumsum(counts) - counts, counts)
    return _Flat(pc.list_flatten(lists), fold.key_of[rows][parent], rows[parent], retract[parent],
                 time[parent], place[parent], position)


def _as_lists(column: pa.Array) -> pa.Array:
    """A MAP column as the LIST<STRUCT<key, value>> it is stored as (Arrow's list kernels
    do not take maps), sharing its buffers."""
    if not pa.types.is_map(column.type):
        return column
    entries = column.values
    return pa.Array.from_buffers(pa.list_(entries.type), len(column), column.buffers()[:2], offset=column.offset,
                                 children=[entries])


def _group_starts(*columns: np.ndarray) -> np.ndarray:
    """First index of every run of equal tuples in already-sorted `columns`."""
    n = len(columns[0])
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
        for c in columns:
            change[1:] |= c[1:] != c[:-1]
    return np.flatnonzero(change)


def _untouched(fold: Fold, valid: np.ndarray, taken: np.ndarray, changes: np.ndarray) -> np.ndarray:
    """Keys whose accumulator is the `taken` row's value, as it is: no `changes` row after it
    (nor a retraction of the taken initial row itself)."""
    after = fold.after(taken) | (fold.init_rows() & fold.retract & valid)
    return (taken >= 0) & ~fold.any(changes & after)


def _keep_untouched(column, fold, merged: pa.Array, untouched: np.ndarray, taken: np.ndarray) -> pa.Array:
    if not untouched.any():
        return merged
    exact = take_rows(column, np.where(untouched, taken, -1)).cast(merged.type)
    return pc.if_else(pa.array(untouched), exact, merged)


def _collect(column, agg, fold):
    """ARRAY values collected in order. Non-distinct: the concatenation; a retraction removes, per
    element it holds, one equal element (the oldest). Distinct: each element once, a retraction
    removes it, a later add brings it back at the end. Java's aggReversed for collect is agg
    itself, so reversed rows append too (in front only under ignore-retract, whose wrapper does
    not forward aggReversed)."""
    valid = _valid(column)
    added = _added(fold) & valid
    flat = _flatten(column, fold, added, fold.retract & valid, prepend_reversed=agg.ignore_retract)
    ids = _value_ids(flat.values, agg.type.element)
    order = np.lexsort((flat.position, flat.time, ids, flat.key))
    starts = _group_starts(flat.key[order], ids[order])
    is_retract = flat.retract[order]
    n = len(order)
    if agg.distinct:
        last_retract = np.maximum.reduceat(np.where(is_retract, flat.time[order], -1), starts) if n else starts
        group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
        live = ~is_retract & (flat.time[order] > last_retract[group]) if n else is_retract
        first_live = np.full(len(starts), n)
        np.minimum.at(first_live, group[live], np.flatnonzero(live))
        chosen = order[first_live[first_live < n]]
    else:
        chosen = order[_fifo_survivors(is_retract, starts)]
    chosen = chosen[np.lexsort((flat.position[chosen], flat.place[chosen], flat.key[chosen]))]
    present = fold.any(added)
    merged = _lists(flat.values.take(pa.array(chosen, type=pa.int64())), flat.key[chosen], fold.keys, present)
    if not agg.distinct:
        return merged  # equal to any value Java keeps as it is
    # distinct: a value becomes the accumulator untouched only as the initial row; any agg row
    # after it (even a null) rebuilds it as a set
    init_valid = (fold.init >= 0) & valid[np.maximum(fold.init, 0)]
    taken = np.where(init_valid, fold.init, -1)
    untouched = _untouched(fold, valid, taken, fold.agg | fold.reversed | (fold.retract & valid))
    return _keep_untouched(column, fold, merged.cast(column.type), untouched, taken)


def _fifo_survivors(is_retract: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per group of events in time order (adds and retractions of one value): the adds left
    when each retraction removes the oldest remaining add, if any. The removed adds are the
    group's first E, E being the retractions that found something."""
    n = len(is_retract)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    sizes = np.diff(np.append(starts, n))
    step = np.where(is_retract, -1, 1)
    balance = np.cumsum(step)
    balance = balance - np.repeat(balance[starts] - step[starts], sizes)
    wasted = np.maximum(0, -np.minimum.reduceat(balance, starts))
    effective = np.add.reduceat(is_retract.astype(np.int64), starts) - wasted
    is_add = ~is_retract
    rank = np.cumsum(is_add)
    rank = rank - np.repeat(rank[starts] - is_add[starts], sizes) - 1
    return np.flatnonzero(is_add & (rank >= np.repeat(effective, sizes)))


def _map_array(entries: pa.Array, key_of: np.ndarray, count: int, present: np.ndarray, t: pa.DataType) -> pa.Array:
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.bincount(key_of, minlength=count), out=offsets[1:])
    return pa.MapArray.from_arrays(pa.array(offsets), entries.field(0), entries.field(1), type=t,
                                   mask=pa.array(~present))


def _merge_map(column, agg, fold):
    """MAP values merged: a later value's entry replaces an earlier one of the same key (a
    reversed row's entries only fill keys the accumulator lacks: Java's agg(v, acc)); a
    retraction removes the keys it holds."""
    valid = _valid(column)
    added = _added(fold) & valid
    flat = _flatten(column, fold, added, fold.retract & valid, prepend_reversed=True)
    ids = _value_ids(flat.values.field(0), agg.type.key)
    n = len(ids)
    order = np.lexsort((flat.position, flat.time, ids, flat.key))
    starts = _group_starts(flat.key[order], ids[order])
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    group_of = np.empty(n, dtype=np.int64)
    group_of[order] = group
    is_retract = flat.retract[order]
    last_retract = np.maximum.reduceat(np.where(is_retract, flat.time[order], -1), starts) if n else starts
    live = np.zeros(n, dtype=bool)
    live[order] = ~is_retract & (flat.time[order] > last_retract[group])
    chosen, appear = _winners(np.flatnonzero(live), group_of, flat)
    present = fold.any(added)
    merged = _map_array(flat.values.take(pa.array(chosen, type=pa.int64())), flat.key[chosen], fold.keys, present,
                        column.type)
    taken = fold.first(added)
    nonempty = valid & (pc.fill_null(pc.list_value_length(_as_lists(column)), 0).to_numpy(zero_copy_only=False) > 0)
    untouched = _untouched(fold, valid, taken, added | (fold.retract & nonempty))
    return _keep_untouched(column, fold, merged, untouched, taken)


def _winners(candidates: np.ndarray, group_of: np.ndarray, flat: _Flat) -> tuple[np.ndarray, np.ndarray]:
    """Per group of `candidates`: the element placed last (it wins), ordered by fold key and
    by where the group's first placed element stands."""
    if len(candidates) == 0:
        return candidates, candidates
    by_place = candidates[np.lexsort((flat.position[candidates], flat.place[candidates], group_of[candidates]))]
    starts = _group_starts(group_of[by_place])
    lasts = np.append(starts[1:], len(by_place)) - 1
    first, last = by_place[starts], by_place[lasts]
    arrangement = np.lexsort((flat.position[first], flat.place[first], flat.key[first]))
    return last[arrangement], first[arrangement]


def _merge_map_with_keytime(column, agg, fold):
    """MAP<K, ROW<..., ts STRING>>: the first value is taken as it is; each later entry replaces
    the key's entry when its timestamp is greater (or the old entry has no row or timestamp), a
    null ROW removes the key, a null timestamp is skipped. Timestamps compare as strings (by
    code point; Java compares UTF-16 units, which differs only between supplementary characters
    and U+E000..U+FFFF)."""
    valid = _valid(column)
    added = (fold.init_rows() | fold.agg) & valid
    taken = fold.first(added)
    flat = _flatten(column, fold, added, np.zeros(fold.rows, dtype=bool), prepend_reversed=False)
    ids = _value_ids(flat.values.field(0), agg.type.key)
    n = len(ids)
    entry_values = flat.values.field(1)
    value_null = ~_valid(entry_values)
    stamps = entry_values.field(_ts_index(agg))
    ts_null = value_null | ~_valid(stamps)
    initial = flat.row == taken[flat.key]
    order = np.lexsort((flat.position, flat.time, ids, flat.key))
    starts = _group_starts(flat.key[order], ids[order])
    group_of = np.empty(n, dtype=np.int64)
    group_of[order] = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    at = np.empty(n, dtype=np.int64)  # index of each element in `order`
    at[order] = np.arange(n)
    delete = ~initial & value_null
    last_delete = np.full(len(starts), -1)
    np.maximum.at(last_delete, group_of[delete], at[delete])
    deleted = last_delete[group_of] >= 0
    after_delete = at > last_delete[group_of]
    # what can hold the key at the end: the initial value's entries (no removal since) and puts
    put = ~initial & ~ts_null
    candidate = after_delete & (put | (initial & ~deleted))
    # of the initial value's entries for a key, the last is in effect (a duplicate overwrites)
    last_initial = np.full(len(starts), -1)
    np.maximum.at(last_initial, group_of[initial], at[initial])
    effective = candidate & (~initial | (at == last_initial[group_of]))
    weak = initial & ts_null  # any put replaces an entry without row or timestamp
    pick = np.flatnonzero(effective)
    table = pa.table({"g": group_of[pick], "w": weak[pick], "ts": stamps.take(pa.array(pick, type=pa.int64())),
                      "o": at[pick]})
    ranked = pc.sort_indices(table, sort_keys=[("g", "ascending"), ("w", "ascending"), ("ts", "descending"),
                                               ("o", "ascending")]).to_numpy().astype(np.int64)
    ranked = pick[ranked]
    winner = ranked[_group_starts(group_of[ranked])] if len(ranked) else ranked
    # key order: where the key was (re)inserted - its first initial entry or put since a removal
    inserted = np.flatnonzero(candidate)
    first_in = np.full(len(starts), n)
    np.minimum.at(first_in, group_of[inserted], at[inserted])
    appear = order[first_in[group_of[winner]]] if len(winner) else winner
    arrangement = np.lexsort((flat.position[appear], flat.time[appear], flat.key[appear]))
    chosen = winner[arrangement]
    merged = _map_array(flat.values.take(pa.array(chosen, type=pa.int64())), flat.key[chosen], fold.keys,
                        fold.any(added), column.type)
    untouched = _untouched(fold, valid, taken, added)
    return _keep_untouched(column, fold, merged, untouched, taken)


def _ts_index(agg: FieldAgg) -> int:
    names = [f.name for f in agg.type.value.fields]
    return names.index(agg.ts_field) if agg.ts_field else len(names) - 1


def _nested_partial_update(column, agg, fold):
    """ARRAY<ROW> merged by nested key: per key, each field takes the last non-null value (a
    reversed row's elements go in front, as Java's agg(v, acc) puts them)."""
    valid = _valid(column)
    added = _added(fold) & valid
    flat = _flatten(column, fold, added, np.zeros(fold.rows, dtype=bool), prepend_reversed=True)
    real = np.flatnonzero(_valid(flat.values))
    row_type = agg.type.element
    key_fields = [next(f for f in row_type.fields if f.name == k) for k in agg.nested_key]
    elements = flat.values.take(pa.array(real, type=pa.int64()))
    key_columns = [elements.field(f.name) for f in key_fields]
    if agg.null_strategy != "merge" and len(real):
        any_null = np.zeros(len(real), dtype=bool)
        for c in key_columns:
            any_null |= ~_valid(c)
        if any_null.any() and agg.null_strategy == "error":
            raise TarnError(f"column '{agg.name}': nested key {list(agg.nested_key)} contains null")
        real, elements = real[~any_null], elements.filter(pa.array(~any_null))
        key_columns = [c.filter(pa.array(~any_null)) for c in key_columns]
    m = len(real)
    if m:
        buffer, offsets = encode_rows(key_columns, [f.type for f in key_fields])
        nested = pa.Array.from_buffers(pa.large_binary(), m, [None, pa.py_buffer(offsets), pa.py_buffer(buffer)])
        ids = pc.dictionary_encode(nested).indices.to_numpy().astype(np.int64)
    else:
        ids = np.zeros(0, dtype=np.int64)
    key, place, position = flat.key[real], flat.place[real], flat.position[real]
    order = np.lexsort((position, place, ids, key))
    starts = _group_starts(key[order], ids[order])
    sizes = np.diff(np.append(starts, m))
    group = np.repeat(np.arange(len(starts)), sizes)
    fields = []
    for f in row_type.fields:
        field_valid = _valid(elements.field(f.name))[order] if m else np.zeros(0, dtype=bool)
        last = np.full(len(starts), -1)
        np.maximum.at(last, group[field_valid], np.flatnonzero(field_valid))
        fields.append(take_rows(elements.field(f.name), np.where(last >= 0, order[np.maximum(last, 0)], -1)))
    first = order[starts] if m else starts
    arrangement = np.lexsort((position[first], place[first], key[first]))
    struct_type = column.type.value_type
    merged_rows = pa.StructArray.from_arrays([c.take(pa.array(arrangement, type=pa.int64())) for c in fields],
                                             fields=list(struct_type)) if m else pa.array([], struct_type)
    merged = _lists(merged_rows, key[first][arrangement], fold.keys, fold.any(added)).cast(column.type)
    first_change = fold.first((fold.agg | fold.reversed) & valid)
    taken = np.where((fold.init >= 0) & valid[np.maximum(fold.init, 0)], fold.init,
                     np.where((first_change >= 0) & fold.reversed[np.maximum(first_change, 0)], first_change, -1))
    untouched = _untouched(fold, valid, taken, (fold.agg & valid) | fold.reversed)
    return _keep_untouched(column, fold, merged, untouched, taken)


# -- rbm32 / rbm64 / hll_sketch / theta_sketch -----------------------------------------------------
#
# The one other exception to "no Python loop per row": these values are serialised structures
# (roaring bitmaps, Apache DataSketches sketches) that Java merges two at a time, deserialising
# and serialising at every step, and whose bytes depend on that history (container kinds, node
# layouts, union state). tarn replays Java's steps, in Python for the bitmaps (numpy per
# container) and through the `datasketches` library for the sketches: a loop over the rows of
# the keys that hold two or more non-null values; every other key takes its value as it is.


def check_binary_values(column, agg: FieldAgg) -> None:
    """Refuse values of an rbm32 / rbm64 / hll_sketch / theta_sketch column whose header is not
    one of those structures (vectorised; a full parse happens when values are merged)."""
    function = canonical(agg.function)
    if function not in BINARY:
        return
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    column = column.cast(pa.large_binary())
    valid = _valid(column)
    if not valid.any():
        return
    offsets = np.frombuffer(column.buffers()[1], np.int64, len(column) + 1, column.offset * 8)
    data = np.frombuffer(column.buffers()[2], np.uint8) if column.buffers()[2] is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)

    def byte(i: int) -> np.ndarray:
        at = np.where(lengths > i, starts + i, 0)
        return np.where(lengths > i, data[at] if len(data) else 0, -1).astype(np.int64)

    if function == "rbm32":
        cookie = byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24
        good = ((lengths >= 4) & (cookie & 0xFFFF == COOKIE)) | ((lengths >= 8) & (cookie == COOKIE_NO_RUN))
    elif function == "rbm64":
        good = ((lengths >= 1) & (byte(0) == 0)) | ((lengths >= 13) & (byte(0) == 1))
    elif function == "hll_sketch":
        good = (lengths >= 8) & np.isin(byte(0), (2, 3, 10)) & (byte(1) == 1) & (byte(2) == 7) \
            & (byte(3) >= 4) & (byte(3) <= 21)
    else:
        good = (lengths >= 8) & np.isin(byte(0) & 0x3F, (1, 2, 3)) & np.isin(byte(1), (1, 2, 3, 4)) \
            & np.isin(byte(2), (1, 2, 3))
    bad = valid & ~good
    if bad.any():
        sample = column[int(np.flatnonzero(bad)[0])].as_py()[:16]
        raise TarnError(f"column '{agg.name}' ({function}): {np.count_nonzero(bad)} value(s) are not "
                        f"{_WHAT[function]} (first bytes {sample.hex() or 'none'})")


_WHAT = {"rbm32": "serialised 32-bit roaring bitmaps", "rbm64": "serialised Roaring64Bitmaps",
         "hll_sketch": "DataSketches HLL sketches", "theta_sketch": "DataSketches theta sketches"}


def _binary_fold(column, agg, fold, read, merge, write):
    """Java's left fold `agg(acc, v)` (aggReversed: `agg(v, acc)`) over the non-null values of
    each key: `read(bytes)` gives a state, `merge(acc, v)` the next, `write(state)` the bytes."""
    valid = _valid(column)
    added = _added(fold) & valid
    counts = np.bincount(fold.key_of[added], minlength=fold.keys)
    result = take_rows(column, np.where(counts == 1, fold.first(added), -1)).cast(pa.large_binary())
    several = np.flatnonzero(counts > 1)
    if len(several) == 0:
        return result
    rows = np.flatnonzero(added & (counts > 1)[fold.key_of])
    values = column.take(pa.array(rows, type=pa.int64())).to_pylist()
    out: list = [None] * fold.keys
    key_of, reversed_ = fold.key_of[rows], fold.reversed[rows]
    acc = None
    for i, value in enumerate(values):
        try:
            state = read(value)
        except BadValue as e:
            raise TarnError(f"column '{agg.name}': {agg.function} value is not valid: {e}") from None
        if i == 0 or key_of[i] != key_of[i - 1]:
            acc = state
        else:
            acc = merge(state, acc) if reversed_[i] else merge(acc, state)
        if i + 1 == len(values) or key_of[i + 1] != key_of[i]:
            out[key_of[i]] = write(acc)
    merged = pa.array(out, type=pa.large_binary())
    return pc.if_else(pa.array(counts > 1), merged, result)


def _identity(state):
    return state


def _rbm32(column, agg, fold):
    return _binary_fold(column, agg, fold, read_rbm32, or_rbm32, write_rbm32)


def _rbm64(column, agg, fold):
    return _binary_fold(column, agg, fold, read_rbm64, merge_rbm64, write_rbm64)


def _hll_sketch(column, agg, fold):
    return _binary_fold(column, agg, fold, read_hll, merge_hll, _identity)


def _theta_sketch(column, agg, fold):
    return _binary_fold(column, agg, fold, read_theta, merge_theta, _identity)


_FUNCTIONS = {
    "sum": _sum, "count": _count, "product": _product, "max": _max, "min": _min,
    "last_value": _last_value, LAST_NON_NULL: _last_non_null_value,
    "first_value": _first_value, "first_non_null_value": _first_non_null_value,
    "listagg": _listagg, "bool_and": _bool_and, "bool_or": _bool_or,
    "nested_update": _nested_update, PRIMARY_KEY: _primary_key,
    "collect": _collect, "merge_map": _merge_map, "merge_map_with_keytime": _merge_map_with_keytime,
    "nested_partial_update": _nested_partial_update, "rbm32": _rbm32, "rbm64": _rbm64,
    "hll_sketch": _hll_sketch, "theta_sketch": _theta_sketch,
}
