import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarn.errors import SchemaMismatch
from tarn.types import (
    ARRAY, BIGINT, BINARY, BOOLEAN, BYTES, CHAR, DATE, DECIMAL, DOUBLE, FLOAT, INT, MAP, MULTISET,
    ROW, SMALLINT, STRING, TIME, TIMESTAMP, TIMESTAMP_LTZ, TINYINT, VARBINARY, VARCHAR,
    DataField, arrow_field, arrow_schema, field_from_json, field_to_json, from_arrow_type,
    is_widening, parse_type, to_arrow_type, type_to_json, with_nullable,
)

# (string accepted by Paimon's parser, parsed type, canonical string Java writes)
STRING_FORMS = [
    ("BOOLEAN", BOOLEAN(), "BOOLEAN"),
    ("TINYINT", TINYINT(), "TINYINT"),
    ("SMALLINT", SMALLINT(), "SMALLINT"),
    ("INT", INT(), "INT"),
    ("INTEGER", INT(), "INT"),
    ("integer not null", INT(False), "INT NOT NULL"),
    ("INT NULL", INT(), "INT"),
    ("BIGINT NOT NULL", BIGINT(False), "BIGINT NOT NULL"),
    ("FLOAT", FLOAT(), "FLOAT"),
    ("DOUBLE", DOUBLE(), "DOUBLE"),
    ("DOUBLE PRECISION", DOUBLE(), "DOUBLE"),
    ("DECIMAL(10, 2)", DECIMAL(10, 2), "DECIMAL(10, 2)"),
    ("DECIMAL(38,18)", DECIMAL(38, 18), "DECIMAL(38, 18)"),
    ("DECIMAL", DECIMAL(10, 0), "DECIMAL(10, 0)"),
    ("DECIMAL(5)", DECIMAL(5, 0), "DECIMAL(5, 0)"),
    ("NUMERIC(7, 3)", DECIMAL(7, 3), "DECIMAL(7, 3)"),
    ("DEC(4, 1) NOT NULL", DECIMAL(4, 1, False), "DECIMAL(4, 1) NOT NULL"),
    ("CHAR(5)", CHAR(5), "CHAR(5)"),
    ("CHAR", CHAR(1), "CHAR(1)"),
    ("VARCHAR(20)", VARCHAR(20), "VARCHAR(20)"),
    ("VARCHAR", VARCHAR(1), "VARCHAR(1)"),
    ("VARCHAR(2147483647)", STRING(), "STRING"),
    ("STRING", STRING(), "STRING"),
    ("STRING NOT NULL", STRING(False), "STRING NOT NULL"),
    ("BINARY(16)", BINARY(16), "BINARY(16)"),
    ("BINARY", BINARY(1), "BINARY(1)"),
    ("VARBINARY(8)", VARBINARY(8), "VARBINARY(8)"),
    ("VARBINARY(2147483647)", BYTES(), "BYTES"),
    ("BYTES", BYTES(), "BYTES"),
    ("DATE", DATE(), "DATE"),
    ("TIME", TIME(0), "TIME(0)"),
    ("TIME(3)", TIME(3), "TIME(3)"),
    ("TIME(3) WITHOUT TIME ZONE", TIME(3), "TIME(3)"),
    ("TIMESTAMP", TIMESTAMP(6), "TIMESTAMP(6)"),
    ("TIMESTAMP(3)", TIMESTAMP(3), "TIMESTAMP(3)"),
    ("TIMESTAMP(9) WITHOUT TIME ZONE", TIMESTAMP(9), "TIMESTAMP(9)"),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", TIMESTAMP_LTZ(3), "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP WITH LOCAL TIME ZONE", TIMESTAMP_LTZ(6), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP_LTZ", TIMESTAMP_LTZ(6), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP_LTZ(3) NOT NULL", TIMESTAMP_LTZ(3, False), "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL"),
]


@pytest.mark.parametrize("text,expected,canonical", STRING_FORMS)
def test_string_forms(text, expected, canonical):
    t = parse_type(text)
    assert t == expected
    assert type_to_json(t) == canonical
    assert parse_type(canonical) == t


