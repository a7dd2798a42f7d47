"""Incremental reads: the rows that changed between two snapshots, as Paimon 2.0 reads them.

Used by `table.changes(start=..., end=...)` (every row kind, in a first `_ROW_KIND` column) and
by batch reads of a table carrying `incremental-between`, `incremental-between-timestamp`,
`incremental-to-auto-tag` or `scan.mode` = `incremental` / `latest-delta` (those read the
changed rows of kinds +I and +U: a batch result holds no retractions, as Paimon's Spark drops
them). Java: IncrementalDeltaStartingScanner, IncrementalDiffStartingScanner, SnapshotReaderImpl.

- The start is exclusive, the end inclusive. Two tags make a diff (unless
  `incremental-between-tag-to-snapshot`); timestamps map to the latest snapshot at or before
  each (a start before the first snapshot includes it).
- `delta` (the `auto` mode without a changelog producer): the data files APPEND snapshots in
  the range added, read raw: every row version with its stored row kind, no merge, deletion
  vectors not applied (COMPACT and OVERWRITE snapshots skipped).
- `changelog` (`auto` with a producer): the changelog files of every snapshot but OVERWRITE ones.
- `diff`: the two snapshots' merged states compared per key in the buckets whose files
  differ: new or changed keys as their end row (+I), keys gone as -D (only in `changes`).
  Append tables: the rows of the end snapshot's files the start lacks (+I).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.data.reader import FileReader
from tarn.errors import InvalidArgument, InvalidOption, SnapshotNotFound
from tarn.meta import snapshot as snap
from tarn.meta.snapshot import Snapshot
from tarn.ops.tags import tag_period
from tarn.options import Options
from tarn.scan.changes import ROW_KIND, _files_of, read_changes
from tarn.scan.filters import scan_filter
from tarn.scan.planner import planner_for
from tarn.scan.predicate import filter_table
from tarn.types import arrow_schema

if TYPE_CHECKING:
    from tarn.core import TableCore

MODES = ("auto", "delta", "changelog", "diff")
RETRACTIONS = ("-U", "-D")


@dataclass(frozen=True)
class Between:
    """What an incremental read reads: the snapshots after `start` up to `end` (None: the
    range is empty), compared or collected by `mode` (delta, changelog or diff)."""

    start: Snapshot | None
    end: Snapshot | None
    mode: str
    empty: bool = False


def resolve_mode(core: "TableCore", mode: str | None) -> str:
    """`auto` -> delta without a changelog producer (always on append tables), else changelog."""
    mode = (mode or "auto").lower()
    if mode not in MODES:
        raise InvalidArgument(f"table {core.name}: incremental mode {mode!r} is not one of {list(MODES)}")
    if mode != "auto":
        return mode
    schema = core.schema()
    producer = schema.shape.options.changelog_producer if schema.primary_keys else "none"
    return "delta" if producer == "none" else "changelog"


# ---------------------------------------------------------------------------------------------
# the range


def between_ids(core: "TableCore", start: int, end: int, mode: str) -> Between:
    if end < start:
        raise InvalidArgument(f"table {core.name}: the end snapshot {end} comes before the start snapshot {start}")
    earliest, latest = core.snapshot_store.earliest_id(), core.snapshot_store.latest_id()
    if latest is None or start == end:
        return Between(None, None, mode, empty=True)
    if mode == "diff":
        return Between(_snapshot(core, start), _snapshot(core, end), mode)
    if start < earliest - 1 or end > latest:
        raise SnapshotNotFound(f"table {core.name}: the snapshot range ({start}, {end}] is outside the available "
                               f"snapshots [{earliest}, {latest}]")
    return Between(core.snapshot_store.find(start), _snapshot(core, end), mode)


def between_tags(core: "TableCore", start: str, end: str, mode: str, to_snapshot: bool = False) -> Between:
    first, last = _tag(core, start), _tag(core, end)
    if to_snapshot:
        if mode == "diff":
            raise InvalidOption(f"table {core.name}: 'incremental-between-tag-to-snapshot' reads the snapshots "
                                "between two tags, which the diff mode does not")
        if first.id >= last.id:
            return Between(None, None, mode, empty=True)
        return between_ids(core, first.id, last.id, mode)
    if last.id < first.id:
        raise InvalidArgument(f"table {core.name}: tag {end!r} (snapshot {last.id}) comes before tag {start!r} "
                              f"(snapshot {first.id})")
    if last.id == first.id:
        return Between(None, None, "diff", empty=True)
    return Between(first, last, "diff")


def between_millis(core: "TableCore", start: int, end: int, mode: str) -> Between:
    store = core.snapshot_store
    earliest_id, latest_id = store.earliest_id(), store.latest_id()
    if latest_id is None:
        return Between(None, None, mode, empty=True)
    if end < start:
        raise InvalidArgument(f"table {core.name}: the end time {end} comes before the start time {start}")
    earliest, latest = store.get(earliest_id), store.get(latest_id)
    if start == end or start > latest.time_millis or end < earliest.time_millis:
        return Between(None, None, mode, empty=True)
    before_end = store.at_or_before(end) or latest
    at_start = store.at_or_before(start)
    if mode == "diff":  # Java 2.0: a start before the first snapshot diffs from the earliest one
        return Between(at_start or earliest, before_end, mode)
    if at_start is None or earliest.time_millis > start:
        return between_ids(core, earliest_id - 1, before_end.id, mode)
    return between_ids(core, at_start.id, before_end.id, mode)


def to_auto_tag(core: "TableCore", end: str) -> Between:
    """`incremental-to-auto-tag`: a diff from the latest earlier automatic tag to tag `end`."""
    period = tag_period(core.options, core.name)
    end_time = period.tag_time(end)
    if end_time is None:
        raise InvalidOption(f"table {core.name}: tag {end!r} in 'incremental-to-auto-tag' is not an "
                            "automatically created tag name")
    names = core.tag_store.names()
    if end not in names:
        return Between(None, None, "diff", empty=True)
    earlier = [(period.tag_time(n), n) for n in names if period.tag_time(n) is not None
               and period.tag_time(n) < end_time]
    if not earlier:
        return Between(None, None, "diff", empty=True)
    start = max(earlier)[1]
    return between_tags(core, start, end, "diff")


def between(core: "TableCore", start, end, mode: str | None) -> Between:
    """`table.changes(start=, end=)`: ids (int), tags (str) or times (datetime/date)."""
    resolved = resolve_mode(core, mode)
    if end is None:  # up to the latest snapshot (now, for times); two tags are always named
        if isinstance(start, str):
            raise InvalidArgument(f"table {core.name}: changes(start={start!r}) from a tag needs end= (another tag)")
        if isinstance(start, dt.date):
            end = dt.datetime.now()
        else:
            latest = core.snapshot_store.latest_id()
            end = latest if latest is not None else start
    kinds = {type(start) if not isinstance(start, dt.date) else dt.date,
             type(end) if not isinstance(end, dt.date) else dt.date}
    if kinds <= {int}:
        return between_ids(core, int(start), int(end), resolved)
    if kinds <= {str}:
        return between_tags(core, start, end, resolved if mode not in (None, "auto") else "diff")
    if kinds <= {dt.date}:
        return between_millis(core, _millis(start), _millis(end), resolved)
    raise InvalidArgument(f"table {core.name}: changes(start=, end=) take two snapshot ids (int), two tag names "
                          f"(str) or two times (datetime), got {start!r} and {end!r}")


def from_options(core: "TableCore", options: Options) -> Between:
    """The range a batch read of a table carrying incremental options reads."""
    given = [k for k in ("incremental-between", "incremental-between-timestamp", "incremental-to-auto-tag")
             if k in options.raw]
    if options.enum("scan.mode") == "latest-delta":
        latest = core.snapshot_store.latest_id()
        if latest is None:
            return Between(None, None, "delta", empty=True)
        return Between(core.snapshot_store.find(latest - 1), _snapshot(core, latest), "delta")
    if len(given) != 1:
        raise InvalidOption(f"table {core.name}: an incremental read needs exactly one of 'incremental-between', "
                            f"'incremental-between-timestamp', 'incremental-to-auto-tag' (set: {given})")
    key, text = given[0], options.get(given[0])
    if key == "incremental-to-auto-tag":
        return to_auto_tag(core, text)
    mode = resolve_mode(core, options.get("incremental-between-scan-mode"))
    parts = text.split(",")
    parts = parts[:-1] if len(parts) == 3 and parts[-1] == "" else parts
    if len(parts) != 2:
        raise InvalidOption(f"table {core.name}: option '{key}' = '{text}' must be 'start,end' (start exclusive)")
    if key == "incremental-between-timestamp":
        return between_millis(core, *(_option_millis(core, key, text, p, parts) for p in parts), mode)
    if core.tag_store.find(parts[0]) is not None and core.tag_store.find(parts[1]) is not None:
        return between_tags(core, parts[0], parts[1], mode, options.bool("incremental-between-tag-to-snapshot"))
    try:
        start, end = int(parts[0]), int(parts[1])
    except ValueError:
        raise InvalidOption(f"table {core.name}: option '{key}' = '{text}' names neither two tags nor two "
                            "snapshot ids") from None
    return between_ids(core, start, end, mode)


# ---------------------------------------------------------------------------------------------
# reading


def read(core: "TableCore", span: Between) -> pa.Table:
    """The changed rows of `span` with `_ROW_KIND` first, in the end snapshot's schema."""
    schema = core.schema_by_id(span.end.schema_id) if span.end is not None else core.schema()
    fields = list(schema.fields)
    output = pa.schema([pa.field(ROW_KIND, pa.string(), nullable=False), *arrow_schema(fields)])
    if span.empty or span.end is None:
        return output.empty_table()
    if span.mode == "diff":
        return _diff(core, span, schema, output)
    planner = planner_for(core, schema)
    reader = FileReader(core.file_io, schema, core.schema_by_id, schema.shape.options)
    first = span.start.id + 1 if span.start is not None else (core.snapshot_store.earliest_id() or 1)
    parts = []
    for snapshot_id in range(first, span.end.id + 1):
        snapshot = _snapshot(core, snapshot_id)
        if span.mode == "delta" and snapshot.commit_kind == snap.APPEND:
            files = _files_of(planner, core.root, schema, snapshot.delta_manifest_list)
        elif span.mode == "changelog" and snapshot.commit_kind != snap.OVERWRITE:
            files = _files_of(planner, core.root, schema, snapshot.changelog_manifest_list)
        else:
            continue
        if files:
            parts.append(read_changes(reader, schema, files).cast(output))
    return pa.concat_tables(parts) if parts else output.empty_table()


