"""Schema evolution end to end through the Table API: write, ALTER, write, read by field id."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import tarn
from tarn import col
from tarn.meta.schema import (
    AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption, UpdateColumnComment, UpdateColumnType,
)
from tarn.types import BIGINT, DOUBLE, FLOAT, INT, STRING, arrow_schema

FORMATS = ["parquet", "orc", "avro"]

OLD = pa.schema([
    ("id", pa.int64()), ("name", pa.string()), ("score", pa.int32()), ("ratio", pa.float32()),
    ("info", pa.struct([("a", pa.int32()), ("b", pa.string())])), ("old", pa.string()),
])
OLD_ROWS = [
    {"id": 1, "name": "ann", "score": 10, "ratio": 0.5, "info": {"a": 1, "b": "x"}, "old": "o1"},
    {"id": 2, "name": "bob", "score": None, "ratio": 1.25, "info": None, "old": "o2"},
    # ratio 0.1 is stored as FLOAT: after FLOAT -> DOUBLE it reads as float32(0.1), not 0.1.
    {"id": 3, "name": None, "score": -7, "ratio": 0.1, "info": {"a": None, "b": "é"}, "old": None},
]

EVOLVE = [
    RenameColumn("name", "label"),
    DropColumn("old"),
    AddColumn("extra", STRING(), comment="added", position=("after", "id")),
    AddColumn("first", INT(), position="first"),
    AddColumn(("info", "c"), DOUBLE()),
    RenameColumn(("info", "b"), "bb"),
    UpdateColumnType("score", BIGINT()),
    UpdateColumnType("ratio", DOUBLE()),
    UpdateColumnComment("label", "was name"),
    SetOption("snapshot.num-retained.min", "5"),
    RemoveOption("snapshot.num-retained.max"),
]
NEW_NAMES = ["first", "id", "extra", "label", "score", "ratio", "info"]


def f32(x):
    return None if x is None else float(np.float32(x))


def old_rows_under_new_schema() -> dict[int, dict]:
    out = {}
    for r in OLD_ROWS:
        info = None if r["info"] is None else {"a": r["info"]["a"], "bb": r["info"]["b"], "c": None}
        out[r["id"]] = {"first": None, "id": r["id"], "extra": None, "label": r["name"], "score": r["score"],
                        "ratio": f32(r["ratio"]), "info": info}
    return out


def by_id(table: pa.Table) -> dict[int, dict]:
    return {r["id"]: r for r in table.to_pylist()}


def new_rows(table: tarn.Table, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=arrow_schema(table.schema().fields))


def schema_files(table: tarn.Table) -> list[str]:
    return sorted(os.listdir(os.path.join(table.root, "schema")))


def make(catalog, file_format: str, primary_key: bool) -> tarn.Table:
    options = {"file.format": file_format, "snapshot.num-retained.max": "10"}
    if primary_key:
        options["bucket"] = "2"
    return catalog.create_table("db.evo", schema=OLD, primary_key=["id"] if primary_key else None,
                                options=options)


@pytest.mark.parametrize("file_format", FORMATS)
@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_old_files_read_under_new_schema(catalog, file_format, primary_key):
    t = make(catalog, file_format, primary_key)
    t.write(pa.Table.from_pylist(OLD_ROWS, schema=OLD))
    before = t.latest_snapshot().id
    new_schema = t.alter(*EVOLVE)

    assert new_schema.id == 1 and new_schema.field_names == NEW_NAMES
    assert new_schema.field("label").description == "was name"
    assert new_schema.field("extra").description == "added"
    assert new_schema.options.get("snapshot.num-retained.min") == "5"
    assert "snapshot.num-retained.max" not in new_schema.options
    assert t.latest_snapshot().id == before  # ALTER makes a schema, not a snapshot

    # Old files under the new schema, before any new write.
    got = t.scan().to_arrow()
    assert got.column_names == NEW_NAMES
    assert got.schema.field("score").type == pa.int64() and got.schema.field("ratio").type == pa.float64()
    assert by_id(got) == old_rows_under_new_schema()

    t.write(new_rows(t, [
        {"first": 100, "id": 4, "extra": "e4", "label": "dan", "score": 2**40, "ratio": 0.1,
         "info": {"a": 4, "bb": "y", "c": 4.5}},
    ]))
    want = old_rows_under_new_schema()
    want[4] = {"first": 100, "id": 4, "extra": "e4", "label": "dan", "score": 2**40, "ratio": 0.1,
               "info": {"a": 4, "bb": "y", "c": 4.5}}
    assert by_id(t.scan().to_arrow()) == want

    # Predicates on renamed, added, widened and nested-evolved columns.
    def ids(predicate, **kw):
        return sorted(t.scan(filter=predicate, **kw).to_arrow().column("id").to_pylist())

    assert ids(col("label") == "bob") == [2]
    assert ids(col("label").is_null()) == [3]
    assert ids(col("label").startswith("a")) == [1]
    assert ids(col("extra").is_null()) == [1, 2, 3]
    assert ids(col("extra") == "e4") == [4]
    assert ids(col("first") > 5) == [4]
    assert ids(col("score") > 2**31) == [4]
    assert ids(col("score") < 0) == [3]
    assert ids(col("ratio") == f32(0.1)) == [3]
    assert ids((col("label") == "ann") | (col("extra") == "e4")) == [1, 4]
    projected = t.scan(filter=col("label").isin(["ann", "dan"]), columns=["label", "id"]).to_arrow()
    assert projected.column_names == ["label", "id"]
    assert sorted(projected.to_pylist(), key=lambda r: r["id"]) == [{"label": "ann", "id": 1},
                                                                    {"label": "dan", "id": 4}]

    # Time travel to the snapshot before the ALTER reads the old schema's shape and values.
    old = t.scan(snapshot_id=before).to_arrow()
    assert old.schema.names == OLD.names
    assert old.schema.field("score").type == pa.int32()
    assert by_id(old) == {r["id"]: {**r, "ratio": f32(r["ratio"])} for r in OLD_ROWS}
    assert sorted(t.scan(snapshot_id=before, filter=col("name") == "bob").to_arrow()
                  .column("id").to_pylist()) == [2]


@pytest.mark.parametrize("file_format", FORMATS)
def test_primary_key_upserts_across_the_change(catalog, file_format):
    t = make(catalog, file_format, primary_key=True)
    t.write(pa.Table.from_pylist(OLD_ROWS, schema=OLD))
    t.alter(*EVOLVE)
    t.write(new_rows(t, [
        {"first": 7, "id": 2, "extra": "now", "label": "bobby", "score": 2**35, "ratio": 2.0,
         "info": {"a": 2, "bb": "z", "c": -1.0}},
        {"first": None, "id": 5, "extra": None, "label": "eve", "score": 5, "ratio": None, "info": None},
    ]))
    t.delete(pa.table({"id": [3]}))
    want = old_rows_under_new_schema()
    want[2] = {"first": 7, "id": 2, "extra": "now", "label": "bobby", "score": 2**35, "ratio": 2.0,
               "info": {"a": 2, "bb": "z", "c": -1.0}}
    want[5] = {"first": None, "id": 5, "extra": None, "label": "eve", "score": 5, "ratio": None, "info": None}
    del want[3]
    assert by_id(t.scan().to_arrow()) == want
    # A third schema: drop a column that old files hold, widen again; upserts still merge by key.
    t.alter(DropColumn("extra"), RenameColumn("label", "name"))
    t.write(pa.Table.from_pylist([{"first": 1, "id": 1, "name": "ANN", "score": 11, "ratio": 0.5,
                                   "info": None}], schema=arrow_schema(t.schema().fields)))
    got = by_id(t.scan().to_arrow())
    assert got[1] == {"first": 1, "id": 1, "name": "ANN", "score": 11, "ratio": 0.5, "info": None}
    assert got[2]["name"] == "bobby" and got[5]["name"] == "eve" and set(got) == {1, 2, 5}
    assert sorted(t.scan(filter=col("name") >= "b").to_arrow().column("id").to_pylist()) == [2, 5]
    # Each snapshot reads with the schema it was written under.
    assert [s.schema_id for s in t.snapshots()] == [0, 1, 1, 2]
    assert t.scan(snapshot_id=2).to_arrow().column_names == NEW_NAMES
    assert by_id(t.scan(snapshot_id=3).to_arrow()) == want


@pytest.mark.parametrize("file_format", FORMATS)
def test_rename_onto_a_dropped_columns_name(catalog, file_format):
    """Field ids, not names: `name` renamed to `old` after `old` was dropped keeps name's values."""
    t = make(catalog, file_format, primary_key=False)
    t.write(pa.Table.from_pylist(OLD_ROWS, schema=OLD))
    t.alter(DropColumn("old"), RenameColumn("name", "old"))
    got = by_id(t.scan().to_arrow())
    assert {i: r["old"] for i, r in got.items()} == {1: "ann", 2: "bob", 3: None}
    assert sorted(t.scan(filter=col("old") == "ann").to_arrow().column("id").to_pylist()) == [1]
    assert t.scan(filter=col("old") == "o1").to_arrow().num_rows == 0
    # Re-adding a dropped name makes a new, empty column (a new field id).
    t.alter(RenameColumn("old", "name"), AddColumn("old", STRING()))
    got = by_id(t.scan().to_arrow())
    assert [got[i]["old"] for i in (1, 2, 3)] == [None, None, None]
    assert [got[i]["name"] for i in (1, 2, 3)] == ["ann", "bob", None]


