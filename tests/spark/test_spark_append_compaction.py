"""`tarn.spark.compact` of append tables: groups planned on the driver as `Table.compact` plans
them, rewritten by executor tasks, one COMPACT commit on the driver; deletion vectors dropped;
a failed job leaves no files behind."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
import tarn.spark
from tarn.ops import append_compaction
from tarn.meta.manifest import COMPACT_SOURCE

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("s", pa.string())])


def rows(ids, part) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [part] * len(ids), "s": [f"s{i}" for i in ids]},
                    schema=SCHEMA)


def fill(table, commits=6):
    for n in range(commits):
        table.write(pa.concat_tables([rows(range(n * 10, n * 10 + 10), "a"), rows(range(500 + n * 7, 507 + n * 7), "b")]))


def files(table):
    return [m for split in table.scan().plan() for m in split.files]


def shape(table):
    """Per (partition, bucket): (rows, sequence range, source) of each file, in read order."""
    out = []
    for split in table.scan().plan():
        out.append((split.partition, split.bucket,
                    [(m.row_count, m.min_sequence_number, m.max_sequence_number, m.file_source) for m in split.files]))
    return out


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["plain", "deletion-vectors"])
def test_unaware_table_compacted_on_executors_like_locally(spark, catalog, options):
    table = catalog.create_table("db.a", SCHEMA, partition_keys=["p"], options=options)
    twin = catalog.create_table("db.b", SCHEMA, partition_keys=["p"], options=options)
    for t in (table, twin):
        fill(t)
        if options:
            t.delete(filter=tarn.col("id").isin([3, 4, 505, 41]))
    before = table.scan().to_arrow()
    snapshot = tarn.spark.compact(spark, table.root)
    assert snapshot.commit_kind == "COMPACT" and [s.commit_kind for s in table.snapshots()][-1] == "COMPACT"
    assert snapshot.id == table.latest_snapshot().id == len(list(table.snapshots()))
    assert table.scan().to_arrow().equals(before)
    compacted = files(table)
    assert len(compacted) == 2 and all(m.file_source == COMPACT_SOURCE for m in compacted)
    assert all(m.file_name.startswith("data-spark-") for m in compacted)  # written by the job's tasks
    twin.compact()
    assert shape(table) == shape(twin)  # the same groups and outputs as a local compaction
    assert table.system_table("table_indexes").to_arrow().num_rows == 0
    assert tarn.spark.compact(spark, table.root) is None


def test_fixed_bucket_full_compaction_on_executors(spark, catalog):
    table = catalog.create_table("db.f", SCHEMA, options={"bucket": "3", "bucket-key": "id"})
    fill(table, commits=4)
    before = table.scan().to_arrow()
    snapshot = tarn.spark.compact(spark, table.root, full=True, parallelism=2)
    assert snapshot.commit_kind == "COMPACT"
    assert table.scan().to_arrow().equals(before)  # bucket by bucket, in sequence order
    per_bucket = [(bucket, [(n, lo, hi) for n, lo, hi, _ in fs]) for _, bucket, fs in shape(table)]
    assert [b for b, _ in per_bucket] == [0, 1, 2]
    for _, fs in per_bucket:
        assert len(fs) == 1 and fs[0][1] == 0 and fs[0][2] == fs[0][0] - 1


def test_partitions_and_nothing_to_do(spark, catalog):
    table = catalog.create_table("db.p", SCHEMA, partition_keys=["p"])
    fill(table)
    assert tarn.spark.compact(spark, table.root, partitions=[{"p": "b"}]).commit_kind == "COMPACT"
    sources = sorted((split.partition, m.file_source) for split in table.scan().plan() for m in split.files)
    assert sources.count((sources[-1][0], COMPACT_SOURCE)) == 1 and len(sources) == 7
    table.compact()
    assert tarn.spark.compact(spark, table.root) is None


def test_a_failing_task_leaves_nothing(spark, catalog):
    table = catalog.create_table("db.x", SCHEMA, partition_keys=["p"])
    fill(table)
    groups = append_compaction.plan(table)
    victim = groups[0].files[-1].meta
    bucket_dir = table.bucket_dir(table.schema(), groups[0].partition, groups[0].bucket)
    table.file_io.delete(f"{bucket_dir}/{victim.file_name}")  # the task reading it fails
    latest = table.latest_snapshot().id
    with pytest.raises(Exception):
        tarn.spark.compact(spark, table.root)
    assert table.latest_snapshot().id == latest
    names = [info.path.rsplit("/", 1)[-1] for info in table.file_io.list_files(table.root, recursive=True)]
    assert not [n for n in names if n.startswith("data-spark-")], "the failed job left files behind"
