"""MurmurHash3_x86_32 with seed 42, as Paimon hashes BinaryRows (FORMAT.md §6).

`hash_rows` hashes many rows at once: rows are processed word by word, all rows that still have
a word k taking step k together, in uint32 numpy arithmetic.
"""

from __future__ import annotations

import numpy as np

from tarn.errors import TarnError

SEED = 42
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_BLOCK_ROWS = 1 << 16  # rows per block, so the working set stays in cache
_LONG_ROW_WORDS = 512  # rows longer than this go to mmh3 (C) when it is installed

try:
    import mmh3
except ImportError:  # pragma: no cover - optional accelerator for very long rows
    mmh3 = None


def _scrambled(words: np.ndarray) -> np.ndarray:
    """The per-word `k` of the body: rotl(w * c1, 15) * c2."""
    k = words * _C1
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= _C2
    return k


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h ^= k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    h *= np.uint32(5)
    h += np.uint32(0xE6546B64)
    return h


def _finish(h: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    h ^= lengths.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def _hash_equal_rows(words: np.ndarray) -> np.ndarray:
    """Hashes (before finishing) of the rows of a (rows, words) uint32 matrix."""
    out = np.empty(len(words), dtype=np.uint32)
    for lo in range(0, len(words), _BLOCK_ROWS):
        block = _scrambled(np.ascontiguousarray(words[lo:lo + _BLOCK_ROWS].T))
        h = np.full(block.shape[1], SEED, dtype=np.uint32)
        for k in block:
            h = _mix(h, k)
        out[lo:lo + _BLOCK_ROWS] = h
    return out


def _hash_ragged_rows(words: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Hashes (before finishing) of rows of different lengths (in words)."""
    order = np.argsort(-counts, kind="stable")
    sorted_starts, sorted_counts = starts[order], counts[order]
    scrambled = _scrambled(words)
    h = np.full(len(counts), SEED, dtype=np.uint32)
    active = len(counts)
    for k in range(int(sorted_counts[0]) if len(counts) else 0):
        while active and sorted_counts[active - 1] <= k:
            active -= 1
        h[:active] = _mix(h[:active], scrambled[sorted_starts[:active] + k])
    out = np.empty_like(h)
    out[order] = h
    return out


def hash_rows(buffer: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Signed MurmurHash3_x86_32 (seed 42) of each row `buffer[offsets[i]:offsets[i+1]]`.

    Every row length must be a multiple of 4 bytes (BinaryRows are multiples of 8)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    n = len(lengths)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    if (offsets % 4).any():
        raise TarnError("hash_rows needs rows whose offsets and lengths are multiples of 4 bytes")
    data = np.ascontiguousarray(np.asarray(buffer, dtype=np.uint8)[offsets[0]:offsets[-1]])
    words = data.view("<u4")
    counts = lengths // 4
    starts = (offsets[:-1] - offsets[0]) // 4
    if counts.min() == counts.max():
        return _finish(_hash_equal_rows(words.reshape(n, int(counts[0]))), lengths).view(np.int32)
    # A few very long rows go to mmh3 (C) so that the word loop below stays short.
    long_rows = np.flatnonzero(counts > _LONG_ROW_WORDS) if mmh3 is not None else []
    short_counts = counts.copy()
    short_counts[long_rows] = 0
    hashes = _finish(_hash_ragged_rows(words, starts, short_counts), lengths).view(np.int32)
    for i in long_rows:
        row = data[offsets[i] - offsets[0]:offsets[i + 1] - offsets[0]]
        hashes[i] = mmh3.hash(row.tobytes(), SEED, signed=True)
    return hashes


def hash_bytes(data: bytes) -> int:
    """Signed MurmurHash3_x86_32 (seed 42) of any byte string."""
    data = bytes(data)
    body = len(data) - len(data) % 4
    h = SEED
    for i in range(0, body, 4):
        h = _mix_int(h, int.from_bytes(data[i:i + 4], "little"))
    tail = int.from_bytes(data[body:], "little")
    if len(data) % 4:
        h ^= _scramble_int(tail)
    h = int(_finish(np.array([h], dtype=np.uint32), np.array([len(data)]))[0])
    return h - (1 << 32) if h >= 1 << 31 else h


def _scramble_int(w: int) -> int:
    k = (w * 0xCC9E2D51) & 0xFFFFFFFF
    k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
    return (k * 0x1B873593) & 0xFFFFFFFF


def _mix_int(h: int, w: int) -> int:
    h ^= _scramble_int(w)
    h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
    return (h * 5 + 0xE6546B64) & 0xFFFFFFFF
