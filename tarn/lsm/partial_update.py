"""The `partial-update` merge engine: every key collects the newest non-null value of each column.

Input: one sorted key-value table (key, then user sequence fields, then `_SEQUENCE_NUMBER`);
output: one row per key. Rules follow Paimon's PartialUpdateMergeFunction:

- Without sequence groups a row's non-null fields overwrite the merged row. Retract rows (-U/-D)
  are an error unless `ignore-delete` (skip them) or `partial-update.remove-record-on-delete`
  (a -D replaces the whole row and makes it a -D).
- `fields.<s1>,<s2>.sequence-group = f1,f2` guards f1, f2 (and s1, s2) by the sequence (s1, s2):
  a row with all of s1, s2 null leaves the group alone; otherwise, if its sequence is >= the
  merged one (nulls lowest), it overwrites the whole group - nulls included - and a retract row
  sets the guarded fields to null. `fields.<f>.aggregate-function` on a guarded field folds
  instead, through the aggregation engine's field aggregators (tarn.lsm.field_aggs): a row
  that wins the group is agg'ed, one that loses it agg-reversed, a retract row retracted. A -D
  newer in a group named by `partial-update.remove-record-on-sequence-group` replaces the whole
  row and makes it a -D.
- A key whose first row is a retract starts from that row's values (Paimon's `initRow`).
- The merged row is +I if any +I/+U was merged (and the last row did not remove the record),
  else -D; its `_SEQUENCE_NUMBER` is that of the last row merged (0 if all were ignored).

Everything runs per key segment on numpy index arithmetic: a column's value is read from the
last row of its key that "wins" it, and a reset row (a whole-row replacement) simply starts the
segment that matters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import InvalidOption, SchemaMismatch
from tarn.lsm.field_aggs import (LAST_NON_NULL, RETRACTABLE, REVERSIBLE, FieldAgg, aggregate, canonical,
                                 check_field, check_name, field_agg)
from tarn.lsm.folds import Fold, first_where, last_where, take_rows
from tarn.lsm.kv import DELETE, INSERT, SEQUENCE, UPDATE_AFTER, VALUE_KIND, MergeSpec, key_changes
from tarn.options import Options, as_options
from tarn.types import DataField, from_arrow_type

_NESTED = ("ARRAY", "MAP", "MULTISET", "ROW")  # types that cannot order a sequence group

DELETE_NOT_ACCEPTED = (
    "By default, Partial update can not accept delete records, you can choose one of the "
    "following solutions:\n"
    "1. Configure 'ignore-delete' to ignore delete records.\n"
    "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when "
    "receiving delete records.\n"
    "3. Configure 'sequence-group's to retract partial columns. Also configure "
    "'partial-update.remove-record-on-sequence-group' to remove the whole row when receiving "
    "deleted records of `specified sequence group`."
)


# ---------------------------------------------------------------------------------------------
# options -> rules


@dataclass(frozen=True)
class SequenceGroup:
    """One `fields.<order>.sequence-group = <fields>` option."""

    option: str
    order: tuple[str, ...]  # the sequence fields, compared left to right
    fields: tuple[str, ...]  # the fields they guard


@dataclass(frozen=True)
class PartialUpdateRules:
    """What a partial-update merge reads from the table options."""

    groups: tuple[SequenceGroup, ...] = ()
    aggregates: Mapping[str, str] | None = None  # guarded field -> aggregate function
    ignore_retract: frozenset[str] = frozenset()
    remove_record_on_delete: bool = False
    remove_groups: frozenset[int] = frozenset()  # indexes into `groups`
    field_aggs: Mapping[str, FieldAgg] | None = None  # guarded field -> how it aggregates

    def group_of(self, name: str) -> int | None:
        for i, group in enumerate(self.groups):
            if name in group.order or name in group.fields:
                return i
        return None


def _raw(options) -> dict[str, str]:
    return dict(as_options(options).raw)


def sequence_groups(options) -> tuple[SequenceGroup, ...]:
    """The sequence-group options, ordered by option key."""
    groups = []
    for key, value in sorted(_raw(options).items()):
        if key.startswith("fields.") and key.endswith(".sequence-group"):
            order = tuple(key[len("fields."):-len(".sequence-group")].split(","))
            groups.append(SequenceGroup(key, order, tuple(value.split(","))))
    return tuple(groups)


def partial_update_rules(fields, primary_keys, options, table_name: str = "table") -> PartialUpdateRules:
    """Read and check the partial-update options of a table; raises InvalidOption naming the
    field and option of anything Paimon (or tarn) refuses."""
    raw = _raw(options)
    typed = as_options(raw)
    names = {f.name: f for f in fields}
    keys = set(primary_keys)
    groups = sequence_groups(raw)
    owner: dict[str, str] = {}
    for group in groups:
        for name in group.order + group.fields:
            if name not in names:
                raise InvalidOption(f"table {table_name}: field '{name}' in option '{group.option}' "
                                    f"can not be found in table schema")
            if name in keys:
                raise InvalidOption(
                    f"table {table_name}: the sequence-group '{group.option}' contains primary key "
                    f"field '{name}', which is not allowed. Primary key columns cannot be put in "
                    f"sequence-group.")
            if name in owner and not (owner[name] == group.option and name in group.order):
                raise InvalidOption(f"table {table_name}: field '{name}' is defined repeatedly by "
                                    f"multiple groups: '{owner[name]}' and '{group.option}'")
            owner[name] = group.option
        for name in group.order:
            root = names[name].type.root
            if root in _NESTED:
                raise InvalidOption(f"table {table_name}: field '{name}' of type {root} cannot be "
                                    f"a sequence-group ordering field in option '{group.option}'")
    ordering = {n for g in groups for n in g.order}
    guarded = {n for g in groups for n in g.fields}
    field_aggs = _aggregates(fields, keys, ordering, guarded, typed, table_name)
    aggregates = {n: agg.function for n, agg in field_aggs.items()}
    ignore_delete = bool(typed.bool("ignore-delete"))
    remove_on_delete = bool(typed.bool("partial-update.remove-record-on-delete"))
    remove_fields = typed.list("partial-update.remove-record-on-sequence-group")
    _check_conflicts(table_name, groups, ignore_delete, remove_on_delete, remove_fields, ordering)
    remove_groups = frozenset(i for i, g in enumerate(groups) if set(g.order) & set(remove_fields))
    ignore_retract = frozenset(n for n, agg in field_aggs.items() if agg.ignore_retract)
    return PartialUpdateRules(groups, aggregates, ignore_retract, remove_on_delete, remove_groups, field_aggs)


def _aggregates(fields, keys, ordering, guarded, options: Options, table_name) -> dict[str, FieldAgg]:
    """The guarded fields that aggregate, each checked as the aggregation engine checks it, plus
    whether its function folds reversed rows (a row that lost the group)."""
    default = options.get("fields.default-aggregate-function")
    found = {}
    for f in fields:
        if f.name in keys or f.name in ordering:
            continue  # keys and sequence fields never aggregate
        option = f"fields.{f.name}.aggregate-function"
        explicit = options.get(option)
        name = explicit if explicit is not None else default
        if name is None:
            continue
        name = name.strip()
        func = canonical(name)
        if f.name not in guarded:
            if func != LAST_NON_NULL:
                raise InvalidOption(f"table {table_name}: must use sequence group for aggregation "
                                    f"functions but not found for field '{f.name}' "
                                    f"('{option}' = '{func}')")
            continue
        where = option if explicit is not None else "fields.default-aggregate-function"
        check_name(name, where, table_name)
        if func not in REVERSIBLE:
            raise InvalidOption(f"table {table_name}: option '{where}': aggregate function '{func}' is not "
                                f"supported inside partial-update by tarn; supported: {', '.join(REVERSIBLE)}")
        agg = field_agg(f, options, func)
        check_field(agg, where, table_name)
        found[f.name] = agg
    return found


def _check_conflicts(table_name, groups, ignore_delete, remove_on_delete, remove_fields, ordering):
    def conflict(a: str, b: str) -> InvalidOption:
        return InvalidOption(f"table {table_name}: {a} and {b} have conflicting behavior so should "
                             f"not be enabled at the same time.")

    if remove_on_delete and ignore_delete:
        raise conflict("ignore-delete", "partial-update.remove-record-on-delete")
    if remove_fields and ignore_delete:
        raise conflict("ignore-delete", "partial-update.remove-record-on-sequence-group")
    if remove_on_delete and groups:
        raise conflict("sequence-group", "partial-update.remove-record-on-delete")
    missing = [n for n in remove_fields if n not in ordering]
    if missing:
        raise InvalidOption(f"table {table_name}: field '{','.join(remove_fields)}' defined in "
                            f"'partial-update.remove-record-on-sequence-group' option must be part "
                            f"of sequence groups")


def validate_partial_update(fields, primary_keys, options, table_name: str) -> None:
    """Raise InvalidOption for partial-update options Paimon refuses (see partial_update_rules)."""
    partial_update_rules(fields, primary_keys, options, table_name)


def sequence_group_columns(options, columns) -> list[str]:
    """The extra columns a merge needs to read `columns`: the sequence fields of their groups."""
    wanted = set(columns)
    extra: list[str] = []
    for group in sequence_groups(options):
        if wanted & set(group.fields + group.order):
            extra += [n for n in group.order if n not in wanted and n not in extra]
    return extra


# ---------------------------------------------------------------------------------------------
# key segments


@dataclass(frozen=True)
class _Keys:
    """Row positions of the key runs of a sorted table."""

    n: int
    starts: np.ndarray  # first row of each key
    ends: np.ndarray  # last row of each key
    kid: np.ndarray  # key number of each row
    rows: np.ndarray  # 0..n-1

    @classmethod
    def of(cls, table: pa.Table, key_columns) -> _Keys:
        last = key_changes(table, key_columns)
        ends = np.flatnonzero(last)
        starts = np.concatenate(([0], ends[:-1] + 1))
        kid = np.repeat(np.arange(len(ends)), ends - starts + 1)
        return cls(table.num_rows, starts, ends, kid, np.arange(table.num_rows))

    def last(self, mask: np.ndarray) -> np.ndarray:
        """Per key: the last row where `mask` holds, else -1."""
        return last_where(mask, self.starts)

    def first(self, mask: np.ndarray) -> np.ndarray:
        """Per key: the first row where `mask` holds, else n."""
        return first_where(mask, self.starts, self.n)

    def after(self, per_key: np.ndarray) -> np.ndarray:
        """Rows after the per-key position `per_key` (of their own key)."""
        return self.rows > per_key[self.kid]


def _valid(column) -> np.ndarray:
    if column.null_count == 0:
        return np.ones(len(column), dtype=bool)
    return _np(pc.is_valid(column))


def _np(array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.to_numpy(zero_copy_only=False)


def _dense_rank(table: pa.Table) -> np.ndarray:
    """Rank of each row's tuple, equal tuples equal, nulls lowest (Paimon's field comparator)."""
    names = table.column_names
    order = pc.sort_indices(table, sort_keys=[(c, "ascending", "at_start") for c in names]).to_numpy()
    run_last = key_changes(table.take(order), names)
    run_start = np.concatenate(([True], run_last[:-1]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(run_start) - 1
    return rank


# ---------------------------------------------------------------------------------------------
# the merge


@dataclass
class _Rows:
    """Per-row facts of the input that every column's rule reads."""

    keys: _Keys
    add: np.ndarray  # +I / +U
    retract: np.ndarray  # -U / -D
    delete: np.ndarray
    processed: np.ndarray  # not an ignored retract
    init_row: np.ndarray  # a key's first row being a retract: Paimon starts from its values


