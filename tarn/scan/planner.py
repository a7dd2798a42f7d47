"""Scan planning: snapshot -> manifests -> live files -> pruned -> one split per bucket."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from tarn import features
from tarn import partition as partitions
from tarn.bucket import KeyBuckets, bucket_function, function_problem, uses_bucket_function
from tarn.codec.binary_row import deserialize_row
from tarn.codec.file_index import INDEX_SUFFIX, Container, literal_keys
from tarn.data.layout import STORED_ROW_TRACKING_FIELDS
from tarn.errors import CorruptFile, FileMissing, TarnError
from tarn.fs import join, parent
from tarn.meta.manifest import DELETION_VECTORS_INDEX, DataFileMeta, IndexManifestEntry, ManifestEntry, ManifestFileMeta
from tarn.meta.row_ranges import ROW_ID, anchor_of, group_by_range, is_column_file, row_range, stores_row_ids
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.paths import POSTPONE_BUCKET
from tarn.scan.predicate import (And, ColumnStats, Compare, In, IsNull, Not, Or, Predicate, StartsWith, columns_of,
                                  eval_values, may_match_stats, negate)
from tarn.stats import decode_stats
from tarn.store.cache import ByteCache
from tarn.store.manifests import ManifestStore


POSTPONED, STITCHED, RAW, MERGED = "postponed", "stitched", "raw", "merged"  # Split.kind


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
    # row tracking: the files of one row-id group (tarn/meta/row_ranges.py), read stitched
    row_tracking: bool = False
    # postpone.merge-on-read: a partition's postponed files (bucket -2, in replay order) merged
    # on read with the rows of these splits of its real buckets
    merged_buckets: tuple = ()
    # scan.fallback-branch / scan.primary-branch: the branch whose files these are ("": the
    # scanned table's own branch; tarn/scan/fallback.py)
    branch: str = ""

    def __post_init__(self):
        if self.row_tracking and len(self.files) > 1:  # files of one row-id range: the rows of one
            self.row_count = anchor_of(self.files).row_count
        else:
            self.row_count = sum(f.row_count for f in self.files)

    def __repr__(self) -> str:
        return (f"Split(partition={self.partition_values!r}, bucket={self.bucket}, files={len(self.files)}, "
                f"rows={self.row_count}{', deletion_vectors' if self.deletion_vectors else ''})")

    @property
    def kind(self) -> str:
        """How the split is read, decided here once (the readers of tarn/scan/reader.py each
        take one kind): POSTPONED (postponed rows merged on read with their partition's
        buckets), STITCHED (the files of one row-id group), RAW (files read straight through)
        or MERGED (a primary-key bucket merged on read)."""
        if self.bucket == POSTPONE_BUCKET:
            return POSTPONED
        if self.row_tracking:
            return STITCHED
        return RAW if self.raw_convertible else MERGED

    @property
    def raw_convertible(self) -> bool:
        """Readable without merging: append files; with deletion vectors, primary-key files
        above level 0 (each key has one live row there); else primary-key files of one level
        above 0 (one sorted run: their key ranges do not overlap) that hold no retract rows,
        as Java's MergeTreeSplitGenerator decides. (Level-0 files are always merged: some
        writers record `_DELETE_ROW_COUNT` 0 for files that do hold -D rows.)"""
        if self.bucket == POSTPONE_BUCKET:
            return False  # postponed rows merged on read with the partition's buckets
        if self.row_tracking:
            return len(self.files) == 1
        if not self.primary_key:
            return True
        if self.deletion_vectors:  # Java: level-1+ files without retract rows (unknown count: none)
            return all(f.level > 0 and not f.delete_row_count for f in self.files)
        level = self.files[0].level
        return level > 0 and all(f.level == level and f.delete_row_count == 0 for f in self.files)


    def by_file(self) -> list["Split"]:
        """A raw-convertible split as one split per file (read anywhere, in any order);
        other splits as they are."""
        if not self.raw_convertible or len(self.files) < 2:
            return [self]
        return [replace(self, files=[f], deletion_files={k: v for k, v in self.deletion_files.items()
                                                         if k == f.file_name}) for f in self.files]


def pack_in_order(items: list, weight, target: int) -> list[list]:
    """Java's BinPacking.packForOrdered: `items` in order into bins of about `target` total
    `weight(item)` (a bin closes before the item that would overflow it, unless it is empty)."""
    bins, current, load = [], [], 0
    for item in items:
        cost = weight(item)
        if current and load + cost > target:
            bins.append(current)
            current, load = [], 0
        current.append(item)
        load += cost
    if current:
        bins.append(current)
    return bins


def planner_for(context, schema: TableSchema | None = None) -> "Planner":
    """The planner of a table context (tarn.store.context.TableContext), for `schema`."""
    schema = schema or context.schema()
    return Planner(context.manifests(schema), schema, context.schema_by_id, context.root,
                   schema.shape.options, getattr(context, "file_io", None), getattr(context, "name", None))


class Planner:
    """Plans scans of one table. `schemas(id)` returns the TableSchema with that id."""

    def __init__(self, manifests: ManifestStore, schema: TableSchema, schemas, root: str, options, file_io=None,
                 name: str | None = None):
        self.manifests = manifests
        self.name = name or root
        self.file_io = file_io if file_io is not None else getattr(manifests, "file_io", None)
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
        """The splits a batch read of `snapshot` reads. Files of the postpone bucket (-2) are
        left out, as Paimon's batch reads leave them out until a compaction assigns their rows
        to buckets; a table or file needing read semantics tarn lacks raises UnsupportedFeature."""
        features.check_read(self.name, self.schema)
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        table_format = self.options.file_format
        key_buckets = self.key_buckets(predicate)
        skip_level_0 = self.skips_level_0()
        row_tracking = self.schema.shape.tracks_rows
        live = self.live_entries(snapshot, predicate)
        postponed = self._merged_on_read(live)
        if postponed:  # their partitions' real files are read whole: postponed rows may change any of them
            predicate = None
        entries = [e for e in live
                   if e.bucket != POSTPONE_BUCKET and not (skip_level_0 and e.file.level == 0)]
        # row tracking: `.blob`/`.vector.` files hold columns tarn refuses to read (check_columns),
        # and files sharing a row-id range are pruned together (their stats cover some columns)
        shared = self._shared_ranges(entries) if row_tracking else set()
        for entry in entries:
            if row_tracking and is_column_file(entry.file):
                continue
            if key_buckets is not None and not key_buckets.may_hold(entry.bucket, entry.total_buckets):
                continue
            features.check_file(self.name, entry.file, table_format,
                                len(self.schemas(entry.file.schema_id).fields), stitched=row_tracking)
            if predicate is not None and entry.file.file_name not in shared \
                    and not self._file_may_match(entry.file, predicate):
                continue
            groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
        if predicate is not None:
            groups = self._skip_by_file_index(groups, predicate, shared)
        vectors = self.deletion_files(snapshot)
        deletion_vectors = self.schema.shape.deletion_vectors
        splits = []
        for (partition, bucket), files in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            values = self.partition_values(partition)
            bucket_path = partitions.bucket_path(self.root, self.schema, self.options.get("partition.default-name"),
                                                values, bucket)
            files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
            held = vectors.get((partition, bucket), {})
            if row_tracking:
                splits.extend(Split(partition, values, bucket, bucket_path, group, False, deletion_vectors,
                                    {f.file_name: held[f.file_name] for f in group if f.file_name in held},
                                    self.root, row_tracking=True)
                              for group in group_by_range(files))
            elif self.schema.primary_keys:
                splits.append(Split(partition, values, bucket, bucket_path, files, True, deletion_vectors,
                                    {f.file_name: held[f.file_name] for f in files if f.file_name in held},
                                    self.root))
            else:
                splits.extend(Split(partition, values, bucket, bucket_path, [f], False, deletion_vectors,
                                    {f.file_name: held[f.file_name]} if f.file_name in held else {}, self.root)
                              for f in files)
        return self._with_postponed(splits, postponed) if postponed else splits

    def _merged_on_read(self, live: list[ManifestEntry]) -> dict[bytes, list[DataFileMeta]]:
        """`postpone.merge-on-read` on a postpone-bucket table: each partition's postponed files,
        in the order their commits landed (tarn/ops/postpone.py replays them the same way)."""
        if not (self.schema.shape.postpone and self.options.bool("postpone.merge-on-read")):
            return {}
        found: dict[bytes, list[DataFileMeta]] = {}
        for e in live:
            if e.bucket == POSTPONE_BUCKET:
                found.setdefault(e.partition, []).append(e.file)
        return found

    def _with_postponed(self, splits: list[Split], postponed: dict[bytes, list[DataFileMeta]]) -> list[Split]:
        """One split per partition holding postponed rows: its postponed files, merged on read
        with the partition's real-bucket splits (which it then replaces)."""
        out = [s for s in splits if s.partition not in postponed]
        for partition, files in sorted(postponed.items()):
            values = self.partition_values(partition)
            path = partitions.bucket_path(self.root, self.schema, self.options.get("partition.default-name"),
                                          values, POSTPONE_BUCKET)
            real = tuple(s for s in splits if s.partition == partition)
            out.append(Split(partition, values, POSTPONE_BUCKET, path, list(files), True,
                             table_root=self.root, merged_buckets=real))
        return out

    @staticmethod
    def _shared_ranges(entries: list[ManifestEntry]) -> set[str]:
        """Names of the normal files sharing their row-id range with another file."""
        by_bucket: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for e in entries:
            if not is_column_file(e.file):
                by_bucket.setdefault((e.partition, e.bucket), []).append(e.file)
        return {f.file_name for files in by_bucket.values() for group in group_by_range(files)
                if len(group) > 1 for f in group}

    def skips_level_0(self) -> bool:
        """Paimon's batch reads of primary-key tables leave level-0 files out when deletion
        vectors are on (unless `deletion-vectors.merge-on-read`) and for the first-row engine:
        those rows become visible once a compaction moves them up (CoreOptions.batchScanSkipLevel0)."""
        if not self.schema.primary_keys:
            return False
        if self.schema.shape.deletion_vectors:
            return not self.options.bool("deletion-vectors.merge-on-read")
        return self.options.merge_engine == "first-row"

    def key_buckets(self, predicate: Predicate | None) -> KeyBuckets | None:
        """The buckets a filter's bucket keys name (Java's BucketSelector): when the filter ANDs
        an equality (`=`, `IN`, an OR of those) on every bucket-key column, only the buckets the
        table's bucket function gives those keys (at most 1000 combinations) can hold a match.
        Fixed-bucket tables only (and postpone ones); None: read every bucket."""
        if predicate is None:
            return None
        try:
            function = bucket_function(self.options)
            if not uses_bucket_function(self.schema.shape.num_buckets):
                return None
            key_fields = [self.schema.field(k) for k in self.schema.bucket_keys]
        except TarnError:
            return None
        if not key_fields or function_problem(function, key_fields):
            return None  # Java's scan fails on a mod/hive key it cannot hash; tarn reads every bucket
        values = _bucket_key_values(predicate, [f.name for f in key_fields])
        if values is None:
            return None
        return KeyBuckets.of(values, key_fields, function)

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
            fields = stats_fields(meta, file_schema)
            if fields is None:
                return True
            stats = meta.value_stats
            parts = [predicate]
        column_stats = self._column_stats(stats, fields)
        ids = row_range(meta) if not stores_row_ids(meta) else None
        if ids is not None:  # row tracking: the file's rows have ids in its range
            column_stats = {**(column_stats or {}), ROW_ID: ColumnStats(ids[0], ids[1], 0)}
        if column_stats is None:
            return True
        return all(may_match_stats(p, column_stats, meta.row_count) for p in parts)

    # ------------------------------------------------------------------ file indexes

    def _skip_by_file_index(self, groups: dict[tuple[bytes, int], list[DataFileMeta]],
                            predicate: Predicate, shared: set[str] = frozenset()
                            ) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        """Drop files whose data-file index (`file-index.*`: embedded in the manifest entry or
        a `<file>.index` beside the file) rules the predicate out.

        Append tables: every file on its own. Primary-key tables (as Java): only with deletion
        vectors, where files above level 0 are read without merging; a bucket of such files (or
        of one file) is filtered file by file by value stats and index, a bucket with level-0
        files is dropped whole when none of its files may match (deduplicate and first-row only:
        other engines can merge rows into a match)."""
        if not self.options.bool("file-index.read.enabled") or not self._may_use_file_index(predicate):
            return groups
        primary = bool(self.schema.primary_keys)
        if primary and not self.schema.shape.deletion_vectors:
            return groups
        jobs = [(key, f) for key, files in groups.items() for f in files if f.file_name not in shared and (
                f.embedded_index is not None or any(x.endswith(INDEX_SUFFIX) for x in f.extra_files)
                or primary)]
        if not jobs:
            return groups
        verdicts = self._evaluate_files(jobs, predicate, with_value_stats=primary)
        out: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for key, files in groups.items():
            if not primary:
                kept = [f for f in files if verdicts.get((key, f.file_name), True)]
            elif len(files) <= 1 or all(f.level > 0 for f in files):
                kept = [f for f in files if verdicts.get((key, f.file_name), True)]
            elif any(verdicts.get((key, f.file_name), True) for f in files):
                kept = files
            else:
                engine = (self.options.get("merge-engine") or "deduplicate").lower()
                kept = [] if engine in ("deduplicate", "first-row") else files
            if kept:
                out[key] = kept
        return out

    def _may_use_file_index(self, predicate: Predicate) -> bool:
        """Whether any part of the predicate is a kind an index can answer."""
        if isinstance(predicate, (And, Or)):
            return any(self._may_use_file_index(c) for c in predicate.children)
        if isinstance(predicate, Not):
            return self._may_use_file_index(predicate.child)
        return not isinstance(predicate, StartsWith)

    def _evaluate_files(self, jobs, predicate: Predicate, with_value_stats: bool) -> dict:
        def one(job):
            (partition, bucket), meta = job
            if with_value_stats and not self._value_stats_may_match(meta, predicate):
                return job[0], meta.file_name, False
            try:
                container = self._container(partition, bucket, meta)
            except (CorruptFile, FileMissing, OSError):
                container = None  # an unreadable index never hides rows
            if container is None:
                return job[0], meta.file_name, True
            fields = self._file_fields(meta.schema_id)
            result = _index_result(predicate, container, fields)
            return job[0], meta.file_name, _may_hold_rows(result)

        remote = sum(1 for _, f in jobs if f.embedded_index is None)
        if remote > 1:
            with ThreadPoolExecutor(max_workers=min(remote, 4 * (os.cpu_count() or 2), 32)) as pool:
                results = list(pool.map(one, jobs))
        else:
            results = [one(job) for job in jobs]
        return {(key, name): verdict for key, name, verdict in results}

    def _value_stats_may_match(self, meta: DataFileMeta, predicate: Predicate) -> bool:
        fields = stats_fields(meta, self.schemas(meta.schema_id))
        if fields is None:
            return True
        column_stats = self._column_stats(meta.value_stats, fields)
        return column_stats is None or may_match_stats(predicate, column_stats, meta.row_count)

    def _file_fields(self, schema_id: int) -> dict:
        """Current column name -> (name, type) of that column in schema `schema_id` (by field
        id; columns the file's schema lacks, or holds with another type, are left out)."""
        cache = self.__dict__.setdefault("_file_fields_cache", {})
        if schema_id not in cache:
            file_schema = self.schemas(schema_id)
            by_id = {f.id: f for f in file_schema.fields}
            out = {}
            for f in self.schema.fields:
                old = by_id.get(f.id)
                if old is not None and old.type.root == f.type.root:
                    out[f.name] = (old.name, old.type)
            cache[schema_id] = out
        return cache[schema_id]

    def _container(self, partition: bytes, bucket: int, meta: DataFileMeta) -> Container | None:
        if meta.embedded_index is not None:
            return Container.parse(meta.embedded_index)
        names = [x for x in meta.extra_files if x.endswith(INDEX_SUFFIX)]
        if len(names) != 1 or self.file_io is None:
            return None
        if meta.external_path:
            directory = parent(meta.external_path)
        else:
            values = self.partition_values(partition)
            directory = partitions.bucket_path(self.root, self.schema, self.options.get("partition.default-name"),
                                               values, bucket)
        return _INDEX_FILES.open(self.file_io, join(directory, names[0]))

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


