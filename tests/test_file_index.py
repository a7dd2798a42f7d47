"""Data-file indexes (`file-index.*`): Paimon's bytes (vectors from Java Paimon and from the
format's definition), the readers, and file skipping by the planner."""

import base64
import datetime
import json
import os
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap

import tarn
from tarn import col
from tarn.codec import file_index as fi
from tarn.codec.java_hash import (COMPUTE, PUT, JavaHashMap, binary_string_hash, hashmap_order, string_hash,
                                  wang_hash64, xxh64, xxh64_bytes)
from tarn.errors import InvalidOption
from tarn.meta.schema import SetOption
from tarn.types import BIGINT, BOOLEAN, DECIMAL, DOUBLE, FLOAT, INT, STRING, TIMESTAMP, parse_type

VECTORS = json.loads((Path(__file__).parent / "file_index_vectors.json").read_text())


# ------------------------------------------------------------------------------ hash functions


def test_xxh64_known_vectors():
    assert xxh64_bytes(b"") == 0xEF46DB3751D8E999
    assert xxh64_bytes(b"a") == 0xD24EC4F1A98C6E5B
    assert xxh64_bytes(b"abc") == 0x44BC2CF5AD770999
    assert xxh64_bytes(b"Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1


def _xxh64_scalar(data: bytes) -> int:
    """Plain-int XXH64 (seed 0) from the algorithm's definition, to check the vectorised one."""
    m = (1 << 64) - 1
    p1, p2, p3, p4, p5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                          9650029242287828579, 2870177450012600261)

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & m

    def rnd(acc, lane):
        return rotl((acc + lane * p2) & m, 31) * p1 & m

    n, p = len(data), 0
    if n >= 32:
        v = [(p1 + p2) & m, p2, 0, (-p1) & m]
        while p + 32 <= n:
            v = [rnd(v[i], int.from_bytes(data[p + 8 * i:p + 8 * i + 8], "little")) for i in range(4)]
            p += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
        for x in v:
            h = ((h ^ rnd(0, x)) * p1 + p4) & m
    else:
        h = p5
    h = (h + n) & m
    while p + 8 <= n:
        h = (rotl(h ^ rnd(0, int.from_bytes(data[p:p + 8], "little")), 27) * p1 + p4) & m
        p += 8
    if p + 4 <= n:
        h = (rotl(h ^ (int.from_bytes(data[p:p + 4], "little") * p1 & m), 23) * p2 + p3) & m
        p += 4
    while p < n:
        h = rotl(h ^ (data[p] * p5 & m), 11) * p1 & m
        p += 1
    h ^= h >> 33
    h = h * p2 & m
    h ^= h >> 29
    h = h * p3 & m
    return h ^ (h >> 32)


def test_xxh64_vectorised_matches_scalar_for_every_length():
    rng = np.random.default_rng(7)
    strings = [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in range(0, 80)] * 2
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in strings])])
    got = xxh64(np.frombuffer(b"".join(strings), dtype=np.uint8), offsets)
    assert [int(g) for g in got] == [_xxh64_scalar(s) for s in strings]


def _wang_scalar(key: int) -> int:
    m = (1 << 64) - 1

    def sar(x, n):  # Java's >> on a long
        signed = x - (1 << 64) if x >> 63 else x
        return (signed >> n) & m

    k = key & m
    k = ((~k & m) + (k << 21)) & m
    k ^= sar(k, 24)
    k = (k + (k << 3) + (k << 8)) & m
    k ^= sar(k, 14)
    k = (k + (k << 2) + (k << 4)) & m
    k ^= sar(k, 28)
    k = (k + (k << 31)) & m
    return k - (1 << 64) if k >> 63 else k


def test_thomas_wang_hash_matches_the_java_definition():
    keys = [0, 1, -1, 42, 2**31 - 1, -2**31, 2**63 - 1, -2**63, 123456789012345]
    assert [int(h) for h in wang_hash64(np.array(keys, dtype=np.int64))] == [_wang_scalar(k) for k in keys]


