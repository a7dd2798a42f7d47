"""MurmurHash3_x86_32 with seed 42, as Paimon hashes BinaryRows (FORMAT.md §6).

`hash_rows` hashes many rows at once in uint32 numpy arithmetic: rows are sorted by length and
cut into blocks; within a block, step k mixes word k into every row that still has one.
"""

from __future__ import annotations

import numpy as np

from tarn.errors import TarnError

SEED = 42
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_BLOCK_ROWS = 1 << 14  # rows hashed together; keeps the working set in cache
_BLOCK_WORDS = 1 << 21  # cap on a block's word matrix (few rows per block when rows are long)
_LONG_ROW_WORDS = 512  # longer rows go to mmh3 (C) when it is installed

try:
    import mmh3
except ImportError:  # pragma: no cover - optional accelerator for very long rows
    mmh3 = None


def _scramble(k: np.ndarray, tmp: np.ndarray) -> None:
    """In place: k = rotl(k * c1, 15) * c2."""
    k *= _C1
    np.left_shift(k, np.uint32(15), out=tmp)
    k >>= np.uint32(17)
    k |= tmp
    k *= _C2


def _mix(h: np.ndarray, k: np.ndarray, tmp: np.ndarray) -> None:
    """In place: h = rotl(h ^ k, 13) * 5 + 0xe6546b64."""
    h ^= k
    np.left_shift(h, np.uint32(13), out=tmp)
    h >>= np.uint32(19)
    h |= tmp
    h *= np.uint32(5)
    h += np.uint32(0xE6546B64)


def _finish(h: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """fmix32(h ^ length) in place."""
    h ^= lengths.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def _hash_block(block: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Unfinished hashes of a (rows, words) matrix whose rows have `counts` (descending) words."""
    columns = np.array(block.T, order="C")  # a copy: word k of every row is contiguous
    tmp = np.empty(columns.shape, dtype=np.uint32)
    _scramble(columns, tmp)
    h = np.full(len(counts), SEED, dtype=np.uint32)
    active = np.searchsorted(-counts, -np.arange(columns.shape[0]), side="left")  # counts > k
    for k, a in enumerate(active.tolist()):
        _mix(h[:a], columns[k, :a], tmp[k, :a])
    return h


def _hash_words(words: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Unfinished hashes of rows given as word ranges; rows tile `words` in order."""
    n = len(counts)
    if counts.min() == counts.max():  # equal rows: the words are a (rows, words) matrix
        matrix = words[:n * int(counts[0])].reshape(n, int(counts[0]))
        order, counts_sorted = None, counts
    else:
        order = np.argsort(-counts, kind="stable")
        counts_sorted = counts[order]
    out = np.empty(n, dtype=np.uint32)
    lo = 0
    while lo < n:
        width = int(counts_sorted[lo])
        hi = min(n, lo + max(1, min(_BLOCK_ROWS, _BLOCK_WORDS // max(width, 1))))
        if order is None:
            block = matrix[lo:hi]
        else:
            index = starts[order[lo:hi], None] + np.arange(width)
            block = words[np.minimum(index, len(words) - 1)]
        out[lo:hi] = _hash_block(block, counts_sorted[lo:hi])
        lo = hi
    if order is None:
        return out
    unsorted = np.empty_like(out)
    unsorted[order] = out
    return unsorted


def hash_rows(buffer: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Signed MurmurHash3_x86_32 (seed 42) of each row `buffer[offsets[i]:offsets[i+1]]`.

    Rows must tile the buffer back to back with lengths that are multiples of 4 bytes
    (BinaryRows are multiples of 8), as `encode_rows` returns them."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    if len(lengths) == 0:
        return np.zeros(0, dtype=np.int32)
    if (offsets % 4).any():
        raise TarnError("hash_rows needs row offsets that are multiples of 4 bytes")
    data = np.ascontiguousarray(np.asarray(buffer, dtype=np.uint8)[offsets[0]:offsets[-1]])
    words = data.view("<u4")
    counts = lengths // 4
    starts = (offsets[:-1] - offsets[0]) // 4
    long_rows = np.flatnonzero(counts > _LONG_ROW_WORDS) if mmh3 is not None else []
    if len(long_rows):
        counts = counts.copy()
        counts[long_rows] = 0  # hashed below in C; the word loop stays short
    hashes = _finish(_hash_words(words, starts, counts), lengths).view(np.int32)
    for i in long_rows:
        row = data[4 * starts[i]:4 * starts[i] + lengths[i]]
        hashes[i] = mmh3.hash(row.tobytes(), SEED, signed=True)
    return hashes


def hash_word_columns(words: list, rows: int) -> np.ndarray:
    """Signed MurmurHash3_x86_32 (seed 42) of `rows` equal-length rows given word position by
    position: each entry a uint32 array (one word per row) or an int (the same word in every
    row). Leading constant words are mixed once, as plain ints."""
    h: int | np.ndarray = SEED
    tmp = np.empty(rows, dtype=np.uint32)
    for word in words:
        if isinstance(word, int) and isinstance(h, int):
            h = _mix_int(h, _scramble_int(word))
            continue
        if isinstance(h, int):
            h = np.full(rows, h, dtype=np.uint32)
        if isinstance(word, int):
            _mix(h, np.full(rows, _scramble_int(word), dtype=np.uint32), tmp)
        else:
            k = word.astype(np.uint32, copy=True)
            _scramble(k, tmp)
            _mix(h, k, tmp)
    if isinstance(h, int):
        h = np.full(rows, h, dtype=np.uint32)
    return _finish(h, np.full(rows, 4 * len(words), dtype=np.uint32)).view(np.int32)


def _mix_int(h: int, k: int) -> int:
    h ^= k
    h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
    return (h * 5 + 0xE6546B64) & 0xFFFFFFFF


def hash_bytes(data: bytes, seed: int = SEED) -> int:
    """Signed MurmurHash3_x86_32 (seed 42: Paimon's rows; 0: Guava's murmur3_32) of any byte
    string (plain Python, for single keys)."""
    data = bytes(data)
    body = len(data) - len(data) % 4
    h = seed
    for i in range(0, body, 4):
        h = _mix_int(h, _scramble_int(int.from_bytes(data[i:i + 4], "little")))
    if len(data) % 4:
        h ^= _scramble_int(int.from_bytes(data[body:], "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def _scramble_int(w: int) -> int:
    k = (w * 0xCC9E2D51) & 0xFFFFFFFF
    k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
    return (k * 0x1B873593) & 0xFFFFFFFF
