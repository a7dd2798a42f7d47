"""Data files: Arrow tables <-> parquet / orc / avro files laid out the way Java Paimon lays them.

Parquet (the default format) follows Paimon's ParquetSchemaConverter:
- DECIMAL p<=9 INT32, p<=18 INT64, else FIXED_LEN_BYTE_ARRAY (`store_decimal_as_integer`);
- TIMESTAMP p<=3 INT64 millis, p<=6 INT64 micros, p>6 INT96; isAdjustedToUTC only for LTZ.
  pyarrow's INT96 switch covers every timestamp column of a file, so a file with any p>6
  timestamp stores all its timestamps as INT96 (Java reads INT96 at any precision);
- TIME as INT32 TIME(MILLIS, adjusted to UTC), MULTISET as map<element, INT NOT NULL>;
- field ids on every column, list element / map key / map value ids as in Java's SpecialFields.
  The message is named `schema` (pyarrow's fixed name), not `paimon_schema`; readers ignore it.

ORC is written by pyarrow, which cannot set ORC type attributes: the `paimon.id` attribute is
missing and readers match columns by name; CHAR/VARCHAR(n) are ORC `string`; TIME is an int of
millis. Avro follows Paimon's AvroSchemaConverter; rows become Python values there (fastavro has
no columnar path).
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

import tarn.codec.avro as avro_container
from tarn.arrays import without_hidden_nulls
from tarn.codec import variant
from tarn.errors import CorruptFile, FileMissing, InvalidOption, SchemaMismatch, StorageError, TarnError
from tarn.fs import GONE
from tarn.codec import geo
from tarn.types import FIELD_ID_KEY, INT, DataField, DataType, parse_type, to_arrow_type

FORMATS = ("parquet", "orc", "avro")
AVRO_RECORD_NAME = "org.apache.paimon.avro.generated.record"

# SpecialFields: ids of list elements / map keys / map values derive from the column id.
_STRUCTURED_ID_BASE = 2147483647 // 4
_DEPTH_LIMIT = 1 << 10


def _int32(value: int) -> int:
    """`value` wrapped to a Java int (the id arithmetic overflows like Java's)."""
    return (value + 2**31) % 2**32 - 2**31


def array_element_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE + field_id * _DEPTH_LIMIT + depth)


def map_key_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE - field_id * _DEPTH_LIMIT - depth)


def map_value_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE + field_id * _DEPTH_LIMIT + depth)


def _check_format(file_format: str) -> str:
    fmt = file_format.lower()
    if fmt not in FORMATS:
        raise InvalidOption(f"file.format: unsupported data file format {file_format!r} "
                            f"(expected one of {', '.join(FORMATS)})")
    return fmt


# ---------------------------------------------------------------------------------------------
# Physical Arrow schemas: the Arrow types handed to each format's writer.


def _multiset_parts(t: DataType) -> tuple[DataType, DataType]:
    """Key and value types of a MAP or MULTISET (MULTISET = map<element, INT NOT NULL>)."""
    if t.root == "MAP":
        return t.key, t.value
    return t.element, INT(False)


def _parquet_field(name: str, t: DataType, own_id: int, column_id: int, depth: int) -> pa.Field:
    """Arrow field whose Parquet form matches Java's (ids per SpecialFields)."""
    root = t.root
    if root == "ARRAY":
        element = _parquet_field("element", t.element,
                                 array_element_id(column_id, depth + 1), column_id, depth + 1)
        arrow_type = pa.list_(element)
    elif root in ("MAP", "MULTISET"):
        key_type, value_type = _multiset_parts(t)
        key = _parquet_field("key", replace(key_type, nullable=False),
                             map_key_id(column_id, depth + 1), column_id, depth + 1)
        value = _parquet_field("value", value_type,
                               map_value_id(column_id, depth + 1), column_id, depth + 1)
        arrow_type = pa.map_(key, value)
    elif root == "ROW":
        arrow_type = pa.struct([_parquet_field(f.name, f.type, f.id, f.id, 0) for f in t.fields])
    elif root == "TIME":
        arrow_type = pa.time32("ms")
    elif root in ("GEOMETRY", "GEOGRAPHY") and depth == 0:  # parquet's geospatial logical types
        arrow_type = geo.wkb_type(t, name)
    elif root == "VARIANT":  # Java's group: value (id 0), metadata (id 1)
        arrow_type = pa.struct([pa.field("value", pa.binary(), False, metadata={FIELD_ID_KEY: b"0"}),
                                pa.field("metadata", pa.binary(), False, metadata={FIELD_ID_KEY: b"1"})])
    else:
        arrow_type = to_arrow_type(t)
    return pa.field(name, arrow_type, t.nullable, metadata={FIELD_ID_KEY: str(own_id).encode()})


