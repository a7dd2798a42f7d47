"""Incremental reads through Spark (issue 43 item 3): a table carrying `incremental-between`
(or given it as a read option) reads the changed rows, as `Table.scan` does; with
`read.changelog` every row comes with its kind."""

from __future__ import annotations

import pyarrow as pa

import tarn
import tarn.spark
from tarn.meta.schema import SetOption

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])


def test_spark_reads_the_changed_rows(spark, path):
    table = tarn.create_table(path, SCHEMA, primary_key=["k"], options={"bucket": "1"})
    table.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    table.write(pa.table({"k": [2, 4], "v": ["b2", "d"]}, schema=SCHEMA))
    table.delete(filter="k = 3")
    table.alter(SetOption("incremental-between", "1,3"))
    rows = sorted(tuple(r) for r in spark.read.format("tarn").load(path).collect())
    assert rows == [(2, "b2"), (4, "d")] == sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
    assert sorted(tuple(r) for r in tarn.spark.read(spark, path).collect()) == rows
    kinds = spark.read.format("tarn").option("read.changelog", "true").load(path).collect()
    assert sorted((r["rowkind"], r["k"]) for r in kinds) == [("+I", 2), ("+I", 4), ("-D", 3)]
    given = spark.read.format("tarn").option("incremental-between", "0,1").load(path).collect()
    assert sorted(r["k"] for r in given) == [1, 2, 3]  # a read option wins over the table's
