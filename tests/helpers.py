"""Shared test data builders."""

import datetime as dt
import decimal
import itertools

import pyarrow as pa

from tarn.codec.binary_row import serialize_row
from tarn.meta.manifest import EMPTY_STATS, DataFileMeta
from tarn.types import INT

ORDERS_SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("item", pa.string()), ("qty", pa.int32())])


def orders_rows(dts, ids, items=None, qtys=None) -> pa.Table:
    n = len(ids)
    items = items if items is not None else [f"item-{i}" for i in ids]
    qtys = qtys if qtys is not None else list(range(n))
    return pa.table({"dt": dts, "id": ids, "item": items, "qty": qtys}, schema=ORDERS_SCHEMA)


def rows_by_key(table: pa.Table, keys) -> dict:
    """{key tuple: row dict} of an Arrow table (test helper, small data)."""
    out = {}
    for row in table.to_pylist():
        out[tuple(row[k] for k in keys)] = row
    return out


def canonical_rows(rows, columns=None, as_tuples: bool = False) -> list:
    """The one row canonicaliser of the tests: rows (an Arrow table or dicts) restricted to
    `columns` (default: all) in a total order that does not depend on column order, nulls or
    mixed value types; as dicts, or as tuples of `columns` with `as_tuples`."""
    if isinstance(rows, pa.Table):
        rows = (rows.select(columns) if columns is not None else rows).to_pylist()
    rows = [{c: r[c] for c in columns} if columns is not None else dict(r) for r in rows]
    ordered = sorted(rows, key=lambda r: [(name, _order_key(r[name])) for name in sorted(r)])
    if as_tuples:
        return [tuple(r[c] for c in columns) for r in ordered]
    return ordered


def _order_key(value) -> tuple:
    if value is None:
        return (0, "", 0)
    if isinstance(value, (bool, int, float, decimal.Decimal)):
        return (1, "number", value)
    if isinstance(value, (str, bytes, dt.date, dt.time, dt.timedelta)):
        return (1, type(value).__name__, value)
    return (1, type(value).__name__, repr(value))


def sorted_rows(table: pa.Table) -> list:
    return canonical_rows(table)


_FILE_NUMBERS = itertools.count()
INT_KEY = (INT(False),)


def data_file_meta(lo=0, hi=None, key_types=INT_KEY, **fields) -> DataFileMeta:
    """The one DataFileMeta builder of the tests: key range `lo`..`hi` (values, or tuples of
    `key_types`), file names numbered in creation order, other fields overridable by name."""
    lo = lo if isinstance(lo, tuple) else (lo,)
    hi = lo if hi is None else (hi if isinstance(hi, tuple) else (hi,))
    base = dict(file_name=f"data-{next(_FILE_NUMBERS):06d}.parquet", file_size=1, row_count=1,
                min_key=serialize_row(list(lo), list(key_types)), max_key=serialize_row(list(hi), list(key_types)),
                key_stats=EMPTY_STATS, value_stats=EMPTY_STATS, min_sequence_number=0,
                max_sequence_number=0, schema_id=0, level=0)
    base.update({k: v for k, v in fields.items() if v is not None or k not in ("file_name",)})
    return DataFileMeta(**base)
