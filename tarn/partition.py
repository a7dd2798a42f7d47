"""Partition values: BinaryRow bytes <-> Python values <-> directory names."""

from __future__ import annotations

from tarn import paths
from tarn.codec.binary_row import deserialize_row, serialize_row
from tarn.meta.schema import TableSchema


def partition_types(schema: TableSchema) -> list:
    return [schema.field(k).type for k in schema.partition_keys]


def to_bytes(schema: TableSchema, values) -> bytes:
    return serialize_row(list(values), partition_types(schema))


def from_bytes(schema: TableSchema, partition: bytes) -> tuple:
    return tuple(deserialize_row(partition, partition_types(schema)))


def partition_path(schema: TableSchema, default_name: str | None, values) -> str:
    """`k1=v1/k2=v2` as Paimon names partition directories ('' when unpartitioned)."""
    if not schema.partition_keys:
        return ""
    default = default_name or paths.DEFAULT_PARTITION_NAME
    legacy = str(schema.options.get("partition.legacy-name", "true")).strip().lower() != "false"
    texts = []
    for key, value in zip(schema.partition_keys, values):
        t = schema.field(key).type
        texts.append(paths.partition_value_text(value, t.root, t.precision, default, legacy))
    return paths.partition_dir(list(schema.partition_keys), texts)


def data_root(root: str, schema: TableSchema) -> str:
    """Where the table's partition and bucket directories live: the table directory, or its
    `data-file.path-directory` sub-directory (Paimon 1.0; an immutable option)."""
    directory = (schema.options.get("data-file.path-directory") or "").strip("/")
    return paths.join(root, directory) if directory else root


def bucket_path(root: str, schema: TableSchema, default_name: str | None, values, bucket: int) -> str:
    return paths.join(data_root(root, schema), partition_path(schema, default_name, values), paths.bucket_dir(bucket))


def bucket_dir(root: str, schema: TableSchema, partition: bytes, bucket: int) -> str:
    """The directory of one (partition bytes, bucket) of the table at `root`."""
    return bucket_path(root, schema, schema.options.get("partition.default-name"), from_bytes(schema, partition),
                       bucket)
