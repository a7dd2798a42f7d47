"""The snapshot record (snapshot JSON version 3, FORMAT.md section 3)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from dataclasses import dataclass, field

from tarn.errors import CorruptFile

BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX_VALUE, as Java batch jobs use

APPEND, COMPACT, OVERWRITE, ANALYZE = "APPEND", "COMPACT", "OVERWRITE", "ANALYZE"
COMMIT_KINDS = (APPEND, COMPACT, OVERWRITE, ANALYZE)

# (python attribute, JSON key, omitted when None) in Java's writing order.
_WIRE = (
    ("version", "version", False),
    ("uuid", "uuid", True),
    ("id", "id", False),
    ("schema_id", "schemaId", False),
    ("base_manifest_list", "baseManifestList", False),
    ("base_manifest_list_size", "baseManifestListSize", True),
    ("delta_manifest_list", "deltaManifestList", False),
    ("delta_manifest_list_size", "deltaManifestListSize", True),
    ("changelog_manifest_list", "changelogManifestList", True),
    ("changelog_manifest_list_size", "changelogManifestListSize", True),
    ("index_manifest", "indexManifest", True),
    ("commit_user", "commitUser", False),
    ("writer_version", "writerVersion", True),
    ("commit_identifier", "commitIdentifier", False),
    ("commit_kind", "commitKind", False),
    ("time_millis", "timeMillis", False),
    ("total_record_count", "totalRecordCount", True),
    ("delta_record_count", "deltaRecordCount", True),
    ("changelog_record_count", "changelogRecordCount", True),
    ("watermark", "watermark", True),
    ("statistics", "statistics", True),
    ("properties", "properties", True),
    ("next_row_id", "nextRowId", True),
    ("operation", "operation", True),
)


@dataclass(frozen=True)
class Snapshot:
    """One commit of a table, as the JSON file `snapshot/snapshot-<id>` holds it (also the body
    of a tag file): the schema id, the base/delta/changelog manifest lists, who committed
    (`commit_user`, `commit_identifier`), `commit_kind` (APPEND, COMPACT, OVERWRITE, ANALYZE),
    `time_millis`, record counts and the index manifest. Never modified once written."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    version: int = 3
    uuid: str | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    next_row_id: int | None = None
    operation: str | None = None
    writer_version: str | None = None  # who wrote it (Paimon 2.1): tarn writes python-tarn-<version>
    # Extra keys a tag file carries (tagCreateTime, tagTimeRetained) or that newer writers add.
    extra: dict = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:
        """One line a notebook can show: id, kind, schema, time and record counts (not the file names)."""
        when = _dt.datetime.fromtimestamp(self.time_millis / 1000, _dt.timezone.utc)
        parts = [f"id={self.id}", self.commit_kind, f"schema_id={self.schema_id}",
                 when.strftime("%Y-%m-%d %H:%M:%S UTC")]
        if self.delta_record_count is not None:
            parts.append(f"delta_records={self.delta_record_count}")
        if self.total_record_count is not None:
            parts.append(f"total_records={self.total_record_count}")
        return f"Snapshot({', '.join(parts)})"

    def to_dict(self) -> dict:
        """The JSON object with Paimon's key names (`schemaId`, `commitKind`, ...)."""
        out = {}
        for attr, key, omit_if_none in _WIRE:
            value = getattr(self, attr)
            if value is None and omit_if_none:
                continue
            if attr == "properties" and not value:
                continue
            out[key] = value
        out.update(self.extra)
        return out

    def to_json(self) -> str:
        """The file's text, laid out as Java Paimon writes it."""
        return json.dumps(self.to_dict(), indent=2, separators=(",", " : "))

    @classmethod
    def from_dict(cls, obj: dict, source: str = "<snapshot>") -> "Snapshot":
        """From the JSON object; unknown keys are kept in `extra`; CorruptFile names `source`."""
        known = {key for _, key, _ in _WIRE}
        try:
            values = {attr: obj.get(key) for attr, key, _ in _WIRE if key in obj}
            values["extra"] = {k: v for k, v in obj.items() if k not in known}
            return cls(**values)
        except TypeError as exc:
            raise CorruptFile(f"snapshot file {source} is missing required fields: {exc}") from exc

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<snapshot>") -> "Snapshot":
        """Parse a snapshot file's text; CorruptFile names `source` when it is not a snapshot."""
        try:
            obj = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptFile(f"snapshot file {source} is not valid JSON: {exc}") from exc
        if not isinstance(obj, dict):
            raise CorruptFile(f"snapshot file {source} does not hold a JSON object")
        return cls.from_dict(obj, source)

    def replace(self, **changes) -> "Snapshot":
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)
