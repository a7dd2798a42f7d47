"""Apache DataSketches values as Java merges them: HLL and theta sketches read, and unions
whose serialised images are Java's (through the `datasketches` C++ library). The hll_sketch /
theta_sketch aggregate functions (tarn/lsm/field_aggs.py) fold a key's values through these.
"""

from __future__ import annotations

from tarn.codec.roaring import BadValue
from tarn.errors import TarnError


# Apache DataSketches: Java's HllSketchUtil.union and ThetaSketch.union, through the C++ library
# (`datasketches`), whose serialised images are Java's.


def _sketches():
    try:
        import datasketches
    except ImportError as e:  # pragma: no cover - a dependency of tarn
        raise TarnError("hll_sketch and theta_sketch need the 'datasketches' package") from e
    return datasketches


def read_hll(data: bytes):
    ds = _sketches()
    try:
        ds.hll_sketch.deserialize(data)
    except Exception as e:  # noqa: BLE001 - the library raises RuntimeError and others
        raise BadValue(str(e)) from None
    return data


def merge_hll(acc: bytes, value: bytes) -> bytes:
    """Union.heapify(value) (a union of the value's lgK holding it), updated with acc, HLL_4."""
    ds = _sketches()
    other = ds.hll_sketch.deserialize(value)
    union = ds.hll_union(other.lg_config_k)
    union.update(other)
    union.update(ds.hll_sketch.deserialize(acc))
    return union.get_result(ds.tgt_hll_type.HLL_4).serialize_compact()


def read_theta(data: bytes):
    ds = _sketches()
    try:
        ds.compact_theta_sketch.deserialize(data)
    except Exception as e:  # noqa: BLE001
        raise BadValue(str(e)) from None
    return data


def merge_theta(acc: bytes, value: bytes) -> bytes:
    """A default union (4096 nominal entries) of acc and value, compact and ordered. Java writes
    1.0 as the float `p` of a compact sketch's preamble (bytes 12..15) where C++ writes 0, and
    no seed hash (bytes 6..7) in an empty sketch and flags a single-item one (bit 5)."""
    ds = _sketches()
    union = ds.theta_union(12)
    union.update(ds.compact_theta_sketch.deserialize(acc))
    union.update(ds.compact_theta_sketch.deserialize(value))
    image = bytearray(union.get_result(True).serialize())
    if image[0] & 0x3F >= 2:
        image[12:16] = b"\x00\x00\x80\x3f"
    if image[5] & 0x04:
        image[6:8] = b"\x00\x00"
    elif image[0] & 0x3F == 1:
        image[5] |= 0x20  # Java's SINGLEITEM flag
    return bytes(image)