def _orc_type(t: DataType) -> pa.DataType:
    """Arrow type written to ORC (TIME as int millis, as Java's OrcTypeUtil does)."""
    root = t.root
    if root == "TIME":
        return pa.int32()
    if root == "ARRAY":
        return pa.list_(pa.field("element", _orc_type(t.element), t.element.nullable))
    if root in ("MAP", "MULTISET"):
        key_type, value_type = _multiset_parts(t)
        return pa.map_(pa.field("key", _orc_type(key_type), False),
                       pa.field("value", _orc_type(value_type), value_type.nullable))
    if root == "ROW":
        return pa.struct([pa.field(f.name, _orc_type(f.type), f.type.nullable) for f in t.fields])
    return to_arrow_type(t)


def _has_fine_timestamp(t: DataType) -> bool:
    """Whether `t` holds a TIMESTAMP / LTZ with precision > 6 (Parquet INT96)."""
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return t.precision > 6
    children = [t.element, t.key, t.value] + [f.type for f in t.fields or ()]
    return any(_has_fine_timestamp(c) for c in children if c is not None)


def _cast_column(column, target: pa.DataType, name: str, lossy: bool = False):
    """`column` cast to `target`; `lossy` lets TIME values drop sub-millisecond digits."""
    if column.type.equals(target):
        return column
    try:
        return column.cast(target, safe=not lossy)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatch(f"column {name!r}: cannot store Arrow {column.type} as {target}: {exc}") \
            from exc


def _has_time(t: DataType) -> bool:
    if t.root == "TIME":
        return True
    children = [t.element, t.key, t.value] + [f.type for f in t.fields or ()]
    return any(_has_time(c) for c in children if c is not None)


def _conform(data: pa.Table, fields: list[DataField], schema: pa.Schema) -> pa.Table:
    """`data` with exactly `schema` (types cast where they differ, field metadata applied).

    Columns go through their millisecond-TIME logical type first, so nested TIME casts work."""
    if data.num_columns != len(fields):
        raise SchemaMismatch(f"data has {data.num_columns} columns but {len(fields)} fields "
                             f"were given ({[f.name for f in fields]})")
    columns = []
    for i, f in enumerate(fields):
        column = data.column(i)
        if not f.type.nullable and column.null_count:
            raise SchemaMismatch(f"column {f.name!r} is NOT NULL but holds {column.null_count} nulls")
        if isinstance(schema.field(i).type, pa.ExtensionType):  # GEOMETRY / GEOGRAPHY
            columns.append(geo.as_wkb(column, schema.field(i).type))
            continue
        column = _cast_column(column, _millis_time_type(f.type), f.name, lossy=_has_time(f.type))
        columns.append(without_hidden_nulls(_cast_column(column, schema.field(i).type, f.name)))
    return pa.Table.from_arrays(columns, schema=schema)


def _millis_time_type(t: DataType) -> pa.DataType:
    """The logical Arrow type of `t` with every TIME in milliseconds (the unit files store)."""
    if t.root == "TIME":
        return pa.time32("ms")
    if t.root == "ARRAY":
        return pa.list_(pa.field("element", _millis_time_type(t.element), t.element.nullable))
    if t.root in ("MAP", "MULTISET"):
        key_type, value_type = _multiset_parts(t)
        return pa.map_(pa.field("key", _millis_time_type(key_type), False),
                       pa.field("value", _millis_time_type(value_type), value_type.nullable))
    if t.root == "ROW":
        return pa.struct([pa.field(f.name, _millis_time_type(f.type), f.type.nullable)
                          for f in t.fields])
    return to_arrow_type(t)


# ---------------------------------------------------------------------------------------------
# Options


def _compression(options: dict[str, str]) -> str:
    return options.get("file.compression", "zstd").strip().lower()


def _zstd_level(options: dict[str, str]) -> int:
    raw = options.get("file.compression.zstd-level", "1")
    try:
        return int(raw)
    except ValueError:
        raise InvalidOption(f"file.compression.zstd-level: {raw!r} is not an integer") from None


