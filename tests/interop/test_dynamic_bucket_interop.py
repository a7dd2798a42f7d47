"""Dynamic bucket mode (`bucket` = -1) and rescale between tarn, Java Paimon 1.0 (javaref) and
pypaimon 2.1.

A wrong HASH index shows up as one key in two buckets: the next writer loading the index sends a
known key to a new bucket, and every reader then returns the key twice. So each step checks the
rows of every reader against a dict oracle (a duplicate key fails `java_rows` / `by_key`).

1. tarn writes a partitioned dynamic table; Java reads it and its HASH files (`index-files`:
   Java reads as many hashes as tarn's manifest says), writes upserts, new keys and deletes on
   top (its HashBucketAssigner loads tarn's index); tarn reads Java's result and writes on;
   Java reads again.
2. Twin tables: Java and tarn apply the same commits; every key lands in the same bucket and
   every bucket's HASH file holds the same hashes (Paimon's assignment rule, exactly).
3. pypaimon reads tarn's dynamic table and writes into it; pypaimon creates and writes a
   dynamic table that tarn continues; every reader agrees.
4. Rescale: tarn rescales a Java-made fixed-bucket table's partition; Java reads it and writes
   into it with the new bucket count.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import tarn
from tarn.meta.manifest import HASH_INDEX
from tarn.store.deletion_vectors import live_index_entries
from tarn.write.assign import HashIndexFiles
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)
from tests.interop.pypaimon_env import run_peer
from tests.test_dynamic_bucket import buckets_of, check_index

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    ("v", pa.string())])
JAVA_SCHEMA = json.dumps([{"name": "dt", "type": "STRING"}, {"name": "k", "type": "BIGINT"},
                          {"name": "v", "type": "STRING"}])
PEER_SCHEMA = [["dt", "STRING NOT NULL"], ["k", "BIGINT NOT NULL"], ["v", "STRING"]]


def rows_of(dt, keys, tag) -> list[dict]:
    return [{"dt": dt, "k": k, "v": f"{tag}{k}"} for k in keys]


def arrow(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([{c: r[c] for c in ("dt", "k", "v")} for r in rows], schema=SCHEMA)


def by_key(rows) -> dict:
    out = {}
    for r in rows:
        key = (r["dt"], int(r["k"]))
        assert key not in out, f"key {key} read twice: in two buckets"
        out[key] = r["v"]
    return out


def apply(oracle: dict, rows: list[dict]) -> None:
    for r in rows:
        if r.get("op") == "-D":
            oracle.pop((r["dt"], r["k"]), None)
        else:
            oracle[(r["dt"], r["k"])] = r["v"]


def tarn_write(table, rows: list[dict]) -> None:
    kinds = [r.get("op", "+I") for r in rows]
    table.write(arrow(rows), row_kind=kinds)


def java_write(javaref, root: str, rows: list[dict], tmp: Path) -> list[str]:  # noqa: F811
    return ["write", root, "--rows", javaref.rows_arg(rows, tmp), "--kind-column", "op"]


def java_hashes(index_files: dict) -> dict:
    """{(dt, bucket): (row_count, hashes read)} of Java's `index-files` (HASH files only)."""
    out = {}
    for e in index_files["index_files"]:
        assert "read_error" not in e and e["file_exists"] and e["kind"] == "ADD", e
        if e["index_type"] == HASH_INDEX:
            out[(e["partition"]["dt"], e["bucket"])] = (e["row_count"], e["hashes_read"])
    return out


def tarn_hashes(table) -> dict:
    """{(dt, bucket): set of hashes} of a table's live HASH files, as tarn reads them."""
    files = HashIndexFiles(table.file_io, table.root)
    out = {}
    for e in live_index_entries(table.manifests(), table.latest_snapshot()):
        if e.index_type == HASH_INDEX:
            dt = tarn.partition.from_bytes(table.schema(), e.partition)[0]
            out[(dt, e.bucket)] = set(files.read(e).tolist())
    return out


