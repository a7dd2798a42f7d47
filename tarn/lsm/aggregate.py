"""The `aggregation` merge engine: each value column of a key folded by its aggregate function.

Paimon's AggregateMergeFunction folds the rows of one key in order, each column through its
field aggregator: `agg(acc, value)` for +I/+U rows and `retract(acc, value)` for -U/-D rows,
starting from a null accumulator. Here the same fold is computed for all keys at once with
numpy segment reductions over key runs (`reduceat` at run starts) and Arrow kernels.

Facts from Java Paimon this module follows:
- a key with a single row is not merged (ReducerMergeFunctionWrapper): the row passes through
  unchanged, kind included; merged rows take the last row's key and sequence number, kind +I;
- columns: primary keys keep the last row's value, `sequence.field` columns use last_value,
  others `fields.<f>.aggregate-function`, else `fields.default-aggregate-function`, else
  last_non_null_value;
- retraction: sum subtracts, product divides, last_value / last_non_null_value clear,
  nested_update removes elements; any other function raises unless
  `fields.<f>.ignore-retract`, which skips the retract rows for that column;
- `aggregation.remove-record-on-delete`: a -D row resets the whole row to the -D row's values
  (later rows aggregate on top of it); if a -D is a key's last row, the merged row is a -D;
- `ignore-delete` drops -U/-D rows before merging (Java does it when writing).

Exceptions to "no Python loop per row": product with retractions (or on DECIMAL) folds in
order, one vectorised step per position within a key, so its cost grows with the longest
key run rather than with the row count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import encode_rows
from tarn.errors import InvalidOption, TarnError
from tarn.lsm import kv
from tarn.lsm.folds import first_where, hash_fold, last_where, take_rows
from tarn.options import Options, as_options
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
NOT_SUPPORTED = ("collect", "merge_map", "merge_map_with_keytime", "nested_partial_update", "rbm32",
                 "rbm64", "hll_sketch", "theta_sketch")
RETRACTABLE = ("sum", "count", "product", "last_value", LAST_NON_NULL, "nested_update", PRIMARY_KEY)

# Java's Character.isWhitespace, the test StringUtils.isBlank applies to every char (listagg).
_BLANK = r"^[\t\n\x{0B}\f\r\x{1C}-\x{1F} \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200A}\x{2028}\x{2029}\x{205F}\x{3000}]*$"


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


# ---------------------------------------------------------------------------------------------
# configuration


def function_name(column: str, options: Options, primary_keys, sequence_fields) -> str:
    """The aggregate function of a column, as Paimon picks it."""
    if column in sequence_fields:
        return "last_value"
    if column in primary_keys:
        return PRIMARY_KEY
    name = options.get(f"fields.{column}.aggregate-function") or options.get("fields.default-aggregate-function")
    return (name or LAST_NON_NULL).strip()


def field_agg(f: DataField, options: Options, primary_keys, sequence_fields) -> FieldAgg:
    prefix = f"fields.{f.name}."
    return FieldAgg(
        name=f.name, type=f.type,
        function=function_name(f.name, options, primary_keys, sequence_fields),
        ignore_retract=bool(options.bool(prefix + "ignore-retract")),
        delimiter=options.get(prefix + "list-agg-delimiter"),
        distinct=bool(options.bool(prefix + "distinct")),
        nested_key=tuple(options.list(prefix + "nested-key")),
        nested_sequence=tuple(options.list(prefix + "nested-sequence-field")),
        null_strategy=(options.get(prefix + "nested-key-null-strategy") or "merge").lower(),
        count_limit=options.int(prefix + "count-limit"),
    )


def validate_aggregation(fields, primary_keys, options, table_name: str) -> None:
    """Reject unknown aggregate functions and functions that do not fit their column's type."""
    options = as_options(options)
    sequence_fields = options.list("sequence.field")
    default = options.get("fields.default-aggregate-function")
    if default is not None:
        _check_name(default.strip(), "fields.default-aggregate-function", table_name)
    remove_on_delete = options.bool("aggregation.remove-record-on-delete")
    for f in fields:
        key = f"fields.{f.name}.aggregate-function"
        explicit = options.get(key)
        if explicit is not None:
            _check_name(explicit.strip(), key, table_name)
            if f.name in sequence_fields:
                raise InvalidOption(f"table {table_name}: option '{key}': sequence field '{f.name}' "
                                    "cannot have an aggregate function")
        agg = field_agg(f, options, primary_keys, sequence_fields)
        where = key if explicit is not None else "fields.default-aggregate-function"
        if not ACCEPTS[agg.function](f.type):
            raise InvalidOption(f"table {table_name}: option '{where}': aggregate function '{agg.function}' "
                                f"needs {EXPECTED[agg.function]} but column '{f.name}' is {f.type}")
        if agg.ignore_retract and remove_on_delete:
            raise InvalidOption(f"table {table_name}: 'aggregation.remove-record-on-delete' and "
                                f"'fields.{f.name}.ignore-retract' cannot both be enabled")
        if ALIASES.get(agg.function, agg.function) == "nested_update":
            _check_nested(agg, table_name)
        if agg.function == "listagg" and agg.distinct and not agg.delimiter:
            raise InvalidOption(f"table {table_name}: option 'fields.{f.name}.list-agg-delimiter' must not "
                                f"be empty when 'fields.{f.name}.distinct' is set")


