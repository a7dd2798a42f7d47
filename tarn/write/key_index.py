"""The key index of cross-partition upserts: primary key -> (partition id, bucket), on local disk.

Paimon's GlobalIndexAssigner keeps this map in a local RocksDB with a TTL. Here it is a small
LSM of sorted numpy runs: keys encoded by `data/lookup.KeyCodec` (int64 for one integer-like
key, else the keys' BinaryRow bytes), each with its value (`partition id << 16 | bucket`) and
the time it was written (epoch millis). New entries collect in memory; past `memory_limit`
bytes they are written as a run of .npy files into a private temporary directory and read back
memory-mapped, so the index costs disk, not memory; past `MAX_RUNS` runs they are merged into
one, a key range at a time. A lookup is a `searchsorted` per run, newest first: the newest entry
of a key wins. Entries older than `ttl_ms` count as absent
(`cross-partition-upsert.index-ttl`: Paimon's state TTL, which forgets keys, and may then
write a second row for a key that still lives in another partition)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from dataclasses import dataclass

import numpy as np

BUCKET_BITS = 16  # bucket ids stay below 32768 (MAX_DYNAMIC_BUCKETS)
MAX_RUNS = 8  # disk runs merged into one beyond this


@dataclass
class IndexRun:
    """Sorted distinct keys with their packed (partition id, bucket) and write time."""

    keys: np.ndarray
    values: np.ndarray  # int64: partition id << 16 | bucket
    stamps: np.ndarray  # int64 epoch millis

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.values.nbytes + self.stamps.nbytes)

    def find(self, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hit mask over probes, run position of each probe; meaningful where hit)."""
        if len(self.keys) == 0 or len(probes) == 0:
            return np.zeros(len(probes), dtype=bool), np.zeros(len(probes), dtype=np.int64)
        keys, probes = _same_width(self.keys, probes)
        at = np.minimum(np.searchsorted(keys, probes), len(keys) - 1)
        return keys[at] == probes, at


