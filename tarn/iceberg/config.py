"""The `metadata.iceberg.*` options of a table, read once (Java's IcebergOptions), where the
Iceberg metadata goes (IcebergCommitCallback.catalogTableMetadataPath), and the checks run when a
table is created or altered (what Java would only fail on later, at its first commit).

Where the metadata goes, for a table at `<warehouse>/<db>.db/<table>`:

| `metadata.iceberg.storage` | default `storage-location` | metadata directory |
|---|---|---|
| `table-location` | `table-location` | `<table>/metadata/` |
| `hadoop-catalog` | `catalog-location` | `<warehouse>/iceberg/<db>/<table>/metadata/` |
| `hive-catalog`, `rest-catalog` | (refused: tarn has no metastore or REST catalog to publish to) | |
"""

from __future__ import annotations

from dataclasses import dataclass

from tarn.codec.avro import avro_codec
from tarn.errors import InvalidOption, UnsupportedFeature
from tarn.fs import basename, join, parent
from tarn.options import Options, parse_enum

DISABLED, TABLE_LOCATION, HADOOP_CATALOG = "disabled", "table-location", "hadoop-catalog"
PUBLISHED = (TABLE_LOCATION, HADOOP_CATALOG)  # the storages tarn writes
CATALOG_LOCATION = "catalog-location"
STORAGE = "metadata.iceberg.storage"
FORMAT_VERSIONS = (2, 3)


@dataclass(frozen=True)
class IcebergConfig:
    """What the options decide about a table's Iceberg metadata."""

    storage: str
    location: str  # table-location | catalog-location
    format_version: int
    compact_min_files: int  # metadata.iceberg.compaction.min.file-num
    compact_max_files: int  # metadata.iceberg.compaction.max.file-num
    delete_after_commit: bool
    previous_versions_max: int
    codec: str  # the Avro codec of manifests and manifest lists
    legacy_manifest_list: bool  # Iceberg 1.4's manifest-list field names
    manifest_target_size: int  # manifest.target-file-size: rolling and compaction
    retain_min: int  # snapshot.num-retained.min: Iceberg snapshots expire with Paimon's rules
    retain_max: int
    time_retained_ms: int
    deletion_vectors: bool  # publish v3 deletion vectors (DV on, bitmap64, format 3)


def storage_of(options: Options) -> str:
    """`metadata.iceberg.storage` in its canonical spelling (default disabled)."""
    value = options.get(STORAGE) or DISABLED
    try:
        return parse_enum(value, ("disabled", "table-location", "hadoop-catalog", "hive-catalog", "rest-catalog"))
    except ValueError:
        return value


def enabled(options: Options) -> bool:
    return storage_of(options) != DISABLED


def config_of(options: Options, table_name: str) -> IcebergConfig:
    """The Iceberg settings of a table; InvalidOption / UnsupportedFeature naming the table and
    the option for values tarn cannot honour."""
    storage = storage_of(options)
    if storage not in PUBLISHED:
        raise UnsupportedFeature(
            f"table {table_name}: option '{STORAGE}' = '{storage}' is not supported by tarn: it writes Iceberg "
            f"metadata beside the table ('{TABLE_LOCATION}') or under the warehouse ('{HADOOP_CATALOG}') and "
            "cannot publish to a Hive metastore or an Iceberg REST catalog")
    version = _int(options, "metadata.iceberg.format-version", table_name)
    if version not in FORMAT_VERSIONS:
        raise InvalidOption(f"table {table_name}: option 'metadata.iceberg.format-version' = {version}: "
                            "Iceberg format version 2 or 3 only")
    return IcebergConfig(
        storage=storage,
        location=_location(options, storage, table_name),
        format_version=version,
        compact_min_files=_int(options, "metadata.iceberg.compaction.min.file-num", table_name),
        compact_max_files=_int(options, "metadata.iceberg.compaction.max.file-num", table_name),
        delete_after_commit=bool(options.bool("metadata.iceberg.delete-after-commit.enabled")),
        previous_versions_max=_int(options, "metadata.iceberg.previous-versions-max", table_name),
        codec=_codec(options, table_name),
        legacy_manifest_list=bool(options.bool("metadata.iceberg.manifest-legacy-version")),
        manifest_target_size=options.manifest_target_file_size,
        retain_min=options.snapshot_num_retained_min,
        retain_max=options.snapshot_num_retained_max,
        time_retained_ms=options.snapshot_time_retained_ms,
        deletion_vectors=bool(options.deletion_vectors_enabled and options.bool("deletion-vectors.bitmap64")
                              and version == 3),
    )


def _int(options: Options, name: str, table_name: str) -> int:
    try:
        return options.int(name)
    except ValueError as exc:
        raise InvalidOption(f"table {table_name}: option '{name}': {exc}") from None


def _location(options: Options, storage: str, table_name: str) -> str:
    value = options.get("metadata.iceberg.storage-location")
    if value is None:
        return TABLE_LOCATION if storage == TABLE_LOCATION else CATALOG_LOCATION
    try:
        return parse_enum(value, (TABLE_LOCATION, CATALOG_LOCATION))
    except ValueError as exc:
        raise InvalidOption(f"table {table_name}: option 'metadata.iceberg.storage-location': {exc}") from None


def _codec(options: Options, table_name: str) -> str:
    """The Avro codec of `metadata.iceberg.manifest-compression` (Java's writer would take a
    table's `avro.codec` first; tarn leaves that option to Avro data files)."""
    raw = options.get("metadata.iceberg.manifest-compression")
    try:
        return avro_codec(raw)
    except InvalidOption:
        raise InvalidOption(f"table {table_name}: option 'metadata.iceberg.manifest-compression' = {raw!r} is "
                            "not an Avro codec (snappy, zstd, deflate, bzip2, xz, null)") from None


def metadata_dir(root: str, config: IcebergConfig, table_name: str) -> str:
    """The directory of the table's Iceberg metadata (v<N>.metadata.json, manifests, hint)."""
    root = root.rstrip("/")
    if config.location == TABLE_LOCATION:
        return join(root, "metadata")
    database = parent(root)
    if not basename(database).endswith(".db"):
        raise UnsupportedFeature(
            f"table {table_name}: '{STORAGE}' = '{config.storage}' with catalog-location Iceberg metadata needs "
            f"the table in a warehouse database directory (<db>.db), not {database}; set "
            "'metadata.iceberg.storage-location' = 'table-location'")
    return join(parent(database), "iceberg", basename(database)[:-len(".db")], basename(root), "metadata")
