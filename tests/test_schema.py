import json

import pyarrow as pa
import pytest

from tarn.errors import (
    FileMissing,
    CommitConflict, CorruptFile, InvalidOption, SchemaEvolutionError, SchemaMismatch, TableAlreadyExists,
)
from tarn.fs import local_file_io
from tarn.meta.schema import (
    AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption, TableSchema, UpdateColumnComment,
    UpdateColumnNullability, UpdateColumnType, UpdateComment, apply_changes, jackson_json, new_schema,
)
from tarn.store.schemas import SchemaStore
from tarn.types import (
    ARRAY, BIGINT, DECIMAL, DOUBLE, INT, MAP, ROW, STRING, TIMESTAMP_LTZ, VARCHAR, DataField, parse_type,
)

# written by pypaimon 2.1.0 (Schema.from_pyarrow_schema + create_table); note its extra "nullable" keys
PYPAIMON_SCHEMA = '{"version":3,"id":0,"fields":[{"id":0,"name":"id","type":"BIGINT NOT NULL"},{"id":1,"name":"dt","type":"STRING NOT NULL"},{"id":2,"name":"name","type":"STRING"},{"id":3,"name":"price","type":"DECIMAL(10, 2)"},{"id":4,"name":"ts","type":"TIMESTAMP(6)"},{"id":5,"name":"ltz","type":"TIMESTAMP_LTZ(3)"},{"id":6,"name":"d","type":"DATE"},{"id":7,"name":"tags","type":{"type":"ARRAY","element":"STRING","nullable":true}},{"id":8,"name":"attrs","type":{"type":"MAP","key":"STRING NOT NULL","value":"INT","nullable":true}},{"id":9,"name":"nested","type":{"type":"ROW","fields":[{"id":10,"name":"a","type":"INT"},{"id":12,"name":"b","type":{"type":"ROW","fields":[{"id":11,"name":"c","type":"DOUBLE"}],"nullable":true}}],"nullable":true}},{"id":13,"name":"bin","type":"BYTES"},{"id":14,"name":"fb","type":"BINARY(4)"},{"id":15,"name":"b8","type":"TINYINT"},{"id":16,"name":"b16","type":"SMALLINT"},{"id":17,"name":"f","type":"FLOAT"},{"id":18,"name":"ok","type":"BOOLEAN"}],"highestFieldId":18,"partitionKeys":["dt"],"primaryKeys":["id","dt"],"options":{"bucket":"2","file.format":"parquet"},"comment":"hello","timeMillis":1795263849415}'  # noqa: E501

PYPAIMON_ARROW = pa.schema([
    ("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
    ("ts", pa.timestamp("us")), ("ltz", pa.timestamp("ms", tz="UTC")), ("d", pa.date32()),
    ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.int32())),
    ("nested", pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.float64())]))])),
    ("bin", pa.binary()), ("fb", pa.binary(4)), ("b8", pa.int8()), ("b16", pa.int16()),
    ("f", pa.float32()), ("ok", pa.bool_()),
])


def example_schema(**kw):
    arrow = pa.schema([
        ("a", pa.int32()),
        ("b", pa.struct([("x", pa.int32()), ("y", pa.struct([("p", pa.string())]))])),
        ("m", pa.map_(pa.string(), pa.int64())),
    ])
    return new_schema(arrow, **kw)


def ids(fields):
    out = {}
    for f in fields:
        out[f.name] = f.id
        if f.type.root == "ROW":
            out.update(ids(f.type.fields))
    return out


def test_field_id_numbering_from_format_md():
    s = example_schema()
    assert ids(s.fields) == {"a": 0, "b": 1, "x": 2, "p": 3, "y": 4, "m": 5}
    assert s.highest_field_id == 5
    assert s.id == 0 and s.version == 3


def test_to_json_layout_and_key_order():
    s = new_schema(pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"],
                   options={"bucket": "2"})
    s = TableSchema(**{**s.__dict__, "time_millis": 1700000000000})
    assert s.to_json() == """{
  "version" : 3,
  "id" : 0,
  "fields" : [ {
    "id" : 0,
    "name" : "k",
    "type" : "BIGINT NOT NULL"
  }, {
    "id" : 1,
    "name" : "v",
    "type" : "STRING"
  } ],
  "highestFieldId" : 1,
  "partitionKeys" : [ ],
  "primaryKeys" : [ "k" ],
  "options" : {
    "bucket" : "2"
  },
  "timeMillis" : 1700000000000
}"""
    assert "comment" not in s.to_json()
    with_comment = TableSchema(**{**s.__dict__, "comment": "hi"})
    keys = list(json.loads(with_comment.to_json()))
    assert keys == ["version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys",
                    "options", "comment", "timeMillis"]


