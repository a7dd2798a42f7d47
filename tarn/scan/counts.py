"""Counts, split estimates and statistics reads of a scan, from metadata where it answers.

`Scan.count()` counts from manifests (append files minus their deletion vectors, primary-key
buckets that need no merge) and from fresh statistics (an ANALYZE's mergedRecordCount that
still describes the scanned snapshot); `Scan.estimates()` guesses each split's rows and bytes.
The statistics files are written by ANALYZE (tarn/ops/analyze.py); here they are only read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tarn.errors import CorruptFile, FileMissing, SnapshotNotFound, TarnError
from tarn.meta.row_ranges import anchor_of
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import ANALYZE, Snapshot
from tarn.meta.statistics import BINARY_ROOTS, TEXT_ROOTS, Statistics
from tarn.scan.predicate import Predicate, columns_of, eval_values
from tarn.store.context import TableContext
from tarn.store.deletion_vectors import DeletionVectorFiles, deleted_row_counts
from tarn.store.statistics import StatisticsFiles
from tarn.types import DataField, DataType

FRESHNESS_LOOKBACK = 16  # ANALYZE snapshots looked through when deciding statistics are current


def default_size(t: DataType) -> int | None:
    """Spark's `DataType.defaultSize` of the type Paimon maps `t` to (fixed-width avgLen/maxLen,
    and the fallback of strings and binaries without values)."""
    root = t.root
    fixed = {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INT": 4, "BIGINT": 8, "FLOAT": 4, "DOUBLE": 8,
             "DATE": 4, "TIME": 4, "TIMESTAMP": 8, "TIMESTAMP_LTZ": 8}
    if root in fixed:
        return fixed[root]
    if root == "DECIMAL":
        return 8 if t.precision <= 18 else 16
    if root in TEXT_ROOTS:
        return 20 if t.length is None or t.length >= 2147483647 else t.length
    if root in BINARY_ROOTS:
        return 100
    return None


# ---------------------------------------------------------------------------------------------
# reading statistics


def snapshot_of(table: TableContext, snapshot_id: int | None) -> Snapshot | None:
    if snapshot_id is None:
        return table.latest_snapshot()
    return table.snapshot_store.get(snapshot_id)


def read_statistics(table: TableContext, snapshot_id: int | None = None) -> Statistics | None:
    """The statistics a snapshot (default: the latest) carries, min/max typed with the columns
    of the statistics' schema; None when it carries none. A statistics file that is missing or
    unreadable raises FileMissing / CorruptFile naming it."""
    snapshot = snapshot_of(table, snapshot_id)
    if snapshot is None or snapshot.statistics is None:
        return None
    return read_file(table, snapshot.statistics)


def read_file(table: TableContext, name: str) -> Statistics:
    files = StatisticsFiles(table.file_io, table.root, table.name)
    stats = files.read(name)
    try:
        schema = table.schema_by_id(stats.schema_id)
    except TarnError as exc:
        raise CorruptFile(f"table {table.name}: statistics file {files.path(name)} names schema "
                          f"{stats.schema_id}, which cannot be read: {exc}") from None
    return stats.typed(list(schema.fields), files.path(name))


def fresh_statistics(table: TableContext, snapshot: Snapshot | None) -> Statistics | None:
    """Statistics describing exactly the data of `snapshot`: gathered at it, or at a snapshot
    followed only by ANALYZE snapshots up to it. None otherwise, and whenever anything cannot be
    read (a count falls back to reading data; it never fails because of statistics)."""
    if snapshot is None or snapshot.statistics is None:
        return None
    try:
        stats = StatisticsFiles(table.file_io, table.root, table.name).read(snapshot.statistics)
        if stats.snapshot_id > snapshot.id or snapshot.id - stats.snapshot_id > FRESHNESS_LOOKBACK:
            return None
        for between in range(stats.snapshot_id + 1, snapshot.id + 1):
            s = snapshot if between == snapshot.id else table.snapshot_store.get(between)
            if s.commit_kind != ANALYZE:
                return None
        return stats
    except Exception:  # noqa: BLE001 - statistics are a shortcut, never a failure
        return None


# ---------------------------------------------------------------------------------------------
# counts and estimates from metadata


def _deleted_by_vectors(table: TableContext, splits) -> dict[str, int]:
    """Data file name -> rows its deletion vector deletes, for the splits' files."""
    entries = {}
    for split in splits:
        for entry in split.deletion_files.values():
            entries[entry.file_name] = entry
    if not entries:
        return {}
    counts = deleted_row_counts(DeletionVectorFiles(table.file_io, table.root, table.schema()), entries.values())
    return {name: count for (_, _, name), count in counts.items()}


def _partition_decides(schema: TableSchema, predicate: Predicate | None, split) -> bool | None:
    """True: every row of the split matches (no filter, or a filter on partition columns that
    its partition satisfies); False: none does; None: rows must be read."""
    if predicate is None:
        return True
    if not schema.partition_keys or not columns_of(predicate) <= set(schema.partition_keys):
        return None
    verdict = eval_values(predicate, dict(zip(schema.partition_keys, split.partition_values)))
    return bool(verdict) if verdict is not None else False


