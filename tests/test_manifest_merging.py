"""Planning stays fast after thousands of commits: manifest merging keeps the manifest list of
the latest snapshot short (minor merges by count / target size, full compaction by size)."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import replace

import pyarrow as pa

from tarn.store.manifests import ManifestStore
from tarn.write.message import CommitMessage

SCHEMA = pa.schema([("n", pa.int64()), ("s", pa.string())])
MERGE_MIN_COUNT = 5
OPTIONS = {
    "manifest.merge-min-count": str(MERGE_MIN_COUNT),
    "manifest.target-file-size": "16 kb",
    "manifest.full-compaction-threshold-size": "20 kb",
}
REAL_COMMITS = 250  # through table.write / table.overwrite
TOTAL_COMMITS = 1000  # the rest commit copies of one data file through table.commit
OVERWRITE_AT = 120


def rows(n: int) -> pa.Table:
    return pa.table({"n": [n], "s": [f"row-{n}-é"]}, schema=SCHEMA)


def manifest_count(table) -> int:
    planner = table.planner(table.schema())
    return len(planner.manifest_metas(table.latest_snapshot()))


class MergeCounter:
    """Counts the manifest merges that actually rewrote manifests."""

    def __init__(self, monkeypatch):
        self.full = 0
        self.minor = 0
        full, minor = ManifestStore._full_compaction, ManifestStore._merge_candidates

        def counting_full(store, metas, schema_id):
            out = full(store, metas, schema_id)
            self.full += out is not None
            return out

        def counting_minor(store, candidates, schema_id):
            out = minor(store, candidates, schema_id)
            self.minor += len(candidates) > 1
            return out

        monkeypatch.setattr(ManifestStore, "_full_compaction", counting_full)
        monkeypatch.setattr(ManifestStore, "_merge_candidates", counting_minor)


def copy_commits(table, count: int) -> int:
    """Commit `count` snapshots, each adding a fresh copy of the newest data file (same rows);
    the most manifests any of them referenced."""
    entry = max(table.planner(table.schema()).live_entries(table.latest_snapshot()),
                key=lambda e: e.file.max_sequence_number)
    bucket_dir = os.path.join(table.root, "bucket-0")
    source = os.path.join(bucket_dir, entry.file.file_name)
    extension = entry.file.file_name.rsplit(".", 1)[-1]
    sequence = entry.file.max_sequence_number
    most = 0
    for _ in range(count):
        name = f"data-{uuid.uuid4()}-0.{extension}"
        shutil.copyfile(source, os.path.join(bucket_dir, name))
        sequence += 1
        meta = replace(entry.file, file_name=name, min_sequence_number=sequence, max_sequence_number=sequence)
        assert table.commit([CommitMessage(entry.partition, entry.bucket, entry.total_buckets,
                                           new_files=[meta])]) is not None
        most = max(most, manifest_count(table))
    return most


def test_manifest_list_stays_short_over_a_thousand_commits(catalog, monkeypatch):
    counter = MergeCounter(monkeypatch)
    table = catalog.create_table("db.many", schema=SCHEMA, options=OPTIONS)
    expected: list[int] = []
    most = 0
    for i in range(REAL_COMMITS):
        if i == OVERWRITE_AT:
            table.overwrite(rows(i))
            expected = [i]
        else:
            table.write(rows(i))
            expected.append(i)
        most = max(most, manifest_count(table))
    assert most <= MERGE_MIN_COUNT + 3, most
    assert counter.minor > 0 and counter.full > 0, (counter.minor, counter.full)

    got = table.scan().to_arrow()
    assert sorted(got.column("n").to_pylist()) == sorted(expected)
    assert sorted(got.column("s").to_pylist()) == sorted(f"row-{n}-é" for n in expected)

    most = copy_commits(table, TOTAL_COMMITS - REAL_COMMITS)
    assert most <= MERGE_MIN_COUNT + 6, most
    expected += [expected[-1]] * (TOTAL_COMMITS - REAL_COMMITS)
    snapshot = table.latest_snapshot()
    assert snapshot.id == TOTAL_COMMITS
    assert table.snapshot_store.list_ids() == list(range(1, TOTAL_COMMITS + 1))
    count = manifest_count(table)
    assert count <= MERGE_MIN_COUNT + 6, count
    assert snapshot.total_record_count == len(expected)

    started = time.perf_counter()
    splits = table.scan().plan()
    planning = time.perf_counter() - started
    assert sum(s.row_count for s in splits) == len(expected)
    assert planning < 1.0, f"planning {len(splits)} splits over {count} manifests took {planning:.3f}s"
    assert sorted(table.scan().to_arrow().column("n").to_pylist()) == sorted(expected)
