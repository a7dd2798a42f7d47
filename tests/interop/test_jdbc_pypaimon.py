"""tarn and pypaimon 2.1 share one JDBC catalog (SQLite): a table either creates is listed,
loaded, written, read and dropped by the other."""

from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pytest

from tarn.catalog.jdbc import JdbcCatalog
from tests.interop.pypaimon_env import PeerError, peer_python

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])

# Runs in pypaimon's venv: {"options": catalog options, "steps": [{"op": ..., "table": ...}]}
# -> {"results": [...]}, one answer per step.
PYPAIMON_STEPS = r"""
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory, Schema

spec = json.load(sys.stdin)
catalog = CatalogFactory.create(spec["options"])
schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
results = []
for step in spec["steps"]:
    op, name = step["op"], step.get("table")
    if op == "create":
        catalog.create_database(name.split(".")[0], True)
        catalog.create_table(name, Schema.from_pyarrow_schema(schema, primary_keys=["k"],
                                                             options={"bucket": "1"}), False)
        results.append(None)
    elif op == "list":
        results.append(sorted(catalog.list_tables(step["database"])))
    elif op == "write":
        builder = catalog.get_table(name).new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(pa.table({"k": step["k"], "v": step["v"]}, schema=schema))
        committer.commit(writer.prepare_commit())
        writer.close(); committer.close()
        results.append(None)
    elif op == "read":
        builder = catalog.get_table(name).new_read_builder()
        got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        results.append(sorted([r["k"], r["v"]] for r in got.to_pylist()))
    elif op == "drop":
        catalog.drop_table(name, False)
        results.append(None)
print(json.dumps({"results": results}))
"""


def pypaimon(options: dict, steps: list[dict]) -> list:
    result = subprocess.run([str(peer_python()), "-c", PYPAIMON_STEPS],
                            input=json.dumps({"options": options, "steps": steps}),
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise PeerError(f"pypaimon's JDBC steps failed ({result.returncode}):\n{result.stderr}")
    return json.loads(result.stdout)["results"]


@pytest.fixture
def options(tmp_path) -> dict[str, str]:
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "warehouse": str(tmp_path / "wh")}


def rows_of(table) -> list[list]:
    return sorted([r["k"], r["v"]] for r in table.scan().to_arrow().to_pylist())


def test_a_table_pypaimon_creates_is_tarns_too(options):
    pypaimon(options, [{"op": "create", "table": "db.from_py"},
                       {"op": "write", "table": "db.from_py", "k": [1, 2], "v": ["a", "b"]}])
    catalog = JdbcCatalog(options, "shared")
    assert catalog.list_databases() == ["db"] and catalog.list_tables("db") == ["from_py"]
    table = catalog.load_table("db.from_py")
    assert table.schema().primary_keys == ("k",) and rows_of(table) == [[1, "a"], [2, "b"]]
    table.write(pa.table({"k": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    assert rows_of(catalog.load_table("db.from_py")) == [[1, "a"], [2, "B"], [3, "c"]]
    assert pypaimon(options, [{"op": "read", "table": "db.from_py"}]) == [[[1, "a"], [2, "B"], [3, "c"]]]


def test_a_table_tarn_creates_is_pypaimons_too(options):
    catalog = JdbcCatalog(options, "shared")
    table = catalog.create_table("db.from_tarn", SCHEMA, primary_key="k", options={"bucket": "1"})
    table.write(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    listed, before, _, after, _ = pypaimon(options, [
        {"op": "list", "database": "db"},
        {"op": "read", "table": "db.from_tarn"},
        {"op": "write", "table": "db.from_tarn", "k": [2, 4], "v": ["B", "d"]},
        {"op": "read", "table": "db.from_tarn"},
        {"op": "drop", "table": "db.from_tarn"}])
    assert listed == ["from_tarn"] and before == [[1, "a"], [2, "b"]]
    assert after == [[1, "a"], [2, "B"], [4, "d"]]
    assert catalog.list_tables("db") == [] and not os.path.exists(catalog.table_path("db.from_tarn"))
    assert not catalog.table_exists("db.from_tarn")