def _same_width(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes columns of different widths compared alike (numpy pads with zero bytes)."""
    if a.dtype.kind == "S" and b.dtype.kind == "S" and a.dtype != b.dtype:
        width = max(a.dtype.itemsize, b.dtype.itemsize)
        return a.astype(f"S{width}"), b.astype(f"S{width}")
    return a, b


def _newest_per_key(keys: np.ndarray, values: np.ndarray, stamps: np.ndarray) -> IndexRun:
    """A run from entries in write order: sorted by key, the last entry of each key kept."""
    order = np.argsort(keys, kind="stable")
    keys, values, stamps = keys[order], values[order], stamps[order]
    last = np.ones(len(keys), dtype=bool)
    if len(keys) > 1:
        np.not_equal(keys[1:], keys[:-1], out=last[:-1])
    return IndexRun(keys[last], values[last], stamps[last])


def _strictly_sorted(keys: np.ndarray) -> bool:
    return len(keys) < 2 or bool((keys[1:] > keys[:-1]).all())


def _merge_sorted(old: IndexRun, new: IndexRun) -> IndexRun:
    """Two runs of sorted distinct keys as one (the newer run's entry wins), without a sort."""
    if not len(new.keys):
        return old
    new_keys, _ = _same_width(new.keys, old.keys)
    hit, _ = IndexRun(new_keys, new.values, new.stamps).find(old.keys)
    kept = IndexRun(old.keys[~hit], old.values[~hit], old.stamps[~hit])
    keys_old, keys_new = _same_width(kept.keys, new.keys)
    at = np.searchsorted(keys_old, keys_new) + np.arange(len(keys_new))
    total = len(keys_old) + len(keys_new)
    from_new = np.zeros(total, dtype=bool)
    from_new[at] = True
    out = []
    for mine, theirs in ((keys_old, keys_new), (kept.values, new.values), (kept.stamps, new.stamps)):
        merged = np.empty(total, dtype=mine.dtype)
        merged[from_new] = theirs
        merged[~from_new] = mine
        out.append(merged)
    return IndexRun(*out)


class KeyIndex:
    """key -> (partition id, bucket), bounded memory, spilled to local disk (module docstring)."""

    def __init__(self, memory_limit: int, ttl_ms: int | None = None, directory: str | None = None):
        self.memory_limit = max(int(memory_limit), 1 << 20)
        self.ttl_ms = ttl_ms
        self._parent = directory
        self._dir: str | None = None
        self.runs: list[IndexRun] = []  # on disk, oldest first
        self.memory: IndexRun | None = None  # newest entries, in memory
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_bytes = 0
        self._cleanup = None

    def __len__(self) -> int:  # entries, counting a key once per run holding it
        self._settle()
        return sum(len(r.keys) for r in self.runs) + (len(self.memory.keys) if self.memory is not None else 0)

    def put(self, keys: np.ndarray, partition_ids: np.ndarray, buckets: np.ndarray, now_ms: int) -> None:
        """Remember where keys live (later puts of a key win)."""
        if not len(keys):
            return
        values = (np.asarray(partition_ids, np.int64) << BUCKET_BITS) | np.asarray(buckets, np.int64)
        stamps = np.full(len(keys), now_ms, dtype=np.int64)
        self._pending.append((keys, values, stamps))
        self._pending_bytes += keys.nbytes + values.nbytes + stamps.nbytes
        if self._pending_bytes >= self.memory_limit:
            self._settle()

    def get(self, probes: np.ndarray, now_ms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(found, partition ids, buckets) for each probe key; entries past the TTL are absent."""
        self._settle()
        found = np.zeros(len(probes), dtype=bool)
        values = np.zeros(len(probes), dtype=np.int64)
        stamps = np.zeros(len(probes), dtype=np.int64)
        runs = ([self.memory] if self.memory is not None else []) + self.runs[::-1]
        for run in runs:
            todo = np.flatnonzero(~found)
            if not len(todo):
                break
            hit, at = run.find(probes[todo])
            rows = todo[hit]
            found[rows] = True
            values[rows] = run.values[at[hit]]
            stamps[rows] = run.stamps[at[hit]]
        if self.ttl_ms is not None:
            found &= now_ms - stamps <= self.ttl_ms
        return found, (values >> BUCKET_BITS).astype(np.int32), (values & ((1 << BUCKET_BITS) - 1)).astype(np.int32)

    def _settle(self) -> None:
        """Merge pending entries into the memory run; spill it to disk past the memory limit."""
        if self._pending:
            parts = ([(self.memory.keys, self.memory.values, self.memory.stamps)] if self.memory is not None
                     else []) + self._pending
            self._pending, self._pending_bytes = [], 0
            if len(parts) <= 2 and all(_strictly_sorted(p[0]) for p in parts):
                self.memory = _merge_sorted(IndexRun(*parts[0]), IndexRun(*parts[-1])) if len(parts) == 2 \
                    else IndexRun(*parts[0])
            else:
                keys = _concat_keys([p[0] for p in parts])
                self.memory = _newest_per_key(keys, np.concatenate([p[1] for p in parts]),
                                              np.concatenate([p[2] for p in parts]))
        if self.memory is not None and self.memory.nbytes >= self.memory_limit:
            self.runs.append(self._spill(self.memory))
            self.memory = None
            if len(self.runs) > MAX_RUNS:
                self._merge_runs()

    def _merge_runs(self) -> None:
        """All disk runs into one (newer entries win), a key range at a time: the ranges are
        cut at every `chunk`-th key of the largest run, so memory holds about one range of
        each run, and the merged range is appended to the new run's files."""
        runs = self.runs
        width = max(r.keys.dtype.itemsize for r in runs) if runs[0].keys.dtype.kind == "S" else None
        largest = max(runs, key=lambda r: len(r.keys))
        chunk = max(1, self.memory_limit // (2 * max(largest.nbytes // max(len(largest.keys), 1), 1)) // len(runs))
        pivots = [largest.keys[i] for i in range(chunk, len(largest.keys), chunk)]
        stem = os.path.join(self._directory(), uuid.uuid4().hex)
        count = 0
        with open(stem + "-k", "wb") as keys_out, open(stem + "-v", "wb") as values_out, \
                open(stem + "-t", "wb") as stamps_out:
            for lo, hi in zip([None] + pivots, pivots + [None]):
                part = _newest_per_key(*_range_of(runs, lo, hi, width))
                keys_out.write(part.keys.tobytes())
                values_out.write(part.values.tobytes())
                stamps_out.write(part.stamps.tobytes())
                count += len(part.keys)
        key_type = np.dtype(f"S{width}") if width else runs[0].keys.dtype
        merged = IndexRun(*(np.memmap(f"{stem}-{suffix}", dtype=dtype, mode="r", shape=(count,))
                            for suffix, dtype in (("k", key_type), ("v", np.int64), ("t", np.int64))))
        old, self.runs = runs, [merged]
        for run in old:  # unlinked while mapped: the pages stay readable until released
            for array in (run.keys, run.values, run.stamps):
                if getattr(array, "filename", None):
                    _remove(array.filename)

    def _spill(self, run: IndexRun) -> IndexRun:
        directory = self._directory()
        stem = os.path.join(directory, uuid.uuid4().hex)
        loaded = []
        for suffix, array in (("k", run.keys), ("v", run.values), ("t", run.stamps)):
            np.save(f"{stem}-{suffix}.npy", np.ascontiguousarray(array))
            loaded.append(np.load(f"{stem}-{suffix}.npy", mmap_mode="r"))
        return IndexRun(*loaded)

    def _directory(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="tarn-key-index-", dir=self._parent)
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, True)
        return self._dir

    def close(self) -> None:
        """Forget everything and delete the local files."""
        self.runs, self.memory, self._pending = [], None, []
        if self._cleanup is not None:
            self._cleanup()
            self._dir = self._cleanup = None


def _concat_keys(parts: list[np.ndarray]) -> np.ndarray:
    if any(p.dtype.kind == "S" for p in parts):
        width = max(p.dtype.itemsize for p in parts)
        return np.concatenate([p.astype(f"S{width}") for p in parts])
    return np.concatenate(parts)


def _range_of(runs: list[IndexRun], lo, hi, width: int | None):
    """The entries of every run with lo <= key < hi (None: open), oldest run first."""
    keys, values, stamps = [], [], []
    for run in runs:
        run_keys = run.keys
        start = 0 if lo is None else int(np.searchsorted(run_keys, lo))
        stop = len(run_keys) if hi is None else int(np.searchsorted(run_keys, hi))
        piece = np.asarray(run_keys[start:stop])
        keys.append(piece.astype(f"S{width}") if width else piece)
        values.append(np.asarray(run.values[start:stop]))
        stamps.append(np.asarray(run.stamps[start:stop]))
    return np.concatenate(keys), np.concatenate(values), np.concatenate(stamps)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
