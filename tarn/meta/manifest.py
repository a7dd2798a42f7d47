"""Manifest records (FORMAT.md sections 4, 5, 7) and their Avro wire forms.

Each record's Avro schema is built once, beside its fields, with Java's conventions:
- the top-level record is `org.apache.paimon.avro.generated.record`, a nested record is named
  `<parent name>_<field name>` (array items reuse the array field's name);
- a nullable type is the union `["null", T]` and its field has `"default": null`;
- manifest-type records start with `_VERSION` (a permanent format id, not a schema version).

Partition, key and stats rows are kept as serialized BinaryRow bytes (4-byte arity prefix);
they are produced and decoded elsewhere (`tarn.codec.binary_row`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Self

from tarn.errors import CorruptFile

ROOT_RECORD = "org.apache.paimon.avro.generated.record"

ADD, DELETE = 0, 1  # FileKind
APPEND_SOURCE, COMPACT_SOURCE = 0, 1  # FileSource

MANIFEST_ENTRY_VERSION = 2
MANIFEST_FILE_META_VERSION = 2
INDEX_MANIFEST_ENTRY_VERSION = 1

# The serialized arity-0 BinaryRow: 4-byte arity 0 + an 8-byte header.
EMPTY_ROW = bytes(12)


# --- Avro schema construction -------------------------------------------------------------
# A "type" is a plain Avro type, or a function of the record name it would get when nested.

AvroType = Any


def _resolve(avro_type: AvroType, name: str) -> Any:
    return avro_type(name) if callable(avro_type) else avro_type


def _opt(avro_type: AvroType) -> AvroType:
    """Nullable `avro_type`: the union ["null", T]."""
    if callable(avro_type):
        return lambda name: ["null", avro_type(name)]
    return ["null", avro_type]


def _array(items: AvroType) -> AvroType:
    if callable(items):
        return lambda name: {"type": "array", "items": items(name)}
    return {"type": "array", "items": items}


def _record(fields: list[tuple[str, AvroType]]) -> Callable[[str], dict]:
    """A record type whose nested records are named `<its name>_<field name>`."""

    def build(name: str) -> dict:
        avro_fields = []
        for field_name, field_type in fields:
            resolved = _resolve(field_type, f"{name}_{field_name}")
            field = {"name": field_name, "type": resolved}
            if isinstance(resolved, list) and resolved[0] == "null":
                field["default"] = None
            avro_fields.append(field)
        return {"type": "record", "name": name, "fields": avro_fields}

    return build


def _millis(value: int | dt.datetime | None) -> int | None:
    """Epoch millis of a `timestamp-millis` value (fastavro decodes it to an aware datetime)."""
    if value is None or isinstance(value, int):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return (value - _EPOCH) // _ONE_MILLI


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_ONE_MILLI = dt.timedelta(milliseconds=1)


def _check_version(record: dict, expected: int, what: str) -> None:
    version = record.get("_VERSION", expected)
    if version != expected:
        raise CorruptFile(f"{what}: unsupported _VERSION {version} (expected {expected})")


# --- SimpleStats ---------------------------------------------------------------------------

SIMPLE_STATS_TYPE = _record(
    [
        ("_MIN_VALUES", "bytes"),
        ("_MAX_VALUES", "bytes"),
        ("_NULL_COUNTS", _opt(_array(_opt("long")))),
    ]
)


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Min/max rows (serialized BinaryRows) and per-column null counts."""

    min_values: bytes
    max_values: bytes
    null_counts: list[int | None] | None

    def to_avro(self) -> dict:
        return {
            "_MIN_VALUES": self.min_values,
            "_MAX_VALUES": self.max_values,
            "_NULL_COUNTS": self.null_counts,
        }

    @classmethod
    def from_avro(cls, record: dict) -> Self:
        return cls(record["_MIN_VALUES"], record["_MAX_VALUES"], record.get("_NULL_COUNTS"))


EMPTY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, [])


# --- DataFileMeta --------------------------------------------------------------------------

