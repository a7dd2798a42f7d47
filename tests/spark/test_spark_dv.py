"""Tables with deletion vectors on Spark: `tarn.spark.read` scans their files with Spark's own
parquet reader and drops the deleted rows there (a byte mask over `_metadata.row_index`); the
tarn source applies the vectors itself. Both return exactly the rows tarn's own scan returns."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from dataclasses import replace
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tarn
import tarn.spark
from tarn.spark import native_read
from tarn.spark.native_read import NativeFile, native_files, native_paths
from tarn.spark.target import ReadTarget

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("s", pa.string()),
                    ("d", pa.date32()), ("x", pa.float64())])
BASE = 3000  # a big first commit: the small commits after it stay above it, so their keys'
             # old rows are marked in vectors rather than rewritten (tests/test_deletion_vectors.py)


def rows(keys, tag: int = 0) -> pa.Table:
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [k * 10 + tag for k in keys],
                     "s": [f"s{tag}-{k}" for k in keys],
                     "d": [dt.date(2026, 1, 1) + dt.timedelta(days=(k + tag) % 300) for k in keys],
                     "x": [k / 8 + tag for k in keys]}, schema=SCHEMA)


def tuples(table: pa.Table, columns=None) -> list[tuple]:
    columns = columns or table.column_names
    return sorted(tuple(r[c] for c in columns) for r in table.to_pylist())


def collected(frame) -> list[tuple]:
    return sorted(tuple(r) for r in frame.collect())


def plan_text(frame) -> str:
    return frame._jdf.queryExecution().executedPlan().toString()


def planned_names(table, **options) -> set[str]:
    return {os.path.basename(p) for p in native_paths(ReadTarget.of({"path": table.root, **options}))}


def assert_native(frame, names) -> None:
    """The frame is Spark's parquet scan of exactly the data files `names`, without the tarn
    source."""
    plan = plan_text(frame)
    assert "FileScan parquet" in plan and "BatchScan" not in plan and "(Python)" not in plan, plan
    assert {os.path.basename(f) for f in frame.inputFiles()} == names


def vectors_of(table) -> dict[str, int]:
    """Data file name -> how many of its rows the deletion vectors of the latest snapshot mark."""
    files = native_files(ReadTarget.of({"path": table.root}))
    return {f.name: 0 if f.deleted is None else len(f.deleted) for f in files}


@pytest.fixture
def pk_table(catalog):
    """A primary-key table with deletion vectors: a big first commit, then small commits that
    upsert and delete keys of it, so most files carry vectors and the newest ones none."""
    table = catalog.create_table("db.dv_pk", schema=SCHEMA, primary_key=["k"],
                                 options={"bucket": "2", "deletion-vectors.enabled": "true"})
    table.write(rows(range(BASE)))
    rng = np.random.default_rng(11)
    for commit in range(1, 5):
        keys = sorted(set(rng.integers(0, BASE + 200, 60).tolist()))
        table.write(rows(keys, commit))
        table.delete(pa.table({"k": pa.array(sorted(set(rng.integers(0, BASE, 15).tolist())), pa.int64())}))
    return table


@pytest.fixture
def append_table(catalog):
    """An append table with deletion vectors after deletes by filter (two partitions)."""
    schema = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("amount", pa.decimal128(10, 2))])
    table = catalog.create_table("db.dv_append", schema=schema, partition_keys=["kind"],
                                 options={"deletion-vectors.enabled": "true"})
    for start in (0, 1000, 2000):
        ids = list(range(start, start + 1000))
        table.write(pa.table({"id": ids, "kind": ["click" if i % 3 else "view" for i in ids],
                              "amount": [decimal.Decimal(i % 500) / 4 for i in ids]}, schema=schema))
    table.delete(filter=tarn.col("id").isin(list(range(0, 3000, 7))))
    table.delete(filter=(tarn.col("kind") == "view") & (tarn.col("id") > 2500))
    return table


def test_primary_key_table_reads_natively_without_the_deleted_rows(spark, pk_table):
    counts = vectors_of(pk_table)
    assert sum(counts.values()) > 100 and 0 in counts.values()  # vectors on some files, not all
    expected = pk_table.scan().to_arrow()
    frame = tarn.spark.read(spark, pk_table.root)
    assert_native(frame, planned_names(pk_table))
    assert "row_index" in plan_text(frame)
    source = spark.read.format("tarn").load(pk_table.root)
    assert [(f.name, f.dataType) for f in frame.schema] == [(f.name, f.dataType) for f in source.schema]
    assert collected(frame) == tuples(expected) == collected(source)
    assert frame.count() == expected.num_rows


def test_the_mask_is_one_literal_whose_words_plans_do_not_print(spark, pk_table):
    native_read.forget_frames()
    frame = tarn.spark.read(spark, pk_table.root)
    plan = plan_text(frame)
    assert "UnsafeArrayData@" in plan and "Subquery" not in plan, plan
    words = np.concatenate([native_read.deletion_table(g).words for g in native_read.mask_groups(
        native_read.masked_together(native_files(ReadTarget.of({"path": pk_table.root}))))])
    long_words = [str(w) for w in words.tolist() if abs(w) > 10**6]  # a printed array would show them
    assert long_words and not any(w in plan for w in long_words)
    assert collected(frame) == tuples(pk_table.scan().to_arrow())


def test_a_spark_without_the_literal_classes_gets_the_mask_as_a_subquery(spark, pk_table, monkeypatch):
    def missing(*_):
        raise TypeError("'JavaPackage' object is not callable")

    monkeypatch.setattr(native_read, "_unsafe_array_literal", missing)
    native_read.forget_frames()
    frame = tarn.spark.read(spark, pk_table.root)
    native_read.forget_frames()
    assert "Subquery" in plan_text(frame) and "UnsafeArrayData@" not in plan_text(frame)
    assert collected(frame) == tuples(pk_table.scan().to_arrow())
    assert frame.filter("k < 100").count() == pk_table.scan(filter=tarn.col("k") < 100).to_arrow().num_rows


def test_filters_and_columns_on_the_native_read(spark, pk_table):
    expected = pk_table.scan().to_arrow()
    frame = tarn.spark.read(spark, pk_table.root)
    # parquet pushdown skips row groups; the row index still counts from the file's start
    assert collected(frame.filter("k >= 2000 AND v % 3 = 1").select("s", "k")) == sorted(
        (r["s"], r["k"]) for r in expected.to_pylist() if r["k"] >= 2000 and r["v"] % 3 == 1)
    assert collected(tarn.spark.read(spark, pk_table.root, columns="x,k")) == tuples(expected, ["x", "k"])
    assert frame.filter("k < 100").count() == sum(1 for k in expected.column("k").to_pylist() if k < 100)


def test_time_travel_reads_that_snapshots_vectors(spark, pk_table):
    compacted = [snap.id for snap in pk_table.snapshots() if snap.commit_kind == "COMPACT" and snap.index_manifest]
    assert len(compacted) >= 4
    for snapshot in compacted[:-1]:
        options = {"scan.snapshot-id": snapshot}
        frame = tarn.spark.read(spark, pk_table.root, **options)
        assert_native(frame, planned_names(pk_table, **options))
        expected = pk_table.scan_snapshot(pk_table.snapshot(snapshot)).to_arrow()
        assert collected(frame) == tuples(expected)
        assert collected(frame) == collected(spark.read.format("tarn").option("scan.snapshot-id", snapshot)
                                             .load(pk_table.root))


def test_append_table_reads_natively_after_delete_by_filter(spark, append_table):
    counts = vectors_of(append_table)
    assert sum(counts.values()) > 0
    expected = append_table.scan().to_arrow()
    assert all(i % 7 for i in expected.column("id").to_pylist())
    frame = tarn.spark.read(spark, append_table.root)
    assert_native(frame, planned_names(append_table))
    source = spark.read.format("tarn").load(append_table.root)
    assert [(f.name, f.dataType) for f in frame.schema] == [(f.name, f.dataType) for f in source.schema]
    assert collected(frame) == tuples(expected) == collected(source)
    assert collected(frame.filter("kind = 'view'").select("id")) == sorted(
        (r["id"],) for r in expected.to_pylist() if r["kind"] == "view")


def test_tarn_source_applies_the_vectors(spark, pk_table, append_table):
    for table in (pk_table, append_table):
        source = spark.read.format("tarn").load(table.root)
        assert collected(source) == tuples(table.scan().to_arrow())
        assert "BatchScan" in plan_text(source)


def test_after_full_compaction_no_mask_is_needed(spark, pk_table):
    pk_table.compact(full=True)
    assert set(vectors_of(pk_table).values()) == {0}
    frame = tarn.spark.read(spark, pk_table.root)
    assert_native(frame, planned_names(pk_table))
    assert "row_index" not in plan_text(frame)
    assert collected(frame) == tuples(pk_table.scan().to_arrow())


def test_a_snapshot_read_again_reuses_its_frame_and_a_new_commit_does_not(spark, pk_table):
    native_read.forget_frames()
    first = tarn.spark.read(spark, pk_table.root)
    assert tarn.spark.read(spark, pk_table.root) is first  # nothing planned again
    assert tarn.spark.read(spark, pk_table.root, columns="k,v") is not first  # other options: another frame
    pk_table.write(rows(range(0, 40), 9))  # upserts: new vectors on old files
    pk_table.delete(pa.table({"k": pa.array([41, 42], pa.int64())}))
    latest = tarn.spark.read(spark, pk_table.root)
    assert latest is not first
    assert collected(latest) == tuples(pk_table.scan().to_arrow())
    old = tarn.spark.read(spark, pk_table.root, **{"scan.snapshot-id": "8"})
    assert collected(old) == tuples(pk_table.scan(snapshot_id=8).to_arrow())


def test_a_table_made_again_at_the_same_path_is_not_read_from_a_kept_frame(spark, catalog):
    native_read.forget_frames()
    frames = []
    for tag in (1, 2):  # the same snapshot ids, other files
        table = catalog.create_table("db.again", schema=SCHEMA, primary_key=["k"],
                                     options={"bucket": "1", "deletion-vectors.enabled": "true"})
        table.write(rows(range(100), tag))
        table.delete(pa.table({"k": pa.array([tag], pa.int64())}))
        frames.append(tarn.spark.read(spark, table.root))
        assert collected(frames[-1]) == tuples(table.scan().to_arrow())
        catalog.drop_table("db.again")
    assert frames[0] is not frames[1]


def test_kept_frames_are_bounded(spark, pk_table, monkeypatch):
    native_read.forget_frames()
    monkeypatch.setattr(native_read, "_FRAMES_MAX", 2)
    ids = [i for i in range(1, pk_table.latest_snapshot().id + 1)
           if "row_index" in plan_text(tarn.spark.read(spark, pk_table.root, **{"scan.snapshot-id": str(i)}))][-3:]
    native_read.forget_frames()
    frames = [tarn.spark.read(spark, pk_table.root, **{"scan.snapshot-id": str(i)}) for i in ids]
    assert len(ids) == 3 and len(native_read._FRAMES) == 2
    assert tarn.spark.read(spark, pk_table.root, **{"scan.snapshot-id": str(ids[2])}) is frames[2]
    assert tarn.spark.read(spark, pk_table.root, **{"scan.snapshot-id": str(ids[0])}) is not frames[0]
    class Stopped:
        _sc = type("Context", (), {"_jsc": None})()
    native_read._FRAMES[("stopped",)] = (Stopped(), None, 1)
    tarn.spark.read(spark, pk_table.root, **{"scan.snapshot-id": str(ids[1])})
    assert ("stopped",) not in native_read._FRAMES  # a stopped session's frames go with the next kept one
    monkeypatch.setattr(native_read, "_FRAMES_MAX_MASKED_ROWS", 10)  # masks over 10 rows: never kept
    native_read.forget_frames()
    assert tarn.spark.read(spark, pk_table.root) is not tarn.spark.read(spark, pk_table.root)
    assert not native_read._FRAMES


def test_files_split_over_scans_as_spark_would_pack_them(spark, pk_table, monkeypatch):
    # an open cost of one byte: splitting the scan always pays, so every kind of file is spread
    monkeypatch.setattr(native_read, "scan_settings", lambda session: (128 << 20, 1, 2, 2))
    frame = tarn.spark.read(spark, pk_table.root)
    assert plan_text(frame).count("FileScan parquet") >= 2
    assert_native(frame, planned_names(pk_table))
    assert collected(frame) == tuples(pk_table.scan().to_arrow())


def test_files_without_deleted_rows_join_the_masked_scan(spark, pk_table):
    files = native_files(ReadTarget.of({"path": pk_table.root}))
    plain = [f for f in files if f.deleted is None]
    assert plain and sum(f.rows for f in plain) <= sum(f.rows for f in files if f.deleted is not None)
    assert all(f.size == os.path.getsize(f.path) for f in files)
    together = native_read.masked_together(files)
    assert {f.name for f in together} == {f.name for f in files}
    assert all(f.deleted is not None for f in together)
    assert [f.deleted.tolist() for f in together if f.name in {p.name for p in plain}] == [[]] * len(plain)
    frame = tarn.spark.read(spark, pk_table.root)
    assert plan_text(frame).count("FileScan parquet") == 1  # one masked scan, no union
    assert_native(frame, planned_names(pk_table))
    assert collected(frame) == tuples(pk_table.scan().to_arrow())
    # files without deleted rows that hold more rows than the masked ones keep a scan of their own
    big_plain = [replace(f, rows=10 * sum(g.rows for g in files)) for f in plain]
    assert native_read.masked_together([f for f in files if f.deleted is not None] + big_plain) == \
        [f for f in files if f.deleted is not None] + big_plain


def test_scan_grouping():
    mb = 1 << 20
    settings = (128 * mb, 4 * mb, 2, 2)  # Spark's defaults on local[2]
    sizes = [8_383_881, 8_371_942, 252_059, 252_260, 254_894, 254_789]  # a 2-bucket table, 2M rows
    assert native_read.scan_tasks(sizes, settings) == [sizes[0] + sizes[1], sum(sizes[2:])]  # one task reads both
    files = [NativeFile(f"p{i}", f"n{i}", 1000, size) for i, size in enumerate(sizes)]
    groups = native_read.scan_groups(files, settings)
    assert sorted(sorted(f.size for f in g)[-1] for g in groups) == sorted(sizes[:2])  # a scan each
    assert native_read.scan_groups(files, (128 * mb, 1 * mb, 2, 2)) == [files]  # 3 tasks: balanced enough
    small = [NativeFile(f"p{i}", f"n{i}", 10, 30_000 + i) for i in range(8)]
    assert native_read.scan_groups(small, settings) == [small]  # not worth a scan more
    assert native_read.scan_tasks([300 * mb], settings) == [128 * mb, 128 * mb, 44 * mb]  # cut at the split size


def test_reads_the_tarn_source_when_the_mask_would_be_too_big(spark, pk_table, monkeypatch):
    monkeypatch.setattr(native_read, "MAX_MASK_ROWS", 100)
    frame = tarn.spark.read(spark, pk_table.root)
    assert "BatchScan" in plan_text(frame)
    assert collected(frame) == tuples(pk_table.scan().to_arrow())


def test_a_column_named_metadata_leaves_the_read_to_the_tarn_source(spark, catalog):
    schema = pa.schema([("id", pa.int64()), ("_metadata", pa.string())])
    table = catalog.create_table("db.dv_meta", schema=schema, options={"deletion-vectors.enabled": "true"})
    table.write(pa.table({"id": list(range(50)), "_metadata": [f"m{i}" for i in range(50)]}, schema=schema))
    table.delete(filter=tarn.col("id") < 10)
    frame = tarn.spark.read(spark, table.root)
    assert "BatchScan" in plan_text(frame)
    assert collected(frame) == [(i, f"m{i}") for i in range(10, 50)]


def equal_size_files(tmp_path, count: int) -> list[str]:
    """`count` parquet files of the same size and different names (ids 0..9 in each)."""
    data = pa.table({"id": pa.array(range(10), pa.int64())})
    paths = []
    for i in range(count):
        path = str(tmp_path / f"data-{i}.parquet")
        pq.write_table(data, path)
        paths.append(path)
    assert len({os.path.getsize(p) for p in paths}) == 1
    return paths


def scan_of(spark, schema, files):
    return spark.read.schema(schema).parquet(*[f.path for f in files])


def masked_read(spark, schema, files):
    """What `read` scans for files with deleted rows (a filtered scan per group), with the file
    name of each row."""
    frames = [native_read._without_deleted(spark, scan_of(spark, schema, group), group, native_read.deletion_table(group))
              .select("*", "_metadata.file_name") for group in native_read.mask_groups(files)]
    return reduce(lambda a, b: a.union(b), frames)


def test_files_of_equal_size_are_masked_apart(spark, tmp_path):
    paths = equal_size_files(tmp_path, 3)
    deleted = [np.array([0, 9], np.int64), np.array([3], np.int64), np.arange(10, dtype=np.int64)]
    files = [NativeFile(p, os.path.basename(p), 10, os.path.getsize(p), d) for p, d in zip(paths, deleted)]
    assert [len(group) for group in native_read.mask_groups(files)] == [1, 1, 1]
    frame = masked_read(spark, spark.read.parquet(paths[0]).schema, files)
    survivors = frame.select("id", "file_name").collect()
    assert sorted((r.file_name, r.id) for r in survivors) == sorted(
        [("data-0.parquet", i) for i in range(1, 9)] + [("data-1.parquet", i) for i in range(10) if i != 3])
    many = [NativeFile(f"p{i}", f"n{i}", 10, 500, deleted[0]) for i in range(native_read.MAX_SAME_SIZE + 1)]
    assert native_read.mask_groups(many) is None  # a scan per file of one size: left to the tarn source


def test_rows_at_the_edges_of_mask_words(spark, tmp_path):
    deleted = np.array([0, 62, 63, 64, 127, 128, 190, 191, 199], np.int64)  # bit 63 is a long's sign
    paths = []
    for i, count in enumerate((200, 130)):
        path = str(tmp_path / f"edge-{i}.parquet")
        pq.write_table(pa.table({"id": pa.array(range(count), pa.int64())}), path, row_group_size=50)
        paths.append(path)
    files = [NativeFile(paths[0], "edge-0.parquet", 200, os.path.getsize(paths[0]), deleted),
             NativeFile(paths[1], "edge-1.parquet", 130, os.path.getsize(paths[1]), deleted[:5])]
    frame = masked_read(spark, spark.read.parquet(paths[0]).schema, files)
    found = sorted((r.file_name, r.id) for r in frame.select("id", "file_name").collect())
    assert found == sorted([("edge-0.parquet", i) for i in range(200) if i not in deleted] +
                           [("edge-1.parquet", i) for i in range(130) if i not in deleted[:5]])
    # a pushed-down filter skips row groups; the row index still counts from the file's start
    assert sorted(r.id for r in frame.filter("id >= 150").select("id").collect()) == \
        [i for i in range(150, 200) if i not in deleted]


def test_a_mask_that_does_not_fit_the_files_fails_the_query(spark, tmp_path):
    path = equal_size_files(tmp_path, 1)[0]
    schema = spark.read.parquet(path).schema
    size = os.path.getsize(path)
    # a row count below the file's: its rows past it have no place in the mask
    short = [NativeFile(path, "data-0.parquet", 8, size, np.array([1], np.int64))]
    with pytest.raises(Exception, match="outside the planned files"):
        native_read._without_deleted(spark, scan_of(spark, schema, short), short,
                                     native_read.deletion_table(short)).collect()
    # a file whose size the table does not hold
    other = [NativeFile(path, "data-0.parquet", 10, size + 1, np.array([1], np.int64))]
    with pytest.raises(Exception, match="outside the planned files"):
        native_read._without_deleted(spark, scan_of(spark, schema, short), short,
                                     native_read.deletion_table(other)).collect()


def test_deletion_table_layout():
    files = [NativeFile("a", "a", 70, 100, np.array([0, 3, 64, 69], np.int64)),
             NativeFile("b", "b", 3, 91, np.array([1], np.int64))]
    table = native_read.deletion_table(files)
    assert table.modulus == 2 and 100 % 2 != 91 % 2  # the files' slots differ
    assert (table.starts[100 % 2], table.sizes[100 % 2], table.rows[100 % 2]) == (0, 100, 70)
    assert (table.starts[91 % 2], table.sizes[91 % 2], table.rows[91 % 2]) == (2, 91, 3)  # a word of its own
    assert table.words.tolist() == [0b1001, 0b100001, 0b10]
    sizes = np.array([10_000 + 977 * i for i in range(64)], np.int64)
    modulus = native_read.slot_modulus(sizes)
    assert len(set((sizes % modulus).tolist())) == 64


def test_mask_words_match_bit_by_bit_setting():
    rng = np.random.default_rng(7)
    for rows in (1, 64, 65, 200_000):
        deleted = np.unique(rng.integers(0, rows, rows // 3 + 1)).astype(np.int64)
        files = [NativeFile("a", "a", rows, 100, deleted), NativeFile("b", "b", 5, 91, np.array([4], np.int64))]
        table = native_read.deletion_table(files)
        expected = np.zeros(len(table.words), np.uint64)
        for start, positions in ((0, deleted), (table.starts[91 % table.modulus], np.array([4]))):
            for p in positions.tolist():
                expected[start + p // 64] |= np.uint64(1 << (p % 64))
        assert table.words.view(np.uint64).tolist() == expected.tolist()