def read_ipc(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def write_ipc(path: Path, table: pa.Table) -> str:
    with ipc.new_file(str(path), table.schema) as sink:
        sink.write_table(table)
    return str(path)


def pypaimon_read(tmp: Path, spec: dict, name: str) -> dict:
    out = tmp / f"pypaimon-{name}.arrow"
    run_peer("read", {**spec, "out_ipc": str(out)})
    return by_key(read_ipc(out).to_pylist())


# ---------------------------------------------------------------------------- 1


def test_java_continues_a_tarn_table_and_tarn_continues_java(tmp_path, javaref):  # noqa: F811
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"],
                                 options={"dynamic-bucket.target-row-num": "5"})
    oracle: dict = {}
    steps = [rows_of("a", range(20), "t1-") + rows_of("b", range(8), "t1-"),
             rows_of("a", range(15, 30), "t2-") + [{**r, "op": "-D"} for r in rows_of("b", [1, 2], "")],
             rows_of("b", range(5, 12), "t3-")]
    for step in steps:
        tarn_write(table, step)
        apply(oracle, step)
    expected_hashes = {key: len(hashes) for key, hashes in tarn_hashes(table).items()}
    read, index_files = javaref.run_many([["read", table.root], ["index-files", table.root]])
    assert by_key(read["rows"]) == oracle
    assert {key: count for key, (count, _) in java_hashes(index_files).items()} == expected_hashes
    assert all(count == got for count, got in java_hashes(index_files).values())

    java_step = (rows_of("a", [0, 3, 29, 30, 31, 32, 33, 34, 35], "j1-")  # known keys and new ones
                 + rows_of("b", [1, 2, 40], "j1-")  # keys tarn deleted (hashes kept) and a new one
                 + [{**r, "op": "-D"} for r in rows_of("a", [5, 6], "")])
    answers = javaref.run_many([java_write(javaref, table.root, java_step, tmp_path),
                                ["read", table.root], ["index-files", table.root]])
    apply(oracle, java_step)
    assert by_key(answers[1]["rows"]) == oracle
    assert java_hashes(answers[2])[("a", 0)][0] == 5

    assert by_key(table.scan().to_arrow().to_pylist()) == oracle
    check_index(table)
    before = buckets_of(table)
    tarn_step = rows_of("a", [29, 30, 36, 37, 38, 39, 40, 41], "t4-") + rows_of("c", [1], "t4-")
    tarn_write(table, tarn_step)
    apply(oracle, tarn_step)
    after = buckets_of(table)
    assert all(after[key] == bucket for key, bucket in before.items() if key in after)
    check_index(table)
    read, = javaref.run_many([["read", table.root]])
    assert by_key(read["rows"]) == oracle
    assert pypaimon_read(tmp_path, {"table_path": table.root, "java_manifests": True}, "t") == oracle


# ---------------------------------------------------------------------------- 2


def test_twin_tables_put_every_key_in_the_same_bucket(tmp_path, javaref):  # noqa: F811
    options = {"dynamic-bucket.target-row-num": "3"}
    java_root = str(tmp_path / "wh" / "db.db" / "java")
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    twin = catalog.create_table("db.tarn", schema=SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"],
                                options=options)
    commits = [
        rows_of("a", [5, 1, 9, 1, 7, 3, 11], "c1-") + rows_of("b", [2, 4], "c1-"),
        rows_of("a", [3, 20, 21, 22, 23], "c2-") + [{**r, "op": "-D"} for r in rows_of("b", [4, 50], "")],
        rows_of("b", [50, 51, 52, 53, 54, 55, 56], "c3-") + rows_of("a", [100, 5, 101], "c3-"),
    ]
    calls = [["create", java_root, "--schema", JAVA_SCHEMA, "--primary-keys", "dt,k", "--partition-keys", "dt",
              "--options", json.dumps(options)]]
    calls += [java_write(javaref, java_root, commit, tmp_path) for commit in commits]
    created, *_ = javaref.run_many(calls)
    assert created["bucket_mode"] == "HASH_DYNAMIC"
    oracle: dict = {}
    for commit in commits:
        tarn_write(twin, commit)
        apply(oracle, commit)
    java_table = tarn.load_table(java_root)
    assert by_key(java_table.scan().to_arrow().to_pylist()) == oracle == by_key(twin.scan().to_arrow().to_pylist())
    assert buckets_of(java_table) == buckets_of(twin)
    assert tarn_hashes(java_table) == tarn_hashes(twin)
    check_index(java_table)