def _binary_string_hash_scalar(data: bytes) -> int:
    """MurmurHashUtils.hashBytes: words, then each tail byte mixed as a whole (signed) block."""
    m = 0xFFFFFFFF

    def mix_k1(k):
        k = k * 0xCC9E2D51 & m
        k = ((k << 15) | (k >> 17)) & m
        return k * 0x1B873593 & m

    def mix_h1(h, k):
        h ^= k
        h = ((h << 13) | (h >> 19)) & m
        return (h * 5 + 0xE6546B64) & m

    h = 42
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h = mix_h1(h, mix_k1(int.from_bytes(data[i:i + 4], "little")))
    for b in data[aligned:]:
        h = mix_h1(h, mix_k1((b - 256 if b > 127 else b) & m))
    h ^= len(data)
    h ^= h >> 16
    h = h * 0x85EBCA6B & m
    h ^= h >> 13
    h = h * 0xC2B2AE35 & m
    h ^= h >> 16
    return h - (1 << 32) if h >> 31 else h


def test_binary_string_hash_code():
    strings = [b"", b"a", b"ab", b"abc", b"abcd", b"Stra\xc3\x9fe", b"\xff\xfe\x80", b"x" * 41]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in strings])])
    got = binary_string_hash(np.frombuffer(b"".join(strings), dtype=np.uint8), offsets)
    assert [int(g) for g in got] == [_binary_string_hash_scalar(s) for s in strings]


def test_java_string_hash_code():
    assert string_hash("hello") == 99162322
    assert string_hash("") == 0
    assert string_hash("file-index.bloom-filter.columns") == _java_string_hash_scalar("file-index.bloom-filter.columns")


def _java_string_hash_scalar(s: str) -> int:
    h = 0
    for c in s:
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    return h - (1 << 32) if h >> 31 else h


@pytest.mark.parametrize("op", [PUT, COMPUTE])
def test_hashmap_fast_order_matches_the_replayed_map(op):
    rng = np.random.default_rng(3)
    for n in (1, 5, 12, 13, 14, 100, 3000):
        hashes = rng.integers(-2**31, 2**31, n).astype(np.int32)
        for trailing in (True, False):
            fast = hashmap_order(hashes, None, op, trailing)
            sim = JavaHashMap()
            for i, h in enumerate(hashes):
                sim.call(op, i, int(h))
            if op == COMPUTE and trailing:
                sim.call(op, 0, int(hashes[0]))
            assert list(fast) == sim.keys(), (n, trailing)


def test_hashmap_put_and_compute_if_absent_order_bins_differently():
    # 'c' and 's' share a bin of a 16-slot table: put keeps insertion order, computeIfAbsent reverses it
    put = JavaHashMap()
    compute = JavaHashMap()
    for name in ("c", "s"):
        put.call(PUT, name, string_hash(name))
        compute.call(COMPUTE, name, string_hash(name))
    assert put.keys() == ["c", "s"] and compute.keys() == ["s", "c"]


# ------------------------------------------------------------------------------ container


def test_container_bytes_follow_the_format_definition():
    indexes = {"user_id": {"bitmap": bytes([1, 2, 3]), "bloom-filter": bytes([4, 5])}, "region": {"bitmap": None}}
    got = fi.write_container(indexes)
    names = (b"\x00\x07user_id" + b"\x00\x06bitmap" + b"\x00\x0cbloom-filter" + b"\x00\x06region" + b"\x00\x06bitmap")
    head_length = 8 + 4 + 4 + 4 + 3 * 8 + 2 * 4 + 4 + len(names)
    expected = (struct.pack(">qii", 1493475289347502, 1, head_length) + struct.pack(">i", 2)
                + b"\x00\x07user_id" + struct.pack(">i", 2)
                + b"\x00\x06bitmap" + struct.pack(">ii", head_length, 3)
                + b"\x00\x0cbloom-filter" + struct.pack(">ii", head_length + 3, 2)
                + b"\x00\x06region" + struct.pack(">i", 1)
                + b"\x00\x06bitmap" + struct.pack(">ii", -1, 0)
                + struct.pack(">i", 0) + bytes([1, 2, 3, 4, 5]))
    assert got == expected
    parsed = fi.Container.parse(got)
    assert parsed.columns == {"user_id": {"bitmap": (head_length, 3), "bloom-filter": (head_length + 3, 2)},
                              "region": {"bitmap": (-1, 0)}}
    assert parsed.index_bytes("user_id", "bloom-filter") == bytes([4, 5])
    assert parsed.index_bytes("region", "bitmap") is None


