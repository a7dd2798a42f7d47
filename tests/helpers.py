"""Shared test data builders."""

import pyarrow as pa

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


def sorted_rows(table: pa.Table) -> list:
    return sorted(table.to_pylist(), key=lambda r: [(v is None, str(v)) for v in r.values()])
