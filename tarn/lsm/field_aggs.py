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
run rather than with the row count.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import encode_rows
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
    PRIMARY_KEY: _ANY,
}
ALIASES = {"first_not_null_value": "first_non_null_value", "nested-update": "nested_update"}
EXPECTED = {
    "sum": "a numeric type", "count": "INT or BIGINT", "product": "a numeric type", "max": "a comparable type",
    "min": "a comparable type", "listagg": "STRING", "bool_and": "BOOLEAN", "bool_or": "BOOLEAN",
    "nested_update": "ARRAY<ROW<...>>", "nested-update": "ARRAY<ROW<...>>",
}
# Paimon functions tarn does not merge (yet).
NOT_SUPPORTED = tuple(f for f in AGGREGATE_FUNCTIONS if f not in ACCEPTS)
RETRACTABLE = ("sum", "count", "product", "last_value", LAST_NON_NULL, "nested_update", PRIMARY_KEY)
# Functions that fold reversed rows, which partial-update needs inside a sequence group. count
# is not a FieldAggregator (it starts from the value of a key's first row) and has no reversed form.
REVERSIBLE = ("sum", "product", "max", "min", "last_value", LAST_NON_NULL, "first_value",
              "first_non_null_value", "listagg", "bool_and", "bool_or", "nested_update")

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
    if canonical(agg.function) == "nested_update":
        _check_nested(agg, table_name)
    if agg.function == "listagg" and agg.distinct and not agg.delimiter:
        raise InvalidOption(f"table {table_name}: option 'fields.{agg.name}.list-agg-delimiter' must not "
                            f"be empty when 'fields.{agg.name}.distinct' is set")


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


_FUNCTIONS = {
    "sum": _sum, "count": _count, "product": _product, "max": _max, "min": _min,
    "last_value": _last_value, LAST_NON_NULL: _last_non_null_value,
    "first_value": _first_value, "first_non_null_value": _first_non_null_value,
    "listagg": _listagg, "bool_and": _bool_and, "bool_or": _bool_or,
    "nested_update": _nested_update, PRIMARY_KEY: _primary_key,
}
