"""Option `bucket-function.type` (default, mod, hive) as Java Paimon 2.0 computes buckets.

Java: org.apache.paimon.bucket.{DefaultBucketFunction, ModBucketFunction, HiveBucketFunction,
HiveHasher}; the writers (FixedBucketRowKeyExtractor) and the scan's bucket pruning
(operation/BucketSelector) build the function from the table's option. The known answers below
are worked out by hand from those classes (each says how), never from tarn's code; the table
tests compare where rows land on disk with `java_bucket`, a row-at-a-time transcription of the
Java algorithm kept in this file.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tarn
from tarn.bucket import bucket_ids, hive_field_hashes, hive_hashes
from tarn.errors import InvalidOption, SchemaEvolutionError, TarnError
from tarn.meta.schema import SetOption
from tarn.types import (BIGINT, BINARY, BOOLEAN, DATE, DECIMAL, DOUBLE, FLOAT, INT, SMALLINT, STRING, TIME,
                        TIMESTAMP, TINYINT, DataField, to_arrow_type)

# ---------------------------------------------------------------------------------------------
# the Java algorithm, one row at a time (the reference the vectorised code is checked against)


def java_int(value: int) -> int:
    """A Python int wrapped to Java's 32-bit int."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def hive_hash_of(value, root: str) -> int:
    """HiveBucketFunction.computeHash of one value of a Paimon type."""
    if value is None:
        return 0
    if root == "BOOLEAN":
        return 1 if value else 0
    if root in ("TINYINT", "SMALLINT", "INT"):
        return java_int(value)
    if root == "DATE":
        return (value - dt.date(1970, 1, 1)).days
    if root == "TIME":
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if root == "BIGINT":
        bits = value & 0xFFFFFFFFFFFFFFFF
        return java_int(bits ^ (bits >> 32))  # Long.hashCode
    if root == "FLOAT":
        if value == 0:
            return 0
        if value != value:
            return 0x7FC00000  # Float.floatToIntBits: the canonical NaN
        return java_int(struct.unpack("<I", struct.pack("<f", value))[0])
    if root == "DOUBLE":
        if value == 0:
            bits = 0
        elif value != value:
            bits = 0x7FF8000000000000
        else:
            bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return java_int(bits ^ (bits >> 32))
    if root in ("VARCHAR", "CHAR", "BINARY", "VARBINARY"):
        data = value.encode() if isinstance(value, str) else value
        h = 0
        for b in data:  # Java bytes are signed
            h = java_int(31 * h + (b - 256 if b > 127 else b))
        return h
    if root == "DECIMAL":  # BigDecimal.hashCode of HiveHasher.normalizeDecimal(value)
        if value == 0:
            return 0
        sign, digits, exponent = value.as_tuple()
        unscaled, scale = int("".join(map(str, digits))), -exponent
        while scale > 0 and unscaled % 10 == 0:  # stripTrailingZeros, then setScale(0) if negative
            unscaled, scale = unscaled // 10, scale - 1
        h = 0
        for shift in range(96, -1, -32):  # BigInteger.hashCode: the magnitude's int words
            h = java_int(31 * h + ((unscaled >> shift) & 0xFFFFFFFF))
        return java_int(31 * (-h if sign else h) + scale)
    raise AssertionError(root)


def java_bucket(function: str, values: list, roots: list[str], n: int) -> int:
    """Java's bucket of one key (its field values) for `n` buckets; mod and hive only."""
    if function == "mod":
        return (values[0] or 0) % n  # Math.floorMod (Python's % floors too); a null slot reads 0
    h = 0
    for value, root in zip(values, roots):
        h = java_int(31 * h + hive_hash_of(value, root))
    return (h & 0x7FFFFFFF) % n


def fields_of(*types) -> list[DataField]:
    return [DataField(i, f"k{i}", t) for i, t in enumerate(types)]


def keys_table(fields: list[DataField], rows: list[tuple]) -> pa.Table:
    columns = [pa.array([r[i] for r in rows], type=to_arrow_type(f.type)) for i, f in enumerate(fields)]
    return pa.Table.from_arrays(columns, names=[f.name for f in fields])


# ---------------------------------------------------------------------------------------------
# known answers


