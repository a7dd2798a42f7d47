"""Snapshot expiration that keeps what tags and consumers still need (Paimon ExpireSnapshotsImpl).

Which snapshots go: from the earliest on, at most `snapshot.expire.limit` per run, never the
last `snapshot.num-retained.min`, always those beyond `snapshot.num-retained.max`, never one
whose successor is younger than `snapshot.time-retained`, and never one a consumer has not
read yet. Expiring `[earliest, end)` keeps snapshot `end` and deletes:

- data files removed by the deltas of snapshots `(earliest, end]` (a file removed at snapshot
  `d` was last live at `d - 1`), unless the closest tag before `d` still holds them: a file is
  live over a contiguous run of snapshot ids, so if that tag lacks it no tag has it;
- changelog files added by the expired snapshots;
- manifest lists, manifests, index manifests, index files and statistics files of the expired
  snapshots that neither snapshot `end` nor a tag overlapping the expired range refers to;

and, of all those, never a file another branch's snapshot, tag or long-lived changelog
reaches (Paimon's expiry looks at the current branch only; a branch copied from a tag or
snapshot of main shares its files, see references.branch_references).

Each manifest is read at most once per run. `plan_expire` works all that out (an
`ExpirePlan` of paths, nothing changed); `execute_expire` writes the EARLIEST hint, deletes the
snapshot files in ascending order, then metadata, then data files (through a given `delete`, so
tarn.spark can spread them over executors): an interrupted run leaves only unreferenced files
(orphans), never a listed snapshot whose files are gone. Committers rely on the order: a
snapshot is deleted only after every older one, and after the hint names a later one.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from tarn import paths
from tarn.errors import FileMissing, InvalidOption, SnapshotNotFound
from tarn.ops.references import (FileKey, TableFiles, branch_references, branched_since,
                                         delete_empty_dirs, delete_paths)
from tarn.meta.manifest import APPEND_SOURCE
from tarn.meta.snapshot import Snapshot
from tarn.options import Options, as_options
from tarn.store.commit_point import check_writes_metadata

if TYPE_CHECKING:
    from tarn.store.context import TableContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExpireConfig:
    retain_min: int = 10
    retain_max: int = 2147483647
    time_retained_ms: int = 3_600_000
    max_deletes: int = 50

    @classmethod
    def from_options(cls, options: Options) -> "ExpireConfig":
        return cls(options.int("snapshot.num-retained.min"), options.int("snapshot.num-retained.max"),
                   options.duration_ms("snapshot.time-retained"), options.int("snapshot.expire.limit"))

    def check(self, table_name: str) -> None:
        """Raise InvalidOption the way Paimon's schema validation words it."""
        if self.retain_min < 1:
            raise InvalidOption(f"table {table_name}: snapshot.num-retained.min should be at least 1 "
                                f"(got {self.retain_min})")
        if self.retain_min > self.retain_max:
            raise InvalidOption(
                f"table {table_name}: snapshot.num-retained.min ({self.retain_min}) should not be "
                f"larger than snapshot.num-retained.max ({self.retain_max})")
        if self.max_deletes < 1:
            raise InvalidOption(f"table {table_name}: snapshot.expire.limit should be at least 1 "
                                f"(got {self.max_deletes})")
        if self.time_retained_ms < 0:
            raise InvalidOption(f"table {table_name}: snapshot.time-retained must not be negative")


def check_retention_options(options: Mapping[str, str], table_name: str) -> None:
    """Validate the retention options of a table (for create_table / alter)."""
    ExpireConfig.from_options(as_options(options)).check(table_name)


@dataclass(frozen=True)
class ExpirePlan:
    """What one expiry run changes, in order: the EARLIEST hint `earliest_hint` (None: leave
    it), the snapshot files `snapshot_ids`, `index_paths` (index and deletion-vector files) with
    `metadata_paths` (manifest lists, manifests, index manifests, statistics), then
    `data_paths` (data and changelog files with their extra files: the many)."""

    snapshot_ids: tuple[int, ...] = ()
    tagged_ids: frozenset[int] = frozenset()  # snapshot ids tagged when the plan was made
    data_paths: tuple[str, ...] = ()
    index_paths: tuple[str, ...] = ()
    metadata_paths: tuple[str, ...] = ()
    earliest_hint: int | None = None
    clean_empty_dirs: bool = False
    branches: tuple[str, ...] = ()  # the branches whose files the plan keeps
    # decoupled changelog lifecycle: the expiring snapshots kept as changelog/changelog-<id>
    kept_as_changelog: tuple[Snapshot, ...] = ()


Deleter = Callable[[list[str]], object]


