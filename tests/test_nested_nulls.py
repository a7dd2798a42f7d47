"""Nulls of nested types (VARIANT, ROW with NOT NULL fields, ARRAY and MAP of those) through every
write path of a primary-key table: write, delete, update, merge. Arrow builds nulls whose NOT NULL
children are null too (`pa.nulls`, the `-D` rows of a delete); they must be written as the nulls
they are (issue 43 item 7), checked against a dict model of the table."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tarn import variant

INNER = pa.struct([pa.field("code", pa.int32(), False), pa.field("label", pa.string(), False)])
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False),
    pa.field("v", variant.ARROW_TYPE),
    pa.field("row", INNER),
    pa.field("rows", pa.list_(pa.field("element", INNER))),
    pa.field("tags", pa.map_(pa.string(), INNER)),
])


def value_of(key: int, version: int, null: bool) -> dict:
    if null:
        return {"v": None, "row": None, "rows": None, "tags": None}
    inner = {"code": version, "label": f"{key}-{version}"}
    return {"v": {"k": key, "version": version}, "row": inner, "rows": [inner, None],
            "tags": [("t", inner)]}


def batch(rows: dict[int, dict], null_arrays: bool) -> pa.Table:
    ids = sorted(rows)
    columns = {"id": pa.array(ids, pa.int64())}
    columns["v"] = variant.from_python([rows[i]["v"] for i in ids])
    for name in ("row", "rows", "tags"):
        columns[name] = pa.array([rows[i][name] for i in ids], SCHEMA.field(name).type)
    if null_arrays and all(rows[i]["row"] is None for i in ids):  # Arrow's own nulls: children null too
        for name in ("v", "row", "rows", "tags"):
            columns[name] = pa.nulls(len(ids), SCHEMA.field(name).type)
    return pa.table(columns, schema=SCHEMA)


def table_rows(table) -> dict[int, dict]:
    data = table.scan().to_arrow()
    out = {}
    for i, row in enumerate(data.to_pylist()):
        v = data.column("v")[i]
        row["v"] = None if not v.is_valid else variant.to_python(pa.chunked_array([data.column("v")[i:i + 1]
                                                                                     .combine_chunks()]))[0]
        out[row.pop("id")] = row
    return out


OPS = st.lists(st.tuples(st.sampled_from(["write", "delete", "update_null", "merge"]),
                         st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True), st.booleans()),
               min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_nested_nulls_through_every_write_path(catalog_factory, ops):
    table = catalog_factory().create_table("db.nested", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    model: dict[int, dict] = {}
    for version, (op, keys, null) in enumerate(ops):
        rows = {k: value_of(k, version, null) for k in keys}
        if op == "write":
            table.write(batch(rows, null_arrays=True))
            model.update(rows)
        elif op == "delete":
            table.delete(pa.table({"id": pa.array(keys, pa.int64())}))
            for k in keys:
                model.pop(k, None)
        elif op == "update_null":
            table.update(set={"v": None, "row": None}, filter=tarn.col("id").isin(keys))
            for k in keys:
                if k in model:
                    model[k] = {**model[k], "v": None, "row": None}
        else:
            table.merge(batch(rows, null_arrays=True), when_matched_update="*", when_not_matched_insert="*")
            model.update(rows)
        assert table_rows(table) == {k: {**v, "tags": v["tags"]} for k, v in model.items()}
    table.compact(full=True)
    assert table_rows(table) == model


def test_a_null_variant_written_back_as_read(catalog):
    table = catalog.create_table("db.back", pa.schema([pa.field("id", pa.int64(), False),
                                                       pa.field("v", variant.ARROW_TYPE)]))
    table.write(pa.table({"id": [1], "v": pa.nulls(1, variant.ARROW_TYPE)}))
    table.write(table.scan().to_arrow())
    assert table.scan().to_arrow().column("v").null_count == 2


@pytest.mark.parametrize("nested", [INNER, variant.ARROW_TYPE])
def test_not_null_columns_still_refuse_nulls(catalog, nested):
    table = catalog.create_table("db.strict", pa.schema([pa.field("id", pa.int64(), False),
                                                         pa.field("x", nested, False)]))
    with pytest.raises(tarn.SchemaMismatch, match="'x'"):
        table.write(pa.table({"id": [1], "x": pa.nulls(1, nested)},
                             schema=pa.schema([pa.field("id", pa.int64(), False), pa.field("x", nested, True)])))
