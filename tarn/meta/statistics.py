"""Table statistics records (FORMAT.md section 9): the JSON of `statistics/stat-<uuid>-<n>`
and the text form of column minima and maxima.

A statistics file holds `snapshotId`, `schemaId`, `mergedRecordCount`, `mergedRecordSize` and
`colStats` (column name -> `colId`, `distinctCount`, `min`, `max`, `nullCount`, `avgLen`,
`maxLen`); absent values are left out, never written as null. `min` and `max` are strings: what
Paimon's `Serializer.serializeToString` makes of the internal value, read back with the column
type of schema `schemaId`:

| type | text |
|---|---|
| BOOLEAN | `true` / `false` (read: `true` in any case is true, anything else false) |
| TINYINT .. BIGINT | decimal |
| FLOAT, DOUBLE | Java `Float.toString` / `Double.toString` (`1.1`, `1.0E-5`, `NaN`, `-Infinity`) |
| DECIMAL(p, s) | plain text with the scale kept (`-12.30`); read back rounded HALF_UP to s |
| CHAR, VARCHAR | the text itself |
| DATE | days since 1970-01-01 (`-1`, `19782`) |
| TIME | milliseconds of the day |
| TIMESTAMP(p), TIMESTAMP_LTZ(p) | `yyyy-MM-dd HH:mm:ss` and 9 fraction digits trimmed of trailing zeros down to p (`2024-01-01 00:00:00.000` at p = 3); LTZ as its UTC wall clock |

Paimon has no text form for BINARY/VARBINARY and nested types (its serializers throw), so
their `min`/`max` are never written, and are ignored when read.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from tarn.errors import CorruptFile
from tarn.types import DataField, DataType, to_arrow_type

INTEGER_BOUNDS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
TEXT_ROOTS = frozenset({"CHAR", "VARCHAR"})
BINARY_ROOTS = frozenset({"BINARY", "VARBINARY"})
TIMESTAMP_ROOTS = frozenset({"TIMESTAMP", "TIMESTAMP_LTZ"})
MIN_MAX_ROOTS = frozenset({"BOOLEAN", *INTEGER_BOUNDS, "FLOAT", "DOUBLE", "DECIMAL", *TEXT_ROOTS, "DATE",
                           "TIME", *TIMESTAMP_ROOTS})

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
# Paimon's DEFAULT_TIMESTAMP_FORMATTER: a date, then either " H:m:s[.f]" or "'T'H:m[:s[.f]]"
_TIMESTAMP_TEXT = re.compile(
    r"(-?\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{0,9}))?)"
    r"|(?:T(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?))?")


def has_text_form(t: DataType) -> bool:
    """Whether Paimon can write (and read) `min`/`max` of this type."""
    return t.root in MIN_MAX_ROOTS


# ---------------------------------------------------------------------------------------------
# values <-> Java text


def java_float_text(value: float, single: bool = False) -> str:
    """Java's `Float.toString` (single) / `Double.toString`: the shortest digits that read back
    to the same value, plain between 1e-3 and 1e7, else `d.dddE<n>`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    number = np.float32(value) if single else np.float64(value)
    mantissa, exponent_text = np.format_float_scientific(number, unique=True).split("e")
    exponent = int(exponent_text)
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    if len(digits) == 1:  # Java shows two digits: the two-digit decimal closest to the value
        exact = abs(decimal.Decimal(float(number)))
        two = exact.scaleb(1 - exponent).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_EVEN)
        if 10 <= two < 100 and int(two) % 10:
            digits = str(int(two))
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[:exponent + 1].ljust(exponent + 1, "0")
            return f"{sign}{whole}.{digits[exponent + 1:] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def parse_java_float(text: str) -> float:
    """`Double.valueOf` / `Float.valueOf`: decimal or hex text, `NaN`, `[+-]Infinity`, an
    optional type suffix (`1.5f`, `2d`)."""
    s = text.strip()
    if s and s[-1] in "fFdD" and not s.lower().endswith("infinity"):
        s = s[:-1]
    body = s.lstrip("+-")
    if body == "NaN":
        return math.nan
    if body == "Infinity":
        return -math.inf if s.startswith("-") else math.inf
    if body.lower().startswith("0x"):
        return float.fromhex(s)
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        raise ValueError(f"not a Java floating-point number: {text!r}")
    return float(s)


def timestamp_text(nanos: int, precision: int) -> str:
    """Paimon's `DateTimeUtils.formatTimestamp` of a wall clock given as nanoseconds since
    1970-01-01T00:00: `yyyy-MM-dd HH:mm:ss`, then the 9-digit fraction with trailing zeros
    removed while it is longer than `precision` (nothing when it becomes empty)."""
    seconds, fraction = divmod(nanos, 1_000_000_000)
    wall = _EPOCH + dt.timedelta(seconds=seconds)
    digits = f"{fraction:09d}"
    while len(digits) > precision and digits.endswith("0"):
        digits = digits[:-1]
    text = (f"{wall.year:04d}-{wall.month:02d}-{wall.day:02d} "
            f"{wall.hour:02d}:{wall.minute:02d}:{wall.second:02d}")
    return f"{text}.{digits}" if digits else text


