"""A plain-Python model of a primary-key table under each merge engine (the LSM test oracle).

The model keeps, per key, every row written (value dict, row kind, arrival number) and computes
a key's content by ONE merge of all its rows, row by row, as Java Paimon's merge functions do:

- rows are merged in (`sequence.field` values, arrival) order, nulls first;
- every merge goes through Paimon's ReducerMergeFunctionWrapper: a key with a single row is
  not merged at all, the row passes through unchanged (kind included);
- `ignore-delete` drops -U/-D rows when they are written (Java's RowKindFilter), so they never
  reach a merge;
- DeduplicateMergeFunction, FirstRowMergeFunction, PartialUpdateMergeFunction (non-null
  overwrite, sequence groups with one or several sequence fields, aggregate functions inside
  groups, remove-record-on-delete, Paimon's `initRow` of a key whose first row is a retract) and
  AggregateMergeFunction with its field aggregators (sum, product, max, min, last_value,
  last_non_null_value, listagg with delimiter and distinct, bool_and, bool_or, first_value,
  first_non_null_value, nested_update with or without nested-key, collect (distinct), merge_map,
  merge_map_with_keytime, nested_partial_update, rbm32, rbm64, hll_sketch, theta_sketch,
  ignore-retract, aggregation.remove-record-on-delete);
- a merged row whose kind is -U/-D is not part of the table's content;
- `fields.<f>.default-value` fills nulls when reading.

A full compaction is modelled as Java performs it: each key's rows are replaced by their merged
row, and keys whose merged row is a retract disappear (the top level drops deletes).

The model raises `Refused` where Paimon refuses a record (a retract on partial-update or
first-row without the options that allow it, a function that cannot retract).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field

import numpy as np

ADD_KINDS = ("+I", "+U")
RETRACT_KINDS = ("-U", "-D")


class Refused(Exception):
    """Paimon refuses this record (the write must fail)."""


@dataclass(frozen=True)
class Row:
    values: dict
    kind: str
    arrival: int


# ---------------------------------------------------------------------------------------------
# field aggregators (Java's FieldAggregator subclasses, per-merge state included)


def _check_int(value: int, bits: int) -> int:
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise Refused(f"overflow: {value}")
    return value


def _java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _blank(s) -> bool:
    return s is None or s.strip(" \t\n\r\f\v\x1c\x1d\x1e\x1f") == ""


class Agg:
    """One column's aggregator; `bits` is the integer width (0 for other types)."""

    retractable = False

    def __init__(self, name: str, bits: int = 64, delimiter: str = ",", distinct: bool = False):
        self.name, self.bits, self.delimiter, self.distinct = name, bits, delimiter, distinct
        self.initialized = False

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc, value):
        raise NotImplementedError

    def agg_reversed(self, acc, value):
        return self.agg(value, acc)

    def retract(self, acc, value):
        raise Refused(f"aggregate function of '{self.name}' does not support retraction")


class Sum(Agg):
    retractable = True

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return _check_int(acc + value, self.bits) if self.bits else acc + value

    def retract(self, acc, value):
        if acc is None or value is None:
            return (None if value is None else -value) if acc is None else acc
        return _check_int(acc - value, self.bits) if self.bits else acc - value


