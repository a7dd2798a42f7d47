"""Nullable primary keys (`primary-key.nullable`, Paimon 2.1) between tarn and pypaimon 2.1:
each writes NULL key parts, both merge them null-safely, each reads what the other wrote."""

from __future__ import annotations

import pyarrow as pa

import tarn
from tests.interop.pypaimon_env import run_peer
from tests.interop.test_core_interop import canon, pypaimon_read, write_ipc

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.int64())])
OPTIONS = {"bucket": "1", "primary-key.nullable": "true"}


def test_null_keys_both_ways(tmp_path):
    warehouse = str(tmp_path / "wh")
    table = tarn.Catalog(warehouse).create_table("db.t", SCHEMA, primary_key=["a", "b"], options=OPTIONS)
    table.write(pa.table({"a": [1, None, None], "b": [None, "x", None], "v": [1, 2, 3]}, schema=SCHEMA))
    table.write(pa.table({"a": [None], "b": [None], "v": [30]}, schema=SCHEMA))
    expected = canon(pa.table({"a": [1, None, None], "b": [None, "x", None], "v": [1, 2, 30]}, schema=SCHEMA))
    assert canon(table.scan().to_arrow(), SCHEMA.names) == expected
    assert canon(pypaimon_read(table.root, tmp_path / "1.arrow"), SCHEMA.names) == expected

    rows = pa.table({"a": [1, None], "b": [None, "x"], "v": [10, 20]}, schema=SCHEMA)
    run_peer("write", {"warehouse": warehouse, "table": "db.t",
                       "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "w.arrow", rows)}]})
    expected = canon(pa.table({"a": [1, None, None], "b": [None, "x", None], "v": [10, 20, 30]}, schema=SCHEMA))
    table = tarn.Catalog(warehouse).load_table("db.t")
    assert canon(table.scan().to_arrow(), SCHEMA.names) == expected
    table.compact(full=True)
    assert canon(pypaimon_read(table.root, tmp_path / "2.arrow"), SCHEMA.names) == expected

    # pypaimon makes the table
    run_peer("write", {
        "warehouse": warehouse, "table": "db.p", "schema": [["a", "BIGINT"], ["b", "STRING"], ["v", "BIGINT"]],
        "primary_keys": ["a", "b"], "options": OPTIONS,
        "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "p.arrow", rows)}]})
    p = tarn.Catalog(warehouse).load_table("db.p")
    assert [f.type.nullable for f in p.schema().fields] == [True, True, True]
    p.write(pa.table({"a": [None], "b": ["x"], "v": [21]}, schema=SCHEMA))
    expected = canon(pa.table({"a": [1, None], "b": [None, "x"], "v": [10, 21]}, schema=SCHEMA))
    assert canon(p.scan().to_arrow(), SCHEMA.names) == expected
    assert canon(pypaimon_read(p.root, tmp_path / "3.arrow"), SCHEMA.names) == expected
