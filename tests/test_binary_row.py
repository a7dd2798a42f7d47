"""BinaryRow codec: FORMAT.md §5 vectors, round trips, and encode_rows == serialize_row."""

import datetime as dt
import decimal

import mmh3
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tarn.codec.binary_row import EMPTY_ROW, deserialize_row, encode_rows, serialize_row
from tarn.codec import murmur
from tarn.codec.murmur import hash_bytes, hash_rows
from tarn.errors import CorruptFile
from tarn.types import (
    ARRAY, BIGINT, BINARY, BOOLEAN, BYTES, CHAR, DATE, DECIMAL, DOUBLE, FLOAT, INT, MAP,
    MULTISET, ROW, SMALLINT, STRING, TIME, TIMESTAMP, TIMESTAMP_LTZ, TINYINT, VARCHAR, DataField,
    to_arrow_type,
)

D = decimal.Decimal
UTC = dt.timezone.utc


def row_hex(values, types):
    return serialize_row(values, types)[4:].hex()


# --- FORMAT.md §5 verified vectors -----------------------------------------------------------

@pytest.mark.parametrize("values,types,expected", [
    (["a"], [STRING()], "0000000000000000" "6100000000000081"),
    ([""], [STRING()], "0000000000000000" "0000000000000080"),
    (["abcdefg"], [STRING()], "0000000000000000" "6162636465666787"),
    (["abcdefgh"], [STRING()], "0000000000000000" "0800000010000000" "6162636465666768"),
    ([1], [BIGINT()], "0000000000000000" "0100000000000000"),
    ([None], [INT()], "0001000000000000" "0000000000000000"),
    ([D("12.34")], [DECIMAL(20, 2)],
     "0000000000000000" "0200000010000000" "04d2000000000000" "0000000000000000"),
    ([None], [DECIMAL(20, 2)], "0001000000000000" "0000000010000000" + "00" * 16),
    ([dt.datetime(2024, 1, 1, 0, 0, 0, 123456)], [TIMESTAMP(6)],
     "0000000000000000" "40f5060010000000" "7bf451c28c010000"),
    ([5, "x"], [INT(), STRING()], "0000000000000000" "0500000000000000" "7800000000000081"),
])
def test_format_vectors(values, types, expected):
    assert row_hex(values, types) == expected
    assert deserialize_row(serialize_row(values, types), types) == values


def test_arity_prefix_and_empty_row():
    assert serialize_row(["a"], [STRING()])[:4].hex() == "00000001"
    assert EMPTY_ROW.hex() == "00000000" "0000000000000000"
    assert len(EMPTY_ROW) == 12
    assert deserialize_row(EMPTY_ROW, []) == []


def test_header_width_grows_after_56_fields():
    assert len(serialize_row([1] * 56, [INT()] * 56)) == 4 + 8 + 56 * 8
    row = serialize_row([None] * 57, [INT()] * 57)
    assert len(row) == 4 + 16 + 57 * 8
    assert row[4 + 8:4 + 16] == b"\x01" + b"\0" * 7  # bit 64 = field 56


