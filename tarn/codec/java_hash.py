"""Java's hash functions that Paimon's file indexes depend on, vectorised over numpy.

- `xxh64`: XXH64 with seed 0 (zero-allocation-hashing's `LongHashFunction.xx()`), the bloom
  filter's hash of strings and binaries;
- `wang_hash64`: Thomas Wang's 64-bit integer hash, the bloom filter's hash of numbers, dates
  and timestamps (Paimon's `FastHash.getLongHash`);
- `binary_string_hash`: `BinaryString.hashCode()` (Paimon's MurmurHash3 variant, seed 42,
  whose tail bytes are mixed one at a time as whole blocks);
- `hash_code`: `hashCode()` of the boxed keys a bitmap index puts in a `java.util.HashMap`;
- `hashmap_order`: the order in which a `java.util.HashMap` built by inserting keys one after
  the other iterates them. Index bytes follow that order, so it decides byte equality.

Byte strings are given as a flat uint8 buffer plus int64 offsets (`offsets[i]:offsets[i+1]`);
rows of equal length are hashed together, one numpy operation per byte position group.
"""

from __future__ import annotations

import numpy as np

_U64 = np.uint64
P1 = _U64(11400714785074694791)
P2 = _U64(14029467366897019727)
P3 = _U64(1609587929392839161)
P4 = _U64(9650029242287828579)
P5 = _U64(2870177450012600261)


