"""tarn against deltalake on the shapes of change people run (issue 31's table), one run each
printing tarn's time, deltalake's and the ratio (tarn / deltalake: below 1 is tarn faster).

    .venv/bin/python bench/bench_vs_deltalake.py [--repeat 3] [--only upserts,delete,...] [--iceberg]

Shapes:
- `upserts`: 10 x 100k upserts into a table partitioned by day (10 days) with key (day, k),
  tarn with 4 buckets; deltalake `merge` (update all / insert all) on (day, k);
- `delete`: delete the rows matching `amount < 0.1` (about 10%) of 2.8M rows;
- `update`: set `status` on the rows matching `k < 20000` (20k rows) of the same table;
- `reads`: a full read and a point read (`day = ... and k = ...`) after 5 x 100k upserts into
  1M rows partitioned by day with key (day, k), tarn with 4 buckets and with the default
  (`bucket` -1: dynamic buckets, one per partition at this size);
- `single`: 5 x 200k upserts into 2M rows with a single int64 key.

- `single --iceberg` also times pyiceberg's `upsert` of the same batches (one run: it took 163 s here).

deltalake and pyiceberg: `bash scripts/bench-setup.sh` (the `bench` extra; not tarn dependencies).
Medians of `--repeat` runs, each on fresh copies of the tables, tarn's and deltalake's runs
alternating; the ratio is the median of the pairs' ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402

DAYS = [f"2026-11-{d + 1:02d}" for d in range(10)]


def rows(n: int, seed: int, keys: np.ndarray | None = None, days: bool = True) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = keys if keys is not None else np.arange(n, dtype=np.int64)
    columns = {"k": pa.array(k.astype(np.int64)), "amount": pa.array(rng.random(len(k))),
               "status": pa.array(np.char.add("s", rng.integers(0, 8, len(k)).astype(str)))}
    if days:
        columns = {"day": pa.array(np.array(DAYS)[k % len(DAYS)]), **columns}
    return pa.table(columns)


def median_of(repeat: int, prepare, run) -> float:
    times = []
    for _ in range(repeat):
        state = prepare()
        started = time.perf_counter()
        run(state)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def paired(repeat: int, ours: tuple, theirs: tuple) -> tuple[float, float, float]:
    """(tarn's median, the peer's median, the median of the per-pair ratios): `ours` and
    `theirs` are (prepare, run) timed alternately, so a load that comes and goes meets both
    sides alike (medians of separate blocks of runs swung by 30% here)."""
    ours_times, theirs_times = [], []
    for _ in range(repeat):
        ours_times.append(median_of(1, *ours))
        theirs_times.append(median_of(1, *theirs))
    ratios = [a / b for a, b in zip(ours_times, theirs_times)]
    return statistics.median(ours_times), statistics.median(theirs_times), statistics.median(ratios)


class Bench:
    def __init__(self, work: str, repeat: int, iceberg: bool):
        import deltalake

        self.dl = deltalake
        self.work, self.repeat, self.iceberg = work, repeat, iceberg
        self.fresh = iter(range(10_000))

    def path(self) -> str:
        return os.path.join(self.work, f"t{next(self.fresh)}")

    def tarn_table(self, base: pa.Table, keys: list[str], partitioned: bool, bucket: str | None = "4"):
        """`bucket` None: the table's default (Paimon's -1, dynamic buckets)."""
        table = tarn.create_table(self.path(), base.schema, primary_key=keys,
                                  partition_keys=["day"] if partitioned else None,
                                  options={} if bucket is None else {"bucket": bucket})
        table.write(base)
        return table

    def delta_table(self, base: pa.Table, partitioned: bool):
        path = self.path()
        self.dl.write_deltalake(path, base, partition_by=["day"] if partitioned else None)
        return self.dl.DeltaTable(path)

    def delta_merge(self, table, batch: pa.Table, keys: list[str]) -> None:
        predicate = " and ".join(f"t.{k} = s.{k}" for k in keys)
        (table.merge(batch, predicate=predicate, source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())

    def report(self, name: str, ours: float, theirs: float, ratio: float | None = None) -> None:
        """`ratio`: the median of paired runs' ratios (default: of the medians)."""
        ratio = ours / theirs if ratio is None else ratio
        print(f"  {name:42} tarn {ours:7.3f} s   deltalake {theirs:7.3f} s   ratio {ratio:5.2f}x", flush=True)

    # ------------------------------------------------------------------ shapes

    def upserts(self) -> None:
        base = rows(1_000_000, 1)
        batches = [rows(0, 10 + i, keys=np.random.default_rng(i).choice(1_200_000, 100_000, replace=False))
                   for i in range(10)]
        self.report("10 x 100k upserts, partitioned, key (day, k)", *paired(
            self.repeat, (lambda: self.tarn_table(base, ["day", "k"], True), lambda t: [t.write(b) for b in batches]),
            (lambda: self.delta_table(base, True), lambda t: [self.delta_merge(t, b, ["day", "k"]) for b in batches])))

    def delete(self) -> None:
        base = rows(2_800_000, 2)
        self.report("delete ~10% of 2.8M rows by predicate", *paired(
            self.repeat, (lambda: self.tarn_table(base, ["day", "k"], True), lambda t: t.delete(filter="amount < 0.1")),
            (lambda: self.delta_table(base, True), lambda t: t.delete("amount < 0.1"))))

    def update(self) -> None:
        base = rows(2_800_000, 3)
        self.report("update 20k of 2.8M rows by predicate", *paired(
            self.repeat, (lambda: self.tarn_table(base, ["day", "k"], True),
                          lambda t: t.update({"status": "upd"}, filter="k < 20000")),
            (lambda: self.delta_table(base, True),
             lambda t: t.update(updates={"status": "'upd'"}, predicate="k < 20000"))))

    def reads(self) -> None:
        for bucket in ("4", None):
            self.reads_of(bucket)

    def reads_of(self, bucket: str | None) -> None:
        base = rows(1_000_000, 4)
        batches = [rows(0, 20 + i, keys=np.random.default_rng(50 + i).choice(1_000_000, 100_000, replace=False))
                   for i in range(5)]
        ours_table = self.tarn_table(base, ["day", "k"], True, bucket)
        for b in batches:
            ours_table.write(b)
        theirs_table = self.delta_table(base, True)
        for b in batches:
            self.delta_merge(theirs_table, b, ["day", "k"])
        probe = 123_457
        day = DAYS[probe % len(DAYS)]
        quick = max(self.repeat, 15)  # reads of tens of milliseconds: more runs for a steady median
        none = lambda: None  # noqa: E731 - reads need no fresh table
        full = paired(quick, (none, lambda _: ours_table.scan().to_arrow()),
                      (none, lambda _: theirs_table.to_pyarrow_table()))
        point = paired(quick, (none, lambda _: ours_table.scan(filter=f"day = '{day}' and k = {probe}").to_arrow()),
                       (none, lambda _: theirs_table.to_pyarrow_table(
                           filters=(pc.field("day") == day) & (pc.field("k") == probe))))
        buckets = "4 buckets" if bucket else "default buckets"
        self.report(f"full read after 5 x 100k upserts, {buckets}", *full)
        self.report(f"point read after 5 x 100k upserts, {buckets}", *point)

    def single(self) -> None:
        base = rows(2_000_000, 5, days=False)
        batches = [rows(0, 30 + i, keys=np.random.default_rng(70 + i).choice(2_400_000, 200_000, replace=False),
                        days=False) for i in range(5)]
        ours, theirs, ratio = paired(
            self.repeat, (lambda: self.tarn_table(base, ["k"], False), lambda t: [t.write(b) for b in batches]),
            (lambda: self.delta_table(base, False), lambda t: [self.delta_merge(t, b, ["k"]) for b in batches]))
        self.report("5 x 200k upserts into 2M rows, single key", ours, theirs, ratio)
        if self.iceberg:
            iceberg = median_of(1, lambda: self.iceberg_table(base), lambda t: [t.upsert(b, join_cols=["k"])
                                                                                for b in batches])
            print(f"  {'  the same, pyiceberg upsert (one run)':42} tarn {ours:7.3f} s   pyiceberg {iceberg:7.3f} s"
                  f"   ratio {ours / iceberg:5.3f}x", flush=True)

    def iceberg_table(self, base: pa.Table):
        from pyiceberg.catalog.sql import SqlCatalog

        path = self.path()
        os.makedirs(path)
        catalog = SqlCatalog("bench", uri=f"sqlite:///{path}/catalog.db", warehouse=f"file://{path}")
        catalog.create_namespace("b")
        table = catalog.create_table("b.t", schema=base.schema)
        table.append(base)
        return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="upserts,delete,update,reads,single")
    parser.add_argument("--iceberg", action="store_true", help="also time pyiceberg's upsert (minutes: one run)")
    args = parser.parse_args()
    try:
        import deltalake  # noqa: F401
    except ImportError:
        sys.exit("bench_vs_deltalake needs deltalake and pyiceberg: bash scripts/bench-setup.sh")
    work = tempfile.mkdtemp(prefix="tarn-bench-delta-")
    try:
        bench = Bench(work, args.repeat, args.iceberg)
        print(f"tarn vs deltalake, {os.cpu_count()} cpu(s), medians of {args.repeat} alternating runs "
              "(15 for the reads)")
        for shape in [s.strip() for s in args.only.split(",") if s.strip()]:
            getattr(bench, shape)()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
