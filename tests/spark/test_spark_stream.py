"""Structured Streaming: the tarn source (start modes, row kinds, consumer progress) and the
exactly-once tarn sink, tested by crashing a query between tarn's commit and Spark's."""

from __future__ import annotations

import json
import os
import sys
import uuid

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.errors import PySparkException

import tarn
from tarn.spark.source import TarnDataSource
from tarn.spark.stream_write import StreamWriter

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(ids, v="x") -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def drain(spark, path, **options) -> list[tuple]:
    """Run a streaming read of `path` until it caught up; the rows it emitted, sorted."""
    name = f"q_{uuid.uuid4().hex[:8]}"
    reader = spark.readStream.format("tarn")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = reader.load(path).writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    query.awaitTermination()
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect())


def test_start_modes(spark, catalog):
    table = catalog.create_table("db.src", SCHEMA)
    table.write(batch([1, 2]))
    table.write(batch([3]))
    table.write(batch([4]))
    first = table.snapshot(1)
    assert drain(spark, table.root) == [(i, "x") for i in (1, 2, 3, 4)]  # latest-full
    assert drain(spark, table.root, **{"scan.mode": "latest"}) == []
    assert drain(spark, table.root, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 2}) == [(3, "x"), (4, "x")]
    assert drain(spark, table.root, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": 2}) == \
        [(i, "x") for i in (1, 2, 3, 4)]
    assert drain(spark, table.root, **{"scan.mode": "from-timestamp",
                                       "scan.timestamp-millis": first.time_millis}) == [(3, "x"), (4, "x")]
    with pytest.raises(PySparkException, match="scan.snapshot-id 9 does not exist"):
        drain(spark, table.root, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 9})