class Product(Agg):
    """Java's FieldProductAgg: integers wrap (no overflow check); a null accumulator takes the
    value, retracted or not."""

    retractable = True

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return _wrap_int(acc * value, self.bits) if self.bits else acc * value

    def retract(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        if value == 0:
            raise Refused("product retraction divides by zero")
        return _wrap_int(_java_div(acc, value), self.bits) if self.bits else acc / value


def _wrap_int(value: int, bits: int) -> int:
    """Two's complement wrap-around to `bits` bits, as Java's int arithmetic does."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


class Max(Agg):
    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return value if acc < value else acc


class Min(Agg):
    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return value if value < acc else acc


class LastValue(Agg):
    retractable = True

    def agg(self, acc, value):
        return value

    def retract(self, acc, value):
        return None


class LastNonNull(Agg):
    retractable = True

    def agg(self, acc, value):
        return acc if value is None else value

    def retract(self, acc, value):
        return None if value is not None else acc


class FirstValue(Agg):
    def agg(self, acc, value):
        if not self.initialized:
            self.initialized = True
            return value
        return acc


class FirstNonNull(Agg):
    def agg(self, acc, value):
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return acc


class ListAgg(Agg):
    def agg(self, acc, value):
        if _blank(value):
            return acc
        if _blank(acc):
            return value
        if not self.distinct:
            return acc + self.delimiter + value
        seen = set(acc.split(self.delimiter))
        parts = [acc]
        for token in value.split(self.delimiter):
            if _blank(token) or token in seen:
                continue
            seen.add(token)
            parts.append(token)
        return self.delimiter.join(parts)


class BoolAnd(Agg):
    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return acc and value


class BoolOr(Agg):
    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return acc or value


class NestedUpdate(Agg):
    """Java's FieldNestedUpdateAgg on ARRAY<ROW> values (lists of dicts, null elements skipped):
    with `nested_key` the elements merge by key, the input's replacing the accumulator's, else
    they append; a retraction removes the keys (or every equal element). Keyed elements keep the
    order of first insertion, as a LinkedHashMap would (Java's HashMap order is unspecified;
    tarn keeps first appearance). No count-limit, no nested-sequence-field."""

    retractable = True
    nested_key: tuple[str, ...] = ()

    def _key(self, element) -> tuple:
        return tuple(element[k] for k in self.nested_key)

    def agg(self, acc, value):
        if value is None:
            return acc
        if not self.nested_key:
            return [e for e in (acc or []) if e is not None] + [e for e in value if e is not None]
        merged = {}
        for e in (acc or []) + list(value):
            if e is not None:
                merged[self._key(e)] = e
        return list(merged.values())

    def retract(self, acc, value):
        if acc is None or value is None:
            return acc
        if not self.nested_key:
            kept = [e for e in acc if e is not None]
            for gone in value:
                if gone is not None:
                    kept = [e for e in kept if e != gone]
            return kept
        kept = {self._key(e): e for e in acc if e is not None}
        for gone in value:
            if gone is not None:
                kept.pop(self._key(gone), None)
        return list(kept.values())


class Collect(Agg):
    """Java's FieldCollectAgg on ARRAY values (lists): concatenation, or each element once with
    `distinct`; a retraction removes one equal element per element it holds (the oldest). Java
    builds a distinct result in a HashSet; tarn (and this model) keep first appearance."""

    retractable = True

    def agg(self, acc, value):
        if acc is None and value is None:
            return None
        if not self.distinct:
            if acc is None or value is None:
                return value if acc is None else acc
            return list(acc) + list(value)
        out = []
        for e in list(acc or []) + list(value or []):
            if e not in out:
                out.append(e)
        return out

    def agg_reversed(self, acc, value):
        return self.agg(acc, value)  # Java's override: the accumulator stays in front

    def retract(self, acc, value):
        if acc is None:
            return None
        if not value:
            return acc
        pending, kept = list(value), []
        for e in acc:
            if e in pending:
                pending.remove(e)
            else:
                kept.append(e)
        return kept


class MergeMap(Agg):
    """Java's FieldMergeMapAgg on MAP values (dicts): the input's entries replace the
    accumulator's; a retraction removes the keys it holds. Keys keep first insertion order
    (a HashMap in Java)."""

    retractable = True

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        out = dict(acc)
        out.update(value)
        return out

    def retract(self, acc, value):
        if acc is None:
            return None
        if not value:
            return acc
        return {k: v for k, v in acc.items() if k not in value}


class MergeMapWithKeyTime(Agg):
    """Java's FieldMergeMapWithKeyTimeAgg on MAP<K, ROW> values (dicts of dicts): a later entry
    replaces the key's entry if its timestamp field `ts` is greater (or the entry has no row or
    timestamp); a null row removes the key; a null timestamp is skipped."""

    ts = "ts"

    def agg(self, acc, value):
        if acc is None:
            return value
        if value is None:
            return acc
        out = dict(acc)
        for k, row in value.items():
            if row is None:
                out.pop(k, None)
                continue
            if row[self.ts] is None:
                continue
            current = out.get(k)
            if current is None or current[self.ts] is None or row[self.ts] > current[self.ts]:
                out[k] = row
        return out


class NestedPartialUpdate(Agg):
    """Java's FieldNestedPartialUpdateAgg on ARRAY<ROW> values (lists of dicts): elements merge
    by `nested_key`, each field taking the last non-null value."""

    nested_key: tuple[str, ...] = ()
    null_strategy = "merge"

    def agg(self, acc, value):
        if value is None:
            return acc
        merged: dict = {}
        for e in [e for e in (acc or []) if e is not None] + [e for e in value if e is not None]:
            key = tuple(e[k] for k in self.nested_key)
            if any(x is None for x in key) and self.null_strategy != "merge":
                if self.null_strategy == "error":
                    raise Refused("nested key contains null")
                continue
            current = merged.setdefault(key, {f: None for f in e})
            current.update({f: x for f, x in e.items() if x is not None})
        return list(merged.values())


class Bitmap(Agg):
    """rbm32 / rbm64 on serialised bitmaps: the union (kept as the set's bytes)."""

    bits = 32

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        from tarn.codec.roaring import bitmap32_bytes, bitmap32_values, bitmap64_bytes, bitmap64_values
        if self.bits == 32:
            return bitmap32_bytes(np.union1d(bitmap32_values(acc), bitmap32_values(value)))
        return bitmap64_bytes(np.union1d(bitmap64_values(acc), bitmap64_values(value)).view(np.int64))


class Sketch(Agg):
    """hll_sketch / theta_sketch on DataSketches images: Java's union of two."""

    theta = False

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        import datasketches as ds
        if self.theta:
            union = ds.theta_union(12)
            union.update(ds.compact_theta_sketch.deserialize(acc))
            union.update(ds.compact_theta_sketch.deserialize(value))
            return union.get_result(True).serialize()
        other = ds.hll_sketch.deserialize(value)
        union = ds.hll_union(other.lg_config_k)
        union.update(other)
        union.update(ds.hll_sketch.deserialize(acc))
        return union.get_result(ds.tgt_hll_type.HLL_4).serialize_compact()


class PrimaryKey(Agg):
    retractable = True

    def agg(self, acc, value):
        return value

    def retract(self, acc, value):
        return value


class IgnoreRetract(Agg):
    retractable = True

    def __init__(self, inner: Agg):
        super().__init__(inner.name)
        self.inner = inner

    def reset(self) -> None:
        self.inner.reset()

    def agg(self, acc, value):
        return self.inner.agg(acc, value)

    def agg_reversed(self, acc, value):
        return self.inner.agg_reversed(acc, value)

    def retract(self, acc, value):
        return acc


FUNCTIONS = {
    "sum": Sum, "product": Product, "max": Max, "min": Min, "last_value": LastValue,
    "last_non_null_value": LastNonNull, "first_value": FirstValue,
    "first_non_null_value": FirstNonNull, "first_not_null_value": FirstNonNull,
    "listagg": ListAgg, "bool_and": BoolAnd, "bool_or": BoolOr, "nested_update": NestedUpdate,
    "collect": Collect, "merge_map": MergeMap, "merge_map_with_keytime": MergeMapWithKeyTime,
    "nested_partial_update": NestedPartialUpdate, "rbm32": Bitmap, "rbm64": Bitmap, "hll_sketch": Sketch,
    "theta_sketch": Sketch,
}


# ---------------------------------------------------------------------------------------------
# the table's definition


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "int" (32 bit), "bigint", "string", "bool", "items" (an ARRAY<ROW>: lists of dicts)

    @property
    def bits(self) -> int:
        return {"int": 32, "bigint": 64}.get(self.kind, 0)


@dataclass(frozen=True)
class TableDef:
    """What the oracle knows of the table: columns (in schema order), keys and options."""

    columns: tuple[Column, ...]
    primary_keys: tuple[str, ...]  # includes the partition column when partitioned
    options: dict = field(default_factory=dict)

    def opt(self, key: str, default=None):
        return self.options.get(key, default)

    def flag(self, key: str) -> bool:
        return str(self.options.get(key, "false")).lower() == "true"

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def engine(self) -> str:
        return self.opt("merge-engine", "deduplicate")

    @property
    def ignore_delete(self) -> bool:
        return any(self.flag(k) for k in ("ignore-delete", "first-row.ignore-delete",
                                           "partial-update.ignore-delete", "deduplicate.ignore-delete"))

    @property
    def sequence_fields(self) -> list[str]:
        text = self.opt("sequence.field")
        return [s.strip() for s in text.split(",")] if text else []

    @property
    def sequence_groups(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """[(sequence fields, guarded fields)], ordered by option key as Paimon does."""
        groups = []
        for key in sorted(self.options):
            if key.startswith("fields.") and key.endswith(".sequence-group"):
                order = tuple(key[len("fields."):-len(".sequence-group")].split(","))
                groups.append((order, tuple(self.options[key].split(","))))
        return groups

    def key_of(self, values: dict) -> tuple:
        return tuple(values[k] for k in self.primary_keys)

    def aggregator(self, column: Column, for_partial_update: bool) -> Agg | None:
        name = column.name
        if not for_partial_update:
            if name in self.primary_keys:
                return PrimaryKey(name)
            if name in self.sequence_fields:
                return LastValue(name)
        function = self.opt(f"fields.{name}.aggregate-function") or self.opt("fields.default-aggregate-function")
        if function is None:
            if for_partial_update:
                return None
            function = "last_non_null_value"
        agg = FUNCTIONS[function](name, column.bits, self.opt(f"fields.{name}.list-agg-delimiter", ","),
                                  self.flag(f"fields.{name}.distinct"))
        if isinstance(agg, (NestedUpdate, NestedPartialUpdate)):
            agg.nested_key = tuple(k for k in self.opt(f"fields.{name}.nested-key", "").split(",") if k)
            agg.null_strategy = self.opt(f"fields.{name}.nested-key-null-strategy", "merge").lower()
        if isinstance(agg, MergeMapWithKeyTime):
            agg.ts = self.opt(f"fields.{name}.ts-field", "ts")
        if isinstance(agg, Bitmap):
            agg.bits = 64 if function == "rbm64" else 32
        if isinstance(agg, Sketch):
            agg.theta = function == "theta_sketch"
        return IgnoreRetract(agg) if self.flag(f"fields.{name}.ignore-retract") else agg


# ---------------------------------------------------------------------------------------------
# merge functions: rows in merge order -> (kind, values)


def merge_order(table: TableDef, rows: list[Row]) -> list[Row]:
    return sorted(rows, key=functools.cmp_to_key(lambda a, b: _compare_rows(table, a, b)))


def merge(table: TableDef, rows: list[Row]) -> tuple[str, dict]:
    """One merge of a key's rows (sorted here), through Paimon's ReducerMergeFunctionWrapper."""
    rows = merge_order(table, rows)
    if len(rows) == 1:
        return rows[0].kind, dict(rows[0].values)
    return ENGINES[table.engine](table, rows)


def _compare_rows(table: TableDef, a: Row, b: Row) -> int:
    """Merge order: `sequence.field` values (nulls first; `sequence.field.sort-order` =
    descending reverses non-null values), then with `sequence.auto-padding` = row-kind-flag
    retracts before adds, then arrival (the system sequence number)."""
    descending = str(table.opt("sequence.field.sort-order", "ascending")).lower() == "descending"
    for name in table.sequence_fields:
        x, y = a.values[name], b.values[name]
        c = _compare_nulls_first(x, y)
        if c:
            return -c if descending and x is not None and y is not None else c
    if "row-kind-flag" in str(table.opt("sequence.auto-padding", "")).lower() and table.sequence_fields:
        c = (a.kind in ADD_KINDS) - (b.kind in ADD_KINDS)
        if c:
            return c
    return (a.arrival > b.arrival) - (a.arrival < b.arrival)


def _compare_nulls_first(x, y) -> int:
    if x is None or y is None:
        return (x is not None) - (y is not None)
    return (x > y) - (x < y)


def _deduplicate(table: TableDef, rows: list[Row]) -> tuple[str, dict]:
    last = rows[-1]
    return last.kind, dict(last.values)


def _first_row(table: TableDef, rows: list[Row]) -> tuple[str, dict]:
    for row in rows:
        if row.kind in RETRACT_KINDS:
            raise Refused("first-row merge engine cannot accept DELETE/UPDATE_BEFORE records")
    return rows[0].kind, dict(rows[0].values)


def _aggregation(table: TableDef, rows: list[Row]) -> tuple[str, dict]:
    aggs = {c.name: table.aggregator(c, for_partial_update=False) for c in table.columns}
    remove_on_delete = table.flag("aggregation.remove-record-on-delete")
    current = {n: None for n in table.names}
    deleted = False
    for row in rows:
        deleted = remove_on_delete and row.kind == "-D"
        if deleted:
            current = dict(row.values)
            continue
        retract = row.kind in RETRACT_KINDS
        for name, agg in aggs.items():
            value = row.values[name]
            current[name] = agg.retract(current[name], value) if retract else agg.agg(current[name], value)
    return ("-D" if deleted else "+I"), current


def _compare_group(order, values: dict, current: dict) -> int:
    for name in order:
        c = _compare_nulls_first(values[name], current[name])
        if c:
            return c
    return 0


def _partial_update(table: TableDef, rows: list[Row]) -> tuple[str, dict]:
    names = table.names
    groups = table.sequence_groups
    group_of = {}
    for order, guarded in groups:
        for name in order + guarded:
            group_of[name] = order
    aggs = {}
    for c in table.columns:
        agg = table.aggregator(c, for_partial_update=True)
        if agg is not None and c.name in group_of:
            aggs[c.name] = agg
    remove_on_delete = table.flag("partial-update.remove-record-on-delete")
    current = {n: None for n in names}
    meet_insert = filled = deleted = False
    for row in rows:
        deleted = False
        values = row.values
        if row.kind in RETRACT_KINDS:
            if not filled:
                current = dict(values)
                filled = True
            if table.ignore_delete:
                continue
            if groups:
                _retract_groups(names, group_of, aggs, values, current)
                continue
            if remove_on_delete:
                if row.kind == "-D":
                    deleted = True
                    current = dict(values)
                continue
            raise Refused("partial-update cannot accept delete records")
        if not groups:
            for name in names:
                if values[name] is not None:
                    current[name] = values[name]
        else:
            _update_groups(names, group_of, aggs, values, current)
        meet_insert = filled = True
    return ("-D" if deleted or not meet_insert else "+I"), current


def _update_groups(names, group_of, aggs, values, current) -> None:
    processed = set()
    for name in names:
        agg = aggs.get(name)
        order = group_of.get(name)
        if order is None:
            if agg is not None:
                current[name] = agg.agg(current[name], values[name])
            elif values[name] is not None:
                current[name] = values[name]
            continue
        if name in processed:
            continue
        if all(values[s] is None for s in order):
            processed.update(order)
            continue
        if _compare_group(order, values, current) >= 0:
            if name in order:
                for s in order:
                    current[s] = values[s]
                    processed.add(s)
                continue
            current[name] = values[name] if agg is None else agg.agg(current[name], values[name])
        elif agg is not None:
            current[name] = agg.agg_reversed(current[name], values[name])


def _retract_groups(names, group_of, aggs, values, current) -> None:
    processed, updated = set(), set()
    for name in names:
        order = group_of.get(name)
        if order is None or name in processed:
            continue
        agg = aggs.get(name)
        if all(values[s] is None for s in order):
            processed.update(order)
            continue
        if _compare_group(order, values, current) >= 0:
            if name in order:
                for s in order:
                    if s not in updated:
                        current[s] = values[s]
                        updated.add(s)
                    processed.add(s)
            else:
                current[name] = None if agg is None else agg.retract(current[name], values[name])
        elif agg is not None:
            current[name] = agg.retract(current[name], values[name])


ENGINES = {"deduplicate": _deduplicate, "first-row": _first_row, "aggregation": _aggregation,
           "partial-update": _partial_update}


# ---------------------------------------------------------------------------------------------
# the table


class LsmOracle:
    """The rows written to a primary-key table, per key, and the content they merge to."""

    def __init__(self, table: TableDef):
        self.table = table
        self.history: dict[tuple, list[Row]] = {}
        self.arrivals = 0

    def accepts(self, kinds: list[str]) -> bool:
        """Whether Paimon takes these row kinds at all (else the write fails)."""
        t = self.table
        if t.ignore_delete or not any(k in RETRACT_KINDS for k in kinds):
            return True
        if t.engine == "first-row":
            return False
        if t.engine == "partial-update":
            return bool(t.sequence_groups) or t.flag("partial-update.remove-record-on-delete")
        return True

    def write(self, rows: list[dict], kinds: list[str]) -> None:
        """Apply a batch that succeeded (rows in arrival order)."""
        for values, kind in zip(rows, kinds):
            if kind in RETRACT_KINDS and self.table.ignore_delete:
                continue
            key = self.table.key_of(values)
            self.history.setdefault(key, []).append(Row(dict(values), kind, self.arrivals))
            self.arrivals += 1

    def merged(self, key: tuple) -> tuple[str, dict]:
        return merge(self.table, self.history[key])

    def full_compaction(self, partition=None) -> None:
        """Every key (of `partition`, the first key value, if given) folded into its merged
        row; retract results dropped (top level)."""
        for key in list(self.history):
            if partition is not None and key[0] != partition:
                continue
            kind, values = self.merged(key)
            if kind in RETRACT_KINDS:
                del self.history[key]
            else:
                self.history[key] = [Row(values, kind, self.history[key][-1].arrival)]

    def rows(self) -> list[dict]:
        """The table's content as read (default values filled in)."""
        out = []
        for key in self.history:
            kind, values = self.merged(key)
            if kind in ADD_KINDS:
                out.append(self._defaults(values))
        return out

    def _defaults(self, values: dict) -> dict:
        filled = dict(values)
        for name in filled:
            default = self.table.opt(f"fields.{name}.default-value")
            if default is not None and filled[name] is None:
                column = next(c for c in self.table.columns if c.name == name)
                filled[name] = _parse(default, column.kind)
        return filled

    def save(self) -> list[dict]:
        return copy.deepcopy(self.rows())


def _parse(text: str, kind: str):
    if kind in ("int", "bigint"):
        return int(text)
    if kind == "bool":
        return text.lower() == "true"
    return text