def _check_name(name: str, key: str, table_name: str) -> None:
    if name in ACCEPTS:
        return
    if name in NOT_SUPPORTED:
        raise InvalidOption(f"table {table_name}: option '{key}': aggregate function '{name}' is not supported by tarn")
    raise InvalidOption(f"table {table_name}: option '{key}': unknown aggregate function '{name}'; "
                        f"known: {', '.join(sorted(ACCEPTS))}")


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
# key runs


@dataclass(frozen=True)
class Runs:
    """The rows of the keys being merged, grouped in runs (one per key, rows in merge order).

    `retract`, `seed` and `add` classify every row: a retract row is -U (or -D without
    remove-record-on-delete); a seed row is the -D a key restarts from under
    remove-record-on-delete; every other row is added."""

    rows: pa.Table
    starts: np.ndarray  # first row of each run
    lasts: np.ndarray  # last row of each run
    run_of: np.ndarray  # run id of each row
    retract: np.ndarray
    seed: np.ndarray
    added_before_seed: np.ndarray  # per run: an add row came before its seed (dropped rows)
    dropped: pa.Table | None = None  # rows before the seeds, for first_non_null_value
    dropped_run: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def sizes(self) -> np.ndarray:
        return self.lasts - self.starts + 1

    @property
    def add(self) -> np.ndarray:
        return ~self.retract & ~self.seed

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per run: the first row where `mask` holds, -1 if none."""
        return first_where(mask, self.starts, -1)

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per run: the last row where `mask` holds, -1 if none."""
        return last_where(mask, self.starts)

    def total(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts)

    def seed_rows(self) -> np.ndarray:
        """Per run: its seed row (always the run's first row), -1 if none."""
        return np.where(self.seed[self.starts], self.starts, -1)


