"""Cross-partition upsert tables on Spark: tarn.spark.write and by_bucket + writeStream place keys
in assigner tasks (each with its own key index), one commit per write or micro-batch, which
fails when another writer committed since the placement; Spark reads one row per key;
overwrite refuses."""

from __future__ import annotations

import json
import os
import re

import pytest

import tarn
import tarn.spark
from tarn.errors import CommitConflict, InvalidOption
from tarn.spark import cross_partition

DDL = "dt string, k long, v string"
OPTIONS = {"primary-key": "k", "partition": "dt", "dynamic-bucket.target-row-num": "4"}


def frame(spark, rows):
    return spark.createDataFrame(rows, DDL)


def test_spark_write_moves_keys_between_partitions(spark, path):
    tarn.spark.write(frame(spark, [("a", k, f"x{k}") for k in range(10)]), path, **OPTIONS)
    table = tarn.load_table(path)
    assert table.options.get("bucket") is None or table.options.get("bucket") == "-1"
    tarn.spark.write(frame(spark, [("b", k, f"y{k}") for k in range(0, 10, 2)] + [("c", 20, "z")]), path)
    oracle = {k: ("b", f"y{k}") if k % 2 == 0 else ("a", f"x{k}") for k in range(10)} | {20: ("c", "z")}
    read = spark.read.format("tarn").load(path).collect()
    assert sorted(r["k"] for r in read) == sorted(oracle)  # one row per key
    assert {r["k"]: (r["dt"], r["v"]) for r in read} == oracle
    assert len(table.snapshots()) >= 2


def test_overwrite_is_refused(spark, path):
    tarn.spark.write(frame(spark, [("a", 1, "x")]), path, **OPTIONS)
    with pytest.raises(InvalidOption, match="OVERWRITE"):
        tarn.spark.write(frame(spark, [("b", 1, "y")]), path, mode="overwrite")
    placed = tarn.spark.by_bucket(frame(spark, [("b", 1, "y")]), path)
    with pytest.raises(Exception, match="OVERWRITE"):
        placed.write.format("tarn").mode("overwrite").save(path)
    with pytest.raises(Exception, match="cross-partition"):  # rows not placed by assigner tasks
        frame(spark, [("b", 1, "y")]).write.format("tarn").mode("append").save(path)
    assert tarn.load_table(path).scan().to_arrow().to_pylist() == [{"dt": "a", "k": 1, "v": "x"}]


def test_assigner_tasks_place_many_keys_like_a_local_writer(spark, path, tmp_path):
    # rows of 600 keys over 3 partitions, then half of them moved and new ones added: assigner
    # tasks each own a key range and their own buckets; the result equals a local writer's
    first = [(["a", "b", "c"][k % 3], k, f"x{k}") for k in range(600)]
    second = [(["b", "c", "d"][k % 3], k, f"y{k}") for k in range(0, 900, 2)]
    tarn.spark.write(frame(spark, first), path, **{**OPTIONS, "dynamic-bucket.target-row-num": "50"})
    tarn.spark.write(frame(spark, second).repartition(3), path)
    table = tarn.load_table(path)
    oracle = {k: (dt, v) for dt, k, v in first} | {k: (dt, v) for dt, k, v in second}
    got = table.scan().to_arrow().to_pylist()
    assert len(got) == len(oracle) and {r["k"]: (r["dt"], r["v"]) for r in got} == oracle
    channels = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    files = table.live_entries(table.latest_snapshot(), table.schema())
    in_a = {e.bucket for e in files if e.partition == tarn.partition.to_bytes(table.schema(), ["a"])}
    # each assigner task opened its own bucket (id = task) in partition a, and any later one of
    # its own (id = task + a multiple of the task count) when 50 keys filled it
    assert {b for b in in_a if b < channels} == set(range(channels))
    assert len(table.snapshots()) <= 4  # one commit per write (APPEND, and COMPACT when compacted)


# ------------------------------------------------------------------------------------------
# streaming: by_bucket + writeStream, one micro-batch per file of a json source

STREAM_DDL = "dt string, k long, v string, w string, op string"


def run_batch(spark, root, tmp_path, number, rows, on_placed=None):
    """`rows` (dicts) as micro-batch `number`: a new file of the json source, then an
    availableNow run of the query (one checkpoint for every run)."""
    source = tmp_path / "in"
    source.mkdir(exist_ok=True)
    if rows is not None:
        (source / f"{number:03}.json").write_text("\n".join(json.dumps(r) for r in rows))
    placed = tarn.spark.by_bucket(spark.readStream.schema(STREAM_DDL).json(str(source)), root)
    if on_placed is not None:
        placed = on_placed(placed)
    query = (placed.writeStream.format("tarn").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start(root))
    query.awaitTermination()