def parse_timestamp_text(text: str, precision: int) -> int:
    """Nanoseconds since 1970-01-01T00:00 of a timestamp Paimon's `parseTimestampData` reads,
    the fraction cut down to `precision` digits (floor, as Paimon does)."""
    match = _TIMESTAMP_TEXT.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a Paimon timestamp: {text!r}")
    g = match.groups()
    year, month, day = int(g[0]), int(g[1]), int(g[2])
    hour, minute, second, fraction = (g[3], g[4], g[5], g[6]) if g[3] is not None else (g[7], g[8], g[9], g[10])
    wall = dt.datetime(year, month, day, int(hour or 0), int(minute or 0), int(second or 0))
    nanos = int((fraction or "").ljust(9, "0"))
    step = 10 ** (9 - max(0, min(precision, 9)))
    nanos -= nanos % step
    delta = wall - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + nanos


def _decimal_of(text: str, t: DataType) -> decimal.Decimal | None:
    """`Decimal.fromBigDecimal(new BigDecimal(text), p, s)`: rounded HALF_UP to the scale, None
    when the precision overflows."""
    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        raise ValueError(f"not a decimal: {text!r}") from None
    if not value.is_finite():
        raise ValueError(f"not a decimal: {text!r}")
    with decimal.localcontext() as context:
        context.prec = 100
        value = value.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP)
    return None if len(value.as_tuple().digits) > t.precision else value


def text_of(value, t: DataType) -> str | None:
    """The Java text of one Python value of column type `t` (as pyarrow's `as_py` gives it, or
    the raw int a DATE, TIME or TIMESTAMP holds); None for types Paimon cannot write."""
    if value is None or not has_text_form(t):
        return None
    root = t.root
    if root == "BOOLEAN":
        return "true" if value else "false"
    if root in INTEGER_BOUNDS:
        return str(int(value))
    if root in ("FLOAT", "DOUBLE"):
        return java_float_text(float(value), single=root == "FLOAT")
    if root == "DECIMAL":
        return format(decimal.Decimal(value), "f")
    if root in TEXT_ROOTS:
        return str(value)
    if root == "DATE":
        return str(value if isinstance(value, int) else (value - _EPOCH_DATE).days)
    if root == "TIME":
        if isinstance(value, int):
            return str(value)
        return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)
    return timestamp_text(_wall_nanos(value), 6 if t.precision is None else t.precision)


def _wall_nanos(value) -> int:
    """Nanoseconds since the epoch of a datetime's wall clock (an aware one in UTC)."""
    if isinstance(value, int):
        return value
    nanos = getattr(value, "nanosecond", 0)
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    delta = dt.datetime(value.year, value.month, value.day, value.hour, value.minute, value.second) - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + value.microsecond * 1000 + nanos


