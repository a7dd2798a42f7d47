"""One snapshot id, one commit (issue 38): forced interleavings of writers racing expiry
that keeps a single snapshot (`snapshot.num-retained.min = 1`).

Each test runs writers in threads of one process and pauses them at chosen storage calls
(`Pauses`): between choosing a snapshot id and creating its file, between creating it and
taking it back, before the LATEST hint. Meanwhile other commits land and their expiry deletes
everything but the latest snapshot. Then: every write that returned is in the latest
snapshot, no snapshot id was told to two calls, every snapshot reads.
"""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from tarn.fs import FileIO

from tests.stress import checks

pytestmark = pytest.mark.stress

KV = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
EXPIRE_ALL_BUT_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "5",
                      "snapshot.time-retained": "1 ms"}
WAIT_S = 60


class Gate:
    """Where one thread stops: `reached` is set when it gets there, it goes on at `release()`."""

    def __init__(self, thread: str, method: str, path_part: str):
        self.thread, self.method, self.path_part = thread, method, path_part
        self.reached = threading.Event()
        self._go = threading.Event()
        self.used = False

    def matches(self, method: str, path: str) -> bool:
        return (not self.used and method == self.method and self.path_part in path
                and threading.current_thread().name == self.thread)

    def wait_reached(self) -> None:
        assert self.reached.wait(WAIT_S), f"thread {self.thread} never reached {self.method} {self.path_part}"

    def release(self) -> None:
        self._go.set()


class Pauses:
    """Patches FileIO so that a named thread stops at a chosen call (each gate once)."""

    METHODS = ("write_if_absent", "delete", "write_bytes")

    def __init__(self, monkeypatch):
        self.gates: list[Gate] = []
        for method in self.METHODS:
            original = getattr(FileIO, method)

            def hooked(io, path, *args, _method=method, _original=original, **kwargs):
                for gate in self.gates:
                    if gate.matches(_method, path):
                        gate.used = True
                        gate.reached.set()
                        assert gate._go.wait(WAIT_S), f"gate {gate.method} {gate.path_part} never released"
                return _original(io, path, *args, **kwargs)

            monkeypatch.setattr(FileIO, method, hooked)

    def at(self, thread: str, method: str, path_part: str) -> Gate:
        gate = Gate(thread, method, path_part)
        self.gates.append(gate)
        return gate

    def release_all(self) -> None:
        for gate in self.gates:
            gate.release()


class Writer(threading.Thread):
    """One write in its own thread; `result` or `error` afterwards."""

    def __init__(self, table, name: str, keys):
        super().__init__(name=name, daemon=True)
        self.table, self.keys = table, list(keys)
        self.result = self.error = None

    def run(self):
        try:
            self.result = self.table.write(kv(self.keys, self.name))
        except Exception as exc:  # noqa: BLE001 - judged by the test
            self.error = exc

    def finish(self) -> list[int]:
        self.join(WAIT_S)
        assert not self.is_alive(), f"writer {self.name} hung"
        assert self.error is None, f"writer {self.name} raised {type(self.error).__name__}: {self.error}"
        return self.result.snapshot_ids


def kv(keys, value: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [value] * len(keys)}, schema=KV)


def expire_all_but_latest(table) -> None:
    """What the commits' own expiry does once `snapshot.time-retained` (1 ms) has passed."""
    time.sleep(0.01)
    table.expire_snapshots()
    assert table.snapshot_store.list_ids() == [table.snapshot_store.latest_id()]


def assert_promises(table, told: dict[str, list[int]], expected: dict[int, str]) -> None:
    """Every returned write in the latest snapshot, each id told once, every snapshot reads."""
    rows = {r["k"]: r["v"] for r in table.scan().to_arrow().to_pylist()}
    missing = {k: v for k, v in expected.items() if rows.get(k) != v}
    assert not missing, f"acknowledged rows missing from the latest snapshot: {missing}; told {told}"
    ids = [i for each in told.values() for i in each]
    assert len(ids) == len(set(ids)), f"a snapshot id was told to two calls: {told}"
    back = checks.read_everything(table)
    problems = back.unreadable() + checks.metadata_problems(table)
    assert not problems, "\n".join(problems)


@pytest.fixture
def table(catalog):
    return catalog.create_table("db.t", schema=KV, options=EXPIRE_ALL_BUT_ONE)