def test_mod_known_answers():
    # ModBucketFunctionTest (Java 2.0): INT 1 -> 1, 7 -> 2, -2 -> 3 and BIGINT 8 -> 3, 0 -> 0,
    # -3 -> 2 with 5 buckets: Math.floorMod, the remainder taking the divisor's sign.
    ints = fields_of(INT())
    assert bucket_ids(keys_table(ints, [(1,), (7,), (-2,)]), ints, 5, "mod").tolist() == [1, 2, 3]
    longs = fields_of(BIGINT())
    assert bucket_ids(keys_table(longs, [(8,), (0,), (-3,)]), longs, 5, "mod").tolist() == [3, 0, 2]
    # extremes: -2**31 = 5 * -429496730 + 2; 2**31 - 1 = 5 * 429496729 + 2; -2**63 = 7 * q + 6
    # (2**63 = 7 * 1317624576693539401 + 1); 2**63 - 1 divisible by 7; a null key reads the zeroed slot: 0
    assert bucket_ids(keys_table(ints, [(-2**31,), (2**31 - 1,), (None,)]), ints, 5, "mod").tolist() == [2, 2, 0]
    assert bucket_ids(keys_table(longs, [(-2**63,), (2**63 - 1,), (-1,)]), longs, 7, "mod").tolist() == [6, 0, 6]


def test_hive_known_answers():
    # HiveBucketFunctionTest (Java 2.0): the row (INT 7, STRING 'hello', BYTES {1,2,3},
    # DECIMAL(10,4) 12.3400), 8 buckets. Field hashes: 7; 'hello' = ((((104*31+101)*31+108)*31+108)*31+111
    # = 99162322; {1,2,3} = (1*31+2)*31+3 = 1026; 12.3400 normalised to 12.34 = unscaled 1234,
    # scale 2: BigDecimal.hashCode = 31*1234 + 2 = 38256. Row: h = 31*h + field from 0 (int wrap)
    # = 805989529, bucket = (h & 0x7fffffff) % 8 = 1.
    fields = fields_of(INT(), STRING(), BINARY(2147483647), DECIMAL(10, 4))
    row = (7, "hello", b"\x01\x02\x03", decimal.Decimal("12.3400"))
    table = keys_table(fields, [row])
    assert [hive_field_hashes(table.column(i), f).view(np.int32)[0] for i, f in enumerate(fields)] == \
        [7, 99162322, 1026, 38256]
    assert hive_hashes(table, fields).tolist() == [805989529]
    assert bucket_ids(table, fields, 8, "hive").tolist() == [1]
    # testHiveBucketFunctionWithNulls: (null INT, null STRING) -> 0
    nulls = fields_of(INT(), STRING())
    assert bucket_ids(keys_table(nulls, [(None, None)]), nulls, 4, "hive").tolist() == [0]


@pytest.mark.parametrize("field_type, value, expected", [
    (INT(), -5, -5),  # hashInt: the int itself
    (TINYINT(), -1, -1),  # Byte.intValue sign-extends
    (SMALLINT(), 300, 300),
    (BOOLEAN(), True, 1),
    (DATE(), dt.date(1970, 1, 2), 1),  # days since the epoch
    (TIME(), dt.time(1, 0, 0), 3_600_000),  # millis of the day
    (BIGINT(), -1, 0),  # Long.hashCode: 0xffffffff ^ 0xffffffff
    (BIGINT(), 2**32, 1),  # the high word 1, the low word 0
    (FLOAT(), 1.5, 0x3FC00000),  # floatToIntBits(1.5)
    (FLOAT(), -0.0, 0),  # -0.0f == -0.0f: 0
    (FLOAT(), float("nan"), 0x7FC00000),  # the canonical NaN's bits
    (DOUBLE(), 1.5, 0x3FF80000),  # bits 0x3ff8000000000000: high ^ low
    (DOUBLE(), float("nan"), 0x7FF80000),
    (STRING(), "é", -1978),  # UTF-8 c3 a9 as signed bytes -61, -87: -61*31 - 87
    (STRING(), "", 0),
    (DECIMAL(5, 2), decimal.Decimal("-12.34"), -38252),  # -(31*1234) + 2: the sign goes on the magnitude's hash
    (DECIMAL(5, 2), decimal.Decimal("100.00"), 3100),  # stripped to 100 (scale 0, never below)
    (DECIMAL(5, 2), decimal.Decimal("0.00"), 0),  # BigDecimal.ZERO
    (DECIMAL(38, 0), decimal.Decimal(2**32 + 5), 1116),  # words (1, 5): 31*(31*1 + 5)
])
def test_hive_field_hashes(field_type, value, expected):
    field = DataField(0, "k", field_type)
    table = keys_table([field], [(value,), (None,)])
    assert hive_field_hashes(table.column(0), field).view(np.int32).tolist() == [expected, 0]
    assert hive_hash_of(value, field_type.root) == expected  # the reference agrees