def rows_by_key(table, columns=("dt", "v", "w")):
    got = table.scan().to_arrow().to_pylist()
    assert len({r["k"] for r in got}) == len(got), "a key has more than one row"
    return {r["k"]: tuple(r[c] for c in columns) for r in got}


def create(catalog_path, **options):
    import pyarrow as pa

    schema = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string()), ("w", pa.string()),
                        ("op", pa.string())])
    return tarn.Catalog(catalog_path).create_table("db.t", schema, primary_key=["k"], partition_keys=["dt"],
                                                   options={"dynamic-bucket.target-row-num": "20", **options})


def moving_batches(n_batches=4, keys=120):
    """Micro-batch b: one row of each key from b * 10 up to `keys`, in partition (k + b) % 4 (so
    every key moves each batch), v or w null for a third of them each; from batch 1 on the keys
    with k % 7 == b are deleted (op -D)."""
    batches = []
    for b in range(n_batches):
        rows = []
        for k in range(b * 10, keys):  # later batches leave the lowest keys alone
            op = "-D" if b and k % 7 == b else "+I"
            rows.append({"dt": "abcd"[(k + b) % 4], "k": k, "v": f"v{b}-{k}" if k % 3 else None,
                         "w": f"w{b}-{k}" if k % 3 != 1 else None, "op": op})
        batches.append(rows)
    return batches


def apply_deduplicate(oracle: dict, batch: list[dict]) -> None:
    """The oracle of a deduplicate table after `batch`: the last row of a key wins, -D removes it."""
    for r in batch:
        if r["op"] == "-D":
            oracle.pop(r["k"], None)
        else:
            oracle[r["k"]] = (r["dt"], r["v"], r["w"])


def test_stream_deduplicate_moves_and_deletes_keys(spark, tmp_path):
    table = create(str(tmp_path / "wh"), **{"rowkind.field": "op"})
    oracle = {}
    batches = moving_batches()
    for number, batch in enumerate(batches):
        run_batch(spark, table.root, tmp_path, number, batch)
        apply_deduplicate(oracle, batch)
        assert rows_by_key(table) == oracle, f"after micro-batch {number}"
    snapshots = table.snapshots()
    assert {s.commit_identifier for s in snapshots} >= set(range(len(batches)))
    assert len({s.commit_user for s in snapshots}) == 1  # the query's one commit user


def partial_update(old, row):
    dt, v, w = old if old is not None else (row["dt"], None, None)
    return dt, row["v"] if row["v"] is not None else v, row["w"] if row["w"] is not None else w


def first_row(old, row):
    return old if old is not None else (row["dt"], row["v"], row["w"])


@pytest.mark.parametrize("engine, merge", [("partial-update", partial_update), ("first-row", first_row)])
def test_stream_keys_stay_in_their_first_partition(spark, tmp_path, engine, merge):
    # partial-update: a row for a key in another partition updates it where it lives;
    # first-row: such a row is ignored
    table = create(str(tmp_path / "wh"), **{"merge-engine": engine})
    oracle = {}
    batches = moving_batches(3)
    for batch in batches:
        for r in batch:
            r["op"] = "+I"
    for number, batch in enumerate(batches):
        run_batch(spark, table.root, tmp_path, number, batch)
        for r in batch:
            oracle[r["k"]] = merge(oracle.get(r["k"]), r)
        assert rows_by_key(table) == oracle, f"after micro-batch {number}"


def test_stream_batch_placed_against_a_stale_snapshot_fails(spark, tmp_path):
    # another writer commits after the assigner tasks placed a batch, before its commit: the
    # commit fails naming the table and nothing lands; the restarted query places it again
    table = create(str(tmp_path / "wh"))
    root, armed = table.root, tmp_path / "armed"

    def intrude(batches):  # runs in the writer tasks, after the placement
        try:
            armed.unlink()
        except FileNotFoundError:
            pass
        else:
            import pyarrow as pa

            tarn.load_table(root).write(pa.table({"dt": ["z"], "k": [5], "v": ["other"], "w": [None], "op": ["+I"]}))
        yield from batches

    with_intruder = lambda df: df.mapInArrow(intrude, df.schema)  # noqa: E731
    run_batch(spark, root, tmp_path, 0, [{"dt": "a", "k": k, "v": f"x{k}", "w": None, "op": "+I"} for k in range(10)],
              with_intruder)
    assert rows_by_key(table) == {k: ("a", f"x{k}", None) for k in range(10)}
    armed.write_text("")
    before = len(table.snapshots())
    stale = f"table {tarn.load_table(root).name}: the rows were placed against snapshot {before}, but the latest " \
            f"snapshot is {before + 1}"
    with pytest.raises(CommitConflict, match=re.escape(stale)):
        run_batch(spark, root, tmp_path, 1, [{"dt": "b", "k": k, "v": f"y{k}", "w": None, "op": "+I"}
                                             for k in range(0, 10, 2)], with_intruder)
    assert not armed.exists() and len(table.snapshots()) == before + 1  # the intruder's, nothing of the batch
    assert rows_by_key(table)[5] == ("z", "other", None)
    run_batch(spark, root, tmp_path, 1, None, with_intruder)  # restarted: placed against the new snapshot
    expected = {k: ("a", f"x{k}", None) for k in range(10)} | {k: ("b", f"y{k}", None) for k in range(0, 10, 2)}
    assert rows_by_key(table) == expected | {5: ("z", "other", None)}


