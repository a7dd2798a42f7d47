"""Reading and publishing snapshot files, with the LATEST/EARLIEST hints (FORMAT.md section 3).

Readers check the EARLIEST hint against the snapshot files and fall back to listing, so a
stale or unreadable hint costs only time. The LATEST hint is best effort: a commit whose snapshot
landed never fails because LATEST could not be written (logged, left stale). The latest snapshot
is found by listing, never from the hint (see `latest_id`). The EARLIEST hint
is written by expiry before it deletes anything, and committers read it to tell whether their
snapshot landed behind an expired id: a failure to write it raises, so that expiry stops
before deleting a snapshot the hint does not account for.
"""

from __future__ import annotations

import logging

from tarn import paths
from tarn.errors import FileMissing, SnapshotNotFound
from tarn.fs import FileIO, join
from tarn.meta.snapshot import Snapshot

log = logging.getLogger(__name__)

LATEST_ATTEMPTS = 20  # listings while the greatest id listed is expired before it is read

class SnapshotStore:
    def __init__(self, file_io: FileIO, root: str, table_name: str = ""):
        self.file_io = file_io
        self.root = root
        self.table_name = table_name or root
        self.dir = join(root, paths.SNAPSHOT_DIR)

    def path(self, snapshot_id: int) -> str:
        return paths.snapshot_path(self.root, snapshot_id)

    def exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.path(snapshot_id))

    def get(self, snapshot_id: int) -> Snapshot:
        path = self.path(snapshot_id)
        if not self.file_io.exists(path):
            raise SnapshotNotFound(f"table {self.table_name}: snapshot {snapshot_id} does not exist")
        return Snapshot.from_json(self.file_io.read_bytes(path), path)

    def list_ids(self) -> list[int]:
        return paths.ids_with_prefix(self.file_io.list_dir(self.dir), paths.SNAPSHOT_PREFIX)

    def latest_id(self) -> int | None:
        """The greatest snapshot id on storage, by listing (never by the LATEST hint).

        Listing is what makes the answer safe for a committer: a snapshot created behind the
        latest one (its id had expired; docs/concurrency.md) is never the greatest id, while a
        stale LATEST hint can name exactly such a file while its successor is gone. A listing
        is also one request on S3, where checking a hint takes three. The hint is still
        written for the other engines."""
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self._read_hint(paths.EARLIEST)
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def latest(self) -> Snapshot | None:
        """The latest snapshot. The greatest id listed may be expired before it is read (a
        newer one landed meanwhile): then list again."""
        for attempt in range(LATEST_ATTEMPTS):
            latest_id = self.latest_id()
            if latest_id is None:
                return None
            found = self._read(latest_id)
            if found is not None:
                return found
        raise SnapshotNotFound(f"table {self.table_name}: the latest snapshot kept expiring before it could be "
                               f"read ({LATEST_ATTEMPTS} listings, the last named snapshot {latest_id})")

    def find(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot with this id, or None if its file is absent (expired, never made)."""
        return self._read(snapshot_id)

    def _read(self, snapshot_id: int) -> Snapshot | None:
        path = self.path(snapshot_id)
        try:
            return Snapshot.from_json(self.file_io.read_bytes(path), path)
        except FileMissing:
            return None

    def holds(self, snapshot: Snapshot) -> bool:
        """Is `snapshot-<id>` on storage this very snapshot (compared whole: a file created
        again under an expired id is another snapshot)?"""
        return self._read(snapshot.id) == snapshot

    def create(self, snapshot: Snapshot) -> bool:
        """Create `snapshot-<id>` only if absent. True if our snapshot is the one on disk,
        False if another one is. `OutcomeUnknown` when the store cannot tell; any other error
        only when our file was not created.

        A create that reports "exists" is settled by re-reading the file: if it holds our
        snapshot (same uuid), an earlier uncertain attempt of ours already landed. The LATEST
        hint is the committer's to write, once it knows the snapshot is on top.
        """
        path = self.path(snapshot.id)
        if self.file_io.write_if_absent(path, snapshot.to_json().encode()):
            return True
        try:
            on_disk = Snapshot.from_json(self.file_io.read_bytes(path), path)
        except Exception:  # noqa: BLE001 - write_if_absent said "not created by this call": trust it
            return False
        return on_disk.uuid is not None and on_disk.uuid == snapshot.uuid

    def withdraw(self, snapshot: Snapshot) -> None:
        """Delete our own snapshot file again (it landed behind the latest snapshot)."""
        on_disk = self.find(snapshot.id)
        if on_disk is not None and on_disk.uuid == snapshot.uuid:
            self.delete(snapshot.id)

    def earliest_hint(self) -> int | None:
        return self._read_hint(paths.EARLIEST)

    def write_hint(self, name: str, snapshot_id: int) -> bool:
        """Write the LATEST or EARLIEST hint. LATEST is best effort: False (logged) if the
        store failed. EARLIEST raises the store's error (see the module docstring)."""
        try:
            self.file_io.write_bytes(join(self.dir, name), str(snapshot_id).encode())
            return True
        except Exception as exc:  # noqa: BLE001 - never fails what wrote the snapshot
            if name == paths.EARLIEST:
                raise
            log.warning("table %s: the %s hint (snapshot %d) was not written: %s", self.table_name, name,
                        snapshot_id, exc)
            return False

    def _read_hint(self, name: str) -> int | None:
        path = join(self.dir, name)
        try:
            text = self.file_io.read_bytes(path).decode().strip()
        except (FileMissing, OSError, UnicodeDecodeError):  # StorageError is an OSError
            return None
        return int(text) if text.isdigit() else None

    def delete(self, snapshot_id: int) -> None:
        self.file_io.delete(self.path(snapshot_id))

    def at_or_before(self, timestamp_ms: int) -> Snapshot | None:
        """The latest snapshot whose timeMillis <= timestamp_ms (binary search over ids)."""
        ids = self.list_ids()
        lo, hi, found = 0, len(ids) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            snap = self.get(ids[mid])
            if snap.time_millis <= timestamp_ms:
                found, lo = snap, mid + 1
            else:
                hi = mid - 1
        return found