def _diff(core: "TableCore", span: Between, schema, output: pa.Schema) -> pa.Table:
    """Java's incremental diff: only the (partition, bucket)s whose files differ are read."""
    before = core.scan_snapshot(span.start, schema=schema) if span.start is not None else None
    after = core.scan_snapshot(span.end, schema=schema)
    old = {(s.partition, s.bucket): s for s in before.plan()} if before is not None else {}
    new_splits = after.plan()
    old_names = {(key, f.file_name) for key, s in old.items() for f in s.files}
    if not schema.primary_keys:
        fresh = [replace(s, files=[f for f in s.files if ((s.partition, s.bucket), f.file_name) not in old_names])
                 for s in new_splits]
        rows = _read(after, [s for s in fresh if s.files], output)
        return _with_kind(rows, "+I", output)
    new = {(s.partition, s.bucket): s for s in new_splits}
    changed = [k for k in set(old) | set(new) if _names(old.get(k)) != _names(new.get(k))]
    old_rows = _read(before, [old[k] for k in changed if k in old], output) if before is not None else None
    new_rows = _read(after, [new[k] for k in changed if k in new], output)
    if old_rows is None or old_rows.num_rows == 0:
        return _with_kind(new_rows, "+I", output)
    return _compare(old_rows, new_rows, list(schema.primary_keys), output)


