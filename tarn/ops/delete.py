"""Deleting the rows that match a predicate (`Table.delete(filter=...)`), in one commit.
(Files of append tables whose rows are mostly deleted are rewritten by their compaction:
tarn/ops/append_compaction.py.)

- Primary-key tables: the matching rows' keys are written as -D rows (in deletion-vector
  mode the commit's compaction then marks the old rows in deletion vectors).
- Append tables with `deletion-vectors.enabled`: the matching rows' positions are added to their
  files' deletion vectors; each touched (partition, bucket) gets one new index file holding
  every vector of the index files it replaces. Nothing is rewritten; a COMPACT snapshot carries
  the index change, as Java commits deletion vectors.
- Other append tables: copy-on-write. Every file with a matching row is rewritten without
  those rows (same sequence numbers) and replaced in one OVERWRITE snapshot.
A concurrent commit that replaces the same index or data files makes this one fail with
CommitConflict, and nothing is committed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn import features
from tarn.data.reader import FileReader
from tarn.data.writer import FileWriter
from tarn.errors import InvalidArgument, SchemaMismatch
from tarn.meta.manifest import DELETE
from tarn.meta.schema import TableSchema
from tarn.scan.predicate import columns_of, to_arrow
from tarn.ops import row_updates
from tarn.ops.write import write
from tarn.meta.row_ranges import anchor_of
from tarn.scan.scan import scan_fields
from tarn.scan.stitch import read_group
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.types import arrow_schema
from tarn.write.conform import to_arrow_table
from tarn.write.message import CommitMessage
from tarn.commit.abort import aborting

if TYPE_CHECKING:
    from tarn.meta.snapshot import Snapshot
    from tarn.core import TableCore

_POSITION = "__tarn_position"


def delete(core: "TableCore", keys=None, filter=None) -> "Snapshot | None":
    """`Table.delete`: by primary key (`keys`) or every row matching `filter`."""
    if filter is not None:
        if keys is not None:
            raise InvalidArgument(f"table {core.name}: delete takes keys or filter, not both")
        return delete_where(core, filter)
    if keys is None:
        raise InvalidArgument(f"table {core.name}: delete needs keys (rows holding the primary-key columns) or "
                              "filter= (e.g. table.delete(filter=\"id = 3\")); to empty the table, overwrite it "
                              "with no rows")
    return delete_keys(core, keys)


def delete_keys(core: "TableCore", keys) -> "Snapshot | None":
    """Delete rows by primary key in one commit (`keys`: rows holding at least the key columns,
    written as -D rows, the other columns padded)."""
    schema = core.schema()
    if not schema.primary_keys:
        raise SchemaMismatch(f"table {core.name}: delete by key needs a primary-key table")
    rows = _complete_rows(to_arrow_table(keys, core.name), schema, core.name)
    return write(core, rows, row_kind="-D")


def delete_where(table: "TableCore", filter) -> "Snapshot | None":
    """`filter`: anything `Table.scan` takes (a tarn predicate, a pyarrow Expression, a SQL-like
    string), its literals converted to the columns' types as a scan does."""
    schema = table.schema()
    features.check_write(table.name, schema)
    if schema.primary_keys:
        # The aggregation engine retracts a -D row's values from the key's aggregates (or drops
        # the row with aggregation.remove-record-on-delete), so it gets the rows as they are,
        # as Paimon's DELETE writes them; the other engines only need the keys.
        aggregation = schema.shape.options.get("merge-engine") == "aggregation"
        columns = None if aggregation else list(schema.primary_keys)
        rows = table.scan_latest(filter=filter, columns=columns).to_arrow()
        return delete_keys(table, rows) if rows.num_rows else None
    row_updates.check_delete(table.name, schema)
    scan = table.scan_latest(filter=filter)
    options = schema.shape.options
    if not schema.shape.deletion_vectors:
        return rewrite_matching(table, scan, lambda rows, matched: rows.filter(pc.invert(matched)))
    predicate, columns = _row_test(scan)
    fields = [f for f in scan_fields(schema) if f.name in columns]  # `_ROW_ID` too, on row-tracking tables
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    total_buckets = schema.shape.fixed_buckets
    messages = vector_messages(table, scan.plan(), reader, fields, predicate, total_buckets)
    return table.commit(messages) if messages else None