def expire_snapshots(table: "TableContext", retain_min: int | None = None, retain_max: int | None = None,
                     older_than_ms: int | None = None, max_deletes: int | None = None,
                     now_ms: int | None = None) -> int:
    """Expire old snapshots; returns how many were removed.

    Unset arguments come from the table options; `older_than_ms` (epoch millis) replaces
    `now - snapshot.time-retained`.
    """
    for attempt in range(3):
        try:
            plan = plan_expire(table, retain_min, retain_max, older_than_ms, max_deletes, now_ms)
            break
        except (FileMissing, SnapshotNotFound):  # a concurrent expiry or rollback went first
            if attempt == 2:
                raise
    return execute_expire(table, plan)


def plan_expire(table: "TableContext", retain_min: int | None = None, retain_max: int | None = None,
                older_than_ms: int | None = None, max_deletes: int | None = None,
                now_ms: int | None = None) -> ExpirePlan:
    """Decide which snapshots expire and which files go with them; changes nothing."""
    check_writes_metadata(table, "snapshot expiry")
    options = table.options
    defaults = ExpireConfig.from_options(options)
    # the arguments given win over the table's options: a retain_max below the table's
    # retain_min lowers the minimum to it, and the other way round
    low = retain_min if retain_min is not None else defaults.retain_min
    high = retain_max if retain_max is not None else defaults.retain_max
    if retain_max is not None and retain_min is None:
        low = min(low, retain_max)
    elif retain_min is not None and retain_max is None:
        high = max(high, retain_min)
    config = ExpireConfig(low, high, defaults.time_retained_ms,
                          max_deletes if max_deletes is not None else defaults.max_deletes)
    if retain_min is not None and retain_max is not None and retain_min > retain_max:
        raise InvalidOption(f"table {table.name}: expire_snapshots(retain_min={retain_min}, retain_max={retain_max}):"
                            " retain_min is larger than retain_max")
    config.check(table.name)
    store = table.snapshot_store
    latest = store.latest_id()
    earliest = store.earliest_id()
    if latest is None or earliest is None:
        return ExpirePlan()
    if older_than_ms is None:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        older_than_ms = now_ms - config.time_retained_ms
    low = max(latest - config.retain_max + 1, earliest)
    end = latest - config.retain_min + 1
    if not (options.bool("consumer.changelog-only") and changelog_decoupled(options)):  # Java's consumerChangelogOnly
        consumer_min = table.consumer_store.min_next_snapshot()
        if consumer_min is not None:
            end = min(end, consumer_min)
    end = min(end, earliest + config.max_deletes)
    for snapshot_id in range(low, end):
        if not store.exists(snapshot_id + 1):
            continue
        if older_than_ms <= store.get(snapshot_id + 1).time_millis:
            return plan_expire_until(table, earliest, snapshot_id)
    return plan_expire_until(table, earliest, end)


def plan_expire_until(table: "TableContext", earliest: int, end: int, files: TableFiles | None = None) -> ExpirePlan:
    """The plan expiring snapshots `[earliest, end)` and keeping snapshot `end`."""
    store = table.snapshot_store
    if end <= earliest:
        missing_hint = not table.file_io.exists(paths.join(store.dir, paths.EARLIEST))
        return ExpirePlan(earliest_hint=earliest if missing_hint else None)
    snapshots = [store.get(i) for i in range(earliest, end + 1) if store.exists(i)]
    if not snapshots or snapshots[-1].id != end:
        return ExpirePlan()  # the snapshot to keep is gone: another process is expiring
    files = files or TableFiles(table)
    tags = table.tag_store.tagged_snapshots()
    expired = snapshots[:-1]
    decoupled = changelog_decoupled(files.options)
    produces = (files.options.changelog_producer or "none") != "none"

    # decoupled, no producer: the rows APPEND commits added stay for the changelogs kept
    data = _unused_data_files(files, snapshots, tags, keep_appended=decoupled and not produces)
    if not decoupled:
        for snapshot in expired:
            for entry in files.changelog_files(snapshot):
                data.extend(files.data_paths(entry))

    keep = set()
    for snapshot in [*tags_overlapping(tags, snapshots[0].id, end), snapshots[-1]]:
        keep.update(files.metadata_names(snapshot))
    index, metadata = [], []
    for snapshot in expired:
        names = [n for n in files.metadata_names(snapshot, changelog=not decoupled, missing_ok=True)
                 if n not in keep]
        if decoupled and not produces:  # the changelog kept reads its delta: its manifests stay
            names = [n for n in names if n not in files.data_manifest_names(snapshot)]
        keep.update(names)
        index_names = {e.file_name for e in files.index_manifest(snapshot.index_manifest, True)}
        index.extend(files.metadata_paths(snapshot, {n for n in names if n in index_names}))
        metadata.extend(files.metadata_paths(snapshot, {n for n in names if n not in index_names}))
    branches = branch_references(table, files)
    return ExpirePlan(tuple(s.id for s in expired), frozenset(t.id for t in tags),
                      _unique(branches.keep_out(data)), _unique(branches.keep_out(index)),
                      _unique(branches.keep_out(metadata)), end,
                      files.options.bool("snapshot.clean-empty-directories"), branches.branches,
                      tuple(expired) if decoupled else ())