def value_of(text: str | None, t: DataType):
    """The Python value (as a scan of the column returns it) of a Java text; None when absent,
    for types without a text form, and for a DECIMAL that overflows (Paimon reads null).
    Raises ValueError for text Paimon could not parse."""
    if text is None or not has_text_form(t):
        return None
    root = t.root
    if root == "BOOLEAN":
        return text.lower() == "true"
    if root in INTEGER_BOUNDS:
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ValueError(f"not an integer: {text!r}")
        number, bits = int(text), INTEGER_BOUNDS[root]
        if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
            raise ValueError(f"{text} is out of the range of {root}")
        return number
    if root == "FLOAT":
        return float(np.float32(parse_java_float(text)))
    if root == "DOUBLE":
        return parse_java_float(text)
    if root == "DECIMAL":
        return _decimal_of(text, t)
    if root in TEXT_ROOTS:
        return text
    arrow = to_arrow_type(t)
    if root in ("DATE", "TIME"):
        if not re.fullmatch(r"[+-]?\d+", text.strip()):
            raise ValueError(f"not an integer: {text!r}")
        number = int(text)
        if root == "TIME" and arrow.unit == "us":
            number *= 1000
        return pa.scalar(number, arrow).as_py()
    nanos = parse_timestamp_text(text, 6 if t.precision is None else t.precision)
    return pa.scalar(nanos // _NANOS[arrow.unit], arrow).as_py()


# ---------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class ColStats:
    """One column's statistics. `min`/`max` are typed (None when absent or not readable);
    `serialized_min`/`serialized_max` keep the file's text."""

    col_id: int
    distinct_count: int | None = None
    min: object = None
    max: object = None
    null_count: int | None = None
    avg_len: int | None = None
    max_len: int | None = None
    serialized_min: str | None = None
    serialized_max: str | None = None

    @classmethod
    def of(cls, col_id: int, t: DataType, distinct_count=None, min=None, max=None, null_count=None,
           avg_len=None, max_len=None) -> "ColStats":
        """Stats with typed min/max; their text is made here (dropped for types without one)."""
        low, high = text_of(min, t), text_of(max, t)
        return cls(col_id, distinct_count, value_of(low, t), value_of(high, t), null_count, avg_len, max_len,
                   low, high)

    def to_dict(self) -> dict:
        out: dict = {"colId": self.col_id}
        for key, value in (("distinctCount", self.distinct_count), ("min", self.serialized_min),
                           ("max", self.serialized_max), ("nullCount", self.null_count),
                           ("avgLen", self.avg_len), ("maxLen", self.max_len)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, obj: dict, where: str) -> "ColStats":
        if not isinstance(obj, dict):
            raise CorruptFile(f"{where} is not a JSON object")
        col_id = obj.get("colId")
        if not isinstance(col_id, int) or isinstance(col_id, bool):
            raise CorruptFile(f"{where} has no integer colId")
        longs = {}
        for key in ("distinctCount", "nullCount", "avgLen", "maxLen"):
            value = obj.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise CorruptFile(f"{where}: {key} must be an integer, got {value!r}")
            longs[key] = value
        texts = {}
        for key in ("min", "max"):
            value = obj.get(key)
            if value is not None and not isinstance(value, str):
                raise CorruptFile(f"{where}: {key} must be a string, got {value!r}")
            texts[key] = value
        return cls(col_id, longs["distinctCount"], None, None, longs["nullCount"], longs["avgLen"],
                   longs["maxLen"], texts["min"], texts["max"])

    def typed(self, t: DataType, where: str) -> "ColStats":
        """These stats with `min`/`max` read from their text with column type `t`."""
        try:
            return replace(self, min=value_of(self.serialized_min, t), max=value_of(self.serialized_max, t))
        except (ValueError, OverflowError, decimal.InvalidOperation) as exc:
            raise CorruptFile(f"{where}: min/max cannot be read as {t}: {exc}") from None


@dataclass(frozen=True)
class Statistics:
    """What one statistics file says (Paimon's `Statistics`)."""

    snapshot_id: int
    schema_id: int
    merged_record_count: int | None = None
    merged_record_size: int | None = None
    col_stats: dict[str, ColStats] = field(default_factory=dict)

    def to_dict(self) -> dict:
        out: dict = {"snapshotId": self.snapshot_id, "schemaId": self.schema_id}
        if self.merged_record_count is not None:
            out["mergedRecordCount"] = self.merged_record_count
        if self.merged_record_size is not None:
            out["mergedRecordSize"] = self.merged_record_size
        out["colStats"] = {name: stats.to_dict() for name, stats in self.col_stats.items()}
        return out

    def to_json(self) -> str:
        """Jackson's default pretty printer, as Java writes it; non-ASCII text kept as is."""
        return json.dumps(self.to_dict(), indent=2, separators=(",", " : "), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<statistics>") -> "Statistics":
        """The file's records with min/max still as text (`typed` reads them)."""
        try:
            obj = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptFile(f"statistics file {source} is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise CorruptFile(f"statistics file {source} does not hold a JSON object")
        ids = {}
        for key in ("snapshotId", "schemaId"):
            value = obj.get(key)
            if not isinstance(value, int) or isinstance(value, bool):
                raise CorruptFile(f"statistics file {source} has no integer {key}")
            ids[key] = value
        counts = {}
        for key in ("mergedRecordCount", "mergedRecordSize"):
            value = obj.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise CorruptFile(f"statistics file {source}: {key} must be an integer, got {value!r}")
            counts[key] = value
        raw = obj.get("colStats") or {}
        if not isinstance(raw, dict):
            raise CorruptFile(f"statistics file {source}: colStats is not a JSON object")
        col_stats = {name: ColStats.from_dict(value, f"statistics file {source}, column {name!r}")
                     for name, value in raw.items()}
        return cls(ids["snapshotId"], ids["schemaId"], counts["mergedRecordCount"], counts["mergedRecordSize"],
                   col_stats)

    def typed(self, fields: list[DataField], source: str = "<statistics>") -> "Statistics":
        """The statistics with min/max read with the types of `fields` (the columns of schema
        `schema_id`); a column the schema lacks is an error, as in Paimon."""
        by_name = {f.name: f for f in fields}
        typed = {}
        for name, stats in self.col_stats.items():
            f = by_name.get(name)
            if f is None:
                raise CorruptFile(f"statistics file {source} has stats of column {name!r}, which schema "
                                  f"{self.schema_id} does not have (columns: {list(by_name)})")
            typed[name] = stats.typed(f.type, f"statistics file {source}, column {name!r}")
        return replace(self, col_stats=typed)