def _parquet_codec(compression: str) -> str:
    codec = {"uncompressed": "none", "none": "none", "lz4_raw": "lz4"}.get(compression, compression)
    if codec not in ("none", "snappy", "gzip", "brotli", "lz4", "zstd"):
        raise InvalidOption(f"file.compression: {compression!r} is not a Parquet codec")
    return codec


def _orc_codec(compression: str) -> str:
    codec = {"none": "uncompressed", "gzip": "zlib", "deflate": "zlib"}.get(compression, compression)
    if codec not in ("uncompressed", "snappy", "zlib", "lz4", "zstd"):
        raise InvalidOption(f"file.compression: {compression!r} is not an ORC codec")
    return codec


_SIZE_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "m": 1 << 20,
               "gb": 1 << 30, "g": 1 << 30}


def _bytes_option(options: dict[str, str], key: str) -> int:
    """A memory-size option (`1048576`, `1 mb`, `64kb`) in bytes."""
    raw = options[key].strip().lower()
    number = raw.rstrip("bkmg ")
    unit = raw[len(number):].strip()
    if not number.isdigit() or unit not in _SIZE_UNITS:
        raise InvalidOption(f"{key}: {options[key]!r} is not a memory size")
    return int(number) * _SIZE_UNITS[unit]


def _bool_option(options: dict[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    return default if raw is None else raw.strip().lower() == "true"


# ---------------------------------------------------------------------------------------------
# Writers


def write_data_file(file_io, path: str, data: pa.Table, fields: list[DataField], file_format: str,
                    options: dict[str, str]) -> int:
    """Write `data` (columns in `fields` order) to `path`; returns the file size in bytes.

    A failure deletes the partial file."""
    fmt = _check_format(file_format)
    writer = {"parquet": _write_parquet, "orc": _write_orc, "avro": _write_avro}[fmt]
    try:
        with file_io.open_output_stream(path) as out:
            writer(out, data, fields, options)
            size = out.tell()
    except BaseException:
        file_io.delete(path)
        raise
    return size


def _write_parquet(out, data: pa.Table, fields: list[DataField], options: dict[str, str]) -> None:
    stream = ParquetStream(out, fields, options)
    try:
        stream.write(data)
    except BaseException:
        stream.abort()
        raise
    stream.close()


class ParquetStream:
    """One parquet data file written a table at a time into `out` (each `write` adds whole
    row groups, so `out.tell()` is the file's size so far): the file `write_data_file` writes
    of all the tables at once, but for the dictionary columns, chosen from the first table."""

    def __init__(self, out, fields: list[DataField], options: dict[str, str]):
        self.out, self.fields, self.options = out, fields, options
        self.schema = pa.schema([_parquet_field(f.name, f.type, f.id, f.id, 0) for f in fields])
        self.writer: pq.ParquetWriter | None = None

    def write(self, data: pa.Table) -> None:
        table = _shredded(_conform(data, self.fields, self.schema), self.fields, self.options)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.out, table.schema, **self._writer_options(table))
        row_group_size = None
        block = self.options.get("parquet.block.size") or self.options.get("file.block-size")
        if block is not None and table.num_rows:  # row group size in bytes, as Paimon's writer takes it
            per_row = max(1, table.nbytes // table.num_rows)
            row_group_size = max(1, _bytes_option({"b": block}, "b") // per_row)
        self.writer.write_table(table, row_group_size=row_group_size)

    def close(self) -> None:
        if self.writer is None:  # no table came: a file of no rows
            self.write(self.schema.empty_table())
        self.writer.close()

    def abort(self) -> None:
        """Finish the writer of a file that is to be deleted (its own error, if any, is not
        the one to report), so that nothing writes into `out` once it is closed."""
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001
                pass

    def _writer_options(self, table: pa.Table) -> dict:
        options = self.options
        compression = _parquet_codec(_compression(options))
        extra = {}
        if "parquet.page.size" in options:
            extra["data_page_size"] = _bytes_option(options, "parquet.page.size")
        return dict(
            compression=compression,
            compression_level=_zstd_level(options) if compression == "zstd" else None,
            use_dictionary=_dictionary_columns(table) if _bool_option(options, "parquet.enable.dictionary", True)
            else False,
            store_decimal_as_integer=True,
            use_deprecated_int96_timestamps=any(_has_fine_timestamp(f.type) for f in self.fields),
            write_time_adjusted_to_utc=True,
            store_schema=False,
            **extra,
        )


def shredding_shapes(options: dict[str, str]) -> dict:
    """VARIANT column name -> the shape `variant.shreddingSchema` (or its fallback key
    `parquet.variant.shreddingSchema`) gives it: a JSON Paimon ROW type, one field per column."""
    raw = options.get("variant.shreddingSchema") or options.get("parquet.variant.shreddingSchema")
    if not raw:
        return {}
    try:
        row = parse_type(json.loads(raw))
    except (ValueError, TarnError) as exc:
        raise InvalidOption(f"option 'variant.shreddingSchema': not a Paimon ROW type in JSON: {exc}") from None
    if row.root != "ROW":
        raise InvalidOption("option 'variant.shreddingSchema': must be a ROW type with one field per VARIANT column")
    for f in row.fields:
        _check_shape(f.type, f.name)
    return {f.name: f.type for f in row.fields}


def _check_shape(shape: DataType, path: str) -> None:
    if shape.root not in variant.SHREDDABLE:
        raise InvalidOption(f"option 'variant.shreddingSchema': field '{path}' has type {shape.root}; Paimon "
                            f"shreds {', '.join(variant.SHREDDABLE)}")
    for f in shape.fields or ():
        _check_shape(f.type, f"{path}.{f.name}")


def _shredded(table: pa.Table, fields: list[DataField], options: dict[str, str]) -> pa.Table:
    """Top-level VARIANT columns the shredding schema names, in their shredded layout."""
    shapes = shredding_shapes(options)
    if not shapes:
        return table
    for i, f in enumerate(fields):
        shape = shapes.get(f.name)
        if shape is None or f.type.root != "VARIANT":
            continue
        column = table.column(i).combine_chunks()
        shredded = variant.shred_column(column, shape, to_arrow_type)
        field = pa.field(f.name, shredded.type, f.type.nullable, metadata={FIELD_ID_KEY: str(f.id).encode()})
        table = table.set_column(i, field, shredded)
    return table


DICTIONARY_SAMPLE_ROWS = 1024
DICTIONARY_MAX_DISTINCT_RATIO = 0.5
KEY_PREFIX = "_KEY_"


def _dictionary_columns(table: pa.Table) -> list[str]:
    """Top-level columns worth dictionary encoding: those whose leading sample repeats values.

    A dictionary on near-unique columns (keys, sequence numbers, random ids) only costs time:
    the writer builds it, overflows it and falls back to plain pages anyway. A key column
    `_KEY_x` holds the same values as its value column `x`: one look decides both."""
    sample = table.slice(0, DICTIONARY_SAMPLE_ROWS)
    decided: dict[str, bool] = {}
    for name, column in zip(table.column_names, sample.columns):
        twin = name[len(KEY_PREFIX):] if name.startswith(KEY_PREFIX) else KEY_PREFIX + name
        if twin in decided and sample.schema.field(twin).type == column.type:
            decided[name] = decided[twin]
        elif isinstance(column.type, pa.ExtensionType):  # GEOMETRY / GEOGRAPHY: plain, as Java's
            decided[name] = False
        elif pa.types.is_nested(column.type) or len(column) == 0:
            decided[name] = True
        else:
            decided[name] = pc.count_distinct(column).as_py() <= DICTIONARY_MAX_DISTINCT_RATIO * len(column)
    return [name for name, chosen in decided.items() if chosen]


def _write_orc(out, data: pa.Table, fields: list[DataField], options: dict[str, str]) -> None:
    import pyarrow.orc as orc  # imported here: only ORC tables need it

    schema = pa.schema([pa.field(f.name, _orc_type(f.type), f.type.nullable) for f in fields])
    table = _conform(data, fields, schema)
    orc.write_table(table, out, compression=_orc_codec(_compression(options)))


# --- Avro ------------------------------------------------------------------------------------


def _nullable(avro_type, nullable: bool):
    return ["null", avro_type] if nullable else avro_type


def _avro_type(t: DataType, row_name: str):
    """Paimon's Avro schema of `t`; `row_name` names a record built for it."""
    root = t.root
    simple = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int",
              "BIGINT": "long", "FLOAT": "float", "DOUBLE": "double", "CHAR": "string",
              "VARCHAR": "string", "BINARY": "bytes", "VARBINARY": "bytes"}
    if root in simple:
        body = simple[root]
    elif root == "DATE":
        body = {"type": "int", "logicalType": "date"}
    elif root == "TIME":
        if t.precision > 3:
            raise SchemaMismatch(f"Avro data files do not support {t} (precision above 3)")
        body = {"type": "int", "logicalType": "time-millis"}
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if t.precision > 6:
            raise SchemaMismatch(f"Avro data files do not support {t} (precision above 6)")
        unit = "millis" if t.precision <= 3 else "micros"
        prefix = "timestamp" if root == "TIMESTAMP" else "local-timestamp"
        body = {"type": "long", "logicalType": f"{prefix}-{unit}"}
    elif root == "DECIMAL":
        body = {"type": "bytes", "logicalType": "decimal", "precision": t.precision,
                "scale": t.scale}
    elif root == "ROW":
        body = _avro_record(t.fields, row_name)
    elif root == "ARRAY":
        body = {"type": "array", "items": _avro_type(t.element, row_name)}
    elif root in ("MAP", "MULTISET"):
        key_type, value_type = _multiset_parts(t)
        if key_type.root in ("CHAR", "VARCHAR"):
            body = {"type": "map", "values": _avro_type(value_type, row_name)}
        else:
            value_field = {"name": "value", "type": _avro_type(value_type, row_name + "_value")}
            if value_type.nullable:
                value_field["default"] = None
            entry = {"type": "record", "name": row_name, "fields": [
                {"name": "key", "type": _avro_type(key_type, row_name + "_key")}, value_field]}
            body = {"type": "array", "items": entry, "logicalType": "map"}
    else:
        raise SchemaMismatch(f"Avro data files do not support {t}")
    return _nullable(body, t.nullable)


def _avro_record(fields, row_name: str) -> dict:
    avro_fields = []
    for f in fields:
        entry = {"name": f.name, "type": _avro_type(f.type, f"{row_name}_{f.name}")}
        if f.type.nullable:
            entry["default"] = None
        avro_fields.append(entry)
    return {"type": "record", "name": row_name, "fields": avro_fields}


def avro_schema(fields: list[DataField]) -> dict:
    """The Avro schema Java Paimon writes for a data file with these columns."""
    return _avro_record(fields, AVRO_RECORD_NAME)


def _avro_arrow_type(t: DataType) -> pa.DataType:
    """Arrow type whose Python values fastavro writes directly (temporal values as ints)."""
    root = t.root
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return pa.int64()
    if root in ("DATE", "TIME"):
        return pa.int32()
    if root == "ARRAY":
        return pa.list_(pa.field("element", _avro_arrow_type(t.element), t.element.nullable))
    if root in ("MAP", "MULTISET"):
        key_type, value_type = _multiset_parts(t)
        return pa.map_(pa.field("key", _avro_arrow_type(key_type), False),
                       pa.field("value", _avro_arrow_type(value_type), value_type.nullable))
    if root == "ROW":
        return pa.struct([pa.field(f.name, _avro_arrow_type(f.type), f.type.nullable)
                          for f in t.fields])
    return to_arrow_type(t)


def _has_map(t: DataType) -> bool:
    if t.root in ("MAP", "MULTISET"):
        return True
    children = [t.element, t.key, t.value] + [f.type for f in t.fields or ()]
    return any(_has_map(c) for c in children if c is not None)


def _avro_value_converter(t: DataType):
    """Python-value fix-up for fastavro: Arrow maps (lists of pairs) -> dict / key-value records."""
    root = t.root
    if not _has_map(t):
        return None
    if root == "ARRAY":
        inner = _avro_value_converter(t.element)
        return lambda v: None if v is None else [inner(x) for x in v]
    if root == "ROW":
        inner = {f.name: _avro_value_converter(f.type) for f in t.fields}
        inner = {k: c for k, c in inner.items() if c is not None}
        return lambda v: None if v is None else {**v, **{k: c(v[k]) for k, c in inner.items()}}
    key_type, value_type = _multiset_parts(t)
    convert_key = _avro_value_converter(key_type) or (lambda x: x)
    convert_value = _avro_value_converter(value_type) or (lambda x: x)
    if key_type.root in ("CHAR", "VARCHAR"):
        return lambda v: None if v is None else {k: convert_value(x) for k, x in v}
    return lambda v: None if v is None else [
        {"key": convert_key(k), "value": convert_value(x)} for k, x in v]


def _avro_codec(options: dict[str, str]) -> tuple[str, int | None]:
    compression = _compression(options)
    codec = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}.get(compression,
                                                                             compression)
    if codec not in ("null", "deflate", "snappy", "bzip2", "xz", "zstandard"):
        raise InvalidOption(f"file.compression: {compression!r} is not an Avro codec")
    return codec, _zstd_level(options) if codec == "zstandard" else None


def _write_avro(out, data: pa.Table, fields: list[DataField], options: dict[str, str]) -> None:
    schema = pa.schema([pa.field(f.name, _avro_arrow_type(f.type), f.type.nullable)
                        for f in fields])
    parsed = fastavro.parse_schema(avro_schema(fields))  # raises for unsupported types first
    table = _conform(data, fields, schema)
    names = [f.name for f in fields]
    columns = []
    for i, f in enumerate(fields):
        values = table.column(i).to_pylist()
        convert = _avro_value_converter(f.type)
        columns.append([convert(v) for v in values] if convert else values)
    records = [dict(zip(names, row)) for row in zip(*columns)]
    codec, level = _avro_codec(options)
    buffer = io.BytesIO()
    fastavro.writer(buffer, parsed, records, codec=codec, codec_compression_level=level,
                    sync_interval=avro_container.SYNC_INTERVAL, validator=False)
    out.write(buffer.getvalue())


# ---------------------------------------------------------------------------------------------
# Readers


def read_data_file(file_io, path: str, file_format: str, fields: list[DataField] | None = None,
                   columns: list[str] | None = None) -> pa.Table:
    """Read a data file into Arrow.

    With `fields`, columns get the logical Arrow types and nullability of those fields (matched by
    name); `columns` selects and orders the columns (default: the names of `fields`, or all)."""
    fmt = _check_format(file_format)
    if columns is None and fields is not None:
        columns = [f.name for f in fields]
    try:
        source = file_io.open_input_file(path)
    except FileNotFoundError as exc:
        raise FileMissing(f"data file not found: {path}") from exc
    reader = {"parquet": _read_parquet, "orc": _read_orc, "avro": _read_avro}[fmt]
    try:
        with source:
            table = reader(source, path, fields, columns)
        if columns is not None:
            table = table.select(columns)
    except TarnError:
        raise
    except (pa.ArrowException, OSError, ValueError, EOFError, KeyError, TypeError) as exc:
        raise read_error(file_io, path, fmt, exc) from exc
    if fields is None:
        return table
    return _to_logical(table, fields, path)


def iter_data_file(file_io, path: str, file_format: str, fields: list[DataField],
                   batch_rows: int = 131072) -> Iterator[pa.Table]:
    """Read a data file in tables of at most `batch_rows` rows (parquet streams row groups /
    batches from disk; orc and avro are read whole and sliced), typed like `read_data_file`."""
    fmt = _check_format(file_format)
    if fmt != "parquet":
        table = read_data_file(file_io, path, fmt, fields)
        for start in range(0, table.num_rows, batch_rows):
            yield table.slice(start, batch_rows)
        return
    columns = [f.name for f in fields]
    try:
        source = file_io.open_input_file(path)
    except FileNotFoundError as exc:
        raise FileMissing(f"data file not found: {path}") from exc
    with source:
        try:
            parquet_file = pq.ParquetFile(source, coerce_int96_timestamp_unit="ns")
            _check_columns(columns, parquet_file.schema_arrow.names, path)
            batches = parquet_file.iter_batches(batch_size=batch_rows, columns=columns)
            for batch in batches:
                yield _to_logical(pa.Table.from_batches([batch]).select(columns), fields, path)
        except TarnError:
            raise
        except (pa.ArrowException, OSError, ValueError, EOFError, KeyError, TypeError) as exc:
            raise read_error(file_io, path, "parquet", exc) from exc


# how a store's own failure reads in pyarrow's messages (parse failures carry none of these)
STORAGE_SIGNS = ("AWS Error", "curlCode", "google::cloud")


def read_error(file_io, path: str, fmt: str, exc: BaseException) -> TarnError:
    """What a failed read of a data file was, naming the file: FileMissing (it is gone),
    StorageError (the store failed), else CorruptFile (its bytes do not parse). pyarrow raises
    OSError for some parse failures too (a bad thrift footer, corrupt compressed pages): an
    OSError without a store's signature is settled by looking the file up."""
    if isinstance(exc, FileNotFoundError) or any(sign in str(exc) for sign in GONE):
        return FileMissing(f"data file not found: {path} ({exc})")
    corrupt = CorruptFile(f"cannot read {fmt} data file {path}: {exc}")
    if not isinstance(exc, OSError):
        return corrupt
    store = getattr(file_io, "store", "file")
    storage = StorageError(f"reading {fmt} data file {path} failed on the {store} store: {exc}")
    if exc.errno is not None or isinstance(exc, (ConnectionError, TimeoutError)) \
            or any(sign in str(exc) for sign in STORAGE_SIGNS):
        return storage
    try:
        info = file_io.info(path)
    except FileMissing as missing:
        return missing
    except Exception:  # noqa: BLE001 - the store fails now too: not the file's fault
        return storage
    if info.type == pafs.FileType.NotFound:
        return FileMissing(f"data file not found: {path} ({exc})")
    return corrupt


def _check_columns(columns: list[str] | None, present: list[str], path: str) -> None:
    absent = [c for c in columns or () if c not in present]
    if absent:
        raise CorruptFile(f"data file {path} has no column(s) {absent}")


# statistics a row-group test may use: plain comparable values (others are left out)
_STATS_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "VARCHAR", "CHAR", "DATE", "BOOLEAN")