def rewrite_matching(table: "TableCore", scan, change) -> "Snapshot | None":
    """Copy-on-write of an append table in one OVERWRITE snapshot: every file of `scan` with
    a row matching its filter is replaced by `change(rows, matched)` (the file's rows and a
    boolean mask of the matches -> the rows to keep in its place, written with the file's
    first sequence number). None when no row matches."""
    schema = table.schema()
    options = schema.shape.options
    predicate, _ = _row_test(scan)
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    total_buckets = schema.shape.fixed_buckets
    matched_rows = [0]

    def counting(rows, matched):
        matched_rows[0] += int(pc.sum(matched).as_py() or 0)
        return change(rows, matched)
    messages = rewrite_messages(table, scan.plan(), reader, predicate, total_buckets, counting)
    table.counted["rows_matched"] = matched_rows[0]
    return table.commit(messages) if messages else None


def _row_test(scan) -> tuple[pc.Expression, set[str]]:
    """The scan's whole row test as one Arrow expression (its predicate and the part of a
    pyarrow Expression tarn could not translate), and the columns it reads."""
    parts, columns = [], set(scan.row_filter_columns)
    if scan.filter is not None:
        parts.append(to_arrow(scan.filter))
        columns |= columns_of(scan.filter)
    if scan.row_filter is not None:
        parts.append(scan.row_filter)
    if not parts:
        return pc.scalar(True), columns
    return (parts[0] & parts[1] if len(parts) == 2 else parts[0]), columns


