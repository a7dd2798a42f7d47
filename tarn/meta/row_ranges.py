"""Row tracking (Paimon 1.3): the row-id ranges of data files and how files group by them.

A file of a row-tracking table holds rows `first_row_id .. first_row_id + row_count - 1`
(`_FIRST_ROW_ID` in its manifest entry), unless its rows carry their ids in a `_ROW_ID` column
(compaction outputs of tables without data evolution). With data evolution, files whose ranges
overlap describe the same rows: each holds some columns (`_WRITE_COLS`, None: all of its
schema's), and a column's value comes from the newest file holding it (highest
`_MAX_SEQUENCE_NUMBER`). `.blob` and `.vector.` files hold one column of a range each; they are
not "normal" files (Java's BlobFileFormat.isBlobFile, VectorType.isVectorStoreFile).
"""

from __future__ import annotations

from dataclasses import replace

from tarn.meta.manifest import ADD, APPEND_SOURCE, DataFileMeta

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
SYSTEM_COLUMNS = (ROW_ID, SEQUENCE_NUMBER)


def row_range(meta: DataFileMeta) -> tuple[int, int] | None:
    """The file's inclusive row-id range, None when its manifest entry has no first row id."""
    if meta.first_row_id is None:
        return None
    return meta.first_row_id, meta.first_row_id + meta.row_count - 1


def is_column_file(meta: DataFileMeta) -> bool:
    """A `.blob` or vector-store file: one column of a range of rows, beside a normal file."""
    return meta.file_name.endswith(".blob") or ".vector." in meta.file_name


def stores_row_ids(meta: DataFileMeta) -> bool:
    """The file's rows carry their row ids in a `_ROW_ID` column."""
    return meta.write_cols is not None and ROW_ID in meta.write_cols


def group_by_range(files: list[DataFileMeta]) -> list[list[DataFileMeta]]:
    """Files chained into groups of overlapping (inclusive) row-id ranges, groups in row-id
    order, files of a group in their input order; a file without a range is a group alone."""
    ranged = [(row_range(f), i, f) for i, f in enumerate(files)]
    alone = [[f] for r, _, f in ranged if r is None]
    ordered = sorted((r, i, f) for r, i, f in ranged if r is not None)
    groups: list[list[tuple[int, DataFileMeta]]] = []
    end = None
    for (lo, hi), i, f in ordered:
        if groups and lo <= end:
            groups[-1].append((i, f))
            end = max(end, hi)
        else:
            groups.append([(i, f)])
            end = hi
    return [[f for _, f in sorted(g, key=lambda x: x[0])] for g in groups] + alone


def newest_first(files: list[DataFileMeta]) -> list[DataFileMeta]:
    """The normal files of a group, newest (highest max sequence number) first; ties keep
    their order (Java sorts stably)."""
    return sorted((f for f in files if not is_column_file(f)), key=lambda f: -f.max_sequence_number)


def anchor_of(files: list[DataFileMeta]) -> DataFileMeta:
    """The file of a group whose deletion vector holds the group's deleted rows: the oldest
    normal file (lowest max sequence number, then file name), as Java's retrieveAnchorFile."""
    normal = [f for f in files if not is_column_file(f)] or files
    return min(normal, key=lambda f: (f.max_sequence_number, f.file_name))


def held_columns(meta: DataFileMeta, schema_field_names: list[str]) -> list[str]:
    """The columns (names in the file's own schema) the file holds: `_WRITE_COLS`, or all."""
    return list(meta.write_cols) if meta.write_cols is not None else list(schema_field_names)


def assign_row_ids(entries: list, snapshot_id: int, next_row_id: int) -> tuple[list, int]:
    """A row-tracking commit's entries (Java's RowTrackingCommitUtils): each added file whose
    sequence numbers are unset (0) is stamped with the snapshot id; each added file of fresh
    rows (source APPEND, no first row id, row ids not stored) gets the next row ids, files of
    one partition together. Returns the entries and the snapshot's `nextRowId`. Run on every
    commit attempt, so a retry re-bases the ids on the snapshot it lands on."""
    stamped = [replace(e, file=_stamped(e.file, snapshot_id)) if e.kind == ADD else e for e in entries]
    order: dict[bytes, list[int]] = {}
    for i, e in enumerate(stamped):
        if e.kind == ADD and _takes_row_ids(e.file):
            order.setdefault(e.partition, []).append(i)
    start = next_row_id
    for indexes in order.values():
        for i in indexes:
            entry = stamped[i]
            stamped[i] = replace(entry, file=replace(entry.file, first_row_id=start))
            start += entry.file.row_count
    return stamped, start


def _stamped(meta: DataFileMeta, snapshot_id: int) -> DataFileMeta:
    if meta.min_sequence_number == 0:
        return replace(meta, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
    if meta.max_sequence_number == 0:
        return replace(meta, max_sequence_number=snapshot_id)
    return meta


def _takes_row_ids(meta: DataFileMeta) -> bool:
    if meta.file_source != APPEND_SOURCE or meta.first_row_id is not None or stores_row_ids(meta):
        return False
    if is_column_file(meta):  # Java numbers these after their normal file; tarn never writes them
        raise ValueError(f"tarn does not assign row ids to column file {meta.file_name}")
    return True
