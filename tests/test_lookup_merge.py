"""Lookup tables (changelog-producer=lookup, force-lookup): Java's LookupMergeFunction layout.

Every level above 0 holds each key's FULL merged value, so a read merges a key's level-0 rows
with its row at the smallest level above 0 only, and a compaction consuming level-0 files writes
the full merged value (the key's high-level row found among the inputs or looked up in the
levels above the output). Checked against plain dict oracles, against a Java-semantics read of
the raw level files written here, and on hand-built Java-layout tables.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tarn import partition
from tarn.lsm.merge import LEVEL, MergeSpec, high_level_rows, key_sizes, merge_lookup_sorted
from tarn.options import Options
from tarn.data.reader import FileReader
from tarn.types import BIGINT, INT, DataField
from tarn.data.writer import FileWriter
from tarn.write.message import CommitMessage

SUM_SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.int64())])
SUM_OPTIONS = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
LOOKUPS = [{"changelog-producer": "lookup"}, {"force-lookup": "true"}]
LOOKUP_IDS = ["changelog-lookup", "force-lookup"]
FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])


def _table(catalog, name, schema, options, trigger=5):
    return catalog.create_table(name, schema=schema, primary_key=["k"],
                                options={"bucket": "1", "num-sorted-run.compaction-trigger": str(trigger),
                                         **options})


def level_rows(table) -> list[tuple[int, int, int, dict]]:
    """(level, sequence, kind, row) of every row of every live data file (test-side reader)."""
    schema = table.schema()
    reader = FileReader(table.file_io, schema, table.schema_by_id, Options(schema.options))
    out = []
    for split in table.scan().plan():
        for meta in split.files:
            data = reader.read(split.bucket_path, meta, list(schema.fields), with_system=True)
            for row in data.to_pylist():
                seq, kind = row.pop("_SEQUENCE_NUMBER"), row.pop("_VALUE_KIND")
                out.append((meta.level, seq, kind, row))
    return out


def java_read(rows, fold) -> dict:
    """Java's LookupMergeFunction read, row by row: per key, its level-0 rows and its row at the
    smallest level above 0, folded in sequence order (a key with one row passes through)."""
    by_key: dict = {}
    for level, seq, kind, row in rows:
        by_key.setdefault(row["k"], []).append((level, seq, kind, row))
    out = {}
    for key, found in by_key.items():
        high = [r for r in found if r[0] > 0]
        picked = [r for r in found if r[0] == 0] + ([min(high, key=lambda r: r[0])] if high else [])
        state = None
        for _, _, kind, row in sorted(picked, key=lambda r: r[1]):
            state = fold(state, row, kind) if len(found) > 1 else (row if kind in (0, 2) else None)
        if state is not None:
            out[key] = state
    return out


def fold_sum(state, row, kind):
    sign = -1 if kind in (1, 3) else 1
    value = None if row["v"] is None else sign * row["v"]
    if state is None:
        return {"k": row["k"], "v": value}
    return {"k": row["k"], "v": state["v"] if value is None else (value if state["v"] is None else state["v"] + value)}


def all_levels_sum(rows) -> dict:
    """What merging every level would give (double counting full values)."""
    out: dict = {}
    for _, _, kind, row in rows:
        out[row["k"]] = out.get(row["k"], 0) + (-1 if kind in (1, 3) else 1) * row["v"]
    return out


def scan_dict(table, column="v") -> dict:
    return {r["k"]: r[column] for r in table.scan().to_arrow().to_pylist()}


# ---------------------------------------------------------------------------------- oracles


WRITES = st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 12), st.integers(1, 50)), min_size=1, max_size=8),
                            st.sampled_from(["none", "compact", "full", "retract"])),
                  min_size=1, max_size=9)


@pytest.mark.parametrize("lookup", LOOKUPS, ids=LOOKUP_IDS)
@FAST
@given(ops=WRITES, trigger=st.integers(2, 4), small_buffer=st.booleans())
def test_aggregation_sum_matches_dict_oracle(tmp_path_factory, lookup, ops, trigger, small_buffer):
    catalog = tarn.Catalog(str(tmp_path_factory.mktemp("wh")))
    options = {**SUM_OPTIONS, **lookup, **({"write-buffer-size": "1 b"} if small_buffer else {})}
    table = _table(catalog, "db.t", SUM_SCHEMA, options, trigger)
    oracle: dict = {}
    double_counted = False
    for pairs, then in ops:
        keys, values = [k for k, _ in pairs], [v for _, v in pairs]
        kinds = ["+I"] * len(keys)
        if then == "retract":  # -U of keys already present: sums go down
            kinds = ["-U" if k in oracle else "+I" for k in keys]
        table.write(pa.table({"k": keys, "v": values}, schema=SUM_SCHEMA), row_kind=kinds)
        for k, v, kind in zip(keys, values, kinds):
            oracle[k] = oracle.get(k, 0) + (-v if kind == "-U" else v)
        if then in ("compact", "full"):
            table.compact(full=then == "full")
        assert scan_dict(table) == oracle
        rows = level_rows(table)
        assert {k: r["v"] for k, r in java_read(rows, fold_sum).items()} == oracle
        double_counted |= all_levels_sum(rows) != oracle
    if len(ops) >= 6:  # several levels hold full values: merging them all would double count
        assert double_counted or all(level == max(r[0] for r in rows) for level, *_ in rows)


PARTIAL_SCHEMA = pa.schema([("k", pa.int32()), ("a", pa.int32()), ("b", pa.string()),
                            ("g", pa.int64()), ("c", pa.int64())])
PARTIAL_OPTIONS = {"merge-engine": "partial-update", "fields.g.sequence-group": "c",
                   "fields.c.aggregate-function": "sum"}
PARTIAL_ROWS = st.lists(st.tuples(st.integers(0, 8), st.one_of(st.none(), st.integers(0, 9)),
                                  st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
                                  st.one_of(st.none(), st.integers(1, 20))), min_size=1, max_size=6)


@pytest.mark.parametrize("lookup", LOOKUPS, ids=LOOKUP_IDS)
@FAST
@given(ops=st.lists(st.tuples(PARTIAL_ROWS, st.sampled_from(["none", "compact", "full"])), min_size=1, max_size=9),
       trigger=st.integers(2, 4))
def test_partial_update_matches_dict_oracle(tmp_path_factory, lookup, ops, trigger):
    """Non-null fields overwrite; `c` sums inside the sequence group of `g` (g always grows,
    so every row's c counts once: a deeper level's full value merged again would double it)."""
    catalog = tarn.Catalog(str(tmp_path_factory.mktemp("wh")))
    table = _table(catalog, "db.t", PARTIAL_SCHEMA, {**PARTIAL_OPTIONS, **lookup}, trigger)
    oracle: dict = {}
    clock = 0
    for batch, then in ops:
        rows = []
        for k, a, b, c in batch:
            clock += 1
            rows.append({"k": k, "a": a, "b": b, "g": clock, "c": c})
            state = oracle.setdefault(k, {"k": k, "a": None, "b": None, "g": None, "c": None})
            state.update({n: v for n, v in (("a", a), ("b", b)) if v is not None})
            state["g"] = clock
            if c is not None:
                state["c"] = c if state["c"] is None else state["c"] + c
        table.write(pa.Table.from_pylist(rows, schema=PARTIAL_SCHEMA))
        if then != "none":
            table.compact(full=then == "full")
        got = {r["k"]: r for r in table.scan().to_arrow().to_pylist()}
        assert got == oracle


# ------------------------------------------------------------------------ hand-built layouts


def write_levels(table, levels: dict[int, list[dict]], kinds: dict[int, list[str]] | None = None):
    """Commit one data file per level (rows in key order), sequence numbers growing from the
    deepest level up to level 0, as Java's lookup layout has them."""
    schema = table.schema()
    options = Options(schema.options)
    path = partition.bucket_path(table.root, schema, options.get("partition.default-name"), (), 0)
    writer = FileWriter(table.file_io, path, schema, options)
    files, sequence = [], 0
    for level in sorted(levels, reverse=True):
        rows = pa.Table.from_pylist(levels[level], schema=table.scan().arrow_schema)
        codes = [{"+I": 0, "-U": 1, "+U": 2, "-D": 3}[k] for k in (kinds or {}).get(level, ["+I"] * rows.num_rows)]
        rows = rows.append_column("_SEQUENCE_NUMBER", pa.array(np.arange(sequence, sequence + rows.num_rows)))
        rows = rows.append_column("_VALUE_KIND", pa.array(codes, type=pa.int8()))
        sequence += rows.num_rows
        files += writer.write(rows, level=level)
    message = CommitMessage(partition.to_bytes(schema, ()), 0, 1, new_files=files)
    table.commit([message])
    return files


