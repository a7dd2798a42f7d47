"""Rollback to a snapshot or tag (Paimon `rollbackTo`, RollbackHelper).

The table then holds exactly the data of the target again: later snapshots and tags on later
snapshots are deleted, as Paimon does, and so are the data and metadata files only they
referred to, except the files another branch still uses (Paimon's rollback deletes no data
files at all and leaves them to orphan removal; tarn frees them but keeps what any branch's
snapshots, tags or long-lived changelogs reach). Rolling back to a tag whose snapshot has
expired re-creates that snapshot file from the tag and makes it the earliest snapshot.

Everything is read and checked first; nothing changes on disk when the target is missing.
Metadata goes first (tag files, LATEST hint, snapshot files newest first), then files, so an
interrupted rollback leaves only orphans behind, and never a tag whose files are gone.

Outcomes (docs/concurrency.md): the metadata steps decide. Each is retried and a failed
request is settled by looking at the file (tarn/store/tags.py); an error that survives that
is raised as it is when nothing had changed yet, as OutcomeUnknown once something had (the
table is readable at every step; `rollback_to` again finishes the job). Once the metadata
change landed, failures deleting files are logged and kept in `table.last_maintenance_errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from tarn import paths
from tarn.errors import InvalidArgument, OutcomeUnknown, SnapshotNotFound
from tarn.ops.references import FileKey, TableFiles, branch_references, branched_since, delete_paths
from tarn.ops.tags import kept_error
from tarn.meta.manifest import ManifestEntry
from tarn.meta.snapshot import Snapshot
from tarn.store.commit_point import check_writes_metadata
from tarn.store.tags import Tag, TagStore, create_settled, delete_settled, retried

if TYPE_CHECKING:
    from tarn.core import TableCore


@dataclass(frozen=True)
class RollbackPlan:
    """What a rollback to `target` changes, in order: the tag files `removed_tags`, the LATEST
    hint, the snapshot files `removed_ids` (newest first), the target's snapshot file when
    `restore`, then the data files `data_paths`, then `metadata_paths`."""

    target: Snapshot
    removed_ids: tuple[int, ...] = ()
    removed_tags: tuple[str, ...] = ()
    restore: bool = False
    data_paths: tuple[str, ...] = ()
    metadata_paths: tuple[str, ...] = ()
    branches: tuple[str, ...] = ()  # the branches whose files the plan keeps

    @property
    def changes_nothing(self) -> bool:
        return not self.removed_ids and not self.removed_tags and not self.restore


def rollback_to(table: "TableCore", target: int | str) -> Snapshot:
    """Roll back to snapshot id `target` (an int) or to tag `target` (a str).

    A snapshot id that has expired but is tagged rolls back to that tag."""
    return execute_rollback(table, plan_rollback(table, target))


def plan_rollback(table: "TableCore", target: int | str) -> RollbackPlan:
    """The plan of `rollback_to`; changes nothing (raises when the target does not exist)."""
    check_writes_metadata(table, "rollback_to")
    store = table.tag_store
    if isinstance(target, bool) or not isinstance(target, (int, str)):
        raise InvalidArgument(f"table {table.name}: rollback target must be a snapshot id or a tag "
                              f"name, got {target!r}")
    if isinstance(target, str):
        return _plan(table, store.get(target).snapshot, store)
    if table.snapshot_store.exists(target):
        return _plan(table, table.snapshot_store.get(target), store)
    for tag in store.tags():
        if tag.snapshot.id == target:
            return _plan(table, tag.snapshot, store)
    earliest, latest = table.snapshot_store.earliest_id(), table.snapshot_store.latest_id()
    span = "the table has no snapshots" if latest is None else f"snapshots {earliest}..{latest} exist"
    raise SnapshotNotFound(f"table {table.name}: cannot roll back to snapshot {target}: it does not "
                           f"exist ({span}) and no tag holds it")


def _plan(table: "TableCore", target: Snapshot, tags: TagStore) -> RollbackPlan:
    snapshots = table.snapshot_store
    latest, earliest = snapshots.latest_id(), snapshots.earliest_id()
    removed = []
    if latest is not None:
        removed = [snapshots.get(i) for i in range(max(earliest, target.id + 1), latest + 1)
                   if snapshots.exists(i)]
    removed_ids = {s.id for s in removed}
    removed_tags = [t for t in tags.tags() if t.snapshot.id > target.id]
    restore = not snapshots.exists(target.id)
    if not removed and not removed_tags and not restore:
        return RollbackPlan(target)

    files = TableFiles(table)
    data, names = _referenced_only_after(files, removed, [t for t in removed_tags if t.snapshot.id not in removed_ids])
    kept_files = set(files.live_files(target))
    # a tag keeps no changelog: the changelog list of an expired, tagged target may be gone
    kept_names = set(files.metadata_names(target, changelog=True, missing_ok=True))
    for tag in tags.tags():
        if tag.snapshot.id <= target.id:
            kept_names.update(files.metadata_names(tag.snapshot))
    doomed = [p for key, entry in data.items() if key not in kept_files for p in files.data_paths(entry)]
    for snapshot in removed:
        doomed.extend(p for e in files.changelog_files(snapshot) for p in files.data_paths(e))
    metadata = []
    for snapshot, snapshot_names in names:
        fresh = {n for n in snapshot_names if n not in kept_names}
        kept_names.update(fresh)
        metadata.extend(files.metadata_paths(snapshot, fresh))
    branches = branch_references(table, files)
    return RollbackPlan(target, tuple(sorted(removed_ids, reverse=True)), tuple(t.name for t in removed_tags),
                        restore, tuple(dict.fromkeys(branches.keep_out(doomed))),
                        tuple(dict.fromkeys(branches.keep_out(metadata))), branches.branches)


def execute_rollback(table: "TableCore", plan: RollbackPlan,
                     delete: Callable[[list[str]], object] | None = None) -> Snapshot:
    """Carry out a plan; `delete(paths)` removes the data files (default: from this process).
    Returns once the metadata change landed (see the module docstring for the outcomes)."""
    table.last_maintenance_errors = []
    if plan.changes_nothing:
        return plan.target
    _change_metadata(table, plan)
    try:
        if (plan.data_paths or plan.metadata_paths) and branched_since(table, plan.branches):
            return plan.target  # a new branch may use them: orphan removal frees them later
        if plan.data_paths:
            (delete or partial(delete_paths, table.file_io))(list(plan.data_paths))
        delete_paths(table.file_io, plan.metadata_paths)
    except Exception as exc:  # noqa: BLE001 - the rollback landed
        kept_error(table, f"the rollback to snapshot {plan.target.id} landed, but deleting the files only the "
                   "removed snapshots and tags used failed (remove_orphan_files deletes them)", exc)
    return plan.target


def _change_metadata(table: "TableCore", plan: RollbackPlan) -> None:
    """Tag files, snapshot files newest first, the re-created target: each step retried and
    settled; a failure raised as it is while nothing changed, else as OutcomeUnknown."""
    snapshots = table.snapshot_store
    target = plan.target
    changed = False
    what = ""
    try:
        for name in plan.removed_tags:  # first: a tag never outlives the snapshots it shares files with
            what = f"deleting tag '{name}'"
            table.tag_store.delete(name)
            changed = True
        snapshots.write_hint(paths.LATEST, target.id)  # best effort: readers check it
        for snapshot_id in plan.removed_ids:
            what = f"deleting snapshot {snapshot_id}"
            delete_settled(table.file_io, snapshots.path(snapshot_id))
            changed = True
        changelogs = table.changelog_store
        newer = [i for i in changelogs.list_ids() if i > target.id]
        for changelog_id in newer:
            what = f"deleting long-lived changelog {changelog_id}"  # as Java's RollbackHelper
            delete_settled(table.file_io, changelogs.path(changelog_id))
            changed = True
        if newer:
            changelogs.write_hint(paths.LATEST, min(newer) - 1)
        if plan.restore:
            what = f"re-creating snapshot {target.id} from its tag"
            _restore(table, target)
            changed = True
            what = "writing the EARLIEST hint"
            retried(lambda: snapshots.write_hint(paths.EARLIEST, target.id))
            snapshots.write_hint(paths.LATEST, target.id)
    except Exception as exc:
        if not changed and not isinstance(exc, OutcomeUnknown):
            raise  # nothing changed: a clean failure
        raise OutcomeUnknown(f"table {table.name}: the rollback to snapshot {target.id} is partly done: {what} "
                             f"failed ({exc}); the table stays readable, and rolling back to the same target "
                             "again finishes it") from exc


def _restore(table: "TableCore", target: Snapshot) -> None:
    """Create the target's snapshot file from its tag; one that exists must be the target."""
    path = table.snapshot_store.path(target.id)
    if create_settled(table.file_io, path, target.to_json().encode()):
        return
    on_disk = retried(lambda: table.snapshot_store.find(target.id))
    if on_disk is None or on_disk.to_dict() != target.to_dict():
        raise SnapshotNotFound(f"table {table.name}: snapshot {target.id} could not be re-created: another "
                               f"snapshot {target.id} appeared meanwhile")


def _referenced_only_after(files: TableFiles, removed: list[Snapshot], removed_tags: list[Tag]
                           ) -> tuple[dict[FileKey, ManifestEntry], list[tuple[Snapshot, list[str]]]]:
    """Data files and metadata names the removed snapshots and (expired) tags refer to."""
    data: dict[FileKey, ManifestEntry] = {}
    names: list[tuple[Snapshot, list[str]]] = []
    if removed:
        data.update(files.live_files(removed[0], missing_ok=True))
        for snapshot in removed[1:]:
            data.update(files.added_in_delta(snapshot))
    for snapshot in removed:
        names.append((snapshot, files.metadata_names(snapshot, changelog=True, missing_ok=True)))
    for tag in removed_tags:
        data.update(files.live_files(tag.snapshot, missing_ok=True))
        names.append((tag.snapshot, files.metadata_names(tag.snapshot, missing_ok=True)))
    return data, names
