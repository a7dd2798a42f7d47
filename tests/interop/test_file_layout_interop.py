"""Table-layout options between tarn and pypaimon 2.1: `data-file.path-directory` (partition and
bucket directories under a sub-directory of the table). Each writes, the other reads the same
rows, and both keep writing."""

from __future__ import annotations

import os

import pyarrow as pa

import tarn
from tests.interop.test_core_interop import canon, pypaimon_read, write_ipc
from tests.interop.pypaimon_env import run_peer

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])
OPTIONS = {"bucket": "2", "data-file.path-directory": "data"}


def data_dirs(root: str) -> set[str]:
    return {os.path.relpath(d, root).split(os.sep)[0] for d, _, files in os.walk(root)
            if any(f.startswith("data-") for f in files)}


def test_path_directory_both_ways(tmp_path):
    warehouse = str(tmp_path / "wh")
    t = tarn.Catalog(warehouse).create_table("db.t", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                             options=OPTIONS)
    t.write(pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]}, schema=SCHEMA))
    t.write(pa.table({"dt": ["a"], "id": [2], "v": ["Y"]}, schema=SCHEMA))
    assert data_dirs(t.root) == {"data"}
    assert canon(pypaimon_read(t.root, tmp_path / "1.arrow"), SCHEMA.names) == canon(t.scan().to_arrow())

    rows = pa.table({"dt": ["c", "a"], "id": [4, 1], "v": ["w", "X"]})
    run_peer("write", {"warehouse": warehouse, "table": "db.t",
                       "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "w.arrow", rows)}]})
    t = tarn.Catalog(warehouse).load_table("db.t")
    assert data_dirs(t.root) == {"data"}
    got = canon(t.scan().to_arrow(), SCHEMA.names)
    assert got == canon(pa.table({"dt": ["a", "a", "b", "c"], "id": [1, 2, 3, 4], "v": ["X", "Y", "z", "w"]}))
    t.compact(full=True)
    assert canon(pypaimon_read(t.root, tmp_path / "2.arrow"), SCHEMA.names) == got

    # pypaimon makes the table, tarn continues it
    run_peer("write", {
        "warehouse": warehouse, "table": "db.p", "schema": [["dt", "STRING NOT NULL"], ["id", "BIGINT NOT NULL"],
                                                            ["v", "STRING"]],
        "primary_keys": ["dt", "id"], "partition_keys": ["dt"], "options": OPTIONS,
        "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "p.arrow", rows)}]})
    p = tarn.Catalog(warehouse).load_table("db.p")
    p.write(pa.table({"dt": ["c"], "id": [5], "v": ["n"]}, schema=SCHEMA))
    assert data_dirs(p.root) == {"data"}
    assert canon(pypaimon_read(p.root, tmp_path / "3.arrow"), SCHEMA.names) == canon(p.scan().to_arrow()) == canon(
        pa.table({"dt": ["a", "c", "c"], "id": [1, 4, 5], "v": ["X", "w", "n"]}))
