"""Compaction of append tables (tarn/ops/append_compaction.py): which files Paimon's rules pick in
fixed-bucket and unaware-bucket tables, rows and their order kept, sequence ranges, COMPACT
snapshots, deletion vectors dropped with their files, concurrent commits, and the writes and
reads of fixed-bucket append tables with a bucket key."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

import tarn
from tarn.ops import append_compaction as ac
from tarn.bucket import bucket_ids
from tarn.errors import CommitConflict
from tarn.meta.manifest import APPEND_SOURCE, COMPACT_SOURCE
from tarn.types import INT
from tests.helpers import data_file_meta
from tests.interop.javaref import javaref  # noqa: F401,F811  (session fixture)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("s", pa.string())])


def rows(ids, part="a") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [part] * len(ids), "s": [f"s{i}" for i in ids]},
                    schema=SCHEMA)


def live(table):
    """(partition values, bucket, DataFileMeta) of every live data file, in read order."""
    out = []
    for split in table.scan().plan():
        out.extend((split.partition, split.bucket, m) for m in split.files)
    return out


def ids_of(table, **scan) -> list[int]:
    return table.scan(**scan).to_arrow().column("id").to_pylist()


def unaware(catalog, name="t", **options):
    return catalog.create_table(name, schema=SCHEMA, partition_keys=["p"], options=options)


def bucketed(catalog, name="t", buckets=2, **options):
    return catalog.create_table(name, schema=SCHEMA, options={"bucket": str(buckets), "bucket-key": "id", **options})


def contiguous_outputs(table, snapshot) -> None:
    """Every bucket's files after `snapshot` hold disjoint sequence ranges, each file's range
    exactly its row count long (outputs numbered on from their first input)."""
    per_bucket: dict = {}
    for entry in table.live_entries(snapshot):
        per_bucket.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    for files in per_bucket.values():
        for m in files:
            assert m.max_sequence_number - m.min_sequence_number + 1 == m.row_count
        ranges = sorted((m.min_sequence_number, m.max_sequence_number) for m in files)
        for (_, hi), (lo, _) in zip(ranges, ranges[1:]):
            assert lo > hi, f"overlapping sequence ranges {ranges}"


# ---------------------------------------------------------------------------------------------
# unaware buckets (bucket = -1)


def test_small_files_of_each_partition_merge_into_one_compact_snapshot(catalog):
    table = unaware(catalog)
    for n in range(6):
        table.write(pa.concat_tables([rows(range(n * 10, n * 10 + 10), "a"), rows(range(100 + n * 5, 105 + n * 5), "b")]))
    before = ids_of(table)
    assert len(live(table)) == 12
    snapshot = table.compact()
    assert snapshot.commit_kind == "COMPACT" and snapshot.id == 7
    files = live(table)
    assert len(files) == 2 and {m.file_source for _, _, m in files} == {COMPACT_SOURCE}
    assert ids_of(table) == before  # same rows, same order: partition by partition, in sequence order
    for _, bucket, m in files:
        assert bucket == 0 and m.min_sequence_number == 0 and m.max_sequence_number == m.row_count - 1
    assert table.compact() is None  # one file per partition: nothing is due
    assert table.latest_snapshot().id == 7


def test_fewer_files_than_min_file_num_stay(catalog):
    table = unaware(catalog, **{"compaction.min.file-num": "4"})
    for n in range(3):
        table.write(rows(range(n * 10, n * 10 + 10)))
    assert table.compact() is None
    table.write(rows(range(30, 40)))
    assert table.compact().commit_kind == "COMPACT"
    assert len(live(table)) == 1 and ids_of(table) == list(range(40))


def test_large_files_are_no_candidates_and_bins_close_at_twice_the_target(catalog):
    table = unaware(catalog, **{"compaction.min.file-num": "2", "source.split.open-file-cost": "0 b"})
    table.write(rows(range(20_000)))  # a big file
    big = live(table)[0][2]
    # the small bound (0.7 x target) just below the big file's size
    table.alter(tarn.SetOption("target-file-size", str(int(big.file_size / 0.71))))
    for n in range(6):
        table.write(rows(range(100_000 + n * 10, 100_010 + n * 10)))
    smalls = [m for _, _, m in live(table) if m.file_name != big.file_name]
    before = sorted(ids_of(table))
    table.compact()
    after = live(table)
    assert big.file_name in {m.file_name for _, _, m in after}  # the large file stays
    assert not {m.file_name for m in smalls} & {m.file_name for _, _, m in after}  # every small one merged
    assert sorted(ids_of(table)) == before


def test_bins_of_the_coordinator(catalog):
    """Packing in sequence order: a bin closes at >1 files and 2 x target bytes (open-file cost
    counted per file); the rest is a bin only with min.file-num files."""
    settings = ac.Settings(target=100, small=70, min_files=3, file_num_limit=100, delete_ratio=0.2,
                           open_file_cost=10, force_all=False, vectors=False)
    files = [ac.Input(data_file_meta(file_size=s, min_sequence_number=i, max_sequence_number=i))
             for i, s in enumerate([60, 60, 60, 60, 5, 5])]
    bins = ac._pack(files, settings)
    assert [[i.meta.file_size for i in b] for b in bins] == [[60, 60, 60], [60, 5, 5]]
    settings.min_files = 4
    assert [[i.meta.file_size for i in b] for b in ac._pack(files, settings)] == [[60, 60, 60]]


def test_file_num_limit_bounds_the_candidates(catalog):
    table = unaware(catalog, **{"compaction.min.file-num": "2", "compaction.file-num-limit": "3"})
    for n in range(5):
        table.write(rows(range(n * 10, n * 10 + 10)))
    table.compact()
    files = sorted(live(table), key=lambda f: f[2].min_sequence_number)
    assert [m.row_count for _, _, m in files] == [30, 10, 10]  # the first three candidates only
    assert ids_of(table) == list(range(50))


def test_output_rolls_at_the_target_file_size(catalog):
    table = unaware(catalog, **{"compaction.min.file-num": "2"})
    for n in range(8):
        table.write(rows(range(n * 5000, n * 5000 + 5000)))
    sizes = [m.file_size for _, _, m in live(table)]
    table.alter(tarn.SetOption("target-file-size", str(int(sum(sizes) / 3))))
    table.compact(full=True)
    files = sorted((m for _, _, m in live(table)), key=lambda m: m.min_sequence_number)
    assert 2 <= len(files) <= 5, [m.file_size for m in files]
    assert ids_of(table) == list(range(40_000))
    contiguous_outputs(table, table.latest_snapshot())


def test_partitions_filter(catalog):
    table = unaware(catalog)
    for n in range(5):
        table.write(pa.concat_tables([rows([n], "a"), rows([10 + n], "b")]))
    table.compact(partitions=[{"p": "b"}])
    files_b = [m for _, _, m in live(table) if m.file_source == COMPACT_SOURCE]
    assert len(files_b) == 1 and files_b[0].row_count == 5
    assert len(live(table)) == 6
    assert sorted(ids_of(table)) == list(range(5)) + list(range(10, 15))


def test_full_compaction_of_an_unaware_table(catalog):
    table = unaware(catalog)
    for n in range(3):  # fewer than min.file-num: a normal compaction leaves them
        table.write(rows(range(n * 10, n * 10 + 10)))
    assert table.compact() is None
    snapshot = table.compact(full=True)
    assert snapshot.commit_kind == "COMPACT" and len(live(table)) == 1
    assert ids_of(table) == list(range(30))
    assert table.compact(full=True) is None  # one file without deleted rows: nothing to do


def test_compaction_reads_older_schemas(catalog):
    table = unaware(catalog)
    for n in range(5):
        table.write(rows(range(n * 3, n * 3 + 3)))
    table.alter(tarn.AddColumn("extra", INT()))
    table.write(pa.table({"id": pa.array([99], pa.int64()), "p": ["a"], "s": ["x"], "extra": pa.array([7], pa.int32())}))
    table.compact()
    (only,) = live(table)
    assert only[2].schema_id == table.schema().id
    got = table.scan().to_arrow().to_pylist()
    assert [r["id"] for r in got] == list(range(15)) + [99]
    assert [r["extra"] for r in got] == [None] * 15 + [7]


# ---------------------------------------------------------------------------------------------
# fixed buckets (bucket = N with bucket-key)


def test_fixed_bucket_append_writes_rows_by_the_bucket_key_hash(catalog):
    table = bucketed(catalog, buckets=3)
    data = rows(range(300))
    table.write(data)
    expected = bucket_ids(data, [table.schema().field("id")], 3)
    for split in table.scan().plan():
        got = table.scan().reader().read(split).column("id").to_numpy()
        assert set(got) == set(np.flatnonzero(expected == split.bucket)), f"bucket {split.bucket}"
    assert sorted(ids_of(table)) == list(range(300))
    assert {m.file_source for _, _, m in live(table)} == {APPEND_SOURCE}


def test_fixed_bucket_windows_keep_the_order(catalog):
    table = bucketed(catalog)
    for n in range(12):
        table.write(rows(range(n * 20, n * 20 + 20)))
    before = ids_of(table)
    per_bucket_before = {}
    for _, bucket, m in live(table):
        per_bucket_before[bucket] = per_bucket_before.get(bucket, 0) + 1
    assert per_bucket_before == {0: 12, 1: 12}
    snapshot = table.compact()
    assert snapshot.commit_kind == "COMPACT"
    assert ids_of(table) == before  # each bucket read in sequence order, as before
    contiguous_outputs(table, snapshot)
    counts = {}
    for _, bucket, m in live(table):
        counts[bucket] = counts.get(bucket, 0) + 1
    # windows of 5: files 1-5 -> one small output, taken again with files 6-9 (Java's writer
    # re-queues its small last output); that output and files 10-12 are too few for a window
    assert counts == {0: 4, 1: 4}
    assert table.compact() is None


def test_bucket_window_rules():
    """pickCompactBefore: files in sequence order; a window is picked at min.file-num files; its
    first file leaves when the window reaches 2 x target; a small output is offered again."""
    settings = ac.Settings(target=100, small=70, min_files=3, file_num_limit=100, delete_ratio=0.2,
                           open_file_cost=0, force_all=False, vectors=False)

    def bucket_of(sizes):
        files = [ac.Input(data_file_meta(file_size=s, min_sequence_number=i * 10, max_sequence_number=i * 10 + 9))
                 for i, s in enumerate(sizes)]
        return ac._Bucket(b"", 0, 2, files)

    def picked(sizes):
        return [[i.meta.min_sequence_number // 10 for i in g.files] for g in ac._bucket_windows(bucket_of(sizes), settings)]

    assert picked([10, 10]) == []
    assert picked([10, 10, 10, 10, 10]) == [[0, 1, 2, 3, 4]]  # 30 < 70: offered again with 3 and 4
    assert picked([150, 60, 10, 10]) == [[1, 2, 3]]  # 150 + 60 >= 200: the large file leaves
    assert picked([50, 30, 10, 60, 60, 60]) == [[0, 1, 2], [3, 4, 5]]  # 90 >= 70: done, not offered again


def test_full_compaction_of_fixed_buckets_follows_full_compact_task():
    settings = ac.Settings(target=100, small=70, min_files=5, file_num_limit=100, delete_ratio=0.2,
                           open_file_cost=0, force_all=False, vectors=False)

    def full(sizes):
        files = [ac.Input(data_file_meta(file_size=s, min_sequence_number=i, max_sequence_number=i))
                 for i, s in enumerate(sizes)]
        return [[i.meta.min_sequence_number for i in g.files] for g in ac._full_bucket(ac._Bucket(b"", 0, 1, files), settings)]

    assert full([10, 10]) == []  # fewer than 3 files
    assert full([100, 100, 10, 10, 10]) == [[2, 3, 4]]  # leading large files stay
    assert full([100, 10, 100, 100, 10]) == []  # small ones do not outnumber large ones
    assert full([10, 100, 10, 10]) == [[0, 1, 2, 3]]
    settings.force_all = True
    assert full([100, 100]) == [[0, 1]]


def test_full_compaction_of_a_fixed_bucket_table(catalog):
    table = bucketed(catalog, buckets=2)
    for n in range(4):
        table.write(rows(range(n * 50, n * 50 + 50)))
    before = ids_of(table)
    assert table.compact() is None  # 4 files per bucket < min.file-num
    snapshot = table.compact(full=True)
    assert snapshot.commit_kind == "COMPACT"
    assert sorted(b for _, b, _ in live(table)) == [0, 1]
    assert ids_of(table) == before
    contiguous_outputs(table, snapshot)
    table.write(rows(range(200, 260)))  # new files continue the bucket's sequence
    contiguous_outputs(table, table.latest_snapshot())
    assert ids_of(table)[-60:] != before[-60:]


def test_forced_full_rewrite_rewrites_large_files_too(catalog):
    table = bucketed(catalog, buckets=1, **{"compaction.force-rewrite-all-files": "true"})
    table.write(rows(range(10)))
    table.compact(full=True)
    (only,) = live(table)
    assert only[2].file_source == COMPACT_SOURCE and ids_of(table) == list(range(10))


# ---------------------------------------------------------------------------------------------
# deletion vectors


def dv_unaware(catalog, **options):
    return unaware(catalog, **{"deletion-vectors.enabled": "true", **options})


def index_files(table):
    return table.system_table("table_indexes").to_arrow().to_pylist()


def test_rows_marked_deleted_are_not_copied_and_their_vectors_leave(catalog):
    table = dv_unaware(catalog)
    for n in range(5):
        table.write(rows(range(n * 10, n * 10 + 10)))
    table.delete(filter=tarn.col("id").isin([3, 14, 15, 49]))
    table.write(rows([50], "b"))  # another partition keeps no vectors
    assert len(index_files(table)) == 1
    expected = [i for i in range(50) if i not in (3, 14, 15, 49)] + [50]
    table.compact()
    assert ids_of(table) == expected
    a_files = [m for part, _, m in live(table) if m.file_source == COMPACT_SOURCE]
    assert len(a_files) == 1 and a_files[0].row_count == 46
    assert a_files[0].min_sequence_number == 0 and a_files[0].max_sequence_number == 45
    assert index_files(table) == [] and table.latest_snapshot().index_manifest is None


def test_vectors_of_files_not_compacted_stay_in_a_new_index_file(catalog):
    table = dv_unaware(catalog, **{"compaction.min.file-num": "3"})
    table.write(rows(range(20_000)))  # big: no candidate unless mostly deleted
    big = live(table)[0][2]
    table.alter(tarn.SetOption("target-file-size", str(int(big.file_size / 0.71))))
    for n in range(3):
        table.write(rows(range(30_000 + n * 10, 30_010 + n * 10)))
    table.delete(filter=(tarn.col("id") < 5) | tarn.col("id").isin([30_001, 30_011]))
    (old_index,) = index_files(table)
    table.compact()
    names = {m.file_name for _, _, m in live(table)}
    assert big.file_name in names
    (new_index,) = index_files(table)
    assert new_index["file_name"] != old_index["file_name"]
    assert [r["f0"] for r in new_index["dv_ranges"]] == [big.file_name]
    expected = [i for i in range(5, 20_000)] + [i for i in range(30_000, 30_030) if i not in (30_001, 30_011)]
    assert sorted(ids_of(table)) == expected


def test_files_over_the_delete_ratio_are_rewritten_whatever_their_size(catalog):
    table = dv_unaware(catalog)
    table.write(rows(range(20_000)))
    big = live(table)[0][2]
    table.alter(tarn.SetOption("target-file-size", str(int(big.file_size / 0.71))))
    table.delete(filter=tarn.col("id") < 4000)  # exactly 20%: not over the threshold
    assert table.compact() is None
    table.delete(filter=tarn.col("id") == 4000)
    snapshot = table.compact()
    assert snapshot.commit_kind == "COMPACT"
    (only,) = live(table)
    assert only[2].row_count == 15_999 and only[2].min_sequence_number == 0
    assert ids_of(table) == list(range(4001, 20_000)) and index_files(table) == []


def test_fixed_bucket_dv_table(catalog):
    table = bucketed(catalog, buckets=2, **{"deletion-vectors.enabled": "true",
                                            "compaction.delete-ratio-threshold": "0.99"})
    for n in range(6):
        table.write(rows(range(n * 20, n * 20 + 20)))
    table.delete(filter=tarn.col("id").isin(list(range(0, 120, 4))))
    before = ids_of(table)
    assert len(index_files(table)) == 2
    table.compact()  # windows of 5 files per bucket: their vectors go, the 6th file's stay
    assert ids_of(table) == before
    files = {m.file_name: m for _, _, m in live(table)}
    assert sorted(m.file_source for m in files.values()) == [APPEND_SOURCE, APPEND_SOURCE, COMPACT_SOURCE, COMPACT_SOURCE]
    kept = [r["f0"] for index in index_files(table) for r in index["dv_ranges"]]
    assert kept and all(files[name].file_source == APPEND_SOURCE for name in kept)
    table.compact(full=True)
    assert ids_of(table) == before and index_files(table) == []
    contiguous_outputs(table, table.latest_snapshot())


def test_fixed_bucket_files_over_the_delete_ratio_are_rewritten_alone(catalog):
    table = bucketed(catalog, buckets=1, **{"deletion-vectors.enabled": "true"})
    for n in range(3):
        table.write(rows(range(n * 10, n * 10 + 10)))
    table.delete(filter=tarn.col("id").isin([11, 12, 13, 25]))  # 30% of the second file, 10% of the third
    first, second, third = (m for _, _, m in live(table))
    table.compact()
    after = [m for _, _, m in live(table)]
    assert [m.file_name for m in after][::2] == [first.file_name, third.file_name]
    assert after[1].file_source == COMPACT_SOURCE and after[1].row_count == 7
    assert (after[1].min_sequence_number, after[1].max_sequence_number) == (10, 16)
    assert [r["f0"] for index in index_files(table) for r in index["dv_ranges"]] == [third.file_name]
    assert ids_of(table) == [i for i in range(30) if i not in (11, 12, 13, 25)]


# ---------------------------------------------------------------------------------------------
# concurrent commits


def test_an_append_during_compaction_loses_nothing(catalog):
    table = unaware(catalog)
    for n in range(5):
        table.write(rows(range(n * 10, n * 10 + 10)))
    groups = ac.plan(table)
    messages = [ac.rewrite(table, g) for g in groups]
    table.write(rows(range(50, 60)))  # lands while the compaction runs
    snapshot = table.commit(ac.finish(table, messages))
    assert snapshot.commit_kind == "COMPACT"
    assert sorted(ids_of(table)) == list(range(60))
    assert len(live(table)) == 2


def test_a_compaction_whose_inputs_vanished_fails_and_keeps_every_row(catalog):
    table = unaware(catalog)
    for n in range(5):
        table.write(rows(range(n * 10, n * 10 + 10)))
    messages = [ac.rewrite(table, g) for g in ac.plan(table)]
    outputs = {m.file_name for msg in messages for m in msg.compact_after}
    table.compact()  # another job compacts the same files first
    with pytest.raises(CommitConflict):
        table.commit(ac.finish(table, messages))
    assert sorted(ids_of(table)) == list(range(50))
    on_disk = {info.path.rsplit("/", 1)[-1] for info in table.file_io.list_files(table.root, recursive=True)}
    assert not outputs & on_disk, "the failed compaction's files were left behind"


def test_a_delete_during_compaction_makes_it_fail(catalog):
    table = dv_unaware(catalog)
    for n in range(5):
        table.write(rows(range(n * 10, n * 10 + 10)))
    messages = [ac.rewrite(table, g) for g in ac.plan(table)]
    table.delete(filter=tarn.col("id") == 7)  # the bucket's first vector, made meanwhile
    with pytest.raises(CommitConflict):
        table.commit(ac.finish(table, messages))
    assert 7 not in ids_of(table) and len(ids_of(table)) == 49


def test_appends_from_another_thread_while_compacting(catalog):
    table = unaware(catalog, **{"commit.max-retries": "50", "compaction.min.file-num": "2"})
    table.write(rows(range(10)))
    stop = threading.Event()
    written = [list(range(10))]
    errors = []

    def appender():
        writer_table = catalog.load_table("t")
        n = 1
        try:
            while not stop.is_set() and n < 40:
                writer_table.write(rows(range(n * 10, n * 10 + 10)))
                written.append(list(range(n * 10, n * 10 + 10)))
                n += 1
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=appender)
    thread.start()
    compactions = conflicts = 0
    try:
        for _ in range(30):
            try:
                if table.compact() is not None:
                    compactions += 1
            except CommitConflict:
                conflicts += 1
            if not thread.is_alive():
                break
    finally:
        stop.set()
        thread.join()
    assert not errors
    if compactions == 0:  # every attempt raced the appender (a loaded machine): once more, alone
        compactions += table.compact() is not None
    assert compactions >= 1
    assert sorted(ids_of(table)) == sorted(i for chunk in written for i in chunk)


# ---------------------------------------------------------------------------------------------
# pypaimon 2.1 (tests/interop/peer.py): it reads tarn's compacted tables; tarn compacts its tables


def _ipc(path, table: pa.Table) -> str:
    import pyarrow.ipc as ipc

    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)
    return str(path)


def _peer_rows(tmp_path, root, name="out", snapshot_id=None) -> list[tuple]:
    import pyarrow.ipc as ipc

    from tests.interop.pypaimon_env import run_peer

    out = tmp_path / f"{name}.arrow"
    run_peer("read", {"table_path": root, "out_ipc": str(out), "snapshot_id": snapshot_id})
    with pa.memory_map(str(out)) as source:
        got = ipc.open_file(source).read_all()
    return sorted((r["id"], r["p"], r["s"]) for r in got.to_pylist())


def _tarn_rows(table, **scan) -> list[tuple]:
    return sorted((r["id"], r["p"], r["s"]) for r in table.scan(**scan).to_arrow().to_pylist())


@pytest.mark.interop
@pytest.mark.parametrize("options", [{}, {"bucket": "2", "bucket-key": "id"}, {"deletion-vectors.enabled": "true"}],
                         ids=["unaware", "fixed-bucket", "deletion-vectors"])
def test_pypaimon_reads_a_compacted_table(tmp_path, catalog, options):
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["p"], options=options)
    for n in range(6):
        table.write(pa.concat_tables([rows(range(n * 10, n * 10 + 10), "a"), rows(range(200 + n, 201 + n), "b")]))
    if options.get("deletion-vectors.enabled"):
        table.delete(filter=tarn.col("id").isin([1, 2, 33, 203]))
    before = table.latest_snapshot().id
    table.compact()
    assert table.latest_snapshot().commit_kind == "COMPACT"
    assert _peer_rows(tmp_path, table.root) == _tarn_rows(table)
    assert _peer_rows(tmp_path, table.root, "before", before) == _tarn_rows(table, snapshot_id=before)
    table.compact(full=True)
    assert _peer_rows(tmp_path, table.root, "full") == _tarn_rows(table)


@pytest.mark.interop
@pytest.mark.parametrize("options", [{}, {"bucket": "3", "bucket-key": "id"}], ids=["unaware", "fixed-bucket"])
def test_tarn_compacts_a_table_pypaimon_wrote(tmp_path, options):
    from tests.interop.pypaimon_env import run_peer

    warehouse = str(tmp_path / "wh")
    commits = [rows(range(n * 10, n * 10 + 10), "a" if n % 2 else "b") for n in range(6)]
    run_peer("write", {
        "warehouse": warehouse, "table": "db.app",
        "schema": [["id", "BIGINT"], ["p", "STRING"], ["s", "STRING"]],
        "primary_keys": [], "partition_keys": ["p"], "options": options,
        "commits": [{"kind": "write", "rows_ipc": _ipc(tmp_path / f"{n}.arrow", c)} for n, c in enumerate(commits)],
    })
    table = tarn.Catalog(warehouse).load_table("db.app")
    expected = sorted((r["id"], r["p"], r["s"]) for c in commits for r in c.to_pylist())
    assert _tarn_rows(table) == expected
    if options:  # pypaimon put each row in the bucket tarn's (Paimon's) hash of the bucket key gives
        for split in table.scan().plan():
            got = table.scan().reader().read(split)
            assert set(bucket_ids(got, [table.schema().field("id")], 3)) == {split.bucket}
    snapshot = table.compact(full=True)
    assert snapshot.commit_kind == "COMPACT"
    assert _tarn_rows(table) == expected == _peer_rows(tmp_path, table.root)
    assert {m.file_source for _, _, m in live(table)} == {COMPACT_SOURCE}
    table.write(rows(range(100, 105), "a"))  # tarn keeps writing; pypaimon reads it all
    assert _peer_rows(tmp_path, table.root, "more") == _tarn_rows(table)


# ---------------------------------------------------------------------------------------------
# Java Paimon 1.0 (tests/interop/javaref.py) reads tarn's compacted tables and writes on


@pytest.mark.interop
@pytest.mark.parametrize("options", [{"bucket": "2", "bucket-key": "id"}, {}], ids=["fixed-bucket", "unaware"])
def test_java_reads_a_compacted_dv_table_and_writes_on(tmp_path, catalog, javaref, options):  # noqa: F811
    import json

    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["p"],
                                 options={"deletion-vectors.enabled": "true", **options})
    for n in range(7):
        table.write(pa.concat_tables([rows(range(n * 10, n * 10 + 10), "a"), rows(range(200 + n, 201 + n), "b")]))
    table.delete(filter=tarn.col("id").isin([1, 2, 33, 68, 203]))
    table.compact()
    assert table.latest_snapshot().commit_kind == "COMPACT"
    expected = _tarn_rows(table)
    files = {m.file_name: m for _, _, m in live(table)}
    ours = {r["f0"] for i in index_files(table) for r in i["dv_ranges"]}
    more = [{"id": 900 + i, "p": "a", "s": f"s{900 + i}"} for i in range(5)]
    answers = javaref.run_many([
        ["read", table.root], ["index-files", table.root],
        ["write", table.root, "--rows", javaref.rows_arg(more, tmp_path)],
        ["delete", table.root, "--filter", json.dumps({"op": "in", "col": "id", "values": [4, 901]})],
        ["read", table.root]])
    read, index = answers[0], answers[1]
    assert sorted((r["id"], r["p"], r["s"]) for r in read["rows"]) == expected
    java = {}  # data file -> deleted rows, as Java reads the index files tarn rewrote
    for entry in index["index_files"]:
        assert entry["kind"] == "ADD" and entry["file_exists"] and "read_error" not in entry, entry
        java.update((d["data_file"], d["cardinality"]) for d in entry["deletion_vectors"])
    assert set(java) == ours and ours <= set(files)
    assert all(files[name].file_source == APPEND_SOURCE for name in java)  # compacted files keep no vector
    final = sorted([r for r in expected if r[0] != 4] + [(r["id"], r["p"], r["s"]) for r in more if r["id"] != 901])
    assert sorted((r["id"], r["p"], r["s"]) for r in answers[-1]["rows"]) == final
    table = tarn.Catalog(catalog.warehouse).load_table("db.t")
    assert _tarn_rows(table) == final
    table.compact(full=True)  # tarn compacts what Java wrote on top of its compaction
    assert _tarn_rows(table) == final
    assert sorted((r["id"], r["p"], r["s"]) for r in javaref.run("read", table.root)["rows"]) == final
