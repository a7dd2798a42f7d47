"""Postpone bucket mode (bucket = -2): writes into `bucket-postpone/`, invisible reads, the
postpone compaction (bucket counts, merge order, changelog, deletion vectors), streams,
overwrite, rescale, concurrency, bad input. The random model lives in
tests/test_lsm_model.py (test_postpone_bucket_matches_oracle)."""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tarn
from tarn.paths import POSTPONE_BUCKET

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def make(catalog, **options):
    return catalog.create_table("db.t", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "-2", **options})


def rows(dt, ids, v):
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]})


def read(table, **kw):
    return sorted(table.scan(**kw).to_arrow().to_pylist(), key=lambda r: (r["dt"], r["id"]))


def entries(table):
    return table.live_entries(table.latest_snapshot())


def listing(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "wh"))


def test_writes_land_in_bucket_postpone_unsorted_and_unseen(catalog):
    table = make(catalog)
    table.write(pa.table({"dt": ["a", "a", "b", "a"], "id": pa.array([3, 1, 1, 3], pa.int64()),
                          "v": ["x", "y", "z", "w"]}))
    assert read(table) == []  # invisible until the postpone compaction
    found = entries(table)
    assert {(e.bucket, e.total_buckets) for e in found} == {(POSTPONE_BUCKET, POSTPONE_BUCKET)}
    for e in found:
        assert e.file.level == 0 and e.file.min_sequence_number == e.file.max_sequence_number == -1
        assert e.file.file_name.startswith("data-u-") and "-s-" in e.file.file_name and "-w-" in e.file.file_name
        assert e.file.value_stats_cols == ()  # metadata.stats-mode = none, as Java's postpone writer
    a = next(e for e in found if e.partition == table.live_entries(table.latest_snapshot())[0].partition)
    path = os.path.join(table.root, "dt=a" if a.file.row_count == 3 else "dt=b", "bucket-postpone", a.file.file_name)
    on_disk = pq.read_table(path)
    if a.file.row_count == 3:  # arrival order kept, duplicate keys kept
        assert on_disk.column("_KEY_id").to_pylist() == [3, 1, 3]
        assert on_disk.column("v").to_pylist() == ["x", "y", "w"]
    assert table.latest_snapshot().commit_kind == "APPEND"


def test_compaction_places_rows_with_later_writes_winning(catalog):
    table = make(catalog)
    table.write(rows("a", [1, 2, 3], "first"))
    table.write(rows("a", [2], "second"))
    table.delete(pa.table({"dt": ["a"], "id": pa.array([3], pa.int64())}))
    table.write(rows("b", [1], "b"))
    snapshot = table.compact()
    assert snapshot.commit_kind == "COMPACT"
    assert read(table) == [{"dt": "a", "id": 1, "v": "first1"}, {"dt": "a", "id": 2, "v": "second2"},
                           {"dt": "b", "id": 1, "v": "b1"}]
    placed = entries(table)
    assert all(e.bucket >= 0 and e.total_buckets == 1 for e in placed)  # postpone.default-bucket-num = 1
    table.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2 ** 62)
    assert not any(os.scandir(os.path.join(table.root, "dt=a", "bucket-postpone")))  # freed with their snapshots
    assert table.compact() is None  # nothing waits


def test_bucket_counts_default_existing_and_target_rows(catalog):
    table = make(catalog, **{"postpone.default-bucket-num": "3"})
    table.write(rows("a", list(range(50)), "v"))
    table.compact()
    assert {e.total_buckets for e in entries(table)} == {3}
    table.alter(tarn.SetOption("postpone.default-bucket-num", "5"))
    table.write(rows("a", [100], "v") if False else pa.concat_tables([rows("a", [100], "v"), rows("b", [1], "v")]))
    table.compact()
    by_part = {}
    for e in entries(table):
        by_part.setdefault(e.partition, set()).add(e.total_buckets)
    assert sorted(map(tuple, map(sorted, by_part.values()))) == [(3,), (5,)]  # a keeps 3, b is new
    assert len(read(table)) == 52
    other = catalog.create_table("db.u", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "-2", "postpone.target-row-num-per-bucket": "10"})
    other.write(rows("a", list(range(35)), "v"))
    other.compact()
    assert {e.total_buckets for e in entries(other)} == {4}  # ceil(35 / 10)
    key_buckets = {e.bucket for e in entries(other)}
    assert key_buckets <= {0, 1, 2, 3} and len(key_buckets) > 1