def test_jackson_json_escapes_and_empties():
    assert jackson_json({}) == "{ }"
    assert jackson_json([]) == "[ ]"
    assert jackson_json({"a": "q\"\\\n\x01é"}) == '{\n  "a" : "q\\"\\\\\\n\\u0001é"\n}'


def test_json_round_trip_nested():
    s = example_schema(primary_keys=["a"], options={"bucket": "4", "file.format": "parquet"},
                       comment="c")
    again = TableSchema.from_json(s.to_json())
    assert again == s


def test_pypaimon_schema_parses():
    s = TableSchema.from_json(PYPAIMON_SCHEMA)
    assert s.field_names[:3] == ["id", "dt", "name"]
    assert s.field("ltz").type == TIMESTAMP_LTZ(3)
    assert s.field("attrs").type == MAP(STRING(False), INT())
    assert s.field("tags").type == ARRAY(STRING())
    assert s.comment == "hello" and s.highest_field_id == 18
    assert s.trimmed_primary_keys == ["id"] and s.bucket_keys == ["id"]
    assert s.options == {"bucket": "2", "file.format": "parquet"}
    # our own id assignment agrees with pypaimon's on the same Arrow schema
    ours = new_schema(PYPAIMON_ARROW, partition_keys=["dt"], primary_keys=["id", "dt"])
    assert ours.fields == s.fields
    assert ours.highest_field_id == s.highest_field_id


def test_pypaimon_null_comment_reads_as_none():
    obj = json.loads(PYPAIMON_SCHEMA)
    obj["comment"] = None
    assert TableSchema.from_json(json.dumps(obj)).comment is None


def test_reader_compat_rules():
    base = {"id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], "highestFieldId": 0,
            "partitionKeys": [], "primaryKeys": [], "options": {}, "timeMillis": 1, "future": [1]}
    v1 = TableSchema.from_json(json.dumps({**base, "version": 1}))
    assert v1.options == {"bucket": "1", "file.format": "orc"}
    nov = TableSchema.from_json(json.dumps(base))  # no version key means version 1
    assert nov.version == 1 and nov.options["bucket"] == "1"
    v2 = TableSchema.from_json(json.dumps({**base, "version": 2}))
    assert v2.options == {"file.format": "orc"}
    v2b = TableSchema.from_json(json.dumps({**base, "version": 2, "options": {"file.format": "avro"}}))
    assert v2b.options == {"file.format": "avro"}
    v3 = TableSchema.from_json(json.dumps({**base, "version": 3}))
    assert v3.options == {}


def test_option_values_written_as_strings():
    s = new_schema(pa.schema([("a", pa.int32())]), options={"bucket": 3, "x": True})
    assert json.loads(s.to_json())["options"] == {"bucket": "3", "x": "True"}
    parsed = TableSchema.from_json('{"version":3,"id":0,"fields":[],"highestFieldId":-1,'
                                   '"partitionKeys":[],"primaryKeys":[],"options":{"bucket":2,"y":true}}')
    assert parsed.options == {"bucket": "2", "y": "true"}


def test_corrupt_json_names_source():
    with pytest.raises(CorruptFile, match="schema-7"):
        TableSchema.from_json("{not json", source="/t/schema/schema-7")
    with pytest.raises(CorruptFile, match="schema-7"):
        TableSchema.from_json('{"version":3}', source="/t/schema/schema-7")


def test_new_schema_keys():
    s = example_schema(partition_keys=["m"], primary_keys=["a", "m"])
    assert not s.field("a").type.nullable and not s.field("m").type.nullable
    assert s.field("b").type.nullable
    assert s.trimmed_primary_keys == ["a"]
    assert s.bucket_keys == ["a"]
    assert s.fields_by_name["b"].id == 1
    assert s.arrow_schema().field("a").nullable is False


def test_new_schema_keys_from_options():
    s = example_schema(options={"primary-key": "a, m", "partition": "m", "bucket": "1"})
    assert s.primary_keys == ("a", "m") and s.partition_keys == ("m",)
    assert s.options == {"bucket": "1"}
    with pytest.raises(InvalidOption, match="primary-key"):
        example_schema(primary_keys=["a"], options={"primary-key": "a"})


@pytest.mark.parametrize("kw,match", [
    ({"primary_keys": ["zz"]}, "zz"),
    ({"partition_keys": ["qq"]}, "qq"),
    ({"primary_keys": ["a", "a"]}, "'a'"),
    ({"primary_keys": ["a"], "partition_keys": ["a"]}, "partition"),
    ({"primary_keys": ["a"], "options": {"bucket-key": "m"}}, "bucket-key"),
    ({"options": {"bucket-key": "nope"}}, "nope"),
    ({"partition_keys": ["a"], "options": {"bucket-key": "a"}}, "bucket-key"),
])
def test_new_schema_validation(kw, match):
    with pytest.raises((SchemaMismatch, InvalidOption), match=match):
        example_schema(**kw)


