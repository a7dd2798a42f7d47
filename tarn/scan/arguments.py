"""Checking and normalising the arguments of `Table.scan` and `Catalog.create_table`: a single
column name where a list is expected, datetimes where epoch millis are, and a typed error
(InvalidArgument, naming the table) for anything else."""

from __future__ import annotations

import datetime as dt
import operator
import os

from tarn.errors import InvalidArgument


def location_argument(path, what: str) -> str:
    """A warehouse or table location as a string: str, or any os.PathLike (pathlib.Path)."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str) or not path:
        raise InvalidArgument(f"{what} must be a path or URI (a string or pathlib.Path), got {path!r}")
    return path


def names_argument(value, table_name: str, what: str) -> list[str] | None:
    """A list of column names from a list, tuple or other iterable of names, or one name (a
    bare string is one name, never its characters). None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, bytearray)) or not hasattr(value, "__iter__") or isinstance(value, dict):
        raise InvalidArgument(f"table {table_name}: {what} must be a column name or a list of them, "
                              f"got {type(value).__name__} {value!r}")
    names = list(value)
    for name in names:
        if not isinstance(name, str):
            raise InvalidArgument(f"table {table_name}: {what} must hold column names (strings), got {name!r}")
    seen = set()
    for name in names:
        if name in seen:
            raise InvalidArgument(f"table {table_name}: {what} names column {name!r} twice")
        seen.add(name)
    return names


def limit_argument(value, table_name: str) -> int | None:
    """A row limit: None or an int >= 0."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgument(f"table {table_name}: limit must be a number of rows, got {value!r}")
    try:
        limit = operator.index(value)
    except TypeError:
        raise InvalidArgument(f"table {table_name}: limit must be a number of rows, got {value!r}") from None
    if limit < 0:
        raise InvalidArgument(f"table {table_name}: limit must not be negative, got {limit}")
    return limit


def millis_argument(value, table_name: str, what: str, now: dt.datetime | None = None) -> int | None:
    """Epoch milliseconds from an int, a datetime (naive: local time), a date (local midnight)
    or a timedelta (that long before now)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgument(f"table {table_name}: {what} must be epoch millis or a datetime, got {value!r}")
    if isinstance(value, dt.timedelta):
        value = (now or dt.datetime.now()) - value
    if isinstance(value, dt.datetime):
        if hasattr(value, "to_pydatetime"):  # a pandas Timestamp: its own timestamp() takes naive as UTC
            value = value.to_pydatetime(warn=False)
        return _epoch_millis(value)
    if isinstance(value, dt.date):
        return _epoch_millis(dt.datetime(value.year, value.month, value.day))
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidArgument(f"table {table_name}: {what} must be epoch millis (an int), a datetime, a date or "
                              f"a timedelta (that long ago), got {type(value).__name__} {value!r}") from None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _epoch_millis(value: dt.datetime) -> int:
    """Exact milliseconds (no float rounding); astimezone takes a naive datetime as local time."""
    return (value.astimezone(dt.timezone.utc) - _EPOCH) // dt.timedelta(milliseconds=1)
