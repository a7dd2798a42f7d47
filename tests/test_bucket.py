"""Fixed-bucket function: every FORMAT.md §6 vector, through bucket_ids on Arrow tables."""

import datetime as dt
import decimal

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest

from tarn.bucket import bucket_ids, row_hashes
from tarn.codec.binary_row import serialize_row
from tarn.codec.murmur import hash_bytes
from tarn.errors import InvalidOption, SchemaMismatch
from tarn.types import BIGINT, DECIMAL, INT, STRING, TIMESTAMP, DataField, arrow_schema

NS = [2, 3, 4, 10, 16]
VECTORS = [  # (key types, key values, h, buckets for N = 2, 3, 4, 10, 16)
    ([BIGINT()], [1], 1465514398, [0, 1, 2, 8, 14]),
    ([BIGINT()], [2], 1340390384, [0, 2, 0, 4, 0]),
    ([BIGINT()], [3], -771300025, [1, 1, 1, 5, 9]),
    ([BIGINT()], [4], 1447522506, [0, 0, 2, 6, 10]),
    ([INT()], [-1], 1133687267, [1, 2, 3, 7, 3]),
    ([INT()], [None], -1748325344, [0, 2, 0, 4, 0]),
    ([STRING()], ["a"], 943281246, [0, 0, 2, 6, 14]),
    ([STRING()], ["hello world!"], 609810467, [1, 2, 3, 7, 3]),
    ([INT(), STRING()], [5, "x"], 369293497, [1, 1, 1, 7, 9]),
    ([BIGINT(), STRING()], [7, "hello world!"], 102377008, [0, 1, 0, 8, 0]),
    ([DECIMAL(10, 2)], [decimal.Decimal("12.34")], -1096042293, [1, 0, 1, 3, 5]),
    ([TIMESTAMP(3)], [dt.datetime(2024, 1, 1, 0, 0, 0, 123000)], 985649424, [0, 0, 0, 4, 0]),
]


def _fields(types):
    return [DataField(i, f"k{i}", t) for i, t in enumerate(types)]


def _table(fields, rows):
    return pa.Table.from_pylist([{f.name: v for f, v in zip(fields, row)} for row in rows],
                                schema=arrow_schema(fields))


@pytest.mark.parametrize("types,values,h,buckets", VECTORS)
def test_format_vectors(types, values, h, buckets):
    fields = _fields(types)
    table = _table(fields, [values])
    assert row_hashes(table, fields).tolist() == [h]
    row = serialize_row(values, types)[4:]
    assert hash_bytes(row) == mmh3.hash(row, 42, signed=True) == h
    for n, expected in zip(NS, buckets):
        assert bucket_ids(table, fields, n).tolist() == [expected]


def test_format_vectors_in_one_table_per_key_shape():
    """Same vectors, many rows at once (exercises the vectorised paths on mixed rows)."""
    by_types = {}
    for types, values, h, buckets in VECTORS:
        by_types.setdefault(tuple(types), []).append((values, h, buckets))
    for types, cases in by_types.items():
        fields = _fields(types)
        table = _table(fields, [values for values, _, _ in cases] * 3)
        assert row_hashes(table, fields).tolist() == [h for _, h, _ in cases] * 3
        for k, n in enumerate(NS):
            assert bucket_ids(table, fields, n).tolist() == [b[k] for _, _, b in cases] * 3


def test_same_bytes_same_hash_across_types():
    ints = pa.table({"k": pa.array([1], pa.int32())})
    longs = pa.table({"k": pa.array([1], pa.int64())})
    assert row_hashes(ints, [DataField(0, "k", INT())]).tolist() == \
        row_hashes(longs, [DataField(0, "k", BIGINT())]).tolist() == [1465514398]


def test_partitioned_pk_example():
    """Partition dt, PK (dt, id), N=2: trimmed key (id) puts 1, 2, 4 in bucket 0 and 3 in 1."""
    table = pa.table({"dt": ["2024-01-01"] * 4, "id": pa.array([1, 2, 3, 4], pa.int64())})
    assert bucket_ids(table, [DataField(1, "id", BIGINT())], 2).tolist() == [0, 0, 1, 0]


