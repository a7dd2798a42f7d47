"""The row order of clustered append tables (`clustering.columns`, `clustering.strategy`), as Java
Paimon 2.0 computes it (append/cluster/{OrderSorter,ZorderSorter,HibertSorter}, ZIndexer,
ZOrderByteUtils, HilbertIndexer with davidmoten's hilbert-curve 0.2.2), vectorised over Arrow.

- `order`: the columns ascending, NULLs first (strings and binaries byte-wise).
- `zorder`: each column as 8 bytes (numbers with the sign bit flipped, floats by Paimon's
  shift-by-31 transform, booleans 0x81/0x00, decimals by their unscaled two's-complement bytes,
  timestamps as epoch millis) or `zorder.var-length-contribution` bytes (strings and binaries,
  truncated or zero-padded), NULL as zeros; the bits interleaved column by column from the
  most significant; the key compared as unsigned bytes.
- `hilbert`: each column as an int64 (NULL: Long.MAX_VALUE; strings and binaries: their first 8
  bytes, shorter ones left-padded; tinyint unsigned; booleans MAX/0; floats by their bits;
  decimals truncated to a long; timestamps as epoch millis), the 63-bit Hilbert index of the
  point (Skilling's transform), as BigInteger bytes padded or cut to 63 bytes.

`auto` picks order for one column, zorder for fewer than five, hilbert otherwise. Rows with
equal keys keep their order (Java's sort leaves it unspecified).
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import InvalidOption
from tarn.options import Options
from tarn.types import type_traits

STRATEGIES = ("order", "zorder", "hilbert")
_SIGN = np.uint64(1 << 63)
_FIXED_TYPES = (pa.types.is_integer, pa.types.is_date, pa.types.is_time, pa.types.is_timestamp,
                pa.types.is_floating, pa.types.is_boolean, pa.types.is_decimal)


def columns_and_strategy(options: Options, table_name: str) -> tuple[list[str], str]:
    """The clustering columns and the strategy `auto` resolves to (Java's clusteringStrategy)."""
    columns = [c.strip() for c in (options.get("clustering.columns") or "").split(",")]
    columns = [c for c in columns if c] if any(columns) else []
    strategy = options.get("clustering.strategy") or "auto"
    if strategy == "auto":
        strategy = "order" if len(columns) == 1 else "zorder" if len(columns) < 5 else "hilbert"
    strategy = strategy.lower()
    if strategy not in (*STRATEGIES, "none"):
        raise InvalidOption(f"table {table_name}: option 'clustering.strategy' = '{strategy}' is not one of "
                            f"auto, {', '.join(STRATEGIES)}, none")
    if strategy == "hilbert" and len(columns) < 2:
        raise InvalidOption(f"table {table_name}: 'clustering.strategy' = 'hilbert' needs at least two "
                            "'clustering.columns'")
    return columns, strategy


def check_columns(columns: list[str], schema_fields, table_name: str) -> None:
    """Clustering columns must exist and have a type the sorters take."""
    types = {f.name: f.type for f in schema_fields}
    for name in columns:
        if name not in types:
            raise InvalidOption(f"table {table_name}: 'clustering.columns' names unknown column '{name}'")
        if not type_traits(types[name]).orderable:
            raise InvalidOption(f"table {table_name}: clustering column '{name}' has type {types[name].root}, "
                                "which has no order")


def order_of(rows: pa.Table, columns: list[str], strategy: str, var_length: int = 8) -> np.ndarray:
    """The row indices of `rows` in clustered order."""
    if rows.num_rows < 2 or not columns or strategy == "none":
        return np.arange(rows.num_rows)
    if strategy == "order":
        return pc.sort_indices(rows, sort_keys=[(c, "ascending", "at_start") for c in columns]).to_numpy()
    keys = zorder_keys(rows, columns, var_length) if strategy == "zorder" else hilbert_keys(rows, columns)
    return sort_by_bytes(keys)


def sorts_writes(schema) -> bool:
    """Do batch writes of this table sort their rows (Java's Flink and Spark batch sinks)? Append
    tables without buckets with clustering columns, unless incremental clustering is on without
    `clustering.incremental.optimize-write`."""
    options = schema.shape.options
    if schema.primary_keys or schema.shape.bucket_mode.value != "BUCKET_UNAWARE" or not options.get("clustering.columns"):
        return False
    return not options.bool("clustering.incremental") or bool(options.bool("clustering.incremental.optimize-write"))


def sorted_rows(rows: pa.Table, options: Options, table_name: str) -> pa.Table:
    """`rows` in the table's clustered order."""
    columns, strategy = columns_and_strategy(options, table_name)
    return rows.take(pa.array(order_of(rows, columns, strategy, options.int("zorder.var-length-contribution") or 8)))


def sort_by_bytes(keys: np.ndarray) -> np.ndarray:
    """Stable order of the rows of a (rows x width) uint8 matrix compared as unsigned bytes."""
    return np.lexsort(keys.T[::-1]) if keys.shape[1] else np.arange(keys.shape[0])


# ---------------------------------------------------------------------------------------------
# z-order


def zorder_keys(rows: pa.Table, columns: list[str], var_length: int) -> np.ndarray:
    parts = [_z_bytes(rows.column(c).combine_chunks(), var_length) for c in columns]
    return interleave(parts)


def interleave(parts: list[np.ndarray]) -> np.ndarray:
    """ZOrderByteUtils.interleaveBits: byte b of each column, bit 7..0, columns in order
    (a column shorter than b skipped), the output filled from its most significant bit."""
    rows = parts[0].shape[0]
    bits = []
    for b in range(max(p.shape[1] for p in parts)):
        here = [np.unpackbits(p[:, b:b + 1], axis=1) for p in parts if p.shape[1] > b]
        # for bit 7..0: the bit of each column in turn
        bits.append(np.stack(here, axis=2).reshape(rows, -1))
    return np.packbits(np.concatenate(bits, axis=1), axis=1)


def _z_bytes(array: pa.Array, var_length: int) -> np.ndarray:
    kind = array.type
    valid = ~array.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
            or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return _prefix_bytes(array, var_length, left_pad=False) * valid[:, None]
    if pa.types.is_boolean(kind):
        out = np.zeros((len(array), 8), dtype=np.uint8)
        out[:, 0] = np.where(pc.fill_null(array, False).to_numpy(zero_copy_only=False), 0x81, 0)
        return out
    if pa.types.is_floating(kind):
        bits = _double_bits(array)
        bits = bits ^ ((bits.view(np.int64) >> 31).view(np.uint64) | _SIGN)
        return _big_endian(bits) * valid[:, None]
    if pa.types.is_decimal(kind):
        return _decimal_bytes(array, valid)
    return _big_endian(_as_int64(array).view(np.uint64) ^ _SIGN) * valid[:, None]


def _decimal_bytes(array: pa.Array, valid: np.ndarray) -> np.ndarray:
    """BigInteger.toByteArray of the unscaled value: first 8 bytes, or right-padded (few rows
    have a decimal clustering column; each value is turned into its bytes once)."""
    out = np.zeros((len(array), 8), dtype=np.uint8)
    scale = array.type.scale
    for i, value in enumerate(array.to_pylist()):
        if value is None:
            continue
        unscaled = int(value.scaleb(scale, context=decimal.Context(prec=80)))
        magnitude = unscaled if unscaled >= 0 else ~unscaled  # Java's bitLength
        raw = unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)[:8]
        out[i, :len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return out


# ---------------------------------------------------------------------------------------------
# hilbert


def hilbert_keys(rows: pa.Table, columns: list[str]) -> np.ndarray:
    points = [_hilbert_long(rows.column(c).combine_chunks()) for c in columns]
    return hilbert_index_bytes(np.stack(points, axis=1) if points else np.zeros((rows.num_rows, 0), np.uint64))


def _hilbert_long(array: pa.Array) -> np.ndarray:
    kind = array.type
    null = array.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
            or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        raw = _prefix_bytes(array, 8, left_pad=True)
        value = raw.view(">u8").reshape(-1).astype(np.uint64)
    elif pa.types.is_boolean(kind):
        value = np.where(pc.fill_null(array, False).to_numpy(zero_copy_only=False), np.uint64((1 << 63) - 1),
                         np.uint64(0))
    elif pa.types.is_floating(kind):
        value = _double_bits(array)
    elif pa.types.is_decimal(kind):
        value = np.array([0 if v is None else int(v) & ((1 << 64) - 1) for v in array.to_pylist()], dtype=np.uint64)
    elif pa.types.is_int8(kind):
        value = (_as_int64(array) & 0xFF).view(np.uint64)
    else:
        value = _as_int64(array).view(np.uint64)
    return np.where(null, np.uint64((1 << 63) - 1), value)


def hilbert_index_bytes(points: np.ndarray) -> np.ndarray:
    """The 63-byte keys of HilbertCurve.bits(63).dimensions(n).index(point) as Paimon pads them."""
    rows, n = points.shape
    x = points.astype(np.uint64) & np.uint64((1 << 63) - 1)
    top = np.uint64(1 << 62)
    q = top
    while q > 1:  # inverse undo
        p = q - np.uint64(1)
        for i in range(n):
            has = (x[:, i] & q) != 0
            t = (x[:, 0] ^ x[:, i]) & p
            x0 = np.where(has, x[:, 0] ^ p, x[:, 0] ^ t)
            xi = np.where(has, x[:, i], x[:, i] ^ t)
            x[:, 0] = x0
            if i:
                x[:, i] = xi
        q >>= np.uint64(1)
    for i in range(1, n):  # Gray encode
        x[:, i] ^= x[:, i - 1]
    t = np.zeros(rows, dtype=np.uint64)
    q = top
    while q > 1:
        t = np.where((x[:, n - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q >>= np.uint64(1)
    x ^= t[:, None]
    # bit b = 62..0, dimension 0..n-1: the index's bits from the most significant
    shifts = np.arange(62, -1, -1, dtype=np.uint64)
    bits = ((x[:, None, :] >> shifts[None, :, None]) & np.uint64(1)).astype(np.uint8).reshape(rows, -1)
    total = bits.shape[1]
    width = total // 8 + 1  # room for BigInteger's sign bit
    padded = np.zeros((rows, width * 8), dtype=np.uint8)
    padded[:, width * 8 - total:] = bits
    full = np.packbits(padded, axis=1)  # big-endian, width bytes
    # BigInteger.toByteArray: bitLength // 8 + 1 bytes; Paimon keeps the first 63 (left-pads shorter)
    nonzero = full != 0
    first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), width)
    high_bit = np.where(first < width, full[np.arange(rows), np.minimum(first, width - 1)] >= 0x80, False)
    minimal_len = np.where(first < width, width - first + high_bit.astype(np.int64), 1)
    start = width - minimal_len
    if width <= 63:
        out = np.zeros((rows, 63), dtype=np.uint8)
        out[:, 63 - width:] = full
        return out
    offsets = np.where(minimal_len > 63, start, width - 63)
    index = offsets[:, None] + np.arange(63)[None, :]
    return np.take_along_axis(np.pad(full, ((0, 0), (0, 63))), index, axis=1)


# ---------------------------------------------------------------------------------------------
# shared conversions


def _as_int64(array: pa.Array) -> np.ndarray:
    kind = array.type
    if pa.types.is_timestamp(kind):
        array = array.cast(pa.timestamp("ms", tz=kind.tz), safe=False)
    elif pa.types.is_date64(kind):
        array = array.cast(pa.int64())
    if pa.types.is_date32(kind) or pa.types.is_time32(kind):
        array = array.view(pa.int32())
    elif pa.types.is_timestamp(array.type) or pa.types.is_time64(kind) or pa.types.is_duration(kind):
        array = array.view(pa.int64())
    return pc.fill_null(array.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _double_bits(array: pa.Array) -> np.ndarray:
    values = pc.fill_null(array.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
    values = np.where(np.isnan(values), np.float64("nan"), values)  # Java canonicalises NaN
    bits = values.view(np.uint64).copy()
    bits[np.isnan(values)] = np.uint64(0x7FF8000000000000)
    return bits


def _big_endian(values: np.ndarray) -> np.ndarray:
    return values.astype(">u8").view(np.uint8).reshape(-1, 8)


def _prefix_bytes(array: pa.Array, width: int, left_pad: bool) -> np.ndarray:
    """The first `width` bytes of each value (UTF-8 for strings), zero-padded on the right (or,
    `left_pad`, on the left when shorter); NULL as zeros."""
    if pa.types.is_fixed_size_binary(array.type):
        array = array.cast(pa.binary())
    array = array.cast(pa.large_binary()) if not pa.types.is_large_binary(array.type) else array
    array = pc.fill_null(array, b"")
    lengths = pc.binary_length(array).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset:array.offset + len(array) + 1]
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8) if array.buffers()[2] is not None \
        else np.zeros(0, np.uint8)
    taken = np.minimum(lengths, width)
    column = np.arange(width)[None, :]
    source = offsets[:-1, None] + column
    inside = column < taken[:, None]
    if left_pad:
        shift = (width - taken)[:, None]
        target_inside = column >= shift
        source = offsets[:-1, None] + (column - shift)
        inside = target_inside
    values = data[np.clip(source, 0, max(len(data) - 1, 0))] if len(data) else np.zeros_like(source, np.uint8)
    return np.where(inside, values, 0).astype(np.uint8)


__all__ = ["columns_and_strategy", "check_columns", "order_of", "zorder_keys", "hilbert_keys", "hilbert_index_bytes",
           "interleave", "sort_by_bytes"]