def test_stream_replay_of_a_landed_batch_commits_nothing(spark, tmp_path):
    # Spark replays batch 1 (its checkpoint commit removed, as after a crash right after tarn's
    # commit): the replay is placed against the newer snapshot, but the sink drops it (same
    # commit user and identifier); then batch 2 runs as usual
    table = create(str(tmp_path / "wh"), **{"rowkind.field": "op"})
    batches = moving_batches(3, keys=60)
    oracle = {}
    for number, batch in enumerate(batches):
        if number == 2:
            for name in ("1", ".1.crc"):
                os.remove(tmp_path / "cp" / "commits" / name)
        run_batch(spark, table.root, tmp_path, number, batch)
        apply_deduplicate(oracle, batch)
        assert rows_by_key(table) == oracle, f"after micro-batch {number}"
    data_commits = [s.commit_identifier for s in table.snapshots() if s.commit_kind != "COMPACT"]
    assert data_commits == [0, 1, 2]
    referenced = set()
    for snapshot in table.snapshots():
        referenced |= {e.file.file_name for e in table.live_entries(snapshot, table.schema())}
    on_disk = {n for _, _, names in os.walk(table.root) for n in names if n.startswith("data-")}
    assert on_disk == referenced  # the replay's files were deleted


def test_rows_placed_against_different_snapshots_are_refused(tmp_path):
    # a commit landing while a batch's assigner tasks start: one writer task, or the driver
    # collecting the tasks' reports, sees two snapshots; nothing is written or committed
    import pyarrow as pa

    from tarn.spark.batch_write import BUCKET_COLUMN, KIND_COLUMN, TaskMessages, WritePlan
    from tarn.write.assign import pack_bucket

    table = create(str(tmp_path / "wh"))
    plan = WritePlan(table.root, {}, None, True, False, "spark-test-", "user", given_buckets=True, placed_rows=True)

    def placed(snapshot, k):
        return pa.RecordBatch.from_pydict({"dt": ["a"], "k": [k], "v": ["x"], "w": [None], "op": ["+I"],
                                           KIND_COLUMN: pa.array([0], pa.int8()),
                                           BUCKET_COLUMN: pa.array(pack_bucket(snapshot, [0]))})

    with pytest.raises(CommitConflict, match=re.escape(f"table {plan.open().name}: the rows were placed against "
                                                       "different snapshots")):
        plan.write_task(iter([placed(1, 1), placed(2, 2)]))
    assert not [f for _, _, fs in os.walk(table.root) for f in fs if f.startswith("data-")]
    one = plan.write_task(iter([placed(0, 1)]))
    assert one.placed_against == 0 and one.messages
    with pytest.raises(CommitConflict, match=re.escape("placed against different snapshots [0, 3]")):
        plan.commit([one, TaskMessages([], placed_against=3), None])
    with pytest.raises(CommitConflict, match="placed against snapshot 3, but the latest snapshot is 0"):
        plan.commit([TaskMessages(one.messages, placed_against=3)])
    assert table.latest_snapshot() is None  # and the failed commit deleted its files:
    assert not [f for _, _, fs in os.walk(table.root) for f in fs if f.startswith("data-")]
    plan.commit([plan.write_task(iter([placed(0, 1)]))])
    assert rows_by_key(table) == {1: ("a", "x", None)}


# ------------------------------------------------------------------------------------------
# batch writes: the pinned snapshot's keys read once, split over tasks, shuffled with the rows


def batch_frame(spark, rows):
    return spark.createDataFrame([tuple(r[c] for c in ("dt", "k", "v", "w", "op")) for r in rows], STREAM_DDL)


def write_with_task_bootstrap(spark, root, rows):
    """The rows placed by assigner tasks that each read the snapshot's keys themselves (by_bucket)."""
    placed = tarn.spark.by_bucket(batch_frame(spark, rows), root)
    placed.write.format("tarn").mode("append").option("write.bucket-owned", "true").save(root)


