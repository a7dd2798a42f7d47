"""Dynamic-bucket tables on Spark: buckets assigned on executors (rows shuffled by key hash to
assigner tasks that each own a hash range of the index), written one task per bucket, one
commit on the driver; streaming writes through by_bucket; rescale on Spark."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

import tarn
import tarn.spark
from tarn.bucket import assigner_channels, partition_hash, row_hashes
from tarn.spark.dataframe import rescale
from tarn.store.deletion_vectors import live_index_entries
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)
from tests.test_dynamic_bucket import buckets_of, check_index

DDL = "dt string, k long, v string"


def frame(spark, dt_keys, tag):
    return spark.createDataFrame([(dt, k, f"{tag}{k}") for dt, keys in dt_keys for k in keys], DDL)


def assert_buckets_owned(table, channels: int) -> None:
    """Every key sits in a bucket its assigner task owns (`bucket % channels` is its task)."""
    schema = table.schema()
    for (values, key), bucket in buckets_of(table).items():
        h = row_hashes(pa.table({"k": pa.array([key], pa.int64())}), [schema.field("k")])
        part = partition_hash(tarn.partition.to_bytes(schema, values))
        assert bucket % channels == assigner_channels(part, h, channels, channels)[0]


def forbid(monkeypatch, name: str) -> None:
    """Make `tarn.spark.dataframe.<name>` fail the test if a write calls it."""
    import tarn.spark.dataframe as frames

    def refused(*args, **kwargs):
        raise AssertionError(f"the write called {name}")

    monkeypatch.setattr(frames, name, refused)


def content(table) -> dict:
    out = {}
    for r in table.scan().to_arrow().to_pylist():
        key = (r["dt"], r["k"])
        assert key not in out, f"{key} twice"
        out[key] = r["v"]
    return out


def test_write_assigns_buckets_on_executors(spark, path):
    options = {"primary-key": "dt,k", "partition": "dt", "dynamic-bucket.target-row-num": "6"}
    tarn.spark.write(frame(spark, [("a", range(60)), ("b", range(10))], "x"), path, **options)
    table = tarn.load_table(path)
    assert table.options.get("bucket") == "-1" and len(table.snapshots()) == 1
    oracle = {("a", k): f"x{k}" for k in range(60)} | {("b", k): f"x{k}" for k in range(10)}
    assert content(table) == oracle
    check_index(table)
    channels = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    got = buckets_of(table)
    assert_buckets_owned(table, channels)
    assert max(e.row_count for e in live_index_entries(table.manifests(), table.latest_snapshot())) <= 6

    tarn.spark.write(frame(spark, [("a", range(50, 80)), ("c", [1])], "y"), path)
    oracle |= {("a", k): f"y{k}" for k in range(50, 80)} | {("c", 1): "y1"}
    assert content(table) == oracle and len(table.snapshots()) == 2
    after = buckets_of(table)
    assert all(after[key] == bucket for key, bucket in got.items())  # known keys kept their bucket
    check_index(table)


def test_initial_buckets_limit_the_assigners(spark, path):
    options = {"primary-key": "k", "dynamic-bucket.initial-buckets": "2", "dynamic-bucket.target-row-num": "100"}
    df = spark.createDataFrame([("a", k, "v") for k in range(150)], DDL).drop("dt")
    tarn.spark.write(df, path, **options)
    table = tarn.load_table(path)
    assert set(buckets_of(table).values()) <= {0, 1, 2, 3} and len(content_keys(table)) == 150
    check_index(table)


def content_keys(table):
    return table.scan().to_arrow().column("k").to_pylist()


def test_plain_writes_are_refused_and_by_bucket_makes_them_work(spark, path):
    tarn.spark.write(frame(spark, [("a", range(5))], "x"), path, **{"primary-key": "dt,k", "partition": "dt"})
    df = frame(spark, [("a", range(3, 8))], "y")
    with pytest.raises(PySparkException, match="dynamic buckets"):
        df.write.format("tarn").mode("append").save(path)
    table = tarn.load_table(path)
    assert len(table.snapshots()) == 1
    tarn.spark.by_bucket(df, path).write.format("tarn").mode("append").option("write.bucket-owned", "true").save(path)
    assert content(table) == {("a", k): ("x" if k < 3 else "y") + str(k) for k in range(8)}
    check_index(table)


def test_overwrite_assigns_afresh(spark, path):
    options = {"primary-key": "dt,k", "partition": "dt", "dynamic-bucket.target-row-num": "3"}
    tarn.spark.write(frame(spark, [("a", range(40)), ("b", range(5))], "x"), path, **options)
    tarn.spark.write(frame(spark, [("a", [1, 2])], "o"), path, mode="overwrite")
    table = tarn.load_table(path)
    assert content(table) == {("a", 1): "o1", ("a", 2): "o2"}
    assert sum(e.row_count for e in live_index_entries(table.manifests(), table.latest_snapshot())) == 2
    check_index(table)


def test_streaming_writes_through_by_bucket(spark, path, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    tarn.spark.write(frame(spark, [("a", [0])], "s"), path, **{"primary-key": "dt,k", "partition": "dt",
                                                                 "dynamic-bucket.target-row-num": "4"})
    stream = spark.readStream.schema(DDL).json(str(source))
    query_df = tarn.spark.by_bucket(stream, path)
    for batch in range(2):
        (tmp_path / "in" / f"{batch}.json").write_text(
            "\n".join(f'{{"dt": "a", "k": {k}, "v": "b{batch}-{k}"}}' for k in range(batch * 5, batch * 5 + 10)))
        query = (query_df.writeStream.format("tarn").option("checkpointLocation", str(tmp_path / "cp"))
                 .option("write.bucket-owned", "true").trigger(availableNow=True).start(path))
        query.awaitTermination()
    table = tarn.load_table(path)
    expected = {("a", k): f"b0-{k}" for k in range(10)} | {("a", k): f"b1-{k}" for k in range(5, 15)}
    assert content(table) == expected
    check_index(table)


def test_rescale_on_spark(spark, path, catalog):
    t = catalog.create_table("db.fixed", schema=pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())]),
                             primary_key=["dt", "k"], partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"dt": ["a"] * 40 + ["b"] * 10, "k": list(range(40)) + list(range(10)), "v": ["x"] * 50}))
    before = content(t)
    snapshot = rescale(spark, t.root, bucket=5, partitions=[{"dt": "a"}])
    assert snapshot.commit_kind == "OVERWRITE" and t.options.get("bucket") == "5"
    assert content(t) == before
    totals = {(tarn.partition.from_bytes(t.schema(), e.partition)[0], e.total_buckets)
              for e in t.live_entries(t.latest_snapshot())}
    assert totals == {("a", 5), ("b", 2)}
    with pytest.raises(tarn.TarnError, match="Rescale first"):
        t.write(pa.table({"dt": ["b"], "k": [1], "v": ["y"]}))
    assert rescale(spark, t.root, partitions=[{"dt": "nope"}]) is None

    d = catalog.create_table("db.dyn", schema=pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_key=["k"],
                             options={"dynamic-bucket.target-row-num": "10"})
    d.write(pa.table({"k": list(range(100)), "v": ["x"] * 100}))
    d.delete(pa.table({"k": list(range(70))}))
    rescale(spark, d.root)
    assert sorted(d.scan().to_arrow().column("k").to_pylist()) == list(range(70, 100))
    assert sum(e.row_count for e in live_index_entries(d.manifests(), d.latest_snapshot())) == 30
    check_index(d)
    assert not [f for _, _, fs in os.walk(d.root) for f in fs if "spark-" in f and f.startswith("data-")
                and f not in {e.file.file_name for e in d.live_entries(d.latest_snapshot())}]


def test_first_write_routes_rows_to_writer_tasks_that_assign(spark, path):
    """An empty table's first write: one shuffle to the assigner tasks, each writer task assigns
    and creates only the buckets it owns; the table equals a local write of the same rows."""
    from tarn.spark.dataframe import route_dynamic

    options = {"primary-key": "dt,k", "partition": "dt", "dynamic-bucket.target-row-num": "7"}
    rows = frame(spark, [("a", range(90)), ("b", range(15))], "x")
    tarn.spark.write(rows.limit(0), path, **options)  # creates the table, no snapshot
    assert tarn.load_table(path).latest_snapshot() is None
    routed = route_dynamic(rows, path)
    assert routed.columns == rows.columns  # no route column travels with the rows
    channels = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    schema = tarn.load_table(path).schema()
    placed = routed.rdd.mapPartitionsWithIndex(lambda i, it: [(i, r["dt"], r["k"]) for r in it]).collect()
    assert routed.rdd.getNumPartitions() == channels and len(placed) == 105
    for index, dt, key in placed:  # Spark partition i holds exactly the keys of assigner task i
        h = row_hashes(pa.table({"k": pa.array([key], pa.int64())}), [schema.field("k")])
        part = partition_hash(tarn.partition.to_bytes(schema, [dt]))
        assert index == assigner_channels(part, h, channels, channels)[0]
    tarn.spark.write(rows, path)
    table = tarn.load_table(path)
    assert content(table) == {("a", k): f"x{k}" for k in range(90)} | {("b", k): f"x{k}" for k in range(15)}
    check_index(table)
    assert_buckets_owned(table, channels)
    assert max(e.row_count for e in live_index_entries(table.manifests(), table.latest_snapshot())) <= 7


def test_routed_write_refuses_a_task_holding_another_tasks_keys(spark, path):
    """With `write.assigner-channels` each writer task assigns as the assigner task of its
    Spark partition id; rows not shuffled by `route_dynamic` (here: round robin) put keys of
    other tasks' hash ranges into a task, and the write fails with nothing committed."""
    from tarn.spark.batch_write import ROUTE_OPTION

    options = {"primary-key": "dt,k", "partition": "dt"}
    rows = frame(spark, [("a", range(200))], "x")
    tarn.spark.write(rows.limit(0), path, **options)
    channels = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    with pytest.raises(PySparkException, match="does not own its hash range"):
        rows.repartition(channels).write.format("tarn").mode("append").option(ROUTE_OPTION, str(channels)) \
            .save(path)
    table = tarn.load_table(path)
    assert table.latest_snapshot() is None
    assert not [f for _, _, fs in os.walk(table.root) for f in fs if f.startswith("data-")]
    with pytest.raises(PySparkException, match="rows shuffled by tarn.spark.dataframe.route_dynamic"):
        tarn.spark.write(rows, path)  # fine: routed
        rows.write.format("tarn").mode("append").option(ROUTE_OPTION, str(channels)).save(path)
    assert len(content(tarn.load_table(path))) == 200


