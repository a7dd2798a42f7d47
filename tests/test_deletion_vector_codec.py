"""Deletion-vector index files: FORMAT.md section 8 byte vectors, round trips, corruption."""

import struct
import zlib

import numpy as np
import pyroaring
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarn.codec.deletion_vector import (
    MAX_POSITION_32,
    decode_index_file,
    decode_vector,
    encode_index_file,
)
from tarn.errors import CorruptFile, InvalidArgument

# FORMAT.md section 8 (the 32-bit ones Java-verified)
ONE_32 = "01" "00000016" "5e43f2d0" "3a300000" "01000000" "0000" "0000" "10000000" "0100" "fa2b5192"
TEN_32 = "01" "00000013" "5e43f2d0" "3b300000" "01" "0000" "0900" "0100" "0000" "0900" "a34efa89"
ONE_64 = ("01" "00000022" "d1d33964" "0100000000000000" "00000000"
          "3a300000" "01000000" "00000000" "10000000" "0100" "eebd85f4")


def test_pyroaring_writes_the_portable_format():
    bitmap = pyroaring.BitMap([1])
    bitmap.run_optimize()
    assert bitmap.serialize().hex() == "3a3000000100000000000000100000000100"


@pytest.mark.parametrize("positions, bitmap64, expected, length", [
    ([1], False, ONE_32, 22),
    (list(range(10)), False, TEN_32, 19),
    ([1], True, ONE_64, 42),
])
def test_format_vectors(positions, bitmap64, expected, length):
    data, ranges = encode_index_file({"data-1.parquet": np.array(positions)}, bitmap64)
    assert data.hex() == expected
    assert ranges == [("data-1.parquet", 1, length, len(positions))]
    decoded = decode_vector(bytes.fromhex(expected), 1, length, "index-x-0", "data-1.parquet", len(positions))
    assert decoded.dtype == np.int64
    assert decoded.tolist() == positions


def test_64_bit_keys_are_written_densely_like_java():
    data, ranges = encode_index_file({"f": np.array([2**32])}, bitmap64=True)
    empty = "3a300000" "00000000"
    one_zero = "3a300000" "01000000" "0000" "0000" "10000000" "0000"
    payload = bytes.fromhex("d1d33964" "0200000000000000" "00000000" + empty + "01000000" + one_zero)
    assert data == b"\x01" + struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    assert ranges == [("f", 1, len(payload) + 8, 1)]
    assert decode_index_file(data, ranges, "i").keys() == {"f"}
    assert decode_index_file(data, ranges, "i")["f"].tolist() == [2**32]


def test_64_bit_reader_accepts_sparse_keys():
    """Iceberg-style bitmaps list only non-empty keys; Java's reader fills the gaps."""
    bitmap = pyroaring.BitMap([7, 9])
    payload = bytes.fromhex("d1d33964") + struct.pack("<q", 2) + struct.pack("<i", 0) + bitmap.serialize() \
        + struct.pack("<i", 3) + bitmap.serialize()
    data = b"\x01" + struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    positions = decode_vector(data, 1, len(payload) + 8, "i", "f")
    assert positions.tolist() == [7, 9, 3 * 2**32 + 7, 3 * 2**32 + 9]


def test_several_vectors_in_insertion_order_empty_ones_skipped():
    vectors = {
        "b.parquet": np.array([5, 3, 3, 9]),  # unsorted, duplicated: the bitmap normalises
        "empty.parquet": np.array([], dtype=np.int64),
        "a.parquet": np.arange(0, 200_000, 2),  # bitmap containers
        "c.parquet": np.arange(70_000, 140_000),  # run containers over two keys
    }
    for bitmap64 in (False, True):
        data, ranges = encode_index_file(vectors, bitmap64)
        assert [r[0] for r in ranges] == ["b.parquet", "a.parquet", "c.parquet"]
        assert [r[3] for r in ranges] == [3, 100_000, 70_000]
        assert ranges[0][1] == 1
        for (_, offset, length, _), (_, next_offset, _, _) in zip(ranges, ranges[1:]):
            assert next_offset == offset + (length if bitmap64 else length + 8)
        decoded = decode_index_file(data, ranges, "index-u-0")
        assert list(decoded) == ["b.parquet", "a.parquet", "c.parquet"]
        assert decoded["b.parquet"].tolist() == [3, 5, 9]
        np.testing.assert_array_equal(decoded["a.parquet"], vectors["a.parquet"])
        np.testing.assert_array_equal(decoded["c.parquet"], vectors["c.parquet"])


