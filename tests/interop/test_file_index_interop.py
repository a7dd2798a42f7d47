"""Data-file indexes between tarn, Java Paimon 1.0 (javaref) and pypaimon 2.1.

1. Twin append tables: Java and tarn write the same rows in the same commits (one file per
   commit) with a small bloom filter (embedded in the manifest entry), a default-size bloom
   filter (a `<file>.index` beside the data file) and a bitmap (version 1, which Java 1.0
   writes). Java's `embedded_index` and `.index` files equal tarn's byte for byte.
2. tarn plans Java's table with filters and skips files by Java's indexes (planned files with
   and without the index); Java plans tarn's table and skips by tarn's embedded indexes at plan
   time and by tarn's `.index` files at read time; both return the filter's rows.
3. pypaimon reads tarn's indexed table.
"""

from __future__ import annotations

import base64
import json
import os

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import tarn
from tarn import col
from tarn.meta.schema import SetOption
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)
from tests.interop.pypaimon_env import run_peer

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("k", pa.int32())])
JAVA_SCHEMA = json.dumps([{"name": "id", "type": "BIGINT"}, {"name": "name", "type": "STRING"},
                          {"name": "k", "type": "INT"}])
OPTIONS = {"bucket": "-1", "file-index.bloom-filter.columns": "id,name", "file-index.bloom-filter.id.items": "100",
           "file-index.bitmap.columns": "k"}
COMMITS = 4


def commit_rows(c: int) -> list[dict]:
    # ids and names interleave across commits, so min/max stats cannot tell the files apart
    return [{"id": (c * 40 + i) * 7919 % 1009, "name": f"{i % 5}-c{c}", "k": None if i % 9 == 0 else c * 10 + i % 3}
            for i in range(40)]


def file_list(java_files: dict) -> list[dict]:
    return sorted(java_files["files"], key=lambda f: f["min_sequence_number"])


@pytest.fixture(scope="module")
def twins(javaref, tmp_path_factory):  # noqa: F811
    warehouse = tmp_path_factory.mktemp("wh")
    java_root = str(warehouse / "db.db" / "java_t")
    calls = [["create", java_root, "--schema", JAVA_SCHEMA, "--options", json.dumps(OPTIONS)]]
    for c in range(COMMITS):
        path = warehouse / f"rows{c}.json"
        path.write_text(json.dumps(commit_rows(c)))
        calls.append(["write", java_root, "--rows", str(path)])
    calls.append(["files", java_root])
    answers = javaref.run_many(calls)
    catalog = tarn.Catalog(str(warehouse))
    tarn_table = catalog.create_table("db.tarn_t", schema=SCHEMA,
                                      options={**OPTIONS, "file-index.bitmap.k.version": "1"})
    for c in range(COMMITS):
        tarn_table.write(pa.Table.from_pylist(commit_rows(c), schema=SCHEMA))
    return {"warehouse": warehouse, "java_root": java_root, "java_files": answers[-1], "catalog": catalog,
            "tarn": tarn_table}


def _tarn_files(table) -> list:
    files = [(s.bucket_path, f) for s in table.scan().plan() for f in s.files]
    return sorted(files, key=lambda bf: bf[1].min_sequence_number)


def test_tarn_writes_javas_index_bytes(twins):
    java = file_list(twins["java_files"])
    mine = _tarn_files(twins["tarn"])
    assert len(java) == len(mine) == COMMITS
    java_bucket = os.path.join(twins["java_root"], "bucket-0")
    for jf, (bucket_path, tf) in zip(java, mine):
        # the index of one file is larger than the 500-byte threshold: it goes to <file>.index
        assert jf["embedded_index"] is None and tf.embedded_index is None
        assert jf["extra_files"] == [jf["file_name"] + ".index"]
        assert tf.extra_files == (tf.file_name + ".index",)
        java_bytes = open(os.path.join(java_bucket, jf["extra_files"][0]), "rb").read()
        tarn_bytes = open(os.path.join(bucket_path, tf.extra_files[0]), "rb").read()
        assert tarn_bytes == java_bytes


def test_embedded_index_bytes_equal(javaref, tmp_path):  # noqa: F811
    options = {"bucket": "-1", "file-index.bloom-filter.columns": "id,name", "file-index.bloom-filter.id.items": "100",
               "file-index.bloom-filter.name.items": "60"}
    java_root = str(tmp_path / "db.db" / "j")
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(commit_rows(1)))
    answers = javaref.run_many([["create", java_root, "--schema", JAVA_SCHEMA, "--options", json.dumps(options)],
                                ["write", java_root, "--rows", str(rows)], ["files", java_root]])
    (jf,) = answers[-1]["files"]
    t = tarn.Catalog(str(tmp_path)).create_table("db.t", schema=SCHEMA, options=options)
    t.write(pa.Table.from_pylist(commit_rows(1), schema=SCHEMA))
    ((_, tf),) = _tarn_files(t)
    assert jf["extra_files"] == [] and tf.extra_files == ()
    assert base64.b64decode(jf["embedded_index"]) == tf.embedded_index
    # Java reads tarn's files entry as it reads its own
    java_view = javaref.run("files", t.root)["files"][0]
    assert java_view["embedded_index"] == jf["embedded_index"]