def test_slot_contents_of_atomic_types():
    assert row_hex([True], [BOOLEAN()])[16:] == "0100000000000000"
    assert row_hex([-1], [TINYINT()])[16:] == "ff00000000000000"
    assert row_hex([-2], [SMALLINT()])[16:] == "feff000000000000"
    assert row_hex([-1], [INT()])[16:] == "ffffffff00000000"
    assert row_hex([1.0], [FLOAT()])[16:] == "0000803f00000000"
    assert row_hex([1.0], [DOUBLE()])[16:] == "000000000000f03f"
    assert row_hex([dt.date(1970, 1, 2)], [DATE()])[16:] == "0100000000000000"
    assert row_hex([dt.time(0, 0, 1, 500000)], [TIME()])[16:] == "dc05000000000000"
    assert row_hex([D("-0.01")], [DECIMAL(10, 2)])[16:] == "ffffffffffffffff"
    one_milli = dt.datetime(1970, 1, 1, 0, 0, 0, 1000)
    assert row_hex([one_milli], [TIMESTAMP(3)])[16:] == "0100000000000000"
    ltz = dt.datetime(1970, 1, 1, 1, 0, 0, 1000, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert row_hex([ltz], [TIMESTAMP_LTZ(3)])[16:] == "0100000000000000"


def test_non_compact_decimal_uses_java_minimal_bytes():
    # BigInteger.toByteArray: -128 -> 80, 128 -> 0080, 0 -> 00
    assert row_hex([D("-1.28")], [DECIMAL(20, 2)])[16:] == "0100000010000000" "80" + "00" * 15
    assert row_hex([D("1.28")], [DECIMAL(20, 2)])[16:] == "0200000010000000" "0080" + "00" * 14
    assert row_hex([D("0.00")], [DECIMAL(20, 2)])[16:] == "0100000010000000" + "00" * 16
    big = D("-" + "9" * 36 + ".99")
    assert deserialize_row(serialize_row([big], [DECIMAL(38, 2)]), [DECIMAL(38, 2)]) == [big]


def test_non_compact_timestamp_null_reserves_var_space_and_shifts_later_fields():
    types = [TIMESTAMP(6), STRING(), DECIMAL(38, 0)]
    got = row_hex([None, "abcdefghij", None], types)
    assert got == ("00" "05" + "00" * 6  # fields 0 and 2 null: bits 8 and 10
                   + "0000000020000000"  # ts null: offset 32, size 0
                   + "0a00000028000000"  # string at 40, len 10
                   + "0000000038000000"  # decimal null: offset 56
                   + "00" * 8 + "6162636465666768696a000000000000" + "00" * 16)


def test_nested_types_round_trip():
    point = ROW([DataField(0, "x", INT()), DataField(1, "label", STRING())])
    types = [ARRAY(STRING()), MAP(STRING(), BIGINT()), MULTISET(INT()), point,
             ARRAY(ARRAY(INT())), ARRAY(DECIMAL(20, 2))]
    values = [["a", None, "a long string here"], [("k1", 1), ("key number two", None)],
              [(7, 2)], {"x": 3, "label": None}, [[1, 2], None, []], [D("1.00"), None]]
    data = serialize_row(values, types)
    assert deserialize_row(data, types) == values
    assert len(data[4:]) % 8 == 0


def test_nested_array_layout():
    # ARRAY<INT> [1, null, 3]: count 3, null bit 1, header 8, 3×4 bytes -> fixed part 24
    got = row_hex([[1, None, 3]], [ARRAY(INT())])
    assert got[16:32] == "1800000010000000"  # size 24 at offset 16
    assert got[32:] == "03000000" "02000000" "01000000" "00000000" "03000000" "00000000"


def test_deserialize_rejects_wrong_arity():
    with pytest.raises(CorruptFile):
        deserialize_row(serialize_row([1], [INT()]), [INT(), INT()])


# --- encode_rows == serialize_row ------------------------------------------------------------

ATOMIC = [BOOLEAN(), TINYINT(), SMALLINT(), INT(), BIGINT(), FLOAT(), DOUBLE(), DECIMAL(10, 2),
          DECIMAL(18, 0), DECIMAL(38, 4), CHAR(3), VARCHAR(20), STRING(), BINARY(4), BYTES(),
          DATE(), TIME(3), TIMESTAMP(0), TIMESTAMP(3), TIMESTAMP(6), TIMESTAMP(9),
          TIMESTAMP_LTZ(3), TIMESTAMP_LTZ(6)]

_TEXT = st.one_of(st.text(max_size=30),
                  st.sampled_from(["", "abcdefg", "abcdefgh", "abcdefghi", "é😀x", "ab\0",
                                   "x" * 700]))
_BLOB = st.one_of(st.binary(max_size=12),
                  st.sampled_from([b"", b"1234567", b"12345678", b"123456789"]))
_STAMP = st.datetimes(min_value=dt.datetime(1800, 1, 1), max_value=dt.datetime(2200, 1, 1))


def _values(t):
    root = t.root
    ints = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
    if root == "BOOLEAN":
        return st.booleans()
    if root in ints:
        bits = ints[root]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if root == "FLOAT":
        return st.floats(width=32)
    if root == "DOUBLE":
        return st.floats()
    if root == "DECIMAL":
        limit = 10 ** t.precision - 1
        wide = decimal.Context(prec=60)
        return st.integers(-limit, limit).map(lambda u: D(u).scaleb(-t.scale, wide))
    if root in ("CHAR", "VARCHAR"):
        return _TEXT
    if root == "BINARY":
        return st.binary(min_size=4, max_size=4)
    if root == "VARBINARY":
        return _BLOB
    if root == "DATE":
        return st.dates(min_value=dt.date(1000, 1, 1))
    if root == "TIME":
        return st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))
    unit = 10 ** (6 - min(t.precision, 6))
    stamps = _STAMP.map(lambda v: v.replace(microsecond=v.microsecond // unit * unit))
    if root == "TIMESTAMP_LTZ":
        return stamps.map(lambda v: v.replace(tzinfo=UTC))
    return stamps


@st.composite
def tables(draw):
    types = draw(st.lists(st.sampled_from(ATOMIC), min_size=1, max_size=5))
    n = draw(st.integers(0, 12))
    columns = [draw(st.lists(st.one_of(st.none(), _values(t)), min_size=n, max_size=n))
               for t in types]
    return types, columns


def _arrow(values, t):
    arrow_type = pa.binary(4) if t.root == "BINARY" else to_arrow_type(t)
    return pa.array(values, arrow_type)


def _same(got, want):
    """List equality where NaN equals NaN."""
    return len(got) == len(want) and all(
        g == w or (isinstance(g, float) and isinstance(w, float) and g != g and w != w)
        for g, w in zip(got, want))


def _check_same_as_serialize(types, columns):
    arrays = [_arrow(c, t) for c, t in zip(columns, types)]
    buffer, offsets = encode_rows(arrays, types)
    n = len(arrays[0])
    assert offsets.dtype == np.int64 and len(offsets) == n + 1
    for i in range(n):
        row = [a[i].as_py() for a in arrays]
        expected = serialize_row(row, types)
        assert buffer[offsets[i]:offsets[i + 1]].tobytes() == expected[4:], (i, row)
        assert _same(deserialize_row(expected, types), row)
    hashes = hash_rows(buffer, offsets)
    rows = [buffer[offsets[i]:offsets[i + 1]].tobytes() for i in range(n)]
    assert hashes.tolist() == [mmh3.hash(row, 42, signed=True) for row in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_encode_rows_matches_serialize_row(case):
    _check_same_as_serialize(*case)


def test_encode_rows_mixed_lengths_and_slices():
    types = [STRING(), DECIMAL(38, 2), TIMESTAMP(6), BIGINT()]
    strings = ["", "a", "abcdefg", "abcdefgh", "abcdefghi", None, "x" * 600, "é" * 5]
    columns = [strings, [D("1.5"), None] * 4,
               [dt.datetime(2024, 1, 1, 0, 0, 0, 123456), None] * 4, list(range(8))]
    _check_same_as_serialize(types, columns)
    sliced = [_arrow(c, t).slice(3, 4) for c, t in zip(columns, types)]
    buffer, offsets = encode_rows(sliced, types)
    for i in range(4):
        row = [a[i].as_py() for a in sliced]
        assert buffer[offsets[i]:offsets[i + 1]].tobytes() == serialize_row(row, types)[4:]


def test_encode_rows_chunked_and_nested_columns():
    point = ROW([DataField(0, "x", INT()), DataField(1, "tags", ARRAY(STRING()))])
    types = [INT(), point, MAP(STRING(), INT()), ARRAY(BIGINT())]
    columns = [
        pa.chunked_array([pa.array([1, 2], pa.int32()), pa.array([None], pa.int32())]),
        pa.array([{"x": 1, "tags": ["a", "bcdefghijk"]}, None, {"x": None, "tags": []}],
                 to_arrow_type(point)),
        pa.array([[("k", 1)], [], None], to_arrow_type(types[2])),
        pa.array([[1, None], None, []], to_arrow_type(types[3])),
    ]
    buffer, offsets = encode_rows(columns, types)
    for i in range(3):
        row = [pa.chunked_array(c).combine_chunks()[i].as_py() if isinstance(c, pa.ChunkedArray)
               else c[i].as_py() for c in columns]
        expected = serialize_row(row, types)
        assert buffer[offsets[i]:offsets[i + 1]].tobytes() == expected[4:]
        assert deserialize_row(expected, types) == row


@pytest.mark.parametrize("strings", [
    ["abcdefghij"] * 5,  # equal lengths: copied as one matrix
    ["k" * 520] * 3,  # equal and long
    ["abcdefghij", "x" * 520, "abc", "y" * 16, "z" * 9],  # short, long, inline mixed
])
def test_encode_rows_string_layouts(strings):
    types = [STRING(), BIGINT(), STRING()]
    _check_same_as_serialize(types, [strings, list(range(len(strings))), strings[::-1]])
    _check_same_as_serialize([STRING()], [strings])


def test_hash_bytes_handles_tails():
    for data in [b"", b"a", b"ab", b"abc", b"abcd", b"abcde", bytes(range(37))]:
        assert hash_bytes(data) == mmh3.hash(data, 42, signed=True)


@pytest.mark.parametrize("with_mmh3", [True, False])
def test_hash_rows_ragged_and_long_rows(with_mmh3, monkeypatch):
    if not with_mmh3:  # the pure-numpy path for long rows
        monkeypatch.setattr(murmur, "mmh3", None)
    rng = np.random.default_rng(1)
    rows = [rng.integers(0, 256, 4 * int(k), dtype=np.uint8).tobytes()
            for k in [0, 1, 2, 5, 5, 3, 700, 1, 600]]
    buffer = np.frombuffer(b"".join(rows), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    assert hash_rows(buffer, offsets).tolist() == [mmh3.hash(r, 42, signed=True) for r in rows]


def test_hash_rows_leaves_its_input_alone():
    buffer = np.arange(16, dtype=np.uint8)
    hash_rows(buffer, np.array([0, 16]))
    assert buffer.tolist() == list(range(16))


def test_encode_rows_accepts_other_arrow_layouts():
    """Dictionary, large/view strings, narrower ints, time64 and coarser timestamp units."""
    words = ["", "short", "a much longer value", None]
    cases = [
        (STRING(), pa.array(words).dictionary_encode()),
        (STRING(), pa.array(words, pa.large_string())),
        (STRING(), pa.array(words, pa.string_view())),
        (BYTES(), pa.array([b"12345678", None, b"", b"x"], pa.large_binary())),
        (BIGINT(), pa.array([1, -2, None, 3], pa.int32())),
        (TIME(6), pa.array([dt.time(1, 2, 3, 456789), None, dt.time(0), dt.time(23, 59)],
                           pa.time64("us"))),
        (TIMESTAMP(6), pa.array([dt.datetime(1969, 12, 31, 23, 59, 59), None] * 2,
                                pa.timestamp("s"))),
        (TIMESTAMP_LTZ(9), pa.array([-1, 1_700_000_000_123_456_789, None, 0],
                                    pa.timestamp("ns", tz="UTC"))),
    ]
    for t, column in cases:
        buffer, offsets = encode_rows([column], [t])
        for i in range(len(column)):
            value = column[i].as_py()
            expected = serialize_row([value], [t])[4:]
            assert buffer[offsets[i]:offsets[i + 1]].tobytes() == expected, (t, value)


def test_encode_rows_all_null_and_empty_columns():
    types = [STRING(), DECIMAL(38, 2), TIMESTAMP(9), BIGINT()]
    columns = [pa.nulls(3, to_arrow_type(t)) for t in types]
    buffer, offsets = encode_rows(columns, types)
    expected = serialize_row([None] * 4, types)[4:]
    assert [buffer[offsets[i]:offsets[i + 1]].tobytes() for i in range(3)] == [expected] * 3
    buffer, offsets = encode_rows([pa.array([], to_arrow_type(t)) for t in types], types)
    assert len(buffer) == 0 and offsets.tolist() == [0]


def test_nanosecond_timestamps_round_trip():
    for arrow_type, t in [(pa.timestamp("ns"), TIMESTAMP(9)),
                          (pa.timestamp("ns", tz="UTC"), TIMESTAMP_LTZ(9))]:
        column = pa.array([1_700_000_000_123_456_789, -1, None], arrow_type)
        values = column.to_pylist()
        assert [deserialize_row(serialize_row([v], [t]), [t])[0] for v in values] == values
