"""Commit checks of files that arrive with their row ids (Java's ConflictDetection for
data-evolution tables): a partial-column update or a compaction output names the row-id range
it covers, read at some snapshot; it may land only while that range still means what it did.

- existence: an update's range (below the latest `nextRowId`) must still be exactly the range
  of a live normal file of its partition and bucket (a compaction may have merged it away);
- overlap: no commit after the snapshot it read (compactions aside) added a file with row ids
  in its range holding any of its columns (two updates of one column would each drop the
  other's values, a compaction would drop the update's).
Either raises CommitConflict; nothing lands, and the caller may plan again.
"""

from __future__ import annotations

from tarn.errors import CommitConflict, FileMissing, SnapshotNotFound
from tarn.meta import snapshot as snap
from tarn.meta.manifest import ADD, ManifestEntry
from tarn.meta.row_ranges import is_column_file, row_range

CONFLICT = ("For a data-evolution table, concurrent updates of the same rows and columns conflict "
            "(another commit rewrote row ids {lo}..{hi} of columns {columns} after snapshot {base})")


def preset(delta: list[ManifestEntry]) -> list[ManifestEntry]:
    """The ADD entries that arrive with their row ids."""
    return [e for e in delta if e.kind == ADD and e.file.first_row_id is not None]


def check_existence(table_name: str, entries: list[ManifestEntry], live: list[ManifestEntry],
                    next_row_id: int) -> None:
    ranges = {(e.partition, e.bucket, row_range(e.file)) for e in live if not is_column_file(e.file)}
    for e in entries:
        r = row_range(e.file)
        if r[0] < next_row_id and (e.partition, e.bucket, r) not in ranges:
            raise CommitConflict(f"table {table_name}: row ids {r[0]}..{r[1]} of file {e.file.file_name} are no "
                                 "longer the range of one data file (a concurrent compaction rewrote them); "
                                 "nothing was committed, plan the update again")


def check_overlaps(table_name: str, entries: list[ManifestEntry], snapshots, manifests, read_at: int,
                   latest_id: int, field_names: list[str]) -> None:
    """CONFLICT when a non-compaction snapshot after `read_at` added files overlapping `entries`
    in row ids and columns (write columns None: every column)."""
    mine = [(row_range(e.file), _columns(e.file, field_names)) for e in entries]
    for snapshot_id in range(read_at + 1, latest_id + 1):
        try:
            snapshot = snapshots.get(snapshot_id)
        except (SnapshotNotFound, FileMissing):
            raise CommitConflict(f"table {table_name}: snapshot {snapshot_id}, committed since the update read "
                                 "its rows, expired before it could be checked; nothing was committed") from None
        if snapshot.commit_kind == snap.COMPACT:
            continue
        for meta in manifests.read_manifest_list(snapshot.delta_manifest_list):
            for other in manifests.read_manifest(meta.file_name):
                _check_one(table_name, other, mine, field_names, read_at)


def _check_one(table_name, other: ManifestEntry, mine, field_names, read_at) -> None:
    theirs = row_range(other.file) if other.kind == ADD else None
    if theirs is None:
        return
    their_columns = _columns(other.file, field_names)
    for (lo, hi), columns in mine:
        if theirs[0] <= hi and lo <= theirs[1] and columns & their_columns:
            raise CommitConflict(f"table {table_name}: " + CONFLICT.format(
                lo=max(lo, theirs[0]), hi=min(hi, theirs[1]), columns=sorted(columns & their_columns),
                base=read_at) + "; nothing was committed")


def _columns(meta, field_names: list[str]) -> set[str]:
    return set(meta.write_cols) if meta.write_cols is not None else set(field_names)