def stats_fields(meta: DataFileMeta, file_schema: TableSchema) -> list | None:
    """The fields a file's value stats describe, in order: `_VALUE_STATS_COLS`, else the
    columns the file holds (`_WRITE_COLS`, row-tracking columns among them), else its schema's;
    None when a name is unknown (the stats are then not used)."""
    names = meta.value_stats_cols if meta.value_stats_cols is not None else meta.write_cols
    if names is None:
        return list(file_schema.fields)
    known = {f.name: f for f in file_schema.fields}
    known.update({f.name: f for f in STORED_ROW_TRACKING_FIELDS if f.name not in known})
    if any(n not in known for n in names):
        return None
    return [known[n] for n in names]


def _conjuncts(p: Predicate) -> list[Predicate]:
    if isinstance(p, And):
        return [c for child in p.children for c in _conjuncts(child)]
    return [p]


BUCKET_KEYS_MOST = 1000  # Java's BucketSelector.MAX_VALUES: more key combinations read every bucket


def _bucket_key_values(predicate: Predicate, names: list[str]) -> list[list] | None:
    """Each bucket-key column's values in the filter's equality conjuncts (nulls dropped; a
    column in several conjuncts keeps the values common to all), None when a column has none
    or the combinations exceed BUCKET_KEYS_MOST, as Java's BucketSelector collects them."""
    found: dict[str, list] = {}
    for conjunct in _conjuncts(predicate):
        equality = _equality_values(conjunct)
        if equality is None or equality[0] not in names:
            continue
        column, values = equality
        if column in found:
            found[column] = [v for v in found[column] if v in values]
            if not found[column]:
                return None  # contradictory conditions: Java reads every bucket (the rows filter out)
        else:
            found[column] = values
    if any(name not in found for name in names):
        return None
    combinations = 1
    for name in names:
        combinations *= len(found[name])
        if combinations > BUCKET_KEYS_MOST:
            return None
    return [found[name] for name in names]


