"""Where keys live in a bucket's upper levels: the lookup behind deletion-vector writes.

A deletion-vector write (PIP rule c) finds, for every key that reaches the upper levels only
through level 0, the file and row position of its live older version, to mark that row deleted.
Each file's keys are read once (key columns only) and kept as one sorted numpy column with the
row positions that sort produced: int64 for a single integer-like key, otherwise the keys'
BinaryRow bytes as a fixed-width bytes column (two keys are equal exactly when their bytes are).
A probe is then a `searchsorted` per file, never a loop per key.

The sorted columns live in a process-wide cache keyed by file path (data files never change),
so the writers of one process reuse them across commits. It holds at most
`lookup.cache-max-memory-size` bytes in memory; the least recently used files beyond that are
spilled as .npy files to a local directory (memory-mapped when used again) up to
`lookup.cache-max-disk-size`, and dropped after that.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from tarn.arrays import in_sorted
from tarn.codec.binary_row import deserialize_row, encode_rows
from tarn.data.reader import FileReader
from tarn.meta.manifest import DataFileMeta
from tarn.store.cache import ByteCache
from tarn.types import DataField

_INTEGER_LIKE = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME_WITHOUT_TIME_ZONE")


@dataclass(frozen=True)
class KeyCodec:
    """Turns key columns into one comparable numpy column."""

    names: tuple[str, ...]
    fields: tuple[DataField, ...]

    @property
    def integer(self) -> bool:
        return len(self.fields) == 1 and self.fields[0].type.root in _INTEGER_LIKE and not self.fields[0].type.nullable

    def encode(self, table: pa.Table) -> np.ndarray:
        columns = [table.column(n).combine_chunks() for n in self.names]
        if self.integer:
            return columns[0].cast(pa.int64()).to_numpy(zero_copy_only=False)
        buffer, offsets = encode_rows(columns, [f.type for f in self.fields])
        return _fixed_bytes(buffer.view(np.uint8), offsets)

    def file_range(self, meta: DataFileMeta) -> tuple[int, int] | None:
        """The file's (min, max) key on the integer path (None: no range test)."""
        if not self.integer:
            return None
        types = [self.fields[0].type]
        return deserialize_row(meta.min_key, types)[0], deserialize_row(meta.max_key, types)[0]


