"""Snapshot expiration benchmark (issue 5): expire 1,000 snapshots of a table with 10,000 live
files; print the time and how often manifests were read (each at most once).

    .venv/bin/python bench/bench_expire.py [--files 10000] [--snapshots 1000] [--tags 0]

The history is built directly from manifests (no data is written; every data file is an empty
file so that deleting it costs what it costs): snapshot 1 adds all files, each later snapshot
rewrites one file (DELETE old + ADD new, like a compaction), and manifests are merged by
Paimon's rules exactly as commits do. `--tags N` tags N evenly spread snapshots first.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn  # noqa: E402
from tarn.ops.expire import expire_snapshots  # noqa: E402
from tarn.ops.references import TableFiles  # noqa: E402
from tarn.ops.tags import create_tag  # noqa: E402
from tarn.meta.manifest import ADD, DELETE, EMPTY_ROW, EMPTY_STATS, DataFileMeta, ManifestEntry  # noqa: E402
from tarn.meta.snapshot import Snapshot  # noqa: E402
from tarn.store.manifests import ManifestStore  # noqa: E402


def data_file(name: str) -> DataFileMeta:
    return DataFileMeta(name, 1, 1, EMPTY_ROW, EMPTY_ROW, EMPTY_STATS, EMPTY_STATS, 0, 0, 0, 0,
                        creation_time=0, file_source=0)


def entry(kind: int, name: str) -> ManifestEntry:
    return ManifestEntry(kind, EMPTY_ROW, 0, -1, data_file(name))


def commit(table, manifests: ManifestStore, latest: Snapshot | None, delta: list[ManifestEntry]) -> Snapshot:
    previous = []
    if latest is not None:
        previous = manifests.read_manifest_list(latest.base_manifest_list)
        previous += manifests.read_manifest_list(latest.delta_manifest_list)
    base = manifests.merge_manifests(previous, 0) if previous else []
    base_list, base_size = manifests.write_manifest_list(base)
    delta_list, delta_size = manifests.write_manifest_list(manifests.write_manifests(delta, 0))
    count = sum(1 if e.kind == ADD else -1 for e in delta)
    snapshot = Snapshot(
        id=latest.id + 1 if latest else 1, schema_id=0, base_manifest_list=base_list,
        delta_manifest_list=delta_list, commit_user="bench", commit_identifier=2**63 - 1,
        commit_kind="COMPACT" if latest else "APPEND", time_millis=int(time.time() * 1000),
        uuid=str(uuid.uuid4()), base_manifest_list_size=base_size, delta_manifest_list_size=delta_size,
        total_record_count=(latest.total_record_count if latest else 0) + count, delta_record_count=count,
        next_row_id=0)
    assert table.snapshot_store.publish(snapshot)
    return snapshot


def build(root: str, files: int, snapshots: int, tags: int):
    catalog = tarn.Catalog(root)
    table = catalog.create_table("db.t", schema=pa.schema([("k", pa.int64())]))
    manifests = table.planner(table.schema()).manifests
    bucket = os.path.join(table.root, "bucket-0")
    os.makedirs(bucket)
    names = [f"data-{i}.parquet" for i in range(files + snapshots)]
    for name in names:
        open(os.path.join(bucket, name), "wb").close()
    latest = commit(table, manifests, None, [entry(ADD, n) for n in names[:files]])
    for i in range(1, snapshots + 1):
        latest = commit(table, manifests, latest, [entry(DELETE, names[i - 1]), entry(ADD, names[files + i - 1])])
    for j in range(tags):
        create_tag(table, f"tag-{j}", 1 + (j * snapshots) // max(tags, 1))
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--snapshots", type=int, default=1_000)
    parser.add_argument("--tags", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        t0 = time.perf_counter()
        table = build(root, args.files, args.snapshots, args.tags)
        setup = time.perf_counter() - t0
        manifests_on_disk = len(os.listdir(os.path.join(table.root, "manifest")))
        reads: collections.Counter = collections.Counter()
        original = ManifestStore.read_manifest

        def counting(self, name):
            reads[name] += 1
            return original(self, name)

        ManifestStore.read_manifest = counting
        try:
            t0 = time.perf_counter()
            expired = expire_snapshots(table, retain_min=1, older_than_ms=int(time.time() * 1000) + 10**6,
                                       max_deletes=args.snapshots)
            seconds = time.perf_counter() - t0
        finally:
            ManifestStore.read_manifest = original
        live = len(TableFiles(table).live_files(table.latest_snapshot()))
        data_left = len(os.listdir(os.path.join(table.root, "bucket-0")))
        print(f"setup {setup:.1f} s: {args.files} live files, {args.snapshots + 1} snapshots, "
              f"{args.tags} tags, {manifests_on_disk} files in manifest/")
        print(f"expired {expired} snapshots in {seconds:.2f} s")
        print(f"manifest reads: {sum(reads.values())} of {len(reads)} distinct manifests "
              f"(max {max(reads.values(), default=0)} per manifest)")
        print(f"after: {live} live files, {data_left} data files on disk, "
              f"{len(os.listdir(os.path.join(table.root, 'manifest')))} files in manifest/")
        assert expired == args.snapshots and max(reads.values(), default=0) <= 1
        assert live == args.files


if __name__ == "__main__":
    main()
