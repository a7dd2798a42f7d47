"""Commit requirements: what must hold of the table for a commit to land, as small objects
(pyiceberg's table requirements are the model). The committer checks each one on every
attempt against the snapshot it is about to build on (`Attempt`); a requirement that does
not hold raises CommitConflict and nothing is committed.

- `LandsOn(snapshot_id)`: the commit lands directly on that snapshot (0: an empty table), as
  rows placed against it (cross-partition upserts on Spark) need;
- `UntouchedSince(base, partitions)`: no other writer changed those partitions' files since
  `base` (an overwrite that would drop their rows: a rescale; Paimon's
  `commit.strict-mode.last-safe-snapshot`);
- `RowIdsReadAt(snapshot_id)`: files arriving with their row ids were planned on that snapshot
  and no commit since touched the same rows and columns (tarn/commit/row_id_conflicts.py);
- `StrictMode(last_safe)`: Paimon's `commit.strict-mode.last-safe-snapshot` — no other commit
  user's COMPACT or OVERWRITE since that snapshot changed a partition this commit changes, and
  for an OVERWRITE, no other user's APPEND to a real bucket of one (Java's StrictModeChecker).

`for_compaction` says whether a requirement also binds the COMPACT part of a commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from tarn.commit import row_id_conflicts
from tarn.errors import CommitConflict, FileMissing, SnapshotNotFound
from tarn.meta import snapshot as snap
from tarn.meta.manifest import ManifestEntry
from tarn.meta.snapshot import Snapshot
from tarn.paths import POSTPONE_BUCKET
from tarn.store.manifests import ManifestStore
from tarn.store.snapshots import SnapshotStore


@dataclass(frozen=True)
class Attempt:
    """What one commit attempt is about to do: build on `latest` with `delta` as a `kind`
    snapshot, for `commit_user`."""

    table_name: str
    latest: Snapshot | None
    delta: list[ManifestEntry]
    kind: str
    commit_user: str
    overwrites: bool
    snapshots: SnapshotStore
    manifests: ManifestStore
    field_names: list[str]
    index_partitions: frozenset = frozenset()  # partitions whose index files the commit changes
    data_evolution: bool = False


@dataclass(frozen=True)
class LandsOn:
    """The commit lands directly on snapshot `snapshot_id` (0: an empty table)."""

    snapshot_id: int
    for_compaction = False

    def check(self, attempt: Attempt) -> None:
        latest = attempt.latest
        actual = latest.id if latest is not None else 0
        if actual != self.snapshot_id:
            by = f" by commit user {latest.commit_user}" if latest is not None else ""
            raise CommitConflict(
                f"table {attempt.table_name}: the rows were placed against snapshot {self.snapshot_id}, but the "
                f"latest snapshot is {actual}{by}: another writer committed in between (a cross-partition upsert "
                "table takes one writer at a time); nothing was committed, write again")


@dataclass(frozen=True)
class UntouchedSince:
    """An overwrite fails when a snapshot after `base`, by another commit user, changed the
    data or index files of `partitions` (None: any partition): it would drop that commit's
    rows. `keeps_postponed`: postponed files added meanwhile do not count (a rescale keeps
    them)."""

    base: Snapshot
    partitions: frozenset | None = None
    keeps_postponed: bool = False
    for_compaction = False

    def check(self, attempt: Attempt) -> None:
        latest = attempt.latest
        if not attempt.overwrites or latest is None or latest.id == self.base.id:
            return
        previous_index = self.base.index_manifest
        for snapshot_id in range(self.base.id + 1, latest.id + 1):
            try:
                snapshot = latest if snapshot_id == latest.id else attempt.snapshots.get(snapshot_id)
            except (SnapshotNotFound, FileMissing):
                raise CommitConflict(f"table {attempt.table_name}: snapshot {snapshot_id}, committed while the "
                                     "rescale ran, expired before it could be checked; nothing was committed, "
                                     "rescale again") from None
            if snapshot.commit_user != attempt.commit_user and self._touches(attempt.manifests, snapshot,
                                                                            previous_index):
                raise CommitConflict(
                    f"table {attempt.table_name}: snapshot {snapshot_id} ({snapshot.commit_kind}, by another writer) "
                    "changed the data being rescaled while the rescale ran; nothing was committed. Stop other "
                    "writers of these partitions and rescale again")
            previous_index = snapshot.index_manifest

    def _touches(self, manifests: ManifestStore, snapshot: Snapshot, previous_index: str | None) -> bool:
        wanted = self.partitions
        for meta in manifests.read_manifest_list(snapshot.delta_manifest_list):
            for entry in manifests.read_manifest(meta.file_name):
                if self.keeps_postponed and entry.bucket == POSTPONE_BUCKET:
                    continue  # rows waiting for their compaction: the rescale leaves them
                if wanted is None or entry.partition in wanted:
                    return True
        if snapshot.index_manifest == previous_index:
            return False
        before = {(e.partition, e.file_name) for e in manifests.read_index_manifest(previous_index)} \
            if previous_index else set()
        after = {(e.partition, e.file_name) for e in manifests.read_index_manifest(snapshot.index_manifest)} \
            if snapshot.index_manifest else set()
        return any(wanted is None or part in wanted for part, _ in before ^ after)


@dataclass(frozen=True)
class RowIdsReadAt:
    """Files arriving with their row ids (partial-column updates, data-evolution compaction)
    were planned on snapshot `snapshot_id`: their rows must still exist, and no commit since
    may have written the same rows' columns."""

    snapshot_id: int
    for_compaction = True

    def check(self, attempt: Attempt) -> None:
        latest = attempt.latest
        if latest is None:
            return
        entries = row_id_conflicts.preset(attempt.delta)
        if not entries:
            return
        if attempt.kind != snap.COMPACT:
            row_id_conflicts.check_existence(attempt.table_name, entries, attempt.manifests.live_entries(latest),
                                             latest.next_row_id or 0)
        if latest.id > self.snapshot_id:
            row_id_conflicts.check_overlaps(attempt.table_name, entries, attempt.snapshots, attempt.manifests,
                                            self.snapshot_id, latest.id, attempt.field_names)


