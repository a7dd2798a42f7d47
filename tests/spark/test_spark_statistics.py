"""Table statistics on Spark: `tarn.spark.analyze` reads on executors and commits once, with the
very numbers a local `Table.analyze` gets (sketches and exact sets merge exactly), also past
the exact distinct limit; `tarn.spark.statistics` shows them as a DataFrame; `tarn.spark.count`
answers from metadata."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import tarn
import tarn.spark
from tarn.ops import analyze as S

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.float64()), ("s", pa.string())])


def pk_table(catalog, name="db.stats"):
    t = catalog.create_table(name, SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "3", "write-only": "true"})
    rng = np.random.default_rng(11)
    for i in range(3):
        ids = rng.integers(0, 4000, 3000)
        t.write(pa.table({"dt": np.where(ids % 2 == 0, "a", "b"), "id": ids, "v": rng.normal(size=3000),
                          "s": [f"s{i}-{k % 300}" for k in ids]}, schema=SCHEMA))
    return t


def same_statistics(a, b):
    assert (a.merged_record_count, a.merged_record_size) == (b.merged_record_count, b.merged_record_size)
    assert a.col_stats.keys() == b.col_stats.keys()
    for name in a.col_stats:
        x, y = a.col_stats[name], b.col_stats[name]
        assert x == y, name


def test_analyze_on_executors_equals_local_analyze(spark, catalog, monkeypatch):
    t = pk_table(catalog)
    local = S.plan_analyze(t)
    want = local.statistics(S.collect(t, local))
    snapshot = tarn.spark.analyze(spark, t.root, parallelism=4)
    assert snapshot.commit_kind == "ANALYZE" and snapshot.id == 4
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND"] * 3 + ["ANALYZE"]
    got = t.statistics()
    assert got.snapshot_id == 3
    same_statistics(got, want)
    assert got.merged_record_count == t.scan().to_arrow().num_rows
    # past the exact limit: the merged sketches give the local estimate
    monkeypatch.setattr(S, "EXACT_DISTINCT_LIMIT", 500)  # on the driver, which merges the tasks' parts
    local = S.plan_analyze(t, ["id", "s"])
    want = local.statistics(S.collect(t, local))
    tarn.spark.analyze(spark, t.root, columns=["id", "s"], parallelism=3)
    got = t.statistics()
    same_statistics(got, want)
    truth = len(set(t.scan().to_arrow().column("id").to_pylist()))
    assert truth > 500 and abs(got.col_stats["id"].distinct_count - truth) <= 0.02 * truth


def test_statistics_frame_and_count(spark, catalog):
    t = pk_table(catalog, "db.frame")
    assert tarn.spark.statistics(spark, t.root).count() == 0
    tarn.spark.analyze(spark, t.root, columns=["v", "s"])
    rows = {r["column_name"]: r.asDict() for r in tarn.spark.statistics(spark, t.root).collect()}
    stats = t.statistics()
    assert set(rows) == {"v", "s"}
    assert rows["v"]["min"] == stats.col_stats["v"].serialized_min
    merged = t.scan().to_arrow()
    assert rows["s"]["distinct_count"] == stats.col_stats["s"].distinct_count == len(set(merged.column("s").to_pylist()))
    assert rows["v"]["merged_record_count"] == stats.merged_record_count
    assert tarn.spark.count(spark, t.root) == stats.merged_record_count  # fresh statistics
    tarn.spark.analyze(spark, t.root, columns=[])
    frame = tarn.spark.statistics(spark, t.root).collect()
    assert len(frame) == 1 and frame[0]["column_name"] is None
    empty = catalog.create_table("db.empty", SCHEMA)
    assert tarn.spark.analyze(spark, empty.root) is None
