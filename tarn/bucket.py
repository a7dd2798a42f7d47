"""Paimon's bucket functions, vectorised over Arrow tables and numpy arrays.

Fixed buckets (FORMAT.md §6):

bucket = abs(h % N), h = MurmurHash3_x86_32(seed 42) of the BinaryRow of the bucket-key fields.
Keys of fixed-width fields are hashed straight from their words (a BinaryRow of such fields is
a fixed byte pattern); others through materialised BinaryRows.

Dynamic buckets (FORMAT.md §8): the same hash `h` of the trimmed primary key; HASH index files
hold the hashes of a bucket's keys as big-endian int32s; assigner tasks split the keys of a
partition by `assigner_channels` and create only the buckets `owns_bucket` gives them.

Bucket functions (option `bucket-function.type`, Java's BucketFunction): fixed buckets (and
Paimon's postpone bucket mode) place rows by `default` (above), `mod` (one INT or BIGINT key:
floorMod(value, N), a null as 0) or `hive` (Hive's hash: h = 31 * h + hash(field) from 0, a
null hashing to 0; bucket = (h & 0x7fffffff) % N). Dynamic and unaware buckets never use them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import _plain, _string_parts, encode_rows, fixed_words
from tarn.codec.murmur import hash_bytes, hash_rows, hash_word_columns
from tarn.errors import CorruptFile, InvalidOption, SchemaMismatch, TarnError
from tarn.options import as_options
from tarn.types import TYPE_TRAITS, DataField, to_arrow_type, type_to_sql, type_traits


def row_hashes(table: pa.Table, key_fields: list[DataField]) -> np.ndarray:
    """Signed int32 hash of each row's bucket-key BinaryRow."""
    if not key_fields:
        raise SchemaMismatch("bucket key is empty: set 'bucket-key' or a primary key")
    columns = []
    for field in key_fields:
        if field.name not in table.column_names:
            raise SchemaMismatch(f"bucket key column {field.name!r} is missing from the data")
        columns.append(table.column(field.name))
    types = [f.type for f in key_fields]
    try:
        words = fixed_words(columns, types)  # fixed-width keys: no BinaryRow materialised
        if words is not None:
            return hash_word_columns(words, table.num_rows)
        buffer, offsets = encode_rows(columns, types)
    except SchemaMismatch as e:
        raise SchemaMismatch(f"bucket key {[f.name for f in key_fields]}: {e}") from None
    return hash_rows(buffer, offsets)


def bucket_ids(table: pa.Table, key_fields: list[DataField], num_buckets: int, function: str = "default") -> np.ndarray:
    """Bucket of each row for a fixed bucket count `num_buckets` (option 'bucket' > 0) by the
    table's bucket function (`bucket_function(options)`: default, mod or hive)."""
    if num_buckets <= 0:
        raise InvalidOption(f"option 'bucket' must be > 0 for fixed bucketing, got {num_buckets}")
    function = function.lower()
    if function == DEFAULT:
        hashes = row_hashes(table, key_fields).astype(np.int64)
        return (np.abs(hashes) % num_buckets).astype(np.int32)
    if function not in (MOD, HIVE):
        raise InvalidOption(f"option '{FUNCTION_OPTION}' has invalid value '{function}' (default, mod or hive)")
    problem = function_problem(function, key_fields)
    if problem:
        raise InvalidOption(problem)
    if function == MOD:
        values = _integers(_key_columns(table, key_fields)[0], key_fields[0].type.root)
        return np.mod(values, num_buckets).astype(np.int32)  # floorMod: never negative
    hashes = hive_hashes(table, key_fields).astype(np.int64)
    return ((hashes & _MASK31) % num_buckets).astype(np.int32)


# ---------------------------------------------------------------------------------------------
# bucket functions: option `bucket-function.type` (Java's BucketFunction and its three kinds)

