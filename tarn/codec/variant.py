"""The Parquet variant binary encoding (Paimon's VARIANT, Spark 4's VariantType): a value is
two byte strings, `metadata` (a dictionary of object keys) and `value` (the encoded value
whose objects name their keys by dictionary index).

metadata: a header byte (version 1 in bits 0-3, bit 4 set when the keys are sorted, bits 6-7
the byte width of offsets minus one), the number of keys, then key count + 1 offsets into
the UTF-8 key bytes that follow (all little-endian of that width).

value: a header byte whose bits 0-1 say the basic type and bits 2-7 carry its detail:
- 0 primitive, detail = type id: 0 null, 1 true, 2 false, 3/4/5/6 int8/16/32/64, 7 double,
  8/9/10 decimal4/8/16 (a scale byte then the unscaled integer), 11 date (int32 days),
  12 timestamp (int64 microseconds, UTC), 13 timestamp without time zone, 14 float,
  15 binary and 16 string (a 4-byte length then the bytes), 17 time (microseconds of the
  day), 18/19 timestamps in nanoseconds (UTC / without zone), 20 uuid (16 bytes, big-endian);
- 1 short string, detail = its UTF-8 length (up to 63), the bytes follow;
- 2 object, detail = bit 4 "large" (4-byte element count, else 1), bits 2-3 key-id width - 1,
  bits 0-1 offset width - 1; then the count, the key ids in key-name order, count + 1 value
  offsets, the values;
- 3 array, detail = bit 2 "large", bits 0-1 offset width - 1; the count, count + 1 offsets,
  the elements.
Integers are little-endian. Everything here follows the spec as Spark and Paimon write it.

Python values: None, bool, int, float, Decimal, str, bytes, date, datetime (aware: timestamp,
naive: without zone), UUID, dict (str keys) and list/tuple, nested freely. Python ints pick the
narrowest width (beyond 64 bits: a decimal); Decimals the narrowest decimal that holds their
precision. Times of day and nanosecond timestamps (types 17-19) are read but never written:
Paimon 2.0's readers reject them. The key dictionary is written sorted (bit 4 set), which every
reader accepts; Paimon and pypaimon write theirs in first-seen order.

This is the one per-value codec of tarn (a documented exception to "no Python loop per row":
a variant's shape differs value by value). `encode_values` / `decode_values` work a column at
a time; bench/bench_variant.py measures them against json.dumps / json.loads.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
import uuid
from decimal import Decimal

import pyarrow as pa

from tarn.errors import InvalidArgument
from tarn.types import VARIANT_ARROW

PRIMITIVE, SHORT_STRING, OBJECT, ARRAY = 0, 1, 2, 3
NULL, TRUE, FALSE, INT8, INT16, INT32, INT64, DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
DECIMAL4, DECIMAL8, DECIMAL16, DATE, TIMESTAMP, TIMESTAMP_NTZ, FLOAT, BINARY, STRING = range(8, 17)
TIME, TIMESTAMP_NANOS, TIMESTAMP_NANOS_NTZ, UUID = 17, 18, 19, 20
VERSION = 1
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_DAY = dt.date(1970, 1, 1)
_INT_RANGES = ((INT8, 1, 1 << 7), (INT16, 2, 1 << 15), (INT32, 4, 1 << 31), (INT64, 8, 1 << 63))
_DECIMALS = ((DECIMAL4, 4, 9), (DECIMAL8, 8, 18), (DECIMAL16, 16, 38))
EMPTY_METADATA = bytes([VERSION | 0x10, 0, 0])  # no keys


def _width(n: int) -> int:
    """Bytes needed for unsigned `n` (1 to 4)."""
    return 1 if n < 0x100 else 2 if n < 0x10000 else 3 if n < 0x1000000 else 4


# ---------------------------------------------------------------------------------------------
# encoding


class _Encoder:
    """Encodes Python values against one key dictionary (collected first, then sorted)."""

    def __init__(self, keys: list[str]):
        self.ids = {k: i for i, k in enumerate(keys)}

    def value(self, v) -> bytes:
        if v is None:
            return b"\x00"
        if v is True:
            return bytes([TRUE << 2])
        if v is False:
            return bytes([FALSE << 2])
        if isinstance(v, int):
            return self._int(v)
        if isinstance(v, float):
            return bytes([DOUBLE << 2]) + struct.pack("<d", v)
        if isinstance(v, str):
            data = v.encode("utf-8")
            if len(data) < 64:
                return bytes([(len(data) << 2) | SHORT_STRING]) + data
            return bytes([STRING << 2]) + struct.pack("<I", len(data)) + data
        if isinstance(v, dict):
            return self._object(v)
        if isinstance(v, (list, tuple)):
            return self._array(v)
        if isinstance(v, Decimal):
            return _decimal(v)
        if isinstance(v, (bytes, bytearray, memoryview)):
            data = bytes(v)
            return bytes([BINARY << 2]) + struct.pack("<I", len(data)) + data
        if isinstance(v, dt.datetime):
            if v.tzinfo is None:
                micros = (v - EPOCH) // dt.timedelta(microseconds=1)
                return bytes([TIMESTAMP_NTZ << 2]) + struct.pack("<q", micros)
            micros = (v - EPOCH_UTC) // dt.timedelta(microseconds=1)
            return bytes([TIMESTAMP << 2]) + struct.pack("<q", micros)
        if isinstance(v, dt.date):
            return bytes([DATE << 2]) + struct.pack("<i", (v - EPOCH_DAY).days)
        if isinstance(v, dt.time):  # type 17 exists in the spec, but Paimon's readers reject it
            raise InvalidArgument(f"a Paimon VARIANT cannot hold a time of day ({v}); store it as a string")
        if isinstance(v, uuid.UUID):
            return bytes([UUID << 2]) + v.bytes
        if hasattr(v, "item") and callable(v.item):  # numpy scalars
            return self.value(v.item())
        raise InvalidArgument(f"a VARIANT cannot hold a {type(v).__name__} ({v!r})")

    def _int(self, v: int) -> bytes:
        for type_id, size, bound in _INT_RANGES:
            if -bound <= v < bound:
                return bytes([type_id << 2]) + v.to_bytes(size, "little", signed=True)
        return _decimal(Decimal(v))

    def _object(self, obj: dict) -> bytes:
        items = []
        for k, v in obj.items():
            if not isinstance(k, str):
                raise InvalidArgument(f"a VARIANT object's keys are strings, got {k!r}")
            items.append((k, self.value(v)))
        items.sort(key=lambda kv: kv[0])
        return _container(OBJECT, [self.ids[k] for k, _ in items], [b for _, b in items], len(self.ids))

    def _array(self, values) -> bytes:
        return _container(ARRAY, None, [self.value(v) for v in values], 0)


def _container(kind: int, ids, parts: list[bytes], dictionary_size: int) -> bytes:
    count = len(parts)
    total = sum(len(p) for p in parts)
    offset_size = _width(total)
    large = count > 0xFF
    out = bytearray()
    if kind == OBJECT:
        id_size = _width(max(dictionary_size - 1, 0))
        out.append(((large << 4 | (id_size - 1) << 2 | (offset_size - 1)) << 2) | OBJECT)
    else:
        out.append(((large << 2 | (offset_size - 1)) << 2) | ARRAY)
    out += count.to_bytes(4 if large else 1, "little")
    if ids is not None:
        for i in ids:
            out += i.to_bytes(id_size, "little")
    return _with_offsets(out, parts, offset_size)


def _with_offsets(out: bytearray, parts: list[bytes], size: int) -> bytes:
    """`out`, then len(parts) + 1 little-endian offsets of `size` bytes, then the parts."""
    position = 0
    for p in parts:
        out += position.to_bytes(size, "little")
        position += len(p)
    out += position.to_bytes(size, "little")
    for p in parts:
        out += p
    return bytes(out)


def _decimal(v: Decimal) -> bytes:
    if not v.is_finite():
        raise InvalidArgument(f"a VARIANT decimal must be finite, got {v}")
    sign, digits, exponent = v.as_tuple()
    scale = max(0, -exponent)
    unscaled = int(v.scaleb(scale))
    precision = max(len(str(abs(unscaled))), scale)
    if scale > 38 or precision > 38:
        return bytes([DOUBLE << 2]) + struct.pack("<d", float(v))
    for type_id, size, most in _DECIMALS:
        if precision <= most:
            return bytes([type_id << 2, scale]) + unscaled.to_bytes(size, "little", signed=True)
    raise AssertionError(precision)


def _keys_of(v, into: set) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            into.add(k)
            _keys_of(x, into)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _keys_of(x, into)


def metadata_of(keys: list[str]) -> bytes:
    """The metadata of a sorted key dictionary."""
    data = [k.encode("utf-8") for k in keys]
    total = sum(len(d) for d in data)
    size = _width(max(total, len(keys)))
    out = bytearray([VERSION | 0x10 | (size - 1) << 6])
    out += len(keys).to_bytes(size, "little")
    return _with_offsets(out, data, size)


def encode(v) -> tuple[bytes, bytes]:
    """One Python value as (value, metadata)."""
    keys: set = set()
    _keys_of(v, keys)
    ordered = sorted(keys)
    if not ordered:
        return _Encoder([]).value(v), EMPTY_METADATA
    return _Encoder(ordered).value(v), metadata_of(ordered)


# ---------------------------------------------------------------------------------------------
# decoding


def keys_of_metadata(metadata: bytes) -> list[str]:
    """The key dictionary of a metadata byte string."""
    header = metadata[0]
    if header & 0x0F != VERSION:
        raise ValueError(f"variant metadata version {header & 0x0F} is not 1")
    size = (header >> 6) + 1
    count = int.from_bytes(metadata[1:1 + size], "little")
    start = 1 + size
    offsets = [int.from_bytes(metadata[start + i * size:start + (i + 1) * size], "little") for i in range(count + 1)]
    base = start + (count + 1) * size
    return [metadata[base + offsets[i]:base + offsets[i + 1]].decode("utf-8") for i in range(count)]


def decode(value: bytes, metadata: bytes):
    """One (value, metadata) pair as a Python value."""
    return _decode(memoryview(value), 0, keys_of_metadata(metadata))


def _decode(buf: memoryview, pos: int, keys: list[str]):
    header = buf[pos]
    basic, detail = header & 0x03, header >> 2
    if basic == SHORT_STRING:
        return bytes(buf[pos + 1:pos + 1 + detail]).decode("utf-8")
    if basic == OBJECT:
        large, id_size, offset_size = detail >> 4 & 1, (detail >> 2 & 3) + 1, (detail & 3) + 1
        count_size = 4 if large else 1
        count = int.from_bytes(buf[pos + 1:pos + 1 + count_size], "little")
        ids_at = pos + 1 + count_size
        offsets_at = ids_at + count * id_size
        values_at = offsets_at + (count + 1) * offset_size
        out = {}
        for i in range(count):
            key = keys[int.from_bytes(buf[ids_at + i * id_size:ids_at + (i + 1) * id_size], "little")]
            offset = int.from_bytes(buf[offsets_at + i * offset_size:offsets_at + (i + 1) * offset_size], "little")
            out[key] = _decode(buf, values_at + offset, keys)
        return out
    if basic == ARRAY:
        large, offset_size = detail >> 2 & 1, (detail & 3) + 1
        count_size = 4 if large else 1
        count = int.from_bytes(buf[pos + 1:pos + 1 + count_size], "little")
        offsets_at = pos + 1 + count_size
        values_at = offsets_at + (count + 1) * offset_size
        return [_decode(buf, values_at + int.from_bytes(
            buf[offsets_at + i * offset_size:offsets_at + (i + 1) * offset_size], "little"), keys)
            for i in range(count)]
    return _primitive(buf, pos + 1, detail)


def _primitive(buf: memoryview, at: int, type_id: int):
    if type_id == NULL:
        return None
    if type_id in (TRUE, FALSE):
        return type_id == TRUE
    for int_type, size, _ in _INT_RANGES:
        if type_id == int_type:
            return int.from_bytes(buf[at:at + size], "little", signed=True)
    if type_id == DOUBLE:
        return struct.unpack_from("<d", buf, at)[0]
    if type_id == FLOAT:
        return struct.unpack_from("<f", buf, at)[0]
    for decimal_type, size, _ in _DECIMALS:
        if type_id == decimal_type:
            scale = buf[at]
            return Decimal(int.from_bytes(buf[at + 1:at + 1 + size], "little", signed=True)).scaleb(-scale)
    if type_id in (BINARY, STRING):
        length = struct.unpack_from("<I", buf, at)[0]
        data = bytes(buf[at + 4:at + 4 + length])
        return data.decode("utf-8") if type_id == STRING else data
    if type_id == DATE:
        return EPOCH_DAY + dt.timedelta(days=struct.unpack_from("<i", buf, at)[0])
    if type_id in (TIMESTAMP, TIMESTAMP_NTZ):
        micros = struct.unpack_from("<q", buf, at)[0]
        return (EPOCH_UTC if type_id == TIMESTAMP else EPOCH) + dt.timedelta(microseconds=micros)
    if type_id in (TIMESTAMP_NANOS, TIMESTAMP_NANOS_NTZ):
        nanos = struct.unpack_from("<q", buf, at)[0]
        base = EPOCH_UTC if type_id == TIMESTAMP_NANOS else EPOCH
        return base + dt.timedelta(microseconds=nanos // 1000)
    if type_id == TIME:
        micros = struct.unpack_from("<q", buf, at)[0]
        seconds, micro = divmod(micros, 1_000_000)
        return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, micro)
    if type_id == UUID:
        return uuid.UUID(bytes=bytes(buf[at:at + 16]))
    raise ValueError(f"unknown variant primitive type {type_id}")


# ---------------------------------------------------------------------------------------------
# columns (Arrow struct<value: binary, metadata: binary>; a null stays a null struct)


def _column(pairs: list) -> pa.StructArray:
    mask = pa.array([p is None for p in pairs])
    value = pa.array([b"" if p is None else p[0] for p in pairs], pa.binary())
    metadata = pa.array([b"" if p is None else p[1] for p in pairs], pa.binary())
    return pa.StructArray.from_arrays([value, metadata], fields=list(VARIANT_ARROW), mask=mask)


def python_column(values) -> pa.StructArray:
    """Python values (None: a null) as a VARIANT column."""
    return _column([None if v is None else encode(v) for v in values])


def json_column(texts) -> pa.StructArray:
    """JSON texts (None: a null) as a VARIANT column."""
    return _column([None if t is None else from_json(t) for t in texts])


def _pairs(column):
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    values = column.field("value").to_pylist()
    metadata = column.field("metadata").to_pylist()
    valid = column.is_valid().to_pylist()
    return zip(valid, values, metadata)


def storage_column(column: pa.StructArray) -> pa.StructArray:
    """A VARIANT column as a data file holds it, in VARIANT_ARROW form: the two binaries in
    either order, or a shredded group (`metadata`, `value`, `typed_value`: the parts of each
    value stored as typed columns), which is assembled back into encoded values."""
    names = {column.type.field(i).name for i in range(column.type.num_fields)}
    if "typed_value" not in names:
        value, metadata = column.field("value").cast(pa.binary()), column.field("metadata").cast(pa.binary())
        return pa.StructArray.from_arrays([value, metadata], fields=list(VARIANT_ARROW), mask=column.is_null())
    rows = column.to_pylist()
    return _column([None if row is None else _assembled(row) for row in rows])


_MISSING = object()


def _assembled(row: dict) -> tuple[bytes, bytes]:
    keys = keys_of_metadata(row["metadata"])
    found = _shredded(keys, row.get("value"), row.get("typed_value"))
    return encode(None if found is _MISSING else found)


def _shredded(keys: list[str], value, typed):
    """One shredded value as Python (`_MISSING` when neither part holds it: an absent key)."""
    if typed is None:
        return _MISSING if value is None else _decode(memoryview(value), 0, keys)
    if isinstance(typed, dict):  # an object: the typed keys, plus the rest left in `value`
        out = _decode(memoryview(value), 0, keys) if value is not None else {}
        if not isinstance(out, dict):
            raise ValueError("a shredded object's residual value is not an object")
        for key, part in typed.items():
            found = _shredded(keys, part.get("value"), part.get("typed_value"))
            if found is not _MISSING:
                out[key] = found
        return out
    if isinstance(typed, list):
        return [None if e is None else _none_if_missing(_shredded(keys, e.get("value"), e.get("typed_value")))
                for e in typed]
    return typed  # a typed scalar


def _none_if_missing(v):
    return None if v is _MISSING else v


def column_to_python(column) -> list:
    """A VARIANT column's values as Python objects (None for nulls)."""
    return [decode(v, m) if ok else None for ok, v, m in _pairs(column)]


