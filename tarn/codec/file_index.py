"""Paimon's data-file indexes (`file-index.<type>.columns`), byte for byte.

One index blob per data file holds, per column, one index per type, in Paimon's container
(FileIndexFormat: magic, version 1, a head of column / index-type / start / length entries
with Java's modified UTF-8 names, then the bodies). The index types:

- `bloom-filter`: the number of hash functions (big-endian int) and the bit set of Paimon's
  BloomFilter64 (`items`, `fpp`); numbers are hashed with Thomas Wang's 64-bit hash, strings
  and binaries with XXH64;
- `bitmap`: a roaring bitmap of row positions per distinct value (versions 1 and 2; version 2
  adds a sorted, block-split dictionary), values written in `java.util.HashMap` order;
- `bsi`: a bit-sliced index of non-negative and of negated negative values.

The blob is written into the manifest entry (`_EMBEDDED_FILE_INDEX`) when it is at most
`file-index.in-manifest-threshold` bytes, else beside the data file as `<data file>.index`
(listed in `_EXTRA_FILES`). Everything a row set touches runs on numpy / Arrow arrays; only the
per-distinct-value entries of a bitmap index are built one at a time.

Readers answer file-level questions ("may any row equal one of these values?") as True (may
match, rows unknown), False (no row matches) or a pyroaring BitMap of the rows that may match.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from tarn.codec.java_hash import (COMPUTE, PUT, JavaHashMap, binary_string_hash, hash_code, hashmap_order,
                                  java_map_keys, string_hash, wang_hash64, xxh64)
from tarn.errors import CorruptFile, InvalidOption
from tarn.options import parse_memory_size
from tarn.types import DataType, to_arrow_type

MAGIC = 1493475289347502
FORMAT_VERSION = 1
EMPTY_INDEX_FLAG = -1
INDEX_SUFFIX = ".index"
PREFIX = "file-index."

BLOOM = "bloom-filter"
BITMAP = "bitmap"
BSI = "bsi"
WRITABLE_TYPES = (BLOOM, BITMAP, BSI)

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
DEFAULT_BITMAP_VERSION = 2
DEFAULT_INDEX_BLOCK_SIZE = 16 * 1024

_STRING_ROOTS = ("CHAR", "VARCHAR")
_BINARY_ROOTS = ("BINARY", "VARBINARY")
_INT_KINDS = {"TINYINT": "byte", "SMALLINT": "short", "INT": "int", "DATE": "int", "TIME": "int",
              "BIGINT": "long", "TIMESTAMP": "long", "TIMESTAMP_LTZ": "long",
              "FLOAT": "float", "DOUBLE": "double", "BOOLEAN": "boolean"}
_KEY_WIDTH = {"byte": 1, "short": 2, "int": 4, "long": 8, "float": 4, "double": 8, "boolean": 1}
_BIG_ENDIAN = {"byte": ">i1", "short": ">i2", "int": ">i4", "long": ">i8", "float": ">i4", "double": ">i8",
               "boolean": ">u1"}


class UnsupportedIndexType(InvalidOption):
    """An index type that cannot index a column of this data type (Paimon refuses it too)."""


# ---------------------------------------------------------------------------------------------
# column values as Java sees them


@dataclass
class Keys:
    """Values of one column as the index writers see them: `valid` marks non-null rows; `ints`
    holds the Java value (int64) of numeric, date, time, timestamp (millis for precision <= 3,
    else micros), float / double (canonical int bits) and boolean (0/1) columns; `buffer` and
    `offsets` hold the bytes of string and binary columns."""

    kind: str  # byte short int long float double boolean string binary
    valid: np.ndarray
    ints: np.ndarray | None = None
    buffer: np.ndarray | None = None
    offsets: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.valid)

    def take(self, rows: np.ndarray) -> "Keys":
        """The keys at `rows` (positions), all assumed valid."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.ints is not None:
            return Keys(self.kind, np.ones(len(rows), dtype=bool), ints=self.ints[rows])
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        lengths = ends - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        gather = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1], dtype=np.int64)
        return Keys(self.kind, np.ones(len(rows), dtype=bool), buffer=self.buffer[gather], offsets=offsets)

    def bytes_at(self, i: int) -> bytes:
        return self.buffer[self.offsets[i]:self.offsets[i + 1]].tobytes()


def key_kind(dtype: DataType) -> str:
    if dtype.root in _STRING_ROOTS:
        return "string"
    if dtype.root in _BINARY_ROOTS:
        return "binary"
    kind = _INT_KINDS.get(dtype.root)
    if kind is None:
        raise UnsupportedIndexType(f"type {dtype} cannot be indexed")
    return kind


def _unit_factor(unit: str) -> int:
    return {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]


