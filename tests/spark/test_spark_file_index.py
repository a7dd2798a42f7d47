"""Filters Spark pushes into tarn's source skip files by their data-file indexes."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import EqualTo, In

from tarn.spark.batch_read import FilteringBatchReader
from tarn.spark.target import ReadTarget

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_pushed_filters_skip_files_by_index(spark, catalog):
    table = catalog.create_table("db.fi", SCHEMA, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "100"})
    for f in range(5):
        # every file spans the same name range: only the index can tell them apart
        table.write(pa.table({"id": [f, f, f], "name": ["a", f"m{f}", "z"]}, schema=SCHEMA))
    target = ReadTarget.of({"path": table.root})

    def planned(filters) -> int:
        reader = FilteringBatchReader(target, target.spark_schema())
        assert list(reader.pushFilters(filters)) == []
        return sum(len(s.files) for g in reader.partitions() for s in g.splits)

    assert planned([EqualTo(("name",), "m3")]) == 1
    assert planned([In(("name",), ("m1", "m4"))]) == 2
    assert planned([EqualTo(("name",), "m9")]) == 0
    df = spark.read.format("tarn").load(table.root).where("name = 'm2'")
    assert [tuple(r) for r in df.collect()] == [(2, "m2")]
