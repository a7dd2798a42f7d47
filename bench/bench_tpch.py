"""TPC-H on Spark: queries 1, 3, 4, 5, 6, 10, 12 and 14 over the generator's parquet files,
over tarn tables read with `spark.read.format("tarn")`, over the same tables read with
`tarn.spark.read`, and by name (`tarn.spark.attach` of the warehouse, the queries naming
`tpch.lineitem`, ... run through `tarn.spark.sql`), on local[2].

    .venv/bin/python bench/bench_tpch.py [--sf 1] [--repeat 3] [--data DIR] [--warehouse DIR] [--reload]

Data: `tpchgen-cli parquet -s SF` (one file per table) into `--data` (default
/tmp/tarn-tpch-sf<SF>/parquet, reused when present). The seven tables the queries use are
loaded into primary-key tables (TPC-H's natural keys, default dynamic buckets) with
`tarn.spark.write` and fully compacted, as a reader sees a table best, into the database `tpch`
of the directory catalog `--warehouse` (default /tmp/tarn-tpch-sf<SF>/lake, reused unless
`--reload`); the load time is printed
for reference. Each source gets its own temporary views under the TPC-H names, one untimed
warm-up pass of all eight queries (the JVM's warm-up matters), then `--repeat` timed passes,
the sources taking turns in each pass; a query is timed to its collected rows. Every source's
rows must equal parquet's (sorted, numbers rounded) or the bench fails. Printed: per query the
median seconds of each source and its ratio to parquet; the total of the eight (median of the
per-pass totals) with ratios. Targets (the issues): format("tarn") total <= 1.5x parquet,
tarn.spark.read and by name total <= 1.1x parquet.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn.spark  # noqa: E402

KEYS = {"lineitem": "l_orderkey,l_linenumber", "orders": "o_orderkey", "customer": "c_custkey",
        "part": "p_partkey", "supplier": "s_suppkey", "nation": "n_nationkey", "region": "r_regionkey"}

QUERIES = {
    "Q1": """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty,
       avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus""",
    "Q3": """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10""",
    "Q4": """
select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-07-01' + interval '3' month
  and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority""",
    "Q5": """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc""",
    "Q6": """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24""",
    "Q10": """
select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name,
       c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01'
  and o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R'
  and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20""",
    "Q12": """
select l_shipmode,
       sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
       sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01'
  and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode
order by l_shipmode""",
    "Q14": """