def test_vectorised_hive_equals_the_java_algorithm_row_by_row():
    rng = np.random.default_rng(7)
    n = 400
    decimal.getcontext().prec = 50
    strings = ["".join(chr(c) for c in rng.integers(32, 0x3000, size=int(k))) for k in rng.integers(0, 40, size=n)]
    decimals = [decimal.Decimal(int(v)).scaleb(-10) * 10**int(e) for v, e in
                zip(rng.integers(-10**18, 10**18, size=n), rng.integers(0, 17, size=n))]
    columns = {
        "INT": (INT(), [int(v) for v in rng.integers(-2**31, 2**31, size=n)]),
        "BIGINT": (BIGINT(), [int(v) for v in rng.integers(-2**63, 2**63 - 1, size=n)]),
        "STRING": (STRING(), strings),
        "DECIMAL": (DECIMAL(38, 10), decimals),
        "DOUBLE": (DOUBLE(), [float(v) for v in rng.normal(size=n)]),
        "DATE": (DATE(), [dt.date(1900, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 100_000, size=n)]),
    }
    for roots in (["INT"], ["STRING"], ["DECIMAL"], ["BIGINT", "STRING", "DOUBLE", "DATE", "DECIMAL", "INT"]):
        fields = fields_of(*[columns[r][0] for r in roots])
        rows = [tuple(None if (i * 7 + j) % 11 == 0 else columns[r][1][i] for j, r in enumerate(roots))
                for i in range(n)]
        got = bucket_ids(keys_table(fields, rows), fields, 13, "hive").tolist()
        assert got == [java_bucket("hive", list(r), [f.type.root for f in fields], 13) for r in rows]


def test_long_strings_hash_across_blocks(monkeypatch):
    import tarn.bucket

    monkeypatch.setattr(tarn.bucket, "_BYTES_PER_BLOCK", 64)  # many blocks, strings spanning them
    fields = fields_of(STRING())
    rows = [("x" * k + "é" * (k % 5),) for k in range(0, 300, 7)] + [(None,)]
    got = bucket_ids(keys_table(fields, rows), fields, 1000, "hive").tolist()
    assert got == [java_bucket("hive", list(r), ["VARCHAR"], 1000) for r in rows]


def test_default_is_unchanged():
    fields = fields_of(BIGINT())
    table = keys_table(fields, [(1,), (2,), (3,), (4,)])
    # FORMAT.md §6 vectors of tests/test_bucket.py for N = 4
    assert bucket_ids(table, fields, 4).tolist() == [2, 0, 1, 2]
    assert bucket_ids(table, fields, 4, "default").tolist() == [2, 0, 1, 2]
    assert bucket_ids(table, fields, 4, "DEFAULT").tolist() == [2, 0, 1, 2]


def test_bucket_ids_refuse_keys_the_function_cannot_take():
    with pytest.raises(InvalidOption, match="exactly one bucket key column"):
        f = fields_of(INT(), INT())
        bucket_ids(keys_table(f, [(1, 2)]), f, 4, "mod")
    with pytest.raises(InvalidOption, match="INT or BIGINT; column 'k0' is SMALLINT"):
        f = fields_of(SMALLINT())
        bucket_ids(keys_table(f, [(1,)]), f, 4, "mod")
    with pytest.raises(InvalidOption, match="'hive' cannot hash bucket key column 'k0' of type TIMESTAMP"):
        f = fields_of(TIMESTAMP(6))
        bucket_ids(keys_table(f, [(None,)]), f, 4, "hive")


# ---------------------------------------------------------------------------------------------
# tables: rows on disk, pruning, errors