@pytest.mark.parametrize("lookup", LOOKUPS, ids=LOOKUP_IDS)
def test_reads_java_layout_without_double_counting(catalog, lookup):
    table = _table(catalog, "db.t", SUM_SCHEMA, {**SUM_OPTIONS, **lookup})
    write_levels(table, {
        5: [{"k": 1, "v": 10}, {"k": 2, "v": 5}, {"k": 3, "v": 1}],
        3: [{"k": 1, "v": 15}, {"k": 3, "v": 4}],  # full values: 10 + 5, 1 + 3
        1: [{"k": 3, "v": 6}],  # 4 + 2
        0: [{"k": 1, "v": 2}, {"k": 4, "v": 7}],
    })
    expected = {1: 17, 2: 5, 3: 6, 4: 7}
    assert scan_dict(table) == expected
    assert all_levels_sum(level_rows(table)) != expected
    table.compact(full=True)
    assert scan_dict(table) == expected
    assert {level for level, *_ in level_rows(table)} == {5}


def test_tables_without_lookup_merge_every_level(catalog):
    table = _table(catalog, "db.t", SUM_SCHEMA, SUM_OPTIONS)
    write_levels(table, {5: [{"k": 1, "v": 10}], 3: [{"k": 1, "v": 15}], 0: [{"k": 1, "v": 2}]})
    assert scan_dict(table) == {1: 27}