def test_routed_rows_must_reach_their_own_assigner_task(tmp_path):
    from tarn.spark.batch_write import given_buckets
    from tarn.write.assign import route_base
    from tarn.errors import TarnError

    data = pa.table({"k": pa.array([1, 2], pa.int64()), "__tarn_bucket": pa.array([route_base(8) - 3] * 2)})
    assigned: dict = {}
    rows, buckets = given_buckets(data, assigned)
    assert buckets is None and rows.column_names == ["k"] and assigned == {"route": (3, 8), "snapshot": 0}
    other = data.set_column(1, "__tarn_bucket", pa.array([route_base(8) - 4] * 2))
    with pytest.raises(TarnError, match="different assigner tasks"):
        given_buckets(other, assigned)
    with pytest.raises(TarnError, match="different assigner tasks"):
        given_buckets(data.set_column(1, "__tarn_bucket", pa.array([5, 5], pa.int64())), assigned)
    # a writer playing assigner task 3 of 8 refuses keys of another task's hash range
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", schema=pa.schema([("k", pa.int64())]),
                                                     primary_key=["k"])
    writer = table.new_writer()
    writer.assign_as(3, 8)
    writer.write(pa.table({"k": pa.array(range(100), pa.int64())}))
    with pytest.raises(TarnError, match="does not own its hash range"):
        writer.prepare_commit()