def ids_on_disk(table, column: str = "id") -> dict[int, list]:
    """{bucket: sorted key values} of the live data files, by the bucket-<n> directory each is in."""
    live = {e.file.file_name for e in table.live_entries(table.latest_snapshot())}
    out = {}
    for root, _, files in os.walk(table.root):
        name = os.path.basename(root)
        if not name.startswith("bucket-"):
            continue
        for file in files:
            if file in live:
                keys = pq.read_table(os.path.join(root, file), columns=[column]).column(column).to_pylist()
                out.setdefault(int(name[len("bucket-"):]), []).extend(keys)
    return {b: sorted(v, key=lambda x: (x is None, x)) for b, v in out.items()}


def scanned_buckets(scan) -> list[int]:
    return sorted({split.bucket for split in scan.plan()})


IDS = list(range(-7, 13))


@pytest.mark.parametrize("key_type", [pa.int32(), pa.int64()])
def test_mod_table_places_rows_and_prunes(catalog, key_type):
    schema = pa.schema([pa.field("id", key_type, nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.mod", schema=schema, primary_key=["id"],
                             options={"bucket": "4", "bucket-function.type": "mod"})
    t.write(pa.table({"id": pa.array(IDS, key_type), "v": [f"v{i}" for i in IDS]}))
    assert ids_on_disk(t) == {b: sorted(i for i in IDS if i % 4 == b) for b in range(4)}

    five = t.scan(filter="id = 5")
    assert scanned_buckets(five) == [1]  # floorMod(5, 4)
    assert five.to_arrow().to_pylist() == [{"id": 5, "v": "v5"}]
    assert scanned_buckets(t.scan(filter="id = -3")) == [1]  # floorMod(-3, 4) = 1, not -3 % 4 = -3
    both = t.scan(filter=tarn.col("id").isin([-3, 2]) & (tarn.col("v") != "x"))
    assert scanned_buckets(both) == [1, 2]
    assert sorted(r["id"] for r in both.to_arrow().to_pylist()) == [-3, 2]
    assert scanned_buckets(t.scan(filter="id = 5 or id = 6")) == [1, 2]
    assert scanned_buckets(t.scan(filter="id > 5")) == [0, 1, 2, 3]  # not an equality: every bucket

    # upserts and deletes of a key find it in its bucket: one row per key
    t.write(pa.table({"id": pa.array([5, -3], key_type), "v": ["new5", "new-3"]}))
    t.delete(pa.table({"id": pa.array([6], key_type)}))
    rows = {r["id"]: r["v"] for r in t.scan().to_arrow().to_pylist()}
    assert len(rows) == len(IDS) - 1 and rows[5] == "new5" and rows[-3] == "new-3" and 6 not in rows
    assert t.scan(filter="id = 5").to_arrow().column("v").to_pylist() == ["new5"]


def test_hive_table_places_rows_and_prunes(catalog):
    schema = pa.schema([pa.field("name", pa.string(), nullable=False), pa.field("n", pa.int64(), nullable=False),
                        ("v", pa.float64())])
    t = catalog.create_table("db.hive", schema=schema, primary_key=["name", "n"],
                             options={"bucket": "5", "bucket-function.type": "hive"})
    names = ["alpha", "beta", "gamma", "é", "", "z" * 40]
    rows = [(name, n) for name in names for n in (-(2**40), -1, 0, 7, 2**33)]
    t.write(pa.table({"name": [r[0] for r in rows], "n": [r[1] for r in rows], "v": [1.0] * len(rows)}))
    expected: dict[int, list] = {}
    for name, n in rows:
        expected.setdefault(java_bucket("hive", [name, n], ["VARCHAR", "BIGINT"], 5), []).append(name)
    assert ids_on_disk(t, "name") == {b: sorted(v) for b, v in expected.items()}

    scan = t.scan(filter=(tarn.col("name") == "gamma") & (tarn.col("n") == 7))
    assert scanned_buckets(scan) == [java_bucket("hive", ["gamma", 7], ["VARCHAR", "BIGINT"], 5)]
    assert scan.to_arrow().to_pylist() == [{"name": "gamma", "n": 7, "v": 1.0}]
    gamma = t.scan(filter="name = 'gamma'")  # n unknown: no bucket pruning (key stats may still skip files)
    assert set(scanned_buckets(gamma)) >= {b for b, names in expected.items() if "gamma" in names}
    assert gamma.count() == 5


def test_hive_append_table_with_bucket_key(catalog):
    schema = pa.schema([("d", pa.date32()), ("x", pa.int32())])
    t = catalog.create_table("db.events", schema=schema,
                             options={"bucket": "3", "bucket-key": "d", "bucket-function.type": "hive"})
    days = [dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in range(9)] + [None]
    t.write(pa.table({"d": days, "x": list(range(10))}))
    expected: dict[int, list] = {}
    for day in days:
        expected.setdefault(java_bucket("hive", [day], ["DATE"], 3), []).append(day)
    assert ids_on_disk(t, "d") == {b: sorted(v, key=lambda x: (x is None, x)) for b, v in expected.items()}
    scan = t.scan(filter=tarn.col("d") == dt.date(2026, 1, 4))
    assert scanned_buckets(scan) == [java_bucket("hive", [dt.date(2026, 1, 4)], ["DATE"], 3)]
    assert scan.to_arrow().column("x").to_pylist() == [3]


def test_default_tables_prune_too(catalog):
    """Java's BucketSelector prunes every fixed-bucket table; results equal the unpruned read."""
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("d", pa.decimal128(12, 3), nullable=False),
                        ("v", pa.int64())])
    t = catalog.create_table("db.plain", schema=schema, primary_key=["k", "d"], options={"bucket": "8"})
    keys = [(f"k{i % 7}", decimal.Decimal(i).scaleb(-3)) for i in range(60)]
    t.write(pa.table({"k": [k for k, _ in keys], "d": [d for _, d in keys], "v": list(range(60))}, schema=schema))
    every = t.scan().to_arrow().to_pylist()
    for predicate, most in [
        ((tarn.col("k") == "k3") & (tarn.col("d") == decimal.Decimal("0.010")), 1),  # one key: one bucket
        (tarn.col("k").isin(["k1", "k2"]) & tarn.col("d").isin([decimal.Decimal("0.015"), 1]), 4),
        ((tarn.col("k") == "k3") & (tarn.col("d") == decimal.Decimal("0.0101")), 8),  # no DECIMAL(12,3): no pruning
        ((tarn.col("k") == "k3") & (tarn.col("k") == "k4") & (tarn.col("d") == 1), 8),  # contradiction: as Java, none
        ((tarn.col("k") == None) & (tarn.col("d") == 1), 0),  # noqa: E711 (= NULL: no key, no bucket)
    ]:
        scan = t.scan(filter=predicate)
        got = sorted(scan.to_arrow().column("v").to_pylist())
        assert got == sorted(r["v"] for r in every if _matches(predicate, r))
        assert len(scanned_buckets(scan)) <= most


