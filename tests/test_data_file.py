"""Data files: round trips per format, Java-compatible Parquet layout, Avro schema, errors."""

from __future__ import annotations

import datetime as dt
import decimal

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarn.codec.data_file import (
    AVRO_RECORD_NAME,
    array_element_id,
    avro_schema,
    map_key_id,
    map_value_id,
    read_data_file,
    write_data_file,
)
from tarn.errors import CorruptFile, FileMissing, InvalidOption, SchemaMismatch
from tarn.fs import local_file_io
from tarn.types import (
    ARRAY, BIGINT, BINARY, BOOLEAN, BYTES, CHAR, DATE, DECIMAL, DOUBLE, FLOAT, INT, MAP, MULTISET,
    ROW, SMALLINT, STRING, TIME, TIMESTAMP, TIMESTAMP_LTZ, TINYINT, VARCHAR, DataField, arrow_schema,
)

UTC = dt.timezone.utc

# Columns every format supports (Avro lacks TIMESTAMP(>6) and TIME(>3)).
COMMON_FIELDS = [
    DataField(0, "b", BOOLEAN()),
    DataField(1, "i8", TINYINT()),
    DataField(2, "i16", SMALLINT()),
    DataField(3, "i32", INT(False)),
    DataField(4, "i64", BIGINT()),
    DataField(5, "f32", FLOAT()),
    DataField(6, "f64", DOUBLE()),
    DataField(7, "dec9", DECIMAL(9, 2)),
    DataField(8, "dec18", DECIMAL(18, 3)),
    DataField(9, "dec38", DECIMAL(38, 5)),
    DataField(10, "s", STRING()),
    DataField(11, "c", CHAR(3)),
    DataField(12, "vc", VARCHAR(10)),
    DataField(13, "bytes", BYTES()),
    DataField(14, "bin", BINARY(3)),
    DataField(15, "date", DATE()),
    DataField(16, "time", TIME()),
    DataField(17, "ts3", TIMESTAMP(3)),
    DataField(18, "ts6", TIMESTAMP(6)),
    DataField(19, "ltz3", TIMESTAMP_LTZ(3)),
    DataField(20, "ltz6", TIMESTAMP_LTZ(6)),
    DataField(21, "arr", ARRAY(INT())),
    DataField(22, "smap", MAP(STRING(False), BIGINT())),
    DataField(23, "imap", MAP(INT(False), STRING())),
    DataField(24, "row", ROW([DataField(25, "x", INT()), DataField(26, "y", ARRAY(STRING()))])),
    DataField(27, "mset", MULTISET(STRING())),
    DataField(28, "nested", ARRAY(MAP(STRING(False), ARRAY(DECIMAL(5, 1))))),
]

FULL_ROW = [
    True, -128, 32767, -5, 2**62, 1.5, -2.25, decimal.Decimal("1234567.89"),
    decimal.Decimal("123456789012345.678"), decimal.Decimal("-123456789012345678901234567890.12345"),
    "héllo wörld ✓", "abc", "varchar", b"\x00\xff\x10", b"abc", dt.date(2024, 2, 29),
    dt.time(23, 59, 59, 999000), dt.datetime(2024, 1, 1, 1, 2, 3, 123000),
    dt.datetime(1900, 1, 1, 0, 0, 0, 123456), dt.datetime(2024, 1, 1, 0, 0, 0, 5000, tzinfo=UTC),
    dt.datetime(2200, 1, 1, 0, 0, 0, 1, tzinfo=UTC), [1, None, 3], [("a", 1), ("b", None)],
    [(1, "x"), (-2, None)], {"x": 1, "y": ["a", None]}, [("q", 2)],
    [[("k", [decimal.Decimal("1.5"), None])], None],
]
NULL_ROW = [None, None, None, 7] + [None] * (len(COMMON_FIELDS) - 4)
EMPTY_NESTED_ROW = list(NULL_ROW)
EMPTY_NESTED_ROW[21:29] = [[], [], [], {"x": None, "y": []}, [], [[]]]


def make_table(fields, rows) -> pa.Table:
    schema = arrow_schema(fields)
    columns = list(zip(*rows))
    return pa.Table.from_arrays(
        [pa.array(list(c), type=schema.field(i).type) for i, c in enumerate(columns)], schema=schema)


@pytest.fixture
def file_io():
    return local_file_io()