FUNCTION_OPTION = "bucket-function.type"
DEFAULT, MOD, HIVE = "default", "mod", "hive"
POSTPONE_BUCKET = -2
# ModBucketFunction takes INTEGER or BIGINT; HiveBucketFunction raises on other types (types.TYPE_TRAITS)
MOD_KEY_TYPES = tuple(root for root, t in TYPE_TRAITS.items() if t.mod_key)
HIVE_KEY_TYPES = tuple(root for root, t in TYPE_TRAITS.items() if t.hive_key)
_MASK31 = 0x7FFFFFFF
_MASK32 = 0xFFFFFFFF
_BYTES_PER_BLOCK = 1 << 22  # string bytes hashed at once (bounds the index arrays)


def bucket_function(options) -> str:
    """The table's bucket function, 'default', 'mod' or 'hive' (`bucket-function.type`, any
    case); `options`: Options or a dict of the table's options."""
    return as_options(options).enum(FUNCTION_OPTION)


def uses_bucket_function(bucket: int) -> bool:
    """Does a table with this `bucket` option place rows by its bucket function? Fixed buckets
    (> 0) and postpone mode (-2, whose compaction assigns buckets) do; with -1 (dynamic or
    unaware buckets) Java never consults `bucket-function.type`."""
    return bucket > 0 or bucket == POSTPONE_BUCKET


def function_problem(function: str, key_fields: list[DataField]) -> str | None:
    """Why `function` cannot place rows by these bucket-key fields (None: it can), by the rules
    of Java's ModBucketFunction (one INT or BIGINT field) and HiveBucketFunction (the types its
    hash takes)."""
    if function == MOD:
        if len(key_fields) != 1:
            return (f"option '{FUNCTION_OPTION}'='mod' needs exactly one bucket key column, the bucket key "
                    f"is {[f.name for f in key_fields]}")
        field = key_fields[0]
        if not type_traits(field.type).mod_key:
            return (f"option '{FUNCTION_OPTION}'='mod' needs a bucket key of type INT or BIGINT; column "
                    f"'{field.name}' is {type_to_sql(field.type)}")
    elif function == HIVE:
        for field in key_fields:
            if not type_traits(field.type).hive_key:
                return (f"option '{FUNCTION_OPTION}'='hive' cannot hash bucket key column '{field.name}' of "
                        f"type {type_to_sql(field.type)} (Hive's hash takes {', '.join(HIVE_KEY_TYPES)})")
    return None


def check_bucket_function(schema, identifier: str, options=None) -> None:
    """Raise InvalidOption naming the table, the option and the column when the table places
    rows by a bucket function that cannot take its bucket key. `schema`: the TableSchema;
    `options`: the options to write with when they differ from the schema's (a rescale)."""
    options = as_options(schema.options if options is None else options)
    function = bucket_function(options)
    if function == DEFAULT or not uses_bucket_function(options.bucket):
        return
    key_fields = [schema.field(k) for k in schema.bucket_keys]
    problem = function_problem(function, key_fields) if key_fields else None
    if problem:
        raise InvalidOption(f"table {identifier}: {problem}")