def _run_bounds(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lasts = np.cumsum(sizes) - 1
    starts = lasts - sizes + 1
    return starts, lasts, np.repeat(np.arange(len(sizes)), sizes)


def _runs(rows: pa.Table, sizes: np.ndarray, remove_on_delete: bool) -> tuple[Runs, np.ndarray]:
    """Key runs of `rows` (each run >= 2 rows) and the kind of each merged row."""
    starts, lasts, run_of = _run_bounds(sizes)
    kinds = rows.column(kv.VALUE_KIND).to_numpy()
    merged_kind = np.full(len(sizes), kv.INSERT, dtype=np.int8)
    no_runs = np.zeros(len(sizes), dtype=bool)
    if not remove_on_delete:
        retract = (kinds == kv.UPDATE_BEFORE) | (kinds == kv.DELETE)
        return Runs(rows, starts, lasts, run_of, retract, np.zeros(len(kinds), dtype=bool), no_runs), merged_kind
    # Each -D restarts the row from its own values: only the last -D of a run and what follows
    # it count, plus whether anything was added before it (first_value keeps that state).
    is_delete = kinds == kv.DELETE
    merged_kind[is_delete[lasts]] = kv.DELETE
    last_delete = np.maximum.reduceat(np.where(is_delete, np.arange(len(kinds)), -1), starts)
    keep = np.arange(len(kinds)) >= last_delete[run_of]
    dropped_add = ~keep & ((kinds == kv.INSERT) | (kinds == kv.UPDATE_AFTER))
    added_before = np.logical_or.reduceat(dropped_add, starts)
    dropped = rows.filter(pa.array(dropped_add))
    if not keep.all():
        starts, lasts, kept_run_of = _run_bounds(np.add.reduceat(keep.astype(np.int64), starts))
        rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
    else:
        kept_run_of = run_of
    seed = np.zeros(len(kinds), dtype=bool)
    seed[starts] = kinds[starts] == kv.DELETE
    runs = Runs(rows, starts, lasts, kept_run_of, kinds == kv.UPDATE_BEFORE, seed, added_before,
                dropped, run_of[dropped_add])
    return runs, merged_kind


# ---------------------------------------------------------------------------------------------
# merging


def merge_aggregate(table: pa.Table, spec) -> pa.Table:
    """Merge a key-value table sorted by key (then sequence): one row per key, key-ordered,
    every value column aggregated by its function."""
    if spec.ignore_delete:
        table = kv.drop_retracts(table)
    if table.num_rows <= 1:
        return table
    last_of_key = kv.key_changes(table, spec.key_columns)
    sizes = np.diff(np.concatenate([[-1], np.flatnonzero(last_of_key)]))
    multi = sizes > 1
    if not multi.any():
        return table
    row_in_multi = np.repeat(multi, sizes)
    if multi.all():
        return merge_keys(table, sizes, spec)
    merged = merge_keys(table.filter(pa.array(row_in_multi)), sizes[multi], spec)
    singles = table.filter(pa.array(~row_in_multi))
    order = np.where(multi, len(singles) + np.cumsum(multi) - 1, np.cumsum(~multi) - 1)
    return pa.concat_tables([singles, merged]).take(pa.array(order))


def merge_keys(rows: pa.Table, sizes: np.ndarray, spec) -> pa.Table:
    """Aggregate every key of key-sorted `rows` (`sizes` rows each), single-row keys included."""
    options = as_options(spec.options)
    remove_on_delete = bool(options.bool("aggregation.remove-record-on-delete"))
    aggs = {f.name: field_agg(f, options, spec.key_columns, spec.sequence_columns) for f in spec.fields}
    _reject_retractions(rows, aggs, remove_on_delete)
    runs, merged_kind = _runs(rows.combine_chunks(), sizes, remove_on_delete)
    columns = []
    for name, column in zip(rows.column_names, runs.rows.columns):
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if name == kv.VALUE_KIND:
            columns.append(pa.array(merged_kind).cast(column.type))
        elif name in aggs and name not in spec.key_columns:
            columns.append(_aggregate(column, aggs[name], runs).cast(column.type))
        else:
            columns.append(column.take(pa.array(runs.lasts)))
    return pa.Table.from_arrays(columns, schema=rows.schema)


def _reject_retractions(rows: pa.Table, aggs: Mapping[str, FieldAgg], remove_on_delete: bool) -> None:
    """Java raises when a function without retraction meets a -U (or -D) row."""
    kinds = rows.column(kv.VALUE_KIND).to_numpy()
    retracting = kinds == kv.UPDATE_BEFORE
    if not remove_on_delete:
        retracting |= kinds == kv.DELETE
    if not retracting.any():
        return
    for agg in aggs.values():
        if agg.function not in RETRACTABLE and not agg.ignore_retract:
            raise TarnError(f"column '{agg.name}': aggregate function '{agg.function}' cannot retract -U/-D "
                            f"rows; set 'fields.{agg.name}.ignore-retract'='true' to skip them")


def _aggregate(column: pa.Array, agg: FieldAgg, runs: Runs) -> pa.Array:
    retract = runs.retract & (not agg.ignore_retract)
    function = ALIASES.get(agg.function, agg.function)
    if function not in _FUNCTIONS:
        raise InvalidOption(f"column '{agg.name}': aggregate function '{agg.function}' is not supported by tarn")
    return _FUNCTIONS[function](column, agg, runs, retract)


def _valid(column: pa.Array) -> np.ndarray:
    return column.is_valid().to_numpy(zero_copy_only=False)


def _primary_key(column, agg, runs, retract):
    return column.take(pa.array(runs.lasts))


def _last_value(column, agg, runs, retract, only_non_null=False):
    considered = ~runs.retract | retract
    if only_non_null:
        considered &= _valid(column)
    rows = runs.last_where(considered)
    rows = np.where((rows >= 0) & retract[np.maximum(rows, 0)], -1, rows)
    return take_rows(column, rows)


def _last_non_null_value(column, agg, runs, retract):
    return _last_value(column, agg, runs, retract, only_non_null=True)


def _first_value(column, agg, runs, retract, only_non_null=False):
    adds = runs.add & _valid(column) if only_non_null else runs.add
    rows = runs.first_where(adds)
    seeds = runs.seed_rows()
    if seeds.max() < 0:
        return take_rows(column, rows)
    # A seed replaces the accumulator but keeps the aggregator's "initialized" flag.
    initialized = runs.added_before_seed
    if only_non_null:
        initialized = np.zeros(runs.count, dtype=bool)
        dropped = runs.dropped.column(agg.name).combine_chunks()
        initialized[runs.dropped_run[_valid(dropped)]] = True
    use_seed = (seeds >= 0) & (initialized | (rows < 0))
    return take_rows(column, np.where(use_seed, seeds, rows))


def _first_non_null_value(column, agg, runs, retract):
    return _first_value(column, agg, runs, retract, only_non_null=True)


def _hash_aggregate(values: pa.Array, mask: np.ndarray, runs: Runs, how: str) -> pa.Array:
    """The hash aggregation `how` of the values where `mask` holds, one per run."""
    return hash_fold(values, mask, runs.run_of, runs.count, how)


def _group_reduce(column, agg, runs, retract, how: str):
    """min/max over the added and seed rows' non-null values."""
    return _hash_aggregate(column, ~runs.retract & _valid(column), runs, how)


def _max(column, agg, runs, retract):
    return _group_reduce(column, agg, runs, retract, "max")


def _min(column, agg, runs, retract):
    return _group_reduce(column, agg, runs, retract, "min")


def _bool(column, agg, runs, retract, is_and: bool):
    mask = ~runs.retract & _valid(column)
    values = column.fill_null(is_and).to_numpy(zero_copy_only=False)
    values = np.where(mask, values, is_and)
    reduced = (np.logical_and if is_and else np.logical_or).reduceat(values, runs.starts)
    return pa.array(reduced, mask=~np.logical_or.reduceat(mask, runs.starts))


def _bool_and(column, agg, runs, retract):
    return _bool(column, agg, runs, retract, True)


def _bool_or(column, agg, runs, retract):
    return _bool(column, agg, runs, retract, False)


# -- sum ------------------------------------------------------------------------------------------

_INT_RANGE = {"TINYINT": 2 ** 7, "SMALLINT": 2 ** 15, "INT": 2 ** 31, "BIGINT": 2 ** 63}


def _sum(column, agg, runs, retract):
    used = (~runs.retract | retract) & _valid(column)
    if agg.type.root == "DECIMAL":
        return _decimal_sum(column, agg, runs, retract, used)
    dtype = _numpy_type(agg.type)
    values = np.where(used, column.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype), 0)
    values = np.where(retract, -values, values)
    if agg.type.root in INTEGER_ROOTS:
        _check_prefix_sums(values, agg, runs)
    return pa.array(runs.total(values), mask=~np.logical_or.reduceat(used, runs.starts))


