"""Deletion-vector index files in `<table>/index/` (FORMAT.md sections 4 and 8).

- `DeletionVectorFiles.write` puts the vectors of one (partition, bucket) into a new file
  `index-<uuid>-<n>` (one uuid per instance, a counter per file, as Java's IndexPathFactory) and
  returns its ADD index manifest entry; `read` / `read_one` give vectors back as sorted int64
  numpy arrays of deleted row positions (`tarn/codec/deletion_vector.py` owns the bytes).
- Index files are immutable under unique names, so decoded files are kept in one process-wide
  LRU cache keyed by (store, path, file size) and bounded in bytes (`set_cache_capacity`). The
  arrays handed out are read-only views of the cached ones; the dicts are fresh copies.
- `live_index_entries` is a snapshot's index manifest; `deletion_vectors_by_file` maps
  (partition, bucket) -> data file -> the entry holding its vector; `deleted_row_counts` takes
  the counts from the manifest's cardinalities, reading a vector only when one is missing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from tarn import paths
from tarn.codec.deletion_vector import decode_index_file, encode_index_file
from tarn.errors import CorruptFile
from tarn.fs import FileIO, join
from tarn.meta.manifest import ADD, DELETION_VECTORS_INDEX, DeletionVectorRange, IndexManifestEntry
from tarn.store.cache import ByteCache

if TYPE_CHECKING:
    from tarn.meta.schema import TableSchema
    from tarn.meta.snapshot import Snapshot
    from tarn.store.manifests import ManifestStore

INDEX_PREFIX = "index-"
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
_ENTRY_OVERHEAD = 128  # bytes charged per cached vector besides its array


# decoded index files: key -> {data file: read-only positions}, charged the positions' bytes
_CACHE = ByteCache(DEFAULT_CACHE_BYTES)


def set_cache_capacity(capacity_bytes: int) -> None:
    """Bound (in bytes of decoded positions) the process-wide cache of index files; 0 disables it."""
    _CACHE.resize(max(0, int(capacity_bytes)))


def clear_cache() -> None:
    _CACHE.clear()


def index_dir_of(root: str, schema: "TableSchema | None"):
    """Where a table's index files live, per (partition, bucket): `<root>/index`, or with
    `index-file-in-data-file-dir` the bucket's own directory (Paimon 1.2)."""
    if schema is None or str(schema.options.get("index-file-in-data-file-dir", "false")).lower() != "true":
        return lambda partition_bytes, bucket: join(root, paths.INDEX_DIR)
    from tarn import partition

    return lambda partition_bytes, bucket: partition.bucket_dir(root, schema, partition_bytes, bucket)


class DeletionVectorFiles:
    """Reads and writes the deletion-vector index files of one table (cheap to create).
    `schema`: the table's (its `index-file-in-data-file-dir` places the files)."""

    def __init__(self, file_io: FileIO, root: str, schema: "TableSchema | None" = None):
        self.file_io = file_io
        self.root = root
        self.dir_of = index_dir_of(root, schema)
        self._namer = paths.FileNamer(INDEX_PREFIX)
        self._naming = threading.Lock()  # writers flush buckets in threads: names stay unique

    def path(self, entry: IndexManifestEntry) -> str:
        if entry.external_path:
            return self.file_io.native(entry.external_path)
        return join(self.dir_of(entry.partition, entry.bucket), entry.file_name)

    def write(self, partition: bytes, bucket: int, vectors: Mapping[str, np.ndarray],
              bitmap64: bool = False) -> IndexManifestEntry | None:
        """One new index file holding `vectors` (data file name -> deleted positions; empty ones
        left out) and its ADD entry; None, and nothing written, if every vector is empty."""
        data, ranges = encode_index_file(vectors, bitmap64)
        if not ranges:
            return None
        with self._naming:
            name = self._namer.next()
        self.file_io.write_bytes(join(self.dir_of(partition, bucket), name), data)
        return IndexManifestEntry(
            kind=ADD, partition=partition, bucket=bucket, index_type=DELETION_VECTORS_INDEX,
            file_name=name, file_size=len(data), row_count=len(ranges),
            dv_ranges=tuple(DeletionVectorRange(*r) for r in ranges))

    def read(self, entry: IndexManifestEntry) -> dict[str, np.ndarray]:
        """Every vector of an index file: data file name -> sorted int64 positions (read-only
        arrays; a new dict on every call)."""
        if entry.index_type != DELETION_VECTORS_INDEX or entry.dv_ranges is None:
            raise CorruptFile(f"index file {entry.file_name}: a {entry.index_type} index without "
                              "deletion-vector ranges read as deletion vectors")
        path = self.path(entry)
        key = (self.file_io.store, path, entry.file_size)
        vectors = _CACHE.get(key)
        if vectors is None:
            data = self.file_io.read_bytes(path)
            ranges = [(r.data_file, r.offset, r.length, r.cardinality) for r in entry.dv_ranges]
            vectors = decode_index_file(data, ranges, path)
            for positions in vectors.values():
                positions.flags.writeable = False
            _CACHE.put(key, vectors, sum(v.nbytes + len(name) + _ENTRY_OVERHEAD for name, v in vectors.items()))
        return dict(vectors)

    def read_one(self, entry: IndexManifestEntry, data_file: str) -> np.ndarray | None:
        """The deleted positions of `data_file` in this index file, None if it holds none for it
        (then the file is not read)."""
        if not any(r.data_file == data_file for r in entry.dv_ranges or ()):
            return None
        return self.read(entry).get(data_file)


def live_index_entries(manifests: "ManifestStore", snapshot: "Snapshot | None") -> list[IndexManifestEntry]:
    """The index files of a snapshot (its index manifest's ADD entries); [] without a snapshot
    or without an index manifest. A named index manifest that is missing raises FileMissing."""
    if snapshot is None or not snapshot.index_manifest:
        return []
    return [e for e in manifests.read_index_manifest(snapshot.index_manifest) if e.kind == ADD]


def deletion_vectors_by_file(entries: Iterable[IndexManifestEntry]) -> dict[tuple[bytes, int], dict[str, IndexManifestEntry]]:
    """(partition, bucket) -> {data file name: the DELETION_VECTORS entry holding its vector}.

    A data file with vectors in two live index files is a corrupt table (CorruptFile)."""
    found: dict[tuple[bytes, int], dict[str, IndexManifestEntry]] = {}
    for entry in entries:
        if entry.kind != ADD or entry.index_type != DELETION_VECTORS_INDEX:
            continue
        bucket = found.setdefault((entry.partition, entry.bucket), {})
        for r in entry.dv_ranges or ():
            other = bucket.get(r.data_file)
            if other is not None and other.file_name != entry.file_name:
                raise CorruptFile(f"data file {r.data_file} has deletion vectors in two index files: "
                                  f"{other.file_name} and {entry.file_name}")
            bucket[r.data_file] = entry
    return found


def deleted_row_counts(files: DeletionVectorFiles, entries: Iterable[IndexManifestEntry]) -> dict[tuple[bytes, int, str], int]:
    """(partition, bucket, data file name) -> number of deleted rows, from the ranges'
    cardinality (the vector is read only when a range lacks it)."""
    counts: dict[tuple[bytes, int, str], int] = {}
    for entry in entries:
        if entry.kind != ADD or entry.index_type != DELETION_VECTORS_INDEX:
            continue
        for r in entry.dv_ranges or ():
            if r.cardinality is not None:
                count = r.cardinality
            else:
                positions = files.read_one(entry, r.data_file)
                count = 0 if positions is None else len(positions)
            counts[(entry.partition, entry.bucket, r.data_file)] = count
    return counts
