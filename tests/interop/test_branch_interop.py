"""Branches pypaimon 2.1 created and wrote survive tarn's maintenance of main: rollback, tag
deletion, snapshot expiry down to one snapshot and orphan removal leave every branch readable
by pypaimon, row for row, and still remove what nothing uses."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pyarrow as pa

import tarn
from tarn.ops import expire, rollback
from tarn.ops import tags as T
from tarn.ops.orphans import remove_orphan_files
from tarn.store.branches import branch_names
from tests.interop.pypaimon_env import PeerError, peer_python

BRANCH_PEER = Path(__file__).resolve().with_name("branch_peer.py")
SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
FUTURE = int(time.time() * 1000) + 10**9


def run_steps(warehouse: str, steps: list[dict]) -> list[dict]:
    result = subprocess.run([str(peer_python()), str(BRANCH_PEER)],
                            input=json.dumps({"warehouse": warehouse, "steps": steps}),
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise PeerError(f"branch_peer.py exited with {result.returncode}:\n{result.stderr}")
    return json.loads(result.stdout)["results"]


def rows(p, ks) -> pa.Table:
    return pa.table({"p": [p] * len(ks), "k": list(ks), "v": [f"{p}{k}" for k in ks]}, schema=SCHEMA)


def json_rows(p, ks) -> dict:
    return rows(p, ks).to_pydict()


def canon(listed: list[dict]) -> list:
    return sorted((r["p"], r["k"], r["v"]) for r in listed)


READS = [("db.events$branch_dev", None), ("db.events$branch_dev", "t1"), ("db.events$branch_dev", "d1"),
         ("db.events$branch_fresh", None)]


def read_branches(warehouse: str) -> list:
    answers = run_steps(warehouse, [{"op": "read", "table": table, "tag": tag} for table, tag in READS])
    return [canon(a["rows"]) for a in answers]


def test_pypaimon_branches_survive_tarn_maintenance(tmp_path):
    warehouse = str(tmp_path / "wh")
    catalog = tarn.Catalog(warehouse)
    t = catalog.create_table("db.events", schema=SCHEMA, partition_keys=["p"])
    t.write(rows("a", [1, 2]))                          # 1
    t.write(rows("b", [3]))                             # 2
    T.create_tag(t, "t1")
    run_steps(warehouse, [
        {"op": "create_branch", "table": "db.events", "branch": "dev", "tag": "t1"},
        {"op": "write", "table": "db.events$branch_dev", "rows": json_rows("z", [7, 8])},
        {"op": "create_tag", "table": "db.events$branch_dev", "name": "d1"},
        {"op": "write", "table": "db.events$branch_dev", "rows": json_rows("z", [9])},
        {"op": "create_branch", "table": "db.events", "branch": "fresh"},
        {"op": "write", "table": "db.events$branch_fresh", "rows": json_rows("y", [5])},
    ])
    assert branch_names(t.file_io, t.root) == ["dev", "fresh"]
    want = read_branches(warehouse)
    assert want[0] == canon(rows("a", [1, 2]).to_pylist() + rows("b", [3]).to_pylist()
                            + rows("z", [7, 8, 9]).to_pylist())
    assert want[1] == canon(rows("a", [1, 2]).to_pylist() + rows("b", [3]).to_pylist())
    assert want[3] == canon(rows("y", [5]).to_pylist())

    t.overwrite(rows("a", [10]), partition={"p": "a"})  # 3: main drops the files dev started from
    t.write(rows("c", [4]))                             # 4
    rollback.rollback_to(t, 3)
    t.write(rows("c", [5]))                             # 4
    T.delete_tag(t, "t1")
    assert expire.expire_snapshots(t, retain_min=1, retain_max=1, older_than_ms=FUTURE) == 3
    dead = os.path.join(t.root, "p=a", "bucket-0", "data-dead-0.parquet")
    with open(dead, "wb") as f:
        f.write(b"junk")
    removed = remove_orphan_files(t, older_than=FUTURE)
    assert dead in removed and not os.path.exists(dead)

    assert read_branches(warehouse) == want
    assert canon(t.scan().to_arrow().to_pylist()) == canon(
        rows("a", [10]).to_pylist() + rows("b", [3]).to_pylist() + rows("c", [5]).to_pylist())
    assert run_steps(warehouse, [{"op": "branches", "table": "db.events"}])[0]["branches"] == ["dev", "fresh"]
