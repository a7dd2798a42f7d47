"""tarn on Spark, end to end: a stream of order changes into a partitioned primary-key table.

1. A producer appends waves of order-change events (inserts, status updates, amount
   corrections, deletes, and late events that arrive after newer ones) to an append table.
2. A Structured Streaming query reads the event table (tarn source) and writes the orders
   table (tarn sink, exactly once): `merge-engine=partial-update`, so an update carries only
   the columns it changes; `sequence.field=event_time`, so a late event never overwrites a
   newer one; `rowkind.field=op`, so `-D` events delete.
3. Batch SQL over the orders, a tag at the end of day one, more (late) events, time travel
   back to the tag, a compaction on Spark, and a summary.

Run: .venv/bin/python examples/pipeline.py [--orders N] [--quiet] [--keep] [warehouse]
(each step is printed with its time; --keep keeps the temporary warehouse and prints its path)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

import tarn
import tarn.spark

DAYS = ["2026-11-20", "2026-11-21"]
STATUSES = ["created", "paid", "shipped"]
CUSTOMERS = [f"customer-{i:03d}" for i in range(200)]
EVENTS = pa.schema([("dt", pa.string()), ("order_id", pa.int64()), ("customer", pa.string()),
                    ("status", pa.string()), ("amount", pa.float64()), ("event_time", pa.int64()),
                    ("op", pa.string())])
DAY_MS = 86_400_000
DAY0_MS = 1_795_132_800_000  # 2026-11-20T00:00Z


# ---------------------------------------------------------------------------------------------
# the producer (vectorised: numpy -> Arrow -> Spark)


def events(day: int, ids: np.ndarray, op: str, rng, status=None, amount=False, customer=False,
           at: int = 0) -> pa.Table:
    """Events for orders `ids` of day `day`; only the columns an event carries are non-null."""
    n = len(ids)
    base = DAY0_MS + day * DAY_MS
    columns = {
        "dt": pa.array([DAYS[day]] * n),
        "order_id": pa.array(ids, pa.int64()),
        "customer": pa.array(np.array(CUSTOMERS)[rng.integers(0, len(CUSTOMERS), n)]) if customer
        else pa.nulls(n, pa.string()),
        "status": pa.array([status] * n, pa.string()) if status else pa.nulls(n, pa.string()),
        "amount": pa.array(np.round(rng.uniform(5, 500, n), 2)) if amount else pa.nulls(n, pa.float64()),
        "event_time": pa.array(base + at * 60_000 + rng.integers(0, 60_000, n), pa.int64()),
        "op": pa.array([op] * n),
    }
    return pa.table(columns, schema=EVENTS)


def wave_one(orders: int, rng) -> pa.Table:
    """Day one: orders created, most paid, some shipped, a few amounts corrected."""
    ids = np.arange(orders, dtype=np.int64)
    paid = ids[rng.random(orders) < 0.8]
    shipped = paid[rng.random(len(paid)) < 0.5]
    fixed = ids[rng.random(orders) < 0.1]
    parts = [events(0, ids, "+I", rng, "created", amount=True, customer=True, at=0),
             events(0, paid, "+U", rng, "paid", at=60),
             events(0, shipped, "+U", rng, "shipped", at=120),
             events(0, fixed, "+U", rng, amount=True, at=180)]
    return pa.concat_tables(parts)


def wave_two(orders: int, rng) -> pa.Table:
    """Day two's orders, late day-one events (older than what the table holds), cancellations."""
    new_ids = np.arange(orders, orders + orders // 2, dtype=np.int64)
    late = np.arange(0, orders, 7, dtype=np.int64)  # a stale 'created' replayed by a slow producer
    cancelled = np.arange(3, orders, 11, dtype=np.int64)
    parts = [events(1, new_ids, "+I", rng, "created", amount=True, customer=True, at=0),
             events(1, new_ids[::2], "+U", rng, "paid", at=30),
             events(0, late, "+U", rng, "created", at=1),
             events(0, cancelled, "-D", rng, at=600)]
    return pa.concat_tables(parts)


# ---------------------------------------------------------------------------------------------
# the pipeline


def create_orders(path: str) -> tarn.Table:
    return tarn.create_table(path, EVENTS, primary_key=["dt", "order_id"], partition_keys=["dt"], options={
        "bucket": "2", "merge-engine": "partial-update", "sequence.field": "event_time",
        "partial-update.remove-record-on-delete": "true", "rowkind.field": "op",
    })


def stream_once(spark, events_path: str, orders_path: str, checkpoint: str) -> None:
    """Run the streaming query until it has caught up with the event table, then stop."""
    stream = spark.readStream.format("tarn").option("consumer-id", "orders-pipeline").load(events_path)
    query = (tarn.spark.by_bucket(stream, orders_path)
             .writeStream.format("tarn")
             .option("checkpointLocation", checkpoint)
             .option("write.bucket-owned", "true")
             .trigger(availableNow=True)
             .start(orders_path))
    query.awaitTermination()


def view(spark, name: str, path: str, **options) -> str:
    """(Re)create a temporary view of a tarn table. Spark keeps the plan of a view's scan, so a
    view made before a commit does not see it: make the view again to read the latest data."""
    extra = "".join(f", `{k}` '{v}'" for k, v in options.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING tarn OPTIONS (path '{path}'{extra})")
    return name


def daily_report(spark, view: str) -> list:
    return spark.sql(f"""
        SELECT dt, count(*) AS orders, round(sum(amount), 2) AS revenue,
               sum(CASE WHEN status = 'shipped' THEN 1 ELSE 0 END) AS shipped
        FROM {view} GROUP BY dt ORDER BY dt""").collect()


def files_by_level(spark, orders_path: str) -> dict:
    rows = spark.read.format("tarn").load(orders_path + "$files").groupBy("level").count().collect()
    return {r["level"]: r["count"] for r in sorted(rows, key=lambda r: r["level"])}


def run(spark, warehouse: str, orders: int = 20_000, seed: int = 7, verbose: bool = True) -> dict:
    """The whole pipeline; returns the figures the summary prints."""
    rng = np.random.default_rng(seed)
    events_path, orders_path = f"{warehouse}/shop.db/events", f"{warehouse}/shop.db/orders"
    checkpoint = f"{warehouse}/_checkpoints/orders"
    create_orders(orders_path)
    figures: dict = {}

    def produce(table: pa.Table) -> None:
        (spark.createDataFrame(table).write.format("tarn").mode("append").save(events_path))

    started = time.time()
    step = [started]

    def lap(name: str) -> None:
        if verbose:
            now = time.time()
            print(f"  .. {name}: {now - step[0]:.1f} s", flush=True)
            step[0] = now

    first = wave_one(orders, rng)
    produce(first)
    lap("produce day 1")
    stream_once(spark, events_path, orders_path, checkpoint)
    lap("stream day 1")
    figures["events_day1"] = first.num_rows

    figures["report_day1"] = daily_report(spark, view(spark, "orders", orders_path))
    lap("report day 1")
    tag = tarn.spark.create_tag(spark, orders_path, "end-of-day-1")
    figures["tag"] = (tag.name, tag.snapshot.id)

    second = wave_two(orders, rng)
    produce(second)
    lap("produce day 2")
    stream_once(spark, events_path, orders_path, checkpoint)
    lap("stream day 2")
    figures["events_day2"] = second.num_rows
    figures["report_now"] = daily_report(spark, view(spark, "orders", orders_path))
    figures["report_at_tag"] = daily_report(spark, view(spark, "orders_at_tag", orders_path,
                                                        versionAsOf="end-of-day-1"))
    figures["late_events"] = int(np.count_nonzero(second.column("dt").to_numpy(zero_copy_only=False) == DAYS[0])
                                 - np.count_nonzero(second.column("op").to_numpy(zero_copy_only=False) == "-D"))
    figures["reverted"] = spark.sql(
        "SELECT count(*) AS n FROM orders o JOIN orders_at_tag t USING (dt, order_id) "
        "WHERE o.status = 'created' AND t.status <> 'created'").collect()[0]["n"]
    figures["cancelled"] = spark.sql(
        "SELECT count(*) AS n FROM orders_at_tag t LEFT ANTI JOIN orders o USING (dt, order_id)").collect()[0]["n"]

    lap("reports, time travel")
    figures["files_before"] = files_by_level(spark, orders_path)
    compacted = tarn.spark.compact(spark, orders_path, full=True)
    figures["compact_snapshot"] = compacted.id if compacted else None
    figures["files_after"] = files_by_level(spark, orders_path)
    figures["report_after_compaction"] = daily_report(spark, view(spark, "orders", orders_path))
    lap("compaction")
    figures["snapshots"] = [(s.id, s.commit_kind, s.commit_identifier)
                            for s in tarn.load_table(orders_path).snapshots()]
    figures["seconds"] = round(time.time() - started, 1)
    return figures


def summary(figures: dict) -> str:
    def report(rows) -> list[str]:
        return [f"    {r['dt']}: {r['orders']:>6} orders  revenue {r['revenue']:>12,.2f}  shipped {r['shipped']:>6}"
                for r in rows]

    lines = [
        "tarn pipeline summary",
        f"  events streamed: {figures['events_day1']:,} on day 1, {figures['events_day2']:,} on day 2",
        "  orders after day 1:", *report(figures["report_day1"]),
        f"  tag '{figures['tag'][0]}' -> snapshot {figures['tag'][1]}",
        "  orders now (late 'created' events ignored, cancellations deleted):", *report(figures["report_now"]),
        "  orders at the tag (time travel):", *report(figures["report_at_tag"]),
        f"  late day-1 events: {figures['late_events']:,}, orders they set back to 'created': "
        f"{figures['reverted']}; cancelled since the tag: {figures['cancelled']:,}",
        f"  data files per level before compaction {figures['files_before']}, "
        f"after {figures['files_after']} (snapshot {figures['compact_snapshot']})",
        "  snapshots: " + ", ".join(f"{i}:{kind}" for i, kind, _ in figures["snapshots"]),
        f"  pipeline time: {figures['seconds']} s",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", nargs="?", help="warehouse directory (default: a temporary one)")
    parser.add_argument("--orders", type=int, default=20_000, help="orders per day one (default 20000)")
    parser.add_argument("--quiet", action="store_true", help="print only the summary, not each step and its time")
    parser.add_argument("--keep", action="store_true", help="keep the temporary warehouse (its path is printed)")
    args = parser.parse_args()
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="tarn-pipeline-")
    if not args.quiet:
        print(f"tarn pipeline demo: warehouse {warehouse}; starting Spark (local[2])", flush=True)
    spark = tarn.spark.session("local[2]", "tarn-pipeline", {"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    kept = bool(args.warehouse) or args.keep
    try:
        print(summary(run(spark, warehouse, args.orders, verbose=not args.quiet)))
    finally:
        spark.stop()
        if kept:
            print(f"warehouse kept at {warehouse} (tarn info {warehouse}/shop.db/orders)")
        else:
            shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
