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
| FLOAT, DOUBLE | Java `Float.toString` / `Double.toString` of JDK 8-18 (`1.1`, `1.0E-5`, `NaN`, `-Infinity`) |
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
import struct
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


_N5_BITS = [(5 ** i).bit_length() for i in range(27)]


def java_float_text(value: float, single: bool = False) -> str:
    """Java's `Float.toString` (single) / `Double.toString` as JDK 8 to 18 write it (the JDKs
    Paimon 1.x runs on): plain between 1e-3 and 1e7, else `d.dddE<n>`, with the digits of
    their FloatingDecimal conversion (see `_java_digits`). The text reads back to the value; it
    is not always the shortest such text (`1e23` is `9.999999999999999E22`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, point = _java_digits(*_significand(abs(value), single))
    text = "".join(map(str, digits))
    if 0 < point < 8:
        whole = text[:point]
        if len(whole) < point:
            return f"{sign}{whole}{'0' * (point - len(whole))}.0"
        return f"{sign}{whole}.{text[point:] or '0'}"
    if -3 < point <= 0:
        return f"{sign}0.{'0' * -point}{text}"
    return f"{sign}{text[0]}.{text[1:] or '0'}E{point - 1}"


def _significand(value: float, single: bool) -> tuple[int, int, int]:
    """(significand with its leading one at bit 52, binary exponent, significant bits) of a
    positive finite number, subnormals normalised, as Java's FloatingDecimal takes them."""
    if single:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        exponent, fraction, width, shift_bits, bias = (bits >> 23) & 0xFF, bits & 0x7FFFFF, 32, 23, 127
    else:
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        exponent, fraction, width, shift_bits, bias = (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1), 64, 52, 1023
    if exponent == 0:
        leading = width - fraction.bit_length()
        shift = leading - (width - 1 - shift_bits)
        fraction <<= shift
        exponent = 1 - shift
        significant = width - leading
    else:
        fraction |= 1 << shift_bits
        significant = shift_bits + 1
    return fraction << (52 - shift_bits), exponent - bias, significant


def _estimate_decimal_exponent(fraction: int, binary_exponent: int) -> int:
    """floor(log10) estimated from the significand and binary exponent the way FloatingDecimal
    does (a double computation; at most one too high, which the digit loop corrects)."""
    mantissa = struct.unpack("<d", struct.pack("<Q", 0x3FF0000000000000 | (fraction & ((1 << 52) - 1))))[0]
    estimate = (mantissa - 1.5) * 0.289529654 + 0.176091259 + binary_exponent * 0.301029995663981
    return math.floor(estimate)


def _wrap(value: int, width: int | None) -> int:
    """`value` as a Java int (32) or long (64) would hold it; unchanged for width None."""
    if width is None:
        return value
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _java_digits(fraction: int, binary_exponent: int, significant: int) -> tuple[list[int], int]:
    """(digits, decimal point) with value = 0.d1d2... * 10^point, as JDK 8-18's FloatingDecimal
    develops them:
    - integers below 2^63 are printed from their exact value, after rounding off (half up) the
      floor((e - significant - 1) * log10 2) digits a binary exponent e above the significant bits
      makes insignificant; trailing zeros dropped;
    - other values by Steele and White's digit generation: B/S is the value over 10^estimate,
      M half an ulp (a quarter at exact powers of two, on both sides), digits until the remainder
      is within M of either end (strictly, in int and long arithmetic, which may wrap around as
      Java's does; or at the upper end in big-integer arithmetic), at least two digits in
      scientific notation, then the last digit rounded (half even on a tie); a first digit 0
      (estimate one too high) is dropped unless the upper test already holds."""
    tail_zeros = (fraction & -fraction).bit_length() - 1
    fraction_bits = 53 - tail_zeros
    tiny_bits = max(0, fraction_bits - binary_exponent - 1)
    if -21 <= binary_exponent <= 62 and tiny_bits == 0 and fraction_bits < 64:
        insignificant = 0
        if binary_exponent > significant:
            power = binary_exponent - significant - 1
            insignificant = math.floor(power * math.log10(2)) if 1 < power < 64 else 0
        value = fraction << (binary_exponent - 52) if binary_exponent >= 52 else fraction >> (52 - binary_exponent)
        if insignificant:
            ten = 10 ** insignificant
            value, residue = divmod(value, ten)
            if residue >= ten >> 1:
                value += 1
        text = str(value)
        kept = text.rstrip("0")
        return [int(c) for c in kept], len(text) + insignificant
    decimal_exponent = _estimate_decimal_exponent(fraction, binary_exponent)
    b5 = max(0, -decimal_exponent)
    b2 = b5 + tiny_bits + binary_exponent
    s5 = max(0, decimal_exponent)
    s2 = s5 + tiny_bits
    m5, m2 = b5, b2 - significant
    fraction >>= tail_zeros
    b2 -= fraction_bits - 1
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common
    if fraction_bits == 1:
        m2 -= 1
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    b_bits = fraction_bits + b2 + (_N5_BITS[b5] if b5 < len(_N5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N5_BITS[s5 + 1] if s5 + 1 < len(_N5_BITS) else (s5 + 1) * 3)
    if b_bits < 32 and ten_s_bits < 32:
        width = 32
    elif b_bits < 64 and ten_s_bits < 64:
        width = 64
    else:
        width = None
    b = (fraction * 5 ** b5) << b2
    s = 5 ** s5 << s2
    m = 5 ** m5 << m2
    tens = s * 10

    def upper(b: int, m: int) -> bool:
        return b + m >= tens if width is None else _wrap(b + m, width) > tens

    digits: list[int] = []
    q, b = divmod(b, s)
    b = _wrap(10 * b, width)
    m = _wrap(10 * m, width)
    low, high = b < m, upper(b, m)
    if q == 0 and not high:
        decimal_exponent -= 1
    else:
        digits.append(q)
    if decimal_exponent < -3 or decimal_exponent >= 8:
        low = high = False
    while not low and not high:
        q, b = divmod(b, s)
        b = _wrap(10 * b, width)
        m = _wrap(10 * m, width)
        if width is None or m > 0:
            low, high = b < m, upper(b, m)
        else:  # the margin overflowed: Java stops here
            low = high = True
        digits.append(q)
    point = decimal_exponent + 1
    difference = _wrap((b << 1) - tens, width)
    if high and (not low or difference > 0 or (difference == 0 and digits[-1] % 2 == 1)):
        i = len(digits) - 1
        while digits[i] == 9 and i > 0:
            digits[i] = 0
            i -= 1
        if digits[i] == 9:  # carried out of the first digit
            digits[0] = 1
            point += 1
        else:
            digits[i] += 1
    return digits, point


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
