"""TableContext: one table's storage, the one object the layers above take.

It holds the file I/O, the table root and name, the schema/snapshot/tag/consumer stores (built
once), the commit point (`snapshot_commit`, tarn/store/commit_point.py), schemas by id (schema
files never change, so they are cached), manifest stores per
schema, the live manifest entries of a snapshot and where a bucket's files live. `Table` is a
TableContext plus the verbs users call; maintenance, system tables, the streaming scan and the
Spark connector take a context and never a Table's private parts.
"""

from __future__ import annotations

from tarn import partition
from tarn.errors import SnapshotNotFound
from tarn.fs import FileIO, join
from tarn.meta.manifest import ManifestEntry
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.options import Options
from tarn.store.changelogs import ChangelogStore
from tarn.store.commit_point import FileSystemCommit
from tarn.store.consumers import ConsumerStore
from tarn.store.manifests import ManifestStore
from tarn.store.schemas import SchemaStore, branch_root
from tarn.store.snapshots import SnapshotStore
from tarn.store.tags import TagStore


class TableContext:
    """Storage of the Paimon table at `root` (nothing is read until asked for), as branch
    `branch` sees it: a branch other than main keeps its schemas, snapshots, tags and consumers
    under `<root>/branch/branch-<name>/`; data files, manifests and index files are shared
    under `root`."""

    def __init__(self, file_io: FileIO, root: str, name: str | None = None, branch: str = "main"):
        self.file_io = file_io
        self.root = root.rstrip("/")
        self.branch = branch
        self.name = name or (self.root if branch == "main" else f"{self.root}$branch_{branch}")
        self.metadata_root = branch_root(self.root, branch)
        self.schema_store = SchemaStore(file_io, self.root, branch)
        self.snapshot_store = SnapshotStore(file_io, self.metadata_root, self.name)
        self._snapshot_commit = None  # a catalog that owns commits sets its own (snapshot_commit)
        self.tag_store = TagStore(file_io, self.metadata_root, self.name)
        self.consumer_store = ConsumerStore(file_io, self.metadata_root)
        self.changelog_store = ChangelogStore(file_io, self.metadata_root, self.name)
        self._schemas_by_id: dict[int, TableSchema] = {}

    # ------------------------------------------------------------------ schemas

    def schema(self) -> TableSchema | None:
        """The latest schema (one directory listing; each schema file is read once)."""
        ids = self.schema_store.list_ids()
        return self.schema_by_id(ids[-1]) if ids else None

    def schema_by_id(self, schema_id: int) -> TableSchema:
        """Schema `schema-<id>` (what a data file or snapshot written under it was written with)."""
        if schema_id not in self._schemas_by_id:
            self._schemas_by_id[schema_id] = self.schema_store.get(schema_id)
        return self._schemas_by_id[schema_id]

    @property
    def snapshot_commit(self):
        """Where a new snapshot becomes the latest (tarn/store/commit_point.py): the one a
        catalog that owns commits set, else this context's snapshot directory."""
        if self._snapshot_commit is not None:
            return self._snapshot_commit
        return FileSystemCommit(self.snapshot_store, self.name)

    @snapshot_commit.setter
    def snapshot_commit(self, commit_point) -> None:
        self._snapshot_commit = commit_point

    @property
    def location(self) -> str:
        """The path `tarn.load_table` opens this table by: the root as a URI (`s3://...` on
        S3), with `$branch_<name>` for a branch (what Spark tasks receive)."""
        uri = self.file_io.uri(self.root)
        return uri if self.branch == "main" else f"{uri}$branch_{self.branch}"

    def forget_schemas(self) -> None:
        """Drop the cached schemas (a fast-forward replaced schema files of this branch)."""
        self._schemas_by_id.clear()

    @property
    def options(self) -> Options:
        """The latest schema's options as a read-only view with Paimon's defaults and typed
        accessors (`options.bool("write-only")`, `options.duration_ms("snapshot.time-retained")`);
        what they decide about the table is `schema().shape` (tarn/meta/shape.py)."""
        return self.schema().shape.options

    # ------------------------------------------------------------------ snapshots and manifests

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, None before the first commit."""
        return self.snapshot_store.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Snapshot `snapshot_id`; SnapshotNotFound when it does not exist (or was expired)."""
        return self.snapshot_store.get(snapshot_id)

    def changes_of(self, snapshot_id: int) -> Snapshot:
        """What a stream reads as snapshot `snapshot_id`: the snapshot, or once it expired its
        long-lived changelog (`changelog/changelog-<id>`); SnapshotNotFound when neither is."""
        found = self.snapshot_store.find(snapshot_id) or self.changelog_store.find(snapshot_id)
        if found is None:
            raise SnapshotNotFound(f"table {self.name}: snapshot {snapshot_id} does not exist (nor a long-lived "
                                   f"changelog of it)")
        return found

    def manifests(self, schema: TableSchema | None = None) -> ManifestStore:
        """The manifest store reading and writing with `schema`'s partition types and options."""
        schema = schema or self.schema()
        return ManifestStore(self.file_io, join(self.root, "manifest"), partition.partition_types(schema),
                             schema.shape.options)

    def live_entries(self, snapshot: Snapshot | None, schema: TableSchema | None = None) -> list[ManifestEntry]:
        """The live ADD entries of `snapshot` (base + delta manifests, deletes applied)."""
        return self.manifests(schema).live_entries(snapshot)

    # ------------------------------------------------------------------ data file locations

    def bucket_dir(self, schema: TableSchema, partition_bytes: bytes, bucket: int) -> str:
        """The directory holding the data files of one (partition, bucket)."""
        return partition.bucket_dir(self.root, schema, partition_bytes, bucket)