def _equality_values(p: Predicate) -> tuple[str, list] | None:
    """(column, non-null values) of `col = v`, `col IN (...)` or an OR of those on one column."""
    parts = [p]
    column, values = None, []
    while parts:
        part = parts.pop()
        if isinstance(part, Or):
            parts.extend(part.children)
            continue
        if isinstance(part, Compare) and part.op == "==":
            name, literals = part.column, [part.value]
        elif isinstance(part, In) and not part.negated:
            name, literals = part.column, list(part.values)
        else:
            return None
        if column not in (None, name):
            return None
        column = name
        values.extend(v for v in literals if v is not None)
    return column, values


# ---------------------------------------------------------------------- file index evaluation


class _IndexFiles:
    """Process-wide LRU of opened `<file>.index` heads with the column indexes read from them
    (index files never change once written), bounded by the bytes read."""

    def __init__(self, budget: int = 64 << 20):
        self.entries = ByteCache(budget)

    def open(self, file_io, path: str) -> Container:
        found = self.entries.get(path)
        if found is not None:
            return found
        size = [0]

        def read_at(start: int, length: int) -> bytes:
            with file_io.open_input_file(path) as f:
                data = f.read_at(length, start)
            if size[0] is None:  # cached: later reads (column indexes) are charged to the entry
                self.entries.charge(path, len(data))
            else:
                size[0] += len(data)
            return bytes(data)

        try:
            container = Container.open(read_at)
        except FileNotFoundError:
            raise FileMissing(path) from None
        read, size[0] = size[0], None
        return self.entries.setdefault(path, container, read)


