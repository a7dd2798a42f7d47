"""tarn.spark.write and the Spark DML helpers return the CommitResult the local verbs do."""

from __future__ import annotations

import tarn
import tarn.spark


def test_spark_verbs_return_commit_results(spark, tmp_path):
    path = str(tmp_path / "wh" / "t")
    df = spark.createDataFrame([(i, f"v{i}") for i in range(10)], "id bigint, v string")
    written = tarn.spark.write(df, path, **{"primary-key": "id", "bucket": "2"})
    assert isinstance(written, tarn.CommitResult) and written.operation == "write"
    assert written.rows_added == 10 and written.files_added == 2 and written.snapshot_ids == [1]
    deleted = tarn.spark.delete(spark, path, "id < 3")
    assert deleted.operation == "delete" and deleted.rows_deleted == 3
    updated = tarn.spark.update(spark, path, {"v": "x"}, "id = 5")
    assert updated.rows_updated == 1 and "update" in repr(updated)
    source = spark.createDataFrame([(5, "m"), (42, "n")], "id bigint, v string")
    merged = tarn.spark.merge_into(spark, path, source, when_matched_update="*")
    assert merged.operation == "merge" and merged.rows_written == 2
    assert sorted(r["id"] for r in tarn.load_table(path).scan().to_arrow().to_pylist()) == [3, 4, 5, 6, 7, 8, 9, 42]
    append = str(tmp_path / "wh" / "a")
    appended = tarn.spark.write(df, append)
    assert appended.rows_added == 10 and appended.commit_kind == "APPEND"


def test_sources_are_registered_once_per_session(spark, tmp_path, monkeypatch):
    from tarn.spark.session import register

    register(spark)  # already registered by the session fixture
    calls = []
    monkeypatch.setattr(type(spark.dataSource), "register", lambda self, source: calls.append(source))
    register(spark)
    path = str(tmp_path / "wh" / "r")
    tarn.spark.write(spark.createDataFrame([(1, "a")], "id bigint, v string"), path, **{"primary-key": "id",
                                                                                     "bucket": "1"})
    tarn.spark.compact(spark, path, full=True)
    assert calls == []  # no "replaced a previously registered data source" warning per helper call