@dataclass(frozen=True)
class StrictMode:
    """`commit.strict-mode.last-safe-snapshot`: the snapshots after `last_safe` made by other
    commit users must not have changed what this commit changes (Java's StrictModeChecker)."""

    last_safe: int
    for_compaction = True

    def check(self, attempt: Attempt) -> None:
        latest = attempt.latest
        new_id = latest.id + 1 if latest is not None else 1
        changed = {e.partition for e in attempt.delta} | set(attempt.index_partitions)
        if not changed:
            return
        for snapshot_id in range(self.last_safe + 1, new_id):
            try:
                snapshot = latest if latest is not None and snapshot_id == latest.id \
                    else attempt.snapshots.get(snapshot_id)
            except (SnapshotNotFound, FileMissing):
                raise CommitConflict(f"table {attempt.table_name}: snapshot {snapshot_id}, after "
                                     f"'commit.strict-mode.last-safe-snapshot' = {self.last_safe}, no longer exists "
                                     f"and cannot be checked; nothing was committed") from None
            if snapshot.commit_user == attempt.commit_user:
                continue
            if snapshot.commit_kind in (snap.COMPACT, snap.OVERWRITE):
                overlap = self._delta_overlaps(attempt, snapshot, changed, real_buckets_only=False)
                if not overlap and (snapshot.commit_kind == snap.OVERWRITE or not attempt.data_evolution):
                    overlap = self._index_overlaps(attempt, snapshot, changed)
                if overlap:
                    raise self._refused(attempt, new_id, snapshot, "which modified the same partition")
            if snapshot.commit_kind == snap.APPEND and attempt.kind == snap.OVERWRITE \
                    and self._delta_overlaps(attempt, snapshot, changed, real_buckets_only=True):
                raise self._refused(attempt, new_id, snapshot,
                                    "which committed files to fixed bucket on the same partition")

    @staticmethod
    def _delta_overlaps(attempt: Attempt, snapshot: Snapshot, changed: set, real_buckets_only: bool) -> bool:
        manifests = attempt.manifests
        for meta in manifests.read_manifest_list(snapshot.delta_manifest_list):
            for entry in manifests.read_manifest(meta.file_name):
                if real_buckets_only and entry.bucket < 0:
                    continue
                if entry.partition in changed:
                    return True
        return False

    @staticmethod
    def _index_overlaps(attempt: Attempt, snapshot: Snapshot, changed: set) -> bool:
        if snapshot.index_manifest is None:
            return False
        previous_id = snapshot.id - 1
        if attempt.snapshots.exists(previous_id) and \
                attempt.snapshots.get(previous_id).index_manifest == snapshot.index_manifest:
            return False  # no index file added or removed by that commit
        return any(e.partition in changed for e in attempt.manifests.read_index_manifest(snapshot.index_manifest))

    def _refused(self, attempt: Attempt, new_id: int, snapshot: Snapshot, what: str) -> CommitConflict:
        return CommitConflict(
            f"table {attempt.table_name}: when trying to commit snapshot {new_id}, commit user "
            f"{attempt.commit_user} found a {snapshot.commit_kind} snapshot (id: {snapshot.id}) by another user "
            f"{snapshot.commit_user} {what}; giving up as 'commit.strict-mode.last-safe-snapshot' is "
            f"{self.last_safe}. Nothing was committed")