RowGroupTest = Callable[[dict, int], bool]  # ({column: (min, max, null count)}, rows) -> may match


@dataclass(frozen=True)
class RowGroup:
    """One row group of a parquet file: its index and the file positions of its rows."""

    index: int
    start: int
    rows: int


def parquet_row_groups(file_io, path: str, fields: list[DataField],
                       may_match: RowGroupTest | None = None) -> tuple[pq.FileMetaData, list[RowGroup]]:
    """The footer of a parquet data file and its row groups whose statistics `may_match`
    (every row group without a test)."""
    footer = _parquet_footer(file_io, path)
    _check_columns([f.name for f in fields], footer.schema.to_arrow_schema().names, path)
    tested = {f.name: f for f in fields if f.type.root in _STATS_ROOTS}
    index = {footer.schema.column(i).path: i for i in range(footer.num_columns)} if may_match else {}
    groups, start = [], 0
    for at in range(footer.num_row_groups):
        group = footer.row_group(at)
        if may_match is None or may_match(_group_stats(group, tested, index), group.num_rows):
            groups.append(RowGroup(at, start, group.num_rows))
        start += group.num_rows
    return footer, groups


def _parquet_footer(file_io, path: str) -> pq.FileMetaData:
    try:
        source = file_io.open_input_file(path)
    except FileNotFoundError as exc:
        raise FileMissing(f"data file not found: {path}") from exc
    try:
        with source:
            return pq.read_metadata(source)
    except TarnError:
        raise
    except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
        raise read_error(file_io, path, "parquet", exc) from exc