def execute_expire(table: "TableContext", plan: ExpirePlan, delete: Deleter | None = None) -> int:
    """Carry out a plan; `delete(paths)` removes the data files (default: from this process,
    a Spark job spreads them over executors). Returns how many snapshots went."""
    if delete is None:
        delete = partial(delete_paths, table.file_io)
    store = table.snapshot_store
    if plan.earliest_hint is not None:  # first: a committer checks it to detect a reused id
        store.write_hint(paths.EARLIEST, plan.earliest_hint)
    kept = {s.id: s for s in plan.kept_as_changelog}
    for snapshot_id in sorted(plan.snapshot_ids):  # ascending: the base of a newer commit goes first
        if snapshot_id in kept:  # its changelog lives on: changelog-<id> before the snapshot goes
            table.changelog_store.write(kept[snapshot_id])
        store.delete(snapshot_id)
    if _tagged_since_planned(table, plan) or _branched_since_planned(table, plan):
        return len(plan.snapshot_ids)  # its files stay (orphan removal frees them later)
    delete_paths(table.file_io, [*plan.index_paths, *plan.metadata_paths])
    if plan.data_paths:
        delete(list(plan.data_paths))
        if plan.clean_empty_dirs:
            delete_empty_dirs(table.file_io, table.root, plan.data_paths)
    _log_expiry(table.name, plan)
    return len(plan.snapshot_ids)


def _log_expiry(table_name: str, plan: ExpirePlan) -> None:
    if plan.snapshot_ids:
        log.debug("table %s: expired snapshots %d..%d: %d data, %d index and %d metadata files deleted",
                  table_name, min(plan.snapshot_ids), max(plan.snapshot_ids), len(plan.data_paths),
                  len(plan.index_paths), len(plan.metadata_paths))


def _tagged_since_planned(table: "TableContext", plan: ExpirePlan) -> bool:
    """Was a snapshot of the plan tagged after the plan was made (create_tag racing expiry)?"""
    expired = set(plan.snapshot_ids)
    return any(t.snapshot.id in expired and t.snapshot.id not in plan.tagged_ids
               for t in table.tag_store.tags())


def _branched_since_planned(table: "TableContext", plan: ExpirePlan) -> bool:
    """Was a branch created after the plan was made (it may use the files the plan deletes)?"""
    if not (plan.data_paths or plan.index_paths or plan.metadata_paths):
        return False
    return branched_since(table, plan.branches)


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _unused_data_files(files: TableFiles, snapshots: list[Snapshot], tags: list[Snapshot],
                       keep_appended: bool = False) -> list[str]:
    """Paths of data files removed within the range that no tag before their removal holds
    (`keep_appended`: not those an APPEND commit wrote, which long-lived changelogs read)."""
    tag_ids = [t.id for t in tags]
    held_by_tag: dict[int, set[FileKey]] = {}
    doomed: list[str] = []
    for snapshot in snapshots[1:]:
        position = bisect.bisect_left(tag_ids, snapshot.id) - 1  # the last tag before it
        held: set[FileKey] = set()
        if position >= 0:
            tag = tags[position]
            if tag.id not in held_by_tag:
                held_by_tag.clear()  # tags come in order: only the current one is needed
                held_by_tag[tag.id] = set(files.live_files(tag))
            held = held_by_tag[tag.id]
        for key, entry in files.deleted_in_delta(snapshot).items():
            if keep_appended and entry.file.file_source in (None, APPEND_SOURCE):
                continue
            if key not in held:
                doomed.extend(files.data_paths(entry))
    return doomed


def changelog_decoupled(options: Options) -> bool:
    """Paimon's changelogLifecycleDecoupled: a `changelog.*` retention beyond its `snapshot.*`
    counterpart keeps changelogs after their snapshots expire."""
    snapshot_max = options.int("snapshot.num-retained.max")
    snapshot_min = options.int("snapshot.num-retained.min")
    snapshot_time = options.duration_ms("snapshot.time-retained")
    changelog_max = options.int("changelog.num-retained.max")
    changelog_min = options.int("changelog.num-retained.min")
    changelog_time = options.duration_ms("changelog.time-retained")
    return ((changelog_max is not None and changelog_max > snapshot_max)
            or (changelog_time is not None and changelog_time > snapshot_time)
            or (changelog_min is not None and changelog_min > snapshot_min))


def tags_overlapping(tags: list[Snapshot], begin: int, end: int) -> list[Snapshot]:
    """Tags that may share metadata with snapshots [begin, end): those inside the range plus
    the last one at or before `begin` (Paimon's findSkippingTags)."""
    ids = [t.id for t in tags]
    right = bisect.bisect_left(ids, end) - 1
    if right < 0:
        return []
    left = max(bisect.bisect_right(ids, begin) - 1, 0)
    return tags[left:right + 1]