def test_appends_to_a_routed_table_take_one_shuffle(spark, path, monkeypatch):
    """A table whose index routed writes built (every key in a bucket of the task its hash is
    routed to) takes upserts in one shuffle too: writer tasks assign against the latest
    snapshot's index, known keys keep their bucket, new keys fill or open buckets of their
    own task, and the table stays one row per key."""
    forbid(monkeypatch, "assign_dynamic")
    options = {"primary-key": "dt,k", "partition": "dt", "dynamic-bucket.target-row-num": "5"}
    tarn.spark.write(frame(spark, [("a", range(40)), ("b", range(6))], "x"), path, **options)
    table = tarn.load_table(path)
    oracle = {("a", k): f"x{k}" for k in range(40)} | {("b", k): f"x{k}" for k in range(6)}
    placed = buckets_of(table)
    for round, (a_keys, b_keys) in enumerate([(range(30, 70), range(3)), (range(0, 100, 3), range(4, 20))]):
        tarn.spark.write(frame(spark, [("a", a_keys), ("b", b_keys)], f"r{round}-"), path)
        oracle |= {("a", k): f"r{round}-{k}" for k in a_keys} | {("b", k): f"r{round}-{k}" for k in b_keys}
        assert content(table) == oracle and len(table.snapshots()) == round + 2
        check_index(table)
        now = buckets_of(table)
        assert all(now[key] == bucket for key, bucket in placed.items())  # known keys kept their bucket
        placed = now
    channels = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    assert_buckets_owned(table, channels)  # each bucket still belongs to one task
    assert max(e.row_count for e in live_index_entries(table.manifests(), table.latest_snapshot())) <= 5


