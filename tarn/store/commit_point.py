"""The commit point: where a new snapshot becomes the table's latest (FORMAT.md section 11).

A table's context carries one commit point (`TableContext.snapshot_commit`); the committer
builds a snapshot and hands it over as a `Publication`, and `publish` answers True (it landed
on top of the table) or False (a lost race: build again on the new latest snapshot). A
catalog that owns commits (a REST catalog) brings its own commit point with the same
`publish`; `FileSystemCommit` is the one for tables on a file system or object store.

Outcomes, as docs/concurrency.md states them: `publish` returns only when it knows; when the
snapshot may exist but that cannot be told, it raises OutcomeUnknown, and an interruption
after the create may have begun leaves `publication.uncertain` set (no file the commit wrote
may then be deleted); any other error means nothing landed.

The invariant that keeps one snapshot id to one commit, with the checks here that enforce it,
is docs/concurrency.md's "One snapshot id, one commit".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tarn import paths
from tarn.errors import CommitConflict, FileMissing, OutcomeUnknown, SnapshotNotFound, TarnError
from tarn.meta.snapshot import Snapshot
from tarn.store.manifests import ManifestStore
from tarn.store.snapshots import SnapshotStore

log = logging.getLogger(__name__)

CHECK_ATTEMPTS = 4  # reads after a snapshot file was created (is it on top?) before OutcomeUnknown


@dataclass
class Publication:
    """One attempt to make `snapshot` (built on `base`) the latest: the files it adds and
    removes (how a later snapshot shows it descends from this one), the manifests to read other
    snapshots with, and how to find its added files gone (after a snapshot made behind was
    taken back). `uncertain` is set once the outcome can no longer be told."""

    snapshot: Snapshot
    base: Snapshot | None
    added: set[str]
    removed: set[str]
    manifests: ManifestStore
    missing_files: Callable[[], list[str]] = field(default=lambda: [])
    uncertain: bool = False
    # the manifest entries the snapshot adds and removes (a catalog that owns commits sends
    # their per-partition statistics along)
    delta: tuple = ()


@dataclass
class FileSystemCommit:
    """The commit point of a table on a file system or object store: `snapshot-<id>` created
    only if absent, then checked to have landed on top (not behind an expired id)."""

    snapshots: SnapshotStore
    table_name: str

    def publish(self, publication: Publication) -> bool:
        """Create the snapshot file; True when it landed on top of the table, False when it
        did not (a lost race). A create that succeeded behind the latest snapshot (its id had
        been committed by another writer and then expired) is taken back: a lost race too."""
        snapshot, base = publication.snapshot, publication.base
        if base is not None and not self.snapshots.holds(base):
            return False  # expiry or a rollback took the base meanwhile: nothing created
        try:
            created = self.snapshots.create(snapshot)
        except OutcomeUnknown:  # the store could not tell whether the file was created
            publication.uncertain = True
            raise
        except Exception as exc:
            created = self._settle_uncertain_create(publication, exc)
        except BaseException:  # interrupted (KeyboardInterrupt, ...) mid-create: it may have landed
            publication.uncertain = True
            raise
        if not created:
            return False
        # the file is ours from here on: only OutcomeUnknown may leave
        behind = self._checked(publication, f"whether snapshot {snapshot.id}, which was created, landed on top "
                               "of the table", lambda: self._landed_behind(publication))
        if behind:
            self._checked(publication, f"whether snapshot {snapshot.id}, created behind the latest snapshot, was "
                          "taken back", lambda: self.snapshots.withdraw(snapshot))
            missing = publication.missing_files()  # the file is gone: any error is a clean failure
            if missing:
                raise CommitConflict(f"table {self.table_name}: the commit landed behind the latest snapshot and "
                                     f"concurrent expiry removed its file(s) {missing[:3]}; nothing was committed")
            return False
        self.snapshots.write_hint(paths.LATEST, snapshot.id)  # best effort, never raises
        return True

    def _checked(self, publication: Publication, what: str, step):
        """Run a step that follows the creation of our snapshot file; storage failures are
        retried, and one that persists makes the commit's outcome unknown (the file exists)."""
        for attempt in range(1, CHECK_ATTEMPTS + 1):
            try:
                return step()
            except BaseException as exc:
                if attempt == CHECK_ATTEMPTS or not isinstance(exc, Exception):
                    publication.uncertain = True
                    if isinstance(exc, OutcomeUnknown) or not isinstance(exc, Exception):
                        raise
                    raise OutcomeUnknown(f"table {self.table_name}: could not tell {what} ({exc}); the "
                                         "commit may or may not have landed") from exc
                log.info("table %s: checking %s failed (attempt %d), again: %s", self.table_name, what,
                         attempt, exc)
                time.sleep(0.05 * 2 ** attempt)

    def _settle_uncertain_create(self, publication: Publication, cause: Exception) -> bool:
        """The create raised: did the snapshot land anyway? Absent: re-raise (nothing landed,
        cleaning up is safe); another writer's: a lost race; unreadable: the outcome is unknown
        and every file is kept."""
        snapshot = publication.snapshot
        on_disk = self._checked(publication, f"whether snapshot {snapshot.id} was created (its create failed: "
                                f"{cause})", lambda: self.snapshots.find(snapshot.id))
        if on_disk is None:
            raise cause
        return on_disk.uuid == snapshot.uuid

    def _landed_behind(self, publication: Publication) -> bool:
        """Did the snapshot land behind the table's latest snapshot (its id had been committed
        by another writer and then expired), or on a rolled-back base?

        While the very base this commit read (the same file, compared whole: a snapshot created
        behind may have re-used the base's id) is still on storage, no other commit held our
        id before us: expiry deletes in ascending order and never the greatest id. Without it,
        a snapshot after ours either descends from ours or was there first; with none after
        ours, ours is the greatest id, which expiry alone cannot have made of a re-used id."""
        snapshot, base = publication.snapshot, publication.base
        if base is not None and self.snapshots.holds(base):
            return False
        ids = self.snapshots.list_ids()
        later = [i for i in ids if i > snapshot.id]
        if later:
            return self._later_does_not_descend(publication, later[0])
        if base is None:
            return False
        # ours is the greatest id and our base is gone: expiry took it (then no snapshot below
        # ours stays) or a rollback did (it keeps its target below ours and says so in EARLIEST)
        below = [i for i in ids if i < snapshot.id]
        earliest_hint = self.snapshots.earliest_hint()
        return bool(below) and (earliest_hint is None or earliest_hint <= base.id)

    def _later_does_not_descend(self, publication: Publication, later_id: int) -> bool:
        """Is snapshot `later_id` (the first after ours) not built on ours? One built on ours
        references the files ours added; one that was there first lacks them. A commit that
        only removed files: one still live in the later snapshot shows it was not built on
        ours. A commit with neither (an ANALYZE): the EARLIEST hint decides."""
        if not publication.added and not publication.removed:
            earliest_hint = self.snapshots.earliest_hint()
            return earliest_hint is not None and earliest_hint > publication.snapshot.id
        try:
            later = self.snapshots.get(later_id)
            if publication.added:
                return not (publication.added & _referenced_names(publication.manifests, later))
            return bool(publication.removed & _live_names(publication.manifests, later))
        except (FileMissing, SnapshotNotFound):
            return True  # the successor is being expired: it is older than ours