class KeyBuckets:
    """The buckets rows of given bucket keys live in, asked per bucket count: each data file is
    asked with the count it was written with (its manifest entry's total buckets), as Java's
    BucketSelector does after a change of `bucket`."""

    def __init__(self, keys: pa.Table, key_fields: list[DataField], function: str):
        self.keys = keys
        self.key_fields = key_fields
        self.function = function
        self._by_count: dict[int, frozenset | None] = {}

    @classmethod
    def of(cls, values: list[list], key_fields: list[DataField], function: str) -> "KeyBuckets | None":
        """From each key column's candidate values (every combination is a key; a few hundred at
        most); None when a value does not fit its column's type."""
        rows = list(itertools.product(*values))
        try:
            columns = [pa.array([row[i] for row in rows], type=to_arrow_type(f.type)) for i, f in enumerate(key_fields)]
        except (TarnError, pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        return cls(pa.Table.from_arrays(columns, names=[f.name for f in key_fields]), key_fields, function)

    def may_hold(self, bucket: int, total_buckets: int) -> bool:
        """Can bucket `bucket` of a file written with `total_buckets` buckets hold one of the keys?"""
        if bucket < 0 or total_buckets <= 0:
            return True
        if total_buckets not in self._by_count:
            try:
                found = frozenset(bucket_ids(self.keys, self.key_fields, total_buckets, self.function).tolist())
            except TarnError:
                found = None  # keys tarn cannot hash: every bucket may hold them
            self._by_count[total_buckets] = found
        found = self._by_count[total_buckets]
        return found is None or bucket in found


def _key_columns(table: pa.Table, key_fields: list[DataField]) -> list:
    if not key_fields:
        raise SchemaMismatch("bucket key is empty: set 'bucket-key' or a primary key")
    missing = [f.name for f in key_fields if f.name not in table.column_names]
    if missing:
        raise SchemaMismatch(f"bucket key column {missing[0]!r} is missing from the data")
    return [table.column(f.name) for f in key_fields]


def _integers(column, root: str) -> np.ndarray:
    """An INT or BIGINT key column as int64, a null as 0 (the zeroed slot Java reads)."""
    arr = _plain(column, pa.int32() if root == "INT" else pa.int64())
    return pc.fill_null(arr, 0).to_numpy().astype(np.int64)


def hive_hashes(table: pa.Table, key_fields: list[DataField]) -> np.ndarray:
    """Java's HiveBucketFunction hash of each row's bucket key (int32, before `& 0x7fffffff`):
    h = 31 * h + hash(field) over the fields from h = 0, with Hive's hash of each type
    (`hive_field_hashes`); a null field hashes to 0."""
    hashes = np.zeros(table.num_rows, dtype=np.uint32)
    for column, field in zip(_key_columns(table, key_fields), key_fields):
        hashes *= np.uint32(31)
        hashes += hive_field_hashes(column, field)
    return hashes.view(np.int32)


def hive_field_hashes(column, field: DataField) -> np.ndarray:
    """Hive's hash of each value of one column (uint32; Java's HiveHasher): an int-like value
    (BOOLEAN as 1/0, TINYINT, SMALLINT, INT, DATE in days, TIME in millis of day) is itself; a
    BIGINT v is (int)(v ^ v >>> 32); FLOAT and DOUBLE hash their IEEE bits (+-0.0 as 0, NaN as
    Java's canonical NaN) the same ways; strings and bytes are h = 31 * h + b over their (UTF-8)
    bytes as signed bytes; a DECIMAL is java.math.BigDecimal.hashCode of the value with its
    trailing zeros stripped (`_decimal_hashes`); a null is 0."""
    root = field.type.root
    if root == "BOOLEAN":
        arr = _plain(column, pa.bool_())
        return pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint32)
    if root in ("TINYINT", "SMALLINT", "INT"):
        arrow_type = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32()}[root]
        values = pc.fill_null(_plain(column, arrow_type), 0).to_numpy()
        return values.astype(np.int32).view(np.uint32)
    if root == "DATE":
        values = pc.fill_null(_plain(column, pa.date32()).view(pa.int32()), 0).to_numpy()
        return values.view(np.uint32)
    if root == "TIME":
        return _time_millis(column).view(np.uint32)
    if root == "BIGINT":
        return _long_hashes(pc.fill_null(_plain(column, pa.int64()), 0).to_numpy().view(np.uint64))
    if root == "FLOAT":
        values = pc.fill_null(_plain(column, pa.float32()), 0.0).to_numpy()
        bits = np.where(values == 0, np.uint32(0), values.view(np.uint32))
        return np.where(np.isnan(values), np.uint32(0x7FC00000), bits).astype(np.uint32)
    if root == "DOUBLE":
        values = pc.fill_null(_plain(column, pa.float64()), 0.0).to_numpy()
        bits = np.where(values == 0, np.uint64(0), values.view(np.uint64))
        bits = np.where(np.isnan(values), np.uint64(0x7FF8000000000000), bits).astype(np.uint64)
        return _long_hashes(bits)
    if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return _bytes_hashes(column)
    if root == "DECIMAL":
        return _decimal_hashes(column, field.type)
    raise InvalidOption(f"option '{FUNCTION_OPTION}'='hive' cannot hash bucket key column '{field.name}' of "
                        f"type {type_to_sql(field.type)}")