def column_keys(array: pa.Array | pa.ChunkedArray, dtype: DataType) -> Keys:
    """The Java values of a column (vectorised)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    kind = key_kind(dtype)
    n = len(array)
    valid = np.ones(n, dtype=bool) if array.null_count == 0 else \
        np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if kind in ("string", "binary"):
        array = array.cast(pa.large_binary())
        offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset:array.offset + n + 1]
        data = array.buffers()[2]
        buffer = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
        return Keys(kind, valid, buffer=buffer, offsets=offsets)
    t = array.type
    if pa.types.is_boolean(t):
        ints = np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int64)
    elif pa.types.is_floating(t):
        if kind == "float":
            values = np.asarray(array.cast(pa.float32()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float32)
            bits = values.view(np.int32).copy()
            bits[np.isnan(values)] = 0x7FC00000
        else:
            values = np.asarray(array.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
            bits = values.view(np.int64).copy()
            bits[np.isnan(values)] = 0x7FF8000000000000
        ints = bits.astype(np.int64)
    elif pa.types.is_timestamp(t):
        raw = np.asarray(array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        target = 1_000 if (dtype.precision or 0) <= 3 else 1_000_000
        ints = _rescale(raw, _unit_factor(t.unit), target)
    elif pa.types.is_time(t):
        raw = np.asarray(array.cast(pa.int64() if pa.types.is_time64(t) else pa.int32()).fill_null(0)
                         .to_numpy(zero_copy_only=False), dtype=np.int64)
        ints = _rescale(raw, _unit_factor(t.unit), 1_000)
    elif pa.types.is_date(t):
        ints = np.asarray(array.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False),
                          dtype=np.int64)
    elif pa.types.is_integer(t):
        ints = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False)).astype(np.int64)
    else:
        raise UnsupportedIndexType(f"type {dtype} (Arrow {t}) cannot be indexed")
    return Keys(kind, valid, ints=ints)


def _rescale(raw: np.ndarray, per_second: int, target_per_second: int) -> np.ndarray:
    if per_second == target_per_second:
        return raw
    if per_second > target_per_second:
        return np.floor_divide(raw, per_second // target_per_second)
    return raw * (target_per_second // per_second)


def literal_keys(values: Iterable, dtype: DataType) -> Keys | None:
    """Predicate literals as index keys (None literals dropped); None when a literal does not
    convert to the column's type (the caller then cannot use the index)."""
    values = [v for v in values if v is not None]
    try:
        array = pa.array(values, type=to_arrow_type(dtype))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    return column_keys(array, dtype)


def decimal_unscaled(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(valid, unscaled int64) of a decimal column whose unscaled values fit in 64 bits."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    array = array.cast(pa.decimal128(array.type.precision, array.type.scale))
    n = len(array)
    valid = np.ones(n, dtype=bool) if array.null_count == 0 else \
        np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    words = np.frombuffer(array.buffers()[1], dtype="<i8")[2 * array.offset:2 * (array.offset + n)]
    low, high = words[0::2].copy(), words[1::2]
    if ((high != (low >> 63)) & valid).any():
        raise UnsupportedIndexType("bsi index: a decimal value does not fit in a long")
    low[~valid] = 0
    return valid, low


# ---------------------------------------------------------------------------------------------
# java.util.HashMap iteration order of keys


def _java_compare(keys: Keys) -> Callable[[int, int], int]:
    """`compareTo` of two distinct keys (positions in `keys`), for tree bins."""
    if keys.ints is None:
        def compare(i, j):
            a, b = keys.bytes_at(i), keys.bytes_at(j)
            return (a > b) - (a < b)
        return compare
    sortable = _sortable(keys)

    def compare_ints(i, j):
        a, b = int(sortable[i]), int(sortable[j])
        return (a > b) - (a < b)
    return compare_ints


def _sortable(keys: Keys) -> np.ndarray:
    """int64 values whose order is Java's `compareTo` order of the boxed keys."""
    ints = keys.ints
    if keys.kind == "float":
        bits = ints.astype(np.int32)
        return np.where(bits < 0, bits ^ np.int32(0x7FFFFFFF), bits).astype(np.int64)
    if keys.kind == "double":
        return np.where(ints < 0, ints ^ np.int64(0x7FFFFFFFFFFFFFFF), ints)
    return ints


def _key_hashes(keys: Keys) -> np.ndarray:
    if keys.ints is None:
        return binary_string_hash(keys.buffer, keys.offsets)
    return hash_code(keys.kind, keys.ints)


def hashmap_key_order(keys: Keys, trailing_call: bool = True) -> np.ndarray:
    """Iteration order of a HashMap into which `keys` (distinct, in this order) went through
    computeIfAbsent (the bitmap writer's id2bitmap)."""
    return hashmap_order(_key_hashes(keys), _java_compare(keys), COMPUTE, trailing_call)


def _column_option_hash(name: str) -> int:
    """hashCode of FileIndexOptions.Column(name): Arrays.hashCode({name, null, false})."""
    h = 31 + string_hash(name)
    h = (h * 31) & 0xFFFFFFFF
    h = (h * 31 + 1237) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# ---------------------------------------------------------------------------------------------
# Java's modified UTF-8 (DataOutput.writeUTF)


def java_utf(text: str) -> bytes:
    out = bytearray()
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        c = int.from_bytes(units[i:i + 2], "big")
        if 0x0001 <= c <= 0x007F:
            out.append(c)
        elif c <= 0x07FF:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError("name too long for DataOutput.writeUTF")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_java_utf(data: bytes, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2:pos + 2 + length]
    units = []
    i = 0
    while i < len(raw):
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        else:
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
    text = b"".join(u.to_bytes(2, "big") for u in units).decode("utf-16-be", errors="surrogatepass")
    return text, pos + 2 + length


# ---------------------------------------------------------------------------------------------
# the container (FileIndexFormat)


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Paimon's file index file of {column: {index type: bytes (None: empty index)}}, in the
    mappings' order."""
    names = b"".join(java_utf(c) + b"".join(java_utf(t) for t in types) for c, types in indexes.items())
    entries = sum(len(types) for types in indexes.values())
    head_length = 8 + 4 + 4 + 4 + entries * 8 + len(indexes) * 4 + 4 + len(names)
    head = [struct.pack(">qii", MAGIC, FORMAT_VERSION, head_length), struct.pack(">i", len(indexes))]
    body = []
    position = 0
    for column, types in indexes.items():
        head.append(java_utf(column) + struct.pack(">i", len(types)))
        for index_type, data in types.items():
            if data is None:
                head.append(java_utf(index_type) + struct.pack(">ii", EMPTY_INDEX_FLAG, 0))
            else:
                head.append(java_utf(index_type) + struct.pack(">ii", head_length + position, len(data)))
                body.append(data)
                position += len(data)
    head.append(struct.pack(">i", 0))  # redundant length
    return b"".join(head + body)


@dataclass
class Container:
    """The head of a file index file: {column: {index type: (start, length)}} (start -1: an
    empty index), and a function reading `length` bytes at `start`."""

    columns: dict[str, dict[str, tuple[int, int]]]
    read_at: Callable[[int, int], bytes]
    _cache: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, data: bytes) -> "Container":
        return cls.open(lambda start, length: data[start:start + length])

    @classmethod
    def open(cls, read_at: Callable[[int, int], bytes]) -> "Container":
        first = read_at(0, 16)
        if len(first) < 16:
            raise CorruptFile("file index: shorter than its header")
        magic, version, head_length = struct.unpack(">qii", first)
        if magic != MAGIC:
            raise CorruptFile("file index: not a Paimon file index (bad magic)")
        if version != FORMAT_VERSION:
            raise CorruptFile(f"file index: version {version}, supported [{FORMAT_VERSION}]")
        head = read_at(16, head_length - 16)
        if len(head) < head_length - 16:
            raise CorruptFile("file index: head cut short")
        try:
            (count,) = struct.unpack_from(">i", head, 0)
            pos = 4
            columns: dict[str, dict[str, tuple[int, int]]] = {}
            for _ in range(count):
                column, pos = _read_java_utf(head, pos)
                (types,) = struct.unpack_from(">i", head, pos)
                pos += 4
                entry = columns.setdefault(column, {})
                for _ in range(types):
                    index_type, pos = _read_java_utf(head, pos)
                    entry[index_type] = struct.unpack_from(">ii", head, pos)
                    pos += 8
        except (struct.error, UnicodeDecodeError, IndexError) as e:
            raise CorruptFile(f"file index: bad head ({e})") from None
        return cls(columns, read_at)

    def index_bytes(self, column: str, index_type: str) -> bytes | None:
        start, length = self.columns[column][index_type]
        if start == EMPTY_INDEX_FLAG:
            return None
        data = self.read_at(start, length)
        if len(data) != length:
            raise CorruptFile(f"file index: {index_type} index of '{column}' cut short")
        return data

    def readers(self, column: str, dtype: DataType) -> list["IndexReader"]:
        """Readers of every index on `column` (a column this file has none on: [])."""
        key = (column, dtype)
        if key not in self._cache:
            out = []
            for index_type in self.columns.get(column, {}):
                data = self.index_bytes(column, index_type)
                out.append(EMPTY_READER if data is None else make_reader(index_type, data, dtype))
            self._cache[key] = out
        return self._cache[key]


