"""Cross-partition upsert (bucket = -1, primary key `k` without the partition key `dt`) between
tarn, Java Paimon 1.0 (javaref: GlobalIndexAssigner with IndexBootstrap, crosspartition
BucketAssigner and the engine's ExistingProcessor) and pypaimon 2.1.

A key that moved without its old row being deleted shows up twice in every reader, and Java's
bootstrap refuses a table holding a live key twice; so each step checks every reader's rows
against a dict oracle keyed by `k` alone.

1. tarn writes moves; Java reads; Java bootstraps from tarn's files and writes moves on top; tarn
   bootstraps from Java's files and goes on; Java and pypaimon read the result. No index files.
2. Twin tables: Java and tarn apply the same commits; every key lands in the same partition and
   bucket (Paimon's bucket fill, the -D of a moved key in its old bucket).
"""

from __future__ import annotations

import json

import pyarrow as pa

import tarn
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)
from tests.interop.test_dynamic_bucket_interop import java_write, pypaimon_read

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    ("v", pa.string())])
JAVA_SCHEMA = json.dumps([{"name": "dt", "type": "STRING NOT NULL"}, {"name": "k", "type": "BIGINT"},
                          {"name": "v", "type": "STRING"}])


def rows_of(dt, keys, tag) -> list[dict]:
    return [{"dt": dt, "k": k, "v": f"{tag}{k}"} for k in keys]


def deletes(dt, keys) -> list[dict]:
    return [{"dt": dt, "k": k, "v": None, "op": "-D"} for k in keys]


def by_key(rows) -> dict:
    out = {}
    for r in rows:
        k = int(r["k"])
        assert k not in out, f"key {k} read twice: in {out[k][0]} and {r['dt']}"
        out[k] = (r["dt"], r["v"])
    return out


def apply(oracle: dict, rows: list[dict]) -> None:
    """Deduplicate: the last row of a key wins wherever it lives; a -D removes it."""
    for r in rows:
        if r.get("op") == "-D":
            oracle.pop(r["k"], None)
        else:
            oracle[r["k"]] = (r["dt"], r["v"])


def tarn_write(table, rows: list[dict]) -> None:
    data = pa.Table.from_pylist([{c: r[c] for c in ("dt", "k", "v")} for r in rows], schema=SCHEMA)
    table.write(data, row_kind=[r.get("op", "+I") for r in rows])


def placement(table) -> dict:
    """k -> (dt, bucket) of the live rows, read bucket by bucket (a key twice fails)."""
    found = {}
    for split in table.scan().plan():
        for k in table.scan().reader().read(split).column("k").to_pylist():
            assert k not in found, f"key {k} in {found[k]} and {(split.partition_values, split.bucket)}"
            found[k] = (split.partition_values[0], split.bucket)
    return found


def test_java_and_tarn_continue_each_others_cross_partition_table(tmp_path, javaref):  # noqa: F811
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["dt"],
                                 options={"dynamic-bucket.target-row-num": "4"})
    oracle: dict = {}
    steps = [rows_of("a", range(12), "t1-"),
             rows_of("b", [0, 1, 2, 20, 21], "t2-") + deletes("zz", [5]),  # moves, a new key, a delete
             rows_of("a", [1, 30], "t3-") + rows_of("c", [2, 6], "t3-")]
    for step in steps:
        tarn_write(table, step)
        apply(oracle, step)
    read, indexes = javaref.run_many([["read", table.root], ["index-files", table.root]])
    assert by_key(read["rows"]) == oracle
    assert indexes["index_files"] == []  # Java writes none in this mode, neither does tarn

    java_step = rows_of("c", [0, 3, 40], "j1-") + rows_of("a", [2], "j1-") + deletes("b", [21])
    answers = javaref.run_many([java_write(javaref, table.root, java_step, tmp_path), ["read", table.root]])
    apply(oracle, java_step)
    assert by_key(answers[1]["rows"]) == oracle
    assert by_key(table.scan().to_arrow().to_pylist()) == oracle

    tarn_step = rows_of("d", [0, 2, 40, 41], "t4-") + deletes("a", [3])
    tarn_write(table, tarn_step)
    apply(oracle, tarn_step)
    placement(table)
    read, = javaref.run_many([["read", table.root]])
    assert by_key(read["rows"]) == oracle
    assert by_key(table.scan().to_arrow().to_pylist()) == oracle
    peer = pypaimon_read(tmp_path, {"table_path": table.root, "java_manifests": True}, "t")
    assert peer == {(dt, k): v for k, (dt, v) in oracle.items()}  # one row per key, where it lives


