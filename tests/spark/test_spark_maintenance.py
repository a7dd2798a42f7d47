"""Maintenance on Spark: distributed compaction committed once, expiry, tags, rollback; and
the demo pipeline end to end (small)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow as pa

import tarn
import tarn.spark

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
    entries = table._planner(table.schema()).live_entries(table.latest_snapshot())
    per_bucket = {}
    for e in entries:
        per_bucket.setdefault((e.partition, e.bucket), []).append(e.file.level)
    assert len(per_bucket) == 4 and all(levels == [5] for levels in per_bucket.values())
    assert table.scan().to_arrow().sort_by("id").equals(before)
    assert tarn.spark.compact(spark, table.root, full=True) is None  # nothing left to do


def test_compaction_of_some_partitions(spark, catalog):
    table = pk_table(catalog, commits=2)
    tarn.spark.compact(spark, table.root, full=True, partitions=[{"dt": "a"}])
    entries = table._planner(table.schema()).live_entries(table.latest_snapshot())
    levels = {(table._planner(table.schema()).partition_values(e.partition)[0], e.file.level) for e in entries}
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
