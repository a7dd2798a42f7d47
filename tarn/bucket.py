"""Paimon's bucket functions, vectorised over Arrow tables and numpy arrays.

Fixed buckets (FORMAT.md §6):

bucket = abs(h % N), h = MurmurHash3_x86_32(seed 42) of the BinaryRow of the bucket-key fields.
Keys of fixed-width fields are hashed straight from their words (a BinaryRow of such fields is
a fixed byte pattern); others through materialised BinaryRows.

Dynamic buckets (FORMAT.md §8): the same hash `h` of the trimmed primary key; HASH index files
hold the hashes of a bucket's keys as big-endian int32s; assigner tasks split the keys of a
partition by `assigner_channels` and create only the buckets `owns_bucket` gives them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tarn.codec.binary_row import encode_rows, fixed_words
from tarn.codec.murmur import hash_bytes, hash_rows, hash_word_columns
from tarn.errors import CorruptFile, InvalidOption, SchemaMismatch
from tarn.types import DataField


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


def bucket_ids(table: pa.Table, key_fields: list[DataField], num_buckets: int) -> np.ndarray:
    """Bucket of each row for a fixed bucket count `num_buckets` (option 'bucket' > 0)."""
    if num_buckets <= 0:
        raise InvalidOption(f"option 'bucket' must be > 0 for fixed bucketing, got {num_buckets}")
    hashes = row_hashes(table, key_fields).astype(np.int64)
    return (np.abs(hashes) % num_buckets).astype(np.int32)


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
