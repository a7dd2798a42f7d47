"""Tags across implementations: pypaimon 2.1 lists and reads tarn's tags (with and without a
retention, also after their snapshots expired); tarn lists and reads pypaimon's tags."""

import datetime as dt
import time

import pyarrow as pa
import pyarrow.ipc as ipc

import tarn
from tarn.ops import tags as T
from tarn.ops.expire import expire_snapshots
from tarn.ops.time_travel import scan_at, snapshot_by_tag
from tests.interop.pypaimon_env import run_peer
from tests.helpers import canonical_rows

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string())])


def batch(dts, ids, names) -> pa.Table:
    return pa.table({"dt": dts, "id": ids, "name": names}, schema=SCHEMA)


def write_ipc(path, table: pa.Table) -> str:
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)
    return str(path)


def read_ipc(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def canon(table: pa.Table) -> list:
    return canonical_rows(table, SCHEMA.names)


def test_pypaimon_lists_and_reads_tarn_tags(tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(batch(["a", "a", "b"], [1, 2, 3], ["x", "y", "z"]))
    T.create_tag(t, "first")
    t.write(batch(["a", "b"], [2, 4], ["Y", "w"]))
    T.create_tag(t, "second", time_retained=dt.timedelta(days=3))
    t.overwrite(batch(["a"], [9], ["only"]), partition={"dt": "a"})
    want = {name: canon(scan_at(t, snapshot_by_tag(t, name)).to_arrow()) for name in ("first", "second")}
    # the tagged snapshots expire: pypaimon must find everything through the tag files alone
    expire_snapshots(t, retain_min=1, older_than_ms=int(time.time() * 1000) + 10**6, max_deletes=10)
    assert t.snapshot_store.list_ids() == [3]
    answer = run_peer("batch", {"calls": [
        ["list_tags", {"table_path": t.root}],
        ["read", {"table_path": t.root, "tag": "first", "out_ipc": str(tmp_path / "first.arrow")}],
        ["read", {"table_path": t.root, "tag": "second", "out_ipc": str(tmp_path / "second.arrow")}],
    ]})["results"]
    assert answer[0]["tags"] == {"first": 1, "second": 2}
    assert canon(read_ipc(tmp_path / "first.arrow")) == want["first"]
    assert canon(read_ipc(tmp_path / "second.arrow")) == want["second"]


def test_tarn_lists_and_reads_pypaimon_tags(tmp_path):
    warehouse = str(tmp_path / "wh")
    one = write_ipc(tmp_path / "1.arrow", batch(["a", "b"], [1, 2], ["x", "y"]))
    two = write_ipc(tmp_path / "2.arrow", batch(["a"], [3], ["z"]))
    run_peer("write", {
        "warehouse": warehouse, "table": "db.app", "schema": [["dt", "STRING"], ["id", "BIGINT"], ["name", "STRING"]],
        "primary_keys": [], "partition_keys": ["dt"], "options": {},
        "commits": [{"kind": "write", "rows_ipc": one}, {"kind": "tag", "name": "v1"},
                    {"kind": "write", "rows_ipc": two}, {"kind": "tag", "name": "also-v1", "snapshot_id": 1}],
    })
    t = tarn.Catalog(warehouse).load_table("db.app")
    assert [(x.name, x.snapshot_id) for x in T.list_tags(t)] == [("also-v1", 1), ("v1", 1)]
    answer = run_peer("read", {"table_path": t.root, "tag": "v1", "out_ipc": str(tmp_path / "v1.arrow")})
    assert answer["rows"] == 2
    assert canon(scan_at(t, snapshot_by_tag(t, "v1")).to_arrow()) == canon(read_ipc(tmp_path / "v1.arrow"))
    # tarn manages pypaimon's tags: delete one, rename the other, pypaimon sees the result
    T.delete_tag(t, "also-v1")
    T.rename_tag(t, "v1", "release")
    assert run_peer("list_tags", {"table_path": t.root})["tags"] == {"release": 1}