def test_bucket_count_rule_of_paimon_2_1(catalog):
    """An explicit postpone.default-bucket-num wins over the row target; with neither, the
    postponed bytes over postpone.target-size-per-bucket (PostponeBucketNumResolver)."""
    both = catalog.create_table("db.both", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "-2", "postpone.target-row-num-per-bucket": "10",
                                         "postpone.default-bucket-num": "2"})
    both.write(rows("a", list(range(35)), "v"))
    both.compact()
    assert {e.total_buckets for e in entries(both)} == {2}
    sized = catalog.create_table("db.sized", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "-2"})
    sized.write(rows("a", list(range(20)), "v"))
    sized.write(rows("a", list(range(20, 40)), "v"))
    postponed = sum(e.file.file_size for e in entries(sized))
    sized.alter(tarn.SetOption("postpone.target-size-per-bucket", f"{postponed // 3 + 1} b"))
    sized.compact()
    assert {e.total_buckets for e in entries(sized)} == {3}  # ceil(bytes / target)
    assert len(read(sized)) == 40


def test_rows_hash_to_the_bucket_a_fixed_table_puts_them(catalog):
    """The compaction routes a key where a `bucket = N` table would (pypaimon-rust prunes by it)."""
    table = make(catalog, **{"postpone.default-bucket-num": "4"})
    fixed = catalog.create_table("db.f", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "4"})
    data = rows("a", list(range(40)), "v")
    table.write(data)
    fixed.write(data)
    table.compact(full=True)
    fixed.compact(full=True)

    def where(t):
        return {(e.bucket, e.file.row_count) for e in entries(t)}
    assert where(table) == where(fixed)
    for k in (0, 7, 39):
        assert read(table, filter=f"id = {k}") == [{"dt": "a", "id": k, "v": f"v{k}"}]


def test_retracts_the_merge_engine_refuses_fail_before_writing(catalog):
    table = make(catalog, **{"merge-engine": "partial-update"})
    table.write(rows("a", [1], "v"))
    before = listing(table.root)
    with pytest.raises(tarn.TarnError):
        table.write(rows("a", [1], "v"), row_kind="-D")
    assert listing(table.root) == before
    first = catalog.create_table("db.fr", SCHEMA, primary_key=["dt", "id"], options={"bucket": "-2",
                                                                                       "merge-engine": "first-row"})
    with pytest.raises(tarn.TarnError):
        first.write(rows("a", [1], "v"), row_kind="-D")
    assert first.latest_snapshot() is None


def test_merge_engines_apply_at_the_compaction(catalog):
    table = catalog.create_table("db.agg", pa.schema([("id", pa.int64()), ("n", pa.int64())]), primary_key=["id"],
                                 options={"bucket": "-2", "merge-engine": "aggregation",
                                          "fields.n.aggregate-function": "sum"})
    table.write({"id": [1, 2], "n": [1, 10]})
    table.write({"id": [1, 1], "n": [5, 7]})
    table.compact()
    table.write({"id": [2], "n": [1]})
    table.compact()
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "n": 13},
                                                                                   {"id": 2, "n": 11}]


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_changelog_of_the_compaction(catalog, producer):
    table = make(catalog, **{"changelog-producer": producer})
    table.write(rows("a", [1, 2], "v"))
    assert table.changes(table.latest_snapshot().id).num_rows == 0  # a postpone write produces none
    table.compact()
    table.write(rows("a", [2], "w"))
    table.compact()
    changes = table.changes(table.latest_snapshot().id).to_pylist()
    got = [(c["_ROW_KIND"], c["id"], c["v"]) for c in changes]
    if producer == "input":
        assert got == [("+I", 2, "w2")]
    else:
        assert got == [("-U", 2, "v2"), ("+U", 2, "w2")]


def test_stream_without_producer_reads_postponed_rows_as_written(catalog):
    table = make(catalog)
    table.write(rows("a", [1, 1], "v"), row_kind=["+I", "-D"])
    got = table.changes(table.latest_snapshot().id).to_pylist()
    assert [(c["_ROW_KIND"], c["id"]) for c in got] == [("+I", 1), ("-D", 1)]


def test_deletion_vectors_with_postpone(catalog):
    table = make(catalog, **{"deletion-vectors.enabled": "true"})
    table.write(rows("a", [1, 2, 3], "v"))
    table.compact(full=True)
    table.write(rows("a", [2], "w"))
    table.delete(pa.table({"dt": ["a"], "id": pa.array([3], pa.int64())}))
    table.compact()
    assert read(table) == [{"dt": "a", "id": 1, "v": "v1"}, {"dt": "a", "id": 2, "v": "w2"}]


def test_overwrite_replaces_postponed_rows_too(catalog):
    table = make(catalog)
    table.write(rows("a", [1, 2], "v"))
    table.compact()
    table.write(rows("a", [3], "late"))
    table.overwrite(rows("a", [9], "new"))
    table.compact()
    assert read(table) == [{"dt": "a", "id": 9, "v": "new9"}]