def _names(split) -> frozenset:
    return frozenset(f.file_name for f in split.files) if split is not None else frozenset()


def _read(scan, splits, output: pa.Schema) -> pa.Table:
    data = output.remove(0)
    tables = scan.reader().read_all(splits) if splits else []
    return pa.concat_tables([t.cast(data) for t in tables]) if tables else data.empty_table()


def _with_kind(rows: pa.Table, kind: str, output: pa.Schema) -> pa.Table:
    return rows.add_column(0, ROW_KIND, pa.array([kind] * rows.num_rows, pa.string())).cast(output)


def _compare(old: pa.Table, new: pa.Table, keys: list[str], output: pa.Schema) -> pa.Table:
    """Per key: new or changed -> the new row as +I; gone -> the old row as -D."""
    left = old.select(keys).append_column("__old", pa.array(np.arange(old.num_rows, dtype=np.int64)))
    right = new.select(keys).append_column("__new", pa.array(np.arange(new.num_rows, dtype=np.int64)))
    pairs = left.join(right, keys, join_type="full outer")
    old_at, new_at = pairs.column("__old"), pairs.column("__new")
    both = pc.and_(old_at.is_valid(), new_at.is_valid()).to_numpy(zero_copy_only=False)
    old_idx = pc.fill_null(old_at, 0).to_numpy(zero_copy_only=False)
    new_idx = pc.fill_null(new_at, 0).to_numpy(zero_copy_only=False)
    same = both.copy()
    if both.any():
        a, b = old.take(pa.array(old_idx[both])), new.take(pa.array(new_idx[both]))
        same[both] = _rows_equal(a, b)
    added = new_at.is_valid().to_numpy(zero_copy_only=False) & ~same
    gone = old_at.is_valid().to_numpy(zero_copy_only=False) & ~new_at.is_valid().to_numpy(zero_copy_only=False)
    return pa.concat_tables([_with_kind(new.take(pa.array(new_idx[added])), "+I", output),
                             _with_kind(old.take(pa.array(old_idx[gone])), "-D", output)])


