"""Iceberg metadata for one Paimon snapshot (Java's IcebergCommitCallback.createMetadata).

`publish(table, snapshot, delta, index_changed)` writes `v<N>.metadata.json` for Paimon
snapshot N:

- already there (and written for this snapshot): nothing to do;
- `v<N-1>` there: incrementally. An add-only commit adds one manifest of its new files to the
  previous manifests; a commit that removed files rewrites only the manifests holding them
  (the others, found by their partition summaries, are reused), marking them DELETED; when
  more than `compaction.min.file-num` small manifests add up to the target size (or pass
  `compaction.max.file-num`) they are merged into one. The operation is `append`, `overwrite`
  or (a COMPACT snapshot) `replace`;
- otherwise (the first commit, a callback that failed before, a format-version change):
  afresh from the snapshot's live files, and every older metadata version is expired.

What is visible: every data file of an append table; of a primary-key table the files at the
highest level (`num-levels` - 1), or, when v3 deletion vectors are published
(`deletion-vectors.enabled`, `deletion-vectors.bitmap64` and format version 3), every file above
level 0 with its vector as a position-delete `puffin` entry pointing into Paimon's index file.

Atomic: manifests and the manifest list are new files; the metadata file is created only if
absent (a racing publisher of the same version wins, this one's new files are deleted); the
hint moves forward only. Iceberg snapshots expire by Paimon's retention options
(`snapshot.num-retained.min/max`, `snapshot.time-retained`), their manifest lists and the
manifests no later snapshot keeps with them; old metadata files go after each commit
(`delete-after-commit.enabled`, `previous-versions-max`).
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tarn import partition as partitions
from tarn.errors import CorruptFile, UnsupportedFeature
from tarn.fs import join
from tarn.iceberg import metadata as md
from tarn.iceberg.config import IcebergConfig, config_of, metadata_dir
from tarn.iceberg.conversions import avro_comparable, avro_value, from_bytes, to_bytes
from tarn.iceberg.manifest import (ADDED, DATA, DATA_MANIFEST, DELETE_MANIFEST, DELETED, EXISTING, POSITION_DELETES,
                                   DataFile, Entry, ManifestFiles, ManifestMeta, PartitionSummary)
from tarn.iceberg.schema import highest_field_id, iceberg_schema, unpublishable_columns
from tarn.lsm.intervals import partition_sections
from tarn.lsm.policy import num_levels
from tarn.meta.manifest import ADD, DELETION_VECTORS_INDEX, DataFileMeta, ManifestEntry
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import COMPACT, Snapshot
from tarn.scan.planner import pack_in_order
from tarn.stats import decode_stats
from tarn.store.deletion_vectors import DeletionVectorFiles, live_index_entries
from tarn.types import BYTES, DataField, with_nullable

if TYPE_CHECKING:
    from tarn.store.context import TableContext

_NO_BOUNDS = ("ARRAY", "MAP", "ROW", "MULTISET", "VARIANT", "VECTOR", "BLOB")
_SUMMARY_KEYS = ("added-data-files", "added-records", "added-files-size", "deleted-data-files", "deleted-records",
                 "removed-files-size", "changed-partition-count", "total-records", "total-data-files",
                 "total-files-size", "total-delete-files", "total-position-deletes", "total-equality-deletes")


def check_publishable(schema: TableSchema, table_name: str) -> None:
    """UnsupportedFeature naming the first column Iceberg compatibility cannot publish."""
    for column, why in unpublishable_columns(schema):
        raise UnsupportedFeature(f"table {table_name}: column '{column}' cannot be published as Iceberg metadata "
                                 f"('metadata.iceberg.storage' is set): {why}")


def publish(table: "TableContext", snapshot: Snapshot, delta: tuple[ManifestEntry, ...], index_changed: bool) -> bool:
    """Write the Iceberg metadata of `snapshot` (see the module docstring); False when there
    was nothing to write (already published, or a newer version is)."""
    schema = table.schema()
    config = config_of(schema.shape.options, table.name)
    return _Publication(table, schema, config, metadata_dir(table.root, config, table.name)).run(
        snapshot, delta, index_changed)


@dataclass
class _Changes:
    """The data files a commit added and removed that Iceberg sees, by path (Java's
    collectFileChanges: a file moved to another level is removed, then added again)."""

    added: dict[str, tuple[bytes, DataFileMeta]] = field(default_factory=dict)
    removed: dict[str, tuple[bytes, DataFileMeta]] = field(default_factory=dict)
    add_only: bool = True
    unpublished: set[str] = field(default_factory=set)  # removed files no manifest held (level 0)

    def partitions(self) -> list[bytes]:
        return list(dict.fromkeys([p for p, _ in self.removed.values()] + [p for p, _ in self.added.values()]))


class _Publication:
    """One snapshot's metadata being written (holds the caches of one publication)."""

    def __init__(self, table: "TableContext", schema: TableSchema, config: IcebergConfig, directory: str):
        self.table, self.io, self.schema, self.config, self.directory = table, table.file_io, schema, config, directory
        self.partition_fields = [schema.field(k) for k in schema.partition_keys]
        self.files = ManifestFiles(self.io, directory, self.partition_fields, config.codec,
                                   config.manifest_target_size, config.legacy_manifest_list, self._summaries)
        self.max_level = num_levels(schema.shape.options) - 1
        self._schemas: dict[int, dict] = {}
        self._layouts: dict[tuple, list] = {}
        self._partitions: dict[bytes, dict] = {}
        self._dirs: dict[tuple[bytes, int], str] = {}
        self._expired_lists: list[str] = []  # manifest lists of expired snapshots, then their successor

    # ------------------------------------------------------------------ the decision

    def run(self, snapshot: Snapshot, delta, index_changed: bool) -> bool:
        n = snapshot.id
        if n == 1:  # a table dropped and made again: its old metadata (hadoop-catalog) is not ours
            self.io.delete_dir(self.directory)
        if self._published(n, snapshot):
            return False
        base_path = md.version_path(self.directory, n - 1)
        base = md.read_metadata(self.io, base_path) if n > 1 and self.io.exists(base_path) else None
        if base is not None and base.get("format-version") != self.config.format_version:
            if base.get("format-version", 0) > self.config.format_version:
                raise UnsupportedFeature(
                    f"table {self.table.name}: the Iceberg metadata has format version {base.get('format-version')}, "
                    f"newer than 'metadata.iceberg.format-version' = {self.config.format_version}")
            base = None  # the format version changed: made afresh
        metadata = self._with_base(snapshot, base, delta, index_changed) if base else self._afresh(snapshot)
        return self._commit(n, metadata, base)

    def _published(self, n: int, snapshot: Snapshot) -> bool:
        """Is version `n` (or a newer one, for this table's history) already published?"""
        path = md.version_path(self.directory, n)
        if self.io.exists(path):
            current = md.current_snapshot(md.read_metadata(self.io, path))
            return current["timestamp-ms"] >= snapshot.time_millis  # else written before a rollback: stale
        hint = md.read_hint(self.io, self.directory)
        return hint is not None and hint > n and self._latest_id() >= hint

    def _latest_id(self) -> int:
        latest = self.table.latest_snapshot()
        return latest.id if latest else 0

    def _commit(self, n: int, metadata: dict, base: dict | None) -> bool:
        """Create `v<n>.metadata.json` (following `base`, or afresh), move the hint, expire. A
        version another publisher created first stands: this one's new files are deleted."""
        path, data, afresh = md.version_path(self.directory, n), md.to_json(metadata, base), base is None
        if not self.io.write_if_absent(path, data):
            if not self._stale(path, n):
                self._discard_written()
                return False
            self.io.write_bytes(path, data)
        md.remember(path, data, metadata)
        hint = md.read_hint(self.io, self.directory)
        if hint is None or hint <= n or self._latest_id() < hint:
            self.io.write_bytes(join(self.directory, md.VERSION_HINT), str(n).encode())
        if afresh:
            self._expire_all_before(n)
        self._delete_old_versions(n, afresh)
        return True

    def _stale(self, path: str, n: int) -> bool:
        current = md.current_snapshot(md.read_metadata(self.io, path))
        return current["timestamp-ms"] < self.table.snapshot(n).time_millis

    def _discard_written(self) -> None:
        for path in self.files.written:
            self.io.delete(path)

    # ------------------------------------------------------------------ afresh

    def _afresh(self, snapshot: Snapshot) -> dict:
        n = snapshot.id
        entries = self._raw_convertible(self.table.live_entries(snapshot, self.table.schema_by_id(snapshot.schema_id)))
        data = [self._entry(n, e.partition, self._path(e), e.file) for e in entries]
        deletes = self._vectors_of(snapshot, entries) if self.config.deletion_vectors else []
        metas = self.files.write_manifests(data, n) if data else []
        metas += self.files.write_manifests(deletes, n, DELETE_MANIFEST) if deletes else []
        totals = {"records": sum(e.file.row_count for e in entries), "files": len(entries),
                  "size": sum(e.file.file_size for e in entries)}
        live_deletes = [d for d in deletes if d.live]
        summary = _summary("append", snapshot, {
            "added-data-files": totals["files"], "added-records": totals["records"], "added-files-size": totals["size"],
            "deleted-data-files": 0, "deleted-records": 0, "removed-files-size": 0,
            "changed-partition-count": len({e.partition for e in entries}), "total-records": totals["records"],
            "total-data-files": totals["files"], "total-files-size": totals["size"],
            "total-delete-files": len(live_deletes),
            "total-position-deletes": sum(d.file.record_count for d in live_deletes), "total-equality-deletes": 0})
        schema_id = self.schema.id
        current = self._iceberg_schema(schema_id)
        partition_fields = [f for f in current["fields"] if f["name"] in self.schema.partition_keys]
        partition_fields.sort(key=lambda f: self.schema.partition_keys.index(f["name"]))
        spec = md.partition_spec(partition_fields)
        return md.table_metadata(
            self.config.format_version, str(uuid.uuid4()), self.io.uri(self.table.root), n, highest_field_id(current),
            [self._iceberg_schema(i) for i in range(schema_id + 1)], schema_id, [spec],
            max((f["field-id"] for f in spec["fields"]), default=999),
            [md.snapshot_json(n, summary, self.io.uri(self.files.write_list(metas)), schema_id)], {})

    def _vectors_of(self, snapshot: Snapshot, entries: list[ManifestEntry]) -> list[Entry]:
        """Position-delete entries of the visible files' deletion vectors (file size unknown: -1)."""
        index = DeletionVectorFiles(self.io, self.table.root, self.schema)
        by_file = {}
        for entry in live_index_entries(self.table.manifests(self.schema), snapshot):
            if entry.index_type == DELETION_VECTORS_INDEX:
                for r in entry.dv_ranges or ():
                    by_file[(entry.partition, entry.bucket, r.data_file)] = (entry, r)
        out = []
        for e in entries:
            found = by_file.get((e.partition, e.bucket, e.file.file_name))
            if found is not None:
                out.append(self._vector_entry(snapshot.id, e.partition, index.path(found[0]), -1, self._path(e),
                                              found[1]))
        return out

    def _vector_entry(self, n: int, partition: bytes, index_path: str, size: int, data_path: str, r) -> Entry:
        if r.cardinality is None:
            raise CorruptFile(f"table {self.table.name}: the deletion vector of {data_path} has no cardinality; "
                              "Iceberg deletion vectors cannot be published for it")
        file = DataFile(POSITION_DELETES, self.io.uri(index_path), "puffin", self._partition(partition), r.cardinality,
                        size, None, None, None, data_path, r.offset, r.length)
        return Entry(ADDED, n, n, n, file)

    # ------------------------------------------------------------------ incremental

    def _with_base(self, snapshot: Snapshot, base: dict, delta, index_changed: bool) -> dict:
        n = snapshot.id
        base_snapshot = md.current_snapshot(base)
        base_metas = self.files.read_list(base_snapshot["manifest-list"])
        base_data = [m for m in base_metas if m.content == DATA_MANIFEST]
        changes = self._changes(delta)
        if changes.add_only:
            data_metas, operation = base_data + self._added_manifests(changes.added, n), "append"
        else:
            data_metas, operation = self._rewritten(changes, base_data, n, snapshot.commit_kind)
        deletes = []
        if self.config.deletion_vectors:
            deletes = self._all_vectors(snapshot) if index_changed else [
                m for m in base_metas if m.content == DELETE_MANIFEST]
        data_metas = self._compacted(data_metas, n)
        manifest_list = self.files.write_list(data_metas + deletes)
        summary = _summary(operation, snapshot, self._metrics(changes, base_snapshot, base_data, deletes))
        schema_id = self.schema.id
        schemas = list(base["schemas"])
        if base["current-schema-id"] != schema_id:
            if schema_id < base["current-schema-id"]:
                raise CorruptFile(f"table {self.table.name}: schema {schema_id} is older than the Iceberg "
                                  f"metadata's current schema {base['current-schema-id']}")
            schemas += [self._iceberg_schema(i) for i in range(base["current-schema-id"] + 1, schema_id + 1)]
        snapshots = base["snapshots"] + [md.snapshot_json(n, summary, self.io.uri(manifest_list), schema_id)]
        kept, expired = self._retained(snapshots, n)
        if expired:
            self._expired_lists = [s["manifest-list"] for s in expired] + [kept[0]["manifest-list"]]
        return md.table_metadata(
            base["format-version"], base["table-uuid"], base["location"], n,
            highest_field_id(self._iceberg_schema(schema_id)), schemas, schema_id, base["partition-specs"],
            base["last-partition-id"], kept, self._refs(kept))

    def _changes(self, delta) -> _Changes:
        changes = _Changes()
        for e in delta:
            path = self._path(e)
            if e.kind == ADD:
                if self._visible(e.file):
                    changes.removed.pop(path, None)
                    changes.added[path] = (e.partition, e.file)
            else:
                changes.add_only = False
                changes.added.pop(path, None)
                changes.removed[path] = (e.partition, e.file)
        return changes

    def _added_manifests(self, added: dict, n: int) -> list[ManifestMeta]:
        if not added:
            return []
        return self.files.write_manifests([self._entry(n, p, path, f) for path, (p, f) in added.items()], n)

    def _rewritten(self, changes: _Changes, base_data: list[ManifestMeta], n: int, commit_kind: str):
        """Java's createWithDeleteManifestFileMetas: manifests that may hold a changed
        partition are read; one holding a removed file is rewritten, the others reused."""
        operation = "append"
        wanted = [self._comparable_partition(p) for p in changes.partitions()]
        out, found = [], set()
        for meta in base_data:
            if not any(_may_hold(meta, values, self.partition_fields) for values in wanted):
                out.append(meta)
                continue
            entries = self.files.read_manifest(meta)
            reusable = True
            for entry in entries:
                if entry.live:
                    if entry.file.file_path in changes.added:
                        del changes.added[entry.file.file_path]  # already there (a level change)
                    elif entry.file.file_path in changes.removed:
                        reusable = False
            if reusable:
                out.append(meta)
                continue
            operation = "replace" if commit_kind == COMPACT else "overwrite"
            rewritten = [_removed_or_kept(e, changes.removed, n) for e in entries if e.live]
            found |= {e.file.file_path for e in rewritten if e.status == DELETED}
            out += self.files.write_manifests(rewritten, n)
        changes.unpublished = set(changes.removed) - found
        return out + self._added_manifests(changes.added, n), operation

    def _compacted(self, metas: list[ManifestMeta], n: int) -> list[ManifestMeta]:
        """Java's compactMetadataIfNeeded: small manifests merged once there are enough."""
        target = self.config.manifest_target_size
        small = [m for m in metas if m.manifest_length < target * 2 // 3]
        if len(small) < self.config.compact_min_files:
            return metas
        if len(small) < self.config.compact_max_files and sum(m.manifest_length for m in small) < target:
            return metas
        entries = []
        for meta in small:
            for e in self.files.read_manifest(meta):
                if e.file_sequence_number == n or e.snapshot_id == n or e.status == EXISTING:
                    entries.append(e)
                elif e.status == ADDED:
                    entries.append(Entry(EXISTING, e.snapshot_id, e.sequence_number, e.file_sequence_number, e.file))
            if meta.sequence_number == n:  # written by this publication: no metadata refers to it
                self.io.delete(self.files.local(meta.manifest_path))
        big = [m for m in metas if m.manifest_length >= target * 2 // 3]
        return big + self.files.write_manifests(entries, n)

    def _all_vectors(self, snapshot: Snapshot) -> list[ManifestMeta]:
        """Java's createDvManifestFileMetas: every deletion vector of the snapshot."""
        index = DeletionVectorFiles(self.io, self.table.root, self.schema)
        out = []
        for entry in live_index_entries(self.table.manifests(self.schema), snapshot):
            if entry.index_type != DELETION_VECTORS_INDEX:
                continue
            bucket_dir = self._bucket_dir(entry.partition, entry.bucket)
            for r in entry.dv_ranges or ():
                out.append(self._vector_entry(snapshot.id, entry.partition, index.path(entry), entry.file_size,
                                              self.io.uri(join(bucket_dir, r.data_file)), r))
        return self.files.write_manifests(out, snapshot.id, DELETE_MANIFEST) if out else []

    def _metrics(self, changes: _Changes, base_snapshot: dict, base_data: list[ManifestMeta],
                 deletes: list[ManifestMeta]) -> dict:
        def total(name: str, fallback) -> int:
            value = base_snapshot.get("summary", {}).get(name)
            try:
                return int(value)
            except (TypeError, ValueError):
                return fallback()
        added = changes.added.values()
        # Java counts every removed file; a primary-key table's level-0 files were never published
        removed = [v for path, v in changes.removed.items() if path not in changes.unpublished]
        out = {"added-data-files": len(added), "added-records": sum(f.row_count for _, f in added),
               "added-files-size": sum(f.file_size for _, f in added), "deleted-data-files": len(removed),
               "deleted-records": sum(f.row_count for _, f in removed),
               "removed-files-size": sum(f.file_size for _, f in removed),
               "changed-partition-count": len(changes.partitions())}
        out["total-records"] = total("total-records", lambda: sum(m.live_rows for m in base_data)) + \
            out["added-records"] - out["deleted-records"]
        out["total-data-files"] = total("total-data-files", lambda: sum(m.live_files for m in base_data)) + \
            out["added-data-files"] - out["deleted-data-files"]
        out["total-files-size"] = total("total-files-size", lambda: self._live_size(base_data)) + \
            out["added-files-size"] - out["removed-files-size"]
        out.update({"total-delete-files": sum(m.live_files for m in deletes),
                    "total-position-deletes": sum(m.live_rows for m in deletes), "total-equality-deletes": 0})
        return out

    def _live_size(self, metas: list[ManifestMeta]) -> int:
        return sum(e.file.file_size_in_bytes for m in metas for e in self.files.read_manifest(m) if e.live)

    def _retained(self, snapshots: list[dict], n: int) -> tuple[list[dict], list[dict]]:
        """Java's expiry of Iceberg snapshots: the oldest go while Paimon's rules would expire
        them (at least `num-retained.min`, at most `num-retained.max`, `time-retained`)."""
        now = int(time.time() * 1000)
        first = len(snapshots) - 1
        for i, s in enumerate(snapshots[:-1]):
            if not self._expires(s, n, now):
                first = i
                break
        return snapshots[first:], snapshots[:first]

    def _expires(self, snapshot: dict, n: int, now: int) -> bool:
        sid = snapshot["snapshot-id"]
        if sid > n - self.config.retain_min:
            return False
        if sid <= n - self.config.retain_max:
            return True
        return snapshot["timestamp-ms"] < now - self.config.time_retained_ms

    def _refs(self, snapshots: list[dict]) -> dict:
        """Iceberg tags for Paimon tags on retained snapshots (Java keeps one name per snapshot)."""
        ids = {s["snapshot-id"] for s in snapshots}
        by_snapshot: dict[int, str] = {}
        for name in sorted(self.table.tag_store.names()):
            tag = self.table.tag_store.find(name)
            if tag is not None and tag.snapshot_id in ids:
                by_snapshot.setdefault(tag.snapshot_id, name)
        return {name: md.tag_ref(sid) for sid, name in sorted(by_snapshot.items())}

    # ------------------------------------------------------------------ expiry of files

    def _expire_all_before(self, n: int) -> None:
        """After a fresh start: every older version's manifest lists and manifests go."""
        seen_lists, seen_manifests = set(), set()
        for version in md.versions(self.io, self.directory):
            if version >= n:
                continue
            try:
                old = md.read_metadata(self.io, md.version_path(self.directory, version))
            except Exception:  # noqa: BLE001 - an unreadable old version is just deleted below
                continue
            for s in old.get("snapshots") or ():
                name = s["manifest-list"].rsplit("/", 1)[-1]
                if name in seen_lists:
                    continue
                seen_lists.add(name)
                self._delete_list(s["manifest-list"], seen_manifests)
        self._delete_versions_before(n)

    def _delete_list(self, manifest_list: str, seen: set) -> None:
        local = self.files.local(manifest_list)
        if self.io.exists(local):
            for meta in self.files.read_list(manifest_list):
                local_manifest = self.files.local(meta.manifest_path)
                if local_manifest not in seen and local_manifest not in self.files.written:
                    seen.add(local_manifest)
                    self.io.delete(local_manifest)
        self.io.delete(local)

    def expire_lists(self) -> None:
        """The manifest lists of the snapshots this version expired, and the manifests of each
        that its successor does not keep (Java's expireManifestList)."""
        lists = self._expired_lists
        for old, successor in zip(lists, lists[1:]):
            keep = {m.manifest_path for m in self.files.read_list(successor)}
            for meta in self.files.read_list(old):
                if meta.manifest_path not in keep:
                    self.io.delete(self.files.local(meta.manifest_path))
            self.io.delete(self.files.local(old))

    def _delete_old_versions(self, n: int, afresh: bool) -> None:
        """Keep `previous-versions-max` versions before `n`. Each commit drops the one version
        that fell out (no listing: its cost must not grow with the table's history); a
        publication afresh sweeps every older one (earlier sweeps may have failed)."""
        if self.config.delete_after_commit:
            oldest_kept = n - self.config.previous_versions_max
            if afresh:
                self._delete_versions_before(oldest_kept)
            elif oldest_kept > 1:
                self.io.delete(md.version_path(self.directory, oldest_kept - 1))
        self.expire_lists()

    def _delete_versions_before(self, version: int) -> None:
        if version <= 0:
            return
        for old in md.versions(self.io, self.directory):
            if old < version:
                self.io.delete(md.version_path(self.directory, old))

    # ------------------------------------------------------------------ files as Iceberg sees them

    def _raw_convertible(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """The files of a snapshot's raw-convertible splits, as Java's batch split generator
        decides them (MergeTreeSplitGenerator.splitForBatch): what a publication without a base
        shows. Append tables: every file. A primary-key bucket: all its files when none is at
        level 0 or holds retract rows and they need no merge (deletion vectors, first-row, or
        one level); else its key-range sections packed in order into splits of
        `source.split.target-size` (each costing at least `source.split.open-file-cost`), and a
        split of exactly one file without retract rows."""
        if not self.schema.primary_keys:
            return list(entries)
        skip_level_0 = self.schema.shape.deletion_vectors or self.schema.shape.options.merge_engine == "first-row"
        buckets: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for entry in entries:
            if not (skip_level_0 and entry.file.level == 0):
                buckets.setdefault((entry.partition, entry.bucket), []).append(entry)
        return [e for bucket in buckets.values() for e in self._raw_of_bucket(bucket)]

    def _raw_of_bucket(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        def clean(meta: DataFileMeta) -> bool:  # Java: an unknown count is taken as none (older writers)
            return meta.delete_row_count is None or meta.delete_row_count == 0

        options = self.schema.shape.options
        files = [e.file for e in entries]
        one_level = len({f.level for f in files}) == 1
        needs_no_merge = self.schema.shape.deletion_vectors or options.merge_engine == "first-row" or one_level
        if all(f.level != 0 and clean(f) for f in files) and needs_no_merge:
            return entries
        by_name = {e.file.file_name: e for e in entries}
        key_types = [self.schema.field(k).type for k in self.schema.trimmed_primary_keys]
        sections = [[f for run in section for f in run.files] for section in partition_sections(files, key_types)]
        target = options.memory_bytes("source.split.target-size")
        open_cost = options.memory_bytes("source.split.open-file-cost")
        raw = []
        for split in pack_in_order(sections, lambda s: max(sum(f.file_size for f in s), open_cost), target):
            if len(split) == 1 and len(split[0]) == 1 and clean(split[0][0]):
                raw.append(by_name[split[0][0].file_name])
        return raw

    def _visible(self, meta: DataFileMeta) -> bool:
        if not self.schema.primary_keys:
            return True
        if self.config.deletion_vectors:
            return meta.level > 0
        return meta.level == self.max_level

    def _bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        if key not in self._dirs:
            self._dirs[key] = self.table.bucket_dir(self.schema, partition, bucket)
        return self._dirs[key]

    def _path(self, e: ManifestEntry) -> str:
        if e.file.external_path:
            return e.file.external_path
        return self.io.uri(join(self._bucket_dir(e.partition, e.bucket), e.file.file_name))

    def _partition(self, partition: bytes) -> dict:
        if partition not in self._partitions:
            values = partitions.from_bytes(self.schema, partition) if self.partition_fields else ()
            self._partitions[partition] = {f.name: avro_value(f.type, v)
                                           for f, v in zip(self.partition_fields, values)}
        return self._partitions[partition]

    def _comparable_partition(self, partition: bytes) -> list:
        values = self._partition(partition)
        return [avro_comparable(f.type, values[f.name]) for f in self.partition_fields]

    def _summaries(self, partition_values: list[dict]) -> list[PartitionSummary]:
        """Per partition column: nulls, NaNs, and the lowest and highest value, serialised."""
        out = []
        for f in self.partition_fields:
            values = [avro_comparable(f.type, p.get(f.name)) for p in partition_values]
            present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
            nan = any(isinstance(v, float) and math.isnan(v) for v in values) if f.type.root in (
                "FLOAT", "DOUBLE") else False
            out.append(PartitionSummary(
                contains_null=any(v is None for v in values), contains_nan=nan,
                lower_bound=to_bytes(f.type, min(present)) if present else None,
                upper_bound=to_bytes(f.type, max(present)) if present else None))
        return out

    def _iceberg_schema(self, schema_id: int) -> dict:
        if schema_id not in self._schemas:
            schema = self.table.schema_by_id(schema_id)
            check_publishable(schema, self.table.name)
            self._schemas[schema_id] = iceberg_schema(schema)
        return self._schemas[schema_id]

    def _entry(self, n: int, partition: bytes, path: str, meta: DataFileMeta) -> Entry:
        nulls, lowers, uppers = self._stats(meta)
        file = DataFile(DATA, path, meta.file_name.rsplit(".", 1)[-1], self._partition(partition), meta.row_count,
                        meta.file_size, nulls, lowers, uppers)
        return Entry(ADDED, n, n, n, file)

    def _stats(self, meta: DataFileMeta) -> tuple[dict, dict, dict]:
        """Null counts and bounds by Iceberg field id (Java's IcebergDataFileMeta.create):
        an unknown null count is left out, and bounds only where both ends are known."""
        layout, stats_fields = self._layout(meta.schema_id, meta.value_stats_cols)
        mins, maxs, nulls = decode_stats(meta.value_stats, stats_fields)
        null_counts, lowers, uppers = {}, {}, {}
        for field_id, t, i in layout:
            if nulls[i] is not None:
                null_counts[field_id] = nulls[i]
            if t.root not in _NO_BOUNDS and mins[i] is not None and maxs[i] is not None:
                lowers[field_id], uppers[field_id] = to_bytes(t, mins[i]), to_bytes(t, maxs[i])
        return null_counts, lowers, uppers

    def _layout(self, schema_id: int, stats_cols) -> tuple[list, list]:
        key = (schema_id, stats_cols)
        if key not in self._layouts:
            schema = self.table.schema_by_id(schema_id)
            names = list(stats_cols) if stats_cols is not None else schema.field_names
            by_name = schema.fields_by_name
            stats_fields = [by_name[n] if n in by_name else DataField(-1, n, BYTES()) for n in names]
            index = {n: i for i, n in enumerate(names)}
            layout = [(f.id, f.type, index[f.name]) for f in schema.fields if f.name in index]
            self._layouts[key] = (layout, [DataField(f.id, f.name, with_nullable(f.type, True)) for f in stats_fields])
        return self._layouts[key]


def _removed_or_kept(entry: Entry, removed: dict, n: int) -> Entry:
    if entry.file.file_path in removed:  # deleted by this snapshot, numbered as the file was added
        return Entry(DELETED, n, entry.sequence_number, entry.file_sequence_number, entry.file)
    return Entry(EXISTING, entry.snapshot_id, entry.sequence_number, entry.file_sequence_number, entry.file)


def _may_hold(meta: ManifestMeta, values: list, fields) -> bool:
    """Could a manifest with these partition summaries hold the partition `values`?"""
    if not fields:
        return True
    for f, value, summary in zip(fields, values, meta.partitions):
        if value is None:
            if not summary.contains_null:
                return False
            continue
        if summary.lower_bound is None or summary.upper_bound is None:
            return False
        try:
            if not from_bytes(f.type, summary.lower_bound) <= value <= from_bytes(f.type, summary.upper_bound):
                return False
        except (TypeError, ValueError):
            return True
    return True


def _summary(operation: str, snapshot: Snapshot, metrics: dict) -> dict:
    """Java's snapshot summary: the operation, the counts (never below 0) and the Paimon
    snapshot's properties."""
    out = {"operation": operation}
    out.update({key: str(max(0, metrics[key])) for key in _SUMMARY_KEYS})
    out.update({k: v for k, v in (snapshot.properties or {}).items() if v is not None})
    return out
