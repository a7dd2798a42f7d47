"""Paimon BinaryRow bytes (FORMAT.md §5): a per-value codec and a vectorised Arrow encoder.

Layout of one row: `[header + null bits: W bytes][8-byte slot per field][variable part]`, all
multi-byte values little endian, the variable part in 8-byte chunks appended in field order.
Serialized rows (partitions, min/max keys, stats) carry a 4-byte big-endian arity prefix.

`serialize_row` / `deserialize_row` work on Python values as `pa.Scalar.as_py()` gives them.
`encode_rows` builds the row bytes of whole Arrow columns at once with numpy; its output is the
input of `murmur.hash_rows` (bucketing).
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import CorruptFile, SchemaMismatch
from tarn.types import DataType

MAX_INLINE = 7  # strings/bytes up to this length live inside their slot
COMPACT_DECIMAL_PRECISION = 18
COMPACT_TIMESTAMP_PRECISION = 3
DEFAULT_TIMESTAMP_PRECISION = 6

_U64 = (1 << 64) - 1
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_WIDE = decimal.Context(prec=100)
_STRINGS = ("CHAR", "VARCHAR")
_BYTES = ("BINARY", "VARBINARY")
_NESTED = ("ARRAY", "MAP", "MULTISET", "ROW")


def header_width(arity: int) -> int:
    """Bytes of header + null bitset of a row with `arity` fields (8 for 0..56 fields)."""
    return ((arity + 63 + 8) // 64) * 8


def _round8(n: int) -> int:
    return (n + 7) & ~7


def _pad8(data: bytes) -> bytes:
    return data + b"\0" * (_round8(len(data)) - len(data))


def _is_compact(t: DataType) -> bool:
    """Whether a DECIMAL / TIMESTAMP value fits its slot (else it uses the variable part)."""
    if t.root == "DECIMAL":
        return _precision(t) <= COMPACT_DECIMAL_PRECISION
    return _precision(t) <= COMPACT_TIMESTAMP_PRECISION


def _precision(t: DataType) -> int:
    if t.precision is not None:
        return t.precision
    return 10 if t.root == "DECIMAL" else DEFAULT_TIMESTAMP_PRECISION


def _reserved_when_null(t: DataType) -> int:
    """Variable-part bytes a NULL still reserves in a row: non-compact DECIMAL 16, TIMESTAMP 8."""
    if t.root == "DECIMAL" and not _is_compact(t):
        return 16
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not _is_compact(t):
        return 8
    return 0


def _element_width(t: DataType) -> int:
    """Bytes per element in a BinaryArray."""
    if t.root in ("BOOLEAN", "TINYINT"):
        return 1
    if t.root == "SMALLINT":
        return 2
    if t.root in ("INT", "FLOAT", "DATE", "TIME"):
        return 4
    return 8


def _multiset_value() -> DataType:
    return DataType("INT", nullable=False)


# ---------------------------------------------------------------------------------------------
# Python values -> bytes


def _unscaled(value, t: DataType) -> int:
    """The unscaled integer of a decimal value at the type's scale (HALF_UP, like Paimon)."""
    if not isinstance(value, decimal.Decimal):
        value = decimal.Decimal(str(value)) if isinstance(value, float) else decimal.Decimal(value)
    scaled = value.scaleb(t.scale or 0, _WIDE)
    return int(scaled.to_integral_value(decimal.ROUND_HALF_UP, _WIDE))