@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro"])
def test_round_trip_every_type(tmp_path, file_io, file_format):
    table = make_table(COMMON_FIELDS, [FULL_ROW, NULL_ROW, EMPTY_NESTED_ROW])
    path = str(tmp_path / f"data.{file_format}")
    size = write_data_file(file_io, path, table, COMMON_FIELDS, file_format, {})
    assert size == file_io.size(path) > 0
    back = read_data_file(file_io, path, file_format, COMMON_FIELDS)
    assert back.schema.equals(table.schema, check_metadata=True)
    assert back.to_pylist() == table.to_pylist()


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
def test_round_trip_fine_timestamps_and_time(tmp_path, file_io, file_format):
    fields = [DataField(0, "ts9", TIMESTAMP(9)), DataField(1, "ltz7", TIMESTAMP_LTZ(7)),
              DataField(2, "ts3", TIMESTAMP(3)), DataField(3, "t6", TIME(6)),
              DataField(4, "arr", ARRAY(TIMESTAMP(9)))]
    ns = 1_700_000_000_123_456_789
    table = pa.Table.from_arrays(
        [pa.array([ns, None], pa.timestamp("ns")), pa.array([ns, -1], pa.timestamp("ns", "UTC")),
         pa.array([1_700_000_000_123, None], pa.timestamp("ms")),
         pa.array([3_723_004_000, None], pa.time64("us")),
         pa.array([[ns], None], pa.list_(pa.timestamp("ns")))],
        schema=arrow_schema(fields))
    path = str(tmp_path / f"fine.{file_format}")
    write_data_file(file_io, path, table, fields, file_format, {})
    back = read_data_file(file_io, path, file_format, fields)
    assert back.column("ts9").to_pylist() == table.column("ts9").to_pylist()
    assert back.column("ltz7").cast(pa.int64()).to_pylist() == [ns, -1]
    assert back.column("ts3").equals(table.column("ts3"))
    assert back.column("arr").equals(table.column("arr"))
    # TIME is stored in milliseconds (Java's TIME physical form)
    assert back.column("t6").to_pylist() == [dt.time(1, 2, 3, 4000), None]


def parquet_column(path, name):
    schema = pq.ParquetFile(path).schema
    return next(schema.column(i) for i in range(len(schema)) if schema.column(i).path == name)


def test_parquet_physical_types_match_java(tmp_path, file_io):
    table = make_table(COMMON_FIELDS, [FULL_ROW, NULL_ROW])
    path = str(tmp_path / "types.parquet")
    write_data_file(file_io, path, table, COMMON_FIELDS, "parquet", {})
    expected = {
        "b": ("BOOLEAN", "None"),
        "i8": ("INT32", "Int(bitWidth=8, isSigned=true)"),
        "i16": ("INT32", "Int(bitWidth=16, isSigned=true)"),
        "i32": ("INT32", "None"),
        "i64": ("INT64", "None"),
        "f32": ("FLOAT", "None"),
        "f64": ("DOUBLE", "None"),
        "dec9": ("INT32", "Decimal(precision=9, scale=2)"),
        "dec18": ("INT64", "Decimal(precision=18, scale=3)"),
        "dec38": ("FIXED_LEN_BYTE_ARRAY", "Decimal(precision=38, scale=5)"),
        "s": ("BYTE_ARRAY", "String"),
        "c": ("BYTE_ARRAY", "String"),
        "bytes": ("BYTE_ARRAY", "None"),
        "bin": ("BYTE_ARRAY", "None"),
        "date": ("INT32", "Date"),
        "time": ("INT32", "Time(isAdjustedToUTC=true, timeUnit=milliseconds)"),
    }
    for name, (physical, logical) in expected.items():
        column = parquet_column(path, name)
        assert column.physical_type == physical, name
        assert str(column.logical_type) == logical, name
    assert parquet_column(path, "dec38").length == 16
    for name, unit, utc in [("ts3", "milliseconds", "false"), ("ts6", "microseconds", "false"),
                            ("ltz3", "milliseconds", "true"), ("ltz6", "microseconds", "true")]:
        column = parquet_column(path, name)
        assert column.physical_type == "INT64"
        assert f"isAdjustedToUTC={utc}, timeUnit={unit}" in str(column.logical_type)
    assert parquet_column(path, "i32").max_definition_level == 0  # NOT NULL -> required