def _count(column, agg, runs, retract):
    """count (Paimon <= 0.8, documented in the primary-key table page): the first row's value
    starts the count (a fresh row carries 1, a merged row its count so far), every later
    non-null value adds one, every later retracted non-null value takes one away."""
    valid = _valid(column)
    later = np.ones(len(valid), dtype=bool)
    later[runs.starts] = False
    steps = np.where(later & valid & ~runs.retract, 1, 0) - np.where(later & valid & retract, 1, 0)
    first = column.take(pa.array(runs.starts)).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    counted = first + runs.total(steps.astype(np.int64))
    present = np.logical_or.reduceat(valid & (~runs.retract | retract), runs.starts)
    return pa.array(counted, mask=~present)


def _numpy_type(t: DataType):
    return {"FLOAT": np.float32, "DOUBLE": np.float64}.get(t.root, np.int64)


def _check_prefix_sums(values: np.ndarray, agg: FieldAgg, runs: Runs) -> None:
    """Java adds with overflow checks at every step: check every running sum of every run."""
    with np.errstate(over="ignore"):
        exact = np.cumsum(values)
        approx = np.cumsum(values.astype(np.float64))
        before = np.repeat(exact[runs.starts] - values[runs.starts], runs.sizes)
        before_f = np.repeat(approx[runs.starts] - values[runs.starts], runs.sizes)
        running, running_f = exact - before, approx - before_f
    limit = _INT_RANGE[agg.type.root]
    bad = (np.abs(running_f - running.astype(np.float64)) > 2.0 ** 62) | (running < -limit) | (running > limit - 1)
    if bad.any():
        raise TarnError(f"column '{agg.name}': sum overflows {agg.type}")