def test_row_kinds_of_a_primary_key_table(spark, catalog):
    table = catalog.create_table("db.kinds", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table.write(batch([1, 2]))
    latest = table.latest_snapshot().id
    table.write(batch([1], "y"), row_kind="+U")
    table.delete(pa.table({"id": [2]}))
    changes = drain(spark, table.root, **{"read.changelog": "true", "scan.mode": "from-snapshot",
                                          "scan.snapshot-id": latest + 1})
    assert changes == [("+U", 1, "y"), ("-D", 2, None)]
    # without the rowkind column the stream is an upsert stream: deletes are not emitted
    assert drain(spark, table.root, **{"scan.mode": "from-snapshot", "scan.snapshot-id": latest + 1}) == [(1, "y")]


def test_consumer_progress_is_recorded_and_resumed(spark, catalog):
    table = catalog.create_table("db.consumed", SCHEMA)
    table.write(batch([1]))
    assert drain(spark, table.root, **{"consumer-id": "c1"}) == [(1, "x")]
    consumer = os.path.join(table.root, "consumer", "consumer-c1")
    assert json.loads(open(consumer).read()) == {"nextSnapshot": 2}
    table.write(batch([2]))
    # a new query with the same consumer id starts where the last one stopped
    assert drain(spark, table.root, **{"consumer-id": "c1"}) == [(2, "x")]
    assert json.loads(open(consumer).read()) == {"nextSnapshot": 3}


class CrashAfterCommit(StreamWriter):
    """Commits to tarn, then dies before Spark records the batch as committed."""

    def commit(self, messages, batchId):
        super().commit(messages, batchId)
        raise RuntimeError(f"crash after tarn committed batch {batchId}")


class CrashingTarn(TarnDataSource):
    filter_pushdown = False

    @classmethod
    def name(cls):
        return "tarn_crash_after_commit"

    def streamWriter(self, schema, overwrite):
        return CrashAfterCommit(StreamWriter.prepare(dict(self.options), schema, overwrite).plan)


def test_sink_is_exactly_once_across_a_crash(spark, catalog, tmp_path):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    spark.dataSource.register(CrashingTarn)
    source = catalog.create_table("db.events", SCHEMA)
    target = catalog.create_table("db.sink", SCHEMA)  # an append table: a duplicate would show
    checkpoint = str(tmp_path / "checkpoint")
    source.write(batch([1, 2, 3]))

    def run(fmt):
        query = (spark.readStream.format("tarn").load(source.root).writeStream.format(fmt)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start(target.root))
        query.awaitTermination()

    with pytest.raises(Exception, match="crash after tarn committed batch 0"):
        run("tarn_crash_after_commit")
    assert len(target.snapshots()) == 1  # tarn has batch 0 ...
    assert not os.path.exists(os.path.join(checkpoint, "commits", "0"))  # ... Spark does not
    source.write(batch([4]))
    run("tarn")  # restart on the same checkpoint: batch 0 is replayed, then batch 1 runs
    snapshots = target.snapshots()
    assert [s.commit_identifier for s in snapshots] == [0, 1]
    assert len({s.commit_user for s in snapshots}) == 1
    ids = sorted(target.scan().to_arrow().column("id").to_pylist())
    assert ids == [1, 2, 3, 4]  # no row twice
    live = {e.file.file_name for e in target.planner(target.schema()).live_entries(target.latest_snapshot())}
    on_disk = {n for _, _, names in os.walk(target.root) for n in names if n.startswith("data-")}
    assert on_disk == live  # the replay's files were deleted, not left as orphans


def test_sink_needs_a_checkpoint_location_for_its_commit_user():
    from tarn.spark.stream_write import commit_user_of
    assert commit_user_of({"checkpointlocation": "/cp/a"}) == commit_user_of({"checkpointlocation": "/cp/a/"})
    assert commit_user_of({"checkpointlocation": "/cp/a"}) != commit_user_of({"checkpointlocation": "/cp/b"})
    with pytest.raises(tarn.InvalidOption, match="checkpointLocation"):
        commit_user_of({})


# ---------------------------------------------------------------------------------------------
# read limits


def batches_of(spark, path, **options) -> list[list[int]]:
    """The ids each non-empty micro-batch of an availableNow run emitted, in batch order."""
    name = f"q_{uuid.uuid4().hex[:8]}"
    seen: dict[int, list[int]] = {}

    def collect(df, batch_id):
        ids = sorted(r.id for r in df.select("id").collect())
        if ids:
            seen[batch_id] = ids

    reader = spark.readStream.format("tarn")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = reader.load(path).writeStream.queryName(name).foreachBatch(collect).trigger(availableNow=True).start()
    query.awaitTermination()
    return [seen[b] for b in sorted(seen)]


def test_read_limits_cut_batches_at_snapshots(spark, catalog):
    table = catalog.create_table("db.limited", SCHEMA)
    for start in range(0, 10, 2):  # 5 snapshots of one file and two rows each
        table.write(batch([start, start + 1]))
    from_first = {"scan.mode": "from-snapshot", "scan.snapshot-id": 1}
    assert batches_of(spark, table.root, **from_first, **{"read.stream.maxFilesPerTrigger": 2}) == \
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches_of(spark, table.root, **from_first, **{"read.stream.maxRowsPerTrigger": 5}) == \
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    # a limit below one snapshot still reads one snapshot per batch: snapshots are never cut
    assert batches_of(spark, table.root, **from_first, **{"read.stream.maxRowsPerTrigger": 1}) == \
        [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    entries = table.planner(table.schema()).live_entries(table.latest_snapshot())
    sizes = [e.file.file_size for e in entries]
    assert 3 * min(sizes) > 2.5 * max(sizes)  # so 2.5 files' worth of bytes takes exactly two
    assert batches_of(spark, table.root, **from_first, **{"read.stream.maxBytesPerTrigger": int(2.5 * max(sizes))}) == \
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    # latest-full: the whole table is one batch, then the limits apply to what follows
    assert batches_of(spark, table.root, **{"read.stream.maxFilesPerTrigger": 1}) == [list(range(10))]


def test_min_rows_waits_until_enough_rows_or_the_delay(catalog):
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from tarn.spark.stream_read import StreamReader
    from tarn.spark.types import spark_schema

    table = catalog.create_table("db.min_rows", SCHEMA)
    options = {"path": table.root, "scan.mode": "latest", "read.stream.minrowspertrigger": "3",
               "read.stream.maxtriggerdelayms": "60000"}
    reader = StreamReader.prepare(options, spark_schema(list(table.schema().fields)))
    start = reader.initialOffset()
    limit = reader.getDefaultReadLimit()
    table.write(batch([1, 2]))
    assert reader.latestOffset(start, limit) == start  # 2 rows < 3: wait
    assert reader.latestOffset(start, ReadAllAvailable()) == {"next": 2, "full": False}  # Spark's override
    table.write(batch([3]))
    assert reader.latestOffset(start, limit) == {"next": 3, "full": False}  # 3 rows: go
    table.write(batch([4]))
    later = {"next": 3, "full": False}
    assert reader.latestOffset(later, limit) == later
    reader.last_batch_at -= 61  # the delay passed: read what there is
    assert reader.latestOffset(later, limit) == {"next": 4, "full": False}


@pytest.mark.parametrize("options, message", [
    ({"read.stream.maxfilespertrigger": "0"}, "maxFilesPerTrigger"),
    ({"read.stream.maxrowspertrigger": "many"}, "maxRowsPerTrigger"),
    ({"read.stream.minrowspertrigger": "5"}, "go together"),
])
def test_bad_read_limits_fail_before_the_query(catalog, options, message):
    from tarn.spark.stream_read import StreamReader
    from tarn.spark.types import spark_schema

    table = catalog.create_table("db.bad_limits", SCHEMA)
    with pytest.raises(tarn.InvalidOption, match=message):
        StreamReader.prepare({"path": table.root, **options}, spark_schema(list(table.schema().fields)))


# ---------------------------------------------------------------------------------------------
# changelog producers


def test_input_changelog_streams_every_input_row(spark, catalog):
    table = catalog.create_table("db.cl_input", SCHEMA, primary_key=["id"],
                                 options={"bucket": "1", "changelog-producer": "input"})
    table.write(batch([1, 2], "a"))
    table.write(batch([1], "b"), row_kind="+U")
    table.write(batch([1], "c"))  # an upsert arrives as +I: the input changelog keeps it so
    table.delete(pa.table({"id": [2]}))
    from_first = {"scan.mode": "from-snapshot", "scan.snapshot-id": 1}
    changes = drain(spark, table.root, **{"read.changelog": "true"}, **from_first)
    assert changes == sorted([("+I", 1, "a"), ("+I", 2, "a"), ("+U", 1, "b"), ("+I", 1, "c"), ("-D", 2, None)])
    assert drain(spark, table.root, **from_first) == sorted([(1, "a"), (2, "a"), (1, "b"), (1, "c")])


def test_lookup_changelog_streams_updates_with_their_old_values(spark, catalog, tmp_path):
    table = catalog.create_table("db.cl_lookup", SCHEMA, primary_key=["id"],
                                 options={"bucket": "1", "changelog-producer": "lookup"})
    table.write(batch([1, 2], "a"))  # compacted at once: the lookup producer pushes level 0 up
    table.write(batch([1], "b"))
    table.delete(pa.table({"id": [2]}))
    changes = drain(spark, table.root, **{"read.changelog": "true", "scan.mode": "from-snapshot",
                                          "scan.snapshot-id": 1})
    assert changes == sorted([("+I", 1, "a"), ("+I", 2, "a"), ("-U", 1, "a"), ("+U", 1, "b"), ("-D", 2, "a")])
    # rows still at level 0 are not in the first, full read: their changelog comes with their compaction
    spark.createDataFrame([(3, "new")], "id long, v string").write.format("tarn").mode("append") \
        .option("write-only", "true").save(table.root)  # a plain write compacts unless told not to
    assert [f.level for s in table.scan().plan() for f in s.files if f.level == 0]  # 3 waits at level 0
    assert drain(spark, table.root, **{"read.changelog": "true"}) == [("+I", 1, "b")]
    latest = table.latest_snapshot().id
    table.compact()
    assert drain(spark, table.root, **{"read.changelog": "true", "scan.mode": "from-snapshot",
                                       "scan.snapshot-id": latest + 1}) == [("+I", 3, "new")]