def _matches(reader: FileReader, split, meta, fields, predicate: pc.Expression) -> np.ndarray:
    """Sorted row positions of the file's rows matching the test (deleted rows included)."""
    rows = reader.read(split.bucket_path, meta, fields, with_system=False, skip_deleted=False)
    rows = rows.append_column(_POSITION, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    return rows.filter(predicate).column(_POSITION).to_numpy()


def _split_matches(reader: FileReader, split, fields, predicate: pc.Expression):
    """(file, sorted positions of its matching rows) for each file whose deletion vector marks
    the split's rows: every file, or a row-id group's anchor (rows stitched across its files)."""
    if not split.row_tracking:
        return [(meta, _matches(reader, split, meta, fields, predicate)) for meta in split.files]
    rows = read_group(reader, split.bucket_path, split.files, fields, split.table_root, keep_deleted=True)
    rows = rows.append_column(_POSITION, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    return [(anchor_of(split.files), rows.filter(predicate).column(_POSITION).to_numpy())]


def vector_messages(table, splits, reader, fields, predicate, total_buckets) -> list[CommitMessage]:
    """Deletion-vector messages marking the rows of `splits` that `predicate` matches (the
    files stay; their vectors grow), for a delete or a MERGE on a table with deletion vectors."""
    store = DeletionVectorFiles(table.file_io, table.root, table.schema())
    bitmap64 = bool(table.options.bool("deletion-vectors.bitmap64"))
    touched: dict[tuple[bytes, int], dict] = {}
    live: dict[tuple[bytes, int], set[str]] = {}
    for split in splits:
        for meta, found in _split_matches(reader, split, fields, predicate):
            held = split.deletion_files.get(meta.file_name)
            old = store.read_one(held, meta.file_name) if held is not None else None
            if old is not None:
                found = np.setdiff1d(found, old)
            live.setdefault((split.partition, split.bucket), set()).add(meta.file_name)
            table.counted["rows_matched"] = table.counted.get("rows_matched", 0) + len(found)
            if len(found):
                group = touched.setdefault((split.partition, split.bucket), {"entries": {}, "new": {}})
                group["new"][meta.file_name] = found if old is None else np.union1d(old, found)
                if held is not None:
                    group["entries"][held.file_name] = held
    all_live = _live_names(table, splits)
    messages = []
    for (partition, bucket), group in touched.items():
        vectors: dict[str, np.ndarray] = {}
        for entry in group["entries"].values():  # carried over: the other vectors of replaced files
            vectors.update((name, v) for name, v in store.read(entry).items()
                           if name in all_live.get((partition, bucket), ()))
        vectors.update(group["new"])
        written = store.write(partition, bucket, vectors, bitmap64)
        messages.append(CommitMessage(
            partition, bucket, total_buckets, new_index_files=[written] if written else [],
            deleted_index_files=[_as_delete(e) for e in group["entries"].values()]))
    return messages


def _live_names(table, splits) -> dict[tuple[bytes, int], set[str]]:
    """Every live data file per (partition, bucket) of the scanned snapshot (not only those the
    predicate's statistics kept)."""
    if not splits:
        return {}
    names: dict[tuple[bytes, int], set[str]] = {}
    for entry in table.live_entries(table.latest_snapshot()):
        names.setdefault((entry.partition, entry.bucket), set()).add(entry.file.file_name)
    return names


def _as_delete(entry):
    return replace(entry, kind=DELETE)


def rewrite_messages(table, splits, reader, predicate, total_buckets, change) -> list[CommitMessage]:
    """Copy-on-write messages: each file of `splits` holding a row `predicate` matches is
    replaced by `change(rows, matched)` (a delete, an update or a MERGE of append files)."""
    schema = table.schema()
    all_fields = list(schema.fields)
    messages = []
    with aborting(table.file_io, table.root, schema, messages):
        for split in splits:
            for meta in split.files:
                ids = split.row_tracking  # rows keep their row ids: stored in the new file
                rows = row_updates.stored_id_rows(reader, split, meta, table.name, schema) if ids else \
                    reader.read(split.bucket_path, meta, all_fields, with_system=False)
                matched = _match_mask(rows, predicate)
                if not pc.any(matched).as_py():
                    continue
                writer = FileWriter(table.file_io, split.bucket_path, schema, schema.shape.options, row_ids=ids)
                kept = change(rows, matched)
                written = writer.write(kept, first_sequence=meta.min_sequence_number) if kept.num_rows else []
                messages.append(CommitMessage(split.partition, split.bucket, total_buckets,
                                              new_files=written, deleted_files=[meta]))
    return messages


def _match_mask(rows: pa.Table, predicate: pc.Expression) -> pa.Array:
    """A boolean array (no nulls): does row i match the predicate?"""
    positions = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    found = rows.append_column(_POSITION, positions).filter(predicate).column(_POSITION).to_numpy()
    mask = np.zeros(rows.num_rows, dtype=bool)
    mask[found] = True
    return pa.array(mask)


def _complete_rows(keys: pa.Table, schema: TableSchema, table_name: str) -> pa.Table:
    """Key rows padded with the columns they lack (null, or a zero value for NOT NULL columns)."""
    missing_keys = [k for k in schema.primary_keys if k not in keys.column_names]
    if missing_keys:
        raise SchemaMismatch(f"table {table_name}: delete needs the primary key column(s) {missing_keys}")
    columns = {}
    for f in schema.fields:
        if f.name in keys.column_names:
            columns[f.name] = keys.column(f.name)
        else:
            t = arrow_schema([f]).field(0).type
            columns[f.name] = pa.nulls(keys.num_rows, t) if f.type.nullable else _zeros(t, keys.num_rows)
    return pa.table(columns)


def _zeros(t: pa.DataType, n: int) -> pa.Array:
    """A placeholder value for a NOT NULL column of a delete row (its value is never read)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.repeat(pa.scalar("", t), n)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.repeat(pa.scalar(b"", t), n)
    if pa.types.is_boolean(t):
        return pa.repeat(pa.scalar(False), n)
    try:
        return pa.repeat(pa.scalar(0).cast(t), n)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pc.cast(pa.nulls(n, t), t)