def _long_hashes(bits: np.ndarray) -> np.ndarray:
    """Java's Long.hashCode of uint64 bit patterns: the low word xor the high word."""
    return ((bits ^ (bits >> np.uint64(32))) & np.uint64(_MASK32)).astype(np.uint32)


def _time_millis(column) -> np.ndarray:
    """A TIME column as int32 millis of the day (what Paimon's BinaryRow holds), null as 0."""
    arr = _plain(column)
    if not pa.types.is_time(arr.type):
        arr = _plain(arr, pa.time32("ms"))
    width = pa.int32() if pa.types.is_time32(arr.type) else pa.int64()
    raw = pc.fill_null(arr.view(width), 0).to_numpy().astype(np.int64)
    if arr.type.unit == "s":
        return (raw * 1000).astype(np.int32)
    return (raw // {"ms": 1, "us": 1000, "ns": 1_000_000}[arr.type.unit]).astype(np.int32)


def _powers_of_31(count: int) -> np.ndarray:
    """31**i mod 2**32 for i in [0, count), uint32."""
    factors = np.full(max(count, 1), 31, dtype=np.uint32)
    factors[0] = 1
    return np.cumprod(factors, dtype=np.uint32)


def _bytes_hashes(column) -> np.ndarray:
    """h = 31 * h + b over each value's bytes (Java bytes: signed), from 0: the sum of
    b[i] * 31**(n-1-i) mod 2**32, summed per value through a running total; null is 0."""
    arr = _plain(column)
    nulls = pc.is_null(arr).to_numpy(zero_copy_only=False)
    parts = _string_parts(arr)
    lengths = np.where(nulls, 0, parts.lengths)
    out = np.zeros(len(arr), dtype=np.uint32)
    if not len(arr) or not lengths.any():
        return out
    powers = _powers_of_31(int(lengths.max()))
    ends = np.cumsum(lengths)
    cuts = np.searchsorted(ends, np.arange(_BYTES_PER_BLOCK, int(ends[-1]), _BYTES_PER_BLOCK), side="right")
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(arr)]):
        if lo >= hi:
            continue
        sizes, starts = lengths[lo:hi], parts.starts[lo:hi]
        total = int(sizes.sum())
        if total == 0:
            continue
        first = np.cumsum(sizes) - sizes  # each value's first byte in this block's flat order
        positions = np.arange(total) + np.repeat(starts - first, sizes)  # the bytes, value by value
        exponents = np.repeat(starts + sizes - 1, sizes) - positions
        signed = parts.data[positions].view(np.int8).astype(np.int32).view(np.uint32)
        running = np.zeros(total + 1, dtype=np.uint32)
        np.cumsum(signed * powers[exponents], dtype=np.uint32, out=running[1:])  # wraps mod 2**32
        out[lo:hi] = running[first + sizes] - running[first]
    return out