_INDEX_FILES = _IndexFiles()


def _may_hold_rows(result) -> bool:
    if result is True:
        return True
    if result is False:
        return False
    return len(result) > 0


def _and_results(results) -> object:
    """True = unknown rows, False = none, BitMap = these rows may match."""
    out = True
    for r in results:
        if r is False:
            return False
        if r is True:
            continue
        out = r if out is True else out & r
        if not out:
            return False
    return out


def _or_results(results) -> object:
    out = False
    for r in results:
        if r is True:
            return True
        if r is False:
            continue
        out = r if out is False else out | r
    return out


def _index_result(p: Predicate, container: Container, fields: dict):
    """What a file's index says of predicate `p` (current column names; `fields` maps them to
    the file's own name and type)."""
    if isinstance(p, And):
        return _and_results(_index_result(c, container, fields) for c in p.children)
    if isinstance(p, Or):
        return _or_results(_index_result(c, container, fields) for c in p.children)
    if isinstance(p, Not):
        dual = negate(p.child)
        return True if isinstance(dual, Not) else _index_result(dual, container, fields)
    if isinstance(p, StartsWith):
        return True
    found = fields.get(p.column)
    if found is None:
        return True
    name, dtype = found
    readers = container.readers(name, dtype)
    if not readers:
        return True
    if isinstance(p, IsNull):
        return _and_results(r.is_not_null() if p.negated else r.is_null() for r in readers)
    if isinstance(p, Compare):
        if p.value is None:
            return False
        keys = literal_keys([p.value], dtype)
        if keys is None:
            return True
        if p.op == "==":
            return _and_results(r.equal_any(keys) for r in readers)
        if p.op == "!=":
            return _and_results(r.not_equal_all(keys) for r in readers)
        return _and_results(r.compare(p.op, keys) for r in readers)
    if isinstance(p, In):
        keys = literal_keys(p.values, dtype)
        if keys is None:
            return True
        if p.negated:
            return _and_results(r.not_equal_all(keys) for r in readers)
        return _and_results(r.equal_any(keys) for r in readers)
    return True