@pytest.mark.parametrize("bad", ["ARRAY<INT>", "MAP<INT, INT>", "ROW<a INT>", "DECIMAL(", "INT INT", ""])
def test_string_parser_rejects(bad):
    with pytest.raises(SchemaMismatch):
        parse_type(bad)


def test_nested_json_forms():
    row = ROW([DataField(2, "x", INT()), DataField(4, "y", ROW([DataField(3, "p", STRING())]), "desc")], False)
    t = MAP(STRING(False), ARRAY(MULTISET(row)))
    expected = {
        "type": "MAP",
        "key": "STRING NOT NULL",
        "value": {"type": "ARRAY", "element": {"type": "MULTISET", "element": {
            "type": "ROW NOT NULL",
            "fields": [
                {"id": 2, "name": "x", "type": "INT"},
                {"id": 4, "name": "y", "type": {"type": "ROW", "fields": [
                    {"id": 3, "name": "p", "type": "STRING"}]}, "description": "desc"},
            ]}}},
    }
    assert type_to_json(t) == expected
    assert parse_type(expected) == t
    assert type_to_json(ARRAY(INT(), False)) == {"type": "ARRAY NOT NULL", "element": "INT"}


def test_field_json_omits_missing_description_and_default():
    assert field_to_json(DataField(7, "c", INT())) == {"id": 7, "name": "c", "type": "INT"}
    f = DataField(7, "c", INT(), "a comment", "42")
    obj = field_to_json(f)
    assert list(obj) == ["id", "name", "type", "description", "defaultValue"]
    assert field_from_json(obj) == f


def test_nested_parse_ignores_extra_keys():
    # pypaimon adds "nullable" next to "type"; Java ignores it
    t = parse_type({"type": "ARRAY", "element": "STRING", "nullable": True})
    assert t == ARRAY(STRING())


ATOMIC = st.sampled_from([
    BOOLEAN(), TINYINT(), SMALLINT(), INT(), BIGINT(), FLOAT(), DOUBLE(), DATE(), STRING(), BYTES(),
]) | st.builds(DECIMAL, st.integers(1, 38), st.integers(0, 0)) \
   | st.builds(CHAR, st.integers(1, 255)) | st.builds(VARCHAR, st.integers(1, 10_000)) \
   | st.builds(BINARY, st.integers(1, 64)) | st.builds(VARBINARY, st.integers(1, 64)) \
   | st.builds(TIME, st.integers(0, 9)) | st.builds(TIMESTAMP, st.integers(0, 9)) \
   | st.builds(TIMESTAMP_LTZ, st.integers(0, 9))

NAMES = st.text("abcdefgh_", min_size=1, max_size=6)


def _nested(children):
    field = st.builds(DataField, st.integers(0, 1000), NAMES, children,
                      st.none() | st.text(max_size=5), st.none() | st.text(max_size=5))
    return (st.builds(ARRAY, children) | st.builds(MULTISET, children)
            | st.builds(MAP, children, children)
            | st.builds(ROW, st.lists(field, min_size=1, max_size=3)))


TYPES = st.recursive(ATOMIC, _nested, max_leaves=8).flatmap(
    lambda t: st.booleans().map(lambda n: with_nullable(t, n)))


@settings(max_examples=300, deadline=None)
@given(TYPES)
def test_json_round_trip_property(t):
    assert parse_type(type_to_json(t)) == t