def read_parquet_groups(file_io, path: str, fields: list[DataField], groups: list[int],
                        footer: pq.FileMetaData | None = None, use_threads: bool = True) -> pa.Table:
    """Row groups `groups` of a parquet data file (`footer`: its metadata, if already read),
    typed like `read_data_file`; `use_threads=False` decodes them on the calling thread."""
    columns = [f.name for f in fields]
    try:
        source = file_io.open_input_file(path)
    except FileNotFoundError as exc:
        raise FileMissing(f"data file not found: {path}") from exc
    try:
        with source:
            parquet_file = pq.ParquetFile(source, metadata=footer, coerce_int96_timestamp_unit="ns",
                                          pre_buffer=True)
            _check_columns(columns, parquet_file.schema_arrow.names, path)
            table = parquet_file.read_row_groups(groups, columns=columns, use_threads=use_threads) \
                if groups else parquet_file.schema_arrow.empty_table().select(columns)
    except TarnError:
        raise
    except (pa.ArrowException, OSError, ValueError, EOFError, KeyError, TypeError) as exc:
        raise read_error(file_io, path, "parquet", exc) from exc
    return _to_logical(table.select(columns), fields, path)


def read_parquet_files_together(file_io, paths: list[str], row_counts: list[int],
                                fields: list[DataField]) -> pa.Table | None:
    """Several small parquet data files of one schema read by one Arrow dataset scan (its
    threads decode them in parallel without Python between files): their rows in the order of
    `paths`, each file's `row_counts` rows after the previous file's; typed like
    `read_data_file`. None when the files do not read as one dataset (other physical types, a
    row count that does not add up): the caller reads them one by one, and any error is then
    reported for its file."""
    import pyarrow.dataset as ds  # only multi-file scans need it

    columns = [f.name for f in fields]
    try:
        parquet = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="ns"))
        table = ds.dataset(paths, format=parquet, filesystem=file_io.fs).to_table(columns=columns)
    except (pa.ArrowException, OSError, ValueError, KeyError, TypeError):
        return None
    if table.num_rows != sum(row_counts):
        return None
    return _to_logical(table, fields, paths[0])


