"""Column statistics of data files (SimpleStats, FORMAT.md §5), computed on whole Arrow columns.

Modes (Java's SimpleColStatsCollector): `none` (no stats at all), `counts` (null count only),
`full` (exact min/max), `truncate(n)` (strings and bytes cut to n code points / bytes; the max
gets its last kept code point / byte incremented, and min/max become null when no increment is
possible). Nested types never get min/max.

Java takes parquet/orc stats from the file footer, which leaves some gaps; `collect_stats`
reproduces them when told the format:
- parquet: nested columns have no stats at all (null count null too); INT96 timestamps
  (precision > 6) have no min/max;
- orc: BINARY/VARBINARY have no min/max.
Floats compare like Java's `Float.compareTo`: NaN is the largest value, -0.0 < 0.0.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import deserialize_row, serialize_row
from tarn.errors import InvalidOption
from tarn.meta.manifest import SimpleStats
from tarn.types import DataField, DataType, type_traits, with_nullable

DEFAULT_STATS_MODE = "truncate(16)"
SYSTEM_STATS_MODE = "truncate(128)"
KEY_FIELD_PREFIX = "_KEY_"
SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})

_TRUNCATE = re.compile(r"truncate\((\d+)\)", re.IGNORECASE)
_MAX_CODE_POINT = 0x10FFFF


def parse_mode(mode: str, option: str = "metadata.stats-mode") -> str:
    """The normalised form of a stats mode (`none`, `counts`, `full`, `truncate(n)`)."""
    text = mode.strip()
    if text.lower() in ("none", "counts", "full"):
        return text.lower()
    match = _TRUNCATE.fullmatch(text)
    if match and int(match.group(1)) > 0:
        return f"truncate({int(match.group(1))})"
    raise InvalidOption(f"{option}: unexpected stats mode {mode!r} "
                        "(expected none, counts, full or truncate(n) with n > 0)")


def is_system_field(name: str) -> bool:
    """`_KEY_*` columns and Paimon's system columns (`_SEQUENCE_NUMBER`, `_VALUE_KIND`, ...)."""
    return name.startswith(KEY_FIELD_PREFIX) or name in SYSTEM_FIELD_NAMES


def _level_mode(options: dict[str, str], level: int | None) -> str | None:
    """The `metadata.stats-mode.per.level` entry (`'0:none,1:full'`) of `level`, if any."""
    raw = options.get("metadata.stats-mode.per.level")
    if level is None or not raw:
        return None
    for entry in raw.split(","):
        key, _, value = entry.partition(":")
        if key.strip() == str(level):
            return value.strip()
    return None


def stats_modes(fields: list[DataField], options: dict[str, str], level: int | None = None,
                key_names: tuple[str, ...] | list[str] = ()) -> list[str]:
    """One stats mode per field, as Java's StatsCollectorFactories resolves them.

    `fields.<col>.stats-mode` wins; otherwise system and `_KEY_*` columns (and, in thin mode,
    value columns named in `key_names` as `_KEY_<col>`) use `truncate(128)`; otherwise the
    level's mode or `metadata.stats-mode`, with columns past `metadata.stats-keep-first-n-columns`
    (system columns not counted) set to `none`."""
    default_option = "metadata.stats-mode"
    default = _level_mode(options, level) or options.get(default_option, DEFAULT_STATS_MODE)
    default = parse_mode(default, default_option)
    raw_keep = options.get("metadata.stats-keep-first-n-columns", "-1")
    try:
        keep_first = int(raw_keep)
    except ValueError:
        raise InvalidOption(f"metadata.stats-keep-first-n-columns: {raw_keep!r} is not an integer") \
            from None
    modes, counted = [], 0
    for f in fields:
        option = f"fields.{f.name}.stats-mode"
        if option in options:
            modes.append(parse_mode(options[option], option))
            counted += 1
        elif is_system_field(f.name) or KEY_FIELD_PREFIX + f.name in key_names:
            modes.append(SYSTEM_STATS_MODE)
        else:
            modes.append("none" if 0 <= keep_first <= counted else default)
            counted += 1
    return modes


# ---------------------------------------------------------------------------------------------
# Truncation (Java TruncateSimpleColStatsCollector)


def truncate_min(value, length: int):
    """A value <= `value`: strings cut to `length` code points, bytes to `length` bytes."""
    if isinstance(value, (str, bytes)):
        return value[:length]
    return value


def truncate_max(value, length: int):
    """A value >= `value` of at most `length` code points / bytes; None if there is none."""
    if isinstance(value, str):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            code_point = ord(value[i]) + 1
            if code_point <= _MAX_CODE_POINT:
                if 0xD800 <= code_point <= 0xDFFF:  # no UTF-8 form; the next scalar value is
                    code_point = 0xE000
                return value[:i] + chr(code_point)
        return None
    if isinstance(value, bytes):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            if value[i] != 0xFF:
                return value[:i] + bytes([value[i] + 1])
        return None
    return value


# ---------------------------------------------------------------------------------------------
# Collection


def _no_min_max(t: DataType, file_format: str | None) -> bool:
    if not type_traits(t).stats:  # nested types, VARIANT: Java keeps no min/max
        return True
    if file_format == "parquet" and t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return t.precision > 6
    if file_format == "orc":
        return t.root in ("BINARY", "VARBINARY")
    return False


