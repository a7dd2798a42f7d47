"""Deletion-vector index files (FORMAT.md section 8): bytes <-> deleted row positions.

In memory a data file's deletion vector is a sorted, unique numpy int64 array of deleted row
positions (0-based row numbers in the data file); roaring bitmaps (pyroaring, the portable
32-bit serialization Java's RoaringBitmap writes) exist only inside this module.

File = version byte 1, then one record per data file, in the order given:

- record = length (int32 BE) + payload (`length` bytes: magic + bitmap) + CRC32 of the payload
  (int32 BE);
- 32-bit variant (default): magic 1581511376 **big-endian**, then one portable roaring bitmap;
  positions must be at most 2^31 - 1 (Java's `RoaringBitmap32.MAX_VALUE`). Its range is
  (offset of the length field, length of the payload);
- 64-bit variant (`deletion-vectors.bitmap64`): magic 1681511377 **little-endian**, bitmap
  count int64 LE, then per key (high 32 bits of the positions) 0..count-1 the key int32 LE and a
  portable bitmap of the low 32 bits. Written densely like Java (empty bitmaps for keys in
  between); read in any ascending key order. Its range is (offset of the length field, the
  whole record: 4 + payload + 4).

Readers tell the variants apart by the magic. Every check (version, magic, lengths, CRC, the
bitmap's own size, an expected cardinality) raises `CorruptFile` naming the index file and the
data file: a damaged vector never turns into wrong rows.
"""

from __future__ import annotations

import array
import struct
import zlib
from collections.abc import Iterable, Mapping

import numpy as np
import pyroaring

from tarn.errors import CorruptFile, InvalidArgument

VERSION = 1
MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
MAX_POSITION_32 = 2**31 - 1  # RoaringBitmap32.MAX_VALUE
MAX_KEY_64 = 2**31 - 2  # OptimizedRoaringBitmap64: key <= Integer.MAX_VALUE - 1
MAX_POSITION_64 = (MAX_KEY_64 << 32) | 0x80000000  # OptimizedRoaringBitmap64.MAX_VALUE
MAX_RECORD_BYTES = 2**31 - 1  # Java: "Can't serialize index > 2GB"

_MAGIC_32_BE = struct.pack(">i", MAGIC_32)
_MAGIC_64_LE = struct.pack("<i", MAGIC_64)
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
_EMPTY_BITMAP_BYTES = 8  # cookie + container count 0
_LOW_MASK = np.int64(0xFFFFFFFF)

Range = tuple[str, int, int, int]  # data file name, offset, length, cardinality


# ---------------------------------------------------------------------------------------------
# encoding


def _positions(name: str, values) -> np.ndarray:
    positions = np.asarray(values)
    if positions.size and not np.issubdtype(positions.dtype, np.integer):
        raise InvalidArgument(f"deletion vector of data file {name}: positions must be integers, "
                              f"got {positions.dtype}")
    return positions.astype(np.int64, copy=False).reshape(-1)


def _bitmap32(low: np.ndarray) -> pyroaring.BitMap:
    """A run-optimised bitmap of uint32-range int64 values (through array('I'): no Python loop)."""
    buffer = array.array("I")
    buffer.frombytes(low.astype(np.uint32).tobytes())
    bitmap = pyroaring.BitMap(buffer)
    bitmap.run_optimize()
    return bitmap


def _payload_32(name: str, positions: np.ndarray) -> tuple[bytes, int]:
    if positions.min() < 0 or positions.max() > MAX_POSITION_32:
        bad = int(positions.min()) if positions.min() < 0 else int(positions.max())
        raise InvalidArgument(f"deletion vector of data file {name}: position {bad} outside "
                              f"0..{MAX_POSITION_32} of 32-bit deletion vectors "
                              "(option 'deletion-vectors.bitmap64' allows more)")
    bitmap = _bitmap32(positions)
    return _MAGIC_32_BE + bitmap.serialize(), len(bitmap)


