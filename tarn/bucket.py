"""Paimon's default fixed-bucket function (FORMAT.md §6), vectorised over an Arrow table.

bucket = abs(h % N), h = MurmurHash3_x86_32(seed 42) of the BinaryRow of the bucket-key fields.
Keys of fixed-width fields are hashed straight from their words (a BinaryRow of such fields is
a fixed byte pattern); others through materialised BinaryRows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tarn.codec.binary_row import encode_rows, fixed_words
from tarn.codec.murmur import hash_rows, hash_word_columns
from tarn.errors import InvalidOption, SchemaMismatch
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
