"""Commits through a faulty S3 (tests/fault_proxy.py): a failed call means nothing landed.

Writer processes append to an append table and upsert a primary-key table, a compactor
compacts both and an expirer expires both, for a bounded time, all through a proxy that
refuses, fails after forwarding, drops and delays requests in front of moto's S3 server. Every
call is recorded with its outcome:

- `ok`: it returned, so its snapshot landed;
- `unknown`: it raised `OutcomeUnknown` (it may or may not have landed);
- `conflict`: it raised `CommitConflict` (it did not land);
- `error`: it raised another TarnError (it did not land);
- `raw`: it raised something that is not a TarnError (a broken promise by itself).

Each call carries a unique marker: in its rows (append: the `m` column of every row it
wrote; upsert: the value it gave its keys) and as its commit user (the `tarn.core` module's
uuid4 is replaced in the workers, so `Table.commit` names its snapshots after the call). With
the proxy quiet again, `verify` demands: every acknowledged row exactly once; no row and no
snapshot of a call that raised anything but OutcomeUnknown; a call of unknown outcome
entirely or not at all; per key the value of the last acknowledged upsert, or of a later call
of unknown outcome; every snapshot and tag readable; after orphan removal no referenced file
missing.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
import traceback
import uuid
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

import tarn
import tarn.core
import tarn.ops.write

from tests.stress import checks

APPEND_TABLE = "faults.events"
PK_TABLE = "faults.kv"
KEYS_PER_WRITER = 24
ROWS_PER_APPEND = 5
UPSERT_KEYS = 6

APPEND_SCHEMA = pa.schema([("w", pa.int32()), ("n", pa.int32()), ("id", pa.int64()), ("m", pa.string())])
PK_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("w", pa.int32()), ("m", pa.string())])

RETENTION = {"snapshot.num-retained.min": "4", "snapshot.num-retained.max": "8", "snapshot.time-retained": "1 ms"}


@dataclass(frozen=True)
class Plan:
    """Who runs: writers of each kind, a compactor, an expirer, for `seconds` of load."""

    append_writers: int = 2
    upsert_writers: int = 2
    compactor: bool = True
    expirer: bool = True
    seconds: float = 30.0
    seed: int = 0


def create_tables(catalog: tarn.Catalog) -> None:
    catalog.create_table(APPEND_TABLE, schema=APPEND_SCHEMA,
                         options={"commit.max-retries": "40", "compaction.min.file-num": "3", **RETENTION})
    catalog.create_table(PK_TABLE, schema=PK_SCHEMA, primary_key=["k"],
                         options={"commit.max-retries": "40", "bucket": "2",
                                  "num-sorted-run.compaction-trigger": "3", **RETENTION})


# ---------------------------------------------------------------------------------------------
# inside the worker processes


class _Markers:
    """Stands in for the `uuid` module of tarn.core and tarn.ops.write: `Table.commit`'s commit user is the
    marker of the call in progress (a fresh uuid outside calls)."""

    current: str | None = None

    def uuid4(self):
        return self.current if self.current is not None else uuid.uuid4()


MARKERS = _Markers()


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return " < ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames[-8:]))


def _outcome(exc: BaseException | None) -> str:
    if exc is None:
        return "ok"
    if isinstance(exc, tarn.OutcomeUnknown):
        return "unknown"
    if isinstance(exc, tarn.CommitConflict):
        return "conflict"
    if isinstance(exc, tarn.TarnError):
        return "error"
    return "raw"


def _call(record: dict, action) -> dict:
    """Run one public call under the record's marker; fill in its outcome."""
    MARKERS.current = record["marker"]
    began = time.monotonic()
    try:
        action()
        exc = None
    except Exception as caught:  # noqa: BLE001 - judged by the parent
        exc = caught
    finally:
        MARKERS.current = None
    record["seconds"] = round(time.monotonic() - began, 3)
    record["outcome"] = _outcome(exc)
    if exc is not None:
        record["error"] = f"{type(exc).__name__}: {str(exc)[:300]} | {_where(exc)}"
    return record