def check_writes_metadata(context, what: str) -> None:
    """Refuse `what`, an operation that writes a table's metadata files itself (schemas, tags,
    branches, snapshot expiry, rollback), when the table's commit point says another party
    owns that metadata (its `owner`, e.g. a REST catalog server): such a table's metadata
    changes go through its catalog. Nothing has been written when this raises."""
    owner = getattr(context.snapshot_commit, "owner", None)
    if owner:
        raise TarnError(f"table {context.name}: {what} is refused: the table's metadata is owned by {owner}, "
                        "which does not let writers change it behind its back (docs/guide-catalogs.md "
                        "lists what a catalog-owned table refuses and where to do it instead)")


def _referenced_names(manifests: ManifestStore, snapshot: Snapshot) -> set[str]:
    """Data and index files `snapshot` references (added or removed in its manifests)."""
    names = set()
    for meta in manifests.data_manifests(snapshot):
        names.update(e.file.file_name for e in manifests.read_manifest(meta.file_name))
    if snapshot.index_manifest:
        names.update(e.file_name for e in manifests.read_index_manifest(snapshot.index_manifest))
    return names


def _live_names(manifests: ManifestStore, snapshot: Snapshot) -> set[str]:
    """Data and index files live in `snapshot`."""
    names = {e.file.file_name for e in manifests.live_entries(snapshot)}
    if snapshot.index_manifest:
        names.update(e.file_name for e in manifests.read_index_manifest(snapshot.index_manifest))
    return names