def test_java_modified_utf8_names():
    assert fi.java_utf("a\u0000b") == b"\x00\x04a\xc0\x80b"
    assert fi.java_utf("é") == b"\x00\x02\xc3\xa9"
    assert fi.java_utf("😀") == b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"  # surrogates, 3 bytes each
    data = fi.write_container({"😀é\u0000": {"bloom-filter": b"\x00\x00\x00\x01\x00"}})
    assert list(fi.Container.parse(data).columns) == ["😀é\u0000"]


def test_damaged_containers_are_corrupt_files():
    from tarn.errors import CorruptFile

    with pytest.raises(CorruptFile):
        fi.Container.parse(b"\x00" * 20)
    good = fi.write_container({"a": {"bloom-filter": b"\x00\x00\x00\x01\x00"}})
    with pytest.raises(CorruptFile):
        fi.Container.parse(good[:18])


# ------------------------------------------------------------------------------ bloom filter


def test_bloom_filter_sizes_follow_bloom_filter_64():
    assert fi.bloom_parameters(100, 0.1) == (480, 3)
    assert fi.bloom_parameters(1_000_000, 0.1) == (4_792_536, 3)
    assert fi.bloom_parameters(1, 0.5) == (8, 6)


def test_bloom_filter_bytes_of_one_long():
    keys = fi.column_keys(pa.array([7], pa.int64()), BIGINT())
    data = fi.bloom_filter_bytes(keys, 100, 0.1)
    assert data[:4] == struct.pack(">i", 3) and len(data) == 4 + 60
    h = _wang_scalar(7) & ((1 << 64) - 1)
    hash1 = h & 0xFFFFFFFF
    hash2 = h >> 32
    bits = set()
    for i in range(1, 4):
        combined = (hash1 + i * hash2) & 0xFFFFFFFF
        combined = combined - (1 << 32) if combined >> 31 else combined
        combined = ~combined if combined < 0 else combined
        bits.add(combined % 480)
    expected = bytearray(60)
    for b in bits:
        expected[b >> 3] |= 1 << (b & 7)
    assert data[4:] == bytes(expected)


def test_bloom_reader_answers_membership():
    values = pa.array([f"v{i}" for i in range(500)] + [None])
    data = fi.bloom_filter_bytes(fi.column_keys(values, STRING()), 500, 0.01)
    reader = fi.BloomReader(data, STRING())
    assert reader.equal_any(fi.literal_keys(["v17"], STRING())) is True
    misses = sum(reader.equal_any(fi.literal_keys([f"w{i}"], STRING())) for i in range(1000))
    assert misses < 40  # fpp 0.01


def test_float_keys_hash_their_java_bits():
    keys = fi.column_keys(pa.array([float("nan"), -0.0, 0.0, 1.5, None], pa.float32()), FLOAT())
    assert list(keys.ints[:4]) == [0x7FC00000, -2**31, 0, 0x3FC00000]
    assert list(keys.valid) == [True, True, True, True, False]


# ------------------------------------------------------------------------------ bitmap


def _bitmap_rows(reader, values, dtype):
    result = reader.equal_any(fi.literal_keys(values, dtype))
    return sorted(result)


