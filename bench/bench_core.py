"""Core benchmark: tarn vs raw pyarrow parquet vs pypaimon 2.1, same rows, one run.

    .venv/bin/python bench/bench_core.py [--rows 2000000] [--no-pypaimon]

Rows: int64 key, int64 value, 20-character string. Prints seconds and ratios against raw
pyarrow (the yardstick). Targets (issue 2): PK write <= 2.0x raw write; merge-read <= 3.0x
raw read of the same rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402

PYPAIMON_SCRIPT = r'''
import json, sys, time, shutil
import pyarrow as pa, pyarrow.ipc as ipc
from pypaimon import CatalogFactory, Schema
spec = json.loads(sys.stdin.read())
with pa.memory_map(spec["ipc"]) as src:
    data = ipc.open_file(src).read_all()
out = {}
def timed(name, fn):
    t0 = time.perf_counter(); r = fn(); out[name] = time.perf_counter() - t0; return r
catalog = CatalogFactory.create({"warehouse": spec["warehouse"]})
catalog.create_database("b", True)
def make(name, pk):
    opts = {"bucket": "4"} if pk else {}
    schema = Schema.from_pyarrow_schema(data.schema, primary_keys=["k"] if pk else None, options=opts)
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)
def write(table, rows):
    wb = table.new_batch_write_builder(); w = wb.new_write(); c = wb.new_commit()
    w.write_arrow(rows); c.commit(w.prepare_commit()); w.close(); c.close()
def read(table):
    rb = table.new_read_builder(); return rb.new_read().to_arrow(rb.new_scan().plan().splits())
app = make("b.app", False)
timed("append_write", lambda: write(app, data))
n = timed("append_read", lambda: read(app)).num_rows
pk = make("b.pk", True)
timed("pk_write", lambda: write(pk, data))
write(pk, data)
m = timed("merge_read", lambda: read(pk)).num_rows
out["rows"] = [n, m]
print(json.dumps(out))
'''


def make_rows(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    keys = rng.permutation(n).astype(np.int64)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    chars = letters[rng.integers(0, 26, size=(n, 20))]
    strings = pa.StringArray.from_buffers(n, pa.py_buffer(np.arange(0, 20 * (n + 1), 20, dtype=np.int32)),
                                          pa.py_buffer(chars.tobytes()))
    return pa.table({"k": keys, "v": rng.integers(0, 1 << 40, n), "s": strings})


def timed(fn, repeat: int = 5):
    """Median wall time of `repeat` runs (and the last result)."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def bench_tarn(rows: pa.Table, workdir: str) -> dict:
    out = {}
    raw_path = os.path.join(workdir, "raw.parquet")
    # zstd, as tarn (and Paimon by default) writes: the ratio compares like with like
    out["raw_write"], _ = timed(lambda: pq.write_table(rows, raw_path, compression="zstd"))
    out["raw_read"], _ = timed(lambda: pq.read_table(raw_path))
    catalog = tarn.Catalog(os.path.join(workdir, "tarn"))
    fresh = iter(range(1000))

    def new_table(pk: bool):
        options = {"bucket": "4"} if pk else {}
        return catalog.create_table(f"b.t{next(fresh)}", schema=rows.schema,
                                    primary_key=["k"] if pk else None, options=options)

    # Writes: median of 5, each into a fresh table (like the raw writes, which overwrite a file).
    out["append_write"], _ = timed(lambda: new_table(False).write(rows))
    app = new_table(False)
    app.write(rows)
    out["append_read"], got = timed(lambda: app.scan().to_arrow())
    assert got.num_rows == rows.num_rows
    out["pk_write"], _ = timed(lambda: new_table(True).write(rows))
    pk = new_table(True)
    pk.write(rows)
    pk.write(rows)  # the same keys again: every read must merge two runs per bucket
    out["merge_read"], got = timed(lambda: pk.scan().to_arrow())
    assert got.num_rows == rows.num_rows
    return out


def bench_pypaimon(rows: pa.Table, workdir: str) -> dict | None:
    sys.path.insert(0, str(REPO))
    from tests.interop.pypaimon_env import peer_python

    ipc_path = os.path.join(workdir, "rows.arrow")
    with pa.ipc.new_file(ipc_path, rows.schema) as writer:
        writer.write_table(rows)
    spec = {"ipc": ipc_path, "warehouse": os.path.join(workdir, "pypaimon")}
    result = subprocess.run([str(peer_python()), "-c", PYPAIMON_SCRIPT], input=json.dumps(spec),
                            capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        print("pypaimon failed:", result.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--no-pypaimon", action="store_true")
    args = parser.parse_args()
    rows = make_rows(args.rows)
    workdir = tempfile.mkdtemp(prefix="tarn-bench-")
    try:
        ours = bench_tarn(rows, workdir)
        theirs = None if args.no_pypaimon else bench_pypaimon(rows, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"rows: {args.rows:,} (int64 key, int64 value, 20-char string)\n")
    print(f"{'operation':34} {'tarn s':>8} {'x raw':>7} {'pypaimon s':>11} {'x raw':>7}")
    lines = [
        ("raw pyarrow parquet write (zstd)", "raw_write", "raw_write"),
        ("raw pyarrow parquet read (zstd)", "raw_read", "raw_read"),
        ("append write", "append_write", "raw_write"),
        ("append read", "append_read", "raw_read"),
        ("PK write (bucket 4, one commit)", "pk_write", "raw_write"),
        ("PK merge-read (2 commits, same keys)", "merge_read", "raw_read"),
    ]
    for label, key, base in lines:
        t = ours[key]
        row = f"{label:34} {t:8.3f} {t / ours[base]:7.2f}"
        if theirs and key in theirs:
            row += f" {theirs[key]:11.3f} {theirs[key] / ours[base]:7.2f}"
        print(row)
    print(f"\ntargets: PK write <= 2.0x raw write -> {ours['pk_write'] / ours['raw_write']:.2f}x; "
          f"merge-read <= 3.0x raw read -> {ours['merge_read'] / ours['raw_read']:.2f}x")


if __name__ == "__main__":
    main()
