"""Maintenance on Spark: distributed compaction committed once; expiry, tag deletion, rollback
and orphan removal with their data files deleted by executor tasks, leaving exactly what the
local calls leave; and the demo pipeline end to end (small)."""

from __future__ import annotations

import importlib.util
import os
import pickle
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import tarn
import tarn.spark
import tarn.spark.maintenance as spark_maintenance
from tarn.fs import local_file_io
from tarn.ops.expire import execute_expire, plan_expire
from tests.maintenance_checks import missing_files, rows, unreferenced_files

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def pk_table(catalog, commits=3):
    table = catalog.create_table("db.pk", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "2", "write-only": "true"})
    for i in range(commits):
        table.write(pa.table({"dt": ["a", "b"] * 50, "id": list(range(100)), "v": [f"v{i}"] * 100},
                             schema=SCHEMA))
    return table


def test_compaction_spreads_buckets_and_commits_once(spark, catalog):
    table = pk_table(catalog)
    before = table.scan().to_arrow().sort_by("id")
    snapshot = tarn.spark.compact(spark, table.root, full=True)
    assert snapshot.commit_kind == "COMPACT" and snapshot.id == 4
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"] * 3 + ["COMPACT"]
    entries = table.planner(table.schema()).live_entries(table.latest_snapshot())
    per_bucket = {}
    for e in entries:
        per_bucket.setdefault((e.partition, e.bucket), []).append(e.file.level)
    assert len(per_bucket) == 4 and all(levels == [5] for levels in per_bucket.values())
    assert table.scan().to_arrow().sort_by("id").equals(before)
    assert tarn.spark.compact(spark, table.root, full=True) is None  # nothing left to do


def test_compaction_of_some_partitions(spark, catalog):
    table = pk_table(catalog, commits=2)
    tarn.spark.compact(spark, table.root, full=True, partitions=[{"dt": "a"}])
    entries = table.planner(table.schema()).live_entries(table.latest_snapshot())
    levels = {(table.planner(table.schema()).partition_values(e.partition)[0], e.file.level) for e in entries}
    assert levels == {("a", 5), ("b", 0)}


def test_tags_expiry_and_rollback(spark, catalog):
    table = pk_table(catalog)
    tag = tarn.spark.create_tag(spark, table.root, "after-three")
    assert tag.snapshot.id == 3 and [t.name for t in tarn.spark.list_tags(spark, table.root)] == ["after-three"]
    table.write(pa.table({"dt": ["a"], "id": [0], "v": ["late"]}, schema=SCHEMA))
    assert tarn.spark.expire_snapshots(spark, table.root, retain_min=1, retain_max=1, older_than_ms=2**62) == 3
    tagged = spark.read.format("tarn").option("scan.tag-name", "after-three").load(table.root)
    assert tagged.filter("v = 'late'").count() == 0 and tagged.count() == 100
    tarn.spark.rollback_to(spark, table.root, "after-three")
    assert table.latest_snapshot().id == 3
    assert spark.read.format("tarn").load(table.root).filter("v = 'late'").count() == 0
    tarn.spark.delete_tag(spark, table.root, "after-three")
    assert tarn.spark.list_tags(spark, table.root) == []


def test_demo_pipeline_runs_small(spark, tmp_path):
    spec = importlib.util.spec_from_file_location(
        "pipeline", Path(__file__).resolve().parents[2] / "examples" / "pipeline.py")
    pipeline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pipeline)
    figures = pipeline.run(spark, str(tmp_path / "warehouse"), orders=500)
    day1, day2 = pipeline.DAYS
    now = {r["dt"]: r["orders"] for r in figures["report_now"]}
    cancelled = len(range(3, 500, 11))
    assert now == {day1: 500 - cancelled, day2: 250}
    assert {r["dt"]: r["orders"] for r in figures["report_at_tag"]} == {day1: 500}
    assert figures["reverted"] == 0 and figures["cancelled"] == cancelled
    assert set(figures["files_after"]) == {5}
    assert [kind for _, kind, _ in figures["snapshots"]][-1] == "COMPACT"
    assert "tarn pipeline summary" in pipeline.summary(figures)


# ---------------------------------------------------------------------------------------------
# expiry, tag deletion, rollback, orphans: data files deleted on executors

FAR_FUTURE = 2**62


def history(catalog):
    """A pk table with changelog files, a tag on snapshot 2, deletes by a full compaction
    (snapshot 4) and a later write (snapshot 5)."""
    table = catalog.create_table("db.hist", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "2", "write-only": "true", "changelog-producer": "input"})
    for i in range(3):
        table.write(pa.table({"dt": ["a", "b"] * 20, "id": list(range(40)), "v": [f"v{i}"] * 40}, schema=SCHEMA))
    table.create_tag("two", 2)
    table.compact(full=True)
    table.write(pa.table({"dt": ["a"], "id": [0], "v": ["late"]}, schema=SCHEMA))
    return table


