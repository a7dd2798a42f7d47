"""Table-layout options between tarn and pypaimon 2.1: `data-file.path-directory` (partition and
bucket directories under a sub-directory of the table) and `data-file.external-paths` (new files
under other roots, `_EXTERNAL_PATH` in their entries). Each writes, the other reads the same
rows, and both keep writing."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

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


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
def test_external_paths_both_ways(tmp_path, strategy):
    """`data-file.external-paths`: tarn's new files go under the external roots and record
    `_EXTERNAL_PATH`; pypaimon reads them, writes its own there, and tarn reads those."""
    warehouse = str(tmp_path / "wh")
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    options = {"bucket": "2", "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
               "data-file.external-paths.strategy": strategy}
    t = tarn.Catalog(warehouse).create_table("db.x", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                             options=options)
    t.write(pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]}, schema=SCHEMA))
    t.write(pa.table({"dt": ["a"], "id": [2], "v": ["Y"]}, schema=SCHEMA))
    entries = t.live_entries(t.latest_snapshot())
    assert entries and all(e.file.external_path and e.file.external_path.startswith("file://") for e in entries)
    assert not data_dirs(t.root)  # nothing under the table directory
    assert canon(pypaimon_read(t.root, tmp_path / "1.arrow"), SCHEMA.names) == canon(t.scan().to_arrow())

    rows = pa.table({"dt": ["c", "a"], "id": [4, 1], "v": ["w", "X"]})
    run_peer("write", {"warehouse": warehouse, "table": "db.x",
                       "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "w.arrow", rows)}]})
    t = tarn.Catalog(warehouse).load_table("db.x")
    expected = canon(pa.table({"dt": ["a", "a", "b", "c"], "id": [1, 2, 3, 4], "v": ["X", "Y", "z", "w"]}))
    assert canon(t.scan().to_arrow(), SCHEMA.names) == expected
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
    assert canon(pypaimon_read(t.root, tmp_path / "2.arrow"), SCHEMA.names) == expected
    live = {e.file.file_name for e in t.live_entries(t.latest_snapshot())}
    on_roots = {n for r in roots for _, _, names in os.walk(r) for n in names if n.endswith(".parquet")}
    assert on_roots == live  # expiry removed the replaced external files


def test_index_files_in_data_dirs_both_ways(tmp_path):
    """`index-file-in-data-file-dir`: deletion-vector index files in their bucket's directory,
    not `index/`; written by tarn (a DELETE on an append table), read by pypaimon; pypaimon
    writes on and tarn deletes again."""
    warehouse = str(tmp_path / "wh")
    options = {"deletion-vectors.enabled": "true", "index-file-in-data-file-dir": "true"}
    t = tarn.Catalog(warehouse).create_table("db.i", SCHEMA, partition_keys=["dt"], options=options)
    t.write(pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]}, schema=SCHEMA))
    t.delete(filter="id = 2")

    def index_files():
        return [os.path.relpath(os.path.join(d, n), t.root) for d, _, names in os.walk(t.root)
                for n in names if n.startswith("index-") and os.path.basename(d) != "manifest"]

    assert index_files() and all(f.startswith("dt=a/bucket-0/") for f in index_files()), index_files()
    assert canon(pypaimon_read(t.root, tmp_path / "1.arrow"), SCHEMA.names) == canon(t.scan().to_arrow())

    rows = pa.table({"dt": ["a"], "id": [4], "v": ["w"]})
    run_peer("write", {"warehouse": warehouse, "table": "db.i",
                       "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "w.arrow", rows)}]})
    t = tarn.Catalog(warehouse).load_table("db.i")
    t.delete(filter="id = 1")
    expected = canon(pa.table({"dt": ["a", "b"], "id": [4, 3], "v": ["w", "z"]}))
    assert canon(t.scan().to_arrow(), SCHEMA.names) == expected
    assert canon(pypaimon_read(t.root, tmp_path / "2.arrow"), SCHEMA.names) == expected
    assert all(f.startswith("dt=") for f in index_files())