@pytest.mark.parametrize("version", [1, 2])
def test_bitmap_round_trip(version):
    values = ["a", "b", None, "a", "c", None, "b", "a", "d", None]
    data = fi.bitmap_index_bytes(fi.column_keys(pa.array(values), STRING()), version)
    reader = fi.BitmapReader(data, STRING())
    assert _bitmap_rows(reader, ["a"], STRING()) == [0, 3, 7]
    assert _bitmap_rows(reader, ["d", "c"], STRING()) == [4, 8]
    assert _bitmap_rows(reader, ["zz"], STRING()) == []
    assert sorted(reader.is_null()) == [2, 5, 9]
    assert sorted(reader.not_equal_all(fi.literal_keys(["a", "b"], STRING()))) == [2, 4, 5, 8, 9]


def test_bitmap_v1_bytes_by_the_format_definition():
    # INT column [5, 5, null, 9]: value 5 at rows {0, 1} (a bitmap), 9 at row 3 (offset -1-3), one null (-1-2)
    data = fi.bitmap_index_bytes(fi.column_keys(pa.array([5, 5, None, 9], pa.int32()), INT()), 1)
    five = BitMap(np.array([0, 1], dtype=np.uint32))
    five.run_optimize()
    five = five.serialize()
    # Integer keys 5 and 9 sit in bins 5 and 9 of the id2bitmap HashMap
    expected = (struct.pack(">bii?", 1, 4, 2, True) + struct.pack(">i", -1 - 2)
                + struct.pack(">ii", 5, 0) + struct.pack(">ii", 9, -1 - 3) + five)
    assert data == expected


def test_bitmap_v2_bytes_by_the_format_definition():
    # BIGINT [3, 1, 3]: sorted dictionary (1, 3) in one block; bitmap body holds {0, 2} for 3
    data = fi.bitmap_index_bytes(fi.column_keys(pa.array([3, 1, 3], pa.int64()), BIGINT()), 2)
    three = BitMap(np.array([0, 2], dtype=np.uint32)).serialize()
    block = (struct.pack(">i", 2) + struct.pack(">qii", 1, -1 - 1, -1) + struct.pack(">qii", 3, 0, len(three)))
    expected = (struct.pack(">bii?", 2, 3, 2, False) + struct.pack(">i", 1) + struct.pack(">qi", 1, 0)
                + struct.pack(">i", len(block)) + block + three)
    assert data == expected


def test_bitmap_v2_splits_its_dictionary_into_blocks():
    values = pa.array([f"value-{i % 300:04d}" for i in range(1000)])
    data = fi.bitmap_index_bytes(fi.column_keys(values, STRING()), 2, block_size=256)
    (blocks,) = struct.unpack_from(">i", data, 10)
    assert blocks > 10
    reader = fi.BitmapReader(data, STRING())
    assert _bitmap_rows(reader, ["value-0007"], STRING()) == [7, 307, 607, 907]
    with pytest.raises(fi.UnsupportedIndexType):
        fi.bitmap_index_bytes(fi.column_keys(pa.array(["x" * 300, "y"]), STRING()), 2, block_size=256)


@pytest.mark.parametrize("dtype,array", [
    (BOOLEAN(), pa.array([True, False, None, True])),
    (DOUBLE(), pa.array([1.5, float("nan"), -0.0, 0.0, 1.5])),
    (TIMESTAMP(6), pa.array([datetime.datetime(2024, 1, 1, 0, 0, 0, 5), None], pa.timestamp("us"))),
])
def test_bitmap_types_round_trip(dtype, array):
    data = fi.bitmap_index_bytes(fi.column_keys(array, dtype), 2)
    reader = fi.BitmapReader(data, dtype)
    for row, value in enumerate(array.to_pylist()):
        if value is None or value != value:
            continue
        assert row in _bitmap_rows(reader, [value], dtype)


# ------------------------------------------------------------------------------ bsi