def _decimal_sum(column, agg, runs, retract, used):
    signed = pc.if_else(pa.array(retract), pc.negate(column), column)
    return _fit_decimal(_hash_aggregate(signed, used, runs, "sum"), agg.type)


def _fit_decimal(values: pa.Array, t: DataType) -> pa.Array:
    """Java's Decimal.fromBigDecimal: null when the value needs more than the type's precision."""
    target = pa.decimal128(t.precision, t.scale)
    wide = pc.cast(values, pa.decimal256(76, t.scale))
    limit = pa.scalar(10 ** (t.precision - t.scale), pa.decimal256(76, 0)).cast(pa.decimal256(76, t.scale))
    too_big = pc.fill_null(pc.greater_equal(pc.abs(wide), limit), False)
    return pc.cast(pc.if_else(too_big, pa.nulls(len(values), wide.type), wide), target)


# -- product --------------------------------------------------------------------------------------


def _product(column, agg, runs, retract):
    if agg.type.root == "DECIMAL":
        return _product_decimal(column, agg, runs, retract)
    used = (~runs.retract | retract) & _valid(column)
    if retract[used].any():
        return _product_in_order(column, agg, runs, retract)
    dtype = _numpy_type(agg.type)
    values = np.where(used, column.fill_null(1).to_numpy(zero_copy_only=False).astype(dtype), 1).astype(dtype)
    with np.errstate(over="ignore"):  # int64 products wrap modulo 2**64, as Java's long does
        product = np.multiply.reduceat(values, runs.starts)
    return pa.array(_wrap(product, agg.type), mask=~np.logical_or.reduceat(used, runs.starts))


def _wrap(values: np.ndarray, t: DataType) -> np.ndarray:
    """Java's integer arithmetic: keep the low bits of the type's width (two's complement)."""
    if t.root not in ("TINYINT", "SMALLINT", "INT"):
        return values
    return values.astype({"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32}[t.root]).astype(np.int64)


def _product_in_order(column, agg, runs, retract):
    """The product fold row by row in order, one vectorised step per position within a run,
    as Java's FieldProductAgg: a null accumulator takes the next value (retracted or not),
    integers multiply and divide (truncating) with wrapping arithmetic, division by zero fails."""
    dtype = _numpy_type(agg.type)
    integer = agg.type.root in INTEGER_ROOTS
    values = column.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype)
    used = (~runs.retract | retract) & _valid(column)
    acc = np.zeros(runs.count, dtype=dtype)
    has = np.zeros(runs.count, dtype=bool)
    for step in range(int(runs.sizes.max())):
        run = np.flatnonzero(runs.sizes > step)
        row = runs.starts[run] + step
        x, use, back = values[row], used[row], retract[row]
        a = acc[run]
        start = use & ~has[run]
        mul = use & ~back & has[run]
        div = use & back & has[run]
        with np.errstate(all="ignore"):
            if integer:
                if (div & (x == 0)).any():
                    raise TarnError(f"column '{agg.name}': product retraction divides by zero")
                product = _wrap(a * x, agg.type)
                quotient = _wrap(_truncating_divide(a, np.where(x == 0, 1, x)), agg.type)
            else:
                product, quotient = a * x, a / x
        acc[run] = np.where(start, x, np.where(mul, product, np.where(div, quotient, a)))
        has[run] |= start
    return pa.array(acc, mask=~has)


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Java integer division: rounds toward zero; Long.MIN_VALUE / -1 wraps to itself."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        return q + ((q * b != a) & ((a < 0) != (b < 0)))


def _product_decimal(column, agg, runs, retract):
    """DECIMAL product in order: every step rounds HALF_UP to the column's scale and turns null
    when it overflows the precision (Java's Decimal.fromBigDecimal); a null accumulator takes the
    next value, as in Java."""
    t = agg.type
    if t.precision > 37:
        raise TarnError(f"column '{agg.name}': product on {t} is not supported (precision above 37)")
    exact = pa.decimal256(t.precision, t.scale)
    values = pc.cast(column, exact)
    used = (~runs.retract | retract) & _valid(column)
    zero = ~np.asarray(pc.fill_null(pc.not_equal(values, pa.scalar(0, exact)), True))
    acc = pa.nulls(runs.count, exact)
    for step in range(int(runs.sizes.max())):
        run = np.flatnonzero(runs.sizes > step)
        row = runs.starts[run] + step
        x, a = values.take(pa.array(row)), acc.take(pa.array(run))
        use, back, empty = used[row], retract[row], ~_valid(a)
        start, mul, div = use & ~back & empty, use & ~back & ~empty, use & back & ~empty
        if (div & zero[row]).any():
            raise TarnError(f"column '{agg.name}': product retraction divides by zero")
        divisor = pc.if_else(pa.array(div), x, pa.scalar(1, exact))
        product = _fit_decimal(_round_to(pc.multiply(a, x), t), t).cast(exact)
        quotient = _fit_decimal(_round_to(pc.divide(a, divisor), t), t).cast(exact)
        new = pc.if_else(pa.array(start), x, pc.if_else(pa.array(mul), product,
                                                         pc.if_else(pa.array(div), quotient, a)))
        slot = np.full(runs.count, -1)
        slot[run] = np.arange(len(run))
        acc = pc.if_else(pa.array(slot >= 0), take_rows(new, slot), acc)
    return acc.cast(pa.decimal128(t.precision, t.scale))


def _round_to(values: pa.Array, t: DataType) -> pa.Array:
    return pc.round(values, ndigits=t.scale, round_mode="half_towards_infinity")


# -- listagg --------------------------------------------------------------------------------------


def _blank(strings: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(strings, _BLANK), True).to_numpy(zero_copy_only=False)


def _lists(values: pa.Array, run_of_value: np.ndarray, count: int, present: np.ndarray) -> pa.ListArray:
    """One list per run of the values (grouped by run, in order); null where not `present`."""
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.bincount(run_of_value, minlength=count), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(~present))