def _group_stats(group, tested: dict, index: dict) -> dict:
    stats = {}
    for name, f in tested.items():
        at = index.get(name)
        if at is None:
            continue
        column = group.column(at).statistics
        if column is None or not column.has_min_max:
            continue
        low, high = column.min, column.max
        if f.type.root == "DATE" and not isinstance(low, dt.date):
            continue
        if isinstance(low, bytes):
            continue  # undecoded binary statistics: leave the column out
        stats[name] = (low, high, column.null_count if column.has_null_count else None)
    return stats


def _read_parquet(source, path: str, fields, columns: list[str] | None) -> pa.Table:
    parquet_file = pq.ParquetFile(source, coerce_int96_timestamp_unit="ns")
    if columns is not None:
        _check_columns(columns, parquet_file.schema_arrow.names, path)
    if parquet_file.metadata.num_row_groups > 1:
        # the dataset reader decodes row groups in parallel (faster than ParquetFile.read)
        return pq.read_table(source, columns=columns, coerce_int96_timestamp_unit="ns")
    return parquet_file.read(columns=columns)  # one footer parse: a small file's read costs half


def _read_orc(source, path: str, fields, columns: list[str] | None) -> pa.Table:
    import pyarrow.orc as orc  # imported here: only ORC tables need it

    orc_file = orc.ORCFile(source)
    _check_columns(columns, orc_file.schema.names, path)
    return orc_file.read(columns=columns)


