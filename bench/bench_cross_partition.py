"""Cross-partition upsert benchmark: writes into a `bucket` = -1 table whose primary key leaves out
the partition column, vs raw pyarrow, next to the same rows in an ordinary dynamic-bucket table.

    .venv/bin/python bench/bench_cross_partition.py [--rows 1000000] [--repeat 3]

Rows as in bench_core.py plus a partition column `p` (8 values). Each run times the raw pyarrow
write and the tarn write back to back (ratio per run, medians of `--repeat` runs, every run on
its own table prepared untimed):

- first write: all keys new;
- upsert with moves: the same keys again, half of them in another partition (deduplicate: a -D
  into the old partition and the row into the new one), through the key index the first
  write's writer left behind;
- bootstrap: a fresh writer (index dropped) upserting 1,000 rows: the time to read the table's
  keys into a new index.
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
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import tarn  # noqa: E402
from bench_core import make_rows  # noqa: E402
from bench_dynamic_bucket import timed_pairs  # noqa: E402
from tarn.write.cross_partition import KEPT_ASSIGNERS  # noqa: E402

PARTS = np.array([f"p{i}" for i in range(8)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    base = make_rows(args.rows)
    n = base.num_rows
    first_parts = PARTS[rng.integers(0, len(PARTS), n)]
    rows = base.append_column("p", pa.array(first_parts))
    moved_parts = np.where(rng.random(n) < 0.5, first_parts, PARTS[rng.integers(0, len(PARTS), n)])
    upsert = rows.set_column(rows.schema.get_field_index("p"), "p", pa.array(moved_parts))
    small = upsert.slice(0, 1000)
    workdir = tempfile.mkdtemp(prefix="tarn-bench-cross-")
    try:
        raw_path = os.path.join(workdir, "raw.parquet")

        def raw_write():
            pq.write_table(rows, raw_path, compression="zstd")

        catalog = tarn.Catalog(os.path.join(workdir, "tarn"))
        names = iter(range(10_000))

        def fresh(key):
            return lambda: catalog.create_table(f"b.t{next(names)}", schema=rows.schema, primary_key=key,
                                                partition_keys=["p"])

        def loaded(key):
            def make():
                table = fresh(key)()
                table.write(rows)
                return table
            return make

        def bootstrap(table):
            KEPT_ASSIGNERS.clear()
            table.write(small)

        results = {}
        for label, key in (("cross-partition (key k)", ["k"]), ("dynamic bucket (key p, k)", ["p", "k"])):
            results[f"{label}: first write"] = timed_pairs(raw_write, fresh(key), lambda t: t.write(rows), args.repeat)
            results[f"{label}: upsert, half move"] = timed_pairs(raw_write, loaded(key), lambda t: t.write(upsert),
                                                               args.repeat)
        results["cross-partition: fresh writer, 1k rows"] = timed_pairs(raw_write, loaded(["k"]), bootstrap, args.repeat)
        check = loaded(["k"])()
        check.write(upsert)
        assert check.scan().count() == n
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"rows: {n:,} (int64 key, int64 value, 20-char string, 8 partitions); medians of {args.repeat} "
          "runs, each timing the raw pyarrow write (zstd) of the rows and the tarn write back to back\n")
    print(f"{'':46} {'raw s':>7} {'tarn s':>7} {'x raw':>7}")
    for label, (raw, ours, ratio) in results.items():
        print(f"{label:46} {raw:7.3f} {ours:7.3f} {ratio:7.2f}")


if __name__ == "__main__":
    main()