# ---------------------------------------------------------------------------------------------
# bloom filter


def bloom_parameters(items: int, fpp: float) -> tuple[int, int]:
    """(bit count, hash function count) of Paimon's BloomFilter64(items, fpp)."""
    nb = _java_double_to_int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    num_bits = _to_int32(nb + (8 - _java_rem(nb, 8)))
    hashes = max(1, _to_int32(_java_round(num_bits / items * math.log(2))))
    return num_bits, hashes


def _java_double_to_int(x: float) -> int:
    if math.isnan(x):
        return 0
    if x >= 2**31 - 1:
        return 2**31 - 1
    if x <= -2**31:
        return -2**31
    return int(x)


def _java_round(x: float) -> int:
    if math.isnan(x):
        return 0
    return math.floor(x + 0.5)


def _java_rem(a: int, b: int) -> int:
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _to_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def bloom_hashes(keys: Keys) -> np.ndarray:
    """FastHash of the valid keys (int64)."""
    if keys.kind == "boolean":
        raise UnsupportedIndexType("bloom-filter index does not support BOOLEAN")
    if keys.ints is None:
        rows = np.flatnonzero(keys.valid)
        if len(rows) == len(keys.valid):
            return xxh64(keys.buffer, keys.offsets).view(np.int64)
        sub = keys.take(rows)
        return xxh64(sub.buffer, sub.offsets).view(np.int64)
    ints = keys.ints[keys.valid]
    if keys.kind == "float":
        ints = ints.astype(np.int32).astype(np.int64)  # floatToIntBits, sign-extended to long
    return wang_hash64(ints)


