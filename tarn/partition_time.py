"""The time a partition stands for, as Paimon's PartitionTimeExtractor reads it from the
partition's values: `partition.timestamp-pattern` (`$key` replaced by each key's value, longer
keys first; default: the first partition field) parsed by `partition.timestamp-formatter` (a
Java DateTimeFormatter pattern: y, u, M, d, H, m, s, S and quoted text; other letters are
refused) or, without one, leniently as `y-M-d[ H:m:s[.fraction]]`. Values are taken as Java's
internal objects print them (a DATE is its day count). Used by partition expiry and by
`partition.timestamp-format.strict`, which refuses writes into partitions whose values do not
parse.
"""

from __future__ import annotations

import datetime as dt
import re

from tarn.errors import InvalidArgument, InvalidOption
from tarn.options import Options


_DEFAULT = re.compile(r"^(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?$")
_JAVA_LETTERS = {"yyyy": "%Y", "uuuu": "%Y", "yy": "%y", "MM": "%m", "M": "%m", "dd": "%d", "d": "%d",
                 "HH": "%H", "H": "%H", "mm": "%M", "m": "%M", "ss": "%S", "s": "%S"}


def java_pattern_to_strptime(pattern: str, identifier: str) -> str:
    """A Java DateTimeFormatter pattern (the letters partition formatters use: y, u, M, d, H,
    m, s, S and quoted text) as a strptime format; other letters are refused by name."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise InvalidOption(f"table {identifier}: option 'partition.timestamp-formatter' = '{pattern}' "
                                    f"has an unclosed quote")
            out.append("'" if end == i + 1 else pattern[i + 1:end].replace("%", "%%"))
            i = end + 1
            continue
        if c.isalpha():
            run = len(pattern) - i - len(pattern[i:].lstrip(c))
            letters = pattern[i:i + run]
            if c == "S":
                out.append("%f")
            elif letters in _JAVA_LETTERS:
                out.append(_JAVA_LETTERS[letters])
            else:
                raise InvalidOption(f"table {identifier}: option 'partition.timestamp-formatter' = '{pattern}': "
                                    f"tarn does not parse the pattern letters '{letters}' (it takes y, u, M, d, "
                                    f"H, m, s and S)")
            i += run
            continue
        out.append("%%" if c == "%" else c)
        i += 1
    return "".join(out)


def _lenient(year: int, month: int, day: int, hour=0, minute=0, second=0, nanos=0) -> dt.datetime:
    """Java's LENIENT resolution: out-of-range fields roll over into the next ones."""
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    base = dt.datetime(year, month, 1)
    return base + dt.timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second,
                               microseconds=nanos // 1000)


def parse_partition_time(text: str, formatter: str | None) -> dt.datetime:
    """The local date-time a partition string stands for; ValueError when it does not parse."""
    if formatter is None:
        found = _DEFAULT.match(text)
        if found is None:
            raise ValueError(f"'{text}' is not y-M-d[ H:m:s]")
        y, mo, d, h, mi, s, frac = found.groups()
        nanos = int((frac or "0").ljust(9, "0"))
        return _lenient(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), nanos)
    return dt.datetime.strptime(text, java_pattern_to_strptime(formatter, "?"))


def internal_text(value) -> str | None:
    """A partition value as Java's internal object prints it (`toString`): None for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return str((value - dt.date(1970, 1, 1)).days)
    return str(value)


def partition_time_text(keys: list[str], texts: list[str | None], pattern: str | None) -> str:
    """The pattern with `$key` replaced (longer keys first), or the first value."""
    if pattern is None:
        if texts[0] is None:
            raise TypeError("null partition value")
        return texts[0]
    order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "$" and i + 1 < len(pattern):
            idx = next((j for j in order if pattern.startswith(keys[j], i + 1)), None)
            if idx is not None:
                if texts[idx] is None:
                    raise TypeError("null partition value")
                out.append(texts[idx])
                i += 1 + len(keys[idx])
                continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def check_strict(name: str, options: Options, keys: list[str], values) -> None:
    """`partition.timestamp-format.strict`: a write into a partition whose values do not parse
    by the formatter or pattern is refused before any file is written, as Java's writers do."""
    if not keys or not options.bool("partition.timestamp-format.strict"):
        return
    formatter, pattern = options.get("partition.timestamp-formatter"), options.get("partition.timestamp-pattern")
    if formatter is None and pattern is None:
        return
    texts = [internal_text(v) for v in values]
    try:
        parse_partition_time(partition_time_text(keys, texts, pattern), formatter)
    except (ValueError, TypeError, OverflowError):
        spec = ", ".join(f"{k}={t}" for k, t in zip(keys, texts))
        raise InvalidArgument(f"table {name}: partition {spec} does not match the 'partition.timestamp-formatter' "
                              f"or 'partition.timestamp-pattern' of the table ('partition.timestamp-format.strict' "
                              f"is true)") from None
