"""Incremental reads (issue 43 item 3, issue 44 item 2) against Java Paimon 1.0 (javaref): the
table carries `incremental-between` (+ `incremental-between-scan-mode`), Java's batch read
of it returns rows with their row kinds, and tarn's `changes(start=, end=, mode=)` returns the
same rows; tarn's `scan()` of the same table returns those rows without the retractions.
Primary-key tables without and with a changelog producer, append tables, tags (a diff).

Java 1.0 merges the delta and changelog files of a primary-key table per key (dropping
retractions); since Paimon 1.1 (#5361) and so in 2.0, tarn's authority, they are read raw,
every row version with its kind. The comparison merges tarn's raw rows the 1.0 way
(`merged_as_java_1_0`); the raw rows themselves are checked against a hand model."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import tarn
from tarn.meta.schema import RemoveOption, SetOption
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def java_rows(read: dict) -> list[tuple]:
    return sorted(((r["_ROW_KIND"], r["k"], r["v"]) for r in read["rows"]), key=repr)


def java_incremental(javaref, root: str, between: str, mode: str) -> list[tuple]:  # noqa: F811
    changes = [{"op": "set_option", "key": "incremental-between", "value": between},
               {"op": "set_option", "key": "incremental-between-scan-mode", "value": mode}]
    undo = [{"op": "remove_option", "key": "incremental-between"},
            {"op": "remove_option", "key": "incremental-between-scan-mode"}]
    _, read, _ = javaref.run_many([["alter", root, "--changes", json.dumps(changes)],
                                   ["read", root, "--with-row-kind"],
                                   ["alter", root, "--changes", json.dumps(undo)]])
    return java_rows(read)


def merged_as_java_1_0(table: pa.Table) -> list[tuple]:
    """Java 1.0's merged read of raw incremental rows: the last row per key, retractions gone."""
    last = {}
    for row in table.to_pylist():
        last[row["k"]] = row
    return sorted(((r["_ROW_KIND"], r["k"], r["v"]) for r in last.values() if r["_ROW_KIND"] in ("+I", "+U")),
                  key=repr)


def history(table) -> None:
    """Snapshots 1 APPEND, 2 APPEND, 3 APPEND (a delete), 4 COMPACT, 5 APPEND."""
    table.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    table.write(pa.table({"k": [2, 4], "v": ["b2", "d"]}, schema=SCHEMA))
    table.delete(filter="k = 3")
    table.compact(full=True)
    table.write(pa.table({"k": [1, 5], "v": ["a2", "e"]}, schema=SCHEMA))


@pytest.mark.parametrize("producer", ["none", "input"])
def test_primary_key_table_modes_match_java(tmp_path, javaref, producer):  # noqa: F811
    table = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", SCHEMA, primary_key=["k"], options={"bucket": "1", "changelog-producer": producer})
    history(table)
    table.create_tag("first", 1)
    table.create_tag("last", 5)
    cases = [("0,5", "auto"), ("1,3", "delta"), ("2,5", "delta"), ("3,3", "auto")]  # 1.0 has no diff by ids
    if producer == "input":
        cases += [("0,5", "changelog"), ("1,4", "changelog")]
    for between, mode in cases:
        start, end = (int(x) for x in between.split(","))
        expected = java_incremental(javaref, table.root, between, mode)
        changed = table.changes(start=start, end=end, mode=mode)
        if mode == "diff":  # Java's plain batch read of a diff drops the -D rows (audit_log keeps them)
            got = [r for r in rows_of(changed) if r[0] != "-D"]
        else:
            got = merged_as_java_1_0(changed)
        assert got == expected, (between, mode)
    assert java_incremental(javaref, table.root, "first,last", "auto") == [
        r for r in rows_of(table.changes(start="first", end="last")) if r[0] != "-D"]


def test_append_table_delta_and_diff_match_java(tmp_path, javaref):  # noqa: F811
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.a", SCHEMA, options={"bucket": "-1"})
    table.write(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table.write(pa.table({"k": [3], "v": ["c"]}, schema=SCHEMA))
    table.overwrite(pa.table({"k": [9], "v": ["z"]}, schema=SCHEMA))
    table.write(pa.table({"k": [4], "v": ["d"]}, schema=SCHEMA))
    for between, mode in [("0,4", "auto"), ("1,4", "delta"), ("2,2", "delta")]:
        start, end = (int(x) for x in between.split(","))
        assert rows_of(table.changes(start=start, end=end, mode=mode)) == \
            java_incremental(javaref, table.root, between, mode), (between, mode)
    for snapshot_id in (1, 2, 4):
        table.create_tag(f"s{snapshot_id}", snapshot_id)
    for start, end in (("s1", "s2"), ("s2", "s4"), ("s1", "s4")):  # two tags: a diff (the end's new files)
        assert rows_of(table.changes(start=start, end=end)) == \
            java_incremental(javaref, table.root, f"{start},{end}", "auto"), (start, end)


def test_delta_rows_are_raw_as_paimon_2_0_reads_them(tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_key=["k"],
                                                             options={"bucket": "1"})
    history(table)
    assert rows_of(table.changes(start=0, end=5)) == sorted([
        ("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c"), ("+I", 2, "b2"), ("+I", 4, "d"), ("-D", 3, None),
        ("+I", 1, "a2"), ("+I", 5, "e")], key=repr)  # the COMPACT snapshot 4 adds nothing
    assert rows_of(table.changes(start=1, end=5, mode="diff")) == sorted([
        ("+I", 1, "a2"), ("+I", 2, "b2"), ("+I", 4, "d"), ("+I", 5, "e"), ("-D", 3, "c")], key=repr)
    assert table.changes(start=4, end=4).num_rows == 0
    with pytest.raises(tarn.errors.SnapshotNotFound, match="outside"):
        table.changes(start=0, end=9)
    with pytest.raises(tarn.errors.InvalidArgument, match="comes before"):
        table.changes(start=3, end=2)


def test_stored_option_reads_the_range_without_retractions(tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_key=["k"],
                                                             options={"bucket": "1"})
    history(table)
    table = tarn.load_table(table.root)
    table.alter(SetOption("incremental-between", "1,3"))
    assert rows_of(table.scan().to_arrow()) == [(2, "b2"), (4, "d")]  # the -D of k=3 is not a row
    assert table.scan(filter="k = 4").count() == 1
    assert rows_of(table.scan(snapshot_id=1).to_arrow()) == [(1, "a"), (2, "b"), (3, "c")]  # travel wins
    table.alter(SetOption("incremental-between-scan-mode", "diff"))
    assert rows_of(table.scan().to_arrow()) == [(2, "b2"), (4, "d")]
    table.alter(RemoveOption("incremental-between"), RemoveOption("incremental-between-scan-mode"))
    assert len(table.scan().to_arrow()) == 4