ARROW_CASES = [
    (BOOLEAN(), pa.bool_()), (TINYINT(), pa.int8()), (SMALLINT(), pa.int16()), (INT(), pa.int32()),
    (BIGINT(), pa.int64()), (FLOAT(), pa.float32()), (DOUBLE(), pa.float64()),
    (DECIMAL(10, 2), pa.decimal128(10, 2)), (STRING(), pa.string()), (VARCHAR(3), pa.string()),
    (CHAR(3), pa.string()), (BYTES(), pa.binary()), (VARBINARY(3), pa.binary()),
    (BINARY(4), pa.binary()), (DATE(), pa.date32()), (TIME(0), pa.time32("ms")),
    (TIME(3), pa.time32("ms")), (TIME(6), pa.time64("us")), (TIMESTAMP(0), pa.timestamp("ms")),
    (TIMESTAMP(3), pa.timestamp("ms")), (TIMESTAMP(6), pa.timestamp("us")),
    (TIMESTAMP(9), pa.timestamp("ns")), (TIMESTAMP_LTZ(3), pa.timestamp("ms", "UTC")),
    (TIMESTAMP_LTZ(6), pa.timestamp("us", "UTC")), (TIMESTAMP_LTZ(9), pa.timestamp("ns", "UTC")),
    (ARRAY(INT(False)), pa.list_(pa.field("element", pa.int32(), False))),
    (MAP(STRING(), DOUBLE()), pa.map_(pa.string(), pa.float64())),
    (MULTISET(STRING()), pa.map_(pa.string(), pa.field("value", pa.int32(), False))),
]


@pytest.mark.parametrize("t,arrow", ARROW_CASES)
def test_to_arrow(t, arrow):
    assert to_arrow_type(t) == arrow


@pytest.mark.parametrize("arrow,t", [
    (pa.string(), STRING()), (pa.large_string(), STRING()), (pa.string_view(), STRING()),
    (pa.binary(), BYTES()), (pa.large_binary(), BYTES()), (pa.binary(5), BINARY(5)),
    (pa.timestamp("s"), TIMESTAMP(0)), (pa.timestamp("ms"), TIMESTAMP(3)),
    (pa.timestamp("us", "Asia/Tokyo"), TIMESTAMP_LTZ(6)), (pa.time64("ns"), TIME(9)),
    (pa.time32("s"), TIME(0)), (pa.decimal128(38, 10), DECIMAL(38, 10)), (pa.date32(), DATE()),
    (pa.list_(pa.int64()), ARRAY(BIGINT())), (pa.large_list(pa.int8()), ARRAY(TINYINT())),
    (pa.map_(pa.string(), pa.int32()), MAP(STRING(False), INT())),
    (pa.struct([pa.field("a", pa.int32(), False)]), ROW([DataField(-1, "a", INT(False))])),
])
def test_from_arrow(arrow, t):
    assert from_arrow_type(arrow) == t
    assert from_arrow_type(arrow, nullable=False) == with_nullable(t, False)


@pytest.mark.parametrize("arrow", [pa.uint32(), pa.uint8(), pa.float16(), pa.null(),
                                   pa.dictionary(pa.int32(), pa.string()), pa.duration("s"),
                                   pa.struct([("u", pa.uint64())])])
def test_from_arrow_unsupported_names_column(arrow):
    with pytest.raises(SchemaMismatch, match="price"):
        from_arrow_type(arrow, name="price")


def test_arrow_round_trip_of_arrow_native_types():
    for t, arrow in ARROW_CASES:
        if t.root in ("CHAR", "VARCHAR", "VARBINARY", "BINARY", "MULTISET", "MAP") or t.root.startswith("TIME"):
            continue
        assert from_arrow_type(to_arrow_type(t)) == t


def test_arrow_field_and_schema():
    row = ROW([DataField(2, "x", INT(False)), DataField(3, "y", STRING())])
    fields = [DataField(0, "id", BIGINT(False)), DataField(1, "r", row)]
    schema = arrow_schema(fields)
    assert schema.field("id").nullable is False
    assert schema.field("id").metadata == {b"PARQUET:field_id": b"0"}
    assert schema.field("r").metadata == {b"PARQUET:field_id": b"1"}
    inner = schema.field("r").type
    assert inner.field("x").metadata == {b"PARQUET:field_id": b"2"} and not inner.field("x").nullable
    assert arrow_field(fields[0]) == pa.field("id", pa.int64(), False)
    # ids come back from the metadata
    assert from_arrow_type(inner) == row