def _open(uri: str, options: dict, name: str) -> tarn.Table:
    return tarn.Catalog(uri, options).load_table(name)


def worker_main(role: str, index: int, uri: str, options: dict, seconds: float, seed: int,
                out_path: str, start) -> None:
    tarn.core.uuid = tarn.ops.write.uuid = MARKERS  # commit users name the call (see _Markers)
    logging.getLogger("tarn").setLevel(logging.ERROR)  # warnings of retried requests: thousands
    rng = random.Random(f"{seed}-{role}-{index}")
    ledger: list[dict] = []
    maintenance_errors = Counter()
    start.wait()
    deadline = time.monotonic() + seconds
    tables = {}

    def table(name: str) -> tarn.Table:
        if name not in tables:  # opening reads the schema: a storage error is retried next call
            tables[name] = _open(uri, options, name)
        return tables[name]

    n = 0
    while time.monotonic() < deadline:
        n += 1
        marker = f"{role}{index}-{n}"
        if role == "append":
            ids = [index * 1_000_000 + n * 100 + j for j in range(ROWS_PER_APPEND)]
            rows = pa.table({"w": [index] * len(ids), "n": [n] * len(ids), "id": ids, "m": [marker] * len(ids)},
                            schema=APPEND_SCHEMA)
            record = {"op": "append", "marker": marker, "ids": ids, "table": APPEND_TABLE}
            _call(record, lambda: table(APPEND_TABLE).write(rows))
        elif role == "upsert":
            own = [index * 1_000 + j for j in range(KEYS_PER_WRITER)]
            keys = sorted(rng.sample(own, UPSERT_KEYS))
            rows = pa.table({"k": keys, "w": [index] * len(keys), "m": [marker] * len(keys)}, schema=PK_SCHEMA)
            record = {"op": "upsert", "marker": marker, "keys": keys, "table": PK_TABLE}
            _call(record, lambda: table(PK_TABLE).write(rows))
        elif role == "compact":
            name = (APPEND_TABLE, PK_TABLE)[n % 2]
            record = {"op": "compact", "marker": marker, "table": name}
            _call(record, lambda: table(name).compact(full=(n % 4 == 1)))
        elif role == "expire":
            name = (APPEND_TABLE, PK_TABLE)[n % 2]
            record = {"op": "expire", "marker": marker, "table": name}
            _call(record, lambda: table(name).expire_snapshots())
            time.sleep(0.2)
        else:  # pragma: no cover
            raise ValueError(role)
        ledger.append(record)
        if record["outcome"] == "ok" and record["table"] in tables:
            for e in tables[record["table"]].last_maintenance_errors:
                maintenance_errors[type(e).__name__] += 1
                if not isinstance(e, tarn.TarnError):
                    record.setdefault("raw_maintenance", []).append(f"{type(e).__name__}: {str(e)[:200]} | {_where(e)}")
    with open(out_path + ".tmp", "w") as f:
        json.dump({"role": role, "index": index, "ledger": ledger,
                   "maintenance_errors": dict(maintenance_errors)}, f)
    os.replace(out_path + ".tmp", out_path)


# ---------------------------------------------------------------------------------------------
# the run and the judgement


@dataclass
class Outcome:
    plan: Plan
    calls: list[dict] = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        by_op: dict[str, Counter] = {}
        for c in self.calls:
            by_op.setdefault(c["op"], Counter())[c["outcome"]] += 1
        ops = "; ".join(f"{op} {sum(n.values())}: " + ", ".join(f"{k} {v}" for k, v in sorted(n.items()))
                        for op, n in sorted(by_op.items()))
        f = self.figures
        return (f"{len(self.calls)} calls ({ops}); slowest call {f.get('slowest_s', 0):.1f} s; "
                f"snapshots {f.get('snapshots')}; unknown outcomes landed {f.get('unknown_landed', 0)}"
                f"/{f.get('unknown_judged', 0)}; problems {len(self.problems)}")


