"""Run the issue-9 harness outside pytest and print its figures.

    python -m tests.stress                      # the short (CI) versions
    python -m tests.stress --long               # 4/8 writers x 30-50 commits, 50 kills per operation
    python -m tests.stress --what crash --trials 200 --ops expire_snapshots,rollback_to
    python -m tests.stress --s3                 # against a local S3 server (tests/s3server.py)
    python -m tests.stress --warehouse s3://bucket/prefix   # a real store (AWS_* environment)

Exit status 1 when any promise was broken; `--json FILE` writes every figure and problem.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from tests.stress import crash, workload
from tests.stress.workload import Warehouse


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server = None
    if args.s3:
        from tests.s3server import S3Server

        server = S3Server.start()
        base = Warehouse(server.new_prefix(), tuple(server.env.items()), tuple(server.storage_options.items()))
    elif args.warehouse:
        base = Warehouse(args.warehouse)
    else:
        base = Warehouse(tempfile.mkdtemp(prefix="tarn-stress-"))
    work = tempfile.mkdtemp(prefix="tarn-stress-work-")
    print(f"warehouse {base.uri}  (child logs and ledgers in {work})", flush=True)
    report: dict = {"warehouse": base.uri, "long": args.long, "concurrency": [], "crash": {}}
    broken = 0
    try:
        if "concurrency" in args.what:
            broken += run_concurrency(args, base, work, report)
        if "crash" in args.what:
            broken += run_crash(args, base, work, report)
    finally:
        if server is not None:
            server.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    print(f"\n{'ALL PROMISES HELD' if not broken else f'{broken} RUN(S) BROKE A PROMISE'}")
    return 1 if broken else 0


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tests.stress", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", action="store_true", default=os.environ.get("TARN_STRESS") == "long")
    parser.add_argument("--what", default="concurrency,crash", help="concurrency,crash")
    parser.add_argument("--warehouse", help="local directory or s3:// URI (default: a temp dir)")
    parser.add_argument("--s3", action="store_true", help="start a local S3 server and use it")
    parser.add_argument("--trials", type=int, help="crash trials per operation (default 3, long 50)")
    parser.add_argument("--ops", default=",".join(crash.OPS), help="crash operations")
    parser.add_argument("--scenario", default="", help="only concurrency scenarios whose name contains this")
    parser.add_argument("--json", help="write figures and problems to this file")
    return parser.parse_args(argv)


def sub(base: Warehouse, name: str) -> Warehouse:
    return Warehouse(f"{base.uri.rstrip('/')}/{name}", base.env, base.options)


def run_concurrency(args, base: Warehouse, work: str, report: dict) -> int:
    scenarios = workload.LONG_SCENARIOS if args.long else workload.SHORT_SCENARIOS
    scenarios = [s for s in scenarios if args.scenario in s.name]
    print(f"\n== concurrency: {len(scenarios)} scenarios", flush=True)
    broken = 0
    for scenario in scenarios:
        outcome = workload.run(sub(base, scenario.name), scenario, os.path.join(work, scenario.name))
        print(outcome.summary(), flush=True)
        for problem in outcome.problems[:8]:
            print(f"    ! {problem[:400]}")
        broken += bool(outcome.problems)
        report["concurrency"].append(workload.as_json(outcome))
    return broken


def run_crash(args, base: Warehouse, work: str, report: dict) -> int:
    trials = args.trials or (50 if args.long else 3)
    ops = [op for op in args.ops.split(",") if op]
    print(f"\n== crash: {trials} SIGKILL trials per operation", flush=True)
    broken = 0
    for op in ops:
        began = time.monotonic()
        run = crash.CrashRun(sub(base, f"crash-{op}"), op, os.path.join(work, f"crash-{op}"))
        done = run.run(trials)
        print(f"{crash.summary(op, done)} ({time.monotonic() - began:.0f} s)", flush=True)
        for t in [t for t in done if t.problems][:5]:
            print(f"    ! trial {t.number} ({t.mode}, killed {t.killed_at}): {t.problems[0][:300]}")
        figures = crash.figures(done)
        for kind, n in figures["problem_kinds"].items():
            print(f"    {n:>4} x {kind}")
        broken += figures["broken"] > 0
        report["crash"][op] = {"figures": figures,
                               "broken_trials": [{"number": t.number, "mode": t.mode, "killed_at": t.killed_at,
                                                  "problems": t.problems} for t in done if t.problems]}
    return broken


if __name__ == "__main__":
    sys.exit(main())
