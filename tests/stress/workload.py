"""Concurrency harness: N writer processes x K commits on one table, optionally a compactor
process looping `compact(full=True)` and aggressive snapshot expiry; then the table is read
back and compared with what every process was told.

A writer records each write as acknowledged (`write()` returned) or failed (it raised; only
`CommitConflict` is an allowed failure). Rows carry their writer, commit number and a value
naming the commit, so a read tells exactly which commit a row came from.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import multiprocessing as mp
import os
import random
import signal
import threading
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field

import pyarrow as pa

import tarn
from tarn.fs import FileIO

from tests.stress import checks

TABLE = "stress.t"
KINDS = ("append", "pk", "pk-partitioned")
KEYS_PER_WRITER = 40

APPEND_SCHEMA = pa.schema([("w", pa.int32()), ("c", pa.int32()), ("id", pa.int64()), ("v", pa.string())])
PK_SCHEMA = pa.schema([("p", pa.string()), pa.field("k", pa.int64(), nullable=False),
                       ("w", pa.int32()), ("c", pa.int32()), ("v", pa.string())])


@dataclass(frozen=True)
class Scenario:
    kind: str = "append"           # append | pk (shared buckets) | pk-partitioned (a partition per writer)
    writers: int = 4
    commits: int = 10              # per writer
    compactor: bool = False        # a process looping compact(full=True) (primary-key tables)
    reader: bool = True            # a process scanning the latest snapshot in a loop
    kills: int = 0                 # writers SIGKILLed at a random moment (the last ones)
    tagger: bool = False           # a process tagging the earliest snapshot and deleting old tags
    expiry: bool = False           # snapshot.num-retained.min = max = 5, time-retained 1 ms
    retain_min: int = 5            # with expiry: snapshot.num-retained.min (1: expiry races every commit)
    tags: bool = True              # writer 0 tags the latest snapshot every 5th commit
    rows: int = 8                  # rows per commit
    seed: int = 0

    @property
    def name(self) -> str:
        parts = [self.kind, f"{self.writers}x{self.commits}"]
        parts += ["compactor"] if self.compactor else []
        parts += ([f"expiry{self.retain_min}" if self.retain_min != 5 else "expiry"] if self.expiry else [])
        parts += [f"kill{self.kills}"] if self.kills else []
        parts += [f"seed{self.seed}"] if self.seed else []
        parts += ["tagger"] if self.tagger else []
        return "-".join(parts)

    @property
    def primary_key(self) -> bool:
        return self.kind != "append"

    def options(self) -> dict[str, str]:
        options = {"commit.max-retries": "30"}
        if self.primary_key:
            # writers compact on their own too: APPEND + COMPACT commits that can conflict
            options.update({"bucket": "2", "num-sorted-run.compaction-trigger": "3"})
        if self.expiry:
            options.update({"snapshot.num-retained.min": str(self.retain_min), "snapshot.num-retained.max": "5",
                            "snapshot.time-retained": "1 ms"})
        return options


@dataclass(frozen=True)
class Warehouse:
    """Where the tables live: a local directory or an object-store URI (`s3://bucket/prefix`),
    with the environment and catalog options a process needs to reach it. Picklable, so
    every child process opens the same warehouse."""

    uri: str
    env: tuple[tuple[str, str], ...] = ()
    options: tuple[tuple[str, str], ...] = ()

    def catalog(self) -> tarn.Catalog:
        os.environ.update(dict(self.env))
        if self.options:
            return tarn.Catalog(self.uri, dict(self.options))
        return tarn.Catalog(self.uri)


def open_catalog(warehouse: "Warehouse | str") -> tarn.Catalog:
    return warehouse.catalog() if isinstance(warehouse, Warehouse) else tarn.Catalog(warehouse)


SHORT_SCENARIOS = [  # the CI cases: each under 10 s on 2 cores
    Scenario("append", writers=4, commits=8),
    Scenario("append", writers=8, commits=6, expiry=True, kills=2),
    Scenario("pk", writers=4, commits=6, compactor=True),
    Scenario("pk", writers=4, commits=6, compactor=True, expiry=True, kills=1),
    Scenario("pk-partitioned", writers=4, commits=6, compactor=True, expiry=True, tagger=True),
]
# issue 38: every commit's own expiry keeps one snapshot, so it races every other writer (an
# expired id free again, a base re-created behind); 8 writers x 50 commits of 5 rows, seeds apart
EXPIRY_RACE_SCENARIOS = [
    *(Scenario("append", writers=8, commits=50, expiry=True, retain_min=1, rows=5, tags=False, reader=False,
               seed=seed) for seed in (1, 2, 3)),
    *(Scenario("pk", writers=8, commits=50, compactor=True, expiry=True, retain_min=1, rows=5, tags=False,
               reader=False, seed=seed) for seed in (1, 2)),
]
LONG_SCENARIOS = [
    Scenario("append", writers=4, commits=50),
    Scenario("append", writers=8, commits=50, expiry=True),  # the expired-id-reuse workload
    Scenario("append", writers=8, commits=30, expiry=True, kills=3),
    Scenario("pk", writers=4, commits=40),
    Scenario("pk", writers=8, commits=30, compactor=True),
    Scenario("pk", writers=8, commits=30, compactor=True, expiry=True),
    Scenario("pk", writers=8, commits=30, compactor=True, expiry=True, kills=3),
    Scenario("pk-partitioned", writers=4, commits=40, compactor=True),
    Scenario("pk-partitioned", writers=8, commits=30, compactor=True, expiry=True),
    Scenario("append", writers=4, commits=30, expiry=True, tagger=True),
    Scenario("pk", writers=4, commits=30, compactor=True, expiry=True, tagger=True),
]


def create_table(warehouse: Warehouse | str, scenario: Scenario) -> tarn.Table:
    catalog = open_catalog(warehouse)
    if scenario.primary_key:
        return catalog.create_table(TABLE, schema=PK_SCHEMA, primary_key=["p", "k"], partition_keys=["p"],
                                    options=scenario.options())
    return catalog.create_table(TABLE, schema=APPEND_SCHEMA, options=scenario.options())


# ---------------------------------------------------------------------------------------------
# what a writer does


def commit_value(writer: int, commit: int) -> str:
    return f"w{writer}c{commit}"


def append_ids(writer: int, commit: int, rows: int) -> list[int]:
    return [writer * 1_000_000 + commit * 1_000 + j for j in range(rows)]


def writer_partition(scenario: Scenario, writer: int) -> str:
    return f"w{writer}" if scenario.kind == "pk-partitioned" else "all"


def plan_commit(scenario: Scenario, writer: int, commit: int, rng: random.Random) -> dict:
    """One commit of a writer: an append batch, a primary-key upsert of some of its own keys,
    or (every 4th commit of a primary-key writer) a delete of a few of its keys."""
    if not scenario.primary_key:
        return {"op": "write", "ids": append_ids(writer, commit, scenario.rows)}
    own = [writer * 10_000 + j for j in range(KEYS_PER_WRITER)]
    if commit % 4 == 3:
        return {"op": "delete", "keys": sorted(rng.sample(own, 2))}
    return {"op": "write", "keys": sorted(rng.sample(own, scenario.rows))}


def batch_of(scenario: Scenario, writer: int, commit: int, planned: dict) -> pa.Table:
    value = commit_value(writer, commit)
    if not scenario.primary_key:
        ids = planned["ids"]
        n = len(ids)
        return pa.table({"w": [writer] * n, "c": [commit] * n, "id": ids, "v": [value] * n}, schema=APPEND_SCHEMA)
    keys = planned["keys"]
    n = len(keys)
    return pa.table({"p": [writer_partition(scenario, writer)] * n, "k": keys, "w": [writer] * n,
                     "c": [commit] * n, "v": [value] * n}, schema=PK_SCHEMA)


def count_snapshot_attempts(stats: Counter) -> None:
    """Count snapshot-file creations in this process (attempts) and those that lost a race
    (retries), by wrapping the storage primitive every commit goes through."""
    original = FileIO.write_if_absent

    def counted(self, path, data):
        created = original(self, path, data)
        if "/snapshot/snapshot-" in path:
            stats["attempts"] += 1
            stats["lost_races"] += 0 if created else 1
        return created

    FileIO.write_if_absent = counted


class _CountingHandler(logging.Handler):
    """Counts tarn's log warnings (e.g. "compaction dropped after its data commit landed")
    instead of printing them from every process."""

    def __init__(self, stats: Counter):
        super().__init__(logging.WARNING)
        self.stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        self.stats["log_warnings"] += 1
        if "compaction dropped" in record.getMessage():
            self.stats["dropped_compactions"] += 1


def instrument(stats: Counter) -> None:
    count_snapshot_attempts(stats)
    logging.getLogger("tarn").addHandler(_CountingHandler(stats))


def writer_main(warehouse: Warehouse | str, scenario: Scenario, writer: int, out_path: str, start) -> None:
    stats: Counter = Counter()
    instrument(stats)
    table = open_catalog(warehouse).load_table(TABLE)
    rng = random.Random(scenario.seed * 7919 + writer)
    ledger = []
    journal = os.open(out_path + "l", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    start.wait()
    for commit in range(scenario.commits):
        planned = plan_commit(scenario, writer, commit, rng)
        batch = batch_of(scenario, writer, commit, planned)
        record = {"commit": commit, **planned, "ok": False, "error": None, "conflict": False}
        os.write(journal, (json.dumps(dict(record, ok=None)) + "\n").encode())  # survives SIGKILL
        began = time.monotonic()
        try:
            if planned["op"] == "delete":
                result = table.delete(batch.select(["p", "k"]))
            else:
                result = table.write(batch)
            record["ok"] = True
            record["snapshots"] = result.snapshot_ids if result is not None else []
        except tarn.CommitConflict as exc:
            record.update(conflict=True, error=f"CommitConflict: {exc}")
        except Exception as exc:  # noqa: BLE001 - recorded, judged by the parent
            record["error"] = f"{type(exc).__name__}: {exc} | {_where(exc)}"
        record["seconds"] = round(time.monotonic() - began, 4)
        ledger.append(record)
        os.write(journal, (json.dumps(record) + "\n").encode())
        if scenario.tags and writer == 0 and commit % 5 == 4:
            try:
                table.create_tag(f"w0-c{commit}")
            except Exception as exc:  # noqa: BLE001
                stats["tag_errors"] += 1
                ledger.append({"commit": commit, "op": "tag", "ok": False, "conflict": False,
                               "error": f"{type(exc).__name__}: {exc}"})
    _dump(out_path, {"writer": writer, "ledger": ledger, "stats": dict(stats)})


def compactor_main(warehouse: Warehouse | str, out_path: str, start, stop) -> None:
    stats: Counter = Counter()
    instrument(stats)
    table = open_catalog(warehouse).load_table(TABLE)
    errors, snapshots = [], []
    start.wait()
    while not stop.is_set():
        try:
            result = table.compact(full=True)
            snapshots += result.snapshot_ids if result is not None else []
            stats["compactions"] += 1
        except tarn.CommitConflict:
            stats["compaction_conflicts"] += 1
        except Exception as exc:  # noqa: BLE001
            stats["compaction_errors"] += 1
            errors.append(f"compactor: {type(exc).__name__}: {exc} | {_where(exc)}")
        time.sleep(0.005)
    _dump(out_path, {"stats": dict(stats), "errors": errors[:20], "snapshots": snapshots})


def tagger_main(warehouse: Warehouse | str, out_path: str, start, stop) -> None:
    """Tag the earliest snapshot (the next one expiry takes) and delete the oldest of these
    tags again, racing expiry: a tag must end up readable or not be created at all."""
    table = open_catalog(warehouse).load_table(TABLE)
    stats: Counter = Counter()
    errors: list[str] = []
    made: list[str] = []
    start.wait()
    n = 0
    while not stop.is_set():
        n += 1
        try:
            earliest = table.snapshot_store.earliest_id()
            if earliest is not None:
                table.create_tag(f"old-{n}", snapshot_id=earliest)
                made.append(f"old-{n}")
                stats["old_tags"] += 1
            if len(made) > 3:
                table.delete_tag(made.pop(0))
        except tarn.SnapshotNotFound:
            stats["old_tags_missed"] += 1  # expired between looking and tagging: fine
        except Exception as exc:  # noqa: BLE001
            stats["tagger_errors"] += 1
            if len(errors) < 10:
                errors.append(f"tagger: {type(exc).__name__}: {exc} | {_where(exc)}")
        time.sleep(0.01)
    _dump(out_path, {"stats": dict(stats), "errors": errors})


def reader_main(warehouse: Warehouse | str, scenario: Scenario, out_path: str, start, stop) -> None:
    """Scan the latest snapshot until stopped. Every scan must work, show each append commit
    whole or not at all, show each key once, and never go back in time (a row seen stays
    seen; a key's value never comes from an older commit than before)."""
    table = open_catalog(warehouse).load_table(TABLE)
    stats: Counter = Counter()
    problems: list[str] = []
    seen: dict = {}
    start.wait()
    while not stop.is_set():
        try:
            rows = table.scan().to_arrow()
        except Exception as exc:  # noqa: BLE001
            stats["read_errors"] += 1
            if len(problems) < 10:
                problems.append(f"reader: scan of the latest snapshot raised {type(exc).__name__}: {exc} "
                                f"| {_where(exc)}")
            continue
        stats["reads"] += 1
        now = _reader_view(scenario, rows, problems)
        for key, commit in seen.items():
            if key not in now and not scenario.primary_key:
                problems.append(f"reader: row {key} seen by an earlier read of the latest snapshot is gone")
                break
            if key in now and now[key] < commit:
                problems.append(f"reader: key {key} shows commit {now[key]} after a read showed commit {commit}")
                break
        seen = now
        del problems[20:]
        time.sleep(0.005)
    _dump(out_path, {"stats": dict(stats), "errors": problems})


def _reader_view(scenario: Scenario, rows: pa.Table, problems: list[str]) -> dict:
    """{row id or key: commit number} of one read, checking duplicates and torn commits."""
    if scenario.primary_key:
        view = {}
        for k, c in zip(rows.column("k").to_pylist(), rows.column("c").to_pylist()):
            if k in view:
                problems.append(f"reader: key {k} appears twice in one read")
            view[k] = c
        return view
    ids = rows.column("id").to_pylist()
    per_commit = Counter(i // 1_000 for i in ids)
    torn = [(wc // 1_000, wc % 1_000, n) for wc, n in per_commit.items() if n != scenario.rows]
    if torn:
        problems.append(f"reader: a read shows part of a commit (writer, commit, rows): {torn[:5]}")
    return {i: i // 1_000 % 1_000 for i in ids}


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return " < ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames[-9:]))


def _dump(path: str, obj) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------------------------------------
# running a scenario


def context():
    """Child processes start from a fresh interpreter (forkserver with tarn preloaded: clean
    like spawn, without paying the imports for every process)."""
    ctx = mp.get_context("forkserver")
    preload = ["tests.stress.workload"]
    if importlib.util.find_spec("boto3") is not None:
        preload.append("boto3")  # S3 conditional PUTs; importing it starts no threads
    ctx.set_forkserver_preload(preload)
    return ctx


@dataclass
class Outcome:
    scenario: Scenario
    figures: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        f = self.figures
        return (f"{self.scenario.name:<34} commits {f.get('acked', 0):>4}/{f.get('attempted', 0):<4} "
                f"conflicts {f.get('conflicts', 0):>3} errors {f.get('errors', 0):>3} "
                f"retries {f.get('lost_races', 0):>4} compactions {f.get('compactions', 0):>3}"
                f"/{f.get('compaction_conflicts', 0)}c/{f.get('compaction_errors', 0)}e "
                f"dropped {f.get('dropped_compactions', 0):>3} snapshots {f.get('latest_id')} (kept {f.get('retained')}) tags {f.get('tags', 0)} "
                f"reads {f.get('reads', 0)}/{f.get('read_errors', 0)}e | "
                f"lost {f.get('lost_rows', 0)} dup {f.get('duplicated_rows', 0)} "
                f"ghost {f.get('failed_rows_visible', 0)} wrong {f.get('wrong_values', 0)} "
                f"unreadable {f.get('unreadable', 0)} gaps {f.get('id_gaps', 0)} "
                f"killed {f.get('killed_writers', 0)} (landed {f.get('in_flight_landed', 0)}) "
                f"orphans {f.get('orphans_removed', 0)} "
                f"({f.get('seconds', 0):.1f} s)")


def run(warehouse: Warehouse | str, scenario: Scenario, work_dir: str, timeout_s: float = 600) -> Outcome:
    """Create the table under `warehouse`, run the processes, read the table back."""
    create_table(warehouse, scenario)
    ctx = context()
    start = ctx.Barrier(scenario.writers + scenario.compactor + scenario.reader + scenario.tagger + 1)
    stop = ctx.Event()
    os.makedirs(work_dir, exist_ok=True)
    outs = [os.path.join(work_dir, f"writer-{w}.json") for w in range(scenario.writers)]
    procs = [ctx.Process(target=writer_main, args=(warehouse, scenario, w, outs[w], start), daemon=True)
             for w in range(scenario.writers)]
    compactor_out = os.path.join(work_dir, "compactor.json")
    if scenario.compactor:
        procs.append(ctx.Process(target=compactor_main, args=(warehouse, compactor_out, start, stop), daemon=True))
    reader_out = os.path.join(work_dir, "reader.json")
    if scenario.reader:
        procs.append(ctx.Process(target=reader_main, args=(warehouse, scenario, reader_out, start, stop),
                                 daemon=True))
    tagger_out = os.path.join(work_dir, "tagger.json")
    if scenario.tagger:
        procs.append(ctx.Process(target=tagger_main, args=(warehouse, tagger_out, start, stop), daemon=True))
    began = time.monotonic()
    for p in procs:
        p.start()
    start.wait(timeout=120)
    outcome = Outcome(scenario)
    doomed = list(range(scenario.writers - scenario.kills, scenario.writers))
    killers = [threading.Thread(target=_kill_later, args=(procs[w], outs[w] + "l", scenario, w), daemon=True)
               for w in doomed]
    for thread in killers:
        thread.start()
    deadline = began + timeout_s
    for p in procs[: scenario.writers]:
        p.join(max(1, deadline - time.monotonic()))
    stop.set()
    for p in procs[scenario.writers:]:
        p.join(max(1, deadline - time.monotonic()))
    for thread in killers:
        thread.join(5)
    for i, p in enumerate(procs):
        if p.is_alive():
            p.kill()
            outcome.problems.append(f"process {p.name} still running after {timeout_s} s (hung?)")
        elif p.exitcode != 0 and not (i in doomed and p.exitcode == -signal.SIGKILL):
            outcome.problems.append(f"process {p.name} exited with {p.exitcode}")
    elapsed = time.monotonic() - began
    results = [_load(path) or _load_journal(path + "l", w) for w, path in enumerate(outs)]
    outcome.figures["killed_writers"] = sum(results[w] is not None and results[w].get("killed", False)
                                            for w in doomed)
    helpers = [_load(path) for path, on in ((compactor_out, scenario.compactor), (reader_out, scenario.reader),
                                            (tagger_out, scenario.tagger)) if on]
    verify(warehouse, scenario, results, helpers, outcome)
    outcome.figures["seconds"] = elapsed
    return outcome


def _kill_later(process, journal: str, scenario: Scenario, writer: int) -> None:
    """SIGKILL the writer once it has begun a random one of its commits, a moment later."""
    rng = random.Random(scenario.seed * 104729 + writer)
    target = rng.randint(1, max(1, scenario.commits - 1))
    deadline = time.monotonic() + 300
    while process.is_alive() and time.monotonic() < deadline:
        try:
            with open(journal) as f:
                begun = sum('"ok": null' in line for line in f)
        except FileNotFoundError:
            begun = 0
        if begun >= target:
            time.sleep(rng.uniform(0, 0.05))
            break
        time.sleep(0.002)
    if process.is_alive():
        os.kill(process.pid, signal.SIGKILL)


def _load_journal(path: str, writer: int):
    """The ledger of a killed writer, from its journal: a commit begun and never finished is
    in flight (`ok` None): it may have landed, entirely or not at all."""
    try:
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return None
    ledger: dict[int, dict] = {}
    for record in lines:
        ledger[record["commit"]] = record
    return {"writer": writer, "ledger": list(ledger.values()), "stats": {}, "killed": True}


def _load(path: str):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------------------------------------
# judging


def verify(warehouse: Warehouse | str, scenario: Scenario, results: list, helpers: list, outcome: Outcome) -> None:
    """Judge the table against the writers' ledgers and the compactor's and reader's reports."""
    figures, problems = outcome.figures, outcome.problems
    stats: Counter = Counter()
    records = []
    for w, result in enumerate(results):
        if result is None:
            problems.append(f"writer {w} left no ledger")
            continue
        stats.update(result["stats"])
        records += [dict(r, writer=w) for r in result["ledger"] if r["op"] != "tag"]
        for r in result["ledger"]:
            if r["op"] == "tag" and r["error"]:
                problems.append(f"writer {w}: create_tag after commit {r['commit']} failed: {r['error']}")
    for helper in helpers:
        if helper is None:
            problems.append("the compactor or reader process left no report")
            continue
        stats.update(helper["stats"])
        problems += helper["errors"]
    acked = [r for r in records if r["ok"]]
    failed = [r for r in records if r["ok"] is False]
    in_flight = [r for r in records if r["ok"] is None]
    problems += _grouped_errors([r for r in failed if not r["conflict"]])
    problems += _ids_given_twice(acked, helpers)
    figures.update(attempted=len(records), acked=len(acked), conflicts=sum(r["conflict"] for r in failed),
                   errors=sum(not r["conflict"] for r in failed), lost_races=stats["lost_races"],
                   snapshot_attempts=stats["attempts"], compactions=stats["compactions"],
                   compaction_conflicts=stats["compaction_conflicts"],
                   compaction_errors=stats["compaction_errors"], tag_errors=stats["tag_errors"],
                   dropped_compactions=stats["dropped_compactions"], reads=stats["reads"],
                   read_errors=stats["read_errors"], old_tags=stats["old_tags"],
                   old_tags_missed=stats["old_tags_missed"])

    table = open_catalog(warehouse).load_table(TABLE)
    back = checks.read_everything(table)
    figures.update(latest_id=back.latest_id, retained=len(back.ids), tags=len(back.tags),
                   unreadable=len(back.errors))
    problems += back.unreadable()
    gaps = checks.continuity_problems(back)
    figures["id_gaps"] = len(gaps)
    problems += gaps
    problems += checks.metadata_problems(table)
    latest = back.snapshots.get(back.latest_id) if back.latest_id is not None else None
    if latest is None:
        if acked:
            problems.append(f"latest snapshot {back.latest_id} could not be read; {len(acked)} commits acknowledged")
        return
    if scenario.primary_key:
        _judge_pk(latest, acked, failed, in_flight, figures, problems)
    else:
        _judge_append(latest, acked, failed, in_flight, figures, problems)
        _judge_append_history(back, problems)
    _judge_storage(table, figures, problems)


def _ids_given_twice(acked: list, helpers: list) -> list[str]:
    """Every snapshot id a call was told it made belongs to that call alone."""
    told: dict[int, list[str]] = {}
    for r in acked:
        for sid in r.get("snapshots", []):
            told.setdefault(sid, []).append(f"writer {r['writer']} commit {r['commit']}")
    for helper in helpers:
        for sid in (helper or {}).get("snapshots", []):
            told.setdefault(sid, []).append("compactor")
    return [f"snapshot {sid} acknowledged to {len(calls)} calls: {calls}"
            for sid, calls in sorted(told.items()) if len(calls) > 1]


def _judge_storage(table, figures: dict, problems: list) -> None:
    """With every process gone: orphan removal leaves exactly the referenced files, and the
    latest snapshot and the tags still read."""
    try:
        figures["orphans_removed"] = len(checks.remove_orphans_now(table))
    except Exception as exc:  # noqa: BLE001
        problems.append(f"remove_orphan_files raised {checks._describe(exc)}")
        return
    problems += [f"after remove_orphan_files: {p}" for p in checks.storage_problems(table)]
    try:
        table.scan().to_arrow()
        for tag in table.list_tags():
            table.scan(tag=tag.name).to_arrow()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"after remove_orphan_files a read fails: {checks._describe(exc)}")


def _grouped_errors(records: list) -> list[str]:
    """One line per kind of error (exception type and where it was raised), with a count
    and the first occurrence."""
    groups: dict[str, list] = {}
    for r in records:
        kind = r["error"].split(":", 1)[0] + " @ " + r["error"].rsplit("|", 1)[-1].strip()
        groups.setdefault(kind, []).append(r)
    return [f"{len(rs)} write(s) raised {kind}; first: writer {rs[0]['writer']} commit {rs[0]['commit']} "
            f"({rs[0]['op']}): {rs[0]['error'][:400]}" for kind, rs in groups.items()]


def _judge_append(latest: pa.Table, acked: list, failed: list, in_flight: list, figures: dict,
                  problems: list) -> None:
    counts = Counter(latest.column("id").to_pylist())
    expected = {i for r in acked for i in r["ids"]}
    failed_ids = {i for r in failed for i in r["ids"]}
    for r in in_flight:  # a killed writer's last commit: all of it or none
        present = [i for i in r["ids"] if i in counts]
        figures["in_flight_landed"] = figures.get("in_flight_landed", 0) + bool(present)
        if present and len(present) != len(r["ids"]):
            problems.append(f"killed writer {r['writer']}: {len(present)} of the {len(r['ids'])} rows of its "
                            f"interrupted commit {r['commit']} are visible")
        expected |= set(present)
    lost = expected - counts.keys()
    duplicated = sum(n - 1 for n in counts.values() if n > 1)
    ghosts = failed_ids & counts.keys()
    unknown = counts.keys() - expected - failed_ids
    figures.update(lost_rows=len(lost), duplicated_rows=duplicated, failed_rows_visible=len(ghosts),
                   wrong_values=len(unknown))
    if lost:
        commits = sorted({(i // 1_000_000, i // 1_000 % 1_000) for i in lost})
        problems.append(f"{len(lost)} acknowledged rows lost, of (writer, commit) {checks._short(commits)}")
    if duplicated:
        problems.append(f"{duplicated} duplicated rows, e.g. ids {checks._short([i for i, n in counts.items() if n > 1])}")
    if ghosts:
        commits = sorted({(i // 1_000_000, i // 1_000 % 1_000) for i in ghosts})
        problems.append(f"{len(ghosts)} rows of failed writes visible, of (writer, commit) {checks._short(commits)}")
    if unknown:
        problems.append(f"{len(unknown)} rows nobody wrote: {checks._short(sorted(unknown))}")


def _judge_append_history(back: checks.Readback, problems: list) -> None:
    """Append-only history: every row of snapshot N is still in snapshot N+1."""
    ids = sorted(back.snapshots)
    for before, after in zip(ids, ids[1:]):
        if after != before + 1:
            continue
        vanished = set(back.snapshots[before].column("id").to_pylist()) - set(
            back.snapshots[after].column("id").to_pylist())
        if vanished:
            problems.append(f"{len(vanished)} rows of snapshot {before} missing from snapshot {after}")


def _judge_pk(latest: pa.Table, acked: list, failed: list, in_flight: list, figures: dict,
              problems: list) -> None:
    expected: dict[int, str | None] = {}
    for r in sorted(acked, key=lambda r: (r["writer"], r["commit"])):  # a key has one writer
        for k in r["keys"]:
            expected[k] = commit_value(r["writer"], r["commit"]) if r["op"] == "write" else None
    failed_values = {commit_value(r["writer"], r["commit"]) for r in failed}
    rows = latest.select(["k", "v"]).to_pylist()
    counts = Counter(row["k"] for row in rows)
    actual = {row["k"]: row["v"] for row in rows}
    for r in in_flight:  # a killed writer's last commit, after all its others: all of it or none
        value = commit_value(r["writer"], r["commit"]) if r["op"] == "write" else None
        took = [k for k in r["keys"] if (actual.get(k) == value if value else k not in actual)]
        figures["in_flight_landed"] = figures.get("in_flight_landed", 0) + bool(took)
        if value is None:  # a delete "took" where the key is gone; it may have been gone before
            took = [k for k in took if expected.get(k) is not None]
            changed = [k for k in r["keys"] if expected.get(k) is not None]
        else:
            changed = r["keys"]
        if took and len(took) != len(changed):
            problems.append(f"killed writer {r['writer']}: {len(took)} of the {len(changed)} keys of its "
                            f"interrupted {r['op']} {r['commit']} show it")
        for k in took:
            expected[k] = value
    duplicated = sum(n - 1 for n in counts.values() if n > 1)
    lost = [k for k, v in expected.items() if v is not None and k not in actual]
    resurrected = [k for k, v in expected.items() if v is None and k in actual]
    ghosts = [k for k, v in actual.items() if v in failed_values]
    wrong = [k for k, v in actual.items() if k in expected and v != expected[k] and v not in failed_values]
    unknown = [k for k in actual if k not in expected and actual[k] not in failed_values]
    figures.update(lost_rows=len(lost), duplicated_rows=duplicated, failed_rows_visible=len(ghosts),
                   wrong_values=len(wrong) + len(resurrected) + len(unknown))
    if lost:
        problems.append(f"{len(lost)} acknowledged keys lost: "
                        + checks._short([(k, expected[k]) for k in sorted(lost)], 8))
    if duplicated:
        problems.append(f"{duplicated} duplicated keys: {checks._short([k for k, n in counts.items() if n > 1])}")
    if ghosts:
        problems.append(f"{len(ghosts)} keys show a failed write's value: "
                        + checks._short([(k, actual[k]) for k in sorted(ghosts)], 8))
    if wrong:
        problems.append(f"{len(wrong)} keys hold a stale value: "
                        + checks._short([(k, actual[k], expected[k]) for k in sorted(wrong)], 8))
    if resurrected:
        problems.append(f"{len(resurrected)} deleted keys are back: {checks._short(sorted(resurrected))}")
    if unknown:
        problems.append(f"{len(unknown)} keys nobody acknowledged: {checks._short(sorted(unknown))}")


def as_json(outcome: Outcome) -> dict:
    return {"scenario": asdict(outcome.scenario), "name": outcome.scenario.name,
            "figures": outcome.figures, "problems": outcome.problems}