def _java_bytes(n: int) -> bytes:
    """BigInteger.toByteArray: minimal big-endian two's complement."""
    magnitude = n if n >= 0 else ~n
    return n.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def _epoch_nanos(value) -> int:
    """Nanoseconds since the epoch; a naive datetime is taken as UTC (Paimon's TIMESTAMP)."""
    if hasattr(value, "value") and hasattr(value, "nanosecond"):  # pandas.Timestamp
        return int(value.value)
    delta = value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)
    return (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _millis_of_day(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def _utf8(value, t: DataType) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise SchemaMismatch(f"value {value!r} does not fit type {t}")


def _encode_value(value, t: DataType, cursor: int) -> tuple[int, bytes]:
    """(slot content as an unsigned int, padded variable-part bytes) of a non-null value.

    `cursor` is where the variable part will start, relative to the enclosing row/array."""
    root = t.root
    try:
        if root == "BOOLEAN":
            return int(bool(value)), b""
        if root == "TINYINT":
            return int(value) & 0xFF, b""
        if root == "SMALLINT":
            return int(value) & 0xFFFF, b""
        if root == "INT":
            return int(value) & 0xFFFFFFFF, b""
        if root == "DATE":
            days = value if isinstance(value, int) else value.toordinal() - _EPOCH_DAY
            return days & 0xFFFFFFFF, b""
        if root == "TIME":
            millis = value if isinstance(value, int) else _millis_of_day(value)
            return millis & 0xFFFFFFFF, b""
        if root == "BIGINT":
            return int(value) & _U64, b""
        if root == "FLOAT":
            return struct.unpack("<I", struct.pack("<f", value))[0], b""
        if root == "DOUBLE":
            return struct.unpack("<Q", struct.pack("<d", value))[0], b""
        if root == "DECIMAL":
            unscaled = _unscaled(value, t)
            if _is_compact(t):
                return unscaled & _U64, b""
            data = _java_bytes(unscaled)
            if len(data) > 16:
                raise SchemaMismatch(f"decimal {value} does not fit type {t}")
            return (cursor << 32) | len(data), data.ljust(16, b"\0")
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            millis, nano_of_milli = divmod(_epoch_nanos(value), 10**6)
            if _is_compact(t):
                return millis & _U64, b""
            return (cursor << 32) | nano_of_milli, struct.pack("<q", millis)
        if root in _STRINGS or root in _BYTES:
            data = _utf8(value, t)
            if len(data) <= MAX_INLINE:
                return int.from_bytes(data, "little") | ((0x80 | len(data)) << 56), b""
            return (cursor << 32) | len(data), _pad8(data)
        if root in _NESTED:
            data = _nested_bytes(value, t)
            return (cursor << 32) | len(data), _pad8(data)
    except (TypeError, ValueError, AttributeError, OverflowError, decimal.InvalidOperation) as e:
        raise SchemaMismatch(f"value {value!r} does not fit type {t}: {e}") from None
    raise SchemaMismatch(f"type {t} is not supported in a BinaryRow")


def _nested_bytes(value, t: DataType) -> bytes:
    if t.root == "ARRAY":
        return _array_bytes(list(value), t.element)
    if t.root == "MAP":
        return _map_bytes(_map_items(value), t.key, t.value)
    if t.root == "MULTISET":
        return _map_bytes(_map_items(value), t.element, _multiset_value())
    if isinstance(value, dict):
        value = [value.get(f.name) for f in t.fields]
    return _row_bytes(list(value), [f.type for f in t.fields])


def _map_items(value) -> list[tuple]:
    return list(value.items()) if isinstance(value, dict) else [tuple(kv) for kv in value]


def _row_bytes(values: list, types: list[DataType]) -> bytes:
    """BinaryRow bytes (no arity prefix), RowKind +I."""
    if len(values) != len(types):
        raise SchemaMismatch(f"row has {len(values)} values for {len(types)} fields")
    width = header_width(len(types))
    fixed = bytearray(width + 8 * len(types))
    var = bytearray()
    for i, (value, t) in enumerate(zip(values, types)):
        cursor = len(fixed) + len(var)
        if value is None:
            fixed[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            reserved = _reserved_when_null(t)
            if reserved:
                slot, data = cursor << 32, b"\0" * reserved
            else:
                slot, data = 0, b""
        else:
            slot, data = _encode_value(value, t, cursor)
        fixed[width + 8 * i:width + 8 * i + 8] = slot.to_bytes(8, "little")
        var += data
    return bytes(fixed + var)


def _array_bytes(values: list, element: DataType) -> bytes:
    """BinaryArray bytes: int32 count, null bits, elements, variable part."""
    n = len(values)
    header = 4 + ((n + 31) // 32) * 4
    elem = _element_width(element)
    fixed = bytearray(_round8(header + elem * n))
    fixed[0:4] = struct.pack("<i", n)
    var = bytearray()
    for i, value in enumerate(values):
        if value is None:
            fixed[4 + (i >> 3)] |= 1 << (i & 7)
            continue
        slot, data = _encode_value(value, element, len(fixed) + len(var))
        fixed[header + elem * i:header + elem * (i + 1)] = slot.to_bytes(elem, "little")
        var += data
    return bytes(fixed + var)


def _map_bytes(items: list[tuple], key: DataType, value: DataType) -> bytes:
    """BinaryMap bytes: int32 size of the key array, key array, value array."""
    keys = _array_bytes([k for k, _ in items], key)
    values = _array_bytes([v for _, v in items], value)
    return struct.pack("<i", len(keys)) + keys + values


def serialize_row(values: list, types: list[DataType]) -> bytes:
    """4-byte big-endian arity + BinaryRow bytes of one row of Python values."""
    return struct.pack(">i", len(types)) + _row_bytes(list(values), list(types))


EMPTY_ROW = serialize_row([], [])


# ---------------------------------------------------------------------------------------------
# bytes -> Python values


def _slot(buf: bytes, pos: int) -> int:
    return int.from_bytes(buf[pos:pos + 8], "little")


def _timestamp_value(millis: int, nano_of_milli: int, t: DataType):
    nanos = millis * 10**6 + nano_of_milli
    tz = dt.timezone.utc if t.root == "TIMESTAMP_LTZ" else None
    if nanos % 1000:
        import pandas  # only sub-microsecond values need it (as_py gives pandas.Timestamp too)

        return pandas.Timestamp(nanos, unit="ns", tz=tz)
    value = _EPOCH + dt.timedelta(microseconds=nanos // 1000)
    return value.replace(tzinfo=tz) if tz else value


def _decode_value(buf: bytes, base: int, pos: int, t: DataType):
    """The value of the element/slot at `pos`; variable-part offsets are relative to `base`."""
    root = t.root
    if root == "BOOLEAN":
        return buf[pos] != 0
    if root == "TINYINT":
        return struct.unpack_from("<b", buf, pos)[0]
    if root == "SMALLINT":
        return struct.unpack_from("<h", buf, pos)[0]
    if root == "INT":
        return struct.unpack_from("<i", buf, pos)[0]
    if root == "DATE":
        return dt.date.fromordinal(_EPOCH_DAY + struct.unpack_from("<i", buf, pos)[0])
    if root == "TIME":
        millis = struct.unpack_from("<i", buf, pos)[0]
        return (dt.datetime.min + dt.timedelta(milliseconds=millis)).time()
    if root == "BIGINT":
        return struct.unpack_from("<q", buf, pos)[0]
    if root == "FLOAT":
        return struct.unpack_from("<f", buf, pos)[0]
    if root == "DOUBLE":
        return struct.unpack_from("<d", buf, pos)[0]
    slot = _slot(buf, pos)
    offset, low = base + (slot >> 32), slot & 0xFFFFFFFF
    if root == "DECIMAL":
        unscaled = struct.unpack_from("<q", buf, pos)[0] if _is_compact(t) else \
            int.from_bytes(buf[offset:offset + low], "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-(t.scale or 0), _WIDE)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if _is_compact(t):
            return _timestamp_value(struct.unpack_from("<q", buf, pos)[0], 0, t)
        return _timestamp_value(struct.unpack_from("<q", buf, offset)[0], low, t)
    if root in _STRINGS or root in _BYTES:
        if slot >> 63:
            data = buf[pos:pos + ((slot >> 56) & 0x7F)]
        else:
            data = buf[offset:offset + low]
        return data.decode("utf-8") if root in _STRINGS else bytes(data)
    if root in _NESTED:
        return _decode_nested(buf[offset:offset + low], t)
    raise CorruptFile(f"type {t} is not supported in a BinaryRow")


def _decode_nested(data: bytes, t: DataType):
    if t.root == "ARRAY":
        return _read_array(data, t.element)
    if t.root in ("MAP", "MULTISET"):
        key_type = t.key if t.root == "MAP" else t.element
        value_type = t.value if t.root == "MAP" else _multiset_value()
        key_size = struct.unpack_from("<i", data, 0)[0]
        keys = _read_array(data[4:4 + key_size], key_type)
        values = _read_array(data[4 + key_size:], value_type)
        return list(zip(keys, values))
    values = _read_row(data, [f.type for f in t.fields])
    return {f.name: v for f, v in zip(t.fields, values)}


def _read_row(data: bytes, types: list[DataType]) -> list:
    width = header_width(len(types))
    if len(data) < width + 8 * len(types):
        raise CorruptFile(f"BinaryRow of {len(data)} bytes is too short for {len(types)} fields")
    return [None if data[(i + 8) >> 3] & (1 << ((i + 8) & 7))
            else _decode_value(data, 0, width + 8 * i, t)
            for i, t in enumerate(types)]


def _read_array(data: bytes, element: DataType) -> list:
    n = struct.unpack_from("<i", data, 0)[0]
    header = 4 + ((n + 31) // 32) * 4
    elem = _element_width(element)
    return [None if data[4 + (i >> 3)] & (1 << (i & 7))
            else _decode_value(data, 0, header + elem * i, element)
            for i in range(n)]


def deserialize_row(data: bytes, types: list[DataType]) -> list:
    """Python values of an arity-prefixed serialized BinaryRow (inverse of `serialize_row`)."""
    data = bytes(data)
    if len(data) < 4:
        raise CorruptFile(f"serialized BinaryRow of {len(data)} bytes has no arity prefix")
    arity = struct.unpack_from(">i", data, 0)[0]
    if arity != len(types):
        raise CorruptFile(f"serialized BinaryRow has arity {arity}, expected {len(types)} fields")
    try:
        return _read_row(data[4:], list(types))
    except (struct.error, IndexError, ValueError, OverflowError) as e:
        raise CorruptFile(f"cannot decode BinaryRow {data.hex()}: {e}") from None


# ---------------------------------------------------------------------------------------------
# Arrow columns -> row bytes, vectorised


@dataclass
class _Bytes:
    """Variable-length values to copy: `data` (padded by 8 zero bytes), per-row start/length."""

    data: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray


@dataclass
class _Column:
    """One column's contribution to the rows.

    Columns with a variable part give `var_counts` (8-byte words per row, 0 = none) and either
    `var_words` (a (rows, words) uint64 matrix, same width for every row) or `var_bytes`."""

    nulls: np.ndarray  # bool per row
    slots: np.ndarray  # uint64 per row; for var rows the low 32 bits (offset added later)
    var_counts: np.ndarray | None = None
    var_words: np.ndarray | None = None
    var_bytes: _Bytes | None = None


_LOW_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(8)], dtype=np.uint64)  # r bytes kept
_TAIL_MASKS = np.array([_U64] + [(1 << (8 * r)) - 1 for r in range(1, 8)], dtype=np.uint64)
_BYTE_BIT_LENGTH = np.array([i.bit_length() for i in range(256)], dtype=np.int64)


def _plain(column, arrow_type: pa.DataType | None = None) -> pa.Array:
    """A single contiguous, dictionary-free array (cast to `arrow_type` if given and different)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if arrow_type is not None and column.type != arrow_type:
        try:
            column = column.cast(arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatch(
                f"cannot convert Arrow {column.type} to {arrow_type}: {e}") from None
    return column


def _null_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return pc.is_null(arr).to_numpy(zero_copy_only=False)


def _fixed_values(arr: pa.Array, dtype, per_value: int = 1) -> np.ndarray:
    """The values buffer of a fixed-width array as numpy (null positions hold garbage)."""
    dtype = np.dtype(dtype)
    count = len(arr) * per_value
    buf = arr.buffers()[1]
    if buf is None or count == 0:
        return np.zeros(count, dtype=dtype)
    start = arr.offset * per_value * dtype.itemsize
    return np.frombuffer(buf, dtype=dtype, count=count, offset=start)


_INT_TYPES = {"TINYINT": (pa.int8(), np.uint8), "SMALLINT": (pa.int16(), np.uint16),
              "INT": (pa.int32(), np.uint32), "BIGINT": (pa.int64(), np.uint64)}


def _numeric_column(arr, t: DataType) -> _Column:
    """BOOLEAN, integers, FLOAT, DOUBLE, DATE, TIME: the value zero-extended into the slot."""
    root = t.root
    if root == "BOOLEAN":
        arr = _plain(arr, pa.bool_())
        values = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint64)
        return _Column(_null_mask(arr), values)
    if root in _INT_TYPES:
        arrow_type, unsigned = _INT_TYPES[root]
        arr = _plain(arr, arrow_type)
        values = _fixed_values(arr, unsigned)
    elif root == "FLOAT":
        arr = _plain(arr, pa.float32())
        values = _fixed_values(arr, np.uint32)
    elif root == "DOUBLE":
        arr = _plain(arr, pa.float64())
        values = _fixed_values(arr, np.uint64)
    elif root == "DATE":
        arr = _plain(arr, pa.date32())
        values = _fixed_values(arr, np.uint32)
    else:  # TIME: millis of day
        arr = _plain(arr)
        if not pa.types.is_time(arr.type):
            arr = _plain(arr, pa.time32("ms"))
        per_milli = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[arr.type.unit]
        width = np.int32 if pa.types.is_time32(arr.type) else np.int64
        raw = _fixed_values(arr, width).astype(np.int64)
        millis = raw * 1000 if per_milli is None else raw // per_milli
        values = millis.astype(np.int32).view(np.uint32)
    nulls = _null_mask(arr)
    slots = values.astype(np.uint64)
    slots[nulls] = 0
    return _Column(nulls, slots)


def _decimal_column(arr, t: DataType) -> _Column:
    precision, scale = _precision(t), t.scale or 0
    arr = _plain(arr, pa.decimal128(precision, scale))
    nulls = _null_mask(arr)
    halves = _fixed_values(arr, np.uint64, per_value=2).reshape(-1, 2)
    if _is_compact(t):
        slots = halves[:, 0].copy()
        slots[nulls] = 0
        return _Column(nulls, slots)
    # 16 bytes in the var part: minimal big-endian two's complement, zero-padded at the end.
    big_endian = halves.view(np.uint8)[:, ::-1]
    negative = big_endian[:, 0] >= 0x80
    magnitude = np.where(negative[:, None], ~big_endian, big_endian)
    nonzero = magnitude != 0
    first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 16)
    lead = magnitude[np.arange(len(arr)), np.minimum(first, 15)]
    bit_length = np.where(first < 16, (15 - first) * 8 + _BYTE_BIT_LENGTH[lead], 0)
    lengths = bit_length // 8 + 1
    shift = (16 - lengths)[:, None] + np.arange(16)
    chunk = np.take_along_axis(big_endian, np.minimum(shift, 15), axis=1)
    chunk[shift > 15] = 0
    chunk[nulls] = 0
    slots = np.where(nulls, 0, lengths).astype(np.uint64)
    words = np.ascontiguousarray(chunk).view(np.uint64)
    return _Column(nulls, slots, np.full(len(arr), 2, dtype=np.int64), var_words=words)


def _timestamp_column(arr, t: DataType) -> _Column:
    arr = _plain(arr)
    if not pa.types.is_timestamp(arr.type):
        arr = _plain(arr, pa.timestamp("us", tz="UTC" if t.root == "TIMESTAMP_LTZ" else None))
    nulls = _null_mask(arr)
    raw = _fixed_values(arr, np.int64)
    nanos_per_unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[arr.type.unit]
    if nanos_per_unit >= 10**6:
        millis, nano_of_milli = raw * (nanos_per_unit // 10**6), np.zeros(len(raw), np.int64)
    else:
        per_milli = 10**6 // nanos_per_unit
        millis, rest = np.divmod(raw, per_milli)
        nano_of_milli = rest * nanos_per_unit
    millis = np.where(nulls, 0, millis)
    if _is_compact(t):
        return _Column(nulls, millis.view(np.uint64))
    slots = np.where(nulls, 0, nano_of_milli).astype(np.uint64)
    return _Column(nulls, slots, np.ones(len(raw), dtype=np.int64),
                   var_words=millis.view(np.uint64).reshape(-1, 1))


def _string_parts(arr) -> _Bytes:
    """The bytes of a string/binary array with each value's start and length."""
    arr = _plain(arr)
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        starts = (np.arange(len(arr), dtype=np.int64) + arr.offset) * width
        lengths = np.full(len(arr), width, dtype=np.int64)
        data_buf = arr.buffers()[1]
    else:
        if not (pa.types.is_string(arr.type) or pa.types.is_binary(arr.type)
                or pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)):
            arr = arr.cast(pa.large_binary())
        index_type = np.int64 if pa.types.is_large_string(arr.type) or \
            pa.types.is_large_binary(arr.type) else np.int32
        offsets = np.frombuffer(arr.buffers()[1], dtype=index_type, count=len(arr) + 1,
                                offset=arr.offset * np.dtype(index_type).itemsize).astype(np.int64)
        starts, lengths = offsets[:-1], np.diff(offsets)
        data_buf = arr.buffers()[2]
    data = np.zeros((0 if data_buf is None else data_buf.size) + 8, dtype=np.uint8)
    if data_buf is not None:
        data[:-8] = np.frombuffer(data_buf, dtype=np.uint8)
    return _Bytes(data, starts, lengths)


def _words_at(data: np.ndarray, byte_offsets: np.ndarray) -> np.ndarray:
    """The little-endian uint64 starting at each (unaligned) byte offset of `data`."""
    overlapping = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    return overlapping[byte_offsets]


def _segments(starts: np.ndarray, counts: np.ndarray, step: int = 1) -> np.ndarray:
    """Concatenation of `range(s, s + step * c, step)` for each start/count pair."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    if counts.min() == counts.max():
        return (starts[:, None] + step * np.arange(counts[0])).reshape(-1)
    first = np.cumsum(counts) - counts
    within = np.arange(total) - np.repeat(first, counts)
    return np.repeat(starts, counts) + step * within


def _bytes_column(values: _Bytes, nulls: np.ndarray, always_var: bool) -> _Column:
    """Strings/binary (inline when ≤ 7 bytes unless `always_var`) and nested values."""
    lengths = values.lengths
    is_var = ~nulls & ((lengths > MAX_INLINE) | always_var)
    slots = np.where(is_var, lengths, 0).astype(np.uint64)
    inline = np.flatnonzero(~nulls & ~is_var)
    if len(inline):
        size = lengths[inline]
        content = _words_at(values.data, values.starts[inline]) & _LOW_MASKS[size]
        slots[inline] = content | ((size.astype(np.uint64) | 0x80) << np.uint64(56))
    counts = np.where(is_var, (lengths + 7) // 8, 0)
    return _Column(nulls, slots, counts, var_bytes=values)


def _string_column(arr, t: DataType) -> _Column:
    arr = _plain(arr)
    nulls = _null_mask(arr)
    return _bytes_column(_string_parts(arr), nulls, always_var=False)


def _nested_column(arr, t: DataType) -> _Column:
    """Per-row Python fallback: each value's nested BinaryArray/BinaryMap/BinaryRow bytes."""
    arr = _plain(arr)
    nulls = _null_mask(arr)
    encoded = [b"" if v is None else _nested_bytes(v, t) for v in arr.to_pylist()]
    return _bytes_column(_string_parts(pa.array(encoded, pa.large_binary())), nulls,
                         always_var=True)


def _encode_column(column, t: DataType) -> _Column:
    root = t.root
    if root == "DECIMAL":
        return _decimal_column(column, t)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_column(column, t)
    if root in _STRINGS or root in _BYTES:
        return _string_column(column, t)
    if root in _NESTED:
        return _nested_column(column, t)
    if root in ("BOOLEAN", "FLOAT", "DOUBLE", "DATE", "TIME") or root in _INT_TYPES:
        return _numeric_column(column, t)
    raise SchemaMismatch(f"type {t} is not supported in a BinaryRow")


def fixed_words(columns: list, types: list[DataType]) -> list[np.ndarray | int] | None:
    """The 32-bit little-endian words of every row's BinaryRow, word position by position,
    when every field is fixed-width (no variable part); None otherwise. A word that is the same
    in every row is returned as a plain int, so hashing can mix it once for all rows."""
    parts = [_encode_column(c, t) for c, t in zip(columns, types)]
    if any(part.var_counts is not None for part in parts):
        return None
    words: list[np.ndarray | int] = []
    for word in range(header_width(len(types)) // 8):
        bits = np.zeros(len(parts[0].nulls) if parts else 0, dtype=np.uint64)
        for i, part in enumerate(parts):
            if (i + 8) // 64 == word and part.nulls.any():
                bits |= part.nulls.astype(np.uint64) << np.uint64((i + 8) % 64)
        words += _split_word(bits)
    for part in parts:
        words += _split_word(part.slots)
    return words


def _split_word(values: np.ndarray) -> list[np.ndarray | int]:
    """A uint64 column as its low and high 32-bit words; an all-zero half as the int 0."""
    halves = [(values & np.uint64(0xFFFFFFFF)).astype(np.uint32), (values >> np.uint64(32)).astype(np.uint32)]
    return [half if half.any() else 0 for half in halves]


def encode_rows(columns: list, types: list[DataType]) -> tuple[np.ndarray, np.ndarray]:
    """BinaryRow bytes (no arity prefix) of every row: (flat uint8 buffer, int64 offsets n+1).

    Row i is `buffer[offsets[i]:offsets[i+1]]` and equals `serialize_row(row_i, types)[4:]`."""
    if len(columns) != len(types):
        raise SchemaMismatch(f"{len(columns)} columns for {len(types)} types")
    n = len(columns[0]) if columns else 0
    parts = [_encode_column(c, t) for c, t in zip(columns, types)]
    header_words = header_width(len(types)) // 8
    fixed_words = header_words + len(types)

    # Variable-part offsets: each row's var chunks follow its fixed part, in field order.
    row_words = np.full(n, fixed_words, dtype=np.int64)
    var_starts = []
    for part in parts:
        var_starts.append(row_words.copy() if part.var_counts is not None else None)
        if part.var_counts is not None:
            row_words += part.var_counts
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_words, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint64)
    row_start = offsets[:-1]
    uniform = n > 0 and row_words.min() == row_words.max()
    grid = out.reshape(n, int(row_words[0])) if uniform else None

    def put(word_in_row: int, values: np.ndarray) -> None:
        if uniform:
            grid[:, word_in_row] = values
        else:
            out[row_start + word_in_row] = values

    for word in range(header_words):
        bits = np.zeros(n, dtype=np.uint64)
        for i, part in enumerate(parts):
            if (i + 8) // 64 == word and part.nulls.any():
                bits |= part.nulls.astype(np.uint64) << np.uint64((i + 8) % 64)
        if bits.any():
            put(word, bits)
    for i, (part, start) in enumerate(zip(parts, var_starts)):
        slots = part.slots
        if start is not None:
            offset_bits = (start * 8).astype(np.uint64) << np.uint64(32)
            slots = slots | np.where(part.var_counts > 0, offset_bits, np.uint64(0))
            in_grid = uniform and start.min() == start.max()
            _write_var(out, row_start + start, part, grid[:, int(start[0]):] if in_grid else None)
        put(header_words + i, slots)
    return out.view(np.uint8), offsets * 8


_SHORT_VALUE_WORDS = 64  # values up to this many words are copied word position by position


def _write_var(out: np.ndarray, dest: np.ndarray, part: _Column, grid: np.ndarray | None) -> None:
    """Write a column's variable chunks at word `dest[i]` of `out` for each row i.

    `grid` is given when every row has the same layout: the (rows, words) view of `out` from
    the column's first var word on."""
    if part.var_words is not None:
        width = part.var_words.shape[1]
        if grid is not None:
            grid[:, :width] = part.var_words
        else:
            for j in range(width):
                out[dest + j] = part.var_words[:, j]
        return
    values, counts = part.var_bytes, part.var_counts
    rows = np.flatnonzero(counts)
    if len(rows) == 0:
        return
    lengths = values.lengths[rows]
    if grid is not None and len(rows) == len(counts) and lengths.min() == lengths.max():
        _write_equal_bytes(grid, values, int(lengths[0]))
        return
    long = counts[rows] > _SHORT_VALUE_WORDS
    if long.any():
        _write_long_bytes(out, dest[rows[long]], values, rows[long])
        rows, lengths = rows[~long], lengths[~long]
    _write_short_bytes(out, dest[rows], values.data, values.starts[rows], lengths)


def _write_equal_bytes(grid: np.ndarray, values: _Bytes, length: int) -> None:
    """Every row has one value of `length` bytes; Arrow stores such values back to back, so
    they are a (rows, bytes) matrix."""
    n, width, first = len(values.starts), (length + 7) // 8, int(values.starts[0])
    padded = np.zeros((n, width * 8), dtype=np.uint8)
    padded[:, :length] = values.data[first:first + n * length].reshape(n, length)
    grid[:, :width] = padded.view(np.uint64)


def _write_short_bytes(out, dest, data, starts, lengths) -> None:
    """Copy values word position by position, longest values first (no per-word index arrays)."""
    if len(starts) == 0:
        return
    counts = (lengths + 7) // 8
    order = np.argsort((_SHORT_VALUE_WORDS - counts).astype(np.uint8), kind="stable")
    dest, starts, counts = dest[order], starts[order], counts[order]
    tails = _TAIL_MASKS[lengths[order] % 8]
    active = np.searchsorted(-counts, -np.arange(int(counts[0]) + 1), side="left").tolist()
    for j in range(int(counts[0])):
        a, ending = active[j], active[j + 1]  # rows [ending, a) have their last word at j
        words = _words_at(data, starts[:a] + 8 * j)
        words[ending:] &= tails[ending:a]
        out[dest[:a] + j] = words


def _write_long_bytes(out, dest, values: _Bytes, rows) -> None:
    """Copy a few long values through flat per-word index arrays."""
    lengths, counts = values.lengths[rows], (values.lengths[rows] + 7) // 8
    words = _words_at(values.data, _segments(values.starts[rows], counts, step=8))
    words[np.cumsum(counts) - 1] &= _TAIL_MASKS[lengths % 8]
    out[_segments(dest, counts)] = words
