"""Values in Iceberg's single-value binary serialisation (the spec's appendix D; Java's
IcebergConversions): column bounds in manifests and partition bounds in manifest lists, and
partition values as the Avro values of a manifest's `partition` record.

| Paimon type | bytes |
|---|---|
| BOOLEAN | 1 byte, 0 or 1 |
| TINYINT, SMALLINT, INT, DATE | 4 bytes little-endian (DATE: days since 1970-01-01) |
| BIGINT | 8 bytes little-endian |
| FLOAT, DOUBLE | IEEE 754, little-endian |
| CHAR, VARCHAR | UTF-8 |
| BINARY, VARBINARY | the bytes |
| DECIMAL | the unscaled value, two's complement big-endian, fewest bytes |
| TIMESTAMP(3..6), TIMESTAMP_LTZ(3..6) | micros since the epoch, 8 bytes little-endian |
| TIME(0..3) | micros of the day, 8 bytes little-endian |
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct

from tarn.types import DataType

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_INT4 = ("TINYINT", "SMALLINT", "INT")
_WIDE = decimal.Context(prec=100)  # DECIMAL(38) values scaled without rounding


def to_bytes(t: DataType, value) -> bytes:
    """`value` (as tarn decodes stats and partitions) in Iceberg's binary form; ValueError for
    a type Java does not serialise."""
    root = t.root
    if root == "BOOLEAN":
        return b"\x01" if value else b"\x00"
    if root in _INT4:
        return struct.pack("<i", value)
    if root == "DATE":
        return struct.pack("<i", days(value))
    if root == "BIGINT":
        return struct.pack("<q", value)
    if root == "FLOAT":
        return struct.pack("<f", value)
    if root == "DOUBLE":
        return struct.pack("<d", value)
    if root in ("CHAR", "VARCHAR"):
        return value.encode("utf-8")
    if root in ("BINARY", "VARBINARY"):
        return bytes(value)
    if root == "DECIMAL":
        return unscaled_bytes(value, t.scale or 0)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if not 3 <= t.precision <= 6 and not isinstance(value, int):
            raise ValueError(f"Iceberg compatibility writes bounds of timestamps of precision 3 to 6, not {t}")
        return struct.pack("<q", micros(value))
    if root == "TIME":
        return struct.pack("<q", millis_of_day(value) * 1000)
    raise ValueError(f"cannot serialise a {t} value for Iceberg")


def from_bytes(t: DataType, data: bytes):
    """The value of `to_bytes` output in an orderable form: dates as days, timestamps and
    times as micros, decimals as their unscaled value."""
    root = t.root
    if root == "BOOLEAN":
        return data[0] != 0
    if root in _INT4:
        return struct.unpack("<i", data)[0]
    if root in ("BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return struct.unpack("<q", data)[0]
    if root == "DATE":
        return struct.unpack("<i", data)[0]
    if root == "FLOAT":
        return struct.unpack("<f", data)[0]
    if root == "DOUBLE":
        return struct.unpack("<d", data)[0]
    if root in ("CHAR", "VARCHAR"):
        return data.decode("utf-8")
    if root in ("BINARY", "VARBINARY"):
        return bytes(data)
    if root == "DECIMAL":
        return int.from_bytes(data, "big", signed=True)  # the unscaled value
    raise ValueError(f"cannot read an Iceberg {t} value")


def avro_comparable(t: DataType, value):
    """A partition column's Avro value (`avro_value`) in the form `from_bytes` returns, so
    partition values order and serialise as Java's statistics of them do."""
    if value is None:
        return None
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision <= 3:
        return value * 1000
    if t.root == "DECIMAL":
        return int.from_bytes(value, "big", signed=True)
    return value


def avro_value(t: DataType, value):
    """A decoded partition value as the Avro value Java's writer stores for its Paimon type
    (DATE: days; TIMESTAMP(0..3): millis, (4..6): micros; TIME: millis of day; DECIMAL: the
    unscaled big-endian bytes)."""
    if value is None:
        return None
    root = t.root
    if root == "DATE":
        return days(value)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return micros(value) // 1000 if t.precision <= 3 else micros(value)
    if root == "TIME":
        return millis_of_day(value)
    if root == "DECIMAL":
        return unscaled_bytes(value, t.scale or 0)
    return value


def days(value) -> int:
    return value if isinstance(value, int) else (value - _EPOCH_DATE).days


def micros(value) -> int:
    if isinstance(value, int):
        return value
    if hasattr(value, "value") and hasattr(value, "tz_localize"):  # pandas.Timestamp (sub-micro values)
        return value.value // 1000
    epoch = _EPOCH if value.tzinfo is None else _EPOCH_UTC
    delta = value - epoch
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def millis_of_day(value) -> int:
    if isinstance(value, int):
        return value
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def unscaled_bytes(value, scale: int) -> bytes:
    """Java's `BigInteger.toByteArray` of the unscaled value: two's complement, fewest bytes."""
    unscaled = value if isinstance(value, int) else int(decimal.Decimal(value).scaleb(scale, _WIDE))
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)