def _float_min_max(column, low, high):
    """Java's Float.compareTo order: NaN above everything, -0.0 below 0.0.

    `low`/`high` come from pc.min_max, which skips NaN and does not order the zeros."""
    if low == 0.0 or high == 0.0:
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        zeros = np.concatenate([c.filter(pc.equal(c, 0)).to_numpy() for c in chunks])
        if low == 0.0:
            low = -0.0 if np.signbit(zeros).any() else 0.0
        if high == 0.0:
            high = 0.0 if (~np.signbit(zeros)).any() else -0.0
    if pc.any(pc.is_nan(column)).as_py():
        return (math.nan if low is None else low), math.nan
    return low, high


def _min_max(column, t: DataType):
    """(min, max) of a column as Python values; (None, None) if it holds no non-null value."""
    if len(column) == column.null_count:
        return None, None
    result = pc.min_max(column)
    low, high = result["min"].as_py(), result["max"].as_py()
    if t.root in ("FLOAT", "DOUBLE"):
        low, high = _float_min_max(column, low, high)
    return low, high


def _raw_stats(column, t: DataType, mode: str, file_format: str | None):
    """(exact min, exact max, null count) of one column as `mode` keeps them (None where it
    keeps nothing); truncation comes when the stats are finished."""
    if mode == "none":
        return None, None, None
    if t.root in ("GEOMETRY", "GEOGRAPHY"):  # Java keeps the null count only
        return None, None, column.null_count
    if file_format == "parquet" and not type_traits(t).stats:
        return None, None, None
    null_count = column.null_count
    if mode == "counts" or _no_min_max(t, file_format):
        return None, None, null_count
    low, high = _min_max(column, t)
    return low, high, null_count


def _order_key(value):
    """Java's compareTo order for merging minima and maxima: floats with NaN largest and -0.0
    below 0.0; other values in their natural order."""
    if isinstance(value, float):
        return (1, 0.0, 0) if math.isnan(value) else (0, value, 0 if math.copysign(1.0, value) < 0 else 1)
    return value


def _truncated(low, high, mode: str):
    if mode.startswith("truncate(") and (low is not None or high is not None):
        length = int(mode[len("truncate("):-1])
        low, high = truncate_min(low, length), truncate_max(high, length)
        if high is None:
            low = None
    return low, high


class RunningStats:
    """SimpleStats of columns (in `fields` order, one mode each) collected chunk by chunk:
    exact minima, maxima and null counts merged as chunks come, the modes' truncation applied
    when `result` is asked for (the same stats as `collect_stats` of all chunks at once).

    Pass `file_format` to reproduce the gaps of Java's footer-based stats (module docstring);
    without it the stats are exact per mode, as Java's per-record (avro) collectors give."""

    def __init__(self, fields: list[DataField], modes: list[str], file_format: str | None = None):
        if len(fields) != len(modes):
            raise ValueError(f"RunningStats: {len(fields)} fields, {len(modes)} modes")
        self.fields = fields
        self.modes = [parse_mode(m) for m in modes]
        self.file_format = file_format.lower() if file_format else None
        self.lows: list = [None] * len(fields)
        self.highs: list = [None] * len(fields)
        self.nulls: list = [None] * len(fields)

    def add(self, data: pa.Table) -> None:
        if data.num_columns != len(self.fields):
            raise ValueError(f"RunningStats: {data.num_columns} columns, {len(self.fields)} fields")
        for i, (column, f, mode) in enumerate(zip(data.columns, self.fields, self.modes)):
            low, high, null_count = _raw_stats(column, f.type, mode, self.file_format)
            if null_count is not None:
                self.nulls[i] = (self.nulls[i] or 0) + null_count
            if low is not None and (self.lows[i] is None or _order_key(low) < _order_key(self.lows[i])):
                self.lows[i] = low
            if high is not None and (self.highs[i] is None or _order_key(high) > _order_key(self.highs[i])):
                self.highs[i] = high

    def result(self) -> SimpleStats:
        mins, maxs = [], []
        for low, high, mode in zip(self.lows, self.highs, self.modes):
            low, high = _truncated(low, high, mode)
            mins.append(low)
            maxs.append(high)
        types = [with_nullable(f.type, True) for f in self.fields]
        return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), list(self.nulls))


def collect_stats(data: pa.Table, fields: list[DataField], modes: list[str],
                  file_format: str | None = None) -> SimpleStats:
    """SimpleStats of the columns of `data` (in `fields` order) under one mode per field.

    Pass `file_format` to reproduce the gaps of Java's footer-based stats (module docstring);
    without it the stats are exact per mode, as Java's per-record (avro) collectors give."""
    if not (data.num_columns == len(fields) == len(modes)):
        raise ValueError(f"collect_stats: {data.num_columns} columns, {len(fields)} fields, "
                         f"{len(modes)} modes")
    stats = RunningStats(fields, modes, file_format)
    stats.add(data)
    return stats.result()


def decode_stats(stats: SimpleStats, fields: list[DataField]) -> tuple[list, list, list]:
    """(mins, maxs, null counts) as Python values, one per field; unknown entries are None."""
    types = [with_nullable(f.type, True) for f in fields]
    mins = _decode_row(stats.min_values, types)
    maxs = _decode_row(stats.max_values, types)
    nulls = list(stats.null_counts) if stats.null_counts else []
    nulls += [None] * (len(fields) - len(nulls))
    return mins, maxs, nulls[:len(fields)]


def _decode_row(data: bytes, types: list[DataType]) -> list:
    """Values of a stats row; an arity-0 row (empty stats) decodes to all-None."""
    if int.from_bytes(data[:4], "big") == 0:
        return [None] * len(types)
    return deserialize_row(data, types)