def twin(table):
    """A byte-identical copy of the table (same file names and times) and the copy's path."""
    copy = table.root + "-twin"
    shutil.copytree(table.root, copy)
    return tarn.load_table(table.root), tarn.load_table(copy)


def listing(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names)


@pytest.fixture
def executor_runs(monkeypatch):
    """Every delete_on_executors call: (paths, task reports)."""
    runs = []
    real = spark_maintenance.delete_on_executors

    def recording(spark, file_io, paths, parallelism=None):
        tasks = real(spark, file_io, paths, parallelism)
        runs.append((list(paths), tasks))
        return tasks
    monkeypatch.setattr(spark_maintenance, "delete_on_executors", recording)
    return runs


def test_delete_on_executors_spreads_paths_over_tasks(spark, tmp_path):
    paths = []
    for i in range(10):
        path = tmp_path / f"f{i}"
        path.write_bytes(b"x")
        paths.append(str(path))
    file_io = local_file_io()
    tasks = spark_maintenance.delete_on_executors(spark, file_io, paths + [str(tmp_path / "gone")], parallelism=3)
    assert sorted(t.partition for t in tasks) == [0, 1, 2]
    assert sum(t.files for t in tasks) == 11 and all(t.files >= 3 for t in tasks)
    assert all(t.pid != os.getpid() for t in tasks)  # Python workers, not the driver
    assert list(tmp_path.iterdir()) == []
    assert spark_maintenance.delete_on_executors(spark, file_io, []) == []


def test_expiry_on_executors_leaves_what_local_expiry_leaves(spark, catalog, executor_runs):
    local, distributed = twin(history(catalog))
    tagged = rows(local, local.list_tags()[0].snapshot)
    plan = plan_expire(local, retain_min=1, older_than_ms=FAR_FUTURE)
    assert plan.snapshot_ids == (1, 2, 3, 4) and plan.earliest_hint == 5 and plan.data_paths
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert execute_expire(local, plan) == 4
    assert tarn.spark.expire_snapshots(spark, distributed.root, retain_min=1, older_than_ms=FAR_FUTURE) == 4
    assert listing(local.root) == listing(distributed.root)
    [(deleted, tasks)] = executor_runs
    assert sorted(os.path.relpath(p, distributed.root) for p in deleted) == \
        sorted(os.path.relpath(p, local.root) for p in plan.data_paths)
    assert sum(t.files for t in tasks) == len(deleted) and all(t.pid != os.getpid() for t in tasks)
    assert not missing_files(distributed) and not unreferenced_files(distributed)
    assert rows(distributed, distributed.list_tags()[0].snapshot) == tagged
    assert rows(distributed, distributed.latest_snapshot()) == rows(local, local.latest_snapshot())
    read = spark.read.format("tarn").option("scan.tag-name", "two").load(distributed.root)
    assert read.count() == 40 and read.filter("v = 'v2'").count() == 0


def test_tag_deletion_rollback_and_orphans_on_executors(spark, catalog, executor_runs):
    local, distributed = twin(history(catalog))
    for table in (local, distributed):
        table.create_tag("three", 3)
    local.expire_snapshots(retain_min=1, older_than_ms=FAR_FUTURE)
    tarn.spark.expire_snapshots(spark, distributed.root, retain_min=1, older_than_ms=FAR_FUTURE)
    executor_runs.clear()

    before = listing(local.root)
    local.delete_tag("three")  # frees the files of the third write, held only by it
    tarn.spark.delete_tag(spark, distributed.root, "three")
    assert listing(local.root) == listing(distributed.root) != before
    assert len(executor_runs) == 1 and executor_runs[0][0]

    local.rollback_to("two")  # re-creates snapshot 2 from the tag, drops snapshot 5's files
    tarn.spark.rollback_to(spark, distributed.root, "two")
    assert listing(local.root) == listing(distributed.root)
    assert len(executor_runs) == 2 and executor_runs[1][0]
    assert distributed.snapshot_store.list_ids() == [2]
    assert rows(distributed, distributed.latest_snapshot()) == rows(local, local.latest_snapshot())

    for table in (local, distributed):
        for name in ("dt=a/bucket-0/data-stray.orc", "manifest/manifest-stray"):
            Path(table.root, name).write_bytes(b"x")
    assert [os.path.relpath(p, local.root) for p in local.remove_orphan_files(older_than=FAR_FUTURE)] == \
        [os.path.relpath(p, distributed.root)
         for p in tarn.spark.remove_orphan_files(spark, distributed.root, older_than_ms=FAR_FUTURE)]
    assert listing(local.root) == listing(distributed.root)
    assert len(executor_runs) == 3 and len(executor_runs[2][0]) == 2
    assert all(t.pid != os.getpid() for _, tasks in executor_runs for t in tasks)
    assert not missing_files(distributed) and not unreferenced_files(distributed)