def _listagg(column, agg, runs, retract):
    used = ~runs.retract & ~_blank(column)
    strings = column.filter(pa.array(used))
    run_of = runs.run_of[used]
    present = np.bincount(run_of, minlength=runs.count) > 0
    if agg.distinct:
        strings, run_of = _distinct_tokens(strings, run_of, agg.delimiter)
    joined = pc.binary_join(_lists(strings, run_of, runs.count, present), agg.delimiter)
    return _keep_untouched_seed(column, joined, runs, used & ~runs.seed)


def _keep_untouched_seed(column: pa.Array, merged: pa.Array, runs: Runs, changes: np.ndarray) -> pa.Array:
    """A seed nothing later changes stays exactly as it was (Java keeps the -D row's value)."""
    seeds = runs.seed_rows()
    untouched = (seeds >= 0) & ~np.logical_or.reduceat(changes, runs.starts)
    if not untouched.any():
        return merged
    return pc.if_else(pa.array(untouched), take_rows(column, seeds).cast(merged.type), merged)


def _distinct_tokens(strings: pa.Array, run_of: np.ndarray, delimiter: str):
    """The tokens a distinct listagg keeps: all of the run's first string (Java keeps it as it
    is), then each later non-blank token not seen before in the run."""
    first_string = np.ones(len(run_of), dtype=bool)
    first_string[1:] = run_of[1:] != run_of[:-1]
    split = pc.split_pattern(strings, delimiter)
    tokens = pc.list_flatten(split)
    parent = pc.list_parent_indices(split).to_numpy()
    token_run = run_of[parent]
    by_value = pa.table({"r": token_run, "t": tokens, "p": np.arange(len(tokens))})
    order = pc.sort_indices(by_value, sort_keys=[("r", "ascending"), ("t", "ascending"), ("p", "ascending")])
    order = order.to_numpy().astype(np.int64)
    first_seen = np.zeros(len(tokens), dtype=bool)
    if len(order):
        sorted_table = pa.table({"r": token_run[order], "t": tokens.take(pa.array(order))})
        last_of_value = kv.key_changes(sorted_table, ["r", "t"])
        first_of_value = np.concatenate([[True], last_of_value[:-1]])
        first_seen[order] = first_of_value
    keep = first_string[parent] | (first_seen & ~_blank(tokens))
    return tokens.filter(pa.array(keep)), token_run[keep]