@pytest.mark.parametrize("old,new,ok", [
    (TINYINT(), SMALLINT(), True), (SMALLINT(), INT(), True), (INT(), BIGINT(), True),
    (TINYINT(), BIGINT(), True), (BIGINT(), INT(), False), (INT(), SMALLINT(), False),
    (FLOAT(), DOUBLE(), True), (DOUBLE(), FLOAT(), False), (INT(), DOUBLE(), True),
    (BIGINT(), FLOAT(), True), (INT(), DECIMAL(10, 0), True), (INT(), DECIMAL(9, 0), False),
    (BIGINT(), DECIMAL(21, 2), True), (DECIMAL(10, 2), DECIMAL(12, 2), True),
    (DECIMAL(10, 2), DECIMAL(11, 3), True), (DECIMAL(10, 2), DECIMAL(10, 3), False),
    (DECIMAL(10, 2), DECIMAL(9, 2), False), (DECIMAL(10, 2), DOUBLE(), True),
    (VARCHAR(5), VARCHAR(10), True), (VARCHAR(10), VARCHAR(5), False), (VARCHAR(10), STRING(), True),
    (CHAR(5), VARCHAR(5), True), (CHAR(5), STRING(), True), (STRING(), CHAR(5), False),
    (BINARY(4), BYTES(), True), (BYTES(), BINARY(4), False),
    (TIMESTAMP(3), TIMESTAMP(6), True), (TIMESTAMP(6), TIMESTAMP(3), False),
    (TIMESTAMP(3), TIMESTAMP_LTZ(3), True), (TIME(0), TIME(3), True),
    (INT(), STRING(), False), (STRING(), INT(), False), (DATE(), TIMESTAMP(), False),
    (BOOLEAN(), INT(), False), (INT(False), INT(), True), (INT(), INT(False), False),
    (ARRAY(INT()), ARRAY(BIGINT()), False), (ARRAY(INT()), ARRAY(INT(), False), False),
])
def test_is_widening(old, new, ok):
    assert is_widening(old, new) is ok


@pytest.mark.parametrize("json_value,root,nullable", [
    ("BLOB", "BLOB", True),
    ("HYPERLOGLOG", "HYPERLOGLOG", True),  # a type of some newer Paimon
    ({"type": "VECTOR NOT NULL", "element": "FLOAT", "length": 3}, "VECTOR", False),
])
def test_types_tarn_lacks_load_and_round_trip(json_value, root, nullable):
    """A type tarn does not implement parses (the table loads), keeps its JSON verbatim, and
    refuses an Arrow form with UnsupportedFeature naming the column."""
    import tarn
    from tarn.types import arrow_field, unsupported_roots

    t = parse_type(json_value)
    assert (t.root, t.nullable) == (root, nullable)
    assert type_to_json(t) == json_value
    assert list(unsupported_roots(t)) == [root]
    nested = parse_type({"type": "ARRAY", "element": json_value})
    assert list(unsupported_roots(nested)) == [root]
    with pytest.raises(tarn.UnsupportedFeature, match="column 'payload'.*" + root):
        arrow_field(DataField(1, "payload", nested))


@pytest.mark.parametrize("json_value,nullable", [("VARIANT", True), ("VARIANT NOT NULL", False)])
def test_variant_type_round_trips(json_value, nullable):
    from tarn.types import VARIANT, VARIANT_ARROW, from_arrow_field, parse_type, to_arrow_type, type_to_json
    t = parse_type(json_value)
    assert t == VARIANT(nullable) and t.raw is None and type_to_json(t) == json_value
    assert to_arrow_type(t) == VARIANT_ARROW
    import pyarrow as pa
    assert from_arrow_field(pa.field("v", VARIANT_ARROW)).type == VARIANT()  # Spark's marked struct
    plain = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
    assert from_arrow_field(pa.field("v", plain)).type.root == "ROW"  # an unmarked struct stays a ROW
    assert is_widening(VARIANT(), VARIANT()) and not is_widening(VARIANT(), parse_type("STRING"))