def test_parquet_int96_for_precision_above_6(tmp_path, file_io):
    fields = [DataField(0, "ts7", TIMESTAMP(7)), DataField(1, "ltz9", TIMESTAMP_LTZ(9))]
    table = pa.Table.from_arrays([pa.array([1], pa.timestamp("ns")),
                                  pa.array([2], pa.timestamp("ns", "UTC"))],
                                 schema=arrow_schema(fields))
    path = str(tmp_path / "int96.parquet")
    write_data_file(file_io, path, table, fields, "parquet", {})
    assert parquet_column(path, "ts7").physical_type == "INT96"
    assert parquet_column(path, "ltz9").physical_type == "INT96"
    # pyarrow's INT96 switch is per file: coarser timestamps next to them become INT96 too
    fields.append(DataField(2, "ts3", TIMESTAMP(3)))
    table = table.append_column(arrow_schema(fields).field(2), pa.array([3], pa.timestamp("ms")))
    write_data_file(file_io, path, table, fields, "parquet", {})
    assert parquet_column(path, "ts3").physical_type == "INT96"
    assert read_data_file(file_io, path, "parquet", fields).equals(table)


def test_parquet_field_ids_and_nested_names(tmp_path, file_io):
    table = make_table(COMMON_FIELDS, [FULL_ROW])
    path = str(tmp_path / "ids.parquet")
    write_data_file(file_io, path, table, COMMON_FIELDS, "parquet", {})
    schema = pq.ParquetFile(path).schema_arrow

    def field_id(field):
        return int(field.metadata[b"PARQUET:field_id"])

    assert [field_id(f) for f in schema] == [f.id for f in COMMON_FIELDS]
    assert field_id(schema.field("arr").type.value_field) == array_element_id(21, 1)
    assert field_id(schema.field("smap").type.key_field) == map_key_id(22, 1)
    assert field_id(schema.field("smap").type.item_field) == map_value_id(22, 1)
    row = schema.field("row").type
    assert [field_id(row.field(i)) for i in range(2)] == [25, 26]
    assert field_id(row.field(1).type.value_field) == array_element_id(26, 1)
    inner_map = schema.field("nested").type.value_field.type
    assert field_id(inner_map.item_field.type.value_field) == array_element_id(28, 3)
    # Java's SpecialFields arithmetic, int32 overflow included
    assert array_element_id(21, 1) == 536870911 + 21 * 1024 + 1
    assert map_key_id(22, 1) == 536870911 - 22 * 1024 - 1
    assert array_element_id(2_000_000, 1) == ((536870911 + 2_000_000 * 1024 + 1 + 2**31) % 2**32) - 2**31
    paths = [pq.ParquetFile(path).schema.column(i).path for i in range(len(pq.ParquetFile(path).schema))]
    assert "arr.list.element" in paths
    assert "smap.key_value.key" in paths and "smap.key_value.value" in paths


def test_parquet_compression_options(tmp_path, file_io):
    fields = [DataField(0, "a", BIGINT())]
    table = pa.Table.from_arrays([pa.array(range(1000))], schema=arrow_schema(fields))
    for options, codec in [({}, "ZSTD"), ({"file.compression": "snappy"}, "SNAPPY"),
                           ({"file.compression": "none"}, "UNCOMPRESSED"),
                           ({"file.compression": "zstd", "file.compression.zstd-level": "9"}, "ZSTD")]:
        path = str(tmp_path / f"c-{codec}-{len(options)}.parquet")
        write_data_file(file_io, path, table, fields, "parquet", options)
        assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == codec
    with pytest.raises(InvalidOption, match="file.compression"):
        write_data_file(file_io, str(tmp_path / "bad.parquet"), table, fields, "parquet",
                        {"file.compression": "rar"})
    assert not file_io.exists(str(tmp_path / "bad.parquet"))


def test_parquet_dictionary_only_for_repeating_columns(tmp_path, file_io):
    """Columns whose leading rows repeat get dictionary pages; near-unique ones are written
    plain; a key column `_KEY_x` and its value column `x` get the same choice; with
    `parquet.enable.dictionary` false none has one. Every value reads back either way."""
    fields = [DataField(0, "_KEY_id", BIGINT(False)), DataField(1, "_SEQUENCE_NUMBER", BIGINT(False)),
              DataField(2, "status", STRING()), DataField(3, "id", BIGINT(False)),
              DataField(4, "_KEY_day", STRING(False)), DataField(5, "day", STRING(False))]
    n = 5000
    table = pa.Table.from_arrays(
        [pa.array(range(n)), pa.array(range(n, 2 * n)), pa.array([f"s{i % 7}" for i in range(n)]),
         pa.array(range(n)), pa.array([f"2026-11-{i % 3 + 1:02d}" for i in range(n)]),
         pa.array([f"2026-11-{i % 3 + 1:02d}" for i in range(n)])], schema=arrow_schema(fields))
    for options, expected in [({}, {"status", "_KEY_day", "day"}), ({"parquet.enable.dictionary": "false"}, set())]:
        path = str(tmp_path / f"d{len(options)}.parquet")
        write_data_file(file_io, path, table, fields, "parquet", options)
        group = pq.ParquetFile(path).metadata.row_group(0)
        with_dictionary = {group.column(i).path_in_schema for i in range(group.num_columns)
                           if group.column(i).has_dictionary_page}
        assert with_dictionary == expected
        assert read_data_file(file_io, path, "parquet", fields).equals(table)