def _bloom_positions(hashes: np.ndarray, num_bits: int, num_hashes: int) -> np.ndarray:
    h = np.asarray(hashes, dtype=np.int64).view(np.uint64)
    hash1 = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)
    hash2 = (h >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
    out = np.empty((num_hashes, len(h)), dtype=np.int64)
    for i in range(1, num_hashes + 1):
        combined = (hash1 + i * hash2).astype(np.int32)  # Java int arithmetic wraps
        combined = np.where(combined < 0, ~combined, combined).astype(np.int64)
        out[i - 1] = combined % num_bits
    return out


def bloom_filter_bytes(keys: Keys, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP) -> bytes:
    num_bits, num_hashes = bloom_parameters(items, fpp)
    if num_bits <= 0:
        raise UnsupportedIndexType(f"bloom-filter: items={items}, fpp={fpp} give no bits")
    bits = np.zeros(num_bits, dtype=bool)
    hashes = np.unique(bloom_hashes(keys))
    if len(hashes):
        bits[_bloom_positions(hashes, num_bits, num_hashes).ravel()] = True
    return struct.pack(">i", num_hashes) + np.packbits(bits, bitorder="little").tobytes()


class IndexReader:
    """File-level answers of one column index; True = may match (rows unknown)."""

    def equal_any(self, keys: Keys):
        return True

    def not_equal_all(self, keys: Keys):
        return True

    def is_null(self):
        return True

    def is_not_null(self):
        return True

    def compare(self, op: str, keys: Keys):
        return True


class _EmptyIndex(IndexReader):
    """Java's EmptyFileIndexReader: the column had no values written (no row matches)."""

    def equal_any(self, keys):
        return False

    def compare(self, op, keys):
        return False

    def is_not_null(self):
        return False


EMPTY_READER = _EmptyIndex()


class BloomReader(IndexReader):
    def __init__(self, data: bytes, dtype: DataType):
        if len(data) < 5:
            raise CorruptFile("bloom-filter index: too short")
        (self.num_hashes,) = struct.unpack_from(">i", data, 0)
        self.bits = np.frombuffer(data, dtype=np.uint8, offset=4)
        self.num_bits = len(self.bits) * 8
        self.dtype = dtype

    def equal_any(self, keys: Keys):
        if keys.kind == "boolean" or len(keys) == 0:
            return True if keys.kind == "boolean" else False
        hashes = bloom_hashes(keys)
        positions = _bloom_positions(hashes, self.num_bits, self.num_hashes)
        present = (self.bits[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1
        return bool(present.all(axis=0).any())


# ---------------------------------------------------------------------------------------------
# bitmap


def _roaring(rows: np.ndarray) -> bytes:
    """RoaringBitmap32.serialize(): run-optimised portable format (never built from ranges, so
    containers turn into runs exactly where Java's runOptimize turns them)."""
    bitmap = BitMap(np.asarray(rows, dtype=np.uint32))
    bitmap.run_optimize()
    return bitmap.serialize()


def _encode_keys(keys: Keys, order: np.ndarray) -> list[bytes]:
    """The serialised value of each key at `order` (DataOutput of the boxed value)."""
    if keys.ints is None:
        lengths = np.diff(keys.offsets)
        return [struct.pack(">i", int(lengths[i])) + keys.bytes_at(i) for i in order]
    values = keys.ints[order]
    if keys.kind == "float":
        values = values.astype(np.int32)
    raw = values.astype(_BIG_ENDIAN[keys.kind]).tobytes()
    width = _KEY_WIDTH[keys.kind]
    return [raw[i * width:(i + 1) * width] for i in range(len(values))]


def _distinct(keys: Keys) -> tuple[Keys, np.ndarray, np.ndarray]:
    """(distinct keys in first-occurrence order, row positions grouped by distinct key, start of
    each group in those positions) over the valid rows."""
    rows = np.flatnonzero(keys.valid)
    if keys.ints is not None:
        values = keys.ints[rows]
        uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        by_first = np.argsort(first, kind="stable")
        rank = np.empty_like(by_first)
        rank[by_first] = np.arange(len(by_first))
        ids = rank[inverse.reshape(-1)]
        distinct = Keys(keys.kind, np.ones(len(uniq), dtype=bool), ints=uniq[by_first])
    else:
        sub = keys.take(rows)
        array = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(rows),
                                                 [None, pa.py_buffer(sub.offsets), pa.py_buffer(sub.buffer)])
        encoded = pc.dictionary_encode(array)
        ids = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        dictionary = encoded.dictionary
        offsets = np.frombuffer(dictionary.buffers()[1], dtype=np.int64)[:len(dictionary) + 1]
        data = dictionary.buffers()[2]
        buffer = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
        distinct = Keys(keys.kind, np.ones(len(dictionary), dtype=bool), buffer=buffer,
                        offsets=offsets - offsets[0])
        if offsets[0]:
            distinct.buffer = buffer[offsets[0]:]
    grouped = rows[np.argsort(ids, kind="stable")]
    counts = np.bincount(ids, minlength=len(distinct))
    starts = np.zeros(len(distinct) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return distinct, grouped, starts


def bitmap_index_bytes(keys: Keys, version: int = DEFAULT_BITMAP_VERSION,
                       block_size: int = DEFAULT_INDEX_BLOCK_SIZE) -> bytes:
    if keys.kind == "binary":
        raise UnsupportedIndexType("bitmap index does not support binary types")
    if version not in (1, 2):
        raise UnsupportedIndexType(f"bitmap index: invalid version: {version}")
    row_count = len(keys)
    null_rows = np.flatnonzero(~keys.valid)
    null_bytes = _roaring(null_rows)
    distinct, grouped, starts = _distinct(keys)
    counts = np.diff(starts)
    if len(distinct):
        last_first_row = int(grouped[starts[-2]])
        trailing = bool(keys.valid[last_first_row + 1:].any())
        order = hashmap_key_order(distinct, trailing)
    else:
        order = np.zeros(0, dtype=np.int64)
    offset = len(null_bytes) if len(null_rows) > 1 else 0
    offsets = np.empty(len(distinct), dtype=np.int64)
    lengths = np.full(len(distinct), -1, dtype=np.int64)
    bodies = []
    for i in order:
        if counts[i] == 1:
            offsets[i] = -1 - int(grouped[starts[i]])
        else:
            data = _roaring(grouped[starts[i]:starts[i + 1]])
            bodies.append(data)
            offsets[i] = offset
            lengths[i] = len(data)
            offset += len(data)
    encoded = _encode_keys(distinct, order)
    has_null = len(null_rows) > 0
    null_offset = -1 - int(null_rows[0]) if len(null_rows) == 1 else 0
    out = [struct.pack(">bii?", version, row_count, len(distinct), has_null)]
    if version == 1:
        if has_null:
            out.append(struct.pack(">i", null_offset))
        out.extend(k + struct.pack(">i", int(offsets[i])) for k, i in zip(encoded, order))
    else:
        if has_null:
            out.append(struct.pack(">ii", null_offset, len(null_bytes)))
        out.append(_bitmap_v2_dictionary(distinct, encoded, order, offsets, lengths, block_size))
    if len(null_rows) > 1:
        out.append(null_bytes)
    out.extend(bodies)
    return b"".join(out)


def _bitmap_v2_dictionary(distinct: Keys, encoded: list[bytes], order: np.ndarray, offsets: np.ndarray,
                          lengths: np.ndarray, block_size: int) -> bytes:
    """Block count, (first key, block offset) per block, body offset, then the blocks of
    (key, offset, length) entries in key order."""
    position = np.empty(len(distinct), dtype=np.int64)
    position[order] = np.arange(len(order))
    sorted_ids = _sorted_ids(distinct)
    entry_sizes = np.array([8 + len(encoded[position[i]]) for i in sorted_ids], dtype=np.int64)
    blocks: list[list[int]] = []  # runs of positions in sorted_ids
    i = 0
    cumulative = np.concatenate([[0], np.cumsum(entry_sizes)])
    while i < len(sorted_ids):
        # the block takes entries while 4 + their sizes stay within the limit
        end = int(np.searchsorted(cumulative, cumulative[i] + block_size - 4, side="right")) - 1
        if end <= i:
            raise UnsupportedIndexType("bitmap index: a value is larger than index-block-size (index fail)")
        blocks.append([i, end])
        i = end
    head, body = [struct.pack(">i", len(blocks))], []
    block_offset = 0
    for start, end in blocks:
        ids = sorted_ids[start:end]
        head.append(encoded[position[ids[0]]] + struct.pack(">i", block_offset))
        body.append(struct.pack(">i", len(ids)))
        body.extend(encoded[position[d]] + struct.pack(">ii", int(offsets[d]), int(lengths[d])) for d in ids)
        block_offset += 4 + int(cumulative[end] - cumulative[start])
    head.append(struct.pack(">i", block_offset))
    return b"".join(head + body)


def _sorted_ids(distinct: Keys) -> np.ndarray:
    """Distinct keys in Java's comparator order (V2 dictionary)."""
    if distinct.ints is not None:
        return np.argsort(_sortable(distinct), kind="stable")
    values = [distinct.bytes_at(i) for i in range(len(distinct))]
    return np.array(sorted(range(len(values)), key=values.__getitem__), dtype=np.int64)


class BitmapReader(IndexReader):
    """Both versions, parsed whole: {value key: (offset, length)}."""

    def __init__(self, data: bytes, dtype: DataType):
        self.data = data
        self.kind = key_kind(dtype)
        try:
            self._parse()
        except (struct.error, IndexError) as e:
            raise CorruptFile(f"bitmap index: bad meta ({e})") from None

    def _read_key(self, pos: int):
        if self.kind in ("string", "binary"):
            (length,) = struct.unpack_from(">i", self.data, pos)
            return self.data[pos + 4:pos + 4 + length], pos + 4 + length
        width = _KEY_WIDTH[self.kind]
        value = int.from_bytes(self.data[pos:pos + width], "big", signed=self.kind != "boolean")
        return value, pos + width

    def _parse(self) -> None:
        data = self.data
        version, self.row_count, count, self.has_null = struct.unpack_from(">bii?", data, 0)
        pos = 10
        self.null_offset, self.null_length = 0, -1
        self.entries: dict = {}
        if version == 1:
            if self.has_null:
                (self.null_offset,) = struct.unpack_from(">i", data, pos)
                pos += 4
            for _ in range(count):
                key, pos = self._read_key(pos)
                (offset,) = struct.unpack_from(">i", data, pos)
                pos += 4
                self.entries[key] = [offset, -1]
            self.body_start = pos
            positive = sorted((o, k) for k, (o, _) in self.entries.items() if o >= 0)
            ends = [o for o, _ in positive[1:]]
            for (o, k), end in zip(positive, ends + [None]):
                self.entries[k][1] = -1 if end is None else end - o
        elif version == 2:
            if self.has_null:
                self.null_offset, self.null_length = struct.unpack_from(">ii", data, pos)
                pos += 8
            (blocks,) = struct.unpack_from(">i", data, pos)
            pos += 4
            block_offsets = []
            for _ in range(blocks):
                _, pos = self._read_key(pos)
                block_offsets.append(struct.unpack_from(">i", data, pos)[0])
                pos += 4
            (body_offset,) = struct.unpack_from(">i", data, pos)
            pos += 4
            blocks_start = pos
            for block in block_offsets:
                p = blocks_start + block
                (entries,) = struct.unpack_from(">i", data, p)
                p += 4
                for _ in range(entries):
                    key, p = self._read_key(p)
                    offset, length = struct.unpack_from(">ii", data, p)
                    p += 8
                    self.entries[key] = [offset, length]
            self.body_start = blocks_start + body_offset
        else:
            raise CorruptFile(f"bitmap index: version {version} is not supported")

    def _key_of(self, keys: Keys, i: int):
        if keys.ints is None:
            return keys.bytes_at(i)
        value = int(keys.ints[i])
        if self.kind == "float":
            value = _to_int32(value)
        return value

    def _bitmap(self, offset: int, length: int) -> BitMap:
        if offset < 0:
            return BitMap([-1 - offset])
        start = self.body_start + offset
        data = self.data[start:] if length < 0 else self.data[start:start + length]
        return BitMap.deserialize(data) if length >= 0 else _deserialize_prefix(data)

    def rows_of(self, keys: Keys) -> BitMap:
        out = BitMap()
        if keys.kind != self.kind and not {keys.kind, self.kind} <= {"string", "binary"}:
            return None
        for i in range(len(keys)):
            found = self.entries.get(self._key_of(keys, i))
            if found is not None:
                out |= self._bitmap(*found)
        return out

    def null_rows(self) -> BitMap:
        if not self.has_null:
            return BitMap()
        return self._bitmap(self.null_offset, self.null_length if self.null_offset >= 0 else -1)

    def equal_any(self, keys):
        rows = self.rows_of(keys)
        return True if rows is None else rows

    def not_equal_all(self, keys):
        rows = self.rows_of(keys)
        if rows is None:
            return True
        return BitMap(np.arange(self.row_count, dtype=np.uint32)) - rows

    def is_null(self):
        return self.null_rows()

    def is_not_null(self):
        return BitMap(np.arange(self.row_count, dtype=np.uint32)) - self.null_rows()


def _deserialize_prefix(data: bytes) -> BitMap:
    """A roaring bitmap at the front of `data` (its length unknown: V1's last bitmap)."""
    return BitMap.deserialize(data[:_roaring_size(data)])


def _roaring_size(data: bytes) -> int:
    """Byte length of the portable roaring bitmap at the start of `data`."""
    (cookie,) = struct.unpack_from("<I", data, 0)
    if cookie & 0xFFFF == 12347:
        size = (cookie >> 16) + 1
        run_flags = data[4:4 + (size + 7) // 8]
        pos = 4 + (size + 7) // 8
        has_offsets = size >= 4
    elif cookie == 12346:
        (size,) = struct.unpack_from("<I", data, 4)
        run_flags = b""
        pos = 8
        has_offsets = True
    else:
        raise CorruptFile("roaring bitmap: bad cookie")
    header = np.frombuffer(data, dtype="<u2", count=2 * size, offset=pos)
    cards = header[1::2].astype(np.int64) + 1
    pos += 4 * size + (4 * size if has_offsets else 0)
    for i in range(size):
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            (runs,) = struct.unpack_from("<H", data, pos)
            pos += 2 + 4 * runs
        elif cards[i] > 4096:
            pos += 8192
        else:
            pos += 2 * int(cards[i])
    return pos


# ---------------------------------------------------------------------------------------------
# bit-sliced index


def bsi_values(array: pa.Array | pa.ChunkedArray, dtype: DataType) -> tuple[np.ndarray, np.ndarray]:
    """(valid, int64 value) as BitSliceIndexBitmapFileIndex maps a column."""
    if dtype.root == "DECIMAL":
        return decimal_unscaled(array)
    if dtype.root not in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
        raise UnsupportedIndexType(f"{dtype} type is not support to build bsi index yet.")
    keys = column_keys(array, dtype)
    return keys.valid, keys.ints


def _bsi_part(rows: np.ndarray, values: np.ndarray) -> bytes:
    """BitSliceIndexRoaringBitmap.Appender(0, max).serialize() of (row, value >= 0) pairs."""
    top = int(values.max()) if len(values) else 0
    top = max(top, 0)
    slices = top.bit_length()
    out = [struct.pack(">bqq", 1, 0, top), _roaring(rows), struct.pack(">i", slices)]
    for bit in range(slices):
        out.append(_roaring(rows[(values >> bit) & 1 == 1]))
    return b"".join(out)


def bsi_index_bytes(valid: np.ndarray, values: np.ndarray) -> bytes:
    rows = np.arange(len(valid), dtype=np.int64)
    if (values[valid] == np.iinfo(np.int64).min).any():
        raise UnsupportedIndexType("bsi index: values should be non-negative (Long.MIN_VALUE)")
    positive = valid & (values >= 0)
    negative = valid & (values < 0)
    out = [struct.pack(">bi", 1, len(valid))]
    out.append(struct.pack(">?", bool(positive.any())))
    if positive.any():
        out.append(_bsi_part(rows[positive], values[positive]))
    out.append(struct.pack(">?", bool(negative.any())))
    if negative.any():
        out.append(_bsi_part(rows[negative], -values[negative]))
    return b"".join(out)


@dataclass
class _Slices:
    min: int
    max: int
    ebm: BitMap
    slices: list

    def compare(self, op: str, predicate: int) -> BitMap:
        lo, hi = self.min, self.max
        every, none = lambda: BitMap(self.ebm), lambda: BitMap()
        if op == "==":
            if lo == hi == predicate:
                return every()
            if predicate < lo or predicate > hi:
                return none()
        elif op == ">=":
            if predicate <= lo:
                return every()
            if predicate > hi:
                return none()
        elif op == ">":
            if predicate < lo:
                return every()
            if predicate >= hi:
                return none()
        elif op == "<=":
            if predicate >= hi:
                return every()
            if predicate < lo:
                return none()
        elif op == "<":
            if predicate > hi:
                return every()
            if predicate <= lo:
                return none()
        p = predicate - lo
        gt, lt, eq = BitMap(), BitMap(), BitMap(self.ebm)
        for i in range(len(self.slices) - 1, -1, -1):
            if (p >> i) & 1:
                lt |= eq - self.slices[i]
                eq &= self.slices[i]
            else:
                gt |= eq & self.slices[i]
                eq -= self.slices[i]
        return {"==": eq, ">": gt, "<": lt, ">=": gt | eq, "<=": lt | eq}[op]


def _read_slices(data: bytes, pos: int) -> tuple[_Slices, int]:
    version, lo, hi = struct.unpack_from(">bqq", data, pos)
    if version > 1:
        raise CorruptFile(f"bsi index: version {version} is not supported")
    pos += 17
    size = _roaring_size(data[pos:])
    ebm = BitMap.deserialize(data[pos:pos + size])
    pos += size
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    slices = []
    for _ in range(count):
        size = _roaring_size(data[pos:])
        slices.append(BitMap.deserialize(data[pos:pos + size]))
        pos += size
    return _Slices(lo, hi, ebm, slices), pos


class BsiReader(IndexReader):
    def __init__(self, data: bytes, dtype: DataType):
        self.dtype = dtype
        try:
            version, self.row_count = struct.unpack_from(">bi", data, 0)
            if version > 1:
                raise CorruptFile(f"bsi index: version {version} is not supported")
            pos = 5
            empty = _Slices(0, 0, BitMap(), [])
            (has,) = struct.unpack_from(">?", data, pos)
            pos += 1
            self.positive, pos = _read_slices(data, pos) if has else (empty, pos)
            (has,) = struct.unpack_from(">?", data, pos)
            pos += 1
            self.negative, pos = _read_slices(data, pos) if has else (empty, pos)
        except (struct.error, IndexError) as e:
            raise CorruptFile(f"bsi index: bad data ({e})") from None

    def _value(self, keys: Keys, i: int) -> int:
        return int(keys.ints[i])

    def _not_null(self) -> BitMap:
        return self.positive.ebm | self.negative.ebm

    def compare(self, op: str, keys: Keys):
        if keys.ints is None or len(keys) != 1:
            return True
        value = self._value(keys, 0)
        if value == np.iinfo(np.int64).min:
            return self._not_null() if op in (">", ">=") else BitMap()
        if op == "==":
            return self.negative.compare("==", -value) if value < 0 else self.positive.compare("==", value)
        if op == "<":
            return self.negative.compare(">", -value) if value < 0 else \
                self.positive.compare("<", value) | self.negative.ebm
        if op == "<=":
            return self.negative.compare(">=", -value) if value < 0 else \
                self.positive.compare("<=", value) | self.negative.ebm
        if op == ">":
            return self.positive.ebm | self.negative.compare("<", -value) if value < 0 else \
                self.positive.compare(">", value)
        if op == ">=":
            return self.positive.ebm | self.negative.compare("<=", -value) if value < 0 else \
                self.positive.compare(">=", value)
        return True

    def equal_any(self, keys: Keys):
        if keys.ints is None:
            return True
        out = BitMap()
        for i in range(len(keys)):
            out |= self.compare("==", keys.take([i]))
        return out

    def not_equal_all(self, keys: Keys):
        rows = self.equal_any(keys)
        return True if rows is True else self._not_null() - rows

    def is_null(self):
        return BitMap(np.arange(self.row_count, dtype=np.uint32)) - self._not_null()

    def is_not_null(self):
        return self._not_null()


def make_reader(index_type: str, data: bytes, dtype: DataType) -> IndexReader:
    """A reader of one column index; an index type or column type this module cannot read
    answers "may match" (as a Paimon build without that index would be unable to skip)."""
    try:
        if index_type == BLOOM:
            return BloomReader(data, dtype)
        if index_type == BITMAP:
            return BitmapReader(data, dtype)
        if index_type == BSI:
            return BsiReader(data, dtype)
    except UnsupportedIndexType:
        pass
    return IndexReader()


# ---------------------------------------------------------------------------------------------
# which indexes a table declares (FileIndexOptions)


@dataclass(frozen=True)
class IndexSpec:
    """One (column, index type) a table's options declare, with that column's parameters."""

    column: str
    index_type: str
    params: Mapping[str, str]
    nested_key: str | None = None


def _string_compare(a: str, b: str) -> int:
    ua, ub = a.encode("utf-16-be"), b.encode("utf-16-be")
    return (ua > ub) - (ua < ub)


def _option_key_order(options: Mapping[str, str]) -> list[str]:
    """Table option keys in the order Java iterates `CoreOptions.toMap()`: a HashMap copied
    from the table's options (presized by the copy constructor)."""
    keys = list(options)
    sim = JavaHashMap(_string_compare, initial_capacity=_copy_capacity(len(keys)))
    for key in keys:
        sim.call(PUT, key, string_hash(key))
    return sim.keys()


def _copy_capacity(size: int) -> int:
    """Table length `new HashMap<>(map)` allocates for `size` entries."""
    wanted = int(size / 0.75 + 1.0)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return max(capacity, 1)


@dataclass
class _Declared:
    """FileIndexOptions: the Column map (computeIfAbsent per listed column) and, per Column, its
    index types (computeIfAbsent) with their parameters."""

    calls: list = field(default_factory=list)  # (op, (column, nested), hash)
    types: dict = field(default_factory=dict)  # (column, nested) -> [(op, type, hash)]
    params: dict = field(default_factory=dict)  # (column, nested, type) -> {param: value}


def _declared(options: Mapping[str, str]) -> _Declared:
    out = _Declared()
    params: list[tuple[str, str, str, str]] = []
    for key in _option_key_order(options):
        if not key.startswith(PREFIX):
            continue
        value = options[key]
        if key.endswith(".columns"):
            index_type = key[len(PREFIX):-len(".columns")]
            for name in value.split(","):
                if not name.strip():
                    raise InvalidOption(f"Wrong option in {key}, should not have empty column")
                column = _split_nested(name.strip())
                out.calls.append((COMPUTE, column, _column_key_hash(column[0], column[1] or "")))
                out.types.setdefault(column, []).append((COMPUTE, index_type, string_hash(index_type)))
                out.params.setdefault((*column, index_type), {})
        else:
            parts = key[len(PREFIX):].split(".")
            if len(parts) == 3:
                params.append((parts[0], parts[1], parts[2], value))
    for index_type, column, param, value in params:
        target = out.params.get((*_split_nested(column), index_type))
        if target is not None:
            target[param] = value
    return out


def _column_compare(a, b) -> int:
    return _string_compare(a[0], b[0]) or _string_compare(a[1] or "", b[1] or "")


def index_specs(options: Mapping[str, str]) -> list[IndexSpec]:
    """The indexes declared by `file-index.<type>.columns` (with `file-index.<type>.<column>.
    <param>`), in the order Java's FileIndexOptions iterates them (columns, then each
    column's types)."""
    declared = _declared(options)
    out = []
    for column in java_map_keys(declared.calls, _column_compare):
        for index_type in java_map_keys(declared.types[column], _string_compare):
            out.append(IndexSpec(column[0], index_type, dict(declared.params[(*column, index_type)]), column[1]))
    return out


def _split_nested(name: str) -> tuple[str, str | None]:
    start = name.find("[")
    if start != -1 and name.endswith("]"):
        return name[:start], name[start + 1:-1]
    return name, None


def _column_key_hash(column: str, nested: str) -> int:
    if not nested:
        return _column_option_hash(column)
    h = 31 + string_hash(column)
    h = (h * 31 + string_hash(nested)) & 0xFFFFFFFF
    h = (h * 31 + 1231) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def check_index_types(options: Mapping[str, str], types: Mapping[str, DataType]) -> None:
    """Raise UnsupportedIndexType for an index on a column type Paimon cannot index (Java's
    FileIndexerFactory.validate at table creation). Columns not in `types` are left to the
    option validation."""
    for spec in index_specs(options):
        dtype = types.get(spec.column)
        if dtype is None:
            continue
        if spec.nested_key is not None:
            if dtype.root != "MAP":
                raise UnsupportedIndexType(
                    f"Column {spec.column} is nested column, but is not map type. Only should map type yet.")
            dtype = dtype.value
        _check_type(spec.index_type, dtype, spec.column)


def _check_type(index_type: str, dtype: DataType, column: str) -> None:
    root = dtype.root
    if index_type == BLOOM:
        ok = root in _STRING_ROOTS + _BINARY_ROOTS + ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                                                      "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ")
    elif index_type == BITMAP:
        ok = root in _STRING_ROOTS + tuple(_INT_KINDS)
    elif index_type == BSI:
        ok = root in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ") or \
            (root == "DECIMAL" and (dtype.precision or 0) <= 18)
    else:
        return
    if not ok:
        raise UnsupportedIndexType(f"index type '{index_type}' does not support column '{column}' of type {dtype}")


# ---------------------------------------------------------------------------------------------
# building one data file's index


def column_index_bytes(spec: IndexSpec, array: pa.Array | pa.ChunkedArray, dtype: DataType) -> bytes:
    params = spec.params
    if spec.index_type == BLOOM:
        items = int(params.get("items", DEFAULT_ITEMS))
        fpp = float(params.get("fpp", DEFAULT_FPP))
        return bloom_filter_bytes(column_keys(array, dtype), items, fpp)
    if spec.index_type == BITMAP:
        version = int(params.get("version", DEFAULT_BITMAP_VERSION))
        block = parse_memory_size(params.get("index-block-size", "16kb"))
        return bitmap_index_bytes(column_keys(array, dtype), version, block)
    if spec.index_type == BSI:
        return bsi_index_bytes(*bsi_values(array, dtype))
    raise UnsupportedIndexType(f"file index type '{spec.index_type}' is not supported by tarn")


def build_file_index(table: pa.Table, types: Mapping[str, DataType], specs: list[IndexSpec]) -> bytes | None:
    """The index blob of one data file holding `table`'s rows (None: the table declares no
    index). Columns are the table's columns by name; `types` their Paimon types."""
    if not specs:
        return None
    for spec in specs:
        if spec.column not in types:
            raise InvalidOption(f"{spec.column} does not exist in column fields")
        if spec.nested_key is not None:
            raise UnsupportedIndexType(
                f"file index on map entry '{spec.column}[{spec.nested_key}]' is not supported by tarn")
    indexes: dict[tuple[str, str], bytes | None] = {}
    for spec in specs:
        indexes[(spec.column, spec.index_type)] = column_index_bytes(spec, table.column(spec.column),
                                                                     types[spec.column])
    return write_container(_writer_order(specs, indexes))


def _writer_order(specs: list[IndexSpec], indexes: dict) -> dict[str, dict[str, bytes | None]]:
    """{column: {type: bytes}} in the order DataFileIndexWriter serialises them.

    Each column with one index type: Paimon 1.0's writer (one maintainer per column, put in
    FileIndexOptions order). A column with several types: later Paimon's writer (maintainers
    by index type (computeIfAbsent), then by column (put)). Both fill the result with
    computeIfAbsent(column) then put(type)."""
    single = len({s.column for s in specs}) == len(specs)
    serialise: list[IndexSpec] = []
    if single:
        maintainers = java_map_keys([(PUT, s.column, string_hash(s.column)) for s in specs], _string_compare)
        by_column = {s.column: s for s in specs}
        serialise = [by_column[c] for c in maintainers]
    else:
        type_calls, column_calls = [], {}
        for s in specs:
            type_calls.append((COMPUTE, s.index_type, string_hash(s.index_type)))
            column_calls.setdefault(s.index_type, []).append((PUT, s.column, string_hash(s.column)))
        by_key = {(s.column, s.index_type): s for s in specs}
        for index_type in java_map_keys(type_calls, _string_compare):
            for column in java_map_keys(column_calls[index_type], _string_compare):
                serialise.append(by_key[(column, index_type)])
    column_calls = [(COMPUTE, s.column, string_hash(s.column)) for s in serialise]
    type_calls: dict[str, list] = {}
    for s in serialise:
        type_calls.setdefault(s.column, []).append((PUT, s.index_type, string_hash(s.index_type)))
    out = {}
    for column in java_map_keys(column_calls, _string_compare):
        out[column] = {t: indexes[(column, t)] for t in java_map_keys(type_calls[column], _string_compare)}
    return out


@functools.lru_cache(maxsize=256)
def cached_specs(options: tuple[tuple[str, str], ...]) -> tuple[IndexSpec, ...]:
    return tuple(index_specs(dict(options)))