def _payload_64(name: str, positions: np.ndarray) -> tuple[bytes, int]:
    if positions.min() < 0 or positions.max() > MAX_POSITION_64:
        bad = int(positions.min()) if positions.min() < 0 else int(positions.max())
        raise InvalidArgument(f"deletion vector of data file {name}: position {bad} outside "
                              f"0..{MAX_POSITION_64} of 64-bit deletion vectors")
    if positions.size > 1 and not bool(np.all(positions[1:] >= positions[:-1])):
        positions = np.sort(positions)
    count = int(positions[-1] >> 32) + 1
    if 4 + 8 + count * (4 + _EMPTY_BITMAP_BYTES) > MAX_RECORD_BYTES:
        raise InvalidArgument(f"deletion vector of data file {name}: {count} bitmap keys exceed "
                              "the 2 GB limit of a 64-bit deletion vector")
    bounds = np.searchsorted(positions, np.arange(count + 1, dtype=np.int64) << 32)
    parts = [_MAGIC_64_LE, struct.pack("<q", count)]
    cardinality = 0
    for key in range(count):
        start, stop = int(bounds[key]), int(bounds[key + 1])
        bitmap = _bitmap32(positions[start:stop] & _LOW_MASK)
        cardinality += len(bitmap)
        parts.append(struct.pack("<i", key))
        parts.append(bitmap.serialize())
    return b"".join(parts), cardinality


def encode_index_file(vectors: Mapping[str, np.ndarray], bitmap64: bool = False) -> tuple[bytes, list[Range]]:
    """The bytes of one deletion-vector index file holding `vectors` (data file name -> deleted
    positions, in the mapping's order; empty vectors are skipped), and per written vector
    (data file name, offset, length, cardinality) as the index manifest's `dv_ranges` want them.

    Positions need not be sorted or unique (the bitmap sorts and deduplicates); cardinality
    counts distinct positions. Raises InvalidArgument for a position out of the variant's range.
    """
    parts = [bytes([VERSION])]
    ranges: list[Range] = []
    offset = 1
    for name, values in vectors.items():
        positions = _positions(name, values)
        if positions.size == 0:
            continue
        payload, cardinality = (_payload_64 if bitmap64 else _payload_32)(name, positions)
        record_size = 4 + len(payload) + 4
        if record_size > MAX_RECORD_BYTES or offset > MAX_RECORD_BYTES:
            raise InvalidArgument(f"deletion vector of data file {name}: an index file cannot exceed 2 GB")
        parts.append(struct.pack(">i", len(payload)))
        parts.append(payload)
        parts.append(struct.pack(">I", zlib.crc32(payload)))
        ranges.append((name, offset, record_size if bitmap64 else len(payload), cardinality))
        offset += record_size
    return b"".join(parts), ranges


# ---------------------------------------------------------------------------------------------
# decoding


