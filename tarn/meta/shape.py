"""A table's shape: what its schema decides about how rows are written and read, decided once.

Every place that asks "which bucket mode?", "does it track row ids?", "deletion vectors?" asks
`schema.shape` (one `TableShape` per `TableSchema`, built on first use and kept on it), never
the raw options. The bucket modes are Java Paimon's `BucketMode` (paimon-common
`table/BucketMode.java`, chosen in `FileStoreTable.bucketMode()`):

| `bucket` | primary key | mode |
|---|---|---|
| > 0 | either | FIXED (`HASH_FIXED`) |
| -1 | yes, holding every partition key | DYNAMIC (`HASH_DYNAMIC`) |
| -1 | yes, missing a partition key | CROSS_PARTITION (`KEY_DYNAMIC`) |
| -1 | no | UNAWARE (`BUCKET_UNAWARE`) |
| -2 | yes | POSTPONE (`POSTPONE_MODE`) |

Any other value leaves `bucket_mode` None and `bucket_problem` saying why (a table another
engine made still loads; writing it is refused).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tarn.options import Options
from tarn.paths import POSTPONE_BUCKET


class BucketMode(enum.Enum):
    """Java's BucketMode; the value is Java's name."""

    FIXED = "HASH_FIXED"
    DYNAMIC = "HASH_DYNAMIC"
    CROSS_PARTITION = "KEY_DYNAMIC"
    UNAWARE = "BUCKET_UNAWARE"
    POSTPONE = "POSTPONE_MODE"


@dataclass(frozen=True)
class TableShape:
    """What one schema version decides. `options`: the schema's options with Paimon's
    defaults; `num_buckets`: the `bucket` option as set (-1, -2 or a count)."""

    options: Options
    key_value: bool  # a primary-key table (Java's KeyValueFileStore), else an append table
    bucket_mode: BucketMode | None
    bucket_problem: str | None  # why `bucket` cannot be written (None: it can)
    num_buckets: int
    tracks_rows: bool  # row-tracking.enabled
    evolves: bool  # data-evolution.enabled on a row-tracking table
    deletion_vectors: bool  # deletion-vectors.enabled
    file_format: str

    @property
    def postpone(self) -> bool:
        return self.bucket_mode is BucketMode.POSTPONE

    @property
    def dynamic(self) -> bool:
        """Buckets assigned by key (DYNAMIC or CROSS_PARTITION): a HASH index or a key index."""
        return self.bucket_mode in (BucketMode.DYNAMIC, BucketMode.CROSS_PARTITION)

    @property
    def cross_partition(self) -> bool:
        return self.bucket_mode is BucketMode.CROSS_PARTITION

    @property
    def fixed_buckets(self) -> int:
        """The bucket count of a FIXED table, -1 for every other mode (a manifest entry's
        `total_buckets` of a file written without a fixed count)."""
        return self.num_buckets if self.bucket_mode is BucketMode.FIXED else -1

    def options_with(self, overrides: Mapping[str, str] | None) -> Options:
        """The options with `overrides` (dynamic options of one write or read) on top."""
        return self.options.updated(overrides) if overrides else self.options


def shape_of(options: Mapping[str, str], primary_keys: Sequence[str], partition_keys: Sequence[str]) -> TableShape:
    """The shape of a schema with these options and keys."""
    typed = Options(options)
    key_value = bool(primary_keys)
    bucket = typed.int("bucket")
    mode = bucket_mode(bucket, primary_keys, partition_keys)
    tracks_rows = bool(typed.bool("row-tracking.enabled"))
    return TableShape(
        options=typed, key_value=key_value, bucket_mode=mode,
        bucket_problem=bucket_problem(bucket, key_value), num_buckets=bucket,
        tracks_rows=tracks_rows, evolves=tracks_rows and bool(typed.bool("data-evolution.enabled")),
        deletion_vectors=bool(typed.bool("deletion-vectors.enabled")), file_format=typed.file_format)


def bucket_mode(bucket: int, primary_keys: Sequence[str], partition_keys: Sequence[str]) -> BucketMode | None:
    """The bucket mode of a table with this `bucket` value and keys (None: not a valid one)."""
    if bucket > 0:
        return BucketMode.FIXED
    if bucket == -1:
        if not primary_keys:
            return BucketMode.UNAWARE
        if partition_keys and not set(partition_keys) <= set(primary_keys):
            return BucketMode.CROSS_PARTITION
        return BucketMode.DYNAMIC
    if bucket == POSTPONE_BUCKET and primary_keys:
        return BucketMode.POSTPONE
    return None


def bucket_problem(bucket: int, key_value: bool) -> str | None:
    """Why a table with this `bucket` value cannot be written (None: it can)."""
    if bucket == 0 or bucket < POSTPONE_BUCKET:
        return f"invalid bucket number {bucket}: use a fixed count > 0, or -1"
    if bucket == POSTPONE_BUCKET and not key_value:
        return "bucket=-2 (postpone bucket mode) needs a primary key"
    return None


def shape_with(schema, options: Options) -> TableShape:
    """The shape of `schema` written or read with `options` (the schema's own, or with dynamic
    options on top, such as a rescale's new bucket count)."""
    own = schema.shape
    if options is own.options or options == own.options:
        return own
    return shape_of(options.raw, schema.primary_keys, schema.partition_keys)
