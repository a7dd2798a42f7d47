"""Row tracking and data evolution across engines: pypaimon 2.1 and pypaimon-rust 0.4.0 write
(appends, updates of some columns by row id, deletes by row id, upserts keyed on a business
column), tarn reads the same rows with the same `_ROW_ID`s; tarn writes (appends,
update_columns, update(set=), deletes, compaction), the peers read the same rows and row ids,
and keep writing to the table, which tarn reads again."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
from tests.interop.pypaimon_env import run_peer
from tests.interop.test_today_tables import canon, read_ipc, write_ipc
from tests.interop.rust_env import run_rust_peer

pytestmark = pytest.mark.interop

OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "deletion-vectors.enabled": "true"}
COLUMNS = [["id", "INT"], ["name", "STRING"], ["score", "DOUBLE"]]
WITH_IDS = ["id", "name", "score", "_ROW_ID"]


def people(ids, names, scores) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "name": names, "score": pa.array(scores, pa.float64())})


def peer_reads(warehouse, tmp_path, table="db.t") -> dict[str, pa.Table]:
    """pypaimon's and pypaimon-rust's rows of the table, with `_ROW_ID`."""
    py_out, rust_out = tmp_path / "py.arrow", tmp_path / "rust.arrow"
    run_peer("read", {"warehouse": str(warehouse), "table": table, "out_ipc": str(py_out), "projection": WITH_IDS})
    run_rust_peer("read", {"warehouse": str(warehouse), "table": table, "out_ipc": str(rust_out),
                           "projection": WITH_IDS})
    return {"pypaimon": read_ipc(py_out), "rust": read_ipc(rust_out)}


def tarn_rows(warehouse, table="t"):
    return tarn.Catalog(str(warehouse)).load_table(f"db.{table}").scan(columns=WITH_IDS).to_arrow()


def test_pypaimon_writes_tarn_reads_rows_and_row_ids(tmp_path):
    warehouse = tmp_path / "wh"
    commits = [
        {"kind": "write", "rows_ipc": write_ipc(tmp_path / "a.arrow", people([1, 2, 3], ["a", "b", "c"], [1, 2, 3]))},
        {"kind": "write", "rows_ipc": write_ipc(tmp_path / "b.arrow", people([4, 5], ["d", "e"], [4, 5]))},
        {"kind": "update_by_row_id", "rows_ipc": write_ipc(tmp_path / "u.arrow", pa.table(
            {"_ROW_ID": pa.array([1, 3], pa.int64()), "score": [20.0, 40.0]}))},
        {"kind": "delete_by_row_id", "ids": [2]},
        {"kind": "upsert_by_key", "keys": ["id"], "rows_ipc": write_ipc(
            tmp_path / "k.arrow", people([5, 6], ["E", "f"], [50, 6]))},
    ]
    run_peer("write", {"warehouse": str(warehouse), "table": "db.t", "schema": COLUMNS, "options": OPTIONS,
                       "commits": commits})
    peers = peer_reads(warehouse, tmp_path)
    expected = [{"id": 1, "name": "a", "score": 1.0, "_ROW_ID": 0}, {"id": 2, "name": "b", "score": 20.0, "_ROW_ID": 1},
                {"id": 4, "name": "d", "score": 40.0, "_ROW_ID": 3}, {"id": 5, "name": "E", "score": 50.0, "_ROW_ID": 4},
                {"id": 6, "name": "f", "score": 6.0, "_ROW_ID": 5}]
    assert canon(peers["pypaimon"]) == canon(expected)
    assert canon(tarn_rows(warehouse)) == canon(expected) == canon(peers["rust"])
    table = tarn.Catalog(str(warehouse)).load_table("db.t")
    assert table.scan().count() == 5
    assert canon(table.scan(filter="_ROW_ID >= 3", columns=["id"]).to_arrow()) == canon(
        [{"id": 4}, {"id": 5}, {"id": 6}])


def test_tarn_writes_peers_read_and_keep_writing(tmp_path):
    warehouse = tmp_path / "wh"
    table = tarn.Catalog(str(warehouse)).create_table(
        "db.t", pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())]), options=OPTIONS)
    table.write(people([1, 2, 3], ["a", "b", "c"], [1, 2, 3]))
    table.write(people([4, 5], ["d", "e"], [4, 5]))
    table.update_columns(pa.table({"_ROW_ID": pa.array([0, 4], pa.int64()), "name": ["A", "E"]}))
    table.update({"score": 0.5}, filter="id = 2")
    table.delete(filter="id = 3")
    expected = [{"id": 1, "name": "A", "score": 1.0, "_ROW_ID": 0}, {"id": 2, "name": "b", "score": 0.5, "_ROW_ID": 1},
                {"id": 4, "name": "d", "score": 4.0, "_ROW_ID": 3}, {"id": 5, "name": "E", "score": 5.0, "_ROW_ID": 4}]
    assert canon(tarn_rows(warehouse)) == canon(expected)
    peers = peer_reads(warehouse, tmp_path)
    assert canon(peers["pypaimon"]) == canon(expected) == canon(peers["rust"])
    # the peers keep writing: pypaimon appends and updates by row id, pypaimon-rust appends
    run_peer("write", {"warehouse": str(warehouse), "table": "db.t", "commits": [
        {"kind": "write", "rows_ipc": write_ipc(tmp_path / "p.arrow", people([6], ["f"], [6]))},
        {"kind": "update_by_row_id", "rows_ipc": write_ipc(tmp_path / "pu.arrow", pa.table(
            {"_ROW_ID": pa.array([1, 5], pa.int64()), "name": ["B", "F"]}))}]})
    run_rust_peer("write", {"warehouse": str(warehouse), "table": "db.t",
                            "rows_ipc": write_ipc(tmp_path / "r.arrow", people([7], ["g"], [7]))})
    expected = [{**row, "name": "B"} if row["id"] == 2 else row for row in expected] + [
        {"id": 6, "name": "F", "score": 6.0, "_ROW_ID": 5}, {"id": 7, "name": "g", "score": 7.0, "_ROW_ID": 6}]
    assert canon(tarn_rows(warehouse)) == canon(expected)
    # tarn compacts the partial-column files away; everyone reads the same rows and ids
    table = tarn.Catalog(str(warehouse)).load_table("db.t")
    table.compact(full=True)
    assert canon(tarn_rows(warehouse)) == canon(expected)
    peers = peer_reads(warehouse, tmp_path)
    assert canon(peers["pypaimon"]) == canon(expected) == canon(peers["rust"])
    table.write(people([8], ["h"], [8]))
    assert table.scan(filter="id = 8", columns=["_ROW_ID"]).to_arrow().to_pylist() == [{"_ROW_ID": 7}]


def tracked_table(warehouse) -> tarn.Table:
    """A row-tracking table without data evolution: ids 1..9 in three files (row ids 0..8)."""
    table = tarn.Catalog(str(warehouse)).create_table(
        "db.t", pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())]),
        options={"row-tracking.enabled": "true"})
    for start in (1, 4, 7):
        table.write(people([start, start + 1, start + 2], ["x"] * 3, [float(start)] * 3))
    return table


def test_row_tracking_compaction_keeps_ranges_every_engine_reads(tmp_path):
    """Compacting consecutive whole files of a row-tracking table (no data evolution) keeps
    `_FIRST_ROW_ID` ranges, which both peers read."""
    warehouse = tmp_path / "wh"
    table = tracked_table(warehouse)
    table.compact(full=True)
    assert len(table.live_entries(table.latest_snapshot())) == 1
    expected = [{"id": i, "name": "x", "score": float(1 + 3 * ((i - 1) // 3)), "_ROW_ID": i - 1} for i in range(1, 10)]
    assert canon(tarn_rows(warehouse)) == canon(expected)
    peers = peer_reads(warehouse, tmp_path)
    assert canon(peers["pypaimon"]) == canon(expected) == canon(peers["rust"])


def test_row_tracking_without_evolution_keeps_ids_through_rewrites(tmp_path):
    """Copy-on-write deletes and updates store `_ROW_ID` in the rewritten files, as Java does.
    pypaimon 2.1 reads their rows (not the stored ids: it shows null); pypaimon-rust 0.4.0
    refuses files without `_FIRST_ROW_ID`."""
    warehouse = tmp_path / "wh"
    table = tracked_table(warehouse)
    table.delete(filter="id = 5")
    table.update({"name": "y"}, filter="id = 8")
    table.compact(full=True)
    expected = [{"id": i, "name": "y" if i == 8 else "x", "score": float(1 + 3 * ((i - 1) // 3)), "_ROW_ID": i - 1}
                for i in range(1, 10) if i != 5]
    assert canon(tarn_rows(warehouse)) == canon(expected)
    out = tmp_path / "py.arrow"
    run_peer("read", {"warehouse": str(warehouse), "table": "db.t", "out_ipc": str(out)})
    assert canon(read_ipc(out)) == canon([{k: v for k, v in row.items() if k != "_ROW_ID"} for row in expected])
    with pytest.raises(Exception, match="missing first_row_id"):
        run_rust_peer("read", {"warehouse": str(warehouse), "table": "db.t", "out_ipc": str(tmp_path / "r.arrow")})


def test_tarn_upsert_by_key_peers_read(tmp_path):
    warehouse = tmp_path / "wh"
    table = tarn.Catalog(str(warehouse)).create_table(
        "db.t", pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())]), options=OPTIONS)
    table.write(people([1, 2, 3], ["a", "b", "c"], [1, 2, 3]))
    table.upsert(people([2, 9], ["B", "i"], [20, 9]), on="id")
    expected = [{"id": 1, "name": "a", "score": 1.0, "_ROW_ID": 0}, {"id": 2, "name": "B", "score": 20.0, "_ROW_ID": 1},
                {"id": 3, "name": "c", "score": 3.0, "_ROW_ID": 2}, {"id": 9, "name": "i", "score": 9.0, "_ROW_ID": 3}]
    assert canon(tarn_rows(warehouse)) == canon(expected)
    peers = peer_reads(warehouse, tmp_path)
    assert canon(peers["pypaimon"]) == canon(expected) == canon(peers["rust"])