@dataclass
class _Group:
    """One sequence group over the rows: comparable rank, non-empty rows, and the rows that
    win it once the resets (`base`) are known."""

    rank: np.ndarray
    nonempty: np.ndarray
    accepted: np.ndarray | None = None


def merge_partial_update(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """Merge a sorted key-value table with the partial-update engine: one row per key."""
    if table.num_rows == 0:
        return table
    fields = _fields(table, spec)
    rules = partial_update_rules(fields, spec.key_columns, spec.options)
    rows = _rows(table, spec)
    position = {f.name: i for i, f in enumerate(fields)}
    groups = [_group(table, g) for g in rules.groups]
    base, base_trigger, stop = _bases(rows, groups, rules, position)
    base_processed = (base >= 0) & _at(rows.init_row & rows.processed, base) & ~base_trigger \
        & bool(rules.groups)
    for group in groups:
        group.accepted = _accepted(rows, group, base, base_processed)
    _check_not_null(table, fields, spec, rows, base, bool(rules.groups))
    for name in rules.aggregates:
        _check_retract(table, name, rules, rows, groups, stop > position[name])
    return _assemble(table, spec, rules, rows, groups, base, base_trigger)


def _bases(rows: _Rows, groups, rules: PartialUpdateRules, position):
    """Per key: the row whose values the merged row restarts from (-1: none) and whether it
    removed the record; per row: the field position where Paimon stopped processing it."""
    if rules.groups:
        base, stop = _group_bases(rows, groups, rules, position)
        # a -D reaching a non-empty group of remove-record-on-sequence-group replaced the row
        return base, _at(rows.delete & _any_nonempty(groups, rules), base), stop
    if (rows.retract & rows.processed).any() and not rules.remove_record_on_delete:
        raise SchemaMismatch(DELETE_NOT_ACCEPTED)
    trigger = rows.delete & rows.processed & rules.remove_record_on_delete
    base = rows.keys.last(rows.init_row | trigger)
    return base, _at(trigger, base), np.full(rows.keys.n, len(position) + 1)


def _fields(table: pa.Table, spec: MergeSpec) -> tuple[DataField, ...]:
    if spec.fields:
        return tuple(spec.fields)
    names = [n for n in table.column_names if n not in (SEQUENCE, VALUE_KIND)]
    return tuple(DataField(i, n, from_arrow_type(table.schema.field(n).type)) for i, n in enumerate(names))


def _rows(table: pa.Table, spec: MergeSpec) -> _Rows:
    keys = _Keys.of(table, spec.key_columns)
    kind = _np(table.column(VALUE_KIND))
    add = (kind == INSERT) | (kind == UPDATE_AFTER)
    retract = ~add
    first = np.zeros(keys.n, dtype=bool)
    first[keys.starts] = True
    processed = ~retract if spec.ignore_delete else np.ones(keys.n, dtype=bool)
    return _Rows(keys, add, retract, kind == DELETE, processed, first & retract)


def _group(table: pa.Table, group: SequenceGroup) -> _Group:
    for name in group.fields:
        if name in table.column_names:
            missing = [n for n in group.order if n not in table.column_names]
            if missing:
                raise SchemaMismatch(f"column '{name}' is guarded by '{group.option}': the merge "
                                     f"needs its sequence field(s) {missing} too")
    present = [n for n in group.order if n in table.column_names]
    if not present:
        return _Group(np.zeros(table.num_rows, np.int64), np.zeros(table.num_rows, bool))
    order = table.select(present)
    nonempty = np.logical_or.reduce([_valid(c) for c in order.columns])
    return _Group(_dense_rank(order), nonempty)


def _at(mask: np.ndarray, per_key: np.ndarray) -> np.ndarray:
    """Per key: mask at row `per_key` (False where per_key is -1)."""
    return (per_key >= 0) & mask[np.maximum(per_key, 0)]


def _any_nonempty(groups: list[_Group], rules: PartialUpdateRules) -> np.ndarray:
    masks = [groups[i].nonempty for i in rules.remove_groups]
    return np.logical_or.reduce(masks) if masks else np.zeros(len(groups[0].rank), bool)


def _running_best(rows: _Rows, group: _Group, base: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Per row: the group's merged sequence rank after that row, restarting at each key's base
    row (whose values become the merged row) or at the key start (all null: below everything)."""
    keys = rows.keys
    offset = keys.kid.astype(np.int64) * (keys.n + 2)
    value = np.where(counted | (keys.rows == base[keys.kid]), group.rank, -1) + offset
    return np.maximum.accumulate(value) - offset


def _accepted(rows: _Rows, group: _Group, base: np.ndarray, base_processed: np.ndarray) -> np.ndarray:
    """Rows whose group sequence is not null and >= the merged one (ties: the later row wins)."""
    keys = rows.keys
    counted = rows.processed & keys.after(base) & group.nonempty
    best = _running_best(rows, group, base, counted)
    accepted = counted & (group.rank == best)
    # A first row that is a retract: its values are the merged row, then it retracts (equal seq).
    at_base = keys.rows == base[keys.kid]
    return accepted | (at_base & base_processed[keys.kid] & group.nonempty)


def _group_bases(rows: _Rows, groups: list[_Group], rules: PartialUpdateRules, position):
    """Per key: the last row that replaced the whole merged row (a first-row retract, or a -D
    winning a group of `partial-update.remove-record-on-sequence-group`), else -1. Also per row:
    the field position where such a -D stopped being processed (Paimon walks the fields in
    order and stops at the first sequence field of the winning group), else past the end."""
    keys = rows.keys
    base = keys.last(rows.init_row)
    stop = np.full(keys.n, len(position) + 1)
    if not rules.remove_groups:
        return base, stop
    starts = {i: min(position[n] for n in rules.groups[i].order) for i in rules.remove_groups}
    for i in rules.remove_groups:  # a first-row -D wins every non-empty group (equal sequence)
        hit = rows.init_row & rows.delete & groups[i].nonempty
        stop = np.where(hit, np.minimum(stop, starts[i]), stop)
    candidates = rows.delete & rows.processed & ~rows.init_row
    while True:
        after = keys.after(base)
        where = np.full(keys.n, len(position) + 1)
        for i in rules.remove_groups:
            group = groups[i]
            counted = rows.processed & after & group.nonempty
            won = counted & (group.rank == _running_best(rows, group, base, counted))
            where = np.where(won, np.minimum(where, starts[i]), where)
        trigger = candidates & after & (where <= len(position))
        if len(rules.remove_groups) == 1:
            # one group: its merged sequence never falls back, so every trigger found is real
            stop = np.where(trigger, where, stop)
            last = keys.last(trigger)
            return np.where(last >= 0, last, base), stop
        nxt = keys.first(trigger)
        found = nxt < keys.n
        if not found.any():
            return base, stop
        stop[nxt[found]] = where[nxt[found]]
        base = np.where(found, nxt, base)


def _check_not_null(table, fields, spec, rows: _Rows, base, with_groups: bool) -> None:
    """Paimon refuses a null for a NOT NULL column in a row it copies whole (the first-row
    retract, a whole-row delete) and, without sequence groups, in any +I/+U."""
    copied = rows.init_row.copy()
    copied[base[base >= 0]] = True
    check = copied if with_groups else copied | rows.add
    for f in fields:
        if f.type.nullable or f.name in spec.key_columns or f.name not in table.column_names:
            continue
        column = table.column(f.name)
        if column.null_count and (check & ~_valid(column)).any():
            raise SchemaMismatch(f"column '{f.name}' is NOT NULL but a merged row has null for it")


def _check_retract(table, name, rules, rows: _Rows, groups, reached: np.ndarray) -> None:
    """Aggregates that cannot retract (tarn.lsm.field_aggs.RETRACTABLE) refuse a retract of a
    non-empty group that reaches them, unless `fields.<f>.ignore-retract`."""
    func = rules.aggregates[name]
    if func in RETRACTABLE or name in rules.ignore_retract or name not in table.column_names:
        return
    group = groups[rules.group_of(name)]
    if (rows.retract & rows.processed & group.nonempty & reached).any():
        raise SchemaMismatch(
            f"column '{name}': aggregate function '{func}' does not support retraction, If you "
            f"allow this function to ignore retraction messages, you can configure "
            f"'fields.{name}.ignore-retract'='true'.")


def _assemble(table, spec, rules, rows: _Rows, groups, base, base_trigger) -> pa.Table:
    keys = rows.keys
    after = keys.after(base)
    at_base = keys.rows == base[keys.kid]
    kinds = np.where(_any(keys, rows.add) & ~((base == keys.ends) & base_trigger), INSERT, DELETE)
    last_processed = keys.last(rows.processed)
    sequence = _np(table.column(SEQUENCE))
    seq = np.where(last_processed >= 0, sequence[np.maximum(last_processed, 0)], 0)
    columns = []
    for name in table.column_names:
        field_type = table.schema.field(name).type
        if name == SEQUENCE:
            columns.append(pa.array(seq, type=field_type))
        elif name == VALUE_KIND:
            columns.append(pa.array(kinds, type=field_type))
        elif name in spec.key_columns:
            columns.append(take_rows(table.column(name), keys.ends))
        else:
            g = rules.group_of(name)
            columns.append(_column(table.column(name), name, g, rules, rows, groups, base, after, at_base))
    return pa.table(columns, schema=table.schema)


def _any(keys: _Keys, mask: np.ndarray) -> np.ndarray:
    return keys.last(mask) >= 0


def _column(column, name, g, rules, rows: _Rows, groups, base, after, at_base) -> pa.Array:
    keys = rows.keys
    if g is None:
        # not in a group: the last non-null +I/+U value (or the base row's value)
        return take_rows(column, keys.last((rows.add & after & _valid(column)) | at_base))
    group = groups[g]
    agg = rules.field_aggs.get(name)
    if agg is None:
        winner = keys.last(group.accepted | at_base)
        if name not in rules.groups[g].order:
            retracted = _at(group.accepted & rows.retract, winner)
            winner = np.where(retracted, -1, winner)
        return take_rows(column, winner)
    return aggregate(column, _fold(rows, group, base, after, at_base), agg)


def _fold(rows: _Rows, group: _Group, base, after, at_base) -> Fold:
    """How the aggregator of a field of `group` sees the rows: from the key's base row on, a row
    winning the group is agg'ed, a +I/+U losing it agg-reversed, a retract row reaching it
    retracted (the processed first-row retract too: its values are the base, then it retracts).
    Rows before the base only leave first_value's state (`seen`)."""
    keys = rows.keys
    agg = group.accepted & rows.add
    reversed_ = rows.add & after & group.nonempty & ~group.accepted
    retract = rows.retract & group.nonempty & ((rows.processed & after) | (group.accepted & at_base))
    seen = rows.add & group.nonempty & ~after & ~at_base
    return Fold(keys.starts, keys.kid, base, agg, reversed_, retract, seen)