def _portable_size(data: bytes, start: int, end: int) -> int:
    """The byte size of the portable roaring bitmap at data[start:end] (RoaringFormatSpec);
    ValueError if its headers do not fit or are not a roaring bitmap."""

    def need(position: int, size: int) -> None:
        if position + size > end:
            raise ValueError(f"bitmap truncated at byte {position - start} (needs {size} more)")

    need(start, 4)
    cookie = int.from_bytes(data[start:start + 4], "little")
    position = start + 4
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        containers = (cookie >> 16) + 1
        need(position, (containers + 7) // 8)
        run_flags = np.unpackbits(np.frombuffer(data, np.uint8, (containers + 7) // 8, position),
                                  bitorder="little")[:containers].astype(bool)
        position += (containers + 7) // 8
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        need(position, 4)
        containers = int.from_bytes(data[position:position + 4], "little")
        position += 4
        run_flags = np.zeros(containers, dtype=bool)
    else:
        raise ValueError(f"not a roaring bitmap (cookie {cookie})")
    if containers > 1 << 16:
        raise ValueError(f"{containers} containers in a 32-bit bitmap")
    need(position, 4 * containers)
    header = np.frombuffer(data, "<u2", 2 * containers, position).reshape(containers, 2)
    if containers > 1 and not bool(np.all(header[1:, 0] > header[:-1, 0])):
        raise ValueError("container keys are not ascending")
    position += 4 * containers
    if not run_flags.any() or containers >= _NO_OFFSET_THRESHOLD:
        position += 4 * containers  # offset header
    cardinalities = header[:, 1].astype(np.int64) + 1
    sizes = np.where(cardinalities > _ARRAY_MAX, 8192, 2 * cardinalities)
    sizes[run_flags] = 0
    before = np.concatenate(([0], np.cumsum(sizes)))  # bytes before each container, runs aside
    runs = 0
    for i in np.flatnonzero(run_flags):  # a run container's size is in its first word
        at = position + int(before[i]) + runs
        need(at, 2)
        sizes[i] = 2 + 4 * int.from_bytes(data[at:at + 2], "little")
        runs += int(sizes[i])
    need(position, int(sizes.sum()))
    return position + int(sizes.sum()) - start


def _bitmap_values(data: bytes, start: int, end: int) -> tuple[np.ndarray, int]:
    """(uint32 values, byte size) of the portable bitmap at data[start:end]."""
    size = _portable_size(data, start, end)
    bitmap = pyroaring.BitMap.deserialize(data[start:start + size])
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32), size


def _decode_32(data: bytes, start: int, end: int) -> np.ndarray:
    values, size = _bitmap_values(data, start, end)
    if start + size != end:
        raise ValueError(f"bitmap of {size} bytes in a payload of {end - start} bytes")
    return values.astype(np.int64)


def _decode_64(data: bytes, start: int, end: int) -> np.ndarray:
    if start + 8 > end:
        raise ValueError("bitmap count truncated")
    (count,) = struct.unpack_from("<q", data, start)
    if count < 0 or count > MAX_KEY_64 + 1:
        raise ValueError(f"invalid bitmap count {count}")
    position, last_key, pieces = start + 8, -1, []
    for _ in range(count):
        if position + 4 > end:
            raise ValueError("bitmap key truncated")
        (key,) = struct.unpack_from("<i", data, position)
        if key <= last_key or key > MAX_KEY_64:
            raise ValueError(f"bitmap key {key} after {last_key} (keys ascend in 0..{MAX_KEY_64})")
        values, size = _bitmap_values(data, position + 4, end)
        if values.size:
            pieces.append(values.astype(np.int64) | np.int64(key) << 32)
        position += 4 + size
        last_key = key
    if position != end:
        raise ValueError(f"{end - position} bytes after the last bitmap")
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


def decode_vector(data: bytes, offset: int, length: int, index_file: str, data_file: str,
                  cardinality: int | None = None) -> np.ndarray:
    """The sorted int64 deleted positions of `data_file`, whose record starts at `offset` of the
    index file bytes `data`, with the manifest's `length` (f2) and, if known, `cardinality`.

    Checks the version byte, magic, both lengths, the CRC, the bitmap's structure and the
    cardinality; CorruptFile naming both files on any mismatch or truncation."""

    def corrupt(reason: str) -> CorruptFile:
        return CorruptFile(f"index file {index_file}: deletion vector of data file {data_file} "
                           f"(offset {offset}, length {length}): {reason}")

    if len(data) < 1 or data[0] != VERSION:
        found = data[0] if len(data) else "none (empty file)"
        raise corrupt(f"version {found}, expected {VERSION}")
    if offset < 1 or offset + 8 > len(data):
        raise corrupt(f"record outside the file of {len(data)} bytes")
    (payload_length,) = struct.unpack_from(">i", data, offset)
    magic = bytes(data[offset + 4:offset + 8])
    if magic == _MAGIC_32_BE:
        expected, decode = length, _decode_32
    elif magic == _MAGIC_64_LE:
        expected, decode = length - 8, _decode_64
    else:
        raise corrupt(f"bad magic {magic.hex()} (expected {_MAGIC_32_BE.hex()} or {_MAGIC_64_LE.hex()})")
    if payload_length != expected or payload_length < 4:
        raise corrupt(f"record length {payload_length} does not match the manifest's (payload {expected})")
    payload_end = offset + 4 + payload_length
    if payload_end + 4 > len(data):
        raise corrupt(f"record truncated: the file has {len(data)} bytes, the record ends at {payload_end + 4}")
    (crc,) = struct.unpack_from(">I", data, payload_end)
    actual = zlib.crc32(memoryview(data)[offset + 4:payload_end])
    if crc != actual:
        raise corrupt(f"CRC32 {actual:08x} of the record, stored {crc:08x}")
    try:
        positions = decode(data, offset + 8, payload_end)
    except ValueError as exc:
        raise corrupt(f"bad bitmap ({exc})") from None
    if positions.size > 1 and not bool(np.all(positions[1:] > positions[:-1])):
        raise corrupt("bitmap values are not ascending")
    if cardinality is not None and positions.size != cardinality:
        raise corrupt(f"{positions.size} positions, the manifest says {cardinality}")
    return positions


def decode_index_file(data: bytes, ranges: Iterable[tuple], index_file: str) -> dict[str, np.ndarray]:
    """Every vector of an index file: `ranges` holds (data file, offset, length[, cardinality])
    per vector, as in the index manifest; data file name -> sorted int64 positions, in order."""
    vectors: dict[str, np.ndarray] = {}
    for item in ranges:
        name, offset, length = item[0], item[1], item[2]
        cardinality = item[3] if len(item) > 3 else None
        vectors[name] = decode_vector(data, offset, length, index_file, name, cardinality)
    return vectors
