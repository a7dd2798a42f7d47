"""What an operation committed, for people and scripts: `CommitResult`.

Every verb that commits (`write`, `delete`, `update`, `compact`, `rescale`, `merge`, ...)
returns one (None when nothing was committed): the snapshots it made in order (a write whose
compaction ran made an APPEND and a COMPACT snapshot), rows, files and bytes each added and
removed, the changelog files, the rows the operation knows it inserted, updated or deleted,
and the wall time. `metrics()` is a flat dict (deltalake's `metrics` shape); attributes of the
last snapshot (`id`, `commit_kind`, `time_millis`, ...) read through, so code that took the
returned Snapshot keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tarn.meta.manifest import ADD, DELETE, ManifestEntry
from tarn.meta.snapshot import Snapshot


@dataclass(frozen=True)
class Landed:
    """One snapshot a commit made, with the manifest entries of its delta and changelog and
    the index files (IndexManifestEntry) it added and removed."""

    snapshot: Snapshot
    delta: tuple[ManifestEntry, ...]
    changelog: tuple[ManifestEntry, ...] = ()
    index_added: tuple = ()
    index_removed: tuple = ()


@dataclass(frozen=True)
class CommitResult:
    """What one operation committed (see the module docstring)."""

    table: str
    operation: str
    snapshots: tuple[Snapshot, ...]
    rows_added: int = 0
    rows_removed: int = 0
    files_added: int = 0
    files_removed: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    changelog_files: int = 0
    seconds: float = 0.0
    # what the operation itself counted (None: it does not know)
    rows_inserted: int | None = None
    rows_updated: int | None = None
    rows_deleted: int | None = None
    rows_written: int | None = None
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def snapshot(self) -> Snapshot:
        """The last snapshot the operation made."""
        return self.snapshots[-1]

    @property
    def snapshot_ids(self) -> list[int]:
        return [s.id for s in self.snapshots]

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("snapshots", "table", "operation"):
            raise AttributeError(name)
        return getattr(self.snapshots[-1], name)  # the Snapshot this verb used to return

    def metrics(self) -> dict:
        """A flat dict of every count (for logs, JSON, dashboards)."""
        out = {"table": self.table, "operation": self.operation, "snapshot_ids": self.snapshot_ids,
               "commit_kinds": [s.commit_kind for s in self.snapshots], "rows_added": self.rows_added,
               "rows_removed": self.rows_removed, "files_added": self.files_added,
               "files_removed": self.files_removed, "bytes_added": self.bytes_added,
               "bytes_removed": self.bytes_removed, "changelog_files": self.changelog_files,
               "seconds": round(self.seconds, 6)}
        for name in ("rows_inserted", "rows_updated", "rows_deleted", "rows_written"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return {**out, **self.extra}

    def __repr__(self) -> str:
        made = ", ".join(f"{s.id} {s.commit_kind}" for s in self.snapshots)
        counted = [f"{word} {value:,}" for word, value in (
            ("inserted", self.rows_inserted), ("updated", self.rows_updated), ("deleted", self.rows_deleted),
            ("written", self.rows_written)) if value is not None]
        rows = f"+{self.rows_added:,}/-{self.rows_removed:,} rows"
        files = f"+{self.files_added}/-{self.files_removed} files ({_size(self.bytes_added)} written)"
        parts = [f"{self.operation} {self.table}", f"snapshot{'s' if len(self.snapshots) > 1 else ''} {made}",
                 *counted, rows, files, f"{self.seconds:.2f}s"]
        return f"CommitResult({'; '.join(parts)})"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def result_of(table: str, operation: str, landed: list[Landed], seconds: float, **counted) -> CommitResult | None:
    """The CommitResult of the snapshots an operation made (None: it made none)."""
    if not landed:
        return None
    added = [e for item in landed for e in item.delta if e.kind == ADD]
    removed = [e for item in landed for e in item.delta if e.kind == DELETE]
    return CommitResult(
        table, operation, tuple(item.snapshot for item in landed),
        rows_added=sum(e.file.row_count for e in added), rows_removed=sum(e.file.row_count for e in removed),
        files_added=len(added), files_removed=len(removed),
        bytes_added=sum(e.file.file_size for e in added), bytes_removed=sum(e.file.file_size for e in removed),
        changelog_files=sum(len(item.changelog) for item in landed), seconds=seconds,
        **{k: v for k, v in counted.items() if k in _COUNTED}, extra={k: v for k, v in counted.items()
                                                                       if k not in _COUNTED})


_COUNTED = {"rows_inserted", "rows_updated", "rows_deleted", "rows_written"}


def landed_of(context, snapshot: Snapshot) -> Landed:
    """A committed snapshot with its delta and changelog entries, read from its manifests
    (what another process committed: a Spark job's driver-side commit)."""
    manifests = context.manifests(context.schema_by_id(snapshot.schema_id))

    def entries(manifest_list: str | None) -> tuple[ManifestEntry, ...]:
        if not manifest_list:
            return ()
        return tuple(e for meta in manifests.read_manifest_list(manifest_list)
                     for e in manifests.read_manifest(meta.file_name))
    return Landed(snapshot, entries(snapshot.delta_manifest_list), entries(snapshot.changelog_manifest_list))
