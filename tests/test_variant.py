"""VARIANT columns: the codec against the spec's bytes (and pypaimon's, for the examples its
notes record), every primitive kind, nested values, JSON, writes from Python values / JSON /
encoded structs, schema evolution, refusals (filters, keys, formats), statistics."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tarn
import tarn.variant
from tarn.codec import variant as codec

VALUES = [
    None, True, False, 0, -1, 127, -128, 128, 32767, -32769, 2**31, -(2**40), 2**63 - 1, 2**70,
    1.5, -0.0, float("inf"), Decimal("1.25"), Decimal("-123456789.123"), Decimal("1234567890123456789.5"),
    "", "short", "x" * 63, "long " * 40, "üñí©ødé", b"", b"\x00\xff" * 100,
    dt.date(1969, 12, 31), dt.date(2026, 11, 27), dt.datetime(2026, 11, 27, 12, 30, 15, 123456),
    dt.datetime(2026, 11, 27, 12, 30, tzinfo=dt.timezone.utc), uuid.UUID("12345678-1234-5678-1234-567812345678"),
    {}, [], {"a": 1, "b": [1, 2, "x"], "c": {"d": None, "e": {}}}, [1, None, [2, [3]], {"k": "v"}],
    {f"key{i}": i for i in range(300)}, list(range(300)), {"z": 1, "a": 2, "m": {"z": 3, "a": 4}},
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_round_trip(value):
    encoded, metadata = codec.encode(value)
    assert codec.decode(encoded, metadata) == value
    if isinstance(value, float) and value == 0:
        assert str(codec.decode(encoded, metadata)) == str(value)


def test_bytes_of_the_spec_examples():
    """pypaimon 2.1 writes these value bytes (its metadata leaves the sorted bit clear)."""
    assert codec.encode({"a": 1})[0].hex() == "02010000020c01"
    assert codec.encode("x")[0].hex() == "0578"
    assert codec.encode(3.5)[0].hex() == "1c0000000000000c40"
    assert codec.keys_of_metadata(bytes.fromhex("0101000161")) == ["a"]
    assert codec.decode(bytes.fromhex("02010000020c01"), bytes.fromhex("0101000161")) == {"a": 1}
    # an object whose values are not in key order (pypaimon keeps insertion order)
    assert codec.decode(bytes.fromhex("020201000200040c010c02"), bytes.fromhex("01020001026261")) == {"b": 1, "a": 2}


def test_widths_follow_the_values():
    assert codec.encode(127)[0][0] >> 2 == codec.INT8 and codec.encode(128)[0][0] >> 2 == codec.INT16
    assert codec.encode(2**31)[0][0] >> 2 == codec.INT64
    assert codec.encode(Decimal("1.5"))[0][0] >> 2 == codec.DECIMAL4
    assert codec.encode(2**70)[0][0] >> 2 == codec.DECIMAL16
    assert codec.encode("x" * 64)[0][0] >> 2 == codec.STRING


def test_json_in_and_out():
    column = tarn.variant.from_json(['{"a": 1, "b": [true, null, 2.5, 1e3]}', None, '"s"', "12"])
    assert tarn.variant.to_python(column) == [{"a": 1, "b": [True, None, Decimal("2.5"), 1000.0]}, None, "s", 12]
    assert tarn.variant.to_json(column).to_pylist() == ['{"a":1,"b":[true,null,2.5,1000.0]}', None, '"s"', "12"]
    with pytest.raises(tarn.InvalidArgument, match="not JSON"):
        tarn.variant.from_json(["{nope"])


def test_unsupported_python_values_are_refused():
    with pytest.raises(tarn.InvalidArgument, match="time of day"):
        codec.encode(dt.time(1, 2))
    with pytest.raises(tarn.InvalidArgument, match="keys are strings"):
        codec.encode({1: 2})
    with pytest.raises(tarn.InvalidArgument, match="cannot hold a set"):
        codec.encode({1, 2})


def test_reads_types_17_to_19():
    assert codec.decode(bytes([codec.TIME << 2]) + (3_661_000_001).to_bytes(8, "little"), codec.EMPTY_METADATA) == \
        dt.time(1, 1, 1, 1)
    nanos = bytes([codec.TIMESTAMP_NANOS_NTZ << 2]) + (1_000_000_000_123).to_bytes(8, "little")
    assert codec.decode(nanos, codec.EMPTY_METADATA) == dt.datetime(1970, 1, 1, 0, 16, 40, 0)


# ------------------------------------------------------------------------------- tables

SCHEMA = pa.schema([("id", pa.int32()), ("v", tarn.variant.ARROW_TYPE)])


@pytest.fixture
def table(tmp_path):
    return tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA)


def values_of(table):
    rows = table.scan().to_arrow().sort_by("id")
    return dict(zip(rows.column("id").to_pylist(), tarn.variant.to_python(rows.column("v"))))


def test_table_round_trip_of_every_kind(table):
    table.write({"id": pa.array(range(len(VALUES)), pa.int32()), "v": tarn.variant.from_python(VALUES)})
    assert values_of(table) == dict(enumerate(VALUES))
    assert table.schema().field("v").type == tarn.types.VARIANT()
    schema_json = open(os.path.join(table.root, "schema", "schema-0")).read()
    assert "\"type\" : \"VARIANT\"" in schema_json


def test_writes_take_python_values_json_text_and_encoded_structs(table):
    table.write({"id": pa.array([1, 2], pa.int32()), "v": [{"a": [1, 2]}, None]})
    table.write({"id": pa.array([3], pa.int32()), "v": pa.array(['{"j": "k"}'])})
    value, metadata = codec.encode({"enc": True})
    swapped = pa.array([{"metadata": metadata, "value": value}],
                       pa.struct([("metadata", pa.large_binary()), ("value", pa.large_binary())]))
    table.write(pa.table({"id": pa.array([4], pa.int32()), "v": swapped}))
    assert values_of(table) == {1: {"a": [1, 2]}, 2: None, 3: {"j": "k"}, 4: {"enc": True}}


def test_parquet_layout_as_java_writes_it(table):
    table.write({"id": pa.array([1], pa.int32()), "v": ['"x"']})
    path = next(p for p in (os.path.join(d, f) for d, _, fs in os.walk(table.root) for f in fs)
                if p.endswith(".parquet"))
    group = pq.ParquetFile(path).schema_arrow.field("v").type
    assert [group.field(i).name for i in range(2)] == ["value", "metadata"]


def test_filters_on_variants_are_refused(table):
    table.write({"id": pa.array([1], pa.int32()), "v": ['"x"']})
    for bad in ("v = 1", tarn.col("v") == 1):
        with pytest.raises(tarn.InvalidFilter, match="'v' is a VARIANT"):
            table.scan(filter=bad).to_arrow()
    assert table.scan(filter="id = 1", columns=["id"]).to_arrow().num_rows == 1


def test_no_statistics_for_variants(table):
    table.write({"id": pa.array([1, 2], pa.int32()), "v": ['"x"', None]})
    files = table.system_table("$files").to_arrow().to_pylist()
    assert "v=null" in files[0]["min_value_stats"] and "id=1" in files[0]["min_value_stats"]


@pytest.mark.parametrize("options, primary_key, partition_keys, match", [
    ({"file.format": "orc"}, None, None, "parquet files only"),
    ({"file.format": "avro"}, None, None, "parquet files only"),
    ({}, ["v"], None, "cannot be a primary key"),
    ({}, None, ["v"], "cannot be a partition key"),
    ({"bucket": "2", "bucket-key": "v"}, None, None, "cannot be a bucket key"),
])
def test_variant_refusals_at_creation(tmp_path, options, primary_key, partition_keys, match):
    with pytest.raises(tarn.TarnError, match=match):
        tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_key=primary_key,
                                                        partition_keys=partition_keys, options=options)


def test_adding_a_variant_column_and_primary_key_tables(tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    table = catalog.create_table("db.t", pa.schema([("id", pa.int32())]), primary_key=["id"],
                                 options={"bucket": "1"})
    table.write({"id": pa.array([1, 2], pa.int32())})
    table.alter(tarn.AddColumn("v", tarn.types.VARIANT()))
    table.write({"id": pa.array([2, 3], pa.int32()), "v": tarn.variant.from_python([{"new": 2}, [3]])})
    assert values_of(table) == {1: None, 2: {"new": 2}, 3: [3]}
    with pytest.raises(tarn.TarnError):
        table.alter(tarn.UpdateColumnType("v", tarn.types.STRING()))


def test_shredded_group_is_assembled():
    """A shredded column (Paimon's layout: metadata, value, typed_value with one {value,
    typed_value} group per shredded key) reads back as the whole value."""
    value, metadata = codec.encode({"age": 0, "city": "x", "rest": [1, 2]})
    _, keys_metadata = value, metadata
    residual, _ = codec._Encoder(codec.keys_of_metadata(metadata)).value({"rest": [1, 2]}), None
    typed = pa.array([
        {"metadata": keys_metadata, "value": residual,
         "typed_value": {"age": {"value": None, "typed_value": 41}, "city": {"value": None, "typed_value": "Oslo"}}},
        {"metadata": keys_metadata, "value": codec._Encoder([]).value("not an object"), "typed_value": None},
        {"metadata": keys_metadata, "value": None,
         "typed_value": {"age": {"value": None, "typed_value": None}, "city": {"value": codec.encode(7)[0],
                                                                               "typed_value": None}}},
        None,
    ], pa.struct([("metadata", pa.binary()), ("value", pa.binary()), ("typed_value", pa.struct([
        ("age", pa.struct([("value", pa.binary()), ("typed_value", pa.int64())])),
        ("city", pa.struct([("value", pa.binary()), ("typed_value", pa.string())]))]))]))
    assert tarn.variant.to_python(codec.storage_column(typed)) == [
        {"age": 41, "city": "Oslo", "rest": [1, 2]}, "not an object", {"city": 7}, None]


def test_shredded_writes_round_trip(tmp_path):
    import json
    shape = {"type": "ROW", "fields": [{"id": 0, "name": "v", "type": {"type": "ROW", "fields": [
        {"id": 0, "name": "age", "type": "BIGINT"}, {"id": 1, "name": "city", "type": "STRING"},
        {"id": 2, "name": "geo", "type": {"type": "ROW", "fields": [{"id": 0, "name": "lat", "type": "DOUBLE"}]}}]}}]}
    table = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", SCHEMA, options={"variant.shreddingSchema": json.dumps(shape)})
    values = [{"age": 41, "city": "Oslo", "x": [1]}, {"age": "old"}, "scalar", None,
              {"geo": {"lat": 1.5, "lon": 2.0}}, {"age": None}, {}]
    table.write({"id": pa.array(range(len(values)), pa.int32()), "v": tarn.variant.from_python(values)})
    path = next(p for p in (os.path.join(d, f) for d, _, fs in os.walk(table.root) for f in fs)
                if p.endswith(".parquet"))
    assert "typed_value" in str(pq.ParquetFile(path).schema)
    assert values_of(table) == dict(enumerate(values))


def test_bad_shredding_schema_is_refused(tmp_path):
    with pytest.raises(tarn.InvalidOption, match="variant.shreddingSchema"):
        tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, options={"variant.shreddingSchema": "{"})
    with pytest.raises(tarn.InvalidOption, match="has type DATE"):
        tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, options={
            "variant.shreddingSchema": '{"type": "ROW", "fields": [{"id": 0, "name": "v", "type": "DATE"}]}'})
