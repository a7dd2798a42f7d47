"""Roaring bitmaps as Java writes them: RoaringBitmap's portable 32-bit format (rbm32) and
Roaring64Bitmap's serialisation (rbm64), read, merged (`or`) and written so that the bytes are
Java's for the same history of steps (container kinds, ART node layouts). The rbm32 / rbm64
aggregate functions (tarn/lsm/field_aggs.py) fold a key's values through these.
"""

from __future__ import annotations

import numpy as np


class BadValue(ValueError):
    """A value that is not what its aggregate function reads."""


# 32-bit roaring bitmaps: Java's RoaringBitmap portable format. A container is (kind, values):
# kind "a" (array), "b" (bitmap), "r" (run); Java's or() and runOptimize() decide the kinds.

COOKIE, COOKIE_NO_RUN, _ARRAY_MAX, _FULL = 12347, 12346, 4096, 65536


def _runs(values: np.ndarray) -> int:
    return 0 if len(values) == 0 else 1 + int(np.count_nonzero(np.diff(values.astype(np.int32)) != 1))


def _run_bytes(values: np.ndarray) -> int:
    return 2 + 4 * _runs(values)


def _efficient(values: np.ndarray) -> str:
    """RunContainer.toEfficientContainer: a run container unless it is bigger than both others
    (an array counted with a 2-byte length there, unlike in ArrayContainer.runOptimize)."""
    if _run_bytes(values) <= min(8192, 2 * len(values) + 2):
        return "r"
    return "a" if len(values) <= _ARRAY_MAX else "b"


def _run_optimize(kind: str, values: np.ndarray, keep_runs: bool) -> str:
    """Container.runOptimize as RoaringBitmap (a run container made efficient) or, with
    `keep_runs`, Roaring64Bitmap (which keeps any run container) applies it at serialisation."""
    if kind == "r":
        return "r" if keep_runs else _efficient(values)
    size = 2 * len(values) if kind == "a" else 8192
    return "r" if size > _run_bytes(values) else kind


def _container_or(a: tuple, b: tuple) -> tuple:
    """acc.ior(input) of two containers of one key, as Java's container classes do it."""
    (ka, va), (kb, vb) = a, b
    values = np.union1d(va, vb)
    if len(values) == _FULL:
        return "r", values
    if ka == "a" and kb == "a":
        return ("a" if len(values) <= _ARRAY_MAX else "b"), values
    if "b" in (ka, kb):
        return "b", values
    if ka == "r" and kb == "r":
        return ("r" if _run_bytes(values) < 8192 else "b"), values
    return _efficient(values), values  # a run and an array: the run's lazy or, repaired


