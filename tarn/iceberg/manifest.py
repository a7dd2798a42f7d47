"""Iceberg manifests and manifest lists: the records, their Avro schemas with the spec's field
ids, and the files (fastavro), laid out as Java Paimon writes them (IcebergManifestEntry,
IcebergDataFileMeta, IcebergManifestFileMeta, IcebergPartitionSummary, and its Avro schema
converter run with Iceberg's names).

A manifest holds `manifest_entry` records (status 0 EXISTING / 1 ADDED / 2 DELETED, snapshot id,
data and file sequence numbers, and a `data_file` record named `r2`: content 0 data / 1 position
deletes, path, format, the partition (record `r102`, fields 1000, 1001, ... of the Paimon
partition types as Java's Avro writer stores them), counts, sizes, null counts and bounds as
Iceberg's int-keyed maps (arrays of key/value records `k121_v122`, `k126_v127`, `k129_v130`), and
for v3 deletion vectors the referenced data file and the blob's offset and size). A manifest
list holds `manifest_file` records with `partitions` (record `r508`) summaries.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from tarn.codec.avro import read_avro, write_avro, write_avro_rolling
from tarn.fs import FileIO, join
from tarn.types import DataField, DataType

EXISTING, ADDED, DELETED = 0, 1, 2
DATA, POSITION_DELETES = 0, 1  # data_file.content
DATA_MANIFEST, DELETE_MANIFEST = 0, 1  # manifest_file.content
FIRST_PARTITION_FIELD_ID = 1000
SPEC_ID = 0
UNASSIGNED_SEQ = -1

# The manifest lists this process wrote last, by path: the next publication starts from the one
# it wrote before (list names hold a uuid and are never rewritten, so the entries stay true).
_WRITTEN_LISTS: OrderedDict[str, tuple] = OrderedDict()
_WRITTEN_LISTS_KEPT = 16
_lists_guard = threading.Lock()


def _nullable(avro_type) -> list:
    return ["null", avro_type]


def _field(name: str, field_id: int, avro_type, nullable: bool = False) -> dict:
    if nullable:
        return {"name": name, "type": _nullable(avro_type), "default": None, "field-id": field_id}
    return {"name": name, "type": avro_type, "field-id": field_id}


def _int_map(record: str, key_id: int, value_id: int, value_type: str) -> dict:
    """Iceberg's map with non-string keys: an array of key/value records, logicalType map."""
    return {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": record, "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id}]}}


def partition_avro_type(t: DataType):
    """The Avro type Java's writer gives a partition column of Paimon type `t`."""
    root = t.root
    simple = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
              "FLOAT": "float", "DOUBLE": "double", "CHAR": "string", "VARCHAR": "string", "BINARY": "bytes",
              "VARBINARY": "bytes"}
    if root in simple:
        return simple[root]
    if root == "DATE":
        return {"type": "int", "logicalType": "date"}
    if root == "TIME":
        return {"type": "int", "logicalType": "time-millis"}
    if root == "DECIMAL":
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale or 0}
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = "millis" if t.precision <= 3 else "micros"
        return {"type": "long", "logicalType": f"{'local-' if root == 'TIMESTAMP_LTZ' else ''}timestamp-{unit}"}
    raise ValueError(f"a partition column of type {t} cannot be written to an Iceberg manifest")


def manifest_entry_schema(partition_fields: list[DataField]) -> dict:
    """The Avro schema of a manifest whose partition columns are `partition_fields`."""
    partition = {"type": "record", "name": "r102", "fields": [
        _field(f.name, FIRST_PARTITION_FIELD_ID + i, partition_avro_type(f.type), f.type.nullable)
        for i, f in enumerate(partition_fields)]}
    data_file = {"type": "record", "name": "r2", "fields": [
        _field("content", 134, "int"),
        _field("file_path", 100, "string"),
        _field("file_format", 101, "string"),
        _field("partition", 102, partition),
        _field("record_count", 103, "long"),
        _field("file_size_in_bytes", 104, "long"),
        _field("null_value_counts", 110, _int_map("k121_v122", 121, 122, "long"), nullable=True),
        _field("lower_bounds", 125, _int_map("k126_v127", 126, 127, "bytes"), nullable=True),
        _field("upper_bounds", 128, _int_map("k129_v130", 129, 130, "bytes"), nullable=True),
        _field("referenced_data_file", 143, "string", nullable=True),
        _field("content_offset", 144, "long", nullable=True),
        _field("content_size_in_bytes", 145, "long", nullable=True),
    ]}
    return {"type": "record", "name": "manifest_entry", "fields": [
        _field("status", 0, "int"),
        _field("snapshot_id", 1, "long", nullable=True),
        _field("sequence_number", 3, "long", nullable=True),
        _field("file_sequence_number", 4, "long", nullable=True),
        _field("data_file", 2, data_file),
    ]}