def writer_c_stalled_on_snapshot_2(catalog, monkeypatch):
    """Snapshots 1 and 2 written by `main`; writer C (keys 30, 31) has read snapshot 2 and
    stalls before creating snapshot-3; its gate before taking a snapshot-3 back is armed too."""
    main = catalog.load_table("db.t")
    main.write(kv([0], "base"))
    main.write(kv([1], "base"))
    pauses = Pauses(monkeypatch)
    c_create = pauses.at("C", "write_if_absent", "/snapshot/snapshot-3")
    c_withdraw = pauses.at("C", "delete", "/snapshot/snapshot-3")
    c = Writer(catalog.load_table("db.t"), "C", [30, 31])
    c.start()
    c_create.wait_reached()
    return main, pauses, c, c_create, c_withdraw


def test_a_base_recreated_behind_does_not_vouch_for_a_commit(catalog, table, monkeypatch):
    """The issue's interleaving. C reads snapshot 2 and stalls before creating 3; snapshot 3
    lands; A reads 3 and stalls before creating 4; 4, 5, 6 land and expiry leaves only 6.
    C creates 3 (free again), finds it behind and stalls before taking it back. A creates 4
    and checks its base: snapshot-3 is on storage, but it is C's, not the one A read. A must
    not take it for its base (it did: A and the second main write were both told 4, and A's
    rows were lost)."""
    main, pauses, c, c_create, c_withdraw = writer_c_stalled_on_snapshot_2(catalog, monkeypatch)
    a_create = pauses.at("A", "write_if_absent", "/snapshot/snapshot-4")
    told = {"main": list(main.write(kv([10], "main")).snapshot_ids)}       # snapshot 3
    a = Writer(catalog.load_table("db.t"), "A", [40, 41])
    a.start()
    a_create.wait_reached()
    for i in range(3):                                                      # 4, 5, 6; expiry keeps 6
        told["main"] += main.write(kv([11 + i], "main")).snapshot_ids
    expire_all_but_latest(main)
    assert main.snapshot_store.list_ids() == [6]
    c_create.release()
    c_withdraw.wait_reached()      # C's snapshot-3 exists now, C knows it is behind
    a_create.release()
    told["A"] = a.finish()
    c_withdraw.release()
    told["C"] = c.finish()
    pauses.release_all()
    expected = {k: "main" for k in range(10, 14)} | {40: "A", 41: "A", 30: "C", 31: "C"}
    assert_promises(main, told, expected)


def test_a_stale_latest_hint_on_a_snapshot_made_behind(catalog, table, monkeypatch):
    """W creates snapshot 3 and stalls before writing LATEST; C stalls before creating 3 on
    base 2. Snapshots 4, 5, 6 land, expiry leaves 6. C creates 3 again (behind) and stalls
    before taking it back; W writes LATEST = 3. A writer starting now must build on 6, not
    on C's snapshot-3 (LATEST names it and snapshot-4 is gone: a hint-based latest took it,
    and the write was acknowledged as snapshot 4 while 6 lacked its rows)."""
    main, pauses, c, c_create, c_withdraw = writer_c_stalled_on_snapshot_2(catalog, monkeypatch)
    w_hint = pauses.at("W", "write_bytes", "/snapshot/LATEST")
    w = Writer(catalog.load_table("db.t"), "W", [20])
    w.start()
    w_hint.wait_reached()                                                   # snapshot 3 is W's
    told = {"main": []}
    for i in range(3):                                                      # 4, 5, 6; expiry keeps 6
        told["main"] += main.write(kv([11 + i], "main")).snapshot_ids
    expire_all_but_latest(main)
    c_create.release()
    c_withdraw.wait_reached()
    w_hint.release()
    told["W"] = w.finish()
    d = Writer(catalog.load_table("db.t"), "D", [50, 51])
    d.start()
    told["D"] = d.finish()
    c_withdraw.release()
    told["C"] = c.finish()
    pauses.release_all()
    expected = {k: "main" for k in range(11, 14)} | {20: "W", 30: "C", 31: "C", 50: "D", 51: "D"}
    assert_promises(main, told, expected)