def test_nothing_to_write():
    assert encode_index_file({"a": np.array([], dtype=np.int64)}) == (b"\x01", [])
    assert encode_index_file({}) == (b"\x01", [])


def test_32_bit_positions_up_to_int_max():
    top = np.array([0, 2**31 - 2, MAX_POSITION_32])
    data, ranges = encode_index_file({"f": top})
    assert decode_index_file(data, ranges, "i")["f"].tolist() == top.tolist()
    # Java's RoaringBitmap32 refuses positions above Integer.MAX_VALUE (its reader would see
    # them as negative ints): tarn refuses to write them in the 32-bit variant
    with pytest.raises(InvalidArgument, match="f.*2147483648.*bitmap64"):
        encode_index_file({"f": np.array([1, 2**31])})
    data, ranges = encode_index_file({"f": np.array([1, 2**31, 2**40 + 3])}, bitmap64=True)
    assert decode_index_file(data, ranges, "i")["f"].tolist() == [1, 2**31, 2**40 + 3]


@pytest.mark.parametrize("bitmap64", [False, True])
def test_negative_and_non_integer_positions_are_refused(bitmap64):
    with pytest.raises(InvalidArgument, match="data-9"):
        encode_index_file({"data-9": np.array([-1, 4])}, bitmap64)
    with pytest.raises(InvalidArgument, match="data-9"):
        encode_index_file({"data-9": np.array([1.5])}, bitmap64)


def test_64_bit_random_large_positions():
    rng = np.random.default_rng(7)
    positions = np.unique(np.concatenate([rng.integers(0, 2**34, 50_000), np.arange(2**32 - 5, 2**32 + 5)]))
    data, ranges = encode_index_file({"f": positions, "g": positions[::7]}, bitmap64=True)
    decoded = decode_index_file(data, ranges, "i")
    np.testing.assert_array_equal(decoded["f"], positions)
    np.testing.assert_array_equal(decoded["g"], positions[::7])


# ---------------------------------------------------------------------------------------------
# corruption: every mismatch names the index file and the data file


def corrupt(data: bytes, offset: int, byte: int) -> bytes:
    return data[:offset] + bytes([byte]) + data[offset + 1:]


def with_crc(data: bytes, offset: int) -> bytes:
    """`data` with the CRC of the record at `offset` recomputed (to get past the CRC check)."""
    (length,) = struct.unpack_from(">i", data, offset)
    payload = data[offset + 4:offset + 4 + length]
    return data[:offset + 4 + length] + struct.pack(">I", zlib.crc32(payload)) + data[offset + 8 + length:]


FILES = {"32": bytes.fromhex(ONE_32), "64": bytes.fromhex(ONE_64)}
LENGTHS = {"32": 22, "64": 42}


@pytest.mark.parametrize("variant", ["32", "64"])
@pytest.mark.parametrize("damage, reason", [
    (lambda d: corrupt(d, len(d) - 1, d[-1] ^ 0xFF), "CRC32"),  # the CRC itself
    (lambda d: corrupt(d, len(d) - 6, d[-6] ^ 0x01), "CRC32"),  # a bitmap byte
    (lambda d: corrupt(d, 6, d[6] ^ 0x10), "magic"),
    (lambda d: corrupt(d, 0, 2), "version 2"),
    (lambda d: d[:-1], "truncated"),
    (lambda d: d[:-10], "truncated"),
    (lambda d: d[:5], "outside the file"),
    (lambda d: b"", "version"),
    (lambda d: d[:4] + bytes([d[4] + 1]) + d[5:], "record length"),
])
def test_damaged_files_raise_corrupt_file(variant, damage, reason):
    data = damage(FILES[variant])
    with pytest.raises(CorruptFile, match=rf"index-abc-0.*data-7\.parquet.*{reason}"):
        decode_vector(data, 1, LENGTHS[variant], "index-abc-0", "data-7.parquet")


