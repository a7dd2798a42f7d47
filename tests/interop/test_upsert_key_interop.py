"""`upsert-key` tables (Paimon 2.0) between tarn and pypaimon 2.1: tarn's merging writes read the
same in pypaimon, and rows pypaimon appends (its writer appends, as Paimon's non-Spark writers
do) are matched by tarn's next merge."""

from __future__ import annotations

import pyarrow as pa

import tarn
from tests.interop.pypaimon_env import run_peer
from tests.interop.test_core_interop import canon, pypaimon_read, write_ipc

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("s", pa.int64())])


def test_upsert_key_table_with_pypaimon(tmp_path):
    warehouse = str(tmp_path / "wh")
    table = tarn.Catalog(warehouse).create_table("db.t", SCHEMA, options={"upsert-key": "k", "sequence.field": "s"})
    table.write(pa.table({"k": [1, 2], "v": ["a", "b"], "s": [1, 1]}, schema=SCHEMA))
    table.write(pa.table({"k": [1, 3], "v": ["a2", "c"], "s": [2, 1]}, schema=SCHEMA))
    expected = canon(pa.table({"k": [1, 2, 3], "v": ["a2", "b", "c"], "s": [2, 1, 1]}, schema=SCHEMA))
    assert canon(table.scan().to_arrow(), SCHEMA.names) == expected
    assert canon(pypaimon_read(table.root, tmp_path / "1.arrow"), SCHEMA.names) == expected
    rows = pa.table({"k": [4], "v": ["d"], "s": [1]}, schema=SCHEMA)
    run_peer("write", {"warehouse": warehouse, "table": "db.t",
                       "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "w.arrow", rows)}]})
    table = tarn.Catalog(warehouse).load_table("db.t")
    table.write(pa.table({"k": [4, 2], "v": ["d2", "b2"], "s": [5, 5]}, schema=SCHEMA))
    expected = canon(pa.table({"k": [1, 2, 3, 4], "v": ["a2", "b2", "c", "d2"], "s": [2, 5, 1, 5]}, schema=SCHEMA))
    assert canon(table.scan().to_arrow(), SCHEMA.names) == expected
    assert canon(pypaimon_read(table.root, tmp_path / "2.arrow"), SCHEMA.names) == expected
