"""`bucket-function.type = mod` between tarn and the Python peers, negative keys included.

pypaimon 2.1 does not implement the option for writes (its FixedBucketRowKeyExtractor routes by
the default hash whatever the option says; its scans skip bucket pruning for non-default
functions), so it only reads here: the whole table, which works wherever the rows are.
pypaimon-rust 0.4.0 routes and prunes by `mod`: a key filter on a table tarn wrote reads only
the bucket floorMod(key, N) and must find the key there; tarn prunes a table pypaimon-rust wrote
the same way. (tests/interop/test_today_tables.py covers the peers' own mod tables with keys
0..19; these add negative keys, where floorMod and a plain remainder differ.)
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

import tarn
from tests.interop.pypaimon_env import run_peer
from tests.interop.rust_env import run_rust_peer

KEYS = [-9, -6, -5, -4, -3, -1, 0, 2, 5, 7, 2**31 - 1, -2**31]
BUCKETS = 4


def write_ipc(path, rows: pa.Table) -> str:
    with ipc.new_file(str(path), rows.schema) as sink:
        sink.write_table(rows)
    return str(path)


def read_ipc(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def rows(keys) -> pa.Table:
    return pa.table({"id": pa.array(keys, pa.int32()), "v": [f"v{k}" for k in keys]})


def bucket_dirs(table) -> dict[int, set]:
    """{bucket: keys} of the live files, by the bucket-<n> directory each file is in."""
    out: dict[int, set] = {}
    for entry in table.live_entries(table.latest_snapshot()):
        path = f"{table.root}/bucket-{entry.bucket}/{entry.file.file_name}"
        out.setdefault(entry.bucket, set()).update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
    return out


def test_pypaimon_rust_finds_each_key_of_a_tarn_mod_table(tmp_path):
    warehouse = tmp_path / "wh"
    catalog = tarn.Catalog(str(warehouse))
    table = catalog.create_table("db.mod", schema=pa.schema([pa.field("id", pa.int32(), nullable=False),
                                                             ("v", pa.string())]),
                                 primary_key=["id"], options={"bucket": str(BUCKETS), "bucket-function.type": "mod"})
    table.write(rows(KEYS))
    assert bucket_dirs(table) == {b: {k for k in KEYS if k % BUCKETS == b} for b in range(BUCKETS)}

    calls = [["read", {"warehouse": str(warehouse), "table": "db.mod", "out_ipc": str(tmp_path / f"k{i}.arrow"),
                       "predicate": {"method": "equal", "field": "id", "literals": [key]}}]
             for i, key in enumerate(KEYS)]
    results = run_rust_peer("batch", {"calls": calls})["results"]
    for i, (key, answer) in enumerate(zip(KEYS, results)):
        found = read_ipc(tmp_path / f"k{i}.arrow")
        assert found.column("id").to_pylist() == [key], key
        assert answer["splits"] == 1, key  # pruned to the one bucket floorMod names

    answer = run_peer("read", {"warehouse": str(warehouse), "table": "db.mod", "out_ipc": str(tmp_path / "all.arrow")})
    assert answer["rows"] == len(KEYS)
    assert sorted(read_ipc(tmp_path / "all.arrow").column("id").to_pylist()) == sorted(KEYS)


def test_tarn_prunes_a_pypaimon_rust_mod_table(tmp_path):
    warehouse = tmp_path / "wh"
    ddl = ("CREATE TABLE paimon.db.rmod (id INT NOT NULL, v STRING, PRIMARY KEY (id)) "
           f"WITH ('bucket' = '{BUCKETS}', 'bucket-function.type' = 'mod')")
    run_rust_peer("sql", {"warehouse": str(warehouse), "statements": ["CREATE DATABASE IF NOT EXISTS paimon.db"]})
    run_rust_peer("write", {"warehouse": str(warehouse), "table": "db.rmod", "create": ddl,
                            "rows_ipc": write_ipc(tmp_path / "in.arrow", rows(KEYS))})
    table = tarn.Catalog(str(warehouse)).load_table("db.rmod")
    assert bucket_dirs(table) == {b: {k for k in KEYS if k % BUCKETS == b} for b in range(BUCKETS)}
    for key in KEYS:
        scan = table.scan(filter=f"id = {key}")
        assert {split.bucket for split in scan.plan()} == {key % BUCKETS}
        assert scan.to_arrow().to_pylist() == [{"id": key, "v": f"v{key}"}]
    # tarn's upserts land where pypaimon-rust looks
    table.write(rows([-5, 7]).set_column(1, "v", pa.array(["tarn-5", "tarn7"])))
    out = tmp_path / "after.arrow"
    run_rust_peer("read", {"warehouse": str(warehouse), "table": "db.rmod", "out_ipc": str(out),
                           "predicate": {"method": "in", "field": "id", "literals": [-5, 7]}})
    assert sorted(read_ipc(out).to_pylist(), key=lambda r: r["id"]) == [{"id": -5, "v": "tarn-5"},
                                                                        {"id": 7, "v": "tarn7"}]


def test_pypaimon_21_does_not_route_by_the_function(tmp_path):
    """Documents why no pypaimon 2.1 -> tarn pruning test exists: pypaimon 2.1's writer places
    `mod` tables by the default hash (test_today_tables.py asserts the same on its table)."""
    answer = run_peer("make", {"warehouse": str(tmp_path / "wh"), "kind": "mod_bucket",
                               "out_ipc": str(tmp_path / "made.arrow"), "ids": KEYS})
    placed = {int(k): b for k, b in answer["bucket_of_id"].items()}
    assert placed != {k: k % BUCKETS for k in KEYS}