def _rows_equal(a: pa.Table, b: pa.Table) -> np.ndarray:
    """Row by row: is every column equal (NULLs equal)? Nested columns compare as values."""
    equal = np.ones(a.num_rows, dtype=bool)
    for name in a.column_names:
        x, y = a.column(name), b.column(name)
        if pa.types.is_nested(x.type) or pa.types.is_dictionary(x.type):
            equal &= np.array([p == q for p, q in zip(x.to_pylist(), y.to_pylist())], dtype=bool)
            continue
        same = pc.fill_null(pc.equal(x, y), False)
        both_null = pc.and_(x.is_null(), y.is_null())
        equal &= pc.or_(same, both_null).to_numpy(zero_copy_only=False)
    return equal


# ---------------------------------------------------------------------------------------------
# helpers


def without_retractions(rows: pa.Table) -> pa.Table:
    """A batch read's rows: +I and +U only, without the row-kind column."""
    keep = pc.invert(pc.is_in(rows.column(ROW_KIND), pa.array(RETRACTIONS)))
    return rows.filter(keep).drop_columns([ROW_KIND])


def _snapshot(core: "TableCore", snapshot_id: int) -> Snapshot:
    found = core.snapshot_store.find(snapshot_id)
    if found is None:
        raise SnapshotNotFound(f"table {core.name}: snapshot {snapshot_id} does not exist (expired, or not yet made)")
    return found


def _tag(core: "TableCore", name: str) -> Snapshot:
    found = core.tag_store.find(name)
    if found is None:
        raise SnapshotNotFound(f"table {core.name}: tag {name!r} does not exist")
    return found.snapshot


def _millis(value) -> int:
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return int(value.timestamp() * 1000)  # naive: local time, as Java's default time zone


def _option_millis(core: "TableCore", key: str, text: str, part: str, parts: list[str]) -> int:
    try:
        if all(p.lstrip("-").isdigit() for p in parts):
            return int(part)
        if any(p.lstrip("-").isdigit() for p in parts) or "T" in part:
            raise ValueError(part)
        return _millis(dt.datetime.fromisoformat(part))
    except ValueError:
        raise InvalidOption(f"table {core.name}: option '{key}' = '{text}' must be two epoch millis or two "
                            "'yyyy-MM-dd[ HH:mm:ss]' times, start (exclusive) then end") from None


# ---------------------------------------------------------------------------------------------
# the scan a table with incremental options returns


@dataclass
class IncrementalScan:
    """A batch read of the rows that changed in a range (tables carrying incremental options):
    the changed rows of kinds +I/+U (no retractions), with `filter`, `columns` and `limit`."""

    table: "TableCore"
    span: Between
    filter: object = None
    columns: list[str] | None = None
    limit: int | None = None

    def to_arrow(self) -> pa.Table:
        rows = self.filtered(without_retractions(read(self.table, self.span)), self.table, self.span, self.filter)
        if self.columns is not None:
            rows = rows.select([self.columns] if isinstance(self.columns, str) else list(self.columns))
        return rows if self.limit is None else rows.slice(0, self.limit)

    @staticmethod
    def filtered(rows: pa.Table, table: "TableCore", span: Between, filter) -> pa.Table:
        """`rows` (changed rows, with or without their kind) where `filter` holds."""
        schema = table.schema_by_id(span.end.schema_id) if span.end else table.schema()
        found = scan_filter(filter, list(schema.fields), table.name)
        rows = filter_table(rows, found.predicate)
        return rows.filter(found.row_filter) if found.row_filter is not None else rows

    @property
    def arrow_schema(self) -> pa.Schema:
        return self.to_arrow().schema

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        yield from self.to_arrow().to_batches()

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        return self.to_arrow().to_reader()

    def __arrow_c_stream__(self, requested_schema=None):
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    def to_pandas(self, **kwargs):
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self):
        import polars

        return polars.from_arrow(self.to_arrow())

    def count(self) -> int:
        return self.to_arrow().num_rows


__all__ = ["Between", "IncrementalScan", "between", "from_options", "read", "resolve_mode", "without_retractions"]