def test_an_index_of_another_layout_takes_two_shuffles(spark, path, monkeypatch):
    """Keys a one-process writer placed (one assigner: buckets filled in order) sit in buckets
    of other Spark tasks than their hashes route to: the write takes Paimon's two shuffles,
    and the table stays one row per key."""
    import tarn.spark.dataframe as frames

    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    table = tarn.Catalog(os.path.dirname(path)).create_table(
        "db.local", schema=schema, primary_key=["k"], options={"dynamic-bucket.target-row-num": "10"})
    table.write(pa.table({"k": pa.array(range(60), pa.int64()), "v": ["local"] * 60}))
    spec = frames.assigner_spec(spark, table)
    assert spec.channels > 1 and not frames.routable(table, table.latest_snapshot(), spec)
    forbid(monkeypatch, "route_dynamic")
    before = buckets_of(table)
    tarn.spark.write(spark.createDataFrame([(k, "spark") for k in range(50, 80)], "k long, v string"), table.root)
    rows = {r["k"]: r["v"] for r in table.scan().to_arrow().to_pylist()}
    assert rows == {k: "local" if k < 50 else "spark" for k in range(80)} and table.scan().to_arrow().num_rows == 80
    check_index(table)
    assert all(buckets_of(table)[key] == bucket for key, bucket in before.items())