def _rotl64(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    acc = acc + lane * P2
    return _rotl64(acc, 31) * P1


def _merge(h: np.ndarray, acc: np.ndarray) -> np.ndarray:
    h = h ^ _round(np.zeros_like(acc), acc)
    return h * P1 + P4


def _lanes(matrix: np.ndarray, start: int, width: int, dtype: str) -> np.ndarray:
    """Little-endian words of `width` bytes at column `start` of a (rows, length) byte matrix."""
    return np.ascontiguousarray(matrix[:, start:start + width]).view(dtype).reshape(-1).astype(np.uint64)


def _xxh64_equal_length(m: np.ndarray) -> np.ndarray:
    rows, length = m.shape
    with np.errstate(over="ignore"):
        p = 0
        if length >= 32:
            v1 = np.full(rows, P1 + P2, dtype=np.uint64)
            v2 = np.full(rows, P2, dtype=np.uint64)
            v3 = np.zeros(rows, dtype=np.uint64)
            v4 = np.full(rows, _U64(0) - P1, dtype=np.uint64)
            while p + 32 <= length:
                v1 = _round(v1, _lanes(m, p, 8, "<u8"))
                v2 = _round(v2, _lanes(m, p + 8, 8, "<u8"))
                v3 = _round(v3, _lanes(m, p + 16, 8, "<u8"))
                v4 = _round(v4, _lanes(m, p + 24, 8, "<u8"))
                p += 32
            h = _rotl64(v1, 1) + _rotl64(v2, 7) + _rotl64(v3, 12) + _rotl64(v4, 18)
            for v in (v1, v2, v3, v4):
                h = _merge(h, v)
        else:
            h = np.full(rows, P5, dtype=np.uint64)
        h = h + _U64(length)
        while p + 8 <= length:
            h = h ^ _round(np.zeros(rows, dtype=np.uint64), _lanes(m, p, 8, "<u8"))
            h = _rotl64(h, 27) * P1 + P4
            p += 8
        if p + 4 <= length:
            h = h ^ (_lanes(m, p, 4, "<u4") * P1)
            h = _rotl64(h, 23) * P2 + P3
            p += 4
        while p < length:
            h = h ^ (m[:, p].astype(np.uint64) * P5)
            h = _rotl64(h, 11) * P1
            p += 1
        h ^= h >> _U64(33)
        h *= P2
        h ^= h >> _U64(29)
        h *= P3
        h ^= h >> _U64(32)
    return h


def _by_length(buffer: np.ndarray, offsets: np.ndarray, hash_group, dtype) -> np.ndarray:
    """Apply `hash_group((rows, L) byte matrix)` to every group of equal-length rows."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    out = np.empty(len(lengths), dtype=dtype)
    if len(lengths) == 0:
        return out
    buffer = np.asarray(buffer, dtype=np.uint8)
    starts = offsets[:-1]
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    bounds = np.flatnonzero(np.diff(sorted_lengths)) + 1
    for group in np.split(order, bounds):
        length = int(lengths[group[0]])
        matrix = buffer[starts[group][:, None] + np.arange(length, dtype=np.int64)[None, :]]
        out[group] = hash_group(matrix.reshape(len(group), length))
    return out


def xxh64(buffer: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of each byte string, as uint64."""
    return _by_length(buffer, offsets, _xxh64_equal_length, np.uint64)


def xxh64_bytes(data: bytes) -> int:
    """XXH64 (seed 0) of one byte string, as an unsigned int."""
    return int(xxh64(np.frombuffer(data, dtype=np.uint8), np.array([0, len(data)]))[0])


def wang_hash64(keys: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash of int64 keys (Java's signed shifts), as int64."""
    k = np.asarray(keys, dtype=np.int64).view(np.uint64).copy()
    with np.errstate(over="ignore"):
        k = (~k) + (k << _U64(21))
        k = k ^ (k.view(np.int64) >> 24).view(np.uint64)
        k = (k + (k << _U64(3))) + (k << _U64(8))
        k = k ^ (k.view(np.int64) >> 14).view(np.uint64)
        k = (k + (k << _U64(2))) + (k << _U64(4))
        k = k ^ (k.view(np.int64) >> 28).view(np.uint64)
        k = k + (k << _U64(31))
    return k.view(np.int64)


# ------------------------------------------------------------------ Paimon's MurmurHash3 variant

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)


def _mix_k1(k: np.ndarray) -> np.ndarray:
    k = k * _C1
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    return k * _C2


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def _binary_string_hash_equal_length(m: np.ndarray) -> np.ndarray:
    rows, length = m.shape
    aligned = length - length % 4
    with np.errstate(over="ignore"):
        h = np.full(rows, 42, dtype=np.uint32)
        for p in range(0, aligned, 4):
            word = np.ascontiguousarray(m[:, p:p + 4]).view("<u4").reshape(-1)
            h = _mix_h1(h, _mix_k1(word))
        for p in range(aligned, length):
            signed = m[:, p].view(np.int8).astype(np.int32).view(np.uint32)
            h = _mix_h1(h, _mix_k1(signed))
        h = h ^ np.uint32(length)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def binary_string_hash(buffer: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """`BinaryString.hashCode()` of each UTF-8 byte string, as int32."""
    return _by_length(buffer, offsets, _binary_string_hash_equal_length, np.int32)


# ------------------------------------------------------------------ java.lang hashCode()

def hash_code(kind: str, keys: np.ndarray) -> np.ndarray:
    """`hashCode()` of boxed keys as int32: kind is byte/short/int (the value), long,
    float (int bits), double (long bits) or boolean."""
    if kind in ("byte", "short", "int", "float"):
        return np.asarray(keys).astype(np.int32)
    if kind in ("long", "double"):
        u = np.asarray(keys, dtype=np.int64).view(np.uint64)
        return (u ^ (u >> np.uint64(32))).astype(np.uint32).view(np.int32)
    if kind == "boolean":
        return np.where(np.asarray(keys, dtype=bool), 1231, 1237).astype(np.int32)
    raise ValueError(f"no hashCode for {kind}")


def string_hash(text: str) -> int:
    """`String.hashCode()` (over UTF-16 code units), as a signed int."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# ------------------------------------------------------------------ java.util.HashMap order
#
# A HashMap iterates bin by bin; inside a bin, `put` appends a new key at the tail while
# `computeIfAbsent` pushes it at the head. `put` resizes right after the insertion that passes
# the threshold, `computeIfAbsent` at the start of the next call. A bin that grows past the
# treeify threshold makes a small table (< 64) resize early, a larger one turn the bin into a
# red-black tree whose linked order follows tree insertions.

_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64
PUT = "put"
COMPUTE = "computeIfAbsent"


def _spread(hashes: np.ndarray) -> np.ndarray:
    h = np.asarray(hashes, dtype=np.int32).view(np.uint32)
    return h ^ (h >> np.uint32(16))


def hashmap_capacity(size: int) -> int:
    """Table length of a default HashMap holding `size` keys, resized as `put` resizes,
    assuming no bin ever reached the treeify threshold."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def hashmap_order(hashes: np.ndarray, compare_keys=None, op: str = PUT, trailing_call: bool = True) -> np.ndarray:
    """Positions of distinct keys (given by their hashCode, in insertion order) in the order a
    default `java.util.HashMap` filled by `op` iterates them. With computeIfAbsent,
    `trailing_call` tells whether the map was called again after the last insertion (a call
    that finds the key present still resizes a full table)."""
    spread = _spread(hashes)
    n = len(spread)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    limit = _TREEIFY_THRESHOLD if op == PUT else _TREEIFY_THRESHOLD - 1
    if _bins_stay_lists(spread, limit):
        size = n if op == PUT or trailing_call else n - 1
        bins = (spread & np.uint32(hashmap_capacity(size) - 1)).astype(np.int64)
        position = np.arange(n, dtype=np.int64)
        return np.lexsort((position if op == PUT else -position, bins))
    sim = JavaHashMap(compare_keys)
    h = np.asarray(hashes, dtype=np.int32)
    for i in range(n):
        sim.call(op, i, int(h[i]))
    if op == COMPUTE and trailing_call:
        sim.call(op, 0, int(h[0]))
    return np.array(sim.keys(), dtype=np.int64)


def _bins_stay_lists(spread: np.ndarray, limit: int) -> bool:
    """True when no bin holds more than `limit` keys at any table length the map passes
    through (so neither early resizes nor tree bins occur)."""
    n = len(spread)
    capacity = 16
    while True:
        last = min(n, capacity * 3 // 4 + 1)  # keys in the table while it has this length
        bins = spread[:last] & np.uint32(capacity - 1)
        if np.bincount(bins).max() > limit:
            return False
        if last >= n:
            return True
        capacity *= 2


def java_map_keys(calls: list[tuple[str, object, int]], compare_keys=None) -> list:
    """Iteration order of a HashMap after `calls` of (op, key, hashCode) (keys hashable)."""
    sim = JavaHashMap(compare_keys)
    for op, key, h in calls:
        sim.call(op, key, h)
    return sim.keys()


class _Node:
    __slots__ = ("key", "hash", "next", "parent", "left", "right", "prev", "red", "tree")

    def __init__(self, key: int, h: int):
        self.key = key
        self.hash = h
        self.next = None
        self.parent = self.left = self.right = self.prev = None
        self.red = False
        self.tree = False


class JavaHashMap:
    """The parts of OpenJDK's HashMap that decide iteration order: put and computeIfAbsent,
    resize, treeifyBin, TreeNode.putTreeVal / treeify / split / untreeify / moveRootToFront /
    balanceInsertion. Keys are any hashable stand-ins; `compare_keys(a, b)` is their
    compareTo (used between equal hashes in tree bins; None compares insertion order)."""

    def __init__(self, compare_keys=None, initial_capacity: int = 16):
        self.compare_keys = compare_keys
        self.initial_capacity = initial_capacity
        self.table: list = []
        self.size = 0
        self.threshold = 0
        self.present: dict = {}
        self.rank: dict = {}

    def keys(self) -> list:
        out = []
        for first in self.table:
            node = first
            while node is not None:
                out.append(node.key)
                node = node.next
        return out

    def call(self, op: str, key, h: int) -> None:
        h = int(_spread(np.array([h], dtype=np.int32)).view(np.int32)[0])
        if op == COMPUTE:
            if self.size > self.threshold or not self.table:
                self._resize()
            if key in self.present:
                return
            self._insert(key, h, head=True)
        else:
            if not self.table:
                self._resize()
            if key in self.present:
                return
            self._insert(key, h, head=False)
            if self.size > self.threshold:
                self._resize()

    def _insert(self, key, h: int, head: bool) -> None:
        self.present[key] = True
        self.rank.setdefault(key, len(self.rank))
        n = len(self.table)
        i = h & (n - 1)
        first = self.table[i]
        if first is None:
            self.table[i] = _Node(key, h)
        elif first.tree:
            self._put_tree_val(self._root(i), key, h)
        else:
            count, p = 1, first
            while p.next is not None:
                p = p.next
                count += 1
            node = _Node(key, h)
            if head:
                node.next = first
                self.table[i] = node
                treeify = count >= _TREEIFY_THRESHOLD - 1
            else:
                p.next = node
                treeify = count - 1 >= _TREEIFY_THRESHOLD - 1
            if treeify:
                self._treeify_bin(i)
        self.size += 1

    def _resize(self) -> None:
        old = self.table
        old_cap = len(old)
        new_cap = self.initial_capacity if old_cap == 0 else old_cap * 2
        self.threshold = new_cap * 3 // 4
        self.table = [None] * new_cap
        for j, e in enumerate(old):
            if e is None:
                continue
            if e.next is None:
                self.table[e.hash & (new_cap - 1)] = e
            elif e.tree:
                self._split(e, j, old_cap)
            else:
                lo, hi = self._split_list(e, old_cap)
                if lo:
                    self.table[j] = self._link(lo)
                if hi:
                    self.table[j + old_cap] = self._link(hi)

    @staticmethod
    def _split_list(first, bit: int):
        lo, hi = [], []
        node = first
        while node is not None:
            (hi if node.hash & bit else lo).append(node)
            node = node.next
        return lo, hi

    @staticmethod
    def _link(nodes: list):
        for a, b in zip(nodes, nodes[1:]):
            a.next = b
        nodes[-1].next = None
        return nodes[0]

    # -------------------------------------------------------------- tree bins

    def _root(self, i: int):
        node = self.table[i]
        while node.parent is not None:
            node = node.parent
        return node

    def _treeify_bin(self, i: int) -> None:
        if len(self.table) < _MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        nodes = []
        node = self.table[i]
        while node is not None:
            nodes.append(node)
            node = node.next
        prev = None
        for node in nodes:
            node.tree = True
            node.prev = prev
            node.parent = node.left = node.right = None
            prev = node
        self.table[i] = nodes[0]
        self._treeify(i, nodes)

    def _treeify(self, i: int, nodes: list) -> None:
        root = None
        for x in nodes:
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
                continue
            p = root
            while True:
                direction = self._direction(x, p)
                xp = p
                p = p.left if direction <= 0 else p.right
                if p is None:
                    x.parent = xp
                    if direction <= 0:
                        xp.left = x
                    else:
                        xp.right = x
                    root = self._balance_insertion(root, x)
                    break
        self._move_root_to_front(i, root)

    def _direction(self, x, p) -> int:
        if p.hash > x.hash:
            return -1
        if p.hash < x.hash:
            return 1
        if self.compare_keys is not None:
            c = self.compare_keys(x.key, p.key)
            if c != 0:
                return c
        return -1 if self.rank[x.key] <= self.rank[p.key] else 1  # tieBreakOrder stand-in

    def _put_tree_val(self, root, key: int, h: int) -> None:
        p = root
        x = _Node(key, h)
        x.tree = True
        while True:
            direction = self._direction(x, p)
            xp = p
            p = p.left if direction <= 0 else p.right
            if p is None:
                xpn = xp.next
                x.next = xpn
                x.parent = x.prev = xp
                xp.next = x
                if direction <= 0:
                    xp.left = x
                else:
                    xp.right = x
                if xpn is not None:
                    xpn.prev = x
                i = h & (len(self.table) - 1)
                self._move_root_to_front(i, self._balance_insertion(root, x))
                return

    def _move_root_to_front(self, i: int, root) -> None:
        first = self.table[i]
        if root is first:
            return
        rn, rp = root.next, root.prev
        if rn is not None:
            rn.prev = rp
        if rp is not None:
            rp.next = rn
        if first is not None:
            first.prev = root
        root.next = first
        root.prev = None
        self.table[i] = root

    def _split(self, first, index: int, bit: int) -> None:
        lo, hi = self._split_list(first, bit)
        for part, slot, other in ((lo, index, hi), (hi, index + bit, lo)):
            if not part:
                continue
            if len(part) <= 6:
                for node in part:
                    node.tree = False
                    node.parent = node.left = node.right = node.prev = None
                self.table[slot] = self._link(part)
            else:
                self._link(part)
                prev = None
                for node in part:
                    node.prev = prev
                    prev = node
                self.table[slot] = part[0]
                if other:
                    self._treeify(slot, part)

    @staticmethod
    def _rotate_left(root, p):
        r = p.right
        if r is not None:
            rl = p.right = r.left
            if rl is not None:
                rl.parent = p
            pp = r.parent = p.parent
            if pp is None:
                root = r
                r.red = False
            elif pp.left is p:
                pp.left = r
            else:
                pp.right = r
            r.left = p
            p.parent = r
        return root

    @staticmethod
    def _rotate_right(root, p):
        left = p.left
        if left is not None:
            lr = p.left = left.right
            if lr is not None:
                lr.parent = p
            pp = left.parent = p.parent
            if pp is None:
                root = left
                left.red = False
            elif pp.right is p:
                pp.right = left
            else:
                pp.left = left
            left.right = p
            p.parent = left
        return root

    def _balance_insertion(self, root, x):
        x.red = True
        while True:
            xp = x.parent
            if xp is None:
                x.red = False
                return x
            if not xp.red:
                return root
            xpp = xp.parent
            if xpp is None:
                return root
            xppl = xpp.left
            if xp is xppl:
                xppr = xpp.right
                if xppr is not None and xppr.red:
                    xppr.red = False
                    xp.red = False
                    xpp.red = True
                    x = xpp
                else:
                    if x is xp.right:
                        x = xp
                        root = self._rotate_left(root, x)
                        xp = x.parent
                        xpp = None if xp is None else xp.parent
                    if xp is not None:
                        xp.red = False
                        if xpp is not None:
                            xpp.red = True
                            root = self._rotate_right(root, xpp)
            else:
                if xppl is not None and xppl.red:
                    xppl.red = False
                    xp.red = False
                    xpp.red = True
                    x = xpp
                else:
                    if x is xp.left:
                        x = xp
                        root = self._rotate_right(root, x)
                        xp = x.parent
                        xpp = None if xp is None else xp.parent
                    if xp is not None:
                        xp.red = False
                        if xpp is not None:
                            xpp.red = True
                            root = self._rotate_left(root, xpp)