def test_a_commit_whose_base_expires_before_its_create_retries(catalog, table, monkeypatch):
    """A stalls before creating 3 while 3, 4, 5 land and expiry leaves 5: snapshot-3 is free
    again, and A's base (2) is gone. A must land on top (as 6), its rows in the table."""
    main = catalog.load_table("db.t")
    main.write(kv([0], "base"))
    main.write(kv([1], "base"))
    pauses = Pauses(monkeypatch)
    a_create = pauses.at("A", "write_if_absent", "/snapshot/snapshot-3")
    a = Writer(catalog.load_table("db.t"), "A", [40])
    a.start()
    a_create.wait_reached()
    told = {"main": []}
    for i in range(3):
        told["main"] += main.write(kv([11 + i], "main")).snapshot_ids
    expire_all_but_latest(main)
    a_create.release()
    told["A"] = a.finish()
    pauses.release_all()
    assert told["A"] == [6]
    assert_promises(main, told, {k: "main" for k in range(11, 14)} | {40: "A"})


def test_the_latest_snapshot_expiring_between_listing_and_reading_it(catalog, table, monkeypatch):
    """A writer lists the snapshots (3 is the greatest); before it reads snapshot-3, snapshot 4
    lands and expiry deletes 3. `latest()` must list again and return 4, not raise
    SnapshotNotFound (a stress run saw a write fail so), and a write then lands as 5."""
    from tarn.store.snapshots import SnapshotStore

    main = catalog.load_table("db.t")
    for i in range(3):
        main.write(kv([i], "base"))
    expire_all_but_latest(main)
    real_list = SnapshotStore.list_ids
    fired = []

    def list_then_others_commit(store):
        ids = real_list(store)
        if not fired:
            fired.append(ids)
            main.write(kv([10], "main"))
            expire_all_but_latest(main)
        return ids

    slow = catalog.load_table("db.t")
    monkeypatch.setattr(SnapshotStore, "list_ids", list_then_others_commit)
    assert slow.snapshot_store.latest().id == 4
    monkeypatch.undo()
    assert fired == [[3]]
    told = {"A": slow.write(kv([40], "A")).snapshot_ids}
    assert told["A"] == [5]
    assert_promises(main, told, {10: "main", 40: "A"})


def test_a_delete_whose_successor_was_built_on_it_is_acknowledged(catalog, table, monkeypatch):
    """A removal-only commit (a delete that drops a whole file: no file added) creates
    snapshot 3 on top and stalls before its checks; snapshot 4 is built on it and expiry
    deletes 2 and 3. With nothing added to look for, the check must see that the file it
    removed is gone from 4 too (4 descends from it): the delete returns, once, and is not
    retried into a CommitConflict (it was, when the EARLIEST hint decided: 4 > 3 read as
    'landed behind')."""
    from tarn.store.snapshots import SnapshotStore

    main = catalog.load_table("db.t")
    main.write(kv([0], "base"))
    main.write(kv([1], "doomed"))
    expire_all_but_latest(main)
    real_create = SnapshotStore.create
    created = Gate("A", "create", "")

    def create_then_stall(store, snapshot):
        result = real_create(store, snapshot)
        if threading.current_thread().name == "A" and not created.used:
            created.used = True
            created.reached.set()
            assert created._go.wait(WAIT_S)
        return result

    monkeypatch.setattr(SnapshotStore, "create", create_then_stall)
    outcome = {}

    def delete():
        try:
            outcome["result"] = catalog.load_table("db.t").delete(filter="v = 'doomed'")
        except Exception as exc:  # noqa: BLE001 - judged below
            outcome["error"] = exc

    a = threading.Thread(target=delete, name="A", daemon=True)
    a.start()
    created.wait_reached()
    assert main.snapshot_store.list_ids() == [2, 3]
    told = {"main": list(main.write(kv([10], "main")).snapshot_ids)}          # 4, on top of A's 3
    expire_all_but_latest(main)
    created.release()
    a.join(WAIT_S)
    assert "error" not in outcome, f"{type(outcome['error']).__name__}: {outcome['error']}"
    told["A"] = outcome["result"].snapshot_ids
    assert told == {"main": [4], "A": [3]}
    assert_promises(main, told, {0: "base", 10: "main"})
    assert 1 not in {r["k"] for r in main.scan().to_arrow().to_pylist()}
