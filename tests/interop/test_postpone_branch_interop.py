"""Postpone-bucket tables and branches across engines.

- pypaimon 2.1 writes a postpone table (upserts, deletes, two partitions): tarn, pypaimon and
  pypaimon-rust read nothing; tarn compacts; all three read the oracle's rows; pypaimon writes
  more, tarn compacts again (the partitions keep their bucket counts).
- tarn writes a postpone table, pypaimon-rust writes more to it (its thin files carry no key
  columns), tarn compacts: every reader sees the oracle's rows; pypaimon-rust prunes by the
  buckets tarn's compaction chose.
- pypaimon 2.1 makes branches (from a tag, empty) and writes to them: tarn reads each branch as
  pypaimon does; tarn writes to the branches and makes its own, the peers read them; tarn's
  expiry and orphan removal on main and on a branch keep every branch readable for all; a
  fast-forward of main shows the branch's rows to the peers.
"""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

import tarn
from tests.interop.pypaimon_env import run_peer
from tests.interop.rust_env import run_rust_peer
from tests.interop.test_today_tables import canon, read_ipc, write_ipc

pytestmark = pytest.mark.interop

COLUMNS = [["dt", "STRING NOT NULL"], ["id", "BIGINT NOT NULL"], ["v", "STRING"], ["rk", "STRING"]]


def peer_rows(warehouse, table, tmp_path, name) -> dict[str, list]:
    """What pypaimon 2.1 and pypaimon-rust read of `table`."""
    py_out, rust_out = tmp_path / f"{name}-py.arrow", tmp_path / f"{name}-rust.arrow"
    run_peer("read", {"warehouse": str(warehouse), "table": table, "out_ipc": str(py_out)})
    run_rust_peer("read", {"warehouse": str(warehouse), "table": table, "out_ipc": str(rust_out)})
    return {"pypaimon": canon(read_ipc(py_out)), "rust": canon(read_ipc(rust_out))}


def visible(rows: list[dict], columns: list[str]) -> list:
    return canon([{c: r[c] for c in columns} for r in rows])


class Model:
    """The table's rows by (dt, id), applied write by write."""

    def __init__(self):
        self.rows: dict[tuple, dict] = {}

    def write(self, batch: list[dict]) -> None:
        for r in batch:
            self.rows[(r["dt"], r["id"])] = r

    def delete(self, keys: list[tuple]) -> None:
        for k in keys:
            self.rows.pop(k, None)

    def expected(self) -> list:
        return canon([{**r, "rk": r.get("rk", "+I")} for r in self.rows.values()])


def batch(dt_value: str, ids, v: str) -> list[dict]:
    return [{"dt": dt_value, "id": i, "v": f"{v}{i}", "rk": "+I"} for i in ids]


def ipc_of(tmp_path, name: str, rows: list[dict]) -> str:
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("rk", pa.string())])
    return write_ipc(tmp_path / f"{name}.arrow", pa.Table.from_pylist(rows, schema=schema))


def test_pypaimon_postpone_table_compacted_by_tarn(tmp_path):
    warehouse = tmp_path / "wh"
    model = Model()
    first = batch("a", range(0, 30), "one") + batch("b", range(0, 10), "one")
    second = batch("a", range(20, 40), "two")
    deleted = [{"dt": "a", "id": i, "v": None, "rk": "-D"} for i in (1, 2, 25)]
    spec = {"warehouse": str(warehouse), "table": "db.pp", "schema": COLUMNS, "primary_keys": ["dt", "id"],
            "partition_keys": ["dt"], "options": {"bucket": "-2", "rowkind.field": "rk",
                                                  "postpone.default-bucket-num": "3"},
            "commits": [{"kind": "write", "rows_ipc": ipc_of(tmp_path, "first", first)},
                        {"kind": "write", "rows_ipc": ipc_of(tmp_path, "second", second)},
                        {"kind": "delete", "rows_ipc": ipc_of(tmp_path, "deleted", deleted)}]}
    run_peer("write", spec)
    model.write(first)
    model.write(second)
    model.delete([(r["dt"], r["id"]) for r in deleted])
    table = tarn.Catalog(str(warehouse)).load_table("db.pp")
    assert table.scan().to_arrow().num_rows == 0  # postponed: as pypaimon reads it
    assert peer_rows(warehouse, "db.pp", tmp_path, "before") == {"pypaimon": [], "rust": []}
    assert table.compact().commit_kind == "COMPACT"
    assert canon(table.scan().to_arrow()) == model.expected()
    assert peer_rows(warehouse, "db.pp", tmp_path, "after") == {"pypaimon": model.expected(),
                                                                "rust": model.expected()}
    assert {e.total_buckets for e in table.live_entries(table.latest_snapshot())} == {3}
    third = batch("a", [0, 39], "three") + batch("c", [7], "three")
    run_peer("write", {"warehouse": str(warehouse), "table": "db.pp",
                       "commits": [{"kind": "write", "rows_ipc": ipc_of(tmp_path, "third", third)}]})
    model.write(third)
    table.compact()
    assert canon(table.scan().to_arrow()) == model.expected()
    assert peer_rows(warehouse, "db.pp", tmp_path, "again") == {"pypaimon": model.expected(),
                                                                "rust": model.expected()}


