"""Changelog files between tarn and pypaimon 2.1.

pypaimon 2.1 plans a snapshot's changelog (`changelogManifestList`) in its streaming scan and
reads it with row kinds. Both directions: pypaimon reads the changelog of every tarn producer
(input, lookup, full-compaction), and tarn's `Table.changes` reads the input changelog pypaimon
writes, then keeps writing it for pypaimon to read. Known difference: pypaimon's input
changelog holds the merged rows of a write (one per key), not every input row as Java's does.
"""

from __future__ import annotations

import json
import subprocess

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import tarn
from tests.interop.pypaimon_env import PeerError, peer_python, run_peer

# pypaimon's streaming scan, one snapshot at a time: {snapshot id: [row dict with _row_kind]}
READ_CHANGELOG = """
import json, sys
from pypaimon.table.file_store_table import FileStoreTable
spec = json.load(sys.stdin)
table = FileStoreTable.from_path(spec["table_path"])
builder = table.new_stream_read_builder().with_include_row_kind(True)
scan, read = builder.new_streaming_scan(), builder.new_read()
answer = {}
for snapshot_id in spec["snapshots"]:
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    plan = scan._create_follow_up_plan(snapshot)
    answer[snapshot_id] = read.to_arrow(plan.splits()).to_pylist() if plan.splits() else []
print(json.dumps(answer))
"""

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def pypaimon_changelog(table: tarn.Table) -> dict[int, list]:
    """Each snapshot's changelog rows as pypaimon reads them, as sorted (kind, id, v) tuples."""
    spec = {"table_path": table.root, "snapshots": [s.id for s in table.snapshots()]}
    result = subprocess.run([str(peer_python()), "-c", READ_CHANGELOG], input=json.dumps(spec),
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise PeerError(f"pypaimon changelog read failed:\n{result.stderr}")
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    return {int(k): sorted((r["_row_kind"], r["id"], r["v"]) for r in rows) for k, rows in answer.items()}


def tarn_changelog(table: tarn.Table) -> dict[int, list]:
    out = {}
    for s in table.snapshots():
        rows = table.changes(s.id).to_pylist()
        out[s.id] = sorted((r["_ROW_KIND"], r["id"], r["v"]) for r in rows)
    return out


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_pypaimon_reads_tarn_changelog(tmp_path, producer):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"],
                             options={"bucket": "2", "changelog-producer": producer})
    t.write(pa.table({"id": [1, 2, 1, 4], "v": ["a", "b", "c", "d"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2, 3], "v": ["B", "x"]}, schema=SCHEMA))
    t.delete(pa.table({"id": [4]}))
    ours = tarn_changelog(t)
    assert sum(len(rows) for rows in ours.values()) > 0
    assert pypaimon_changelog(t) == ours
    if producer != "input":
        assert ("-U", 2, "b") in ours[4] and ("+U", 2, "B") in ours[4]


def write_ipc(path, table: pa.Table) -> str:
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)
    return str(path)


def test_tarn_reads_pypaimon_input_changelog(tmp_path):
    warehouse = str(tmp_path / "wh")
    first = pa.table({"id": [3, 1, 3], "v": ["p", "q", "r"], "op": ["+I", "+I", "+U"]})
    gone = pa.table({"id": [1], "v": ["q"], "op": ["-D"]})
    run_peer("write", {
        "warehouse": warehouse, "table": "db.t", "schema": [["id", "BIGINT"], ["v", "STRING"], ["op", "STRING"]],
        "primary_keys": ["id"], "partition_keys": [],
        "options": {"bucket": "1", "changelog-producer": "input", "rowkind.field": "op"},
        "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "1.arrow", first)},
                    {"kind": "delete", "rows_ipc": write_ipc(tmp_path / "2.arrow", gone)}],
    })
    t = tarn.Catalog(warehouse).load_table("db.t")
    theirs = pypaimon_changelog(t)
    ours = tarn_changelog(t)
    assert ours == theirs
    # pypaimon 2.1 writes its input changelog after merging the batch (one row per key);
    # Java and tarn keep every input row (("+I", 3, "p") too)
    assert ours[1] == [("+I", 1, "q"), ("+U", 3, "r")]
    assert ours[2] == [("-D", 1, "q")]
    # tarn keeps writing the table; pypaimon reads tarn's changelog too
    t.write(pa.table({"id": [5], "v": ["s"], "op": ["+I"]}))
    assert pypaimon_changelog(t) == tarn_changelog(t)