def test_bsi_compares_like_the_values():
    rng = np.random.default_rng(11)
    values = rng.integers(-1000, 1000, 400)
    valid = rng.random(400) > 0.1
    array = pa.array(values, pa.int64(), mask=~valid)
    reader = fi.BsiReader(fi.bsi_index_bytes(*fi.bsi_values(array, BIGINT())), BIGINT())
    for probe in (-1000, -37, 0, 5, 999, 2000):
        keys = fi.literal_keys([probe], BIGINT())
        for op, truth in (("==", values == probe), ("<", values < probe), ("<=", values <= probe),
                          (">", values > probe), (">=", values >= probe)):
            assert sorted(reader.compare(op, keys)) == list(np.flatnonzero(truth & valid)), (op, probe)
    assert sorted(reader.is_null()) == list(np.flatnonzero(~valid))


def test_bsi_bytes_by_the_format_definition():
    data = fi.bsi_index_bytes(np.array([True, True, False]), np.array([5, -2, 0]))
    def roaring(rows):
        b = BitMap(np.array(rows, dtype=np.uint32))
        b.run_optimize()
        return b.serialize()
    positive = struct.pack(">bqq", 1, 0, 5) + roaring([0]) + struct.pack(">i", 3) + roaring([0]) + roaring([]) + roaring([0])
    negative = struct.pack(">bqq", 1, 0, 2) + roaring([1]) + struct.pack(">i", 2) + roaring([]) + roaring([1])
    assert data == struct.pack(">bi", 1, 3) + b"\x01" + positive + b"\x01" + negative


def test_bsi_on_decimals_uses_unscaled_longs():
    from decimal import Decimal

    array = pa.array([None, Decimal("1.00"), Decimal("2.00")], pa.decimal128(10, 2))
    valid, unscaled = fi.bsi_values(array, DECIMAL(10, 2))
    assert list(valid) == [False, True, True] and list(unscaled[1:]) == [100, 200]


# ------------------------------------------------------------------------------ Java's bytes


def java_vector_rows_small() -> pa.Table:
    rows = [{"id": i * 7 - 50, "name": f"n{i % 13}" if i % 5 else None, "k": i % 9 if i % 4 else None,
             "f": i / 3.0} for i in range(60)]
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("k", pa.int32()), ("f", pa.float64())])
    return pa.Table.from_pylist(rows, schema=schema)


def java_vector_rows_types() -> tuple[pa.Table, dict]:
    types = {n: parse_type(t) for n, t in (
        ("s", "STRING"), ("ti", "TINYINT"), ("si", "SMALLINT"), ("d", "DATE"), ("ts3", "TIMESTAMP(3)"),
        ("ts6", "TIMESTAMP(6)"), ("fl", "FLOAT"), ("bin", "BYTES"), ("c", "INT"), ("bs", "STRING"))}
    rows = []
    for i in range(300):
        j = (i * 37) % 150
        rows.append({
            "s": None if i % 11 == 0 else "str-%d-é" % (i % 23),
            "ti": (i % 200) - 100, "si": i * 113 - 20000,
            "d": datetime.date(2024, 1 + i % 12, 1 + i % 28),
            "ts3": datetime.datetime(2024, 1, 1, 10, 0, i % 60, ((i * 7) % 1000) * 1000),
            "ts6": datetime.datetime(2023, 5, 5, 1, 2, 3, i * 3331 % 1000000),
            "fl": [float("nan"), 0.0, 0.0, 1.5, -2.25, float("inf")][i % 6] if i % 13 else i / 7.0,
            "bin": bytes([i % 256, (i * 3) % 256]) * (i % 5),
            "c": None if i in (5, 77, 123) else ((j << 16) | j),  # 150 keys in one HashMap bin: a tree bin
            "bs": None if i == 42 else ["a", "bb", "ccc", "Straße", "x" * 40][i % 5] + str(i % 17),
        })
    from tarn.types import to_arrow_type
    table = pa.table({n: pa.array([r[n] for r in rows], to_arrow_type(t)) for n, t in types.items()})
    return table, types


