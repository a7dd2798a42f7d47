"""pypaimon 2.1's REST catalog against `tarn serve` (`python -m tarn.server`, a subprocess of
tarn's venv): the cross-check that both sides read Paimon's REST spec the same way. pypaimon
creates a database and a table, writes, commits (also after losing a race to a concurrent
writer: the server answers success=false and pypaimon rebuilds), reads, alters and drops; tarn
reads what pypaimon committed directly from the warehouse."""

import json
import os
import subprocess
import sys
import time

import httpx
import pyarrow as pa
import pytest

import tarn
from tests.interop.pypaimon_env import peer_python

pytestmark = pytest.mark.interop

TOKEN = "interop-token"

PYPAIMON_SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.catalog.rest.rest_catalog import RESTCatalog
from pypaimon.schema.schema_change import SchemaChange

# every commit answer of the server; `interleave` runs (once) just before the next commit request
answers, interleave = [], []
forward = RESTCatalog.commit_snapshot

def commit_snapshot(self, *args, **kwargs):
    while interleave:
        interleave.pop()()
    answer = forward(self, *args, **kwargs)
    answers.append(answer)
    return answer

RESTCatalog.commit_snapshot = commit_snapshot

spec = json.loads(sys.stdin.read())
catalog = CatalogFactory.create({"metastore": "rest", "uri": spec["uri"], "warehouse": spec["warehouse"],
                                 "token.provider": "bear", "token": spec["token"]})
out = {}
arrow = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])

def rows(ids, p):
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "p": [p] * len(ids)}, schema=arrow)

def write(table, data):
    builder = table.new_batch_write_builder()
    writer, commit = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    commit.commit(writer.prepare_commit())
    writer.close(); commit.close()

def read(table):
    rb = table.new_read_builder()
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("id").to_pylist())

if spec["step"] == "write":
    catalog.create_database("db", False)
    schema = Schema.from_pyarrow_schema(arrow, partition_keys=["p"], primary_keys=["id", "p"],
                                        options={"bucket": "2"})
    catalog.create_table("db.t", schema, False)
    try:
        catalog.create_table("db.t", schema, False)
        out["duplicate"] = "created twice"
    except Exception as exc:
        out["duplicate"] = type(exc).__name__
    table = catalog.get_table("db.t")
    write(table, rows([1, 2], "a"))
    write(table, rows([3], "b"))
    # a lost race: `slow` builds snapshot 3, another writer commits snapshot 3 just before
    # slow's request reaches the server
    slow_builder = catalog.get_table("db.t").new_batch_write_builder()
    slow_writer, slow_commit = slow_builder.new_write(), slow_builder.new_commit()
    slow_writer.write_arrow(rows([4], "a"))
    messages = slow_writer.prepare_commit()
    interleave.append(lambda: write(catalog.get_table("db.t"), rows([5], "b")))
    slow_commit.commit(messages)
    slow_writer.close(); slow_commit.close()
    out["answers"] = answers
    out["ids"] = read(catalog.get_table("db.t"))
    out["databases"] = catalog.list_databases()
    out["tables"] = catalog.list_tables("db")
    out["snapshot"] = catalog.load_snapshot("db.t").snapshot.id
    out["partitions"] = sorted(p.spec["p"] for p in catalog.list_partitions_paged("db.t").elements)
    catalog.alter_table("db.t", [SchemaChange.set_option("snapshot.num-retained.max", "50")], False)
elif spec["step"] == "read":
    out["ids"] = read(catalog.get_table("db.t"))
    catalog.drop_table("db.t", False)
    out["tables_after_drop"] = catalog.list_tables("db")
    try:
        catalog.get_table("db.t")
        out["missing"] = "found"
    except Exception as exc:
        out["missing"] = type(exc).__name__
print(json.dumps(out))
'''


@pytest.fixture
def server(tmp_path):
    """`python -m tarn.server` over a directory warehouse, on a free port."""
    warehouse = tmp_path / "wh"
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "tarn.server", "--warehouse", str(warehouse), "--token-file",
                                str(tokens), "--port", str(port), "--log-level", "warning"],
                               stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.ConnectError:
                time.sleep(0.05)
        yield url, str(warehouse)
    finally:
        process.terminate()
        process.wait(30)
        log = process.stderr.read()
        assert "Traceback" not in log, log


def pypaimon(step: str, url: str, warehouse: str) -> dict:
    spec = {"step": step, "uri": url, "warehouse": warehouse, "token": TOKEN}
    result = subprocess.run([str(peer_python()), "-c", PYPAIMON_SCRIPT], input=json.dumps(spec), capture_output=True,
                            text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_pypaimon_rest_catalog_against_tarn_serve(server):
    url, warehouse = server
    written = pypaimon("write", url, warehouse)
    assert written["duplicate"] == "TableAlreadyExistException"
    assert written["answers"] == [True, True, True, False, True]  # slow lost to the interleaved commit
    assert written["ids"] == [1, 2, 3, 4, 5]  # ... rebuilt on the new latest and landed
    assert written["databases"] == ["db"] and written["tables"] == ["t"]
    assert written["snapshot"] == 4 and written["partitions"] == ["a", "b"]

    # tarn reads what pypaimon committed through the server, directly from the warehouse
    table = tarn.Catalog(warehouse).load_table("db.t")
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4]
    assert table.schema().options["snapshot.num-retained.max"] == "50"
    assert table.schema().primary_keys == ("id", "p") and table.schema().partition_keys == ("p",)
    got = table.scan().to_arrow().sort_by("id")
    assert got.to_pylist() == [{"id": i, "v": f"v{i}", "p": p} for i, p in [(1, "a"), (2, "a"), (3, "b"),
                                                                            (4, "a"), (5, "b")]]

    # tarn writes directly (the server's commit point is the same snapshot directory); pypaimon
    # reads it through the server, then drops the table
    table.write(pa.table({"id": [6], "v": ["v6"], "p": ["c"]}, schema=table.schema().arrow_schema()))
    read = pypaimon("read", url, warehouse)
    assert read["ids"] == [1, 2, 3, 4, 5, 6]
    assert read["tables_after_drop"] == [] and read["missing"] == "TableNotExistException"
    assert tarn.Catalog(warehouse).list_tables("db") == []
