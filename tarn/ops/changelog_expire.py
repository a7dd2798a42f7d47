"""Changelog expiry of the decoupled changelog lifecycle (Paimon's ExpireChangelogImpl and
ChangelogDeletion).

A table whose `changelog.num-retained.min/max` or `changelog.time-retained` reach beyond its
`snapshot.*` retention keeps a changelog after its snapshot expires: snapshot expiry
(tarn/ops/expire.py) writes the snapshot's JSON as `changelog/changelog-<id>` and keeps its
changelog files (with `changelog-producer` = none: its delta and the data files APPEND commits
wrote, which a stream reads instead). This module expires those long-lived changelogs in turn,
after snapshot expiry:

- ids are counted with the snapshots' (the latest snapshot id minus `changelog.num-retained.*`),
  never the latest long-lived changelog, never one a consumer has not read, at most
  `snapshot.expire.limit` per run, and not one committed within `changelog.time-retained`;
- an expired changelog takes its changelog files and their manifests (with a producer), or the
  files its delta removed and its manifest lists (without one), minus what the changelog kept
  next, the earliest snapshot and the tags around them still use, and what other branches use.

Order, for crash safety: the EARLIEST hint, the `changelog-<id>` files, then metadata, then
data files; an interrupted run leaves only unreferenced files.
"""

from __future__ import annotations

import bisect
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tarn import paths
from tarn.ops.expire import tags_overlapping, changelog_decoupled
from tarn.ops.references import FileKey, TableFiles, branch_references, delete_paths
from tarn.meta.snapshot import Snapshot
from tarn.options import Options

if TYPE_CHECKING:
    from tarn.store.context import TableContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChangelogRetention:
    """The changelog retention, each falling back to its snapshot counterpart."""

    retain_min: int
    retain_max: int
    time_retained_ms: int
    max_deletes: int

    @classmethod
    def of(cls, options: Options) -> "ChangelogRetention":
        def pick(own, fallback):
            return own if own is not None else fallback
        return cls(pick(options.int("changelog.num-retained.min"), options.int("snapshot.num-retained.min")),
                   pick(options.int("changelog.num-retained.max"), options.int("snapshot.num-retained.max")),
                   pick(options.duration_ms("changelog.time-retained"), options.duration_ms("snapshot.time-retained")),
                   options.int("snapshot.expire.limit"))


def expire_changelogs(table: "TableContext", now_ms: int | None = None) -> int:
    """Expire long-lived changelogs by the table's options; returns how many went (0 when the
    lifecycle is not decoupled)."""
    options = table.options
    if not changelog_decoupled(options):
        return 0
    retention = ChangelogRetention.of(options)
    latest = table.snapshot_store.latest_id()
    ids = table.changelog_store.list_ids()
    if latest is None or not ids:
        return 0
    earliest, newest = ids[0], ids[-1]
    low = max(latest - retention.retain_max + 1, earliest)
    end = latest - retention.retain_min + 1
    consumer_min = table.consumer_store.min_next_snapshot()
    if consumer_min is not None:
        end = min(end, consumer_min)
    end = min(end, earliest + retention.max_deletes, newest)
    if end <= earliest:
        return 0
    older_than = (int(time.time() * 1000) if now_ms is None else now_ms) - retention.time_retained_ms
    for changelog_id in range(low, end + 1):
        found = table.changelog_store.find(changelog_id)
        if found is not None and older_than <= found.time_millis:
            return _expire_until(table, earliest, changelog_id)
    return _expire_until(table, earliest, end)


def _expire_until(table: "TableContext", earliest: int, end: int) -> int:
    """Expire the long-lived changelogs `[earliest, end)`."""
    store = table.changelog_store
    if end <= earliest:
        return 0
    following = store.find(end)
    if following is None:
        log.warning("table %s: changelog expiry stopped: changelog-%d, the one kept next, is missing",
                    table.name, end)
        return 0
    files = TableFiles(table)
    tags = table.tag_store.tagged_snapshots()
    keep: set[str] = set()
    earliest_snapshot = table.snapshot_store.find(table.snapshot_store.earliest_id() or 0)
    for snapshot in [*tags_overlapping(tags, earliest, end), following,
                     *([earliest_snapshot] if earliest_snapshot is not None else [])]:
        keep.update(files.metadata_names(snapshot, changelog=True, missing_ok=True))
    expired = [c for c in (store.find(i) for i in range(earliest, end)) if c is not None]
    data: list[str] = []
    metadata: list[str] = []
    tag_ids = [t.id for t in tags]
    for changelog in expired:
        if changelog.changelog_manifest_list:
            for entry in files.changelog_files(changelog):
                data.extend(files.data_paths(entry))
            lists = [changelog.changelog_manifest_list]
        else:  # no producer: the files its delta removed, which snapshot expiry left for it
            held = _held_by_tag_before(files, tags, tag_ids, changelog.id)
            for key, entry in files.deleted_in_delta(changelog).items():
                if key not in held:
                    data.extend(files.data_paths(entry))
            lists = [changelog.delta_manifest_list, changelog.base_manifest_list]
        names = []
        for list_name in lists:
            names.append(list_name)
            names.extend(m.file_name for m in files.manifest_list(list_name, missing_ok=True))
        names = [n for n in names if n not in keep]
        keep.update(names)
        metadata.extend(files.metadata_paths(changelog, set(names)))
    branches = branch_references(table, files)
    store.write_hint(paths.EARLIEST, end)
    for changelog in expired:
        store.delete(changelog.id)
    delete_paths(table.file_io, branches.keep_out(metadata))
    delete_paths(table.file_io, branches.keep_out(data))
    log.debug("table %s: expired long-lived changelogs %d..%d", table.name, earliest, end - 1)
    return len(expired)


def _held_by_tag_before(files: TableFiles, tags: list[Snapshot], tag_ids: list[int], snapshot_id: int) -> set[FileKey]:
    position = bisect.bisect_left(tag_ids, snapshot_id) - 1
    return set(files.live_files(tags[position], missing_ok=True)) if position >= 0 else set()
