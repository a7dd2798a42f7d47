"""`table.consumer(id)` (issue 44 item 2): a consumer of changes without Spark, kept in Paimon's
`consumer-<id>` file: rows since the last commit, nothing lost across a failed run, expiry
keeping what it has not read, and every row of the table's history read exactly once."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import tarn
from tarn.errors import InvalidArgument

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64())])


def make(tmp_path, **options):
    return tarn.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_key=["k"],
                                                   options={"bucket": "1", **options})


def batch(*pairs) -> pa.Table:
    return pa.table({"k": [k for k, _ in pairs], "v": [v for _, v in pairs]}, schema=SCHEMA)


def test_reads_each_change_once_and_again_without_commit(tmp_path):
    table = make(tmp_path, **{"changelog-producer": "input", "snapshot.num-retained.min": "1",
                              "snapshot.num-retained.max": "1"})
    table.write(batch((1, 10), (2, 20)))
    consumer = table.consumer("job")
    assert consumer.next_snapshot is None
    first = consumer.read()
    assert first.column_names == ["_ROW_KIND", "k", "v"] and first.num_rows == 2
    assert consumer.commit() == 2
    with open(f"{table.root}/consumer/consumer-job") as f:
        assert json.load(f) == {"nextSnapshot": 2}  # Paimon's file, as Java's streams write it
    table.write(batch((1, 11)))
    table.write(batch((3, 30)))
    assert [s.id for s in table.snapshots()] == [2, 3]  # expiry keeps what the consumer has not read
    again = consumer.read()
    assert consumer.read().to_pylist() == again.to_pylist()  # not committed: the same rows
    assert sorted(again.column("v").to_pylist()) == [11, 30]
    assert consumer.commit() == 4 and consumer.read().num_rows == 0
    consumer.delete()
    table.write(batch((4, 40)))
    assert [s.id for s in table.snapshots()] == [4]


def test_earliest_start_and_max_snapshots(tmp_path):
    table = make(tmp_path)
    for i in range(1, 5):
        table.write(batch((i, i)))
    consumer = table.consumer("from-start", start="earliest")
    seen = []
    while True:
        rows = consumer.read(max_snapshots=2)
        if consumer.commit() is None or not rows.num_rows:
            break
        seen += rows.column("k").to_pylist()
    assert seen == [1, 2, 3, 4]
    with pytest.raises(InvalidArgument):
        table.consumer("x", start="middle")