DATA_FILE_META_TYPE = _record(
    [
        ("_FILE_NAME", "string"),
        ("_FILE_SIZE", "long"),
        ("_ROW_COUNT", "long"),
        ("_MIN_KEY", "bytes"),
        ("_MAX_KEY", "bytes"),
        ("_KEY_STATS", SIMPLE_STATS_TYPE),
        ("_VALUE_STATS", SIMPLE_STATS_TYPE),
        ("_MIN_SEQUENCE_NUMBER", "long"),
        ("_MAX_SEQUENCE_NUMBER", "long"),
        ("_SCHEMA_ID", "long"),
        ("_LEVEL", "int"),
        ("_EXTRA_FILES", _array("string")),
        ("_CREATION_TIME", _opt({"type": "long", "logicalType": "timestamp-millis"})),
        ("_DELETE_ROW_COUNT", _opt("long")),
        ("_EMBEDDED_FILE_INDEX", _opt("bytes")),
        ("_FILE_SOURCE", _opt("int")),
        ("_VALUE_STATS_COLS", _opt(_array("string"))),
        ("_EXTERNAL_PATH", _opt("string")),
        ("_FIRST_ROW_ID", _opt("long")),
        ("_WRITE_COLS", _opt(_array("string"))),
        ("_WRITE_COLS_SEQUENCES", _opt(_array("long"))),
    ]
)


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """One data (or changelog) file as a manifest entry describes it."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None  # epoch millis of the local wall clock taken as UTC
    delete_row_count: int | None = 0
    embedded_index: bytes | None = None
    file_source: int | None = None  # APPEND_SOURCE / COMPACT_SOURCE
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        deleted = f", delete_rows={self.delete_row_count}" if self.delete_row_count else ""
        return (f"DataFileMeta({self.file_name!r}, level={self.level}, rows={self.row_count}{deleted}, "
                f"size={self.file_size}, seq={self.min_sequence_number}..{self.max_sequence_number}, "
                f"schema_id={self.schema_id})")

    def to_avro(self) -> dict:
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(),
            "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index,
            "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": _list_or_none(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": _list_or_none(self.write_cols),
            "_WRITE_COLS_SEQUENCES": _list_or_none(self.write_cols_sequences),
        }

    @classmethod
    def from_avro(cls, record: dict) -> Self:
        get = record.get
        created = get("_CREATION_TIME")
        if created is not None and type(created) is not int:
            created = _millis(created)
        stats_cols, write_cols, write_seqs = (
            get("_VALUE_STATS_COLS"), get("_WRITE_COLS"), get("_WRITE_COLS_SEQUENCES")
        )
        return cls(
            record["_FILE_NAME"],
            record["_FILE_SIZE"],
            record["_ROW_COUNT"],
            record["_MIN_KEY"],
            record["_MAX_KEY"],
            SimpleStats.from_avro(record["_KEY_STATS"]),
            SimpleStats.from_avro(record["_VALUE_STATS"]),
            record["_MIN_SEQUENCE_NUMBER"],
            record["_MAX_SEQUENCE_NUMBER"],
            record["_SCHEMA_ID"],
            record["_LEVEL"],
            tuple(get("_EXTRA_FILES") or ()),
            created,
            get("_DELETE_ROW_COUNT"),
            get("_EMBEDDED_FILE_INDEX"),
            get("_FILE_SOURCE"),
            None if stats_cols is None else tuple(stats_cols),
            get("_EXTERNAL_PATH"),
            get("_FIRST_ROW_ID"),
            None if write_cols is None else tuple(write_cols),
            None if write_seqs is None else tuple(write_seqs),
        )


def _list_or_none(values) -> list | None:
    return None if values is None else list(values)


# --- ManifestEntry -------------------------------------------------------------------------

MANIFEST_ENTRY_SCHEMA = _record(
    [
        ("_VERSION", "int"),
        ("_KIND", "int"),
        ("_PARTITION", "bytes"),
        ("_BUCKET", "int"),
        ("_TOTAL_BUCKETS", "int"),
        ("_FILE", DATA_FILE_META_TYPE),
    ]
)(ROOT_RECORD)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """ADD or DELETE of one data file in a (partition, bucket)."""

    kind: int  # ADD / DELETE
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        """What makes two entries refer to the same file (a DELETE repeats it exactly)."""
        f = self.file
        return (
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )

    def to_avro(self) -> dict:
        return {
            "_VERSION": MANIFEST_ENTRY_VERSION,
            "_KIND": self.kind,
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_FILE": self.file.to_avro(),
        }

    @classmethod
    def from_avro(cls, record: dict) -> Self:
        _check_version(record, MANIFEST_ENTRY_VERSION, "manifest entry")
        return cls(
            record["_KIND"],
            record["_PARTITION"],
            record["_BUCKET"],
            record["_TOTAL_BUCKETS"],
            DataFileMeta.from_avro(record["_FILE"]),
        )


# --- ManifestFileMeta ----------------------------------------------------------------------

MANIFEST_FILE_META_SCHEMA = _record(
    [
        ("_VERSION", "int"),
        ("_FILE_NAME", "string"),
        ("_FILE_SIZE", "long"),
        ("_NUM_ADDED_FILES", "long"),
        ("_NUM_DELETED_FILES", "long"),
        ("_PARTITION_STATS", SIMPLE_STATS_TYPE),
        ("_SCHEMA_ID", "long"),
        ("_MIN_BUCKET", _opt("int")),
        ("_MAX_BUCKET", _opt("int")),
        ("_MIN_LEVEL", _opt("int")),
        ("_MAX_LEVEL", _opt("int")),
        ("_MIN_ROW_ID", _opt("long")),
        ("_MAX_ROW_ID", _opt("long")),
    ]
)(ROOT_RECORD)


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file as a manifest list describes it."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None

    def to_avro(self) -> dict:
        return {
            "_VERSION": MANIFEST_FILE_META_VERSION,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_avro(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": self.min_row_id,
            "_MAX_ROW_ID": self.max_row_id,
        }

    @classmethod
    def from_avro(cls, record: dict) -> Self:
        _check_version(record, MANIFEST_FILE_META_VERSION, "manifest list entry")
        get = record.get
        return cls(
            record["_FILE_NAME"],
            record["_FILE_SIZE"],
            record["_NUM_ADDED_FILES"],
            record["_NUM_DELETED_FILES"],
            SimpleStats.from_avro(record["_PARTITION_STATS"]),
            record["_SCHEMA_ID"],
            get("_MIN_BUCKET"),
            get("_MAX_BUCKET"),
            get("_MIN_LEVEL"),
            get("_MAX_LEVEL"),
            get("_MIN_ROW_ID"),
            get("_MAX_ROW_ID"),
        )


# --- IndexManifestEntry --------------------------------------------------------------------

DELETION_VECTOR_RANGE_TYPE = _record(
    [("f0", "string"), ("f1", "int"), ("f2", "int"), ("_CARDINALITY", _opt("long"))]
)

GLOBAL_INDEX_TYPE = _record(
    [
        ("_ROW_RANGE_START", "long"),
        ("_ROW_RANGE_END", "long"),
        ("_INDEX_FIELD_ID", "int"),
        ("_EXTRA_FIELD_IDS", _opt(_array("int"))),
        ("_INDEX_META", _opt("bytes")),
        ("_SOURCE_META", _opt("bytes")),
    ]
)

INDEX_MANIFEST_ENTRY_SCHEMA = _record(
    [
        ("_VERSION", "int"),
        ("_KIND", "int"),
        ("_PARTITION", "bytes"),
        ("_BUCKET", "int"),
        ("_INDEX_TYPE", "string"),
        ("_FILE_NAME", "string"),
        ("_FILE_SIZE", "long"),
        ("_ROW_COUNT", "long"),
        ("_DELETIONS_VECTORS_RANGES", _opt(_array(_opt(DELETION_VECTOR_RANGE_TYPE)))),
        ("_EXTERNAL_PATH", _opt("string")),
        ("_GLOBAL_INDEX", _opt(GLOBAL_INDEX_TYPE)),
    ]
)(ROOT_RECORD)

HASH_INDEX, DELETION_VECTORS_INDEX = "HASH", "DELETION_VECTORS"


@dataclass(frozen=True, slots=True)
class DeletionVectorRange:
    """Where one data file's deletion vector sits in a DV index file (FORMAT.md section 8)."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    """ADD or DELETE of one index file (HASH, DELETION_VECTORS or a global index)."""

    kind: int
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None
    external_path: str | None = None
    global_index: dict | None = None  # `_GLOBAL_INDEX` record, kept as read

    def to_avro(self) -> dict:
        ranges = None
        if self.dv_ranges is not None:
            ranges = [
                {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                for r in self.dv_ranges
            ]
        return {
            "_VERSION": INDEX_MANIFEST_ENTRY_VERSION,
            "_KIND": self.kind,
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_INDEX_TYPE": self.index_type,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_DELETIONS_VECTORS_RANGES": ranges,
            "_EXTERNAL_PATH": self.external_path,
            "_GLOBAL_INDEX": self.global_index,
        }

    @classmethod
    def from_avro(cls, record: dict) -> Self:
        _check_version(record, INDEX_MANIFEST_ENTRY_VERSION, "index manifest entry")
        raw_ranges = record.get("_DELETIONS_VECTORS_RANGES")
        ranges = None
        if raw_ranges is not None:
            ranges = tuple(
                DeletionVectorRange(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY"))
                for r in raw_ranges
                if r is not None
            )
        return cls(
            record["_KIND"],
            record["_PARTITION"],
            record["_BUCKET"],
            record["_INDEX_TYPE"],
            record["_FILE_NAME"],
            record["_FILE_SIZE"],
            record["_ROW_COUNT"],
            ranges,
            record.get("_EXTERNAL_PATH"),
            record.get("_GLOBAL_INDEX"),
        )
