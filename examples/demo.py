"""tarn demo: a partitioned primary-key table, three commits with updates and deletes,
a read of the latest state and a time travel to snapshot 1. Runs embedded (no Spark)."""

from __future__ import annotations

import shutil
import sys
import tempfile

import pyarrow as pa

import tarn


def show(title: str, table: pa.Table) -> None:
    print(f"\n== {title} ({table.num_rows} rows)")
    rows = table.sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()
    for row in rows:
        print("  ", row)


def main(warehouse: str) -> None:
    catalog = tarn.Catalog(warehouse)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("item", pa.string()), ("qty", pa.int32())])
    orders = catalog.create_table("shop.orders", schema=schema, primary_key=["dt", "id"],
                                  partition_keys=["dt"], options={"bucket": "2"})
    print(f"created table shop.orders at {orders.root}")

    orders.write(pa.table({"dt": ["2026-11-20"] * 3 + ["2026-11-21"] * 2, "id": [1, 2, 3, 1, 2],
                           "item": ["apple", "pear", "plum", "fig", "kiwi"], "qty": [1, 2, 3, 4, 5]},
                          schema=schema))
    orders.write(pa.table({"dt": ["2026-11-20", "2026-11-21"], "id": [2, 3],
                           "item": ["pear", "lime"], "qty": [20, 6]}, schema=schema))
    orders.delete(pa.table({"dt": ["2026-11-20"], "id": [3]}))

    for snap in orders.snapshots():
        print(f"snapshot {snap.id}: {snap.commit_kind:9} delta={snap.delta_record_count:3} "
              f"total={snap.total_record_count}")
    show("latest", orders.scan().to_arrow())
    show("time travel to snapshot 1", orders.scan(snapshot_id=1).to_arrow())
    show("filter dt = '2026-11-20' and qty > 1",
         orders.scan(filter=(tarn.col("dt") == "2026-11-20") & (tarn.col("qty") > 1)).to_arrow())


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="tarn-demo-")
    try:
        main(target)
    finally:
        if len(sys.argv) <= 1:
            shutil.rmtree(target, ignore_errors=True)