def count_splits(table: TableContext, scan, splits) -> int:
    """Rows a scan of `splits` returns, from manifests wherever they tell: append files (minus
    their deletion vectors), primary-key buckets that need no merge, fresh statistics of
    primary-key tables; everything else is read (primary-key buckets with only the key columns)."""
    schema = scan.schema
    deleted = _deleted_by_vectors(table, splits)
    total = 0
    to_read = []
    for split in splits:
        verdict = _partition_decides(schema, scan.filter, split)
        if verdict is False:
            continue
        if verdict and split.row_tracking and len(split.files) > 1:  # one row-id group: its anchor's rows
            anchor = anchor_of(split.files)
            total += anchor.row_count - deleted.get(anchor.file_name, 0)
        elif verdict and split.raw_convertible:
            total += sum(f.row_count - deleted.get(f.file_name, 0) for f in split.files)
        else:
            to_read.append(split)
    if to_read:
        columns = list(schema.primary_keys) or [schema.field_names[0]]
        if scan.filter is not None:
            columns = list(dict.fromkeys([*columns, *(c for c in schema.field_names if c in columns_of(scan.filter))]))
        reader = replace(scan, columns=columns, row_filter=None, row_filter_columns=(), limit=None,
                         _splits=None).reader()
        total += sum(chunk.num_rows for split in to_read for chunk in reader.read_chunks(split))
    return total


def count_from_metadata(scan) -> int | None:
    """The rows a scan without filter returns when metadata alone tells (append tables, buckets
    needing no merge, fresh statistics); None when it would have to read data files."""
    if scan.snapshot is None:
        return 0
    if scan.filter is not None or getattr(scan, "row_filter", None) is not None:
        return None
    if scan.schema.primary_keys and not getattr(scan, "narrowed", False):
        stats = fresh_statistics(scan.table, scan.snapshot)
        if stats is not None and stats.merged_record_count is not None:
            return stats.merged_record_count
    splits = scan.plan()
    if not all(split.raw_convertible or (split.row_tracking and len(split.files) > 1) for split in splits):
        return None
    return count_splits(scan.table, scan, splits)


def count(scan) -> int:
    """`Scan.count()`: the rows the scan returns, without reading data files where metadata
    answers (see `count_splits`); a whole primary-key table with fresh statistics answers from
    their mergedRecordCount. A row filter tarn could not push down is applied by reading; a
    limit caps the count."""
    limit = getattr(scan, "limit", None)
    if scan.snapshot is None or limit == 0:
        return 0
    if getattr(scan, "row_filter", None) is not None:  # only reading the rows tells
        reader, found = scan.reader(), 0
        for split in scan.plan():
            for chunk in reader.read_chunks(split):
                found += chunk.num_rows
                if limit is not None and found >= limit:
                    return limit
        return found
    table = scan.table
    total = None
    if scan.filter is None and scan.schema.primary_keys and not getattr(scan, "narrowed", False):
        stats = fresh_statistics(table, scan.snapshot)
        if stats is not None and stats.merged_record_count is not None:
            total = stats.merged_record_count
    if total is None:
        total = count_splits(table, scan, scan.plan())
    return total if limit is None else min(total, limit)


@dataclass(frozen=True)
class SplitEstimate:
    """A planner's guess of what reading one split returns."""

    rows: int
    bytes: int


def estimates(scan) -> list[SplitEstimate]:
    """Rows and bytes per planned split of `scan`, from metadata only: the files' rows minus
    deletion vectors (and minus the share merging removes, by the latest statistics of a
    primary-key table), and their bytes times that share and the share of the read columns
    (by the statistics' avgLen, else the types' default sizes)."""
    table = scan.table
    splits = scan.plan()
    schema = scan.schema
    stats = None
    try:
        stats = read_statistics(table, scan.snapshot.id) if scan.snapshot is not None else None
    except Exception:  # noqa: BLE001 - an estimate without statistics
        stats = None
    merge_share = 1.0
    if schema.primary_keys and stats is not None and stats.merged_record_count is not None:
        try:
            total = table.snapshot_store.get(stats.snapshot_id).total_record_count
        except (SnapshotNotFound, FileMissing, CorruptFile):
            total = scan.snapshot.total_record_count
        if total:
            merge_share = min(1.0, stats.merged_record_count / total)

    def width(f: DataField) -> int:
        known = stats.col_stats.get(f.name) if stats is not None else None
        if known is not None and known.avg_len is not None:
            return known.avg_len
        return default_size(f.type) or 20

    all_width = sum(width(f) for f in schema.fields) or 1
    read = scan.columns if scan.columns is not None else schema.field_names
    column_share = min(1.0, sum(width(schema.field(n)) for n in read) / all_width)
    deleted = _deleted_by_vectors(table, splits)
    out = []
    for split in splits:
        raw_rows = split.row_count  # a row-id group's rows once
        live = raw_rows - sum(deleted.get(f.file_name, 0) for f in split.files)
        share = 1.0 if split.raw_convertible else merge_share
        rows = int(round(live * share))
        size = sum(f.file_size for f in split.files)
        live_share = live / raw_rows if raw_rows else 0.0
        out.append(SplitEstimate(rows, int(round(size * live_share * share * column_share))))
    return out