def manifest_list_schema(legacy: bool) -> dict:
    """The Avro schema of a manifest list (`legacy`: Iceberg 1.4's `*_data_files_count` names)."""
    counts = "_data_files_count" if legacy else "_files_count"
    summary = {"type": "record", "name": "r508", "fields": [
        _field("contains_null", 509, "boolean"),
        _field("contains_nan", 518, "boolean", nullable=True),
        _field("lower_bound", 510, "bytes", nullable=True),
        _field("upper_bound", 511, "bytes", nullable=True),
    ]}
    return {"type": "record", "name": "manifest_file", "fields": [
        _field("manifest_path", 500, "string"),
        _field("manifest_length", 501, "long"),
        _field("partition_spec_id", 502, "int"),
        _field("content", 517, "int"),
        _field("sequence_number", 515, "long"),
        _field("min_sequence_number", 516, "long"),
        _field("added_snapshot_id", 503, "long", nullable=True),
        _field("added" + counts, 504, "int"),
        _field("existing" + counts, 505, "int"),
        _field("deleted" + counts, 506, "int"),
        _field("added_rows_count", 512, "long"),
        _field("existing_rows_count", 513, "long"),
        _field("deleted_rows_count", 514, "long"),
        _field("partitions", 507, {"type": "array", "element-id": 508, "items": summary}, nullable=True),
    ]}


@dataclass(frozen=True)
class DataFile:
    """An Iceberg `data_file`: a Paimon data file, or (content 1) one v3 deletion vector."""

    content: int
    file_path: str
    file_format: str
    partition: dict  # column -> Avro value (tarn.iceberg.conversions.avro_value)
    record_count: int
    file_size_in_bytes: int
    null_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None

    def to_avro(self) -> dict:
        return {"content": self.content, "file_path": self.file_path, "file_format": self.file_format,
                "partition": self.partition, "record_count": self.record_count,
                "file_size_in_bytes": self.file_size_in_bytes,
                "null_value_counts": _pairs(self.null_value_counts), "lower_bounds": _pairs(self.lower_bounds),
                "upper_bounds": _pairs(self.upper_bounds), "referenced_data_file": self.referenced_data_file,
                "content_offset": self.content_offset, "content_size_in_bytes": self.content_size_in_bytes}

    @classmethod
    def from_avro(cls, record: dict) -> "DataFile":
        return cls(record["content"], record["file_path"], record["file_format"], dict(record["partition"]),
                   record["record_count"], record["file_size_in_bytes"], _dict(record.get("null_value_counts")),
                   _dict(record.get("lower_bounds")), _dict(record.get("upper_bounds")),
                   record.get("referenced_data_file"), record.get("content_offset"),
                   record.get("content_size_in_bytes"))


def _pairs(values: dict | None) -> list | None:
    return None if values is None else [{"key": k, "value": v} for k, v in values.items()]


def _dict(pairs: list | None) -> dict | None:
    return None if pairs is None else {p["key"]: p["value"] for p in pairs}


@dataclass(frozen=True)
class Entry:
    """A `manifest_entry`: a file's status in the manifest's snapshot, with its numbers."""

    status: int
    snapshot_id: int
    sequence_number: int
    file_sequence_number: int
    file: DataFile

    @property
    def live(self) -> bool:
        return self.status in (ADDED, EXISTING)

    def to_avro(self) -> dict:
        return {"status": self.status, "snapshot_id": self.snapshot_id, "sequence_number": self.sequence_number,
                "file_sequence_number": self.file_sequence_number, "data_file": self.file.to_avro()}


@dataclass(frozen=True)
class PartitionSummary:
    contains_null: bool
    contains_nan: bool | None
    lower_bound: bytes | None
    upper_bound: bytes | None


@dataclass(frozen=True)
class ManifestMeta:
    """A `manifest_file` record of a manifest list."""

    manifest_path: str
    manifest_length: int
    content: int
    sequence_number: int
    min_sequence_number: int
    added_snapshot_id: int
    added_files_count: int
    existing_files_count: int
    deleted_files_count: int
    added_rows_count: int
    existing_rows_count: int
    deleted_rows_count: int
    partitions: tuple[PartitionSummary, ...] = field(default=())
    partition_spec_id: int = SPEC_ID

    @property
    def live_files(self) -> int:
        return self.added_files_count + self.existing_files_count - self.deleted_files_count

    @property
    def live_rows(self) -> int:
        return self.added_rows_count + self.existing_rows_count - self.deleted_rows_count

    def to_avro(self, legacy: bool) -> dict:
        counts = "_data_files_count" if legacy else "_files_count"
        return {"manifest_path": self.manifest_path, "manifest_length": self.manifest_length,
                "partition_spec_id": self.partition_spec_id, "content": self.content,
                "sequence_number": self.sequence_number, "min_sequence_number": self.min_sequence_number,
                "added_snapshot_id": self.added_snapshot_id, "added" + counts: self.added_files_count,
                "existing" + counts: self.existing_files_count, "deleted" + counts: self.deleted_files_count,
                "added_rows_count": self.added_rows_count, "existing_rows_count": self.existing_rows_count,
                "deleted_rows_count": self.deleted_rows_count,
                "partitions": [vars(p) for p in self.partitions]}

    @classmethod
    def from_avro(cls, r: dict) -> "ManifestMeta":
        counts = "_files_count" if "added_files_count" in r else "_data_files_count"
        return cls(r["manifest_path"], r["manifest_length"], r["content"], r["sequence_number"],
                   r["min_sequence_number"], r.get("added_snapshot_id"), r["added" + counts],
                   r["existing" + counts], r["deleted" + counts], r["added_rows_count"], r["existing_rows_count"],
                   r["deleted_rows_count"],
                   tuple(PartitionSummary(p["contains_null"], p.get("contains_nan"), p.get("lower_bound"),
                                          p.get("upper_bound")) for p in r.get("partitions") or ()),
                   r["partition_spec_id"])


