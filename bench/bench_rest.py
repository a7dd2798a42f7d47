"""REST catalog commit benchmark (the catalogs issue): a small commit (an append of a few rows)
through the REST catalog (`tarn serve` in its own process, over the directory catalog) against
the same commit through the directory catalog, on the same local warehouse; prints the median
time of each and their ratio (the target: the REST catalog adds at most 20%).

    .venv/bin/python bench/bench_rest.py [--commits 150] [--rows 5] [--in-process]

Each side gets its own table of the same shape in the same warehouse and writes the same rows.
After a few warm-up commits each, the two sides take turns, commit by commit, in alternating
order (direct then REST, then REST then direct), so that whatever else the machine is doing
falls on both alike: the ratio judged is the median of the per-turn ratios (REST over
directory, each pair timed back to back); the ratio of the two medians is printed too. Each
`table.write(...)` is timed whole (write the data file, the manifests, then the commit: a
snapshot file created in the table's directory, or the snapshot POSTed to the server, which
creates it). `--in-process` runs the server in a thread of this process instead (it then
shares this interpreter's lock with the client).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tarn.catalog.filesystem import FileSystemCatalog  # noqa: E402
from tarn.catalog.rest import RestCatalog  # noqa: E402

TOKEN = "bench-token"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
WARMUP = 10
TARGET = 1.20


def batch(commit: int, rows: int) -> pa.Table:
    ids = [commit * 1_000 + i for i in range(rows)]
    return pa.table({"id": ids, "v": [f"row {i}" for i in ids]}, schema=SCHEMA)


def timed_write(table, data: pa.Table) -> float:
    started = time.perf_counter()
    table.write(data)
    return time.perf_counter() - started


def timed_commits(direct_table, rest_table, commits: int, rows: int) -> tuple[list[float], list[float]]:
    """Seconds per commit of each table, taking turns (the same rows for both)."""
    for i in range(WARMUP):
        direct_table.write(batch(i, rows))
        rest_table.write(batch(i, rows))
    direct, through_rest = [], []
    for i in range(WARMUP, WARMUP + commits):
        data = batch(i, rows)
        if i % 2:
            direct.append(timed_write(direct_table, data))
            through_rest.append(timed_write(rest_table, data))
        else:
            through_rest.append(timed_write(rest_table, data))
            direct.append(timed_write(direct_table, data))
    return direct, through_rest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(warehouse: str, in_process: bool):
    """(url, stop) of a server over the directory catalog at `warehouse`."""
    if in_process:
        from tarn.server.run import ServerThread

        server = ServerThread(FileSystemCatalog(warehouse), [TOKEN]).start()
        return server.url, server.stop
    port = free_port()
    env = {**os.environ, "TARN_SERVE_TOKEN": TOKEN}
    process = subprocess.Popen([sys.executable, "-m", "tarn.server", "--warehouse", warehouse, "--port", str(port),
                                "--log-level", "warning"], env=env, cwd=REPO)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"tarn serve did not start on {url}")
            time.sleep(0.05)

    def stop():
        process.terminate()
        process.wait(15)
    return url, stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=150)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()

    warehouse = tempfile.mkdtemp(prefix="bench-rest-")
    directory = FileSystemCatalog(warehouse)
    directory.create_database("bench")
    direct_table = directory.create_table("bench.direct", SCHEMA)
    url, stop = start_server(warehouse, args.in_process)
    try:
        rest = RestCatalog({"uri": url, "token.provider": "bear", "token": TOKEN}, "bench")
        rest_table = rest.create_table("bench.rest", SCHEMA)
        direct, through_rest = timed_commits(direct_table, rest_table, args.commits, args.rows)
    finally:
        stop()
        shutil.rmtree(warehouse, ignore_errors=True)
    where = "a thread of this process" if args.in_process else "its own process"
    print(f"append of {args.rows} rows, {args.commits} commits per catalog, taking turns (server in {where}):")
    print(f"{'catalog':12} {'median ms':>10} {'p10 ms':>8} {'p90 ms':>8}")
    for name, seconds in (("directory", direct), ("REST", through_rest)):
        deciles = statistics.quantiles(seconds, n=10)
        print(f"{name:12} {statistics.median(seconds) * 1000:10.2f} {deciles[0] * 1000:8.2f} "
              f"{deciles[-1] * 1000:8.2f}")
    of_medians = statistics.median(through_rest) / statistics.median(direct)
    paired = statistics.median(r / d for r, d in zip(through_rest, direct))
    print(f"\nREST / directory: ratio of the medians {of_medians:.2f}x, median of the paired ratios {paired:.2f}x")
    verdict = "met" if paired <= TARGET else "NOT met"
    print(f"target: REST <= {TARGET:.2f}x directory (paired) -> {paired:.2f}x ({verdict})")


if __name__ == "__main__":
    main()
