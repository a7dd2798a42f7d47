"""REST catalog commit benchmark (the catalogs issue): a small commit (an append of a few rows)
through the REST catalog (`tarn serve` in its own process, over the directory catalog) against
the same commit through the directory catalog, on the same local warehouse; prints the median
time of each and their ratio (the target: the REST catalog adds at most 20%).

    .venv/bin/python bench/bench_rest.py [--commits 60] [--rows 5] [--in-process]

Each side gets its own table of the same shape in the same warehouse, commits `--commits`
times after a few warm-up commits, and is timed per `table.write(...)` (write the data file,
the manifests, then the commit: a snapshot file created in the table's directory, or the
snapshot POSTed to the server, which creates it). `--in-process` runs the server in a thread
of this process instead (it then shares this interpreter's lock with the client).
"""

from __future__ import annotations

import argparse
import os
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
WARMUP = 5
TARGET = 1.20


def batch(commit: int, rows: int) -> pa.Table:
    ids = [commit * 1_000 + i for i in range(rows)]
    return pa.table({"id": ids, "v": [f"row {i}" for i in ids]}, schema=SCHEMA)


def timed_commits(table, commits: int, rows: int) -> list[float]:
    for i in range(WARMUP):
        table.write(batch(i, rows))
    seconds = []
    for i in range(WARMUP, WARMUP + commits):
        started = time.perf_counter()
        table.write(batch(i, rows))
        seconds.append(time.perf_counter() - started)
    return seconds


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
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()

    warehouse = tempfile.mkdtemp(prefix="bench-rest-")
    directory = FileSystemCatalog(warehouse)
    direct_table = directory.create_table("bench.direct", SCHEMA)
    url, stop = start_server(warehouse, args.in_process)
    try:
        rest = RestCatalog({"uri": url, "token.provider": "bear", "token": TOKEN}, "bench")
        rest.create_database("bench")
        rest_table = rest.create_table("bench.rest", SCHEMA)
        direct = timed_commits(direct_table, args.commits, args.rows)
        through_rest = timed_commits(rest_table, args.commits, args.rows)
    finally:
        stop()
    direct_ms, rest_ms = statistics.median(direct) * 1000, statistics.median(through_rest) * 1000
    ratio = rest_ms / direct_ms
    where = "a thread of this process" if args.in_process else "its own process"
    print(f"append of {args.rows} rows, median of {args.commits} commits (server in {where}):")
    print(f"{'catalog':12} {'ms/commit':>10}")
    print(f"{'directory':12} {direct_ms:10.2f}")
    print(f"{'REST':12} {rest_ms:10.2f}")
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"\ntarget: REST <= {TARGET:.2f}x directory -> {ratio:.2f}x ({verdict})")


if __name__ == "__main__":
    main()
