"""Manifest files, manifest lists and index manifests in `<table>/manifest/` (FORMAT.md 1, 4, 7).

- Names are `manifest-<uuid>-<n>`, `manifest-list-<uuid>-<n>`, `index-manifest-<uuid>-<n>`:
  one uuid per store instance and a counter per kind.
- `merge_live` applies ADD/DELETE entries in order the way Paimon's readers do.
- `merge_manifests` is Paimon's manifest merging: a full compaction once the small/deleting
  manifests add up to `manifest.full-compaction-threshold-size`, else a minor merge of runs of
  small manifests (at least `manifest.merge-min-count` of them, or enough to fill a target file).
  Replaced manifests are not deleted here; snapshot expiry does that.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping

from tarn.codec import avro
from tarn.codec.binary_row import deserialize_row, serialize_row
from tarn.errors import CorruptFile
from tarn.store.cache import ByteCache
from tarn.fs import FileIO, join
from tarn.meta.manifest import (
    ADD,
    DELETE,
    INDEX_MANIFEST_ENTRY_SCHEMA,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from tarn.options import Options, as_options
from tarn.types import DataType

MANIFEST_PREFIX = "manifest-"
MANIFEST_LIST_PREFIX = "manifest-list-"
INDEX_MANIFEST_PREFIX = "index-manifest-"

# Decoded manifest files by (path, decoder), charged a
# multiple of their compressed size (decoded entries hold their stats as Python objects).
DECODED = ByteCache(64 << 20)
DECODED_BYTES_PER_FILE_BYTE = 8


class ManifestStore:
    """Reads and writes the Avro metadata files of one table (or branch)."""

    def __init__(
        self,
        file_io: FileIO,
        manifest_dir: str,
        partition_types: list[DataType],
        options: "Options | Mapping[str, str] | None" = None,
    ):
        options = as_options(options)
        self.file_io = file_io
        self.dir = manifest_dir
        self.partition_types = list(partition_types)
        self.codec = avro.avro_codec(options.get("manifest.compression"))
        self.zstd_level = options.int("file.compression.zstd-level")
        self.target_size = options.memory_bytes("manifest.target-file-size")
        self.full_compaction_size = options.memory_bytes("manifest.full-compaction-threshold-size")
        self.merge_min_count = options.int("manifest.merge-min-count")
        self.uuid = str(uuid.uuid4())
        self._counters: dict[str, int] = {}

    # ------------------------------------------------------------------ names and raw files

    def path(self, file_name: str) -> str:
        return join(self.dir, file_name)

    def _new_name(self, prefix: str) -> str:
        n = self._counters.get(prefix, 0)
        self._counters[prefix] = n + 1
        return f"{prefix}{self.uuid}-{n}"

    def _write(self, prefix: str, data: bytes) -> str:
        name = self._new_name(prefix)
        self.file_io.write_bytes(self.path(name), data)
        return name

    def _read(self, file_name: str, decode: Callable[[dict], object], cached: bool = False) -> list:
        """The decoded records of a manifest (list) file. Manifest files never change once
        written (their names are unique), so with `cached` decoded ones are kept in a
        process-wide cache: a table scanned again decodes only the manifests it has not seen.
        Manifest lists are always read from the store: that read is how a commit or scan
        finds out that expiry took its snapshot meanwhile."""
        path = self.path(file_name)
        if cached and (hit := DECODED.get((path, decode))) is not None:
            return list(hit)
        data = self.file_io.read_bytes(path)
        records = avro.read_avro(data, file_name, logical_types=False)
        try:
            decoded = tuple(decode(record) for record in records)
        except CorruptFile as exc:
            raise CorruptFile(f"manifest file {file_name}: {exc}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptFile(f"manifest file {file_name}: bad record ({exc!r})") from exc
        if cached:
            DECODED.put((path, decode), decoded, DECODED_BYTES_PER_FILE_BYTE * len(data))
        return list(decoded)

    def _codec_level(self) -> int | None:
        return self.zstd_level if self.codec == "zstandard" else None

    def delete(self, file_name: str) -> None:
        self.file_io.delete(self.path(file_name))

    # ------------------------------------------------------------------ manifests

    def write_manifests(self, entries: list[ManifestEntry], schema_id: int) -> list[ManifestFileMeta]:
        """Manifest files holding `entries` in order, rolled at `manifest.target-file-size`."""
        records = [e.to_avro() for e in entries]
        files = avro.write_avro_rolling(
            records, MANIFEST_ENTRY_SCHEMA, self.target_size, self.codec, self._codec_level()
        )
        metas, start = [], 0
        for data, count in files:
            name = self._write(MANIFEST_PREFIX, data)
            metas.append(self._manifest_meta(name, len(data), entries[start:start + count], schema_id))
            start += count
        return metas

    def _manifest_meta(
        self, name: str, size: int, entries: list[ManifestEntry], schema_id: int
    ) -> ManifestFileMeta:
        added = sum(1 for e in entries if e.kind == ADD)
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        row_ids = [e.file.first_row_id for e in entries]
        has_row_ids = bool(entries) and None not in row_ids
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=added,
            num_deleted_files=len(entries) - added,
            partition_stats=self.partition_stats([e.partition for e in entries]),
            schema_id=max((e.file.schema_id for e in entries), default=schema_id),
            min_bucket=min(buckets, default=None),
            max_bucket=max(buckets, default=None),
            min_level=min(levels, default=None),
            max_level=max(levels, default=None),
            min_row_id=min(row_ids) if has_row_ids else None,
            max_row_id=(
                max(e.file.first_row_id + e.file.row_count - 1 for e in entries)
                if has_row_ids
                else None
            ),
        )

    def partition_stats(self, partitions: list[bytes]) -> SimpleStats:
        """Full-mode min/max and null counts over serialized partition rows."""
        types = self.partition_types
        counts: dict[bytes, int] = {}
        for p in partitions:
            counts[p] = counts.get(p, 0) + 1
        mins: list = [None] * len(types)
        maxs: list = [None] * len(types)
        nulls = [0] * len(types)
        for row, count in counts.items():
            for i, value in enumerate(deserialize_row(row, types)):
                if value is None:
                    nulls[i] += count
                    continue
                if mins[i] is None or value < mins[i]:
                    mins[i] = value
                if maxs[i] is None or value > maxs[i]:
                    maxs[i] = value
        return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), nulls)

    def read_manifest(self, file_name: str) -> list[ManifestEntry]:
        return self._read(file_name, ManifestEntry.from_avro, cached=True)

    # ------------------------------------------------------------------ manifest lists

    def write_manifest_list(self, metas: list[ManifestFileMeta]) -> tuple[str, int]:
        """One manifest list file (written even when empty); its name and size."""
        data = avro.write_avro(
            [m.to_avro() for m in metas], MANIFEST_FILE_META_SCHEMA, self.codec, self._codec_level()
        )
        return self._write(MANIFEST_LIST_PREFIX, data), len(data)

    def read_manifest_list(self, file_name: str) -> list[ManifestFileMeta]:
        return self._read(file_name, ManifestFileMeta.from_avro)

    # ------------------------------------------------------------------ index manifests

    def write_index_manifest(self, entries: list[IndexManifestEntry]) -> str:
        data = avro.write_avro(
            [e.to_avro() for e in entries], INDEX_MANIFEST_ENTRY_SCHEMA, self.codec, self._codec_level()
        )
        return self._write(INDEX_MANIFEST_PREFIX, data)

    def read_index_manifest(self, file_name: str) -> list[IndexManifestEntry]:
        return self._read(file_name, IndexManifestEntry.from_avro)

    # ------------------------------------------------------------------ merging entries

    @staticmethod
    def merge_entries(entries: Iterable[ManifestEntry]) -> dict[tuple, ManifestEntry]:
        """Entries left after applying `entries` in order, by identifier, in first-seen order.

        ADD then DELETE of a file cancels; a DELETE of a file not seen yet stays (its ADD is in
        an older manifest); adding a file that is already there is an error.
        """
        merged: dict[tuple, ManifestEntry] = {}
        for entry in entries:
            key = entry.identifier
            if entry.kind == ADD:
                if key in merged:
                    raise CorruptFile(
                        f"data file {entry.file.file_name} (bucket {entry.bucket}, level "
                        f"{entry.file.level}) is added twice in the manifests"
                    )
                merged[key] = entry
            elif entry.kind == DELETE:
                if key in merged:
                    del merged[key]
                else:
                    merged[key] = entry
            else:
                raise CorruptFile(f"data file {entry.file.file_name}: unknown entry kind {entry.kind}")
        return merged

    def merge_live(self, entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
        """The live ADD entries after applying `entries` in order."""
        return [e for e in self.merge_entries(entries).values() if e.kind == ADD]

    # ------------------------------------------------------------------ a snapshot's data files

    def data_manifests(self, snapshot) -> list[ManifestFileMeta]:
        """The manifests of a snapshot's data files: its base list, then its delta list."""
        return self.read_manifest_list(snapshot.base_manifest_list) + \
            self.read_manifest_list(snapshot.delta_manifest_list)

    def live_entries(self, snapshot) -> list[ManifestEntry]:
        """The live ADD entries of a snapshot (None: no snapshot, no entries)."""
        if snapshot is None:
            return []
        return self.merge_live(e for meta in self.data_manifests(snapshot) for e in self.read_manifest(meta.file_name))

    # ------------------------------------------------------------------ merging manifests

    def merge_manifests(self, metas: list[ManifestFileMeta], schema_id: int) -> list[ManifestFileMeta]:
        """The manifest list after Paimon's manifest merging (new files written as needed)."""
        full = self._full_compaction(metas, schema_id)
        if full is not None:
            return full
        return self._minor_compaction(metas, schema_id)

    def _must_change(self, meta: ManifestFileMeta) -> bool:
        return meta.num_deleted_files > 0 or meta.file_size < self.target_size

    def _minor_compaction(self, metas: list[ManifestFileMeta], schema_id: int) -> list[ManifestFileMeta]:
        result: list[ManifestFileMeta] = []
        candidates: list[ManifestFileMeta] = []
        total = 0
        for meta in metas:
            total += meta.file_size
            candidates.append(meta)
            if total >= self.target_size:
                result += self._merge_candidates(candidates, schema_id)
                candidates, total = [], 0
        if len(candidates) >= self.merge_min_count:
            result += self._merge_candidates(candidates, schema_id)
        else:
            result += candidates
        return result

    def _merge_candidates(self, candidates: list[ManifestFileMeta], schema_id: int) -> list[ManifestFileMeta]:
        if len(candidates) == 1:
            return list(candidates)
        entries = [e for meta in candidates for e in self.read_manifest(meta.file_name)]
        merged = list(self.merge_entries(entries).values())
        return self.write_manifests(merged, schema_id) if merged else []

    def _full_compaction(
        self, metas: list[ManifestFileMeta], schema_id: int
    ) -> list[ManifestFileMeta] | None:
        delta_size = sum(m.file_size for m in metas if self._must_change(m))
        if delta_size < self.full_compaction_size:
            return None
        read: dict[str, list[ManifestEntry]] = {}
        for meta in metas:
            if meta.num_deleted_files > 0:
                read[meta.file_name] = self.read_manifest(meta.file_name)
        deleted = {e.identifier for entries in read.values() for e in entries if e.kind == DELETE}
        may_hold_deleted = self._deleted_partitions_filter(deleted)
        result: list[ManifestFileMeta] = []
        to_merge: list[ManifestFileMeta] = []
        for meta in metas:
            if self._must_change(meta) or may_hold_deleted(meta):
                to_merge.append(meta)
            else:
                result.append(meta)
        if len(to_merge) <= 1:
            return None
        kept: list[ManifestEntry] = []
        for meta in to_merge:
            entries = read.get(meta.file_name) or self.read_manifest(meta.file_name)
            adds = [e for e in entries if e.kind == ADD]
            live = [e for e in adds if e.identifier not in deleted]
            if self._must_change(meta) or len(live) < len(adds):
                kept += live
            else:
                result.append(meta)
        return result + self.write_manifests(kept, schema_id)

    def _deleted_partitions_filter(self, deleted: set[tuple]) -> Callable[[ManifestFileMeta], bool]:
        """Whether a manifest may hold a partition of `deleted`, judged by its partition stats."""
        if not deleted:
            return lambda meta: False
        types = self.partition_types
        if not types:
            return lambda meta: True
        rows = [deserialize_row(p, types) for p in {key[0] for key in deleted}]
        columns = list(zip(*rows))

        def may_hold(meta: ManifestFileMeta) -> bool:
            stats = meta.partition_stats
            lows = deserialize_row(stats.min_values, types)
            highs = deserialize_row(stats.max_values, types)
            null_counts = stats.null_counts
            row_count = meta.num_added_files + meta.num_deleted_files
            for i, values in enumerate(columns):
                null_count = null_counts[i] if null_counts is not None else None
                if not _field_may_match(values, lows[i], highs[i], null_count, row_count):
                    return False
            return True

        return may_hold


def _field_may_match(values, low, high, null_count: int | None, row_count: int) -> bool:
    """Whether a column with stats (low, high, null_count) may hold one of `values`."""
    may_be_null = null_count is None or null_count > 0
    present = [v for v in values if v is not None]
    in_range = False
    if present:
        if null_count is not None and null_count == row_count:
            in_range = False
        elif low is None or high is None:
            in_range = True
        else:
            in_range = high >= min(present) and low <= max(present)
    return in_range or (len(present) < len(values) and may_be_null)