def _read_avro(source, path: str, fields, columns: list[str] | None) -> pa.Table:
    reader = fastavro.reader(io.BytesIO(source.read()))
    names = [f["name"] for f in reader.writer_schema["fields"]]
    _check_columns(columns, names, path)
    wanted = columns if columns is not None else names
    by_name = {f.name: f for f in fields or ()}
    records = list(reader)
    arrays = []
    for name in wanted:
        values = [r[name] for r in records]
        f = by_name.get(name)
        arrays.append(pa.array(values, type=_millis_time_type(f.type)) if f else pa.array(values))
    return pa.Table.from_arrays(arrays, names=wanted)


def _to_logical(table: pa.Table, fields: list[DataField], path: str) -> pa.Table:
    """`table` cast to the Arrow types and nullability of `fields` (matched by name)."""
    by_name = {f.name: f for f in fields}
    out_fields, out_columns = [], []
    for name, column in zip(table.column_names, table.columns):
        f = by_name.get(name)
        if f is None:
            out_fields.append(table.schema.field(name))
            out_columns.append(column)
            continue
        target = pa.field(name, to_arrow_type(f.type), f.type.nullable,
                          metadata={FIELD_ID_KEY: str(f.id).encode()})
        out_columns.append(_cast_read(column, f.type, target.type, name, path))
        out_fields.append(target)
    return pa.Table.from_arrays(out_columns, schema=pa.schema(out_fields))


def _cast_read(column, t: DataType, target: pa.DataType, name: str, path: str):
    """A file column cast to its logical type (via millisecond TIME for ORC's int TIME)."""
    if column.type.equals(target):
        return column
    if t.root == "VARIANT":  # unshredded (any child order) or shredded (`typed_value`)
        try:
            return pa.chunked_array([variant.storage_column(c) for c in column.chunks], type=target)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise CorruptFile(f"data file {path}: VARIANT column {name!r} cannot be read: {exc}") from exc
    try:
        if not column.type.equals(_millis_time_type(t)):
            column = column.cast(_millis_time_type(t), safe=False)
        return column.cast(target, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptFile(f"data file {path}: column {name!r} of type {column.type} cannot be "
                          f"read as {t}: {exc}") from exc