def test_twin_tables_place_every_key_alike(tmp_path, javaref):  # noqa: F811
    options = {"dynamic-bucket.target-row-num": "3"}
    java_root = str(tmp_path / "wh" / "db.db" / "java")
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    twin = catalog.create_table("db.tarn", schema=SCHEMA, primary_key=["k"], partition_keys=["dt"], options=options)
    commits = [
        rows_of("a", [5, 1, 9, 7, 3, 11, 2], "c1-") + rows_of("b", [20, 21], "c1-"),
        rows_of("b", [5, 9], "c2-") + rows_of("a", [30, 31], "c2-") + deletes("a", [20]),
        rows_of("a", [40, 41, 42], "c3-") + rows_of("c", [1, 20, 50], "c3-"),
    ]
    calls = [["create", java_root, "--schema", JAVA_SCHEMA, "--primary-keys", "k", "--partition-keys", "dt",
              "--options", json.dumps(options)]]
    calls += [java_write(javaref, java_root, commit, tmp_path) for commit in commits]
    created, *_ = javaref.run_many(calls)
    assert created["bucket_mode"] == "CROSS_PARTITION"
    oracle: dict = {}
    for commit in commits:
        tarn_write(twin, commit)
        apply(oracle, commit)
    java_table = tarn.load_table(java_root)
    assert by_key(java_table.scan().to_arrow().to_pylist()) == oracle == by_key(twin.scan().to_arrow().to_pylist())
    assert placement(java_table) == placement(twin)

    # tarn continues the table Java created and wrote; Java reads the result
    step = rows_of("d", [5, 1, 60], "t-") + deletes("q", [42])
    tarn_write(java_table, step)
    apply(oracle, step)
    read, = javaref.run_many([["read", java_root]])
    assert by_key(read["rows"]) == oracle == by_key(java_table.scan().to_arrow().to_pylist())


def test_java_and_pypaimon_read_a_cross_partition_table_with_deletion_vectors(tmp_path, javaref):  # noqa: F811
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    table = catalog.create_table("db.dv", schema=SCHEMA, primary_key=["k"], partition_keys=["dt"],
                                 options={"deletion-vectors.enabled": "true"})
    oracle: dict = {}
    for step in (rows_of("a", range(3000), "t1-"),  # a big first file: later small writes mark rows in it rows_of("b", [1, 2, 3], "t2-") + deletes("x", [4]),
                 rows_of("a", [1, 9], "t3-"), rows_of("a", [0, 6, 7], "t4-")):  # t4: updates in place
        tarn_write(table, step)
        apply(oracle, step)
    assert table.system_table("table_indexes").to_arrow().column("index_type").to_pylist() == ["DELETION_VECTORS"]
    java_step = rows_of("c", [2, 5], "j-")
    answers = javaref.run_many([["read", table.root], java_write(javaref, table.root, java_step, tmp_path),
                                ["read", table.root]])
    assert by_key(answers[0]["rows"]) == oracle
    apply(oracle, java_step)
    assert by_key(answers[2]["rows"]) == oracle == by_key(table.scan().to_arrow().to_pylist())
    peer = pypaimon_read(tmp_path, {"table_path": table.root, "java_manifests": True}, "dv")
    assert peer == {(dt, k): v for k, (dt, v) in oracle.items()}