def _java_options(options: dict, bitmap_columns: str) -> dict:
    """Java 1.0 writes bitmap version 1; tarn's default is Paimon's current 2."""
    out = dict(options)
    for c in bitmap_columns.split(","):
        out[f"file-index.bitmap.{c}.version"] = "1"
    return out


def test_small_vector_equals_java_bytes():
    vector = VECTORS["small"]
    table = java_vector_rows_small()
    types = {"id": BIGINT(), "name": STRING(), "k": INT(), "f": DOUBLE()}
    specs = fi.index_specs(_java_options(vector["options"], "k"))
    assert fi.build_file_index(table, types, specs) == base64.b64decode(vector["embedded_index"])


def test_types_vector_equals_java_bytes():
    vector = VECTORS["types"]
    table, types = java_vector_rows_types()
    specs = fi.index_specs(_java_options(vector["options"], "c,bs"))
    got = fi.build_file_index(table, types, specs)
    assert got == base64.b64decode(vector["embedded_index"])


def test_java_vectors_read_back():
    table, types = java_vector_rows_types()
    container = fi.Container.parse(base64.b64decode(VECTORS["types"]["embedded_index"]))
    bitmap = container.readers("bs", types["bs"])[0]
    assert _bitmap_rows(bitmap, ["bb1"], types["bs"]) == [i for i in range(300) if i % 5 == 1 and i % 17 == 1]
    bloom = container.readers("si", types["si"])[0]
    assert bloom.equal_any(fi.literal_keys([5 * 113 - 20000], types["si"])) is True


# ------------------------------------------------------------------------------ options


def test_index_specs_parse_columns_and_parameters():
    specs = fi.index_specs({"file-index.bloom-filter.columns": "a, b", "file-index.bloom-filter.a.fpp": "0.01",
                            "file-index.bitmap.columns": "b", "file-index.in-manifest-threshold": "1 kb"})
    by_key = {(s.column, s.index_type): s.params for s in specs}
    assert by_key == {("a", "bloom-filter"): {"fpp": "0.01"}, ("b", "bloom-filter"): {}, ("b", "bitmap"): {}}
    with pytest.raises(InvalidOption):
        fi.index_specs({"file-index.bloom-filter.columns": "a,,b"})


def test_index_type_checks():
    fi.check_index_types({"file-index.bloom-filter.columns": "a"}, {"a": BIGINT()})
    with pytest.raises(fi.UnsupportedIndexType, match="bloom-filter.*'a'"):
        fi.check_index_types({"file-index.bloom-filter.columns": "a"}, {"a": BOOLEAN()})
    with pytest.raises(fi.UnsupportedIndexType):
        fi.check_index_types({"file-index.bitmap.columns": "a"}, {"a": DECIMAL(10, 2)})
    fi.check_index_types({"file-index.bsi.columns": "a"}, {"a": DECIMAL(10, 2)})


# ------------------------------------------------------------------------------ tables

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("grp", pa.int32())])


def _write_files(table, files: int, rows_per_file: int = 50):
    for f in range(files):
        ids = np.arange(f * rows_per_file, (f + 1) * rows_per_file, dtype=np.int64)
        # ids and names interleave across files (stats cannot skip); names are per file
        ids = ids * 7919 % 100_003
        table.write(pa.table({"id": ids, "name": [f"{i % 5}-f{f}" for i in range(rows_per_file)],
                              "grp": np.full(rows_per_file, f % 4, dtype=np.int32)}, schema=SCHEMA))


def _planned(table, predicate=None) -> int:
    return sum(len(s.files) for s in table.scan(filter=predicate).plan())


def _files(table):
    return [f for s in table.scan().plan() for f in s.files]