def column_to_json(column) -> pa.StringArray:
    """A VARIANT column as JSON texts (nulls stay null)."""
    return pa.array([to_json(v, m) if ok else None for ok, v, m in _pairs(column)], pa.string())


# ---------------------------------------------------------------------------------------------
# shredding (writing): Paimon's `variant.shreddingSchema`, a ROW of the shapes to store typed

SHREDDABLE = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "VARCHAR", "CHAR", "DECIMAL",
              "ROW")
_INT_BOUNDS = {"TINYINT": 1 << 7, "SMALLINT": 1 << 15, "INT": 1 << 31, "BIGINT": 1 << 63}


def shredded_type(shape, arrow_of) -> pa.DataType:
    """The physical Arrow type of a VARIANT column shredded into `shape` (a tarn DataType;
    `arrow_of` maps a scalar type to Arrow): metadata, value, typed_value, as Paimon lays it out
    (field ids 0, 1, 2; inside an object each key a group of value 0 and typed_value 1)."""
    return pa.struct([_id_field("metadata", pa.binary(), False, 0), _id_field("value", pa.binary(), True, 1),
                      _id_field("typed_value", _typed_type(shape, arrow_of), True, 2)])


def _id_field(name: str, t: pa.DataType, nullable: bool, field_id: int) -> pa.Field:
    return pa.field(name, t, nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


def _typed_type(shape, arrow_of) -> pa.DataType:
    if shape.root != "ROW":
        return arrow_of(shape)
    return pa.struct([_id_field(f.name, pa.struct([_id_field("value", pa.binary(), True, 0),
                                                   _id_field("typed_value", _typed_type(f.type, arrow_of), True, 1)]),
                                False, i + 1) for i, f in enumerate(shape.fields)])


def shred_column(column: pa.StructArray, shape, arrow_of) -> pa.StructArray:
    """A VARIANT column (VARIANT_ARROW) in its shredded form for `shape`."""
    rows = []
    for ok, value, metadata in _pairs(column):
        if not ok:
            rows.append(None)
            continue
        keys = keys_of_metadata(metadata)
        encoder = _Encoder(keys)
        residual, typed = _shred(_decode(memoryview(value), 0, keys), shape, encoder)
        rows.append({"metadata": metadata, "value": residual, "typed_value": typed})
    return pa.array(rows, shredded_type(shape, arrow_of))


def _shred(v, shape, encoder: "_Encoder"):
    """(residual value bytes or None, typed value or None) of one value for `shape`."""
    if shape.root == "ROW":
        if not isinstance(v, dict):
            return encoder.value(v), None
        typed, rest = {}, dict(v)
        for f in shape.fields:
            if f.name in rest:
                inner_value, inner_typed = _shred(rest.pop(f.name), f.type, encoder)
                typed[f.name] = {"value": inner_value, "typed_value": inner_typed}
            else:
                typed[f.name] = {"value": None, "typed_value": None}  # absent
        return (encoder.value(rest) if rest else None), typed
    if _fits(v, shape):
        return None, v
    return encoder.value(v), None


def _fits(v, shape) -> bool:
    root = shape.root
    if v is None:
        return False  # a JSON null stays an encoded null (a null typed_value would mean "absent")
    if root == "BOOLEAN":
        return isinstance(v, bool)
    if root in _INT_BOUNDS:
        return isinstance(v, int) and not isinstance(v, bool) and -_INT_BOUNDS[root] <= v < _INT_BOUNDS[root]
    if root in ("FLOAT", "DOUBLE"):
        return isinstance(v, float) and (root == "DOUBLE" or struct.unpack("<f", struct.pack("<f", v))[0] == v)
    if root in ("VARCHAR", "CHAR"):
        return isinstance(v, str)
    if root == "DECIMAL":
        if not isinstance(v, Decimal) or not v.is_finite():
            return False
        exponent = v.as_tuple().exponent
        return -exponent <= shape.scale and len(str(abs(int(v.scaleb(shape.scale))))) <= shape.precision
    return False


# ---------------------------------------------------------------------------------------------
# JSON


def from_json(text: str) -> tuple[bytes, bytes]:
    """JSON text as (value, metadata): integers as integers, numbers with a fraction or an
    exponent as decimals when they fit 38 digits, else doubles (Spark's parse_json)."""
    try:
        return encode(json.loads(text, parse_float=_json_number))
    except json.JSONDecodeError as e:
        raise InvalidArgument(f"not JSON text: {e}") from None


def _json_number(text: str):
    if "e" in text or "E" in text:
        return float(text)
    value = Decimal(text)
    return value if len(value.as_tuple().digits) <= 38 else float(text)


def to_json(value: bytes, metadata: bytes) -> str:
    """A variant as JSON text (Spark's to_json of a variant: dates and timestamps as quoted
    text, binary as base64)."""
    return json.dumps(decode(value, metadata), default=_json_default, separators=(",", ":"), ensure_ascii=False)


def _json_default(v):
    if isinstance(v, Decimal):
        return _RawNumber(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, (dt.datetime, dt.date, dt.time, uuid.UUID)):
        return str(v)
    raise TypeError(type(v).__name__)


class _RawNumber(float):
    """A Decimal dumped by json as its exact digits."""

    def __new__(cls, value: Decimal):
        out = super().__new__(cls, float(value))
        out.text = format(value, "f")
        return out

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__
