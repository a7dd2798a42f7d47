"""The partial-update merge engine against Paimon's documented examples and against a slow
row-at-a-time model of PartialUpdateMergeFunction written here."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tarn.errors import InvalidOption, SchemaMismatch, TarnError
from tarn.lsm.merge import DELETE, INSERT, SEQUENCE, UPDATE_AFTER, UPDATE_BEFORE, VALUE_KIND, MergeSpec
from tarn.data.defaults import default_values, fill_default_values
from tarn.lsm.partial_update import (merge_partial_update,
                                     partial_update_rules, sequence_group_columns,
                                     validate_partial_update)
from tarn.options import Options
from tarn.types import ARRAY, BIGINT, DECIMAL, FLOAT, INT, ROW, STRING, DataField, arrow_schema
from tests.lsm_oracle import ENGINES, Column, Refused, TableDef
from tests.lsm_oracle import Row as OracleRow

N = None


def fields_of(names, not_null=("k",)):
    return tuple(DataField(i, n, INT(nullable=n not in not_null)) for i, n in enumerate(names))


def table_of(names, rows, kinds=None, seqs=None):
    data = {n: pa.array([r[i] for r in rows], pa.int32()) for i, n in enumerate(names)}
    data[SEQUENCE] = pa.array(seqs if seqs is not None else range(len(rows)), pa.int64())
    data[VALUE_KIND] = pa.array(kinds if kinds is not None else [INSERT] * len(rows), pa.int8())
    return pa.table(data)


def spec_of(names, options, ignore_delete=False):
    return MergeSpec(("k",), "partial-update", ignore_delete, (), fields_of(names), Options(options))


def merge(names, rows, options=None, kinds=None, ignore_delete=False):
    out = merge_partial_update(table_of(names, rows, kinds), spec_of(names, options or {}, ignore_delete))
    return [tuple(r[n] for n in names) + (r[VALUE_KIND],) for r in out.to_pylist()]


# ---------------------------------------------------------------------------------------------
# Paimon's documented examples


def test_last_non_null_wins():
    rows = [(1, 23, 10, N), (1, N, N, 7), (1, 25, N, N)]
    assert merge(["k", "a", "b", "c"], rows) == [(1, 25, 10, 7, INSERT)]


def test_sequence_groups_doc_example():
    names = ["k", "a", "b", "g_1", "c", "d", "g_2"]
    options = {"fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"}
    rows = [(1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, N)]
    assert merge(names, rows, options) == [(1, 2, 2, 2, 1, 1, 1, INSERT)]
    rows.append((1, 3, 3, 1, 3, 3, 3))
    assert merge(names, rows, options) == [(1, 2, 2, 2, 3, 3, 3, INSERT)]


def test_aggregation_inside_sequence_groups_doc_example():
    options = {"fields.a.sequence-group": "b", "fields.b.aggregate-function": "first_value",
               "fields.c.sequence-group": "d", "fields.d.aggregate-function": "sum"}
    rows = [(1, 1, 1, N, N), (1, N, N, 1, 1), (1, 2, 2, N, N), (1, N, N, 2, 2)]
    assert merge(["k", "a", "b", "c", "d"], rows, options) == [(1, 2, 1, 2, 3, INSERT)]


def test_sequence_group_overwrites_nulls_and_ties_go_to_the_later_row():
    options = {"fields.g.sequence-group": "a,b"}
    rows = [(1, 1, 1, 5), (1, N, 2, 5)]
    assert merge(["k", "a", "b", "g"], rows, options) == [(1, N, 2, 5, INSERT)]


def test_multi_field_sequence_group_compares_left_to_right_with_nulls_lowest():
    names = ["k", "a", "s1", "s2"]
    options = {"fields.s1,s2.sequence-group": "a"}
    rows = [(1, 10, 1, 5), (1, 20, 1, N), (1, 30, 1, 6), (1, 40, N, 9)]
    assert merge(names, rows, options) == [(1, 30, 1, 6, INSERT)]


def test_several_keys_and_multiple_chunks():
    names = ["k", "a", "b"]
    table = table_of(names, [(1, 1, N), (1, N, 2), (2, 5, N), (3, N, N), (3, 7, 8)])
    table = pa.concat_tables([table.slice(0, 2), table.slice(2)])
    out = merge_partial_update(table, spec_of(names, {}))
    assert out.column("a").to_pylist() == [1, 5, 7]
    assert out.column("b").to_pylist() == [2, N, 8]
    assert out.column(SEQUENCE).to_pylist() == [1, 2, 4]
    assert out.schema == table.schema


# ---------------------------------------------------------------------------------------------
# deletes


def test_delete_is_refused_by_default():
    with pytest.raises(SchemaMismatch, match="partial-update.remove-record-on-delete"):
        merge(["k", "a"], [(1, 1), (1, 1)], kinds=[INSERT, DELETE])


def test_ignore_delete_skips_retracts():
    assert merge(["k", "a"], [(1, 1), (1, 2), (1, 3)], kinds=[INSERT, DELETE, UPDATE_AFTER],
                 ignore_delete=True) == [(1, 3, INSERT)]


def test_remove_record_on_delete():
    options = {"partial-update.remove-record-on-delete": "true"}
    names = ["k", "a", "b"]
    assert merge(names, [(1, 1, 1), (1, N, 2)], options, kinds=[INSERT, DELETE]) == [(1, N, 2, DELETE)]
    # -U is ignored; a later +I starts from the deleted row's values
    got = merge(names, [(1, 1, 1), (1, 2, 2), (1, 5, N), (1, N, 9)], options,
                kinds=[INSERT, UPDATE_BEFORE, DELETE, INSERT])
    assert got == [(1, 5, 9, INSERT)]


def test_retract_with_sequence_group_nulls_the_group():
    names = ["k", "a", "g", "c"]
    options = {"fields.g.sequence-group": "a"}
    got = merge(names, [(1, 1, 1, 7), (1, 9, 2, 8), (1, 4, 1, 9)], options,
                kinds=[INSERT, UPDATE_BEFORE, UPDATE_BEFORE])
    assert got == [(1, N, 2, 7, INSERT)]  # the older retract (g=1 < 2) changes nothing


def test_remove_record_on_sequence_group():
    names = ["k", "a", "g", "c", "h"]
    options = {"fields.g.sequence-group": "a", "fields.h.sequence-group": "c",
               "partial-update.remove-record-on-sequence-group": "g"}
    rows = [(1, 1, 1, 1, 1), (1, 5, 2, N, N)]
    assert merge(names, rows, options, kinds=[INSERT, DELETE]) == [(1, 5, 2, N, N, DELETE)]
    # a -D of the other group only retracts that group
    rows = [(1, 1, 1, 1, 1), (1, N, N, 3, 2)]
    assert merge(names, rows, options, kinds=[INSERT, DELETE]) == [(1, 1, 1, N, 2, INSERT)]


def test_first_row_retract_is_the_starting_row():
    names = ["k", "a", "b"]
    got = merge(names, [(1, 1, 2), (1, 3, N)], kinds=[DELETE, INSERT], ignore_delete=True)
    assert got == [(1, 3, 2, INSERT)]
    out = merge_partial_update(table_of(names, [(1, 1, 2)], [DELETE]), spec_of(names, {}, True))
    assert out.column(VALUE_KIND).to_pylist() == [DELETE]
    assert out.column(SEQUENCE).to_pylist() == [0]


def test_not_null_column():
    names = ["k", "a"]
    spec = MergeSpec(("k",), "partial-update", False, (), fields_of(names, ("k", "a")), Options({}))
    with pytest.raises(SchemaMismatch, match="'a'"):
        merge_partial_update(table_of(names, [(1, 1), (1, N)]), spec)


def test_retract_on_aggregate_without_retraction():
    names = ["k", "a", "g"]
    options = {"fields.g.sequence-group": "a", "fields.a.aggregate-function": "max"}
    with pytest.raises(SchemaMismatch, match="ignore-retract"):
        merge(names, [(1, 1, 1), (1, 1, 2)], options, kinds=[INSERT, UPDATE_BEFORE])
    options["fields.a.ignore-retract"] = "true"
    assert merge(names, [(1, 1, 1), (1, 1, 2), (1, 0, 3)], options,
                 kinds=[INSERT, UPDATE_BEFORE, INSERT]) == [(1, 1, 3, INSERT)]


def test_aggregates_on_decimal_string_and_float():
    table = pa.table({
        "k": pa.array([1, 1, 1], pa.int32()), "g": pa.array([1, 2, 3], pa.int32()),
        "d": pa.array([Decimal("1.50"), Decimal("2.25"), Decimal("1.00")], pa.decimal128(10, 2)),
        "s": pa.array(["b", "a", "c"]), "f": pa.array([1.5, None, 2.0], pa.float32()),
        SEQUENCE: pa.array([0, 1, 2], pa.int64()), VALUE_KIND: pa.array([INSERT, INSERT, UPDATE_BEFORE], pa.int8())})
    fields = (DataField(0, "k", INT(False)), DataField(1, "g", INT()), DataField(2, "d", DECIMAL(10, 2)),
              DataField(3, "s", STRING()), DataField(4, "f", FLOAT()))
    options = {"fields.g.sequence-group": "d,s,f", "fields.d.aggregate-function": "sum",
               "fields.s.aggregate-function": "min", "fields.s.ignore-retract": "true",
               "fields.f.aggregate-function": "sum"}
    out = merge_partial_update(table, MergeSpec(("k",), "partial-update", False, (), fields, Options(options)))
    assert out.to_pylist() == [{"k": 1, "g": 3, "d": Decimal("2.75"), "s": "a", "f": -0.5,
                                SEQUENCE: 2, VALUE_KIND: INSERT}]
    assert out.schema == table.schema


# ---------------------------------------------------------------------------------------------
# validation


def check(names, options, match, primary_keys=("k",)):
    with pytest.raises(InvalidOption, match=match):
        validate_partial_update(fields_of(names), primary_keys, options, "db.t")


def test_validation():
    names = ["k", "a", "b", "g", "h"]
    check(names, {"fields.g.sequence-group": "a,x"}, "'x'.*fields.g.sequence-group")
    check(names, {"fields.x.sequence-group": "a"}, "'x'")
    check(names, {"fields.g.sequence-group": "k"}, "primary key field 'k'")
    check(names, {"fields.g.sequence-group": "a", "fields.h.sequence-group": "a"}, "'a' is defined repeatedly")
    check(names, {"fields.g.sequence-group": "a", "fields.a.sequence-group": "b"}, "'a' is defined repeatedly")
    check(names, {"fields.a.aggregate-function": "sum"}, "must use sequence group.*'a'")
    check(names, {"fields.default-aggregate-function": "max"}, "must use sequence group")
    check(names, {"fields.g.sequence-group": "a", "fields.a.aggregate-function": "collect"}, "collect")
    check(names, {"fields.g.sequence-group": "a", "partial-update.remove-record-on-delete": "true"},
          "conflicting")
    check(names, {"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"}, "conflicting")
    check(names, {"partial-update.ignore-delete": "true", "fields.g.sequence-group": "a",
                  "partial-update.remove-record-on-sequence-group": "g"}, "conflicting")
    check(names, {"fields.g.sequence-group": "a",
                  "partial-update.remove-record-on-sequence-group": "h"}, "must be part of sequence groups")
    nested = fields_of(names) + (DataField(9, "arr", ARRAY(INT())),)
    with pytest.raises(InvalidOption, match="'arr'.*fields.arr.sequence-group"):
        validate_partial_update(nested, ("k",), {"fields.arr.sequence-group": "a"}, "db.t")


def test_valid_options_pass():
    names = ["k", "a", "b", "g", "h"]
    options = {"fields.g,h.sequence-group": "a,b", "fields.a.aggregate-function": "sum",
               "fields.b.aggregate-function": "first_not_null_value",
               "partial-update.remove-record-on-sequence-group": "h"}
    rules = partial_update_rules(fields_of(names), ("k",), options, "db.t")
    assert rules.groups[0].order == ("g", "h") and rules.groups[0].fields == ("a", "b")
    assert dict(rules.aggregates) == {"a": "sum", "b": "first_non_null_value"}
    assert rules.remove_groups == {0}
    validate_partial_update(fields_of(names), ("k",), {"fields.b.aggregate-function": "last_non_null_value"}, "t")
    assert sequence_group_columns(options, ["k", "a"]) == ["g", "h"]


def test_default_values():
    names = ["k", "a", "b"]
    fields = (DataField(0, "k", INT(False)), DataField(1, "a", INT(), default_value="5"), DataField(2, "b", INT()))
    defaults = default_values(fields, {"fields.b.default-value": "0"})
    assert defaults == {"a": "5", "b": "0"}
    merged = merge_partial_update(table_of(names, [(1, 1, N), (1, N, N)]), spec_of(names, {}))
    filled = fill_default_values(merged, defaults)
    assert filled.column("a").to_pylist() == [1] and filled.column("b").to_pylist() == [0]


# ---------------------------------------------------------------------------------------------
# a row-at-a-time model of PartialUpdateMergeFunction


class Agg:
    """One Paimon field aggregator, with its per-key state."""

    def __init__(self, name, ignore_retract=False):
        self.name, self.ignore_retract, self.initialized = name, ignore_retract, False

    def agg(self, acc, value):
        name = self.name
        if name == "last_value":
            return value
        if name == "last_non_null_value":
            return acc if value is None else value
        if name == "first_value":
            if not self.initialized:
                self.initialized = True
                return value
            return acc
        if name == "first_non_null_value":
            if not self.initialized and value is not None:
                self.initialized = True
                return value
            return acc
        if acc is None or value is None:
            return value if acc is None else acc
        return {"sum": acc + value, "min": min(acc, value), "max": max(acc, value)}[name]

    def agg_reversed(self, acc, value):
        return self.agg(value, acc)

    def retract(self, acc, value):
        if self.ignore_retract:
            return acc
        if self.name == "sum":
            if acc is None or value is None:
                return -value if acc is None and value is not None else acc
            return acc - value
        if self.name == "last_value":
            return None
        if self.name == "last_non_null_value":
            return None if value is not None else acc
        raise ValueError("no retract")


def compare(kv, row, order):
    for i in order:
        a, b = kv[i], row[i]
        if a is None and b is None:
            continue
        if a is None or b is None:
            return -1 if a is None else 1
        if a != b:
            return -1 if a < b else 1
    return 0


def reference(rows, kinds, seqs, groups, aggs, ignore_retract=(), remove_on_delete=False,
              remove_fields=(), ignore_delete=False, width=0):
    """Merge the rows of one key as Paimon does, one row at a time. groups: [(order, fields)]
    of column indexes; aggs: {column index: function}."""
    group_of = {}
    for order, guarded in groups:
        for i in order + guarded:
            group_of[i] = (order, guarded)
    aggregators = {i: Agg(f, i in ignore_retract) for i, f in aggs.items()}
    row, filled, meet_insert, latest, delete_row = [None] * width, False, False, 0, False
    for kv, kind, seq in zip(rows, kinds, seqs):
        delete_row = False
        if kind in (UPDATE_BEFORE, DELETE):
            if not filled:
                row, filled = list(kv), True
            if ignore_delete:
                continue
            latest = seq
            if groups:
                row, delete_row = retract_with_groups(row, kv, kind, group_of, aggregators, remove_fields)
                continue
            if remove_on_delete:
                if kind == DELETE:
                    row, delete_row = list(kv), True
                continue
            raise ValueError("delete")
        latest = seq
        for i in range(width):
            if not groups:
                if kv[i] is not None:
                    row[i] = kv[i]
        if groups:
            update_with_groups(row, kv, group_of, aggregators)
        meet_insert = filled = True
    return row, DELETE if delete_row or not meet_insert else INSERT, latest


def update_with_groups(row, kv, group_of, aggregators):
    done = set()
    for i in range(len(row)):
        agg = aggregators.get(i)
        if i not in group_of:
            if kv[i] is not None:
                row[i] = kv[i]
            continue
        order, _ = group_of[i]
        if i in done:
            continue
        if all(kv[s] is None for s in order):
            done.update(order)
            continue
        if compare(kv, row, order) >= 0:
            if i in order:
                for s in order:
                    row[s] = kv[s]
                done.update(order)
                continue
            row[i] = kv[i] if agg is None else agg.agg(row[i], kv[i])
        elif agg is not None:
            row[i] = agg.agg_reversed(row[i], kv[i])


def retract_with_groups(row, kv, kind, group_of, aggregators, remove_fields):
    done, updated = set(), set()
    for i in range(len(row)):
        if i not in group_of:
            continue
        agg = aggregators.get(i)
        order, _ = group_of[i]
        if i in done:
            continue
        if all(kv[s] is None for s in order):
            done.update(order)
            continue
        if compare(kv, row, order) >= 0:
            if i in order:
                for s in order:
                    if s not in updated:
                        if kind == DELETE and s in remove_fields:
                            return list(kv), True
                        row[s] = kv[s]
                        updated.add(s)
                    done.add(s)
            else:
                row[i] = None if agg is None else agg.retract(row[i], kv[i])
        elif agg is not None:
            row[i] = agg.retract(row[i], kv[i])
    return row, False


# Columns: k | a b (guarded by g) | g | c d (guarded by h1,h2) | h1 h2 | e (no group)
NAMES = ["k", "a", "b", "g", "c", "d", "h1", "h2", "e"]
GROUPS = [((3,), (1, 2)), ((6, 7), (4, 5))]
AGG_CHOICES = [None, "sum", "min", "max", "last_value", "last_non_null_value", "first_value",
               "first_non_null_value"]

ASSOCIATIVE = [None, "sum", "min", "max", "last_value"]

value = st.one_of(st.none(), st.integers(0, 3))
kind_st = st.sampled_from([INSERT, INSERT, UPDATE_AFTER, UPDATE_BEFORE, DELETE])


@st.composite
def key_rows(draw, retracts):
    keys = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True))
    out = []
    for k in sorted(keys):
        for _ in range(draw(st.integers(1, 6))):
            kind = draw(kind_st) if retracts else INSERT
            out.append(((k,) + tuple(draw(value) for _ in NAMES[1:]), kind))
    return out


@st.composite
def configs(draw, agg_choices=AGG_CHOICES):
    with_groups = draw(st.sampled_from([True, True, True, False]))
    cfg = {"groups": [], "aggs": {}, "ignore_retract": set(), "remove_on_delete": False,
           "remove_fields": set(), "ignore_delete": False}
    if with_groups:
        cfg["groups"] = GROUPS
        mode = draw(st.sampled_from(["none", "ignore", "remove-g", "remove-h", "remove-both"]))
        if mode.startswith("remove"):
            # Known deviation (docs/guide-merge-engines.md): when a -D resets the row through
            # remove-record-on-sequence-group, Java's first_value / first_non_null_value keep
            # their "initialized" flag from before the reset; tarn starts them afresh.
            agg_choices = [f for f in agg_choices if f not in ("first_value", "first_non_null_value")]
        for i in (1, 2, 4, 5):
            func = draw(st.sampled_from(agg_choices))
            if func:
                cfg["aggs"][i] = func
                if func not in ("sum", "last_value", "last_non_null_value") and draw(st.integers(0, 3)):
                    cfg["ignore_retract"].add(i)
        cfg["ignore_delete"] = mode == "ignore"
        cfg["remove_fields"] = {"none": set(), "ignore": set(), "remove-g": {3}, "remove-h": {7},
                                "remove-both": {3, 6}}[mode]
    else:
        mode = draw(st.sampled_from(["none", "ignore", "remove"]))
        cfg["ignore_delete"] = mode == "ignore"
        cfg["remove_on_delete"] = mode == "remove"
    return cfg


def options_of(cfg):
    options = {}
    if cfg["groups"]:
        options["fields.g.sequence-group"] = "a,b"
        options["fields.h1,h2.sequence-group"] = "c,d"
    for i, func in cfg["aggs"].items():
        options[f"fields.{NAMES[i]}.aggregate-function"] = func
    for i in cfg["ignore_retract"]:
        options[f"fields.{NAMES[i]}.ignore-retract"] = "true"
    if cfg["remove_on_delete"]:
        options["partial-update.remove-record-on-delete"] = "true"
    if cfg["remove_fields"]:
        options["partial-update.remove-record-on-sequence-group"] = ",".join(NAMES[i] for i in sorted(cfg["remove_fields"]))
    if cfg["ignore_delete"]:
        options["ignore-delete"] = "true"
    return options


def reference_merge(data, cfg):
    by_key, result = {}, []
    for seq, (row, kind) in enumerate(data):
        by_key.setdefault(row[0], []).append((row, kind, seq))
    for k in sorted(by_key):
        rows, kinds, seqs = zip(*by_key[k])
        row, kind, latest = reference(rows, kinds, seqs, cfg["groups"], cfg["aggs"], cfg["ignore_retract"],
                                      cfg["remove_on_delete"], cfg["remove_fields"], cfg["ignore_delete"],
                                      len(NAMES))
        result.append(tuple(row) + (latest, kind))
    return result


def tarn_merge(table, cfg):
    spec = MergeSpec(("k",), "partial-update", cfg["ignore_delete"], (), fields_of(NAMES), Options(options_of(cfg)))
    return merge_partial_update(table, spec)


def rows_of(table):
    return [tuple(r[n] for n in NAMES) + (r[SEQUENCE], r[VALUE_KIND]) for r in table.to_pylist()]


def table_from(data):
    return table_of(NAMES, [r for r, _ in data], [k for _, k in data])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=key_rows(retracts=True), cfg=configs())
def test_matches_reference(data, cfg):
    try:
        expected = reference_merge(data, cfg)
    except ValueError:
        with pytest.raises(TarnError):
            tarn_merge(table_from(data), cfg)
        return
    assert rows_of(tarn_merge(table_from(data), cfg)) == expected


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=key_rows(retracts=False), cfg=configs(ASSOCIATIVE), cut=st.integers(0, 20))
def test_merging_merged_rows_gives_the_same_result(data, cfg, cut):
    """Rows of a key merged in two steps (a flush, then a read with the older file) give the
    row one merge gives. (Paimon's last_non_null_value / first_* aggregates inside a sequence
    group are not associative when rows arrive out of sequence order, so they are left out.)"""
    table = table_from(data)
    once = tarn_merge(table, cfg)
    cut = min(cut, table.num_rows)
    parts = [p for p in (table.slice(0, cut), table.slice(cut)) if p.num_rows]
    merged = pa.concat_tables([tarn_merge(p, cfg) for p in parts])
    order = merged.sort_by([("k", "ascending"), (SEQUENCE, "ascending")])
    assert rows_of(tarn_merge(order, cfg)) == rows_of(once)


# ---------------------------------------------------------------------------------------------
# the aggregation engine's other functions inside sequence groups, against tests/lsm_oracle.py


ITEM = ROW([DataField(10, "id", INT()), DataField(11, "v", INT())])
SHARED = (("k", "int", INT(False)), ("g", "int", INT()), ("pr", "bigint", BIGINT()), ("la", "string", STRING()),
          ("ld", "string", STRING()), ("nu", "items", ARRAY(ITEM)), ("h", "int", INT()), ("pi", "int", INT()),
          ("na", "items", ARRAY(ITEM)), ("sm", "int", INT()))
SHARED_OPTIONS = {
    "merge-engine": "partial-update",
    "fields.g.sequence-group": "pr,la,ld,nu", "fields.h.sequence-group": "pi,na,sm",
    "fields.pr.aggregate-function": "product", "fields.pi.aggregate-function": "product",
    "fields.la.aggregate-function": "listagg", "fields.la.ignore-retract": "true",
    "fields.ld.aggregate-function": "listagg", "fields.ld.list-agg-delimiter": "|", "fields.ld.distinct": "true",
    "fields.ld.ignore-retract": "true",
    "fields.nu.aggregate-function": "nested_update", "fields.nu.nested-key": "id",
    "fields.na.aggregate-function": "nested_update", "fields.sm.aggregate-function": "sum",
}
SHARED_VALUES = {
    "g": st.none() | st.integers(0, 3), "h": st.none() | st.integers(0, 3),
    "pr": st.sampled_from([None, -1, 1, 2, 3]), "pi": st.sampled_from([None, -1, 1, 2, 3]),
    "la": st.sampled_from([None, "a", "b", "a,b", " ", ""]), "ld": st.sampled_from([None, "a", "b|c", "a|a", " "]),
    "nu": st.none() | st.lists(st.none() | st.fixed_dictionaries(
        {"id": st.none() | st.integers(0, 2), "v": st.none() | st.integers(0, 2)}), max_size=3),
    "na": st.none() | st.lists(st.none() | st.fixed_dictionaries(
        {"id": st.integers(0, 1), "v": st.none() | st.integers(0, 1)}), max_size=2),
    "sm": st.none() | st.integers(-3, 3),
}
KIND_NAMES = {INSERT: "+I", UPDATE_AFTER: "+U", UPDATE_BEFORE: "-U", DELETE: "-D"}


def shared_table(rows, kinds):
    fields = tuple(DataField(i, n, t) for i, (n, _, t) in enumerate(SHARED))
    data = pa.table({n: [r[n] for r in rows] for n, _, _ in SHARED}, schema=arrow_schema(fields))
    data = data.append_column(SEQUENCE, pa.array(range(len(rows)), pa.int64()))
    return data.append_column(VALUE_KIND, pa.array(kinds, pa.int8())), fields


def shared_merge(rows, kinds, options):
    table, fields = shared_table(rows, kinds)
    spec = MergeSpec(("k",), "partial-update", False, (), fields, Options(options))
    return merge_partial_update(table, spec)


def shared_expected(rows, kinds, options):
    """Java's PartialUpdateMergeFunction (tests/lsm_oracle.py), one merge per key."""
    definition = TableDef(tuple(Column(n, kind) for n, kind, _ in SHARED), ("k",), options)
    by_key = {}
    for arrival, (row, kind) in enumerate(zip(rows, kinds)):
        by_key.setdefault(row["k"], []).append(OracleRow(row, KIND_NAMES[kind], arrival))
    merged = [ENGINES["partial-update"](definition, by_key[k]) for k in sorted(by_key)]
    return [(INSERT if kind == "+I" else DELETE, values) for kind, values in merged]


