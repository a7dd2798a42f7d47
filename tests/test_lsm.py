"""The LSM tree end to end: level-0 flushes, universal compaction, full compaction, restore."""

import os

import pyarrow as pa
import pyarrow.parquet as pq

import tarn
import pytest

from tarn.lsm.levels import Levels
from tests.helpers import ORDERS_SCHEMA, orders_rows, rows_by_key


def make(catalog, **options):
    return catalog.create_table("db.lsm", schema=ORDERS_SCHEMA, primary_key=["dt", "id"],
                                partition_keys=["dt"], options={"bucket": "2", **options})


def live_files(table):
    return [e.file for e in table.planner(table.schema()).live_entries(table.latest_snapshot())]


def levels_of(table, bucket_files):
    key_types = [table.schema().field("id").type]
    return Levels.from_files(bucket_files, 6, key_types)


def by_bucket(table):
    out = {}
    for e in table.planner(table.schema()).live_entries(table.latest_snapshot()):
        out.setdefault((e.partition, e.bucket), []).append(e.file)
    return out


def test_universal_compaction_keeps_runs_bounded(catalog):
    t = make(catalog)
    oracle = {}
    for i in range(12):
        ids = list(range(i, i + 20))
        t.write(orders_rows(["d"] * len(ids), ids, [f"v{i}"] * len(ids), list(range(len(ids)))))
        for j, k in enumerate(ids):
            oracle[("d", k)] = f"v{i}"
    kinds = [s.commit_kind for s in t.snapshots()]
    assert "COMPACT" in kinds
    for files in by_bucket(t).values():
        assert levels_of(t, files).number_of_sorted_runs <= 5
    got = {k: r["item"] for k, r in rows_by_key(t.scan().to_arrow(), ["dt", "id"]).items()}
    assert got == oracle


def test_full_compaction_one_run_at_top_level_and_drops_deletes(catalog):
    t = make(catalog)
    t.write(orders_rows(["d1"] * 6, [1, 2, 3, 4, 5, 6]))
    t.write(orders_rows(["d1", "d2"], [2, 9], ["B", "Z"], [1, 1]))
    t.delete(pa.table({"dt": ["d1"], "id": [3]}))
    before = rows_by_key(t.scan().to_arrow(), ["dt", "id"])
    snap = t.compact(full=True)
    assert snap.commit_kind == "COMPACT"
    for files in by_bucket(t).values():
        assert {f.level for f in files} == {5}
        assert levels_of(t, files).number_of_sorted_runs == 1
        assert all(f.delete_row_count == 0 and f.file_source == 1 for f in files)
    assert rows_by_key(t.scan().to_arrow(), ["dt", "id"]) == before
    # max-level files hold no -D rows on disk
    for dirpath, _, names in os.walk(t.root):
        for name in names:
            if name.startswith("data-"):
                path = os.path.join(dirpath, name)
                if any(f.file_name == name for f in live_files(t)):
                    assert 3 not in pq.read_table(path).column("_VALUE_KIND").to_pylist()
    # time travel before the compaction still reads the same rows
    assert rows_by_key(t.scan(snapshot_id=3).to_arrow(), ["dt", "id"]) == before


def test_partition_filtered_compaction(catalog):
    t = make(catalog)
    for _ in range(2):
        t.write(orders_rows(["d1", "d2"], [1, 1]))
    t.compact(full=True, partitions=[{"dt": "d1"}])
    levels = {t.planner(t.schema()).partition_values(p)[0]: {f.level for f in fs}
              for (p, _), fs in by_bucket(t).items()}
    assert levels["d1"] == {5} and levels["d2"] == {0}


def test_write_only_never_compacts(catalog):
    t = make(catalog, **{"write-only": "true"})
    for i in range(8):
        t.write(orders_rows(["d"], [i % 3]))
    assert all(s.commit_kind == "APPEND" for s in t.snapshots())
    assert all(f.level == 0 for f in live_files(t))
    assert len(t.scan().to_arrow()) == 3


def test_small_write_buffer_flushes_many_runs_in_one_commit(catalog):
    t = make(catalog, **{"write-buffer-size": "4 kb", "bucket": "1", "write-only": "true"})
    batches = (orders_rows(["d"] * 200, list(range(i * 100, i * 100 + 200))) for i in range(5))
    t.write(batches)  # a generator: written batch by batch
    assert len(t.snapshots()) == 1
    assert len(live_files(t)) >= 5
    got = rows_by_key(t.scan().to_arrow(), ["dt", "id"])
    assert set(k for _, k in got) == set(range(0, 600))
    assert got[("d", 150)]["qty"] == 50  # the last write of id 150 (batch 1, position 50) wins


def test_writer_restores_levels_and_sequence(catalog):
    t = make(catalog, bucket="1")
    t.write(orders_rows(["d"] * 3, [1, 2, 3]))
    t.compact(full=True)
    t.write(orders_rows(["d"], [2], ["new"], [7]))
    files = live_files(t)
    top = [f for f in files if f.level == 5]
    fresh = [f for f in files if f.level == 0]
    assert top and fresh
    assert min(f.min_sequence_number for f in fresh) > max(f.max_sequence_number for f in top)
    assert rows_by_key(t.scan().to_arrow(), ["dt", "id"])[("d", 2)]["item"] == "new"


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_compaction_each_format(catalog, fmt):
    t = make(catalog, **{"file.format": fmt})
    for i in range(7):
        t.write(orders_rows(["d"] * 4, [i, i + 1, i + 2, i + 3], [f"r{i}"] * 4, [i] * 4))
    t.compact(full=True)
    got = rows_by_key(t.scan().to_arrow(), ["dt", "id"])
    assert got[("d", 9)]["item"] == "r6" and got[("d", 0)]["item"] == "r0" and len(got) == 10


def test_stream_of_batches_takes_one_row_kind(catalog):
    t = make(catalog)
    t.write(orders_rows(["d", "d"], [1, 2]))
    t.write(iter([pa.record_batch(orders_rows(["d"], [1]).to_batches()[0])]), row_kind="-D")
    assert set(rows_by_key(t.scan().to_arrow(), ["dt", "id"])) == {("d", 2)}
    with pytest.raises(tarn.SchemaMismatch, match="one row kind"):
        t.write(iter([orders_rows(["d"], [2]).to_batches()[0]]), row_kind=["-D"])


def test_stop_trigger_bounds_sorted_runs_within_one_commit(catalog):
    t = make(catalog, **{"bucket": "1", "write-buffer-size": "1 kb", "num-sorted-run.compaction-trigger": "3",
                         "num-sorted-run.stop-trigger": "4", "compaction.size-ratio": "0",
                         "compaction.max-size-amplification-percent": "100000"})
    t.write(iter(orders_rows(["d"] * 50, list(range(i, i + 50))).to_batches()[0] for i in range(0, 400, 40)))
    for files in by_bucket(t).values():
        assert levels_of(t, files).number_of_sorted_runs <= 4
    assert len(t.scan().to_arrow()) == 410


def test_delta_commits_follow_the_commit_identifier(catalog):
    t = make(catalog, **{"bucket": "1", "full-compaction.delta-commits": "2"})
    for identifier in (1, 2):
        w = t.new_writer()
        w.write(orders_rows(["d"], [identifier]))
        t.commit(w.prepare_commit(commit_identifier=identifier), commit_user="stream", commit_identifier=identifier)
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND", "APPEND", "COMPACT"]  # only identifier 2 is due
    assert {f.level for f in live_files(t)} == {5}