def run(uri: str, options: dict, plan: Plan, work_dir: str, context, proxy) -> Outcome:
    """Run the workers through the proxy (faults on during the load only), then judge."""
    os.makedirs(work_dir, exist_ok=True)
    roles = ([("append", i) for i in range(plan.append_writers)]
             + [("upsert", i) for i in range(plan.upsert_writers)]
             + ([("compact", 0)] if plan.compactor else []) + ([("expire", 0)] if plan.expirer else []))
    start = context.Barrier(len(roles) + 1)
    outs = [os.path.join(work_dir, f"{role}-{i}.json") for role, i in roles]
    procs = [context.Process(target=worker_main, args=(role, i, uri, options, plan.seconds, plan.seed, out, start),
                             daemon=True) for (role, i), out in zip(roles, outs)]
    for p in procs:
        p.start()
    outcome = Outcome(plan)
    proxy.faults = True
    try:
        start.wait(timeout=120)
        for p in procs:
            p.join(plan.seconds + 90)
    finally:
        proxy.faults = False
    for p, (role, i) in zip(procs, roles):
        if p.is_alive():
            p.kill()
            p.join()
            outcome.problems.append(f"{role} worker {i} still running {plan.seconds + 90:.0f} s after the load ended")
        elif p.exitcode != 0:
            outcome.problems.append(f"{role} worker {i} exited with {p.exitcode}")
    maintenance = Counter()
    for out, (role, i) in zip(outs, roles):
        try:
            with open(out) as f:
                result = json.load(f)
        except FileNotFoundError:
            outcome.problems.append(f"{role} worker {i} left no ledger")
            continue
        outcome.calls += [dict(r, role=role, writer=i) for r in result["ledger"]]
        maintenance.update(result["maintenance_errors"])
    outcome.figures["maintenance_errors"] = dict(maintenance)
    outcome.figures["slowest_s"] = max((c["seconds"] for c in outcome.calls), default=0)
    verify(tarn.Catalog(uri, options), outcome)
    return outcome


def verify(catalog: tarn.Catalog, outcome: Outcome) -> None:
    calls, problems = outcome.calls, outcome.problems
    for c in calls:
        if c["outcome"] == "raw":
            problems.append(f"{c['op']} {c['marker']} raised a non-tarn error: {c['error']}")
    failed = {c["marker"] for c in calls if c["outcome"] in ("conflict", "error")}
    snapshots = {}
    for name in (APPEND_TABLE, PK_TABLE):
        table = catalog.load_table(name)
        back = checks.read_everything(table)
        snapshots[name] = len(back.ids)
        problems += [f"{name}: {p}" for p in back.unreadable() + checks.continuity_problems(back)
                     + checks.metadata_problems(table)]
        for sid in back.ids:
            try:
                user = table.snapshot_store.get(sid).commit_user
            except Exception as exc:  # noqa: BLE001 - reported by read_everything already
                continue
            if user in failed:
                problems.append(f"{name}: snapshot {sid} was committed by call {user}, which raised "
                                f"{next(c['error'] for c in calls if c['marker'] == user)[:200]}")
        for sid, rows in back.snapshots.items():
            ghosts = sorted(set(rows.column("m").to_pylist()) & failed)
            if ghosts:
                problems.append(f"{name}: snapshot {sid} holds rows of failed calls {ghosts[:5]}")
        latest = back.snapshots.get(back.latest_id) if back.latest_id is not None else None
        if latest is None:
            problems.append(f"{name}: no readable latest snapshot")
            continue
        if name == APPEND_TABLE:
            _judge_appends(latest, [c for c in calls if c["op"] == "append"], outcome)
        else:
            _judge_upserts(latest, [c for c in calls if c["op"] == "upsert"], outcome)
        try:
            checks.remove_orphans_now(table)
            missing = [p for p in checks.storage_problems(table) if "missing" in p]
            problems += [f"{name}: after remove_orphan_files: {p}" for p in missing]
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{name}: remove_orphan_files raised {checks._describe(exc)}")
    outcome.figures["snapshots"] = snapshots