def _fixed_bytes(buffer: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Rows of a flat byte buffer as a numpy bytes column, zero-padded to the longest row."""
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    width = int(lengths.max()) if n else 1
    grid = np.zeros((n, width), dtype=np.uint8)
    if n and lengths.min() == width:
        grid[:] = buffer[: n * width].reshape(n, width)
    elif n:
        rows = np.repeat(np.arange(n), lengths)
        cols = np.arange(len(rows)) - np.repeat(offsets[:-1] - offsets[0], lengths)
        grid[rows, cols] = buffer[offsets[0]: offsets[-1]]
    return grid.view(f"S{width}").ravel()


@dataclass
class FileKeys:
    """One file's keys, sorted, with the row position of each."""

    keys: np.ndarray
    positions: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.positions.nbytes)

    def find(self, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hit mask over probes, row position of each hit)."""
        if len(self.keys) == 0 or len(probes) == 0:
            return np.zeros(len(probes), dtype=bool), np.zeros(0, dtype=np.int64)
        if probes.dtype != self.keys.dtype and probes.dtype.kind == "S":
            width = max(probes.dtype.itemsize, self.keys.dtype.itemsize)
            probes = probes.astype(f"S{width}")
        at = np.searchsorted(self.keys, probes)
        clipped = np.minimum(at, len(self.keys) - 1)
        hit = (at < len(self.keys)) & (self.keys[clipped] == probes)
        return hit, self.positions[clipped[hit]]


class KeyCache:
    """The process-wide cache of FileKeys by file path (see the module docstring): a memory
    tier whose evicted files spill to a disk tier while it has room."""

    def __init__(self):
        self._lock = threading.Lock()  # one change at a time across both tiers
        self._memory = ByteCache(0, on_evict=self._spill)
        self._spilled = ByteCache(0, on_evict=_remove_spilled)  # path -> (key file, position file)
        self._dir: str | None = None

    def get(self, path: str, load: Callable[[], FileKeys], memory_limit: int, disk_limit: int) -> FileKeys:
        found = self._memory.get(path)
        if found is not None:
            return found
        spilled = self._spilled.get(path)
        if spilled is not None:
            return FileKeys(np.load(spilled[0], mmap_mode="r"), np.load(spilled[1], mmap_mode="r"))
        keys = load()
        with self._lock:
            self._spilled.capacity = disk_limit  # what a spill may fill; fitted below
            if path not in self._memory:
                self._memory.capacity = memory_limit
                self._memory.put(path, keys, keys.nbytes)
            self._spilled.resize(disk_limit)
        return keys

    def _spill(self, path: str, keys: FileKeys, size: int) -> None:
        """A file the memory tier dropped: to disk when it fits there without evicting."""
        if self._spilled.used + size > self._spilled.capacity:
            return
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="tarn-lookup-")
        stem = os.path.join(self._dir, uuid.uuid4().hex)
        np.save(stem + "-k.npy", keys.keys)
        np.save(stem + "-p.npy", keys.positions)
        self._spilled.put(path, (stem + "-k.npy", stem + "-p.npy"), size)

    def clear(self) -> None:
        with self._lock:
            self._memory.clear()
            self._spilled.clear()
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


def _remove_spilled(path: str, files: tuple[str, str], size: int) -> None:
    for name in files:
        with _quiet():
            os.remove(name)


class _quiet:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], OSError)


KEY_CACHE = KeyCache()


@dataclass
class KeyLookup:
    """Looks keys up in the upper levels of one bucket."""

    reader: FileReader
    bucket_path: str
    codec: KeyCodec
    memory_limit: int
    disk_limit: int

    def file_keys(self, meta: DataFileMeta) -> FileKeys:
        path = meta.external_path or f"{self.bucket_path}/{meta.file_name}"  # a cache key

        def load() -> FileKeys:
            keys = self.codec.encode(self.reader.read(self.bucket_path, meta, list(self.codec.fields),
                                                      with_system=False, skip_deleted=False))
            return sorted_keys(keys)

        return KEY_CACHE.get(path, load, self.memory_limit, self.disk_limit)

    def find(self, probes: np.ndarray, runs: Sequence[tuple[int, Sequence[DataFileMeta]]],
             deleted: Callable[[str], np.ndarray | None]) -> dict[str, np.ndarray]:
        """For each probe key, the live row holding it at the smallest level of `runs` (level,
        files): {file name: sorted row positions}. Rows already deleted (`deleted(file)`) do
        not count."""
        found: dict[str, np.ndarray] = {}
        remaining = sorted_unique(probes)
        for _, files in sorted(runs, key=lambda run: run[0]):
            if len(remaining) == 0:
                break
            still = np.ones(len(remaining), dtype=bool)
            for meta in files:
                span = self.codec.file_range(meta)
                if span is not None and (span[1] < remaining[0] or span[0] > remaining[-1]):
                    continue
                hit, positions = self.file_keys(meta).find(remaining)
                if not hit.any():
                    continue
                gone = deleted(meta.file_name)
                live = np.ones(len(positions), dtype=bool) if gone is None else ~in_sorted(positions, gone)
                hit_rows = np.flatnonzero(hit)
                still[hit_rows[live]] = False
                if live.any():
                    found[meta.file_name] = np.sort(positions[live])
            remaining = remaining[still]
        return found


def sorted_keys(keys: np.ndarray) -> FileKeys:
    """A file's keys sorted, with the row position of each. A primary-key data file holds its
    keys in key order, which is numeric order on the integer path: then no sort is needed."""
    if keys.dtype.kind == "i" and (len(keys) < 2 or bool(np.all(keys[1:] >= keys[:-1]))):
        return FileKeys(keys, np.arange(len(keys), dtype=np.int64))
    order = np.argsort(keys, kind="stable")
    return FileKeys(np.ascontiguousarray(keys[order]), order.astype(np.int64))


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (a sort and a neighbour test; numpy's unique hashes)."""
    return _distinct(np.sort(values))


def merge_sorted_unique(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The distinct values of `old` (sorted) and `new`. Numpy's stable sort (timsort for
    64-bit values) merges the two sorted runs in linear time."""
    return _distinct(np.sort(np.concatenate([old, np.sort(new)]), kind="stable"))


def _distinct(ordered: np.ndarray) -> np.ndarray:
    """`ordered` (sorted) without repeated values."""
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