def test_rescale_rewrites_placed_rows_and_keeps_postponed_ones(catalog):
    table = make(catalog)
    table.write(rows("a", list(range(20)), "v"))
    table.compact()
    table.write(rows("a", [5], "late"))
    with pytest.raises(tarn.InvalidArgument, match="bucket"):
        table.rescale()
    table.rescale(bucket=3)
    assert table.schema().options["bucket"] == "-2"
    assert {e.total_buckets for e in entries(table) if e.bucket >= 0} == {3}
    assert [e.bucket for e in entries(table) if e.bucket < 0] == [POSTPONE_BUCKET]
    assert len(read(table)) == 20 and read(table, filter="id = 5")[0]["v"] == "v5"
    table.compact()
    assert read(table, filter="id = 5")[0]["v"] == "late5"
    assert {e.total_buckets for e in entries(table)} == {3}


def test_level0_files_of_a_fixed_bucket_write_are_compacted(catalog):
    """Another engine's batch write of a postpone table goes straight to fixed buckets
    (Java's postpone.batch-write-fixed-bucket): the next compaction compacts those files."""
    table = make(catalog)
    table.write(rows("a", [1, 2], "v"))
    table.compact(full=True)
    fixed = table.scan().table  # write level-0 files into the placed buckets as a fixed-bucket writer does
    writer = tarn.table.Table(fixed.file_io, fixed.root)
    from tarn.write.writer import TableWriter, restore_from
    from tarn.options import Options
    import dataclasses
    schema = dataclasses.replace(writer.schema(), options={**writer.schema().options, "bucket": "1",
                                                           "write-only": "true"})
    w = TableWriter(writer.file_io, writer.root, writer.name, schema, Options(schema.options),
                    restore_from(writer, schema), writer.schema_by_id)
    w.write(rows("a", [2], "fixed"))
    writer.commit(w.prepare_commit())
    assert any(e.file.level == 0 and e.bucket == 0 for e in entries(table))
    table.compact()
    assert read(table) == [{"dt": "a", "id": 1, "v": "v1"}, {"dt": "a", "id": 2, "v": "fixed2"}]


def test_a_write_racing_a_compaction_loses_nothing(catalog):
    table = make(catalog)
    for i in range(4):
        table.write(rows("a", [i], "v"))
    errors = []

    def writer():
        try:
            for i in range(4, 10):
                catalog.load_table("db.t").write(rows("a", [i], "v"))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    thread = threading.Thread(target=writer)
    thread.start()
    table.compact()
    thread.join()
    assert not errors
    table.compact()
    assert [r["id"] for r in read(table)] == list(range(10))


def test_postpone_needs_a_primary_key(catalog):
    with pytest.raises(tarn.TarnError, match="postpone"):
        catalog.create_table("db.a", SCHEMA, options={"bucket": "-2"})


@pytest.mark.parametrize("engine", [{}, {"merge-engine": "partial-update"},
                                    {"merge-engine": "aggregation", "fields.v.aggregate-function": "max"},
                                    {"sequence.field": "id2"}])
def test_merge_on_read_shows_what_the_compaction_will(catalog, engine):
    """postpone.merge-on-read: a batch read merges the postponed rows into the placed ones and
    equals the read after the postpone compaction (filters and projections too); streams do not."""
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("id2", pa.int64()), ("v", pa.string())])
    table = catalog.create_table("db.m", schema, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "-2", "postpone.merge-on-read": "true", **engine})

    def batch(ids, v, seq=0):
        return pa.table({"dt": ["a"] * len(ids), "id": pa.array(ids, pa.int64()),
                         "id2": pa.array([seq] * len(ids), pa.int64()), "v": [f"{v}{i}" if v else None for i in ids]},
                        schema=schema)
    table.write(batch([1, 2, 3], "x", seq=5))
    table.write(pa.concat_tables([batch([1], "y", seq=6), batch([4], "z", seq=6)]))
    table.compact()
    table.write(batch([2], "w", seq=7))
    table.write(batch([3], None, seq=1))  # partial-update keeps 3's value; an older sequence.field loses
    table.write(pa.table({"dt": ["b"], "id": pa.array([9], pa.int64()), "id2": pa.array([1], pa.int64()),
                          "v": ["b9"]}, schema=schema))
    if not engine:
        table.delete(pa.table({"dt": ["a"], "id": pa.array([4], pa.int64())}))
    merged = table.scan().to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")])
    filtered = table.scan(filter="v = 'w2'", columns=["id", "v"]).to_arrow()
    counted = table.scan().count()
    table.compact()
    after = table.scan().to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")])
    assert merged.to_pylist() == after.to_pylist()
    assert counted == after.num_rows
    assert filtered.to_pylist() == [r for r in after.select(["id", "v"]).to_pylist() if r["v"] == "w2"]
    assert any(r["dt"] == "b" for r in merged.to_pylist())