@pytest.mark.parametrize("lookup", LOOKUPS, ids=LOOKUP_IDS)
def test_partial_update_java_layout_ignores_deeper_levels(catalog, lookup):
    """A deeper level's value never shows through the key's full value at a smaller level."""
    table = _table(catalog, "db.t", PARTIAL_SCHEMA, {**PARTIAL_OPTIONS, **lookup})
    write_levels(table, {
        5: [{"k": 1, "a": 9, "b": "old", "g": 1, "c": 10}],
        2: [{"k": 1, "a": 1, "b": None, "g": 2, "c": 15}],
        0: [{"k": 1, "a": None, "b": None, "g": 3, "c": 2}],
    })
    assert table.scan().to_arrow().to_pylist() == [{"k": 1, "a": 1, "b": None, "g": 3, "c": 17}]


def test_compaction_looks_up_the_first_level_above_the_output(catalog):
    """Level 0 pushed to level 2 (level 3 holds more data): the key's value is looked up at
    level 3 (the first level above the output holding it), not level 5, and the output holds the
    full merged value; the lookup changelog's before is that level-3 value."""
    table = _table(catalog, "db.t", SUM_SCHEMA, {**SUM_OPTIONS, "changelog-producer": "lookup"})
    deep = [{"k": k, "v": 100} for k in range(0, 400)]
    write_levels(table, {
        5: deep,
        3: [{"k": 1, "v": 150}] + [{"k": k, "v": 1} for k in range(2, 300)],
        0: [{"k": 1, "v": 2}, {"k": 500, "v": 7}],
    })
    table.compact()
    rows = level_rows(table)
    assert sorted((level, row["k"], row["v"]) for level, _, _, row in rows if level < 3) == [(2, 1, 152), (2, 500, 7)]
    assert scan_dict(table)[1] == 152 and scan_dict(table)[500] == 7 and scan_dict(table)[0] == 100
    changes = table.changes(table.latest_snapshot().id).to_pylist()
    assert sorted((c["_ROW_KIND"], c["k"], c["v"]) for c in changes) == [
        ("+I", 500, 7), ("+U", 1, 152), ("-U", 1, 150)]