@pytest.mark.parametrize("variant", ["32", "64"])
def test_manifest_mismatches_raise_corrupt_file(variant):
    data, length = FILES[variant], LENGTHS[variant]
    with pytest.raises(CorruptFile, match="index-abc-0.*data-7.parquet.*record length"):
        decode_vector(data, 1, length + 1, "index-abc-0", "data-7.parquet")
    with pytest.raises(CorruptFile, match="index-abc-0.*data-7.parquet.*manifest says 2"):
        decode_vector(data, 1, length, "index-abc-0", "data-7.parquet", cardinality=2)
    with pytest.raises(CorruptFile, match="index-abc-0.*data-7.parquet"):
        decode_vector(data, 3, length, "index-abc-0", "data-7.parquet")
    with pytest.raises(CorruptFile, match="index-abc-0.*data-7.parquet"):
        decode_index_file(data, [("data-7.parquet", 0, length)], "index-abc-0")


def test_bitmap_damage_behind_a_valid_crc_is_caught():
    """A writer bug (the CRC matches, the bitmap does not parse) is still not read as rows."""
    data = bytes.fromhex(ONE_32)
    # container count 1 -> 2: the headers no longer fit the payload
    bad = with_crc(corrupt(data, 13, 2), 1)
    with pytest.raises(CorruptFile, match="index-1.*data-1.*bad bitmap"):
        decode_vector(bad, 1, 22, "index-1", "data-1")
    # cookie -> garbage
    bad = with_crc(corrupt(data, 9, 0x00), 1)
    with pytest.raises(CorruptFile, match="index-1.*data-1.*bad bitmap"):
        decode_vector(bad, 1, 22, "index-1", "data-1")
    # 64-bit: keys not ascending
    payload = bytes.fromhex("d1d33964") + struct.pack("<q", 2)
    for key in (1, 1):
        payload += struct.pack("<i", key) + pyroaring.BitMap([1]).serialize()
    data = b"\x01" + struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    with pytest.raises(CorruptFile, match="index-1.*data-1.*ascend"):
        decode_vector(data, 1, len(payload) + 8, "index-1", "data-1")
    # 64-bit: bytes after the last bitmap
    payload = bytes.fromhex("d1d33964") + struct.pack("<q", 0) + b"\x00\x00"
    data = b"\x01" + struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    with pytest.raises(CorruptFile, match="index-1.*data-1.*after the last bitmap"):
        decode_vector(data, 1, len(payload) + 8, "index-1", "data-1")


def test_second_record_damage_names_its_data_file():
    data, ranges = encode_index_file({"first": np.array([1, 2]), "second": np.arange(100)})
    broken = data[:-3]
    with pytest.raises(CorruptFile, match="index-z.*second"):
        decode_index_file(broken, ranges, "index-z")
    assert decode_vector(broken, *ranges[0][1:3], "index-z", "first").tolist() == [1, 2]


# ---------------------------------------------------------------------------------------------
# hypothesis


def position_sets(top: int):
    single = st.integers(0, top)
    run = st.tuples(st.integers(0, top), st.integers(1, 5000)).map(
        lambda t: list(range(t[0], min(t[0] + t[1], top + 1))))
    return st.lists(st.one_of(single.map(lambda v: [v]), run), max_size=8).map(
        lambda parts: sorted({v for part in parts for v in part}))


@settings(max_examples=60, deadline=None)
@given(st.lists(position_sets(MAX_POSITION_32), min_size=1, max_size=4))
def test_round_trip_32(sets):
    vectors = {f"data-{i}.parquet": np.array(s, dtype=np.int64) for i, s in enumerate(sets)}
    data, ranges = encode_index_file(vectors)
    decoded = decode_index_file(data, ranges, "index-h-0")
    assert {k: v.tolist() for k, v in decoded.items()} == {k: v.tolist() for k, v in vectors.items() if len(v)}
    assert [r[3] for r in ranges] == [len(v) for v in vectors.values() if len(v)]


@settings(max_examples=60, deadline=None)
@given(st.lists(position_sets(2**36), min_size=1, max_size=4))
def test_round_trip_64(sets):
    vectors = {f"data-{i}.parquet": np.array(s, dtype=np.int64) for i, s in enumerate(sets)}
    data, ranges = encode_index_file(vectors, bitmap64=True)
    decoded = decode_index_file(data, ranges, "index-h-0")
    assert {k: v.tolist() for k, v in decoded.items()} == {k: v.tolist() for k, v in vectors.items() if len(v)}
    assert len(data) == 1 + sum(r[2] for r in ranges)