def _judge_appends(latest: pa.Table, calls: list[dict], outcome: Outcome) -> None:
    ids = Counter(latest.column("id").to_pylist())
    markers = dict(zip(latest.column("id").to_pylist(), latest.column("m").to_pylist()))
    problems = outcome.problems
    known = set()
    for c in calls:
        known.update(c["ids"])
        present = [i for i in c["ids"] if i in ids]
        twice = [i for i in c["ids"] if ids[i] > 1]
        if twice:
            problems.append(f"append {c['marker']} ({c['outcome']}): rows {twice[:3]} visible {ids[twice[0]]} times")
        if c["outcome"] == "ok" and len(present) != len(c["ids"]):
            problems.append(f"append {c['marker']} returned, but {len(c['ids']) - len(present)} of its "
                            f"{len(c['ids'])} rows are missing")
        elif c["outcome"] in ("conflict", "error") and present:
            problems.append(f"append {c['marker']} raised ({c['error'][:200]}), yet {len(present)} of its rows "
                            "are visible")
        elif c["outcome"] == "unknown":
            outcome.figures["unknown_judged"] = outcome.figures.get("unknown_judged", 0) + 1
            outcome.figures["unknown_landed"] = outcome.figures.get("unknown_landed", 0) + bool(present)
            if present and len(present) != len(c["ids"]):
                problems.append(f"append {c['marker']} (outcome unknown): {len(present)} of its "
                                f"{len(c['ids'])} rows are visible")
        if any(markers[i] != c["marker"] for i in present):
            problems.append(f"append {c['marker']}: its rows carry another marker")
    strangers = [i for i in ids if i not in known]
    if strangers:
        problems.append(f"{len(strangers)} appended rows nobody wrote: {strangers[:5]}")


def _judge_upserts(latest: pa.Table, calls: list[dict], outcome: Outcome) -> None:
    """Per key (each key has one writer, whose calls run in order): the value of the last
    acknowledged upsert of it, or of a later call of unknown outcome; absent only if no call
    touching it was acknowledged."""
    problems = outcome.problems
    keys = latest.column("k").to_pylist()
    actual = dict(zip(keys, latest.column("m").to_pylist()))
    twice = [k for k, n in Counter(keys).items() if n > 1]
    if twice:
        problems.append(f"keys visible more than once: {twice[:5]}")
    history: dict[int, list[dict]] = {}
    for c in sorted(calls, key=lambda c: (c["writer"], int(c["marker"].rsplit("-", 1)[1]))):
        for k in c["keys"]:
            history.setdefault(k, []).append(c)
    for k, touching in history.items():
        acked = [i for i, c in enumerate(touching) if c["outcome"] == "ok"]
        after = touching[acked[-1]:] if acked else touching
        allowed = {c["marker"] for c in after if c["outcome"] == "unknown"}
        if acked:
            allowed.add(touching[acked[-1]]["marker"])
        value = actual.get(k)
        if value is None:
            if acked:
                problems.append(f"key {k}: acknowledged upsert {touching[acked[-1]]['marker']} lost")
        elif value not in allowed:
            call = next((c for c in touching if c["marker"] == value), None)
            how = f"{call['outcome']} call" if call else "a call that never touched it"
            problems.append(f"key {k} holds {value} ({how}); allowed: {sorted(allowed)}")
    for c in calls:
        if c["outcome"] == "unknown":
            outcome.figures["unknown_judged"] = outcome.figures.get("unknown_judged", 0) + 1
            outcome.figures["unknown_landed"] = outcome.figures.get("unknown_landed", 0) + any(
                actual.get(k) == c["marker"] for k in c["keys"])
    strangers = [k for k in actual if k not in history]
    if strangers:
        problems.append(f"keys nobody wrote: {strangers[:5]}")
