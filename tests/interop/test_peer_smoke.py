"""The pypaimon 2.1 peer writes and reads its own tables (no tarn code involved)."""

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from .pypaimon_env import PeerError, run_peer

APPEND_SCHEMA = [["id", "BIGINT"], ["name", "STRING"], ["amount", "DECIMAL(10, 2)"]]
PK_SCHEMA = [["dt", "STRING NOT NULL"], ["id", "BIGINT NOT NULL"], ["v", "STRING"],
             ["kind", "STRING"]]


def write_ipc(path: Path, rows: pa.Table) -> str:
    with ipc.new_file(str(path), rows.schema) as sink:
        sink.write_table(rows)
    return str(path)


def read_ipc(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def sorted_rows(rows: pa.Table, keys: list[str]) -> list[dict]:
    return rows.sort_by([(key, "ascending") for key in keys]).to_pylist()


def peer_reads(tmp_path: Path, specs: dict[str, dict]) -> dict[str, pa.Table]:
    """Read the table once per named spec, all in one peer process."""
    outs = {name: tmp_path / f"{name}.arrow" for name in specs}
    calls = [["read", {**spec, "out_ipc": str(outs[name])}] for name, spec in specs.items()]
    answers = run_peer("batch", {"calls": calls})["results"]
    tables = {}
    for (name, out), answer in zip(outs.items(), answers):
        rows = read_ipc(out)
        assert answer["rows"] == rows.num_rows
        assert [column for column, _ in answer["schema"]] == rows.column_names
        tables[name] = rows
    return tables


def pk_rows(dt: list[str], ids: list[int], values: list[str | None]) -> pa.Table:
    return pa.table({"dt": pa.array(dt, pa.string()), "id": pa.array(ids, pa.int64()),
                     "v": pa.array(values, pa.string())})


def test_append_table_two_commits(tmp_path):
    first = pa.table({"id": pa.array([3, 1, 2], pa.int64()), "name": ["c", "a", None],
                      "amount": pa.array([Decimal("1.50"), None, Decimal("-2.25")], pa.decimal128(10, 2))})
    second = pa.table({"id": pa.array([4], pa.int64()), "name": ["d"],
                       "amount": pa.array([Decimal("99999999.99")], pa.decimal128(10, 2))})
    table = {"warehouse": str(tmp_path / "wh"), "table": "db.app"}
    answer = run_peer("write", {
        **table, "schema": APPEND_SCHEMA, "primary_keys": [], "partition_keys": [],
        "options": {"bucket": "-1"},
        "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "1.arrow", first)},
                    {"kind": "write", "rows_ipc": write_ipc(tmp_path / "2.arrow", second)}]})
    assert answer["snapshot_ids"] == [1, 2]
    assert answer["table_path"].endswith("db.db/app")

    read = peer_reads(tmp_path, {"latest": table, "at1": {**table, "snapshot_id": 1},
                                 "by_path": {"table_path": answer["table_path"]}})
    assert read["latest"].schema.field("amount").type == pa.decimal128(10, 2)
    assert sorted_rows(read["latest"], ["id"]) == sorted_rows(pa.concat_tables([first, second]), ["id"])
    assert sorted_rows(read["at1"], ["id"]) == sorted_rows(first, ["id"])
    assert read["by_path"].num_rows == 4


def test_primary_key_table_update_delete_tag(tmp_path):
    table = {"warehouse": str(tmp_path / "wh"), "table": "db.pk"}
    inserts = pk_rows(["d1", "d1", "d1", "d1", "d2"], [1, 2, 3, 4, 1], ["a", "b", "c", "d", "e"])
    updates = pk_rows(["d1", "d1", "d2"], [2, 3, 9], ["B", None, "z"])
    deletes = pk_rows(["d1"], [4], ["d"])
    answer = run_peer("write", {
        **table, "schema": PK_SCHEMA, "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
        "options": {"bucket": "2", "rowkind.field": "kind"},
        "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "i.arrow", inserts)},
                    {"kind": "tag", "name": "first"},
                    {"kind": "write", "rows_ipc": write_ipc(tmp_path / "u.arrow", updates)},
                    {"kind": "delete", "rows_ipc": write_ipc(tmp_path / "d.arrow", deletes)}]})
    assert answer["snapshot_ids"] == [1, 1, 2, 3]

    expected = [("d1", 1, "a"), ("d1", 2, "B"), ("d1", 3, None), ("d2", 1, "e"), ("d2", 9, "z")]
    read = peer_reads(tmp_path, {"latest": table, "tag": {**table, "tag": "first"},
                                 "at1": {**table, "snapshot_id": 1}})
    latest = read["latest"]
    assert latest.column_names == ["dt", "id", "v", "kind"]
    assert sorted_rows(latest, ["dt", "id"]) == [
        {"dt": dt, "id": key, "v": value, "kind": "+I"} for dt, key, value in expected]

    first = sorted_rows(inserts, ["dt", "id"])
    for name in ("tag", "at1"):
        assert sorted_rows(read[name].drop_columns(["kind"]), ["dt", "id"]) == first

    assert run_peer("list_tags", table) == {"tags": {"first": 1}}
    snapshots = run_peer("snapshots", table)["snapshots"]
    assert [s["id"] for s in snapshots] == [1, 2, 3]
    assert [s["totalRecordCount"] for s in snapshots] == [5, 8, 9]
    assert all(s["commitKind"] == "APPEND" for s in snapshots)


def test_delete_without_rowkind_field_is_refused(tmp_path):
    spec = {"warehouse": str(tmp_path / "wh"), "table": "db.nokind",
            "schema": [["id", "BIGINT NOT NULL"], ["v", "STRING"]], "primary_keys": ["id"],
            "options": {"bucket": "1"},
            "commits": [{"kind": "delete", "rows_ipc": write_ipc(
                tmp_path / "d.arrow", pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]}))}]}
    with pytest.raises(PeerError, match="rowkind.field"):
        run_peer("write", spec)