@st.composite
def shared_rows(draw):
    rows, kinds = [], []
    for k in sorted(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True))):
        for _ in range(draw(st.integers(1, 6))):
            rows.append({"k": k, **{n: draw(v) for n, v in SHARED_VALUES.items()}})
            kinds.append(draw(st.sampled_from([INSERT, INSERT, UPDATE_AFTER, UPDATE_BEFORE, DELETE])))
    return rows, kinds


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=shared_rows())
def test_shared_functions_in_sequence_groups_match_the_oracle(data):
    """product, listagg (plain and distinct) and nested_update (keyed and appending) fold the
    rows that lose their group through Java's aggReversed (agg(v, acc)): listagg and
    nested_update put them in front; every retract row reaching them retracts."""
    rows, kinds = data
    try:
        expected = shared_expected(rows, kinds, SHARED_OPTIONS)
    except Refused:
        with pytest.raises(TarnError):
            shared_merge(rows, kinds, SHARED_OPTIONS)
        return
    out = shared_merge(rows, kinds, SHARED_OPTIONS).to_pylist()
    assert [(r[VALUE_KIND], {n: r[n] for n, _, _ in SHARED}) for r in out] == expected


def test_reversed_rows_of_shared_functions():
    """Rows with an older sequence still reach the aggregate, reversed: product multiplies,
    listagg and nested_update put them in front, the newer element winning a nested key."""
    rows = [{"k": 1, "g": 2, "pr": 3, "la": "new", "ld": "x|y", "nu": [{"id": 1, "v": 2}],
             "h": None, "pi": None, "na": None, "sm": None},
            {"k": 1, "g": 1, "pr": 5, "la": "old", "ld": "y|z", "nu": [{"id": 1, "v": 1}, {"id": 0, "v": 0}],
             "h": None, "pi": None, "na": None, "sm": None}]
    [out] = shared_merge(rows, [INSERT, INSERT], SHARED_OPTIONS).to_pylist()
    assert (out["g"], out["pr"], out["la"], out["ld"]) == (2, 15, "old,new", "y|z|x")
    assert out["nu"] == [{"id": 1, "v": 2}, {"id": 0, "v": 0}]