def test_duplicate_column_and_bad_arrow_type():
    with pytest.raises(SchemaMismatch, match="'a'"):
        new_schema(pa.schema([("a", pa.int32()), ("a", pa.int64())]))
    with pytest.raises(SchemaMismatch, match="u"):
        new_schema(pa.schema([("u", pa.uint16())]))


def test_bucket_keys_option_order():
    s = new_schema(pa.schema([("a", pa.int32()), ("b", pa.int32()), ("c", pa.int32())]),
                   primary_keys=["a", "b", "c"], options={"bucket-key": "c,a"})
    assert s.bucket_keys == ["c", "a"]
    with pytest.raises(SchemaMismatch, match="x"):
        s.field("x")


# --- schema changes -----------------------------------------------------------------------------

def base():
    return new_schema(pa.schema([
        ("k", pa.int64()), ("dt", pa.string()), ("v", pa.int32()),
        ("r", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ]), partition_keys=["dt"], primary_keys=["k", "dt"], options={"bucket": "2"}, comment="t")


def test_add_column_appends_with_new_id():
    s = base()
    n = apply_changes(s, [AddColumn("w", DOUBLE(), "new col")])
    assert n.id == s.id + 1 and n.version == 3
    assert n.field_names == ["k", "dt", "v", "r", "w"]
    assert n.field("w") == DataField(6, "w", DOUBLE(), "new col")
    assert n.highest_field_id == 6
    assert s.field_names == ["k", "dt", "v", "r"]  # pure


def test_add_column_positions_and_nested():
    s = base()
    n = apply_changes(s, [AddColumn("first", INT(), position="first"),
                          AddColumn("mid", INT(), position=("after", "v")),
                          AddColumn("pre", INT(), position=("before", "k")),
                          AddColumn(("r", "z"), BIGINT())])
    assert n.field_names == ["first", "pre", "k", "dt", "v", "mid", "r"]
    assert [f.name for f in n.field("r").type.fields] == ["x", "y", "z"]
    assert n.field("r").type.fields[2].id == 9 and n.highest_field_id == 9


def test_add_row_column_numbers_nested_fields():
    s = base()
    row = ROW([DataField(0, "p", INT()), DataField(0, "q", ROW([DataField(0, "s", INT())]))])
    n = apply_changes(s, [AddColumn("nr", row)])
    f = n.field("nr")
    assert f.id == 6
    assert [(c.name, c.id) for c in f.type.fields] == [("p", 7), ("q", 9)]
    assert f.type.fields[1].type.fields[0].id == 8
    assert n.highest_field_id == 9


def test_add_column_before_partition_option():
    s = apply_changes(base(), [SetOption("add-column-before-partition", "true")])
    n = apply_changes(s, [AddColumn("w", INT())])
    assert n.field_names == ["k", "w", "dt", "v", "r"]


@pytest.mark.parametrize("change,match", [
    (AddColumn("v", INT()), "'v'"),
    (AddColumn(("r", "x"), INT()), "r.x"),
    (AddColumn("nn", INT(False)), "'nn'"),
    (AddColumn("w", INT(), position=("after", "ghost")), "ghost"),
    (AddColumn(("v", "x"), INT()), "v.x"),
    (RenameColumn("dt", "day"), "'dt'"),
    (RenameColumn("k", "key"), "'k'"),
    (RenameColumn("v", "r"), "'v'"),
    (RenameColumn("ghost", "g"), "ghost"),
    (DropColumn("dt"), "'dt'"),
    (DropColumn("k"), "'k'"),
    (DropColumn(("r", "ghost")), "r.ghost"),
    (UpdateColumnType("k", DECIMAL(30, 0)), "'k'"),
    (UpdateColumnType("dt", VARCHAR(10)), "'dt'"),
    (UpdateColumnType("v", STRING()), "'v'"),
    (UpdateColumnType(("r", "x"), INT()), None),
    (UpdateColumnType("v", INT(False)), "NOT NULL"),
    (UpdateColumnNullability("k", True), "'k'"),
    (UpdateColumnNullability("v", False), "'v'"),
])
def test_forbidden_changes(change, match):
    if match is None:  # a no-op type change is allowed
        apply_changes(base(), [change])
        return
    with pytest.raises(SchemaEvolutionError, match=match):
        apply_changes(base(), [change])


def test_drop_last_column_is_an_error():
    s = new_schema(pa.schema([("a", pa.int32()), ("b", pa.int32())]))
    one = apply_changes(s, [DropColumn("a")])
    assert one.field_names == ["b"] and one.highest_field_id == 1
    with pytest.raises(SchemaEvolutionError, match="'b'"):
        apply_changes(one, [DropColumn("b")])
    nested = new_schema(pa.schema([("a", pa.int32()), ("r", pa.struct([("x", pa.int32())]))]))
    with pytest.raises(SchemaEvolutionError, match="r.x"):
        apply_changes(nested, [DropColumn(("r", "x"))])


def test_rename_drop_and_ids_never_reused():
    s = base()
    n = apply_changes(s, [RenameColumn("v", "value"), RenameColumn(("r", "x"), "xx"), DropColumn(("r", "y")),
                          DropColumn("value"), AddColumn("v", INT())])
    assert n.field_names == ["k", "dt", "r", "v"]
    assert n.field("v").id == 6  # not the dropped id 2
    assert [(f.name, f.id) for f in n.field("r").type.fields] == [("xx", 4)]


def test_update_column_type_widening():
    s = base()
    n = apply_changes(s, [UpdateColumnType("v", BIGINT()), UpdateColumnType(("r", "x"), DOUBLE())])
    assert n.field("v") == DataField(2, "v", BIGINT())
    assert n.field("r").type.fields[0].type == DOUBLE()
    with pytest.raises(SchemaEvolutionError, match="BIGINT"):
        apply_changes(n, [UpdateColumnType("v", INT())])


def test_update_type_keep_nullability_and_not_null_option():
    s = apply_changes(base(), [UpdateColumnNullability("v", True)])
    kept = apply_changes(s, [UpdateColumnType("v", BIGINT(False), keep_nullability=True)])
    assert kept.field("v").type == BIGINT()
    allowed = apply_changes(s, [SetOption("alter-column-null-to-not-null.disabled", "false")])
    n = apply_changes(allowed, [UpdateColumnNullability("v", False)])
    assert n.field("v").type == INT(False)
    back = apply_changes(n, [UpdateColumnNullability("v", True)])
    assert back.field("v").type == INT()


def test_comments_and_options():
    s = base()
    n = apply_changes(s, [UpdateColumnComment("v", "the value"), UpdateColumnComment(("r", "y"), "inner"),
                          SetOption("snapshot.num-retained.max", "5"), RemoveOption("bucket"),
                          UpdateComment(None)])
    assert n.field("v").description == "the value"
    assert n.field("r").type.fields[1].description == "inner"
    assert n.options == {"snapshot.num-retained.max": "5"}
    assert n.comment is None
    assert "comment" not in json.loads(n.to_json())
    assert json.loads(n.to_json())["fields"][2]["description"] == "the value"


def test_changed_schema_still_validated():
    s = new_schema(pa.schema([("a", pa.int32()), ("b", pa.int32())]), primary_keys=["a"])
    with pytest.raises(SchemaEvolutionError, match="bucket-key"):
        apply_changes(s, [SetOption("bucket-key", "b")])


# --- SchemaStore --------------------------------------------------------------------------------

def test_store_create_latest_commit(tmp_path):
    store = SchemaStore(local_file_io(), str(tmp_path / "t"))
    assert store.latest() is None and store.list_ids() == []
    s0 = store.create(base())
    assert (tmp_path / "t" / "schema" / "schema-0").read_text() == s0.to_json()
    with pytest.raises(TableAlreadyExists):
        store.create(base())
    s1 = apply_changes(s0, [AddColumn("w", INT())])
    store.commit(s1)
    with pytest.raises(CommitConflict, match="schema-1"):
        store.commit(s1)
    assert store.list_ids() == [0, 1]
    assert store.latest() == s1
    assert store.get(0) == s0
    s2 = store.alter([RenameColumn("w", "ww")])
    assert s2.id == 2 and store.latest().field_names[-1] == "ww"
    (tmp_path / "t" / "schema" / ".schema-3.abc.tmp").write_text("junk")
    assert store.list_ids() == [0, 1, 2]


def test_store_errors_name_file(tmp_path):
    store = SchemaStore(local_file_io(), str(tmp_path / "t"))
    with pytest.raises(FileMissing, match="schema-4"):  # absent, not corrupt
        store.get(4)
    (tmp_path / "t" / "schema").mkdir(parents=True)
    (tmp_path / "t" / "schema" / "schema-0").write_text("{broken")
    with pytest.raises(CorruptFile, match="schema-0"):
        store.latest()


def test_store_branch_dir(tmp_path):
    store = SchemaStore(local_file_io(), str(tmp_path / "t"), branch="b1")
    store.create(base())
    assert (tmp_path / "t" / "branch" / "branch-b1" / "schema" / "schema-0").exists()


def test_store_reads_pypaimon_file(tmp_path):
    d = tmp_path / "t" / "schema"
    d.mkdir(parents=True)
    (d / "schema-0").write_text(PYPAIMON_SCHEMA)
    s = SchemaStore(local_file_io(), str(tmp_path / "t")).latest()
    assert s.field("nested").type.fields[1].id == 12
    assert parse_type("DECIMAL(10, 2)") == s.field("price").type