def placement(table):
    """Where the rows live: (partition, bucket, rows) of each live file, and each key's row."""
    files = sorted((e.partition, e.bucket, e.file.row_count, e.file.level)
                   for e in table.live_entries(table.latest_snapshot(), table.schema()))
    return files, rows_by_key(table)


ENGINES = [("deduplicate", "false", apply_deduplicate), ("deduplicate", "true", apply_deduplicate),
           ("partial-update", "true", None), ("first-row", "false", None)]


@pytest.fixture
def split_always(monkeypatch):
    """tarn.spark.write splits the bootstrap whatever the number of assigner tasks per core."""
    monkeypatch.setattr(cross_partition, "SPLIT_BOOTSTRAP_TASKS_PER_CORE", 0)


def test_few_assigner_tasks_per_core_read_their_own_keys(spark):
    cores = spark.sparkContext.defaultParallelism
    limit = cross_partition.SPLIT_BOOTSTRAP_TASKS_PER_CORE * cores
    assert not cross_partition.split_bootstrap(spark, limit)  # local[2]'s 8 tasks: no split
    assert cross_partition.split_bootstrap(spark, limit + 1)


@pytest.mark.parametrize("engine, dv, apply", ENGINES, ids=[f"{e}-dv-{d}" for e, d, _ in ENGINES])
def test_split_bootstrap_places_like_task_bootstrap(spark, tmp_path, engine, dv, apply, split_always):
    # the same writes through tarn.spark.write (keys read once by bootstrap tasks, shuffled to
    # the assigners) and through by_bucket (each assigner task reads every file): same files,
    # same rows per key, equal to the oracle; keys move, and deduplicate deletes some
    options = {"merge-engine": engine, "deletion-vectors.enabled": dv, "dynamic-bucket.target-row-num": "2"}
    if engine == "deduplicate":
        options["rowkind.field"] = "op"
    split, per_task = (create(str(tmp_path / name), **options) for name in ("split", "task"))
    merge = {"partial-update": partial_update, "first-row": first_row}.get(engine)
    oracle = {}
    for batch in moving_batches(3, keys=90):
        tarn.spark.write(batch_frame(spark, batch), split.root)
        write_with_task_bootstrap(spark, per_task.root, batch)
        if apply is not None:
            apply(oracle, batch)
        else:  # without rowkind.field every row is +I
            for r in batch:
                oracle[r["k"]] = merge(oracle.get(r["k"]), r)
        assert placement(split) == placement(per_task)
        assert rows_by_key(split) == oracle


def test_split_bootstrap_reads_each_file_once(spark, tmp_path, split_always):
    # the read log (READ_LOG_ENV, appended to by every bootstrap read in the Python workers):
    # tarn.spark.write reads each live file of the snapshot once; by_bucket's assigner tasks
    # read each of them once per task; the bootstrap emits one row per live key
    from tarn.spark.cross_partition import key_rows
    from tarn.write.cross_partition import READ_LOG_ENV

    table = create(str(tmp_path / "wh"), **{"rowkind.field": "op", "deletion-vectors.enabled": "true"})
    batches = moving_batches(3, keys=80)
    log = tmp_path / "reads.log"
    environment = spark.sparkContext.environment
    environment[READ_LOG_ENV] = str(log)
    try:
        tarn.spark.write(batch_frame(spark, batches[0]), table.root)
        assert not log.exists()  # an empty table: nothing to read
        for batch in batches[1:]:
            live = {e.file.file_name for e in table.live_entries(table.latest_snapshot(), table.schema())}
            tarn.spark.write(batch_frame(spark, batch), table.root)
            reads = log.read_text().split()
            assert sorted(reads) == sorted(live)
            log.unlink()
        live = [e.file.file_name for e in table.live_entries(table.latest_snapshot(), table.schema())]
        write_with_task_bootstrap(spark, table.root, batches[2])
        channels = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
        assert sorted(log.read_text().split()) == sorted(live * channels)
    finally:
        del environment[READ_LOG_ENV]
    snapshot = table.latest_snapshot().id
    emitted = key_rows(spark, table, None, snapshot, 4).toPandas()
    expected = rows_by_key(table)
    assert sorted(emitted["k"]) == sorted(expected)  # each live key once (deleted ones not)
    where = {e.file.file_name: e for e in table.live_entries(table.latest_snapshot(), table.schema())}
    buckets = {(e.partition, e.bucket) for e in where.values()}
    assert set(zip(emitted["__tarn_key_partition"].map(bytes), emitted["__tarn_key_bucket"])) <= buckets
    dt_of = {bytes(p): tarn.partition.from_bytes(table.schema(), bytes(p))[0] for p in emitted["__tarn_key_partition"]}
    assert {k: dt_of[bytes(p)] for k, p in zip(emitted["k"], emitted["__tarn_key_partition"])} == \
        {k: v[0] for k, v in expected.items()}
