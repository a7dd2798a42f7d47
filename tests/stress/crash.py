"""Crash harness: a child process loops an operation on a table and dies by SIGKILL at a
random point; the parent then checks what the issue-9 promises say must hold.

Two ways to pick the point:
- `hook`: the child wraps tarn's storage calls (FileIO writes, creates, deletes and the
  rename/link that publishes a temp file) and SIGKILLs itself at the N-th call inside the
  operation, N uniform over the calls one run of the operation makes (measured by a first,
  uninterrupted run);
- `timer`: the parent SIGKILLs the child a random delay after it is ready, wherever it is;
- `at:<text>`: the first kill point whose description contains <text> (`a|b`: a or b), e.g.
  `at:mid-write tag/`, `at:before delete snapshot/snapshot-`: a deterministic repro.

The child writes a line to an unbuffered log before and after every step (`W+ b`, `W= b`,
`R+ b`, `R= b`, `K <where>`), so the parent knows which batches were acknowledged, which
were in flight, and where the kill landed.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs

import tarn
from tarn import fs as tarn_fs
from tarn.fs import FileIO
from tarn.store.consumers import ConsumerStore

from tests.stress import checks
from tests.stress.workload import Warehouse, context, open_catalog

OPS = ("write", "commit", "compact", "expire_snapshots", "create_tag", "rollback_to")
SCHEMA = pa.schema([("p", pa.string()), pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
ROWS_PER_BATCH = 4
KEEP_TAG = "keep"
TIMER_MAX_DELAY_S = 0.6

BASE_OPTIONS = {"bucket": "2", "num-sorted-run.compaction-trigger": "3", "snapshot.num-retained.min": "2",
                "snapshot.num-retained.max": "6", "snapshot.time-retained": "1 ms"}
# ops after which nothing else may run: the child's plain writes stay plain (no compaction,
# no expiry), so a kill lands in the operation under test or in a plain write
WRITE_ONLY_OPS = ("expire_snapshots", "create_tag", "rollback_to")


def table_options(op: str) -> dict[str, str]:
    options = dict(BASE_OPTIONS)
    if op in WRITE_ONLY_OPS:
        options["write-only"] = "true"
    return options


def batch(b: int) -> pa.Table:
    """Batch b: ROWS_PER_BATCH keys nobody else writes, value naming the batch."""
    keys = [b * 10 + j for j in range(ROWS_PER_BATCH)]
    return pa.table({"p": ["a" if b % 2 else "b"] * len(keys), "k": keys, "v": [f"b{b}"] * len(keys)},
                    schema=SCHEMA)


def rows_of(table: pa.Table) -> set[tuple]:
    return {(r["p"], r["k"], r["v"]) for r in table.select(["p", "k", "v"]).to_pylist()}


def batch_rows(b: int) -> set[tuple]:
    return rows_of(batch(b))


# ---------------------------------------------------------------------------------------------
# the child


class Killer:
    """SIGKILLs this process at the `target`-th storage call made while `armed`."""

    def __init__(self, log_fd: int, label: str | None = None):
        self.log_fd = log_fd
        self.armed = False
        self.count = 0
        self.target: int | None = None
        self.label = label  # kill at the first point whose description contains it

    def point(self, where: str) -> None:
        if not self.armed:
            return
        self.count += 1
        due = self.target is not None and self.count >= self.target
        if due or (self.label is not None and any(part in where for part in self.label.split("|"))):
            log(self.log_fd, f"K {where}")
            os.kill(os.getpid(), signal.SIGKILL)


def log(fd: int, line: str) -> None:
    os.write(fd, (line.replace("\n", " | ") + "\n").encode())


def _short_path(path) -> str:
    parts = str(path).split("/")
    return "/".join(parts[-2:])


def install_hooks(killer: Killer) -> None:
    """Kill points before and after every FileIO mutation, and between a temp file's write
    and its rename/link into place."""
    for name in ("write_bytes", "write_if_absent", "delete", "delete_dir", "open_output_stream"):
        original = getattr(FileIO, name)

        def wrapped(self, path, *args, _original=original, _name=name, **kwargs):
            killer.point(f"before {_name} {_short_path(path)}")
            result = _original(self, path, *args, **kwargs)
            killer.point(f"after {_name} {_short_path(path)}")
            return result

        setattr(FileIO, name, wrapped)

    class OsProxy:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def replace(src, dst, *args, **kwargs):
            killer.point(f"before rename {_short_path(dst)}")
            return os.replace(src, dst, *args, **kwargs)

        @staticmethod
        def link(src, dst, *args, **kwargs):
            killer.point(f"before link {_short_path(dst)}")
            return os.link(src, dst, *args, **kwargs)

    tarn_fs.os = OsProxy()
    killing_fs = _killing_local_fs(killer)
    original_init = FileIO.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        if type(self.fs) is pafs.LocalFileSystem:
            object.__setattr__(self, "fs", killing_fs)

    FileIO.__init__ = init


METADATA_DIRS = ("/snapshot/", "/tag/", "/schema/", "/consumer/", "/manifest/")


def _killing_local_fs(killer: Killer):
    """A local file system whose metadata output streams offer a kill point halfway through
    each write: a non-atomic writer would leave a torn file there."""

    class TornStream:
        def __init__(self, stream, path):
            self.stream, self.path = stream, path

        def write(self, data):
            half = len(data) // 2
            if half:
                self.stream.write(data[:half])
                self.stream.flush()
                killer.point(f"mid-write {_short_path(self.path)}")
            return self.stream.write(data[half:]) + half

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

        def __getattr__(self, name):
            return getattr(self.stream, name)

    class KillingLocalFileSystem(pafs.LocalFileSystem):
        def open_output_stream(self, path, *args, **kwargs):
            stream = super().open_output_stream(path, *args, **kwargs)
            return TornStream(stream, path) if any(d in path for d in METADATA_DIRS) else stream

    return KillingLocalFileSystem()


def child_main(warehouse: Warehouse | str, ident: str, op: str, mode: str, seed: int, first_batch: int,
               rollback_tag: str | None, log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    logging.getLogger("tarn").addHandler(logging.NullHandler())
    killer = Killer(fd, mode[len("at:"):] if mode.startswith("at:") else None)
    install_hooks(killer)
    rng = random.Random(seed)
    try:
        table = open_catalog(warehouse).load_table(ident)
        log(fd, "ready torn-writes" if isinstance(table.file_io.fs, pafs.LocalFileSystem)
            and type(table.file_io.fs) is not pafs.LocalFileSystem else "ready")
        deadline = time.monotonic() + 120
        b = first_batch
        while time.monotonic() < deadline:
            step(table, op, b, killer, fd, rollback_tag if (b - first_batch) % 2 else None)
            if mode == "hook" and killer.target is None:
                killer.target = killer.count + rng.randint(1, max(killer.count, 1))
            b += 1
            if killer.label is not None and b - first_batch >= 6:
                log(fd, f"E kill point '{killer.label}' never reached in 6 runs of {op}")
                os._exit(3)
        log(fd, "E child was never killed")
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        frames = traceback.extract_tb(exc.__traceback__)
        where = " < ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames[-5:]))
        log(fd, f"E {type(exc).__name__}: {exc} @ {where}")
        os._exit(3)


def step(table, op: str, b: int, killer: Killer, fd: int, rollback_tag: str | None) -> None:
    """One iteration: a plain write of batch b, then the operation under test (armed)."""
    log(fd, f"W+ {b}")
    if op == "write":
        killer.armed = True
        table.write(batch(b))
        killer.armed = False
        log(fd, f"W= {b}")
        return
    if op == "commit":
        writer = table.new_writer()
        writer.write(batch(b))
        messages = writer.prepare_commit()
        killer.armed = True
        table.commit(messages)
        killer.armed = False
        log(fd, f"W= {b}")
        return
    before = table.latest_snapshot()
    table.write(batch(b))
    log(fd, f"W= {b}")
    if op == "rollback_to":
        table.create_tag(f"x{b}")  # a tag the rollback must remove with its snapshot
    killer.armed = True
    if op == "compact":
        table.compact(full=True)
    elif op == "expire_snapshots":  # a streaming consumer moves along; expiry must respect it
        ConsumerStore(table.file_io, table.root).write("stress", before.id)
        table.expire_snapshots(retain_min=1, retain_max=3)
    elif op == "create_tag":
        table.create_tag(f"c{b}")
    elif op == "rollback_to":
        log(fd, f"R+ {b}")
        table.rollback_to(rollback_tag if rollback_tag else before.id)
        log(fd, f"R= {b}")
    else:
        raise ValueError(f"unknown op {op}")
    killer.armed = False


# ---------------------------------------------------------------------------------------------
# the parent


def _child_ready(log_path: str) -> bool:
    try:
        with open(log_path) as f:
            return "ready" in f.read()
    except FileNotFoundError:
        return False


@dataclass
class ChildLog:
    began: set[int] = field(default_factory=set)
    acked: set[int] = field(default_factory=set)
    rollback_began: set[int] = field(default_factory=set)
    rolled_back: set[int] = field(default_factory=set)
    killed_at: str | None = None
    error: str | None = None
    ready: bool = False
    torn_writes: bool = False  # the child's local file system had the mid-write kill points

    @classmethod
    def parse(cls, text: str) -> "ChildLog":
        out = cls()
        sets = {"W+": out.began, "W=": out.acked, "R+": out.rollback_began, "R=": out.rolled_back}
        for line in text.splitlines():
            tag, _, rest = line.partition(" ")
            if tag in sets:
                sets[tag].add(int(rest))
            elif tag == "K":
                out.killed_at = rest
            elif tag == "E":
                out.error = rest
            elif tag == "ready":
                out.ready = True
                out.torn_writes = rest == "torn-writes"
        return out


@dataclass
class Trial:
    op: str
    number: int
    mode: str
    killed_at: str | None = None
    torn_writes: bool = False
    in_flight_landed: int = 0
    in_flight_absent: int = 0
    acked: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class CrashRun:
    """Trials of one operation against one table (a fresh table after a broken trial)."""

    warehouse: Warehouse | str
    op: str
    work_dir: str
    seed: int = 0
    trials: list[Trial] = field(default_factory=list)
    table_number: int = 0
    next_batch: int = 1

    @property
    def ident(self) -> str:
        return f"crash.{self.op}_{self.table_number}"

    def new_table(self):
        self.table_number += 1
        table = open_catalog(self.warehouse).create_table(
            self.ident, schema=SCHEMA, primary_key=["p", "k"], partition_keys=["p"],
            options=table_options(self.op))
        for _ in range(3):
            table.write(batch(self.take_batch()))
        table.create_tag(KEEP_TAG, snapshot_id=2)
        return table

    def take_batch(self) -> int:
        b = self.next_batch
        self.next_batch += 1
        return b

    def run_at(self, label: str) -> Trial:
        """One trial killing at the first kill point described by `label`."""
        table = self.new_table()
        for _ in range(4):  # enough snapshots for expiry and rollback to have work
            table.write(batch(self.take_batch()))
        trial = self.trial(context(), table, 0, f"at:{label}", random.Random(self.seed))
        self.trials.append(trial)
        return trial

    def run(self, trials: int) -> list[Trial]:
        ctx = context()
        rng = random.Random(self.seed)
        table = self.new_table()
        for number in range(trials):
            mode = "hook" if number % 2 == 0 else "timer"
            trial = self.trial(ctx, table, number, mode, rng)
            self.trials.append(trial)
            if trial.problems:
                table = self.new_table()  # judge the next trial on a sound table
            else:
                table = open_catalog(self.warehouse).load_table(self.ident)
        return self.trials

    def housekeeping(self, table, number: int) -> str | None:
        """Keep the table small between trials; returns the tag a rollback trial may target."""
        if self.op in WRITE_ONLY_OPS:
            table.expire_snapshots(retain_min=1, retain_max=6)
        names = [n for n in (t.name for t in table.list_tags()) if n != KEEP_TAG]
        for name in names[:-3]:
            table.delete_tag(name)
        if self.op == "rollback_to":
            name = f"r{number}"
            table.create_tag(name)
            return name
        return None

    def trial(self, ctx, table, number: int, mode: str, rng: random.Random) -> Trial:
        trial = Trial(self.op, number, mode)
        try:
            rollback_tag = self.housekeeping(table, number)
        except Exception as exc:  # noqa: BLE001 - the previous trial left something behind
            trial.problems.append(f"housekeeping before the trial raised {checks._describe(exc)}")
            return trial
        before = checks.read_everything(table)
        if before.errors:
            trial.problems += [f"before the trial: {p}" for p in before.unreadable()]
            return trial
        content_before = rows_of(before.snapshots[before.latest_id])
        first_batch = self.next_batch
        self.next_batch += 1000  # batch ids of this trial's child
        log_path = os.path.join(self.work_dir, f"{self.op}-{self.table_number}-{number}.log")
        os.makedirs(self.work_dir, exist_ok=True)
        child = ctx.Process(target=child_main, args=(self.warehouse, self.ident, self.op, mode,
                                                     rng.randrange(1 << 30), first_batch, rollback_tag,
                                                     log_path), daemon=True)
        child.start()
        self.wait_for_death(child, mode, log_path, rng, trial)
        with open(log_path) as f:
            child_log = ChildLog.parse(f.read())
        trial.killed_at = child_log.killed_at or ("timer" if mode == "timer" else None)
        trial.torn_writes = child_log.torn_writes
        if child_log.error:
            trial.problems.append(f"{self.op} raised in the child (no crash yet): {child_log.error}")
        self.judge(trial, before, content_before, child_log)
        return trial

    def wait_for_death(self, child, mode: str, log_path: str, rng: random.Random, trial: Trial) -> None:
        if mode == "timer":
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and child.is_alive():
                if _child_ready(log_path):
                    break
                time.sleep(0.005)
            time.sleep(rng.uniform(0, TIMER_MAX_DELAY_S))
            if child.is_alive():
                os.kill(child.pid, signal.SIGKILL)
        child.join(60)
        if child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
            child.join(10)
            trial.problems.append("child still running after 60 s (hung), killed")
        elif child.exitcode != -signal.SIGKILL and child.exitcode != 3:
            trial.problems.append(f"child exited with {child.exitcode}, not by SIGKILL")

    # ------------------------------------------------------------------ after the kill

    def judge(self, trial: Trial, before: checks.Readback, content_before: set, child_log: ChildLog) -> None:
        problems = trial.problems
        try:
            table = open_catalog(self.warehouse).load_table(self.ident)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"table does not open: {checks._describe(exc)}")
            return
        problems += checks.metadata_problems(table)
        after = checks.read_everything(table)
        problems += after.unreadable()
        problems += checks.continuity_problems(after)
        problems += checks.tags_beyond_latest(after)
        self.judge_history(before, after, problems)
        latest = after.snapshots.get(after.latest_id)
        if latest is None:
            problems.append(f"latest snapshot {after.latest_id} unreadable after the kill")
            return
        content_after = rows_of(latest)
        self.judge_content(trial, content_before, content_after, child_log)
        try:
            checks.remove_orphans_now(table)
            problems += [f"after remove_orphan_files: {p}" for p in checks.storage_problems(table)]
        except Exception as exc:  # noqa: BLE001
            problems.append(f"remove_orphan_files raised: {checks._describe(exc)}")
        b = self.take_batch()
        try:
            table.write(batch(b))
            now = rows_of(table.scan().to_arrow())
            if now != content_after | batch_rows(b):
                problems.append(f"the next write reads back wrong: {len(now ^ (content_after | batch_rows(b)))} "
                                "rows differ")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"the next write failed: {checks._describe(exc)}")

    def judge_history(self, before: checks.Readback, after: checks.Readback, problems: list[str]) -> None:
        """Snapshots and tags that were readable before read the same rows now, unless the
        operation may remove them (expiry: the oldest; rollback never goes below them)."""
        may_expire = self.op not in ("create_tag", "rollback_to")
        low = min(after.ids) if after.ids else None
        for sid, rows in before.snapshots.items():
            if sid in after.snapshots:
                if rows_of(after.snapshots[sid]) != rows_of(rows):
                    problems.append(f"snapshot {sid} reads different rows after the kill")
            elif sid not in after.ids:
                if not (may_expire and low is not None and sid < low):
                    problems.append(f"snapshot {sid} vanished (snapshots now {after.ids[:3]}..{after.ids[-1:]})")
        for name, (sid, rows) in before.tags.items():
            if name not in after.tags:
                if f"tag {name}" not in after.errors:
                    problems.append(f"tag {name} (snapshot {sid}) vanished")
            elif rows_of(after.tags[name][1]) != rows_of(rows):
                problems.append(f"tag {name} reads different rows after the kill")

    def judge_content(self, trial: Trial, content_before: set, content_after: set, child_log: ChildLog) -> None:
        problems = trial.problems
        if not content_before <= content_after:
            problems.append(f"{len(content_before - content_after)} rows present before the trial are gone")
        trial.acked = len(child_log.acked)
        accounted = set(content_before)
        for b in sorted(child_log.began):
            rows = batch_rows(b)
            accounted |= rows
            present = rows & content_after
            if present and present != rows:
                problems.append(f"batch {b} partly visible: {len(present)} of {len(rows)} rows")
                continue
            must_be_there = b in child_log.acked and b not in child_log.rollback_began
            must_be_gone = b in child_log.rolled_back
            if must_be_there and not present:
                problems.append(f"acknowledged batch {b} lost")
            elif must_be_gone and present:
                problems.append(f"batch {b} still visible after its rollback returned")
            elif not must_be_there and not must_be_gone:
                if present:
                    trial.in_flight_landed += 1
                else:
                    trial.in_flight_absent += 1
        unknown = content_after - accounted
        if unknown:
            problems.append(f"{len(unknown)} rows nobody wrote are visible")


def figures(trials: list[Trial]) -> dict:
    broken = [t for t in trials if t.problems]
    return {"trials": len(trials), "broken": len(broken),
            "hook": sum(t.mode == "hook" for t in trials), "timer": sum(t.mode == "timer" for t in trials),
            "torn_write_points": sum(t.torn_writes for t in trials),
            "acked_batches": sum(t.acked for t in trials),
            "in_flight_landed": sum(t.in_flight_landed for t in trials),
            "in_flight_absent": sum(t.in_flight_absent for t in trials),
            "problem_kinds": dict(Counter(_kind(p) for t in broken for p in t.problems))}


def _kind(problem: str) -> str:
    words = [w for w in problem.split() if not any(c.isdigit() for c in w)]
    return " ".join(words[:7])


def summary(op: str, trials: list[Trial]) -> str:
    f = figures(trials)
    return (f"{op:<17} trials {f['trials']:>3} (hook {f['hook']}, timer {f['timer']}) broken {f['broken']:>3} "
            f"acked batches {f['acked_batches']:>4} in-flight landed/absent "
            f"{f['in_flight_landed']}/{f['in_flight_absent']}")


def run_op(warehouse: Warehouse | str, op: str, trials: int, work_dir: str, seed: int = 0) -> list[Trial]:
    return CrashRun(warehouse, op, work_dir, seed).run(trials)