# ---------------------------------------------------------------------------- 3


def test_pypaimon_reads_and_writes_dynamic_tables_with_tarn(tmp_path, javaref):  # noqa: F811
    warehouse = str(tmp_path / "wh")
    catalog = tarn.Catalog(warehouse)
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"],
                                 options={"dynamic-bucket.target-row-num": "4"})
    oracle: dict = {}
    first = rows_of("a", range(10), "t1-") + rows_of("b", range(3), "t1-")
    tarn_write(table, first)
    apply(oracle, first)
    spec = {"warehouse": warehouse, "table": "db.t"}
    assert pypaimon_read(tmp_path, spec, "first") == oracle

    theirs = rows_of("a", [2, 9, 10, 11, 12], "p1-") + rows_of("b", [0, 7], "p1-")
    run_peer("write", {**spec, "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "p1.arrow",
                                                                                   arrow(theirs))}]})
    apply(oracle, theirs)
    assert by_key(table.scan().to_arrow().to_pylist()) == oracle
    check_index(table)
    ours = rows_of("a", [10, 13, 14, 15], "t2-")
    tarn_write(table, ours)
    apply(oracle, ours)
    assert pypaimon_read(tmp_path, spec, "second") == oracle
    read, = javaref.run_many([["read", table.root]])
    assert by_key(read["rows"]) == oracle

    # pypaimon makes the table, tarn continues it
    made = {"warehouse": warehouse, "table": "db.p"}
    start = rows_of("a", range(6), "p0-")
    run_peer("write", {**made, "schema": PEER_SCHEMA, "primary_keys": ["dt", "k"], "partition_keys": ["dt"],
                       "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "4"},
                       "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "p0.arrow", arrow(start))}]})
    theirs_table = catalog.load_table("db.p")
    assert theirs_table.options.get("bucket") == "-1"
    other: dict = {}
    apply(other, start)
    more = rows_of("a", [1, 5, 6, 7, 8], "t-")
    tarn_write(theirs_table, more)
    apply(other, more)
    check_index(theirs_table)
    assert pypaimon_read(tmp_path, made, "made") == other
    read, = javaref.run_many([["read", theirs_table.root]])
    assert by_key(read["rows"]) == other


# ---------------------------------------------------------------------------- 4


def test_java_writes_into_a_table_tarn_rescaled(tmp_path, javaref):  # noqa: F811
    root = str(tmp_path / "wh" / "db.db" / "fixed")
    start = rows_of("a", range(30), "j0-") + rows_of("b", range(10), "j0-")
    javaref.run_many([["create", root, "--schema", JAVA_SCHEMA, "--primary-keys", "dt,k",
                       "--partition-keys", "dt", "--options", json.dumps({"bucket": "2"})],
                      java_write(javaref, root, start, tmp_path)])
    oracle: dict = {}
    apply(oracle, start)
    table = tarn.load_table(root)
    table.rescale(bucket=4, partitions=[{"dt": "a"}])
    assert table.options.get("bucket") == "4"
    more = rows_of("a", [0, 1, 29, 30, 31], "j1-")
    answers = javaref.run_many([["read", root], ["files", root], java_write(javaref, root, more, tmp_path),
                                ["read", root]])
    assert by_key(answers[0]["rows"]) == oracle
    assert {f["bucket"] for f in answers[1]["files"] if f["partition"]["dt"] == "a"} <= {0, 1, 2, 3}
    apply(oracle, more)
    assert by_key(answers[3]["rows"]) == oracle
    assert by_key(table.scan().to_arrow().to_pylist()) == oracle
    with pytest.raises(tarn.TarnError, match="Rescale first"):
        table.write(arrow(rows_of("b", [1], "x")))
    table.rescale(partitions=[{"dt": "b"}])
    read, = javaref.run_many([["read", root]])
    assert by_key(read["rows"]) == oracle
