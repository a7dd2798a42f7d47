"""Long-lived changelogs: `changelog/changelog-<id>`, the metadata of snapshots that expired
while their changelog is kept (Paimon's ChangelogManager; the decoupled changelog lifecycle of
tarn/ops/changelog_expire.py). Each file is the snapshot's own JSON; `changelog/EARLIEST` and
`changelog/LATEST` hold ids as decimal text and are hints only: ids come from listing.
"""

from __future__ import annotations

from tarn import paths
from tarn.errors import FileMissing, SnapshotNotFound
from tarn.fs import FileIO, join
from tarn.meta.snapshot import Snapshot

PREFIX = "changelog-"


class ChangelogStore:
    def __init__(self, file_io: FileIO, root: str, table_name: str = ""):
        self.file_io = file_io
        self.root = root
        self.table_name = table_name or root
        self.dir = join(root, paths.CHANGELOG_DIR)

    def path(self, changelog_id: int) -> str:
        return join(self.dir, f"{PREFIX}{changelog_id}")

    def list_ids(self) -> list[int]:
        return paths.ids_with_prefix(self.file_io.list_dir(self.dir), PREFIX)

    def exists(self, changelog_id: int) -> bool:
        return self.file_io.exists(self.path(changelog_id))

    def find(self, changelog_id: int) -> Snapshot | None:
        path = self.path(changelog_id)
        try:
            return Snapshot.from_json(self.file_io.read_bytes(path), path)
        except FileMissing:
            return None

    def get(self, changelog_id: int) -> Snapshot:
        found = self.find(changelog_id)
        if found is None:
            raise SnapshotNotFound(f"table {self.table_name}: long-lived changelog {changelog_id} does not exist")
        return found

    def write(self, snapshot: Snapshot) -> None:
        """Keep an expiring snapshot's metadata as `changelog-<id>` (atomically; replaced if a
        run before this one wrote it already), and name it in the LATEST hint."""
        self.file_io.write_bytes(self.path(snapshot.id), snapshot.to_json().encode())
        self.write_hint(paths.LATEST, snapshot.id)

    def write_hint(self, name: str, changelog_id: int) -> None:
        self.file_io.write_bytes(join(self.dir, name), str(changelog_id).encode())

    def delete(self, changelog_id: int) -> None:
        self.file_io.delete(self.path(changelog_id))