def _matches(predicate, row) -> bool:
    from tarn.scan.predicate import And, Compare, In

    if isinstance(predicate, And):
        return all(_matches(c, row) for c in predicate.children)
    if isinstance(predicate, Compare):
        return predicate.value is not None and row[predicate.column] == predicate.value
    if isinstance(predicate, In):
        return row[predicate.column] in predicate.values
    raise AssertionError(predicate)


def test_rescale_moves_rows_by_the_function(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.rescaled", schema=schema, primary_key=["id"],
                             options={"bucket": "2", "bucket-function.type": "mod"})
    t.write(pa.table({"id": IDS, "v": ["x"] * len(IDS)}, schema=schema))
    t.rescale(bucket=3)
    assert ids_on_disk(t) == {b: sorted(i for i in IDS if i % 3 == b) for b in range(3)}
    assert t.scan(filter="id = -7").to_arrow().column("id").to_pylist() == [-7]


@pytest.mark.parametrize("columns, keys, options, message", [
    ([("id", pa.string())], ["id"], {"bucket": "4", "bucket-function.type": "mod"},
     "needs a bucket key of type INT or BIGINT; column 'id' is STRING"),
    ([("id", pa.int16())], ["id"], {"bucket": "4", "bucket-function.type": "mod"},
     "column 'id' is SMALLINT"),  # Java takes INTEGER and BIGINT only
    ([("id", pa.date32())], ["id"], {"bucket": "4", "bucket-function.type": "mod"}, "column 'id' is DATE"),
    ([("a", pa.int32()), ("b", pa.int32())], ["a", "b"], {"bucket": "4", "bucket-function.type": "mod"},
     r"needs exactly one bucket key column, the bucket key is \['a', 'b'\]"),
    ([("a", pa.int32()), ("ts", pa.timestamp("us"))], ["a", "ts"], {"bucket": "2", "bucket-function.type": "hive"},
     "'hive' cannot hash bucket key column 'ts' of type TIMESTAMP"),
    ([("a", pa.int32()), ("tags", pa.list_(pa.string()))], [], {"bucket": "2", "bucket-key": "tags",
                                                                "bucket-function.type": "Hive"},
     "'hive' cannot hash bucket key column 'tags' of type ARRAY"),
    ([("a", pa.int32()), ("s", pa.string())], [], {"bucket": "2", "bucket-key": "s",
                                                   "bucket-function.type": "mod"}, "column 's' is STRING"),
])
def test_creation_refuses_keys_the_function_cannot_take(catalog, columns, keys, options, message):
    schema = pa.schema(columns)
    with pytest.raises(InvalidOption) as error:
        catalog.create_table("db.bad", schema=schema, primary_key=keys or None, options=options)
    assert str(error.value).startswith("table db.bad: option 'bucket-function.type'=")
    assert re.search(message, str(error.value))
    assert not catalog.table_exists("db.bad")