def test_a_routed_append_against_a_stale_index_conflicts(spark, path):
    """Writer tasks assigning against snapshot S while another writer added keys to the same
    partition after S: the commit fails naming the index race, and nothing of it lands."""
    from tarn.spark.batch_write import ROUTE_OPTION, ROUTE_SNAPSHOT_OPTION
    from tarn.spark.dataframe import assigner_spec, route_dynamic

    tarn.spark.write(frame(spark, [("a", range(20))], "x"), path, **{"primary-key": "dt,k", "partition": "dt"})
    table = tarn.load_table(path)
    stale = table.latest_snapshot().id
    table.write(pa.table({"dt": ["a"], "k": pa.array([500], pa.int64()), "v": ["local"]}))
    channels = assigner_spec(spark, table).channels
    routed = route_dynamic(frame(spark, [("a", range(15, 30))], "y"), path)
    with pytest.raises(PySparkException, match="concurrent commit changed the dynamic-bucket index"):
        routed.write.format("tarn").mode("append").option(ROUTE_OPTION, str(channels)) \
            .option(ROUTE_SNAPSHOT_OPTION, str(stale)).option("write.bucket-owned", "true").save(path)
    assert content(table) == {("a", k): f"x{k}" for k in range(20)} | {("a", 500): "local"}
    assert len(table.snapshots()) == 2
    check_index(table)


def test_index_fits_routing_reads_every_hash_file(tmp_path):
    from tarn.write.assign import AssignerSpec, HashIndexFiles, index_fits_routing

    table = tarn.Catalog(str(tmp_path)).create_table("db.t", schema=pa.schema([("k", pa.int64())]),
                                                     primary_key=["k"])
    files = HashIndexFiles(table.file_io, table.root)
    spec = AssignerSpec(target_rows=100, max_buckets=-1, channels=3, assigners=3)
    part = tarn.partition.to_bytes(table.schema(), [])
    hashes = row_hashes(pa.table({"k": pa.array(range(300), pa.int64())}), [table.schema().field("k")])
    tasks = assigner_channels(partition_hash(part), hashes, 3, 3)
    fitting = [files.write(part, bucket, hashes[tasks == bucket % 3]) for bucket in (0, 1, 2)]
    assert index_fits_routing(files, fitting, spec, most_hashes=300, most_files=3)
    assert not index_fits_routing(files, fitting, spec, most_hashes=299, most_files=3)  # too many keys to read
    assert not index_fits_routing(files, fitting, spec, most_hashes=300, most_files=2)  # too many files
    assert not index_fits_routing(files, fitting, AssignerSpec(100, -1, channels=4, assigners=4), 300, 3)
    moved = files.write(part, 4, hashes[tasks == 0][:1])  # bucket 4 belongs to task 1
    assert not index_fits_routing(files, fitting[1:] + [moved], spec, most_hashes=300, most_files=3)
    assert index_fits_routing(files, [], spec, most_hashes=0, most_files=0)


@pytest.mark.parametrize("partition", [None, "p"])
def test_channels_in_spark_sql_equal_tarns(spark, tmp_path, partition):
    """Keys and partition columns bucket_expr can hash get their assigner task as Spark SQL;
    it must be the one tarn.write.assign.channels_of_rows gives."""
    from tarn.spark.dataframe import CHANNEL_COLUMN, _routed
    from tarn.write.assign import channels_of_rows

    schema = pa.schema([("p", pa.int32()), ("k", pa.int64()), ("v", pa.string())])
    keys = ["p", "k"] if partition else ["k"]
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", schema=schema, primary_key=keys,
                                                     partition_keys=[partition] if partition else [])
    rows = pa.table({"p": pa.array([i % 5 - 2 for i in range(400)], pa.int32()),
                     "k": pa.array([i * 7919 - 10**6 for i in range(400)], pa.int64()),
                     "v": [str(i) for i in range(400)]})
    routed, spec = _routed(spark.createDataFrame(rows.to_pandas()), table, parallelism=7)
    got = routed.toArrow().sort_by("k")
    expected = channels_of_rows(rows.sort_by("k"), table.schema(), spec)
    assert got.column(CHANNEL_COLUMN).to_pylist() == expected.tolist()
    assert len(set(expected.tolist())) > 1


def test_local_sessions_shuffle_into_two_partitions_per_core(spark):
    from tarn.spark.session import local_shuffle_partitions

    assert [local_shuffle_partitions(m) for m in ("local", "local[2]", "local[4,3]", "local-cluster[3,2,1024]")] == \
        [2, 4, 8, 12]
    assert local_shuffle_partitions("local[*]") == 2 * (os.cpu_count() or 1)
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"  # the tests' local[2] session