def test_deduplicate_with_sequence_field_writes_the_winning_value(catalog):
    """deduplicate + sequence.field + lookup: a level-0 row that loses to the key's high-level
    row (larger sequence field) is merged with it, so the output holds the winner, as Java's
    rewrite writes it (a reader that only trusts the smallest level above 0 stays right)."""
    schema = pa.schema([("k", pa.int32()), ("sq", pa.int64()), ("v", pa.string())])
    table = _table(catalog, "db.t", schema, {"sequence.field": "sq", "force-lookup": "true"})
    write_levels(table, {
        5: [{"k": k, "sq": 0, "v": "deep"} for k in range(0, 400)],
        3: [{"k": 1, "sq": 5, "v": "high"}] + [{"k": k, "sq": 0, "v": "mid"} for k in range(2, 300)],
        0: [{"k": 1, "sq": 1, "v": "late-but-low"}],
    })
    table.compact()
    rows = level_rows(table)
    assert [(level, row["v"]) for level, _, _, row in rows if row["k"] == 1 and level < 3] == [(2, "high")]
    assert {r["k"]: r["v"] for r in table.scan().to_arrow().to_pylist()}[1] == "high"


# ------------------------------------------------------------------------------ merge function


FIELDS = (DataField(0, "k", INT(False)), DataField(1, "v", BIGINT()))


def _spec():
    return MergeSpec(("k",), "aggregation", False, (), FIELDS, Options({**SUM_OPTIONS, "force-lookup": "true"}))


def _kv(keys, values, levels, kinds=None):
    n = len(keys)
    return pa.table({"k": pa.array(keys, pa.int32()), "v": pa.array(values, pa.int64()),
                     "_SEQUENCE_NUMBER": pa.array(np.arange(n), pa.int64()),
                     "_VALUE_KIND": pa.array(kinds or [0] * n, pa.int8()),
                     LEVEL: pa.array(levels, pa.int32())})


def test_high_level_row_is_the_smallest_level_above_zero():
    rows = _kv([1, 1, 1, 1, 2, 3, 3], [1, 2, 3, 4, 5, 6, 7], [5, 2, 3, 0, 0, 4, 4])
    assert high_level_rows(rows, key_sizes(rows, ["k"])).tolist() == [1, -1, 5]


def test_merge_lookup_sorted_single_rows_and_looked_up_keys():
    spec = _spec()
    rows = _kv([1, 1, 1, 2, 3, 3], [10, 15, 2, 4, 9, 1], [5, 3, 0, 4, 6, 0], kinds=[0, 0, 0, 2, 0, 0])
    merged = merge_lookup_sorted(rows, spec).to_pylist()
    assert [(r["k"], r["v"], r["_VALUE_KIND"]) for r in merged] == [(1, 17, 0), (2, 4, 2), (3, 10, 0)]
    # every key merged: the lone +U of key 2 comes out as the engine makes it (+I)
    merged = merge_lookup_sorted(rows, spec, every_key=True).to_pylist()
    assert [(r["k"], r["v"], r["_VALUE_KIND"]) for r in merged] == [(1, 17, 0), (2, 4, 0), (3, 10, 0)]
    # rows above level 4 were looked up: key 3 has no input row but level 0, key 1 keeps its own
    merged = merge_lookup_sorted(rows, spec, every_key=True, inputs_up_to=4).to_pylist()
    assert [(r["k"], r["v"]) for r in merged] == [(1, 17), (2, 4), (3, 10)]
    only_looked_up = _kv([1, 2], [5, 6], [5, 0])
    assert [r["k"] for r in merge_lookup_sorted(only_looked_up, spec, True, inputs_up_to=4).to_pylist()] == [2]


# ------------------------------------------------------------------------------ overwrite


def _changelog_files(table) -> set[str]:
    found = set()
    for directory, _, files in os.walk(table.root):
        found.update(f for f in files if f.startswith("changelog-"))
    return found


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_overwrite_writes_no_changelog_files(catalog, producer):
    table = _table(catalog, "db.t", SUM_SCHEMA, {**SUM_OPTIONS, "changelog-producer": producer})
    table.write(pa.table({"k": [1, 2], "v": [1, 2]}, schema=SUM_SCHEMA))
    table.write(pa.table({"k": [1], "v": [5]}, schema=SUM_SCHEMA))
    before = _changelog_files(table)
    assert before
    table.overwrite(pa.table({"k": [1, 3], "v": [7, 8]}, schema=SUM_SCHEMA))
    assert _changelog_files(table) == before
    assert scan_dict(table) == {1: 7, 3: 8}
    assert table.latest_snapshot().changelog_manifest_list is None
    table.write(pa.table({"k": [3], "v": [1]}, schema=SUM_SCHEMA))  # later writes produce it again
    assert _changelog_files(table) != before
    assert scan_dict(table) == {1: 7, 3: 9}
