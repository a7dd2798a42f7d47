import decimal

import pyarrow as pa
import pytest

from tarn.errors import SchemaMismatch
from tarn.meta.schema import (
    AddColumn, DropColumn, RenameColumn, UpdateColumnType, apply_changes, new_schema,
)
from tarn.data.evolution import adapt_table
from tarn.types import ARRAY, BIGINT, DECIMAL, DOUBLE, INT, MAP, ROW, STRING, DataField, arrow_schema


def old_schema():
    return new_schema(pa.schema([
        ("k", pa.int32()), ("name", pa.string()), ("gone", pa.float64()), ("small", pa.int16()),
        ("r", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ]), primary_keys=["k"])


def old_data(schema):
    return pa.Table.from_pydict({
        "k": [1, 2, 3],
        "name": ["a", None, "c"],
        "gone": [1.0, 2.0, 3.0],
        "small": [7, None, -7],
        "r": [{"x": 1, "y": "p"}, None, {"x": 3, "y": None}],
    }, schema=schema.arrow_schema())


def test_rename_add_drop_widen():
    old = old_schema()
    new = apply_changes(old, [
        RenameColumn("name", "label"), DropColumn("gone"), UpdateColumnType("small", BIGINT()),
        AddColumn("extra", STRING(), position=("after", "k")),
        AddColumn(("r", "z"), DOUBLE()), RenameColumn(("r", "x"), "xx"), DropColumn(("r", "y")),
        UpdateColumnType(("r", "xx"), DECIMAL(12, 2)),
    ])
    out = adapt_table(old_data(old), list(old.fields), list(new.fields))
    assert out.schema == new.arrow_schema()
    assert out.schema.equals(new.arrow_schema(), check_metadata=True)
    assert out.column_names == ["k", "extra", "label", "small", "r"]
    assert out.to_pydict() == {
        "k": [1, 2, 3],
        "extra": [None, None, None],
        "label": ["a", None, "c"],
        "small": [7, None, -7],
        "r": [{"xx": decimal.Decimal("1.00"), "z": None}, None, {"xx": decimal.Decimal("3.00"), "z": None}],
    }
    assert out.column("small").type == pa.int64()


def test_same_schema_is_identity():
    s = old_schema()
    data = old_data(s)
    out = adapt_table(data, list(s.fields), list(s.fields))
    assert out.equals(data)


def test_reordered_and_projected_read_fields():
    s = old_schema()
    read = [s.field("r"), s.field("k")]
    out = adapt_table(old_data(s), list(s.fields), read)
    assert out.column_names == ["r", "k"] and out.column("k").to_pylist() == [1, 2, 3]


def test_chunked_and_sliced_input():
    s = old_schema()
    data = pa.concat_tables([old_data(s), old_data(s)]).slice(2, 3)
    new = apply_changes(s, [UpdateColumnType("small", INT()), AddColumn(("r", "w"), INT())])
    out = adapt_table(data, list(s.fields), list(new.fields))
    assert out.column("small").to_pylist() == [-7, 7, None]
    assert out.column("r").to_pylist() == [{"x": 3, "y": None, "w": None}, {"x": 1, "y": "p", "w": None}, None]


def test_not_null_target_with_nulls_raises():
    s = old_schema()
    read = [DataField(s.field("name").id, "name", STRING(False))]
    with pytest.raises(SchemaMismatch, match="name"):
        adapt_table(old_data(s), list(s.fields), read)
    added = [DataField(99, "fresh", INT(False))]
    with pytest.raises(SchemaMismatch, match="fresh"):
        adapt_table(old_data(s), list(s.fields), added)
    # zero rows: nothing to violate
    empty = adapt_table(old_data(s).slice(0, 0), list(s.fields), added)
    assert empty.num_rows == 0 and empty.schema == arrow_schema(added)


def test_list_and_map_of_rows_by_id():
    elem_old = ROW([DataField(2, "a", INT()), DataField(3, "b", STRING())])
    elem_new = ROW([DataField(3, "bb", STRING()), DataField(2, "a", BIGINT()), DataField(9, "c", INT())])
    file_fields = [DataField(0, "l", ARRAY(elem_old)), DataField(1, "m", MAP(STRING(False), elem_old))]
    read_fields = [DataField(0, "l", ARRAY(elem_new)), DataField(1, "m", MAP(STRING(False), elem_new))]
    data = pa.Table.from_pydict({
        "l": [[{"a": 1, "b": "x"}, None], None, []],
        "m": [[("k", {"a": 5, "b": "y"})], None, [("z", None)]],
    }, schema=arrow_schema(file_fields)).slice(0, 3)
    out = adapt_table(data, file_fields, read_fields)
    assert out.schema == arrow_schema(read_fields)
    assert out.column("l").to_pylist() == [[{"bb": "x", "a": 1, "c": None}, None], None, []]
    assert out.column("m").to_pylist() == [[("k", {"bb": "y", "a": 5, "c": None})], None, [("z", None)]]


def test_missing_file_column_is_an_error():
    s = old_schema()
    data = old_data(s).drop_columns(["name"])
    with pytest.raises(SchemaMismatch, match="name"):
        adapt_table(data, list(s.fields), list(s.fields))