class ManifestFiles:
    """Reads and writes one table's Iceberg manifests and manifest lists in `directory`.

    `summarise(entries)` gives the partition summaries of the entries a manifest holds. New
    files are named as Java names them: `<uuid>-m<k>.avro` and `snap-<k>-<uuid>.avro`, one uuid
    per publication; `written` lists every file this object wrote."""

    def __init__(self, file_io: FileIO, directory: str, partition_fields: list[DataField], codec: str,
                 target_size: int, legacy: bool, summarise):
        self.file_io, self.directory = file_io, directory
        self.entry_schema = manifest_entry_schema(partition_fields)
        self.list_schema = manifest_list_schema(legacy)
        self.codec, self.target_size, self.legacy, self.summarise = codec, target_size, legacy, summarise
        self.level = 1 if codec == "zstandard" else None
        self.uuid = str(uuid.uuid4())
        self.manifests = self.lists = 0
        self.written: list[str] = []

    def write_manifests(self, entries: list[Entry], sequence_number: int, content: int = DATA_MANIFEST
                        ) -> list[ManifestMeta]:
        """Entries rolled into manifests of about `target_size` bytes, as Java's rolling writer."""
        records = [e.to_avro() for e in entries]
        metas, start = [], 0
        for data, count in write_avro_rolling(records, self.entry_schema, self.target_size, self.codec, self.level):
            self.manifests += 1
            path = join(self.directory, f"{self.uuid}-m{self.manifests}.avro")
            self._write(path, data)
            metas.append(self._meta(path, len(data), entries[start:start + count], sequence_number, content))
            start += count
        return metas

    def _meta(self, path: str, length: int, entries: list[Entry], sequence_number: int, content: int) -> ManifestMeta:
        def count(status: int) -> tuple[int, int]:
            chosen = [e.file.record_count for e in entries if e.status == status]
            return len(chosen), sum(chosen)
        (added, added_rows), (existing, existing_rows), (deleted, deleted_rows) = (
            count(ADDED), count(EXISTING), count(DELETED))
        return ManifestMeta(self.file_io.uri(path), length, content, sequence_number,
                            min((e.sequence_number for e in entries), default=UNASSIGNED_SEQ), sequence_number,
                            added, existing, deleted, added_rows, existing_rows, deleted_rows,
                            tuple(self.summarise([e.file.partition for e in entries])))

    def write_list(self, metas: list[ManifestMeta]) -> str:
        """A manifest list of `metas`; its path."""
        self.lists += 1
        path = join(self.directory, f"snap-{self.lists}-{self.uuid}.avro")
        data = write_avro([m.to_avro(self.legacy) for m in metas], self.list_schema, self.codec, self.level)
        self._write(path, data)
        with _lists_guard:
            _WRITTEN_LISTS[self.file_io.uri(path)] = tuple(metas)
            while len(_WRITTEN_LISTS) > _WRITTEN_LISTS_KEPT:
                _WRITTEN_LISTS.popitem(last=False)
        return path

    def _write(self, path: str, data: bytes) -> None:
        self.written.append(path)
        self.file_io.write_bytes(path, data)

    def read_manifest(self, meta: ManifestMeta) -> list[Entry]:
        """The entries of a manifest, with sequence numbers and snapshot ids left null by the
        writer inherited from the manifest list as the spec says."""
        records = read_avro(self.file_io.read_bytes(self.local(meta.manifest_path)), meta.manifest_path,
                            logical_types=False)
        return [_entry(r, meta) for r in records]

    def read_list(self, path: str) -> list[ManifestMeta]:
        """The manifests a manifest list names (`path` as the metadata names it)."""
        with _lists_guard:
            written = _WRITTEN_LISTS.get(path)
        if written is not None:
            return list(written)
        return [ManifestMeta.from_avro(r) for r in read_avro(self.file_io.read_bytes(self.local(path)), path,
                                                             logical_types=False)]

    def local(self, path: str) -> str:
        """A path written in the metadata, found in this directory (Java reads by file name)."""
        return join(self.directory, path.rsplit("/", 1)[-1])


def _entry(record: dict, meta: ManifestMeta) -> Entry:
    status = record["status"]

    def inherited(name: str) -> int:
        value = record.get(name)
        if value is None and (meta.sequence_number == 0 or status == ADDED):
            return meta.sequence_number
        return value
    snapshot_id = record.get("snapshot_id")
    return Entry(status, meta.added_snapshot_id if snapshot_id is None else snapshot_id, inherited("sequence_number"),
                 inherited("file_sequence_number"), DataFile.from_avro(record["data_file"]))