def test_orc_and_avro_compression(tmp_path, file_io):
    fields = [DataField(0, "a", BIGINT())]
    table = pa.Table.from_arrays([pa.array(range(1000))], schema=arrow_schema(fields))
    write_data_file(file_io, str(tmp_path / "a.orc"), table, fields, "orc", {})
    assert orc.ORCFile(str(tmp_path / "a.orc")).compression == "ZSTD"
    write_data_file(file_io, str(tmp_path / "a.avro"), table, fields, "avro", {})
    with open(tmp_path / "a.avro", "rb") as f:
        assert fastavro.reader(f).codec == "zstandard"


def test_avro_schema_follows_paimon():
    fields = [DataField(0, "id", BIGINT(False)), DataField(1, "ts", TIMESTAMP(3)),
              DataField(2, "ltz", TIMESTAMP_LTZ(6)), DataField(3, "dec", DECIMAL(10, 2)),
              DataField(4, "r", ROW([DataField(5, "x", INT())])),
              DataField(6, "m", MAP(INT(False), STRING())), DataField(7, "sm", MAP(STRING(), INT()))]
    schema = avro_schema(fields)
    assert schema["name"] == AVRO_RECORD_NAME
    by_name = {f["name"]: f for f in schema["fields"]}
    assert by_name["id"] == {"name": "id", "type": "long"}
    assert by_name["ts"]["type"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]
    assert by_name["ts"]["default"] is None
    assert by_name["ltz"]["type"][1]["logicalType"] == "local-timestamp-micros"
    assert by_name["dec"]["type"][1] == {"type": "bytes", "logicalType": "decimal",
                                         "precision": 10, "scale": 2}
    assert by_name["r"]["type"][1]["name"] == AVRO_RECORD_NAME + "_r"
    array_map = by_name["m"]["type"][1]
    assert array_map["type"] == "array" and array_map["logicalType"] == "map"
    assert array_map["items"]["name"] == AVRO_RECORD_NAME + "_m"
    assert [f["name"] for f in array_map["items"]["fields"]] == ["key", "value"]
    assert by_name["sm"]["type"][1] == {"type": "map", "values": ["null", "int"]}
    fastavro.parse_schema(schema)
    with pytest.raises(SchemaMismatch, match="TIMESTAMP\\(9\\)"):
        avro_schema([DataField(0, "t", TIMESTAMP(9))])


def test_avro_file_values_are_java_encodings(tmp_path, file_io):
    fields = [DataField(0, "ts", TIMESTAMP(3)), DataField(1, "d", DATE()), DataField(2, "t", TIME())]
    table = pa.Table.from_arrays(
        [pa.array([1_704_067_200_123], pa.timestamp("ms")), pa.array([19723], pa.date32()),
         pa.array([3_600_000], pa.time32("ms"))], schema=arrow_schema(fields))
    path = tmp_path / "v.avro"
    write_data_file(file_io, str(path), table, fields, "avro", {})
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        records = list(reader)
        assert reader.writer_schema["name"] == AVRO_RECORD_NAME
    # epoch millis / epoch days / millis of day, decoded by fastavro's logical types
    assert records == [{"ts": dt.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=UTC),
                        "d": dt.date(2024, 1, 1), "t": dt.time(1, 0)}]


def test_column_selection_and_untyped_read(tmp_path, file_io):
    table = make_table(COMMON_FIELDS, [FULL_ROW, NULL_ROW])
    for file_format in ("parquet", "orc", "avro"):
        path = str(tmp_path / f"sel.{file_format}")
        write_data_file(file_io, path, table, COMMON_FIELDS, file_format, {})
        back = read_data_file(file_io, path, file_format, COMMON_FIELDS, columns=["s", "i64"])
        assert back.column_names == ["s", "i64"]
        assert back.column("s").to_pylist() == ["héllo wörld ✓", None]
        raw = read_data_file(file_io, path, file_format)
        assert raw.column_names == [f.name for f in COMMON_FIELDS]
        with pytest.raises(CorruptFile, match="nope"):
            read_data_file(file_io, path, file_format, columns=["nope"])