def test_embedded_index_skips_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "id,name", "file-index.bloom-filter.id.items": "100",
        "file-index.bloom-filter.name.items": "100"})
    _write_files(t, 10)
    assert all(f.embedded_index is not None and f.extra_files == () for f in _files(t))
    some_id = int(t.scan().to_arrow().column("id")[123].as_py())
    assert _planned(t) == 10
    assert _planned(t, col("id") == some_id) <= 2
    assert _planned(t, col("name") == "2-f3") == 1
    assert _planned(t, col("name").isin(["2-f3", "0-f7"])) == 2
    assert _planned(t, col("name") == "nope") == 0
    assert _planned(t, (col("name") == "2-f3") | (col("name") == "1-f4")) == 2
    assert _planned(t, (col("name") == "2-f3") & (col("grp") == 3)) == 1
    rows = t.scan(filter=col("name") == "2-f3").to_arrow()
    assert rows.num_rows == 10 and set(rows.column("name").to_pylist()) == {"2-f3"}


def test_extra_index_file_above_threshold(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "2000"})
    _write_files(t, 6)
    files = _files(t)
    assert all(f.embedded_index is None and f.extra_files == (f.file_name + ".index",) for f in files)
    for split in t.scan().plan():
        for f in split.files:
            data = open(os.path.join(split.bucket_path, f.extra_files[0]), "rb").read()
            assert fi.Container.parse(data).columns["name"]["bloom-filter"][1] == 4 + fi.bloom_parameters(2000, 0.1)[0] // 8
    assert _planned(t, col("name") == "4-f2") == 1
    assert _planned(t, col("name") == "nope") == 0
    assert t.scan(filter=col("name") == "4-f2").to_arrow().num_rows == 10
    assert t.remove_orphan_files(older_than=datetime.datetime.now() + datetime.timedelta(days=1)) == []


def test_bitmap_and_bsi_indexes_skip_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={
        "bucket": "-1", "file-index.bitmap.columns": "name", "file-index.bsi.columns": "grp",
        "file-index.in-manifest-threshold": "10 kb"})
    _write_files(t, 8)
    assert _planned(t, col("name") == "0-f5") == 1
    assert _planned(t, col("name").is_null()) == 0
    assert _planned(t, col("name").not_in([f"{i}-f0" for i in range(5)])) == 7
    assert _planned(t, ~(col("name") != "1-f1")) == 1
    # grp: file f holds f % 4; stats already skip by ranges, bsi agrees
    assert _planned(t, col("grp") == 2) == 2
    assert _planned(t, (col("grp") == 2) & (col("name") == "0-f6")) == 1
    assert _planned(t, (col("grp") == 2) & (col("name") == "0-f5")) == 0


def test_index_read_can_be_switched_off(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "100"})
    _write_files(t, 4)
    assert _planned(t, col("name") == "1-f1") == 1
    t.alter(SetOption("file-index.read.enabled", "false"))
    assert _planned(t, col("name") == "1-f1") == 4


def test_files_without_index_keep_working_and_alter_applies_to_new_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={"bucket": "-1"})
    _write_files(t, 3)
    t.alter(SetOption("file-index.bloom-filter.columns", "name"), SetOption("file-index.bloom-filter.name.items", "100"))
    for f in range(3, 6):
        t.write(pa.table({"id": [f, f], "name": [f"0-new{f}", f"9-new{f}"], "grp": [0, 0]}, schema=SCHEMA))
    files = _files(t)
    assert sum(f.embedded_index is not None for f in files) == 3
    assert _planned(t, col("name") == "0-new4") == 4  # the 3 old files cannot be ruled out, 2 new ones are
    assert _planned(t, col("name") == "0-nope") == 3
    assert t.scan(filter=col("name") == "0-new4").to_arrow().num_rows == 1
    assert t.scan(filter=col("name") == "1-f1").to_arrow().num_rows == 10