def _decimal_hashes(column, t) -> np.ndarray:
    """java.math.BigDecimal.hashCode of each value after Hive's normalisation (trailing zeros
    stripped down to scale 0; zero is 0 at scale 0; no rounding, as Paimon's precision is at most
    38): 31 * (sign * fold) + scale, fold = 31 * fold + w over the 32-bit words w of the unscaled
    magnitude, most significant first (leading zero words add nothing)."""
    arr = _plain(column, pa.decimal128(t.precision, t.scale))
    count = len(arr)
    if count == 0 or arr.buffers()[1] is None:
        return np.zeros(count, dtype=np.uint32)
    halves = np.frombuffer(arr.buffers()[1], dtype=np.uint64, count=2 * count, offset=16 * arr.offset)
    low, high = halves[0::2], halves[1::2]
    negative = (high >> np.uint64(63)).astype(bool)
    carry = (low == 0).astype(np.uint64)
    low = np.where(negative, ~low + np.uint64(1), low)  # the magnitude (two's complement negated)
    high = np.where(negative, ~high + carry, high)
    mask = np.uint64(_MASK32)
    words = [high >> np.uint64(32), high & mask, low >> np.uint64(32), low & mask]
    scale = np.full(count, t.scale or 0, dtype=np.int64)
    for _ in range(t.scale or 0):
        quotients, remainder = [], np.zeros(count, dtype=np.uint64)
        for word in words:  # long division by 10, one 32-bit word at a time
            current = (remainder << np.uint64(32)) | word
            quotients.append(current // np.uint64(10))
            remainder = current % np.uint64(10)
        strip = (remainder == 0) & (scale > 0)
        if not strip.any():
            break
        words = [np.where(strip, q, w) for q, w in zip(quotients, words)]
        scale -= strip
    zero = (words[0] | words[1] | words[2] | words[3]) == 0
    fold = np.zeros(count, dtype=np.uint64)
    for word in words:
        fold = (fold * np.uint64(31) + word) & mask
    fold = np.where(negative, (np.uint64(1 << 32) - fold) & mask, fold)
    hashed = (fold * np.uint64(31) + np.where(zero, 0, scale).astype(np.uint64)) & mask
    hashed[pc.is_null(arr).to_numpy(zero_copy_only=False)] = 0
    return hashed.astype(np.uint32)


# ---------------------------------------------------------------------------------------------
# dynamic bucket mode (`bucket` = -1 with a primary key): FORMAT.md section 8

MAX_DYNAMIC_BUCKETS = 32767  # Java keeps bucket ids in a short: ids 0..32766


def encode_hash_index(hashes: np.ndarray) -> bytes:
    """A HASH index file: every hash as an int32, big endian, back to back."""
    return np.ascontiguousarray(hashes, dtype=">i4").tobytes()


def decode_hash_index(data: bytes, name: str = "HASH index file") -> np.ndarray:
    """The int32 hashes of a HASH index file (native byte order)."""
    if len(data) % 4:
        raise CorruptFile(f"{name}: {len(data)} bytes is not a whole number of int32 hashes")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


def partition_hash(partition: bytes) -> int:
    """Java's BinaryRow.hashCode of a partition: Murmur3 of the row bytes (the serialized form
    without its 4-byte arity prefix)."""
    return hash_bytes(partition[4:])


def _java_rem(values: np.ndarray, n: int) -> np.ndarray:
    """Java's `%` (the sign of the dividend) on int64 arrays."""
    return np.fmod(values, n)


def assigner_channels(partition_hashes, key_hashes: np.ndarray, channels: int, assigners: int) -> np.ndarray:
    """Which of `channels` assigner tasks sees each key (Paimon's BucketAssigner.computeAssigner):
    a partition's keys go to `assigners` consecutive tasks starting at abs(partition hash %
    channels), by abs(key hash % assigners). `partition_hashes`: one int, or one per key."""
    start = np.abs(_java_rem(np.asarray(partition_hashes, dtype=np.int64), channels)).astype(np.int32)
    ids = np.abs(_java_rem(np.asarray(key_hashes, dtype=np.int32), assigners))  # int32: |rem| < assigners
    ids += start
    return ids % np.int32(channels)


def owns_bucket(bucket, assigners: int, assign_id: int):
    """Does assigner `assign_id` (of `assigners`) create bucket `bucket`? (BucketAssigner.isMyBucket)"""
    return bucket % assigners == assign_id % assigners
