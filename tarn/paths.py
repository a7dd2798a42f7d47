"""Every file-naming rule of a Paimon table (FORMAT.md section 1), relative to the table root."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

from tarn.fs import join  # noqa: F401  (re-exported for path building)

SNAPSHOT_DIR = "snapshot"
SCHEMA_DIR = "schema"
MANIFEST_DIR = "manifest"
INDEX_DIR = "index"
TAG_DIR = "tag"
CONSUMER_DIR = "consumer"
STATISTICS_DIR = "statistics"
CHANGELOG_DIR = "changelog"
# the bucket of rows a postpone-bucket table (bucket = -2) has not placed yet
POSTPONE_BUCKET = -2
LATEST = "LATEST"
EARLIEST = "EARLIEST"
SNAPSHOT_PREFIX = "snapshot-"
SCHEMA_PREFIX = "schema-"
TAG_PREFIX = "tag-"
CONSUMER_PREFIX = "consumer-"
DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

# Characters Paimon escapes in partition paths (PartitionPathUtils), besides < 0x20.
_ESCAPED = set('"#%\'*/:=?\\\x7f{}[]^')


def snapshot_path(root: str, snapshot_id: int) -> str:
    return join(root, SNAPSHOT_DIR, f"{SNAPSHOT_PREFIX}{snapshot_id}")



def tag_path(root: str, name: str) -> str:
    return join(root, TAG_DIR, f"{TAG_PREFIX}{name}")


def consumer_path(root: str, consumer_id: str) -> str:
    return join(root, CONSUMER_DIR, f"{CONSUMER_PREFIX}{consumer_id}")


def ids_with_prefix(names: list[str], prefix: str) -> list[int]:
    """Sorted numeric suffixes of `names` that are `<prefix><int>`."""
    ids = []
    for name in names:
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            ids.append(int(name[len(prefix):]))
    return sorted(ids)


def escape_path_name(text: str) -> str:
    """Escape a partition key or value as Paimon does (%XX, uppercase hex)."""
    return "".join(f"%{ord(c):02X}" if (ord(c) < 0x20 or c in _ESCAPED) else c for c in text)




def partition_value_text(value, root: str, precision: int | None, default_name: str, legacy: bool = True) -> str:
    """Java `toString()` of a partition value (partition.legacy-name=true), or with
    `legacy=False` its CAST to STRING (Paimon's cast rules: dates `2026-11-03`, times
    `10:00:00[.f]`, timestamps `2026-11-03 10:00:00[.fff]`)."""
    if value is None:
        return default_name
    if not legacy and root in _CAST_TEXT and isinstance(value, (dt.date, dt.time)):
        return _CAST_TEXT[root](value, 0 if precision is None else precision)
    if isinstance(value, bool):
        return "true" if value else "false"
    if root == "DATE" and isinstance(value, dt.date):
        return str((value - dt.date(1970, 1, 1)).days)
    if root == "TIME" and isinstance(value, dt.time):
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        return str(millis)
    if isinstance(value, dt.datetime):
        return _java_local_datetime(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return _java_double_text(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    text = str(value)
    return default_name if text.strip() == "" else text


def _cast_timestamp(value: dt.datetime, precision: int) -> str:
    """DateTimeUtils.formatTimestamp: the nanosecond fraction, trailing zeros cut while longer
    than the precision."""
    if value.tzinfo is not None:  # TIMESTAMP_LTZ: shown in the local zone, as Java's default zone
        value = value.astimezone().replace(tzinfo=None)
    fraction = f"{value.microsecond * 1000:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    return value.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "")


def _cast_time(value: dt.time, precision: int) -> str:
    """DateTimeUtils.formatTimestampMillis: milliseconds digit by digit, stopping once the rest
    is zero."""
    text = value.strftime("%H:%M:%S")
    millis = value.microsecond // 1000
    if precision > 0:
        text += "."
        while precision > 0:
            text += str(millis // 100)
            millis = millis % 100 * 10
            if millis == 0:
                break
            precision -= 1
    return text


_CAST_TEXT = {
    "DATE": lambda value, precision: value.isoformat(),
    "TIME": _cast_time,
    "TIMESTAMP": _cast_timestamp,
    "TIMESTAMP_LTZ": _cast_timestamp,
}


def _java_local_datetime(value: dt.datetime) -> str:
    """LocalDateTime.toString(): seconds dropped when zero with no fraction."""
    value = value.replace(tzinfo=None)
    text = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        frac = f"{value.microsecond:06d}"
        text += "." + (frac[:3] if frac.endswith("000") else frac)
    return text


def _java_double_text(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    if "e" in text or "E" in text:
        mantissa, exp = text.lower().split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exp)}"
    return text


def partition_dir(keys: list[str], texts: list[str]) -> str:
    """`k1=v1/k2=v2` for already-textualised partition values."""
    return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in zip(keys, texts))


def bucket_dir(bucket: int) -> str:
    return "bucket-postpone" if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"


class FileNamer:
    """Names `<prefix><uuid>-<n><suffix>` with one uuid per namer and a running counter."""

    def __init__(self, prefix: str, suffix: str = ""):
        self.prefix = prefix
        self.suffix = suffix
        self.uuid = str(uuid.uuid4())
        self.counter = 0

    def next(self) -> str:
        name = f"{self.prefix}{self.uuid}-{self.counter}{self.suffix}"
        self.counter += 1
        return name