KEYED = pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.int64()), ("w", pa.float64())])


def keyed_table(catalog):
    t = catalog.create_table("db.keyed", schema=KEYED, primary_key=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(pa.table({"dt": ["d"], "id": [1], "v": [1], "w": [1.0]}, schema=KEYED))
    return t


@pytest.mark.parametrize("change, column", [
    (RenameColumn("id", "ident"), "id"),
    (DropColumn("id"), "id"),
    (UpdateColumnType("id", BIGINT()), "id"),
    (RenameColumn("dt", "day"), "dt"),
    (DropColumn("dt"), "dt"),
    (UpdateColumnType("dt", INT()), "dt"),
    (UpdateColumnType("v", INT()), "v"),
    (UpdateColumnType("w", FLOAT()), "w"),
    (UpdateColumnType("v", STRING()), "v"),
    (AddColumn("v", STRING()), "v"),
    (RenameColumn("missing", "x"), "missing"),
], ids=lambda x: type(x).__name__ if not isinstance(x, str) else x)
def test_forbidden_changes_raise_and_write_nothing(catalog, change, column):
    t = keyed_table(catalog)
    files = schema_files(t)
    with pytest.raises(tarn.SchemaEvolutionError, match=f"'{column}'"):
        t.alter(SetOption("snapshot.num-retained.min", "3"), change)
    assert schema_files(t) == files == ["schema-0"]
    assert t.schema().id == 0 and "snapshot.num-retained.min" not in t.schema().options
    # The table is untouched and still writable.
    t.write(pa.table({"dt": ["d"], "id": [2], "v": [2], "w": [2.0]}, schema=KEYED))
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