# -- nested_update --------------------------------------------------------------------------------


def _nested_update(column, agg, runs, retract):
    """ARRAY<ROW> merged by nested key (last or highest nested-sequence wins, retract removes the
    key) or, without a key, appended (retract removes equal elements added before it).
    Elements keep the order in which their key first appeared (Java's order is a HashMap's)."""
    used = (~runs.retract | retract) & _valid(column)
    lists = column.filter(pa.array(used))
    present = np.bincount(runs.run_of[used & ~runs.retract], minlength=runs.count) > 0
    parent = pc.list_parent_indices(lists).to_numpy()
    elements = pc.list_flatten(lists)
    real = _valid(elements)
    elements, parent = elements.filter(pa.array(real)), parent[real]
    element_run = runs.run_of[used][parent]
    element_retract = retract[used][parent]
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
        keep = pa.array(~any_null)
        elements, key_columns = elements.filter(keep), [c.filter(keep) for c in key_columns]
        element_run, element_retract = element_run[~any_null], element_retract[~any_null]
    winners = _nested_winners(elements, key_columns, key_fields, element_run, element_retract, agg)
    values = elements.take(pa.array(winners)) if len(winners) else elements.slice(0, 0)
    merged = _lists(values, element_run[winners], runs.count, present).cast(column.type)
    return _keep_untouched_seed(column, merged, runs, used & ~runs.seed)


def _nested_winners(elements, key_columns, key_fields, element_run, element_retract, agg) -> np.ndarray:
    """Indices of the surviving elements, grouped by run and in first-appearance order."""
    n = len(elements)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    buffer, offsets = encode_rows(key_columns, [f.type for f in key_fields])
    key = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(buffer)])
    position = np.arange(n)
    sort_table = {"r": element_run, "k": key}
    sort_keys = [("r", "ascending"), ("k", "ascending")]
    for i, name in enumerate(agg.nested_sequence):
        sort_table[f"s{i}"] = elements.field(name)
        sort_keys.append((f"s{i}", "ascending", "at_start"))  # Java compares nulls first
    sort_table["p"] = position
    sort_keys.append(("p", "ascending"))
    order = pc.sort_indices(pa.table(sort_table), sort_keys=sort_keys).to_numpy().astype(np.int64)
    by_key = pa.table({"r": element_run[order], "k": key.take(pa.array(order))})
    last_of_key = kv.key_changes(by_key, ["r", "k"])
    group_starts = np.concatenate([[0], np.flatnonzero(last_of_key)[:-1] + 1])
    group_sizes = np.diff(np.append(group_starts, n))
    # a retract removes its key (or equal elements) from everything added before it
    last_retract = np.maximum.reduceat(np.where(element_retract[order], order, -1), group_starts)
    live = ~element_retract[order] & (order > np.repeat(last_retract, group_sizes))
    if agg.nested_key:
        first_live = np.minimum.reduceat(np.where(live, order, n), group_starts)
        last_live_slot = np.maximum.reduceat(np.where(live, np.arange(n), -1), group_starts)
        found = last_live_slot >= 0
        chosen, appear = order[last_live_slot[found]], first_live[found]
    else:
        chosen = order[live]
        appear = chosen
    by_appearance = np.argsort(appear, kind="stable")
    chosen, appear = chosen[by_appearance], appear[by_appearance]
    return _limit_per_run(chosen, element_run, agg.count_limit)


def _limit_per_run(chosen: np.ndarray, element_run: np.ndarray, limit: int) -> np.ndarray:
    """Keep the first `limit` chosen elements of each run (count-limit)."""
    if len(chosen) == 0 or limit >= len(chosen):
        return chosen
    runs_of = element_run[chosen]
    first = np.concatenate([[True], runs_of[1:] != runs_of[:-1]])
    start_index = np.maximum.accumulate(np.where(first, np.arange(len(chosen)), 0))
    return chosen[np.arange(len(chosen)) - start_index < limit]


_FUNCTIONS = {
    "sum": _sum, "count": _count, "product": _product, "max": _max, "min": _min,
    "last_value": _last_value, LAST_NON_NULL: _last_non_null_value,
    "first_value": _first_value, "first_non_null_value": _first_non_null_value,
    "listagg": _listagg, "bool_and": _bool_and, "bool_or": _bool_or,
    "nested_update": _nested_update, PRIMARY_KEY: _primary_key,
}