def test_retracted_first_row_of_shared_functions():
    """A key's first row being a retract: its values start the row, then it retracts itself
    (product: v / v, nested_update: every element removed)."""
    row = {"k": 1, "g": 1, "pr": 4, "la": "a", "ld": "b", "nu": [{"id": 1, "v": 1}], "h": 1, "pi": 6,
           "na": [{"id": 0, "v": 1}], "sm": 2}
    later = dict(row, g=None, h=None)
    [out] = shared_merge([row, later], [UPDATE_BEFORE, INSERT], SHARED_OPTIONS).to_pylist()
    assert (out["pr"], out["pi"], out["nu"], out["na"], out["sm"]) == (1, 1, [], [], 0)
    assert (out["la"], out["ld"]) == ("a", "b")  # ignore-retract
    zero = dict(row, pr=0)
    with pytest.raises(TarnError, match="'pr'.*divides by zero"):
        shared_merge([zero, later], [UPDATE_BEFORE, INSERT], SHARED_OPTIONS)


def test_shared_validation():
    names = ["k", "a", "b", "g"]
    check(names, {"fields.g.sequence-group": "a", "fields.a.aggregate-function": "count"},
          "'count' is not supported inside partial-update")
    check(names, {"fields.g.sequence-group": "a", "fields.a.aggregate-function": "listagg"},
          "option 'fields.a.aggregate-function': aggregate function 'listagg' needs STRING but column 'a' is INT")
    check(names, {"fields.g.sequence-group": "a", "fields.default-aggregate-function": "nope"},
          "option 'fields.default-aggregate-function': unknown aggregate function 'nope'")
    nested = fields_of(names) + (DataField(9, "n", ARRAY(ITEM)),)
    with pytest.raises(InvalidOption, match="fields.n.nested-key.*'nope'"):
        validate_partial_update(nested, ("k",), {"fields.g.sequence-group": "n", "fields.n.aggregate-function":
                                                 "nested_update", "fields.n.nested-key": "nope"}, "t")
    validate_partial_update(nested, ("k",), {"fields.g.sequence-group": "a,n", "fields.a.aggregate-function": "product",
                                             "fields.n.aggregate-function": "nested-update"}, "t")