def test_dynamic_and_unaware_buckets_ignore_the_function(catalog):
    """Java consults the function for fixed buckets only: with bucket = -1 it is accepted and unused."""
    schema = pa.schema([pa.field("s", pa.string(), nullable=False), ("v", pa.int64())])
    dynamic = catalog.create_table("db.dyn", schema=schema, primary_key=["s"], options={"bucket-function.type": "mod"})
    dynamic.write(pa.table({"s": ["a", "b"], "v": [1, 2]}, schema=schema))
    assert dynamic.scan(filter="s = 'b'").to_arrow().column("v").to_pylist() == [2]
    unaware = catalog.create_table("db.unaware", schema=schema, options={"bucket-function.type": "hive"})
    unaware.write(pa.table({"s": ["a"], "v": [1]}, schema=schema))
    assert unaware.scan().count() == 1


def test_the_option_cannot_change(catalog):
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False)])
    t = catalog.create_table("db.fixed", schema=schema, primary_key=["id"], options={"bucket": "2"})
    with pytest.raises((InvalidOption, SchemaEvolutionError), match="bucket-function.type"):
        t.alter(SetOption("bucket-function.type", "mod"))


def test_a_table_another_engine_made_loads_reads_and_refuses_writes(catalog):
    """A schema carrying mod on a STRING key (Java would fail its writers): tarn loads it, reads
    it (every bucket: it cannot prune by a function the key does not fit), and refuses writes
    with the creation error before any file is written."""
    schema = pa.schema([pa.field("s", pa.string(), nullable=False), ("v", pa.int64())])
    t = catalog.create_table("db.foreign", schema=schema, primary_key=["s"], options={"bucket": "2"})
    t.write(pa.table({"s": ["a", "b", "c"], "v": [1, 2, 3]}, schema=schema))
    schema_file = os.path.join(t.root, "schema", "schema-0")
    document = json.loads(open(schema_file).read())
    document["options"]["bucket-function.type"] = "mod"
    with open(schema_file, "w") as out:
        out.write(json.dumps(document))

    loaded = tarn.load_table(t.root)
    assert loaded.scan(filter="s = 'b'").to_arrow().column("v").to_pylist() == [2]
    assert scanned_buckets(loaded.scan(filter="s = 'b'")) == sorted(ids_on_disk(t, "s"))
    before = sorted(os.path.join(r, f) for r, _, fs in os.walk(t.root) for f in fs)
    with pytest.raises(InvalidOption, match=r"option 'bucket-function.type'='mod' needs a bucket key of type "
                                            r"INT or BIGINT; column 's' is STRING"):
        loaded.write(pa.table({"s": ["d"], "v": [4]}, schema=schema))
    with pytest.raises(TarnError, match="bucket-function.type"):
        loaded.delete(pa.table({"s": ["a"]}))
    assert sorted(os.path.join(r, f) for r, _, fs in os.walk(t.root) for f in fs) == before
