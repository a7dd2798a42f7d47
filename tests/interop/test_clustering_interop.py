"""Clustered append tables (issue 43 item 4) between tarn, pypaimon 2.1 and Java Paimon 1.0:
tarn's sorted writes and its incremental clustering (files raised to the top level, COMPACT
snapshots) read the same in every engine, and tarn clusters what pypaimon appended."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import tarn
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)
from tests.interop.pypaimon_env import run_peer
from tests.interop.test_core_interop import canon, pypaimon_read, write_ipc

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.int64())])
OPTIONS = {"clustering.columns": "a,b", "clustering.incremental": "true", "num-sorted-run.compaction-trigger": "3"}


def batch(rng, n: int, start: int) -> pa.Table:
    return pa.table({"a": rng.integers(0, 20, n), "b": [f"k{x}" for x in rng.integers(0, 20, n)],
                     "v": np.arange(start, start + n)}, schema=SCHEMA)


def test_clustered_table_reads_the_same_everywhere(tmp_path, javaref):  # noqa: F811
    warehouse = str(tmp_path / "wh")
    table = tarn.Catalog(warehouse).create_table("db.t", SCHEMA, options=OPTIONS)
    rng = np.random.default_rng(11)
    for i in range(3):
        table.write(batch(rng, 200, i * 200))
    run_peer("write", {"warehouse": warehouse, "table": "db.t",
                       "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "w.arrow", batch(rng, 100, 600))}]})
    table = tarn.Catalog(warehouse).load_table("db.t")
    assert table.compact().commit_kind == "COMPACT"
    levels = {e.file.level for e in table.core.live_entries(table.latest_snapshot(), table.schema())}
    assert levels == {3}
    expected = canon(table.scan().to_arrow(), SCHEMA.names)
    assert len(expected) == 700
    assert canon(pypaimon_read(table.root, tmp_path / "r.arrow"), SCHEMA.names) == expected
    read, = javaref.run_many([["read", table.root]])
    assert sorted(r["v"] for r in read["rows"]) == list(range(700))