select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end)
       / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
  and l_shipdate < date '1995-09-01' + interval '1' month""",
}


def generate(data: str, sf: float) -> None:
    if all(os.path.exists(f"{data}/{t}.parquet") for t in KEYS):
        return
    os.makedirs(data, exist_ok=True)
    started = time.perf_counter()
    generator = shutil.which("tpchgen-cli", path=os.path.dirname(sys.executable)) or "tpchgen-cli"
    subprocess.run([generator, "parquet", "-s", str(sf), "-o", data, "-T", ",".join(KEYS),
                    "--overwrite", "--no-progress"], check=True)
    print(f"generated TPC-H sf {sf} parquet in {data}: {time.perf_counter() - started:.1f} s")


def load(spark, data: str, warehouse: str, reload: bool) -> dict:
    """Loads (or finds) the tarn tables; returns {table: (write seconds, compact seconds)}."""
    done = f"{warehouse}/loaded.json"
    if os.path.exists(done) and not reload:
        return json.load(open(done))
    shutil.rmtree(warehouse, ignore_errors=True)
    os.makedirs(warehouse)
    times = {}
    for name, key in KEYS.items():
        t0 = time.perf_counter()
        tarn.spark.write(spark.read.parquet(f"{data}/{name}.parquet"), table_path(warehouse, name),
                         **{"primary-key": key})
        t1 = time.perf_counter()
        tarn.spark.compact(spark, table_path(warehouse, name), full=True)
        times[name] = (t1 - t0, time.perf_counter() - t1)
    json.dump(times, open(done, "w"))
    return times


def table_path(warehouse: str, name: str) -> str:
    return f"{warehouse}/tpch.db/{name}"


def by_names(sql: str, pattern: str) -> str:
    """`sql` with each TPC-H table named by `pattern` (e.g. "tpch.{}")."""
    return re.sub(r"\b(" + "|".join(KEYS) + r")\b", lambda m: pattern.format(m.group(1)), sql)


def normalized(rows) -> list:
    def value(v):
        return round(float(v), 4) if isinstance(v, (float, Decimal)) else v
    return sorted(tuple(value(v) for v in row) for row in rows)


def run_pass(spark, frames: dict | None, timings: dict | None = None) -> dict:
    """Runs the eight queries over `frames` (as the TPC-H views), or by name through
    `tarn.spark.sql` when `frames` is None; returns their rows."""
    for name, df in (frames or {}).items():
        df.createOrReplaceTempView(name)
    results = {}
    for q, sql in QUERIES.items():
        t0 = time.perf_counter()
        results[q] = (spark.sql(sql) if frames is not None else tarn.spark.sql(spark, by_names(sql, "tpch.{}"))).collect()
        if timings is not None:
            timings[q].append(time.perf_counter() - t0)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", help="the generator's parquet (default /tmp/tarn-tpch-sf<SF>/parquet)")
    parser.add_argument("--warehouse", help="the tarn tables (default /tmp/tarn-tpch-sf<SF>/warehouse)")
    parser.add_argument("--reload", action="store_true", help="load the tarn tables again")
    args = parser.parse_args()
    sf = f"{args.sf:g}"
    data = os.path.abspath(args.data or f"/tmp/tarn-tpch-sf{sf}/parquet")
    warehouse = os.path.abspath(args.warehouse or f"/tmp/tarn-tpch-sf{sf}/lake")
    generate(data, args.sf)
    spark = tarn.spark.session("local[2]", "tarn-tpch", {"spark.driver.memory": "4g",
                                                         "spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        times = load(spark, data, warehouse, args.reload)
        print(f"tarn tables in {warehouse} (write + full compaction, seconds"
              f"{', from the first load' if not args.reload else ''}):")
        print("  " + ", ".join(f"{t} {w:.1f}+{c:.1f}" for t, (w, c) in times.items()) +
              f"; total {sum(w + c for w, c in times.values()):.1f}")
        sources = {
            "parquet": {t: spark.read.parquet(f"{data}/{t}.parquet") for t in KEYS},
            'format("tarn")': {t: spark.read.format("tarn").load(table_path(warehouse, t)) for t in KEYS},
            "tarn.spark.read": {t: tarn.spark.read(spark, table_path(warehouse, t)) for t in KEYS},
            "by name": None,  # tarn.spark.sql over the attached warehouse
        }
        tarn.spark.attach(spark, warehouse)
        expected = {q: normalized(rows) for q, rows in run_pass(spark, sources["parquet"]).items()}
        for source, frames in list(sources.items())[1:]:  # warm-up passes, checked
            for q, rows in run_pass(spark, frames).items():
                if normalized(rows) != expected[q]:
                    raise SystemExit(f"{source} {q}: rows differ from parquet's\n  parquet: {expected[q][:5]}\n"
                                     f"  {source}: {normalized(rows)[:5]}")
        timings = {s: {q: [] for q in QUERIES} for s in sources}
        for _ in range(args.repeat):
            for source, frames in sources.items():
                run_pass(spark, frames, timings[source])
    finally:
        spark.stop()
    medians = {s: {q: statistics.median(ts) for q, ts in by_q.items()} for s, by_q in timings.items()}
    totals = {s: statistics.median(map(sum, zip(*by_q.values()))) for s, by_q in timings.items()}
    names = list(sources)
    print(f"TPC-H sf {sf}, local[2], seconds (medians of {args.repeat} passes after a warm-up pass); "
          "rows of every source equal parquet's")
    print(f"  {'query':6}" + "".join(f"{n:>17}" for n in names) + "".join(f"{n + ' / pq':>22}" for n in names[1:]))
    for q in [*QUERIES, "total"]:
        row = {s: (totals[s] if q == "total" else medians[s][q]) for s in names}
        print(f"  {q:6}" + "".join(f"{row[s]:17.3f}" for s in names) +
              "".join(f"{row[s] / row['parquet']:21.2f}x" for s in names[1:]))
    for source, target in (('format("tarn")', 1.5), ("tarn.spark.read", 1.1), ("by name", 1.1)):
        ratio = totals[source] / totals["parquet"]
        print(f"  {source} total {ratio:.2f}x parquet (target <= {target}) {'ok' if ratio <= target else 'MISSED'}")


if __name__ == "__main__":
    main()
