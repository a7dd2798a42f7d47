"""Local MERGE benchmark: `Table.merge` against deltalake's `merge` on the same data.

    .venv/bin/python bench/bench_merge.py [--rows 1000000] [--source 100000] [--repeat 3]

A target of `--rows` rows (id, customer, amount, status), a source of `--source` rows, half
of them matching target ids (updated: every column from the source), half new (inserted).
Each run merges into a fresh copy of the target. Printed: medians and the ratio tarn /
deltalake, for a primary-key table (the merge writes +U/+I rows: the matched keys are read,
nothing rewritten) and an append table (copy-on-write of the files holding matches, as
deltalake's merge rewrites them). With `--cdc` (issue 44): a CDC source of `--source` rows
(default then 30,000) with an `op` column the table lacks — a third each updated ('U'), deleted
('D') and new ('I') — merged with `when_matched_delete="source.op = 'D'"`, update and insert of
the table's columns. deltalake: `pip install deltalake` (not a tarn dependency).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
from bench.bench_core import timed  # noqa: E402


def target_rows(n: int) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                     "customer": pa.array(rng.integers(0, 50_000, n).astype(np.int64)),
                     "amount": pa.array(rng.random(n) * 100),
                     "status": pa.array(np.char.add("s", rng.integers(0, 5, n).astype(str)))})


def source_rows(n: int, target: int) -> pa.Table:
    rng = np.random.default_rng(4)
    matched = rng.choice(target, n // 2, replace=False).astype(np.int64)
    fresh = np.arange(target, target + n - n // 2, dtype=np.int64)
    ids = np.concatenate([matched, fresh])
    return pa.table({"id": pa.array(ids), "customer": pa.array(rng.integers(0, 50_000, n).astype(np.int64)),
                     "amount": pa.array(rng.random(n) * 100), "status": pa.array(["merged"] * n)})


def with_ops(source: pa.Table) -> pa.Table:
    """The source with a CDC `op`: matched rows alternate 'U' and 'D', new rows 'I'."""
    half = source.num_rows // 2
    ops = np.where(np.arange(source.num_rows) < half, np.where(np.arange(source.num_rows) % 2 == 0, "U", "D"), "I")
    return source.append_column("op", pa.array(ops.astype(str)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--source", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cdc", action="store_true", help="a source with an op column (U/D/I)")
    args = parser.parse_args()
    if args.source is None:
        args.source = 30_000 if args.cdc else 100_000
    try:
        import deltalake
    except ImportError:
        sys.exit("bench_merge needs deltalake: .venv/bin/pip install deltalake")
    target, source = target_rows(args.rows), source_rows(args.source, args.rows)
    if args.cdc:
        source = with_ops(source)
    work = tempfile.mkdtemp(prefix="tarn-bench-merge-")
    try:
        fresh = iter(range(1000))
        base = {}
        for kind, options, key in (("pk", {"bucket": "4"}, ["id"]), ("append", {}, None)):
            table = tarn.Catalog(os.path.join(work, "wh")).create_table(f"b.{kind}", target.schema,
                                                                          primary_key=key, options=options)
            table.write(target)
            base[kind] = table.root
        delta_base = os.path.join(work, "delta")
        deltalake.write_deltalake(delta_base, target)

        def copy(path: str) -> str:
            dst = os.path.join(work, f"copy-{next(fresh)}")
            shutil.copytree(path, dst)
            return dst

        deletes = {"when_matched_delete": "source.op = 'D'"} if args.cdc else {}

        def tarn_merge(kind: str):
            def run():
                return tarn.load_table(copies[kind].pop()).merge(source, on="id", when_matched_update="*",
                                                                 when_not_matched_insert="*", **deletes)
            return run

        def delta_merge():
            dt = deltalake.DeltaTable(copies["delta"].pop())
            merger = dt.merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
            if args.cdc:
                columns = {c: f"s.{c}" for c in target.column_names}
                return (merger.when_matched_delete(predicate="s.op = 'D'").when_matched_update(updates=columns)
                        .when_not_matched_insert(updates=columns).execute())
            return merger.when_matched_update_all().when_not_matched_insert_all().execute()

        copies = {k: [copy(p) for _ in range(args.repeat)] for k, p in (*base.items(), ("delta", delta_base))}
        delta, _ = timed(delta_merge, args.repeat)
        pk, result = timed(tarn_merge("pk"), args.repeat)
        append, _ = timed(tarn_merge("append"), args.repeat)
        print(f"target {args.rows:,} rows, source {args.source:,} rows ({args.source // 2:,} matched"
              f"{', half of them deleted: a CDC op column' if args.cdc else ''}), "
              f"{os.cpu_count()} cpu(s); medians of {args.repeat}")
        print(f"  deltalake merge              {delta:7.3f} s")
        print(f"  tarn merge, primary-key table {pk:7.3f} s   ratio {pk / delta:5.2f}x   {result!r}")
        print(f"  tarn merge, append table      {append:7.3f} s   ratio {append / delta:5.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
