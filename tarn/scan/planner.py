"""Scan planning: snapshot -> manifests -> live files -> pruned -> one split per bucket."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tarn import partition as partitions
from tarn.codec.binary_row import deserialize_row
from tarn.meta.manifest import DELETION_VECTORS_INDEX, DataFileMeta, IndexManifestEntry, ManifestEntry, ManifestFileMeta
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.options import Options
from tarn.scan.predicate import And, ColumnStats, Predicate, columns_of, eval_values, may_match_stats
from tarn.stats import decode_stats
from tarn.store.manifests import ManifestStore


@dataclass
class Split:
    """The files of one (partition, bucket) to read together. Picklable."""

    partition: bytes
    partition_values: tuple
    bucket: int
    bucket_path: str
    files: list[DataFileMeta]
    primary_key: bool
    row_count: int = field(init=False)
    # deletion vectors: the table writes them (then files above level 0 are read without
    # merging), and the index file entry holding each data file's vector
    deletion_vectors: bool = False
    deletion_files: dict[str, IndexManifestEntry] = field(default_factory=dict)
    table_root: str = ""

    def __post_init__(self):
        self.row_count = sum(f.row_count for f in self.files)

    @property
    def raw_convertible(self) -> bool:
        """Readable without merging: append files; with deletion vectors, primary-key files
        above level 0 (each key has one live row there); else one primary-key file above
        level 0 that holds no retract rows. (Level-0 files are always merged: some writers
        record `_DELETE_ROW_COUNT` 0 for files that do hold -D rows.)"""
        if not self.primary_key:
            return True
        if self.deletion_vectors:
            return all(f.level > 0 for f in self.files)
        only = self.files[0]
        return len(self.files) == 1 and only.level > 0 and only.delete_row_count == 0


    def by_file(self) -> list["Split"]:
        """A raw-convertible split as one split per file (read anywhere, in any order);
        other splits as they are."""
        if not self.raw_convertible or len(self.files) < 2:
            return [self]
        return [replace(self, files=[f], deletion_files={k: v for k, v in self.deletion_files.items()
                                                         if k == f.file_name}) for f in self.files]


def planner_for(context, schema: TableSchema | None = None) -> "Planner":
    """The planner of a table context (tarn.store.context.TableContext), for `schema`."""
    schema = schema or context.schema()
    return Planner(context.manifests(schema), schema, context.schema_by_id, context.root,
                   Options(schema.options))


class Planner:
    """Plans scans of one table. `schemas(id)` returns the TableSchema with that id."""

    def __init__(self, manifests: ManifestStore, schema: TableSchema, schemas, root: str, options):
        self.manifests = manifests
        self.schema = schema
        self.schemas = schemas
        self.root = root
        self.options = options
        self.partition_keys = list(schema.partition_keys)
        self.partition_types = [schema.field(k).type for k in schema.partition_keys]
        self._partition_cache: dict[bytes, tuple] = {}

    # ------------------------------------------------------------------ entries

    def manifest_metas(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        return self.manifests.data_manifests(snapshot)

    def live_entries(self, snapshot: Snapshot | None, predicate: Predicate | None = None,
                     buckets: set | None = None) -> list[ManifestEntry]:
        """Live ADD entries of the snapshot whose partition may satisfy `predicate`."""
        if snapshot is None:
            return []
        partition_pred = self._partition_part(predicate)
        entries: list[ManifestEntry] = []
        for meta in self.manifest_metas(snapshot):
            if partition_pred is not None and not self._manifest_may_match(meta, partition_pred):
                continue
            entries.extend(self.manifests.read_manifest(meta.file_name))
        live = self.manifests.merge_live(entries)
        if partition_pred is not None:
            live = [e for e in live if eval_values(partition_pred, self._partition_dict(e.partition)) is not False]
        if buckets is not None:
            live = [e for e in live if (e.partition, e.bucket) in buckets]
        return live

    def _partition_part(self, predicate: Predicate | None) -> Predicate | None:
        if predicate is None or not self.partition_keys:
            return None
        parts = _conjuncts(predicate)
        kept = [p for p in parts if columns_of(p) <= set(self.partition_keys)]
        if not kept:
            return None
        out = kept[0]
        for p in kept[1:]:
            out = out & p
        return out

    def _manifest_may_match(self, meta: ManifestFileMeta, predicate: Predicate) -> bool:
        stats = meta.partition_stats
        if not stats.min_values or len(stats.min_values) <= 4 or stats.min_values[:4] == b"\0\0\0\0":
            return True
        mins = deserialize_row(stats.min_values, self.partition_types)
        maxs = deserialize_row(stats.max_values, self.partition_types)
        nulls = list(stats.null_counts or [None] * len(mins))
        column_stats = {k: ColumnStats(lo, hi, n) for k, lo, hi, n in zip(self.partition_keys, mins, maxs, nulls)}
        return may_match_stats(predicate, column_stats, meta.num_added_files + meta.num_deleted_files + 1)

    def partition_values(self, partition: bytes) -> tuple:
        values = self._partition_cache.get(partition)
        if values is None:
            values = tuple(deserialize_row(partition, self.partition_types))
            self._partition_cache[partition] = values
        return values

    def _partition_dict(self, partition: bytes) -> dict:
        return dict(zip(self.partition_keys, self.partition_values(partition)))

    # ------------------------------------------------------------------ splits

    def plan(self, snapshot: Snapshot | None, predicate: Predicate | None = None) -> list[Split]:
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for entry in self.live_entries(snapshot, predicate):
            if predicate is not None and not self._file_may_match(entry.file, predicate):
                continue
            groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
        vectors = self.deletion_files(snapshot)
        deletion_vectors = bool(self.options.bool("deletion-vectors.enabled"))
        splits = []
        for (partition, bucket), files in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            values = self.partition_values(partition)
            bucket_path = partitions.bucket_path(self.root, self.schema, self.options.get("partition.default-name"),
                                                values, bucket)
            files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
            held = vectors.get((partition, bucket), {})
            if self.schema.primary_keys:
                splits.append(Split(partition, values, bucket, bucket_path, files, True, deletion_vectors,
                                    {f.file_name: held[f.file_name] for f in files if f.file_name in held},
                                    self.root))
            else:
                splits.extend(Split(partition, values, bucket, bucket_path, [f], False, deletion_vectors,
                                    {f.file_name: held[f.file_name]} if f.file_name in held else {}, self.root)
                              for f in files)
        return splits

    def deletion_files(self, snapshot: Snapshot | None) -> dict[tuple[bytes, int], dict[str, IndexManifestEntry]]:
        """(partition, bucket) -> {data file name: the index entry holding its deletion vector}."""
        if snapshot is None or not snapshot.index_manifest:
            return {}
        found: dict[tuple[bytes, int], dict[str, IndexManifestEntry]] = {}
        for entry in self.manifests.read_index_manifest(snapshot.index_manifest):
            if entry.index_type != DELETION_VECTORS_INDEX:
                continue
            held = found.setdefault((entry.partition, entry.bucket), {})
            for r in entry.dv_ranges or ():
                held[r.data_file] = entry
        return found

    def _file_may_match(self, meta: DataFileMeta, predicate: Predicate) -> bool:
        """Stats skipping: value stats for append tables, key stats only for PK tables."""
        file_schema = self.schemas(meta.schema_id)
        if self.schema.primary_keys:
            key_fields = [file_schema.field(k) for k in file_schema.trimmed_primary_keys]
            stats = meta.key_stats
            names = [f.name for f in key_fields]
            fields = key_fields
            parts = [p for p in _conjuncts(predicate) if columns_of(p) <= set(names)]
            if not parts:
                return True
        else:
            if meta.value_stats_cols is not None:
                fields = [file_schema.field(n) for n in meta.value_stats_cols]
            else:
                fields = list(file_schema.fields)
            stats = meta.value_stats
            parts = [predicate]
        column_stats = self._column_stats(stats, fields)
        if column_stats is None:
            return True
        return all(may_match_stats(p, column_stats, meta.row_count) for p in parts)

    def _column_stats(self, stats, fields) -> dict[str, ColumnStats] | None:
        """Stats keyed by the CURRENT column names (mapped by field id)."""
        if not stats.min_values or len(stats.min_values) <= 4:
            return None
        try:
            mins, maxs, nulls = decode_stats(stats, fields)
        except Exception:
            return None
        current = {f.id: f for f in self.schema.fields}
        out = {}
        for f, lo, hi, n in zip(fields, mins, maxs, nulls):
            now = current.get(f.id)
            if now is None or now.type.root != f.type.root:
                continue
            out[now.name] = ColumnStats(lo, hi, n)
        return out


def _conjuncts(p: Predicate) -> list[Predicate]:
    if isinstance(p, And):
        return [c for child in p.children for c in _conjuncts(child)]
    return [p]