def test_renaming_an_indexed_column_is_refused(catalog):
    from tarn.meta.schema import RenameColumn

    t = catalog.create_table("db.t", schema=SCHEMA, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "100"})
    _write_files(t, 3)
    with pytest.raises(InvalidOption, match="name"):
        t.alter(RenameColumn("name", "label"))  # the index option would name a missing column
    assert _planned(t, col("name") == "1-f1") == 1


def test_index_on_unknown_column_fails_at_creation(catalog):
    with pytest.raises(InvalidOption, match="nope"):
        catalog.create_table("db.t", schema=SCHEMA, options={"file-index.bloom-filter.columns": "id,nope"})
    with pytest.raises(InvalidOption, match="nope"):
        catalog.create_table("db.t2", schema=SCHEMA, options={"file-index.bitmap.columns": "nope"})


def test_index_on_unsupported_type_fails_the_write(catalog):
    schema = pa.schema([("b", pa.bool_())])
    try:
        t = catalog.create_table("db.t", schema=schema, options={"bucket": "-1", "file-index.bloom-filter.columns": "b"})
    except InvalidOption:
        return  # refused at creation
    with pytest.raises(fi.UnsupportedIndexType):
        t.write(pa.table({"b": [True]}, schema=schema))
    assert not [f for f in os.listdir(os.path.join(t.root, "bucket-0"))] if os.path.isdir(
        os.path.join(t.root, "bucket-0")) else True


def test_primary_key_tables_use_indexes_only_with_deletion_vectors(catalog):
    schema = pa.schema([("k", pa.int64()), ("name", pa.string())])
    opts = {"bucket": "1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "100"}
    plain = catalog.create_table("db.plain", schema=schema, primary_key=["k"], options=opts)
    dv = catalog.create_table("db.dv", schema=schema, primary_key=["k"],
                              options={**opts, "deletion-vectors.enabled": "true"})
    for t in (plain, dv):
        for f in range(4):
            t.write(pa.table({"k": np.arange(f * 10, f * 10 + 10), "name": [f"n{f}"] * 10}, schema=schema))
        t.compact(full=True)
        for f in range(4):
            t.write(pa.table({"k": np.arange(f * 10 + 100, f * 10 + 105), "name": [f"m{f}"] * 5}, schema=schema))
    assert all(f.embedded_index is not None for f in _files(plain))
    assert _planned(plain, col("name") == "zzz") == _planned(plain)
    assert dv.scan(filter=col("name") == "n2").to_arrow().num_rows == 10
    assert dv.scan(filter=col("name") == "m1").to_arrow().num_rows == 5
    assert _planned(dv, col("name") == "zzz") == 0
    dv.compact(full=True)
    assert _planned(dv, col("name") == "zzz") == 0
    assert dv.scan(filter=col("name") == "m3").to_arrow().num_rows == 5


def test_changelog_files_get_no_index(catalog):
    schema = pa.schema([("k", pa.int64()), ("name", pa.string())])
    t = catalog.create_table("db.t", schema=schema, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "input", "file-index.bloom-filter.columns": "name",
        "file-index.bloom-filter.name.items": "100"})
    t.write(pa.table({"k": [1, 2], "name": ["a", "b"]}, schema=schema))
    from tarn.ops.references import TableFiles

    files = TableFiles(t)
    changelog = files.changelog_files(t.latest_snapshot())
    assert changelog and all(e.file.embedded_index is None and not e.file.extra_files for e in changelog)


def test_expire_deletes_index_files_with_their_data_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "2000"})
    _write_files(t, 2)
    bucket = os.path.join(t.root, "bucket-0")
    assert len([n for n in os.listdir(bucket) if n.endswith(".index")]) == 2
    t.overwrite(pa.table({"id": [1], "name": ["x"], "grp": [0]}, schema=SCHEMA))
    t.expire_snapshots(retain_min=1, retain_max=1)
    left = sorted(os.listdir(bucket))
    assert len([n for n in left if n.endswith(".index")]) == 1
    assert len([n for n in left if n.endswith(".parquet")]) == 1