def test_tarn_postpone_table_with_rust_writes(tmp_path):
    warehouse = tmp_path / "wh"
    catalog = tarn.Catalog(str(warehouse))
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("rk", pa.string())])
    table = catalog.create_table("db.tp", schema, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "-2", "postpone.default-bucket-num": "4"})
    model = Model()
    rows = batch("a", range(50), "t")
    table.write(pa.Table.from_pylist(rows, schema=schema))
    model.write(rows)
    assert peer_rows(warehouse, "db.tp", tmp_path, "postponed") == {"pypaimon": [], "rust": []}
    more = batch("a", range(40, 60), "rust")
    run_rust_peer("write", {"warehouse": str(warehouse), "table": "db.tp", "rows_ipc": ipc_of(tmp_path, "rust", more)})
    model.write(more)
    table.compact()
    assert canon(table.scan().to_arrow()) == model.expected()
    assert peer_rows(warehouse, "db.tp", tmp_path, "placed") == {"pypaimon": model.expected(),
                                                                 "rust": model.expected()}
    out = tmp_path / "pruned.arrow"
    for key in (3, 45, 59):
        run_rust_peer("read", {"warehouse": str(warehouse), "table": "db.tp", "out_ipc": str(out),
                               "predicate": {"method": "equal", "field": "id", "literals": [key]}})
        assert [r["id"] for r in read_ipc(out).to_pylist() if r["id"] == key] == [key]


def test_branches_across_engines(tmp_path):
    warehouse = tmp_path / "wh"
    model = Model()
    main_rows = batch("a", [1, 2], "main")
    spec = {"warehouse": str(warehouse), "table": "db.br", "schema": COLUMNS, "primary_keys": ["dt", "id"],
            "options": {"bucket": "2"},
            "commits": [{"kind": "write", "rows_ipc": ipc_of(tmp_path, "m1", main_rows)},
                        {"kind": "tag", "name": "t1"},
                        {"kind": "branch", "name": "b1", "tag": "t1"},
                        {"kind": "branch", "name": "empty"}]}
    run_peer("write", spec)
    dev_rows = batch("a", [2, 10], "b1")
    run_peer("write", {"warehouse": str(warehouse), "table": "db.br$branch_b1",
                       "commits": [{"kind": "write", "rows_ipc": ipc_of(tmp_path, "b1", dev_rows)}]})
    catalog = tarn.Catalog(str(warehouse))
    main = catalog.load_table("db.br")
    b1 = catalog.load_table("db.br$branch_b1")
    assert main.list_branches() == ["b1", "empty"]
    model.write(main_rows)
    branch_model = Model()
    branch_model.write(main_rows)
    branch_model.write(dev_rows)
    assert canon(b1.scan().to_arrow()) == branch_model.expected()
    assert catalog.load_table("db.br$branch_empty").scan().to_arrow().num_rows == 0
    # tarn writes to every branch and makes its own
    b1.write(pa.Table.from_pylist(batch("a", [11], "tarn"), schema=b1.scan().arrow_schema))
    branch_model.write(batch("a", [11], "tarn"))
    main.write(pa.Table.from_pylist(batch("a", [3], "main"), schema=main.scan().arrow_schema))
    model.write(batch("a", [3], "main"))
    main.create_tag("t2")
    mine = main.create_branch("tarn_b", from_tag="t2")
    mine.write(pa.Table.from_pylist(batch("z", [1], "mine"), schema=main.scan().arrow_schema))
    mine_model = Model()
    mine_model.write(model.rows.values())
    mine_model.write(batch("z", [1], "mine"))
    b1.compact(full=True)
    for _ in range(3):  # snapshots to expire on main and on b1
        main.write(pa.Table.from_pylist(batch("a", [4], "main"), schema=main.scan().arrow_schema))
        b1.write(pa.Table.from_pylist(batch("a", [12], "b1"), schema=main.scan().arrow_schema))
    model.write(batch("a", [4], "main"))
    branch_model.write(batch("a", [12], "b1"))
    main.delete_tag("t1")
    later = int(time.time() * 1000) + 60_000
    main.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=later)
    b1.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=later)
    main.remove_orphan_files(older_than=dt.datetime.now() + dt.timedelta(minutes=1))
    for name, expected in (("db.br", model), ("db.br$branch_b1", branch_model), ("db.br$branch_tarn_b", mine_model)):
        assert canon(catalog.load_table(name).scan().to_arrow()) == expected.expected(), name
        assert peer_rows(warehouse, name, tmp_path, name.replace("$", "_")) == \
            {"pypaimon": expected.expected(), "rust": expected.expected()}, name
    main.fast_forward("b1")
    assert peer_rows(warehouse, "db.br", tmp_path, "forwarded") == {"pypaimon": branch_model.expected(),
                                                                    "rust": branch_model.expected()}
    assert canon(catalog.load_table("db.br").scan().to_arrow()) == branch_model.expected()