def test_not_null_violation_and_bad_cast_delete_the_file(tmp_path, file_io):
    fields = [DataField(0, "a", BIGINT(False))]
    table = pa.table({"a": pa.array([1, None])})
    path = str(tmp_path / "bad.parquet")
    with pytest.raises(SchemaMismatch, match="'a'"):
        write_data_file(file_io, path, table, fields, "parquet", {})
    assert not file_io.exists(path)
    table = pa.table({"a": pa.array(["x"])})
    for file_format in ("parquet", "orc", "avro"):
        path = str(tmp_path / f"cast.{file_format}")
        with pytest.raises(SchemaMismatch, match="'a'"):
            write_data_file(file_io, path, table, fields, file_format, {})
        assert not file_io.exists(path)


def test_overflowing_cast_is_refused(tmp_path, file_io):
    fields = [DataField(0, "a", INT())]
    table = pa.table({"a": pa.array([2**40])})
    with pytest.raises(SchemaMismatch, match="'a'"):
        write_data_file(file_io, str(tmp_path / "o.parquet"), table, fields, "parquet", {})


def test_missing_and_corrupt_files(tmp_path, file_io):
    for file_format in ("parquet", "orc", "avro"):
        missing = str(tmp_path / f"missing.{file_format}")
        with pytest.raises(FileMissing, match=f"missing.{file_format}"):
            read_data_file(file_io, missing, file_format)
        garbage = tmp_path / f"garbage.{file_format}"
        garbage.write_bytes(b"not a data file at all")
        with pytest.raises(CorruptFile, match=f"garbage.{file_format}"):
            read_data_file(file_io, str(garbage), file_format)
    with pytest.raises(InvalidOption, match="csv"):
        read_data_file(file_io, missing, "csv")


def test_empty_table(tmp_path, file_io):
    table = make_table(COMMON_FIELDS, [FULL_ROW]).slice(0, 0)
    for file_format in ("parquet", "orc", "avro"):
        path = str(tmp_path / f"empty.{file_format}")
        write_data_file(file_io, path, table, COMMON_FIELDS, file_format, {})
        back = read_data_file(file_io, path, file_format, COMMON_FIELDS)
        assert back.num_rows == 0 and back.schema.equals(table.schema)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
                          st.one_of(st.none(), st.text()),
                          st.one_of(st.none(), st.decimals(min_value=-9_999_999, max_value=9_999_999,
                                                           places=2, allow_nan=False))),
                max_size=30),
       st.sampled_from(["parquet", "orc", "avro"]))
def test_round_trip_property(tmp_path_factory, rows, file_format):
    fields = [DataField(0, "l", BIGINT()), DataField(1, "s", STRING()),
              DataField(2, "d", DECIMAL(9, 2))]
    table = make_table(fields, rows) if rows else make_table(fields, [[1, "", None]]).slice(0, 0)
    path = str(tmp_path_factory.mktemp("prop") / f"p.{file_format}")
    io_ = local_file_io()
    write_data_file(io_, path, table, fields, file_format, {})
    assert read_data_file(io_, path, file_format, fields).to_pylist() == table.to_pylist()


def test_orc_timestamp_ltz_is_an_exact_instant_either_legacy_way(tmp_path):
    """`orc.timestamp-ltz.legacy.type` = false: Java stores the exact instant in an ORC
    timestamp-instant column, which is what tarn writes (legacy true matches it in a UTC JVM)."""
    import datetime as dt

    import pyarrow.orc as orc

    import tarn

    schema = pa.schema([("t", pa.timestamp("us", tz="UTC"))])
    table = tarn.Catalog(str(tmp_path)).create_table(
        "db.t", schema, options={"file.format": "orc", "orc.timestamp-ltz.legacy.type": "false"})
    moment = dt.datetime(2026, 11, 28, 12, 30, tzinfo=dt.timezone.utc)
    table.write(pa.table({"t": [moment]}, schema=schema))
    path = next(p for p in (tmp_path / "db.db" / "t" / "bucket-0").iterdir())
    stored = orc.ORCFile(str(path)).read()
    assert stored.schema.field("t").type.tz is not None  # timestamp with local time zone (instant)
    assert stored.column("t")[0].as_py() == moment
    assert table.scan().to_arrow().column("t")[0].as_py() == moment