def test_abs_of_remainder_not_python_modulo():
    table = pa.table({"k": pa.array([3], pa.int64())})  # h = -771300025
    assert bucket_ids(table, [DataField(0, "k", BIGINT())], 16).tolist() == [9]
    assert (-771300025) % 16 == 7  # what a naive Python `h % N` would give


def test_random_keys_match_per_row_hashing():
    rng = np.random.default_rng(7)
    ids = rng.integers(-(1 << 62), 1 << 62, 500)
    names = [None if i % 13 == 0 else "n" * int(i % 17) for i in range(500)]
    fields = [DataField(0, "id", BIGINT()), DataField(1, "name", STRING())]
    table = pa.table({"id": ids, "name": names})
    got = bucket_ids(table, fields, 7)
    rows = [serialize_row([int(i), s], [BIGINT(), STRING()])[4:] for i, s in zip(ids, names)]
    want = [abs(mmh3.hash(row, 42, signed=True)) % 7 for row in rows]
    assert got.dtype == np.int32 and got.tolist() == want


def test_errors_name_the_problem():
    table = pa.table({"a": [1]})
    with pytest.raises(SchemaMismatch, match="'b'"):
        bucket_ids(table, [DataField(0, "b", BIGINT())], 2)
    with pytest.raises(InvalidOption, match="bucket"):
        bucket_ids(table, [DataField(0, "a", BIGINT())], 0)


def test_empty_table():
    table = pa.table({"a": pa.array([], pa.int64())})
    assert bucket_ids(table, [DataField(0, "a", BIGINT())], 4).tolist() == []


FIXED_TYPES = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIME",
               "TIMESTAMP(3)", "DECIMAL(10, 2)"]


@pytest.mark.parametrize("arity", [1, 2, 5, 56, 57, 70])
def test_fixed_width_keys_hash_as_their_binary_rows(arity):
    """The word-column path for fixed-width keys equals hashing the materialised BinaryRow,
    nulls and two-word null headers (more than 56 fields) included."""
    from tarn.codec.binary_row import encode_rows, fixed_words
    from tarn.codec.murmur import hash_rows, hash_word_columns
    from tarn.types import parse_type

    rng = np.random.default_rng(arity)
    n = 300
    fields = [DataField(i, f"c{i}", parse_type(FIXED_TYPES[i % len(FIXED_TYPES)])) for i in range(arity)]
    schema = arrow_schema(fields)
    columns = []
    for f in schema:
        values = pa.array(rng.integers(0, 86_400_000, n))
        if pa.types.is_boolean(f.type):
            column = pa.array(rng.integers(0, 2, n).astype(bool))
        elif pa.types.is_decimal(f.type):
            column = pa.array([decimal.Decimal(int(v)) / 4 for v in rng.integers(-10**6, 10**6, n)]).cast(f.type)
        elif pa.types.is_floating(f.type):
            column = pa.array(rng.normal(size=n)).cast(f.type)
        elif pa.types.is_integer(f.type):
            info = np.iinfo(f.type.to_pandas_dtype())
            column = pa.array(rng.integers(info.min, info.max, n, endpoint=True)).cast(f.type)
        else:  # date, time, timestamp: from their integer storage
            storage = pa.int32() if f.type.bit_width == 32 else pa.int64()
            column = values.cast(storage).view(f.type)
        mask = rng.random(n) < 0.2
        columns.append(pa.compute.if_else(pa.array(mask), pa.nulls(n, f.type), column.cast(f.type)))
    types = [f.type for f in fields]
    words = fixed_words(columns, types)
    assert words is not None
    expected = hash_rows(*encode_rows(columns, types))
    assert (hash_word_columns(words, n) == expected).all()
    table = pa.Table.from_arrays(columns, schema=schema)
    assert (row_hashes(table, fields) == expected).all()


def test_variable_width_keys_take_the_binary_row_path():
    from tarn.codec.binary_row import fixed_words

    assert fixed_words([pa.array(["a"])], [STRING()]) is None
    assert fixed_words([pa.array([1], pa.int64()), pa.array(["b"])], [BIGINT(), STRING()]) is None