def _unpack_container(data: bytes, at: int, kind: str, cardinality: int) -> tuple[np.ndarray, int]:
    """The values of one serialised container body and where it ends."""
    if kind == "r":
        _need(data, at, 2)
        runs = int.from_bytes(data[at:at + 2], "little")
        _need(data, at + 2, 4 * runs)
        pairs = np.frombuffer(data, "<u2", 2 * runs, at + 2).astype(np.int64).reshape(runs, 2)
        lengths = pairs[:, 1] + 1
        values = np.repeat(pairs[:, 0] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        if len(values) and (values[-1] >= _FULL or np.any(np.diff(values) <= 0)):
            raise BadValue("run container out of order")
        return values.astype(np.uint16), at + 2 + 4 * runs
    if kind == "b":
        _need(data, at, 8192)
        bits = np.unpackbits(np.frombuffer(data, np.uint8, 8192, at), bitorder="little")
        return np.flatnonzero(bits).astype(np.uint16), at + 8192
    _need(data, at, 2 * cardinality)
    values = np.frombuffer(data, "<u2", cardinality, at).copy()
    if cardinality > 1 and np.any(np.diff(values.astype(np.int32)) <= 0):
        raise BadValue("array container out of order")
    return values, at + 2 * cardinality


def _need(data: bytes, at: int, size: int) -> None:
    if at + size > len(data):
        raise BadValue(f"truncated at byte {at} ({len(data)} bytes, {size} more needed)")


def _pack_container(kind: str, values: np.ndarray) -> bytes:
    if kind == "a":
        return values.astype("<u2").tobytes()
    if kind == "b":
        bits = np.zeros(_FULL, dtype=np.uint8)
        bits[values.astype(np.int64)] = 1
        return np.packbits(bits, bitorder="little").tobytes()
    v = values.astype(np.int64)
    breaks = np.flatnonzero(np.diff(v) != 1) + 1
    begin = v[np.concatenate([[0], breaks])]
    end = v[np.concatenate([breaks - 1, [len(v) - 1]])]
    pairs = np.stack([begin, end - begin], axis=1).astype("<u2")
    return len(begin).to_bytes(2, "little") + pairs.tobytes()


def read_rbm32(data: bytes) -> dict:
    """{high 16 bits: (kind, uint16 values)} of a portable 32-bit roaring bitmap (as Java's
    RoaringBitmap.deserialize(ByteBuffer) reads it; bytes after it are ignored)."""
    _need(data, 0, 4)
    cookie = int.from_bytes(data[:4], "little")
    at = 4
    if cookie & 0xFFFF == COOKIE:
        count = (cookie >> 16) + 1
        _need(data, at, (count + 7) // 8)
        flags = np.unpackbits(np.frombuffer(data, np.uint8, (count + 7) // 8, at), bitorder="little")[:count]
        at += (count + 7) // 8
    elif cookie == COOKIE_NO_RUN:
        _need(data, at, 4)
        count = int.from_bytes(data[at:at + 4], "little")
        if count > _FULL:
            raise BadValue(f"{count} containers")
        flags = np.zeros(count, dtype=np.uint8)
        at += 4
    else:
        raise BadValue(f"no roaring bitmap cookie (found {cookie})")
    _need(data, at, 4 * count)
    header = np.frombuffer(data, "<u2", 2 * count, at).reshape(count, 2).astype(np.int64)
    at += 4 * count
    if count > 1 and np.any(np.diff(header[:, 0]) <= 0):
        raise BadValue("container keys not ascending")
    if not flags.any() or count >= 4:
        at += 4 * count  # offsets
    containers = {}
    for (key, card), run in zip(header.tolist(), flags.tolist()):
        kind = "r" if run else ("b" if card + 1 > _ARRAY_MAX else "a")
        values, at = _unpack_container(data, at, kind, card + 1)
        containers[key] = (kind, values)
    return containers


def or_rbm32(acc: dict, other: dict) -> dict:
    out = dict(acc)
    for key, container in other.items():
        out[key] = _container_or(out[key], container) if key in out else container
    return {k: (_run_optimize(kind, v, keep_runs=False), v) for k, (kind, v) in sorted(out.items())}


def write_rbm32(containers: dict) -> bytes:
    """RoaringBitmap.serialize after runOptimize (already applied by `or_rbm32`)."""
    keys = sorted(containers)
    count = len(keys)
    kinds = [containers[k][0] for k in keys]
    bodies = [_pack_container(*containers[k]) for k in keys]
    has_run = "r" in kinds
    parts = []
    if has_run:
        parts.append((COOKIE | ((count - 1) << 16)).to_bytes(4, "little"))
        parts.append(np.packbits(np.array([k == "r" for k in kinds], dtype=np.uint8), bitorder="little").tobytes())
    else:
        parts.append(COOKIE_NO_RUN.to_bytes(4, "little") + count.to_bytes(4, "little"))
    parts.append(np.array([(k, len(containers[k][1]) - 1) for k in keys], dtype="<u2").reshape(-1).tobytes())
    if not has_run or count >= 4:
        start = sum(len(p) for p in parts) + 4 * count
        sizes = np.array([len(b) for b in bodies], dtype=np.int64)
        parts.append((start + np.cumsum(sizes) - sizes).astype("<u4").tobytes())
    parts.extend(bodies)
    return b"".join(parts)


# 64-bit roaring bitmaps: Java's Roaring64Bitmap.serialize, an adaptive radix tree (ART) over the
# 48 high bits of the values and the 16-bit containers in a two-level array. Java deserialises
# the accumulator's layout as it is and inserts the input's new high keys into it, so tarn keeps
# the parsed layout and replays the inserts.

_N4, _N16, _N48, _N256, _LEAF = range(5)
_MAX_ARRAY_OFFSET = 2147483647 - 8 - 1


class _ArtNode:
    __slots__ = ("kind", "count", "prefix", "keys", "children", "key", "index")

    def __init__(self, kind: int, prefix: bytes = b"", count: int = 0):
        self.kind, self.prefix, self.count = kind, prefix, count
        self.keys = bytearray(4 if kind == _N4 else 16) if kind in (_N4, _N16) else None
        self.children: list = [None] * {_N4: 4, _N16: 16, _N48: 48, _N256: 256}.get(kind, 0)
        self.index = bytearray(b"\xff" * 256) if kind == _N48 else None

    def child_at(self, byte: int):
        if self.kind in (_N4, _N16):
            for i in range(self.count):
                if self.keys[i] == byte:
                    return i
            return None
        if self.kind == _N48:
            return byte if self.index[byte] != 0xFF else None
        return byte if self.children[byte] is not None else None

    def get(self, position: int):
        return self.children[self.index[position]] if self.kind == _N48 else self.children[position]

    def set(self, position: int, child) -> None:
        if self.kind == _N48:
            self.children[self.index[position]] = child
        else:
            self.children[position] = child

    def ordered(self) -> list:
        """The children in ascending key order."""
        if self.kind in (_N4, _N16):
            return self.children[:self.count]
        if self.kind == _N48:
            return [self.children[self.index[b]] for b in range(256) if self.index[b] != 0xFF]
        return [c for c in self.children if c is not None]


class _Leaf:
    __slots__ = ("kind", "count", "prefix", "key", "container")

    def __init__(self, key: bytes, container: int, prefix: bytes = b"", count: int = 0):
        self.kind, self.key, self.container, self.prefix, self.count = _LEAF, key, container, prefix, count


def _art_add(node, child, byte: int):
    """Node.insertLeaf: put `child` under `byte`, growing the node when it is full."""
    if node.kind in (_N4, _N16) and node.count < len(node.keys):
        i = node.count
        while i > 0 and node.keys[i - 1] > byte:  # insertion sort of the new last key
            node.keys[i], node.children[i] = node.keys[i - 1], node.children[i - 1]
            i -= 1
        node.keys[i], node.children[i] = byte, child
        node.count += 1
        return node
    if node.kind == _N4:
        grown = _ArtNode(_N16, node.prefix, 4)
        grown.keys[:4] = node.keys[:4]
        grown.children[:4] = node.children[:4]
        return _art_add(grown, child, byte)
    if node.kind == _N16:
        grown = _ArtNode(_N48, node.prefix, node.count)
        for i in range(node.count):
            grown.index[node.keys[i]] = i
            grown.children[i] = node.children[i]
        return _art_add(grown, child, byte)
    if node.kind == _N48:
        if node.count < 48:
            slot = node.count
            if node.children[slot] is not None:
                slot = node.children.index(None)
            node.children[slot] = child
            node.index[byte] = slot
            node.count += 1
            return node
        grown = _ArtNode(_N256, node.prefix, node.count)
        for b in range(256):
            if node.index[b] != 0xFF:
                grown.children[b] = node.children[node.index[b]]
        return _art_add(grown, child, byte)
    node.children[byte] = child
    node.count += 1
    return node


def _art_insert(node, leaf: _Leaf, depth: int):
    """Art.insert of a new leaf (its 6-byte key not in the tree)."""
    key = leaf.key
    if node is None:
        return leaf
    if node.kind == _LEAF:
        common = 0
        while depth + common < 6 and node.key[depth + common] == key[depth + common]:
            common += 1
        node.prefix = b""
        split = _ArtNode(_N4, key[depth:depth + common])
        _art_add(split, node, node.key[depth + common])
        _art_add(split, leaf, key[depth + common])
        return split
    if node.prefix:
        mismatch = 0
        while mismatch < len(node.prefix) and depth + mismatch < 6 and node.prefix[mismatch] == key[depth + mismatch]:
            mismatch += 1
        if mismatch != len(node.prefix):
            split = _ArtNode(_N4, node.prefix[:mismatch])
            _art_add(split, node, node.prefix[mismatch])
            node.prefix = node.prefix[mismatch + 1:]
            _art_add(split, leaf, key[depth + mismatch])
            return split
        depth += len(node.prefix)
    position = node.child_at(key[depth])
    if position is not None:
        child = node.get(position)
        fresh = _art_insert(child, leaf, depth + 1)
        if fresh is not child:
            node.set(position, fresh)
        return node
    return _art_add(node, leaf, key[depth])


class _Bitmap64:
    """A Roaring64Bitmap as Java holds it: ART, key count, container arrays and their cursors."""

    def __init__(self):
        self.root = None
        self.key_count = 0
        self.arrays: list[list] = []  # each a list of [kind, values] or None
        self.first, self.second, self.size = -1, 0, 0
        self.leaves: dict[bytes, _Leaf] = {}

    def container(self, index: int):
        return self.arrays[index >> 32][index & 0xFFFFFFFF]

    def add_container(self, container) -> int:
        if self.second + 1 == _MAX_ARRAY_OFFSET or self.first == -1:
            self.arrays.append([None])
            self.first += 1
            self.second = 0
        else:
            self.second += 1
        array = self.arrays[self.first]
        if self.second + 1 > len(array):
            capacity = max(len(array) + (len(array) >> 1), self.second + 1)
            array.extend([None] * (capacity - len(array)))
        array[self.second] = container
        self.size += 1
        return (self.first << 32) | self.second

    def or_(self, other: _Bitmap64) -> None:
        for key in sorted(other.leaves):
            theirs = other.container(other.leaves[key].container)
            mine = self.leaves.get(key)
            if mine is None:
                leaf = _Leaf(key, self.add_container(list(theirs)))
                self.root = _art_insert(self.root, leaf, 0)
                self.key_count += 1
                self.leaves[key] = leaf
            else:
                slot = mine.container
                self.arrays[slot >> 32][slot & 0xFFFFFFFF] = list(_container_or(self.container(slot), theirs))

    def run_optimize(self) -> None:
        for array in self.arrays:
            for c in array:
                if c is not None:
                    c[0] = _run_optimize(c[0], c[1], keep_runs=True)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        _need(self.data, self.at, size)
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def int(self, size: int, signed: bool = True) -> int:
        return int.from_bytes(self.take(size), "little", signed=signed)


def _read_node(r: _Reader, leaves: dict, depth: int = 0):
    if depth > 7:
        raise BadValue("tree deeper than 6 bytes")
    kind = r.int(1)
    count = r.int(2)
    prefix = r.take(max(r.int(1), 0))
    if kind == _LEAF:
        leaf = _Leaf(r.take(6), r.int(8), prefix, count)
        leaves[leaf.key] = leaf
        return leaf
    if kind not in (_N4, _N16, _N48, _N256) or not 0 <= count <= 256:
        raise BadValue(f"node type {kind} with {count} children")
    node = _ArtNode(kind, prefix, count)
    if kind == _N4:
        node.keys[:] = r.take(4)[::-1]
    elif kind == _N16:
        body = r.take(16)
        node.keys[:] = body[7::-1] + body[15:7:-1]
    elif kind == _N48:
        body = r.take(256)
        node.index[:] = b"".join(body[i:i + 8][::-1] for i in range(0, 256, 8))
    else:
        mask = np.unpackbits(np.frombuffer(r.take(32), np.uint8), bitorder="little")
    children = [_read_node(r, leaves, depth + 1) for _ in range(count)]
    if kind in (_N4, _N16):
        if count > len(node.keys):
            raise BadValue(f"{count} children in a node of {len(node.keys)}")
        node.children[:count] = children
    elif kind == _N48:
        slots = [node.index[b] for b in range(256) if node.index[b] != 0xFF]
        if len(slots) != count or max(slots, default=0) >= 48:
            raise BadValue("node48 index does not match its children")
        for slot, child in zip(slots, children):
            node.children[slot] = child
    else:
        positions = np.flatnonzero(mask)
        if len(positions) != count:
            raise BadValue("node256 mask does not match its children")
        for b, child in zip(positions.tolist(), children):
            node.children[b] = child
    return node


def read_rbm64(data: bytes) -> _Bitmap64:
    bitmap = _Bitmap64()
    r = _Reader(data)
    tag = r.int(1)
    if tag == 0:
        return bitmap
    if tag != 1:
        raise BadValue(f"first byte {tag} is not a Roaring64Bitmap tag")
    bitmap.key_count = r.int(8)
    bitmap.root = _read_node(r, bitmap.leaves)
    first_level = r.int(4)
    if not 0 <= first_level <= len(data):
        raise BadValue(f"{first_level} container arrays")
    for _ in range(first_level):
        r.take(1)
        length = r.int(4)
        if not 0 <= length <= len(data):
            raise BadValue(f"container array of {length}")
        array = []
        for _ in range(length):
            tag = r.int(1)
            if tag == 0:
                array.append(None)
                continue
            if tag != 1:
                raise BadValue(f"container tag {tag}")
            kind = {0: "r", 1: "b", 2: "a"}.get(r.int(1))
            cardinality = r.int(4)
            if kind is None or not 0 <= cardinality <= _FULL:
                raise BadValue("bad container header")
            values, r.at = _unpack_container(data, r.at, kind, cardinality)
            array.append([kind, values])
        bitmap.arrays.append(array)
    bitmap.size = r.int(8)
    bitmap.first, bitmap.second = r.int(4), r.int(4)
    for leaf in bitmap.leaves.values():
        if not (leaf.container >> 32) < len(bitmap.arrays) or not (leaf.container & 0xFFFFFFFF) < len(
                bitmap.arrays[leaf.container >> 32]) or bitmap.container(leaf.container) is None:
            raise BadValue("a high key points to no container")
    return bitmap


def _write_node(node, out: list) -> None:
    out.append(bytes([node.kind]) + (node.count & 0xFFFF).to_bytes(2, "little") + bytes([len(node.prefix)])
               + bytes(node.prefix))
    if node.kind == _LEAF:
        out.append(bytes(node.key) + node.container.to_bytes(8, "little", signed=True))
        return
    if node.kind == _N4:
        out.append(bytes(node.keys[::-1]))
    elif node.kind == _N16:
        out.append(bytes(node.keys[7::-1]) + bytes(node.keys[15:7:-1]))
    elif node.kind == _N48:
        out.append(b"".join(bytes(node.index[i:i + 8][::-1]) for i in range(0, 256, 8)))
    else:
        bits = np.array([c is not None for c in node.children], dtype=np.uint8)
        out.append(np.packbits(bits, bitorder="little").tobytes())
    for child in node.ordered():
        _write_node(child, out)


def write_rbm64(bitmap: _Bitmap64) -> bytes:
    if bitmap.root is None:
        return b"\x00"
    out = [b"\x01", bitmap.key_count.to_bytes(8, "little", signed=True)]
    _write_node(bitmap.root, out)
    out.append(len(bitmap.arrays).to_bytes(4, "little"))
    for array in bitmap.arrays:
        out.append(b"\xfe" + len(array).to_bytes(4, "little"))
        for c in array:
            if c is None:
                out.append(b"\x00")
            else:
                kind, values = c
                out.append(b"\x01" + bytes([{"r": 0, "b": 1, "a": 2}[kind]]) + len(values).to_bytes(4, "little")
                           + _pack_container(kind, values))
    out.append(bitmap.size.to_bytes(8, "little", signed=True) + bitmap.first.to_bytes(4, "little", signed=True)
               + bitmap.second.to_bytes(4, "little", signed=True))
    return b"".join(out)


def merge_rbm64(acc: _Bitmap64, other: _Bitmap64) -> _Bitmap64:
    acc.or_(other)
    acc.run_optimize()
    return acc


# -- building and reading the bitmaps (tests, tools) -------------------------------------------------


def _containers_of(values: np.ndarray) -> list[tuple[int, list]]:
    """(high key, [kind, low values]) per high key in ascending order, with the kinds Java's
    add() leaves (an array turns into a bitmap past 4096 values)."""
    values = np.unique(values)
    high, low = values >> 16, (values & 0xFFFF).astype(np.uint16)
    keys, starts = np.unique(high, return_index=True)
    bounds = np.append(starts, len(values))
    return [(int(k), ["a" if bounds[i + 1] - bounds[i] <= _ARRAY_MAX else "b", low[bounds[i]:bounds[i + 1]]])
            for i, k in enumerate(keys)]


def bitmap32_bytes(values) -> bytes:
    """What Java's RoaringBitmap32.bitmapOf(values).serialize() writes (values in 0..2^32-1)."""
    values = np.asarray(values, dtype=np.int64).reshape(-1) & 0xFFFFFFFF
    return write_rbm32({k: (_run_optimize(c[0], c[1], keep_runs=False), c[1]) for k, c in _containers_of(values)})


def bitmap64_bytes(values) -> bytes:
    """What Java's RoaringBitmap64.bitmapOf(values).serialize() writes (values taken as
    unsigned 64-bit numbers; their order decides the layout, as in Java)."""
    values = np.asarray(values, dtype=np.int64).reshape(-1).view(np.uint64)
    bitmap = _Bitmap64()
    _, first_seen = np.unique(values >> np.uint64(16), return_index=True)
    order = np.argsort(first_seen, kind="stable")  # high keys in the order values bring them
    containers = _containers_of(values)
    for high, container in (containers[i] for i in order):
        key = int(high).to_bytes(6, "big")
        leaf = _Leaf(key, bitmap.add_container(container))
        bitmap.root = _art_insert(bitmap.root, leaf, 0)
        bitmap.key_count += 1
        bitmap.leaves[key] = leaf
    bitmap.run_optimize()
    return write_rbm64(bitmap)


def bitmap32_values(data: bytes) -> np.ndarray:
    """The values (uint32, ascending) of a serialised 32-bit roaring bitmap; ValueError if it is not one."""
    containers = read_rbm32(data)
    parts = [(np.uint32(k) << np.uint32(16)) | v.astype(np.uint32) for k, (_, v) in sorted(containers.items())]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)


def bitmap64_values(data: bytes) -> np.ndarray:
    """The values (uint64, ascending) of a Roaring64Bitmap as Java serialises it."""
    bitmap = read_rbm64(data)
    parts = [(np.uint64(int.from_bytes(key, "big")) << np.uint64(16))
             | bitmap.container(leaf.container)[1].astype(np.uint64) for key, leaf in sorted(bitmap.leaves.items())]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