@pytest.mark.interop
def test_java_continues_a_table_of_routed_spark_writes_and_spark_continues_java(spark, tmp_path, javaref,  # noqa: F811
                                                                              monkeypatch):
    """Spark writes a dynamic table in routed writes (the first, then upserts with new keys);
    Java reads it and writes on (its assigner loads the index tarn's writer tasks wrote); Spark
    writes again (one or two shuffles, whatever Java's buckets allow); every reader agrees with
    the oracle, one row per key."""
    import tarn.spark.dataframe as frames
    from tests.interop.test_dynamic_bucket_interop import apply, by_key, java_write, rows_of

    routed = []
    route = frames.route_dynamic
    monkeypatch.setattr(frames, "route_dynamic", lambda *a, **k: routed.append(1) or route(*a, **k))
    path = str(tmp_path / "wh" / "db.db" / "t")
    oracle: dict = {}

    def spark_write(rows, **options):
        tarn.spark.write(spark.createDataFrame([(r["dt"], r["k"], r["v"]) for r in rows], DDL), path, **options)
        apply(oracle, rows)

    spark_write(rows_of("a", range(30), "s1-") + rows_of("b", range(8), "s1-"),
                **{"primary-key": "dt,k", "partition": "dt", "dynamic-bucket.target-row-num": "6"})
    spark_write(rows_of("a", range(20, 45), "s2-") + rows_of("c", range(3), "s2-"))
    table = tarn.load_table(path)
    assert content(table) == oracle and len(routed) == 2  # both writes in one shuffle
    check_index(table)
    java_step = rows_of("a", [0, 44, 45, 46, 47], "j-") + rows_of("b", [1, 50], "j-")
    read, _, after = javaref.run_many([["read", path], java_write(javaref, path, java_step, tmp_path),
                                       ["read", path]])
    assert by_key(read["rows"]) == oracle
    apply(oracle, java_step)
    assert by_key(after["rows"]) == oracle
    spark_write(rows_of("a", range(40, 60), "s3-") + rows_of("b", [50, 51], "s3-"))
    assert content(tarn.load_table(path)) == oracle
    check_index(tarn.load_table(path))
    final, = javaref.run_many([["read", path]])
    assert by_key(final["rows"]) == oracle


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
def test_routed_appends_to_a_deletion_vector_table_keep_the_engines_rules(spark, path, engine, monkeypatch):
    """Dynamic buckets with deletion vectors on Spark: writer tasks of routed appends assign,
    look their keys up in the upper levels and mark the old rows, bucket by bucket; every
    engine's rule holds against an oracle, read locally and through tarn.spark.read
    (aggregation: `last_non_null_value` by default, a null keeps the old value as in
    partial-update; first-row takes no deletion vectors)."""
    options = {"primary-key": "dt,k", "partition": "dt", "dynamic-bucket.target-row-num": "8",
               "deletion-vectors.enabled": "true", "merge-engine": engine}
    forbid(monkeypatch, "assign_dynamic")  # every write in one shuffle
    oracle: dict = {}
    for step, (keys, null_every) in enumerate([(range(40), 0), (range(20, 60), 3), (range(0, 70, 2), 4)]):
        rows = [("a", k, None if null_every and k % null_every == 0 else f"w{step}-{k}") for k in keys]
        tarn.spark.write(spark.createDataFrame(rows, DDL), path, **(options if step == 0 else {}))
        for dt, k, v in rows:
            if engine != "deduplicate" and v is None:
                oracle.setdefault((dt, k), None)
            else:
                oracle[(dt, k)] = v
    table = tarn.load_table(path)
    assert content(table) == oracle
    check_index(table)
    assert {(r["dt"], r["k"]): r["v"] for r in tarn.spark.read(spark, path).collect()} == oracle
    assert any(f.level > 0 for split in table.scan().plan() for f in split.files)