def _planned(table, predicate=None) -> int:
    return sum(len(s.files) for s in table.scan(filter=predicate).plan())


def test_tarn_skips_files_by_javas_indexes(twins):
    java_table = twins["catalog"].load_table("db.java_t")
    some = commit_rows(2)[7]
    assert _planned(java_table) == COMMITS
    assert _planned(java_table, col("name") == some["name"]) == 1
    assert _planned(java_table, col("name") == "0-nope") == 0
    assert _planned(java_table, col("id") == some["id"]) == 1
    assert _planned(java_table, col("k") == some["k"]) == 1
    assert _planned(java_table, col("k").isin([1 * 10 + 1, 3 * 10 + 2])) == 2
    rows = java_table.scan(filter=col("name") == some["name"]).to_arrow().to_pylist()
    assert sorted(rows, key=lambda r: r["id"]) == sorted(
        [r for r in commit_rows(2) if r["name"] == some["name"]], key=lambda r: r["id"])
    java_table.alter(SetOption("file-index.read.enabled", "false"))
    try:
        assert _planned(java_table, col("name") == some["name"]) == COMMITS
    finally:
        java_table.alter(SetOption("file-index.read.enabled", "true"))


def test_java_skips_files_by_tarns_indexes(javaref, twins):  # noqa: F811
    root = twins["tarn"].root
    some = commit_rows(3)[4]
    flt = lambda p: ["read", root, "--filter", json.dumps(p)]  # noqa: E731
    answers = javaref.run_many([
        ["read", root],
        flt({"op": "eq", "col": "name", "value": some["name"]}),
        flt({"op": "eq", "col": "name", "value": "0-nope"}),
        flt({"op": "eq", "col": "k", "value": some["k"]}),
        flt({"op": "in", "col": "id", "values": [some["id"]]}),
    ])
    everything, by_name, nothing, by_k, by_id = answers
    assert everything["row_count"] == COMMITS * 40
    expected = [r for r in commit_rows(3) if r["name"] == some["name"]]
    assert by_name["row_count"] == len(expected)
    # the indexes are in .index files: Java plans every file, then skips at read time
    assert by_name["raw_row_count"] == 40 and nothing["raw_row_count"] == 0 and nothing["row_count"] == 0
    assert by_k["row_count"] == sum(r["k"] == some["k"] for r in commit_rows(3))
    assert by_k["raw_row_count"] == 40
    assert by_id["row_count"] >= 1 and by_id["raw_row_count"] == 40


def test_java_plans_tarns_embedded_indexes(javaref, tmp_path):  # noqa: F811
    options = {"bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "50"}
    t = tarn.Catalog(str(tmp_path)).create_table("db.t", schema=SCHEMA, options=options)
    for c in range(COMMITS):
        t.write(pa.Table.from_pylist(commit_rows(c), schema=SCHEMA))
    assert all(f.embedded_index is not None for _, f in _tarn_files(t))
    flt = lambda p: ["read", t.root, "--filter", json.dumps(p)]  # noqa: E731
    one, none, two = javaref.run_many([
        flt({"op": "eq", "col": "name", "value": "3-c1"}),
        flt({"op": "eq", "col": "name", "value": "3-nope"}),
        flt({"op": "in", "col": "name", "values": ["3-c1", "2-c2"]}),
    ])
    assert one["planned_files"] == 1 and one["row_count"] == 8
    assert none["planned_files"] == 0
    assert two["planned_files"] == 2 and two["row_count"] == 16
    assert _planned(t, col("name") == "3-c1") == 1 and _planned(t, col("name") == "3-nope") == 0


def test_pypaimon_reads_tarns_indexed_table(twins, tmp_path):
    out = tmp_path / "rows.arrow"
    run_peer("read", {"table_path": twins["tarn"].root, "out_ipc": str(out)})
    with ipc.open_file(str(out)) as reader:
        rows = reader.read_all().to_pylist()
    expected = [r for c in range(COMMITS) for r in commit_rows(c)]
    key = lambda r: (r["id"], r["name"], r["k"] is None, r["k"] or 0)  # noqa: E731
    assert sorted(rows, key=key) == sorted(expected, key=key)
