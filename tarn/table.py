"""The Table facade: the verbs users call, each a short call into an operation (tarn/ops/).

`Table` is a TableCore (tarn/core.py: storage plus the scan, write and commit primitives; after
each commit it runs the commit callbacks, post-commit maintenance among them). `Scan` lives in
tarn/scan/scan.py and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from tarn.commit.result import CommitResult
from tarn.core import TableCore
from tarn.errors import InvalidArgument, TableNotFound, TarnError
from tarn.fs import FileIO, file_io_for
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from tarn.meta.statistics import Statistics
from tarn.ops import (alter, analyze, branches, changelog_expire, compact, delete, expire, merge, orphans,
                      partition_expire, rescale, rollback, row_updates, system_tables, tags, time_travel, update,
                      upsert_key, write)
from tarn.scan import counts, startup
from tarn.scan.arguments import location_argument, millis_argument
from tarn.scan.scan import Scan
from tarn.store.branches import branch_names, branch_of
from tarn.store.schemas import SchemaStore

__all__ = ["Scan", "SystemTable", "Table", "load_table"]

if TYPE_CHECKING:  # what the verbs take, for an IDE to show (names only: nothing imported at run time)
    from typing import TypeAlias

    import pandas
    import polars
    import pyarrow.compute as pc

    from tarn.scan.predicate import Predicate

    # rows: anything `write` converts (columns matched by name, cast only when lossless)
    RowData: TypeAlias = (pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch]
                          | Mapping[str, Sequence] | pandas.DataFrame | polars.DataFrame)
    # a filter: a predicate (tarn.col("x") > 1), a pyarrow Expression or SQL-like text
    Filter: TypeAlias = Predicate | pc.Expression | str
    # a MERGE condition (True: always) over `source.<col>` / `target.<col>`
    Condition: TypeAlias = bool | str | pc.Expression
    # a MERGE action's values: "*" (every column from the source) or {column: value or Expression}
    Assignments: TypeAlias = Literal["*"] | Mapping[str, Any]


class Table:
    """One Paimon table at `root`: the verbs users call, on a TableCore (`core`: its storage
    plus the scan, write and commit primitives, which operations and engines use). Cheap to
    create; every operation reads the latest state."""

    def __init__(self, file_io: FileIO, root: str, name: str | None = None, branch: str = "main"):
        object.__setattr__(self, "core", TableCore(file_io, root, name, branch))
        if self.core.schema() is None:
            if branch != "main" and SchemaStore(file_io, self.root).list_ids():
                known = branch_names(file_io, self.root)
                raise TableNotFound(f"table {self.name}: branch '{branch}' does not exist (branches: {known})")
            raise TableNotFound(f"no Paimon table at {self.root} (no schema/schema-N file)")

    def __getattr__(self, name: str):
        """The kernel's attributes (`file_io`, `snapshot_store`, `live_entries`, ...) reached
        through the table, for engines and tools; they are not part of its surface."""
        if name.startswith("__") or name == "core":
            raise AttributeError(name)
        return getattr(self.core, name)

    def __setattr__(self, name: str, value) -> None:
        """The kernel's state (a commit point, hooks) is set on the core; the facade's own
        names, and new ones, on the Table."""
        if not hasattr(type(self), name) and hasattr(self.core, name):
            setattr(self.core, name, value)
        else:
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        """`Table('db.t', primary_key=[...], partition_keys=[...], bucket=N, snapshot=N)`, read from
        the latest schema and snapshot (just the name if they cannot be read)."""
        try:
            return f"Table({', '.join(self._repr_parts())})"
        except Exception:  # a repr never raises: an unreadable table still shows its name
            return f"Table({self.name!r})"

    def _repr_parts(self) -> list[str]:
        """Name, keys, bucket mode, latest snapshot and, when metadata tells without reading
        data files, the live rows (`scan().count()` always answers)."""
        schema, latest = self.schema(), self.core.snapshot_store.latest_id()
        bucket = schema.shape.num_buckets
        parts = [repr(self.name)] + ([f"branch={self.branch!r}"] if self.branch != "main" else [])
        parts += [f"{key}={list(value)!r}" for key, value in
                  (("primary_key", schema.primary_keys), ("partition_keys", schema.partition_keys)) if value]
        if bucket != -1:
            parts.append(f"bucket={bucket}")
        elif schema.primary_keys:
            parts.append("bucket=dynamic")
        parts.append(f"snapshot={latest}")
        try:  # the rows a plain read returns (the table's own scan options may refuse it)
            scan = self.scan() if latest is not None else None
            rows = counts.count_from_metadata(scan) if isinstance(scan, Scan) else None
        except TarnError:
            rows = None
        return parts + ([f"rows={rows:,}"] if rows is not None else [])

    # ------------------------------------------------------------------ metadata

    @property
    def name(self) -> str:
        """The table's name in messages: its identifier, or its path when opened by path."""
        return self.core.name

    @property
    def root(self) -> str:
        """The table's directory (a path inside its store)."""
        return self.core.root

    @property
    def branch(self) -> str:
        """The branch this Table reads and writes ("main" unless opened on another)."""
        return self.core.branch

    @property
    def location(self) -> str:
        """What `tarn.load_table` opens this table by (a URI on object stores; `$branch_x` for
        a branch)."""
        return self.core.location

    @property
    def options(self):
        """The latest schema's options, with Paimon's defaults (`options.get("bucket")`)."""
        return self.core.options

    @property
    def last_maintenance_errors(self) -> list[Exception]:
        """What failed after the last landed commit (maintenance, clean-up); the commit stands."""
        return self.core.last_maintenance_errors

    @last_maintenance_errors.setter
    def last_maintenance_errors(self, errors: list[Exception]) -> None:
        self.core.last_maintenance_errors = errors

    def schema(self) -> TableSchema:
        """The latest schema."""
        return self.core.schema()

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, None before the first commit."""
        return self.core.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Snapshot `snapshot_id`; SnapshotNotFound when it does not exist (or was expired)."""
        return self.core.snapshot(snapshot_id)

    def new_writer(self, ignore_previous_files: bool = False, options: dict | None = None, **kwargs):
        """A TableWriter for streaming or distributed writes: `write` batches, `prepare_commit`
        the messages, then `commit` them (docs/guide-writing.md)."""
        return self.core.new_writer(ignore_previous_files, options, **kwargs)

    def commit(self, messages, commit_user: str | None = None, commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
               overwrite=None, watermark: int | None = None, expected_base: int | None = None, **kwargs):
        """Commit writer messages in one snapshot (and one COMPACT snapshot for their compaction
        part); see TableCore.commit for the outcomes. A streaming writer passes its
        `commit_user` and an increasing `commit_identifier`: one already committed is skipped."""
        return self.core.commit(messages, commit_user, commit_identifier, overwrite, watermark, expected_base,
                                **kwargs)

    @property
    def primary_keys(self) -> tuple[str, ...]:
        """The primary-key columns (empty for an append table)."""
        return tuple(self.schema().primary_keys)

    @property
    def partition_keys(self) -> tuple[str, ...]:
        """The partition columns, in directory order (empty when unpartitioned)."""
        return tuple(self.schema().partition_keys)

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot still on disk, oldest first (`system_table("snapshots")` as a table)."""
        store = self.core.snapshot_store
        return [store.get(i) for i in store.list_ids()]

    def alter(self, *changes) -> TableSchema:
        """Schema evolution: `table.alter(tarn.AddColumn("c", tarn.types.INT()), tarn.RenameColumn("a", "b"))`.

        Option changes are validated like options at creation; options Paimon treats as
        immutable (`bucket-key`, `merge-engine`, `sequence.field`, ...) cannot change."""
        return alter.alter(self.core, changes)

    # ------------------------------------------------------------------ writes

    def write(self, data: RowData, row_kind: str | int | Sequence | None = None) -> CommitResult | None:
        """Write rows in one commit: upsert for primary-key tables, append otherwise (merged on
        the `upsert-key` where an append table sets one). `data`: a pyarrow Table,
        RecordBatch(es) or RecordBatchReader, a dict of columns, a list of row dicts, a pandas or
        polars DataFrame, or any Arrow PyCapsule stream; columns matched by name, cast only
        when lossless. `row_kind`: '+I', '-U', '+U', '-D' (or 0-3) for all rows or per row.
        Returns a `CommitResult` (snapshots made, rows and files added and removed, rows
        written, seconds; None when nothing was written)."""
        if row_kind is None and upsert_key.upsert_keys(self.core.schema()):  # merged in (docs/guide-delete-update.md)
            return self.core.recorded("write", lambda: upsert_key.write(self.core, data))
        return self.core.recorded("write", lambda: write.write(self.core, data, row_kind))

    def compact(self, full: bool = False, partitions: list[dict] | None = None) -> CommitResult | None:
        """Compact the table in one COMPACT snapshot (None: nothing was due). `partitions`
        limits it to those partitions (dicts of partition column -> value).

        Primary-key buckets: `full=True` rewrites every bucket into one sorted run at the top
        level; otherwise universal compaction picks what is due. Append tables
        (docs/guide-maintenance.md): small files are merged in sequence order into files of
        `target-file-size` (`compaction.min.file-num`, `compaction.small-file-ratio`, ...), rows
        their deletion vectors mark are dropped; `full=True` rewrites each bucket (partition,
        in unaware-bucket tables) as Paimon's full compaction does."""
        return self.core.recorded("compact", lambda: compact.compact(self.core, full, partitions))

    def delete(self, keys: RowData | None = None, *, filter: Filter | None = None) -> CommitResult | None:
        """Delete rows in one commit: by primary key (`keys`: rows holding at least the key
        columns; written as -D rows), or every row matching `filter` (whatever `scan` takes: a
        predicate, a pyarrow Expression, a SQL-like string): -D rows on primary-key tables,
        deletion vectors on append tables with deletion-vectors.enabled, otherwise the files
        holding matches are rewritten. Returns a `CommitResult` with `rows_deleted`. See
        docs/guide-delete-update.md."""
        return self.core.recorded("delete", lambda: delete.delete(self.core, keys, filter), matched="rows_deleted")

    def update(self, set: Mapping[str, Any], filter: Filter | None = None) -> CommitResult | None:
        """Set columns on every row matching `filter` (whatever `scan` takes; None: all rows)
        in one commit; None when no row matches. `set`: column -> a literal (converted with
        the column's type as filter values are; None is NULL) or a pyarrow Expression over the
        row's columns (`pc.field("amount") * 2`, evaluated on the rows before the update).
        Primary-key tables: an upsert of the updated rows (key and partition columns cannot
        be set; merge engines deduplicate and partial-update). Append tables without deletion
        vectors: the files holding matches are rewritten in one OVERWRITE. See
        docs/guide-delete-update.md."""
        return self.core.recorded("update", lambda: update.update_where(self.core, set, filter), matched="rows_updated")

    def merge(self, source: RowData, on: str | Sequence[str] | None = None, *,
              when_matched_update: Assignments | None = None, when_matched_delete: Condition | None = None,
              when_not_matched_insert: Assignments | None = None,
              when_not_matched_by_source_delete: Condition | None = None,
              matched_update_if: Condition | None = None,
              not_matched_insert_if: Condition | None = None) -> CommitResult | None:
        """MERGE INTO this table from `source` (anything `write` takes), in one commit, on one
        machine (Arrow joins). `on`: the key columns (default: the primary key). Actions, in
        this order: `when_matched_delete` (True or a condition), `when_matched_update` ("*" or
        {column: value}; `matched_update_if`: a condition), `when_not_matched_insert` ("*" or
        {column: value}; `not_matched_insert_if`), `when_not_matched_by_source_delete` (True or
        a condition). Conditions: the filter language over `source.<col>` / `target.<col>`
        ("source.op = 'D'") or pyarrow Expressions; values: literals or pyarrow Expressions
        (`pc.field("source.amount") + pc.field("target.amount")`). Returns a CommitResult with
        rows_updated, rows_inserted, rows_deleted. See docs/guide-delete-update.md."""
        actions = merge.Actions(when_matched_delete, when_matched_update, matched_update_if, when_not_matched_insert,
                                not_matched_insert_if, when_not_matched_by_source_delete)
        return self.core.recorded("merge", lambda: merge.merge(self.core, source, on, actions))

    def update_columns(self, data: RowData) -> CommitResult | None:
        """Data-evolution tables: set columns of the rows `data` names by `_ROW_ID` (an int64
        column; every other column of `data` is a column to set), writing files of only those
        columns, in one commit (docs/guide-row-tracking.md)."""
        return self.core.recorded("update_columns", lambda: row_updates.update_columns(self.core, data))

    def upsert(self, data: RowData, on: str | Sequence[str], columns: list[str] | None = None) -> CommitResult | None:
        """Data-evolution tables: rows of `data` matching table rows on the `on` columns update
        those rows' `columns` (default: all but `on`; files of only those columns), the others
        are appended, in one commit (docs/guide-row-tracking.md)."""
        return self.core.recorded("upsert", lambda: row_updates.upsert(self.core, data, on, columns))

    def overwrite(self, data: RowData, partition: Mapping[str, Any] | None = None,
                  dynamic: bool | None = None) -> CommitResult | None:
        """INSERT OVERWRITE. `partition={...}`: replace that static partition; `dynamic=True`:
        replace only the partitions `data` touches; otherwise the whole table. When neither is
        given on a partitioned table, Paimon's `dynamic-partition-overwrite` option (default
        true) decides."""
        return self.core.recorded("overwrite", lambda: write.overwrite(self.core, data, partition, dynamic))

    def rescale(self, bucket: int | None = None, partitions: list[dict] | None = None) -> CommitResult | None:
        """Rewrite the table's data, or that of `partitions` (dicts of partition column ->
        value; a dict may name only some partition columns), into `bucket` buckets in one
        OVERWRITE commit, as Paimon's rescale overwrite does. `bucket` (default: the table's
        own) becomes the table's 'bucket' option once the data is committed, so the rewritten
        partitions take writes again; other partitions with older bucket counts are refused
        until they are rescaled too. Dynamic-bucket tables (bucket=-1) re-pack their buckets.

        The rewrite reads the latest snapshot; a commit by another writer that changes those
        partitions before the rewrite lands makes it fail (nothing committed, nothing lost):
        stop other writers first. Returns the OVERWRITE snapshot (None: nothing to rescale)."""
        return self.core.recorded("rescale", lambda: rescale.rescale(self.core, bucket, partitions))

    # ------------------------------------------------------------------ reads

    def scan(self, filter: Filter | None = None, columns: list[str] | str | None = None,
             snapshot_id: int | None = None, tag: str | None = None,
             as_of_timestamp_ms=None, limit: int | None = None) -> "Scan":
        """Read the latest snapshot, or travel to a snapshot id, a tag, or the snapshot current
        at a time (falling back to the closest earlier tag once those snapshots expired).
        Time travel reads with the schema of the snapshot it lands on.

        `filter`: a predicate (`col("amount") > 10`), a `pyarrow.compute.Expression` or
        SQL-like text (`"dt = '2026-11-20' and amount > 10"`); values are converted to their
        column's type (InvalidFilter, here, if one does not fit). `columns`: names, or one
        name. `as_of_timestamp_ms`: epoch millis, a datetime (naive: local time), a date, or a
        timedelta (that long ago). `limit`: at most that many rows (after the filter); reading
        stops once they are found."""
        as_of_timestamp_ms = millis_argument(as_of_timestamp_ms, self.name, "as_of_timestamp_ms")
        travelled = not (snapshot_id is None and tag is None and as_of_timestamp_ms is None)
        options = self.core.schema().shape.options
        if not travelled and startup.has_start(options) and startup.is_incremental(options):
            from tarn.ops import incremental

            return incremental.IncrementalScan(self.core, incremental.from_options(self.core, options), filter,
                                               columns, limit)
        start = startup.batch_start(self.core, options, travelled) if startup.has_start(options) else None
        if not travelled and (start is None or not start.pinned):
            scan = self.core.scan_latest(filter, columns, limit)
        else:
            snapshot = start.snapshot if not travelled else time_travel.resolve(
                self.core, snapshot_id, tag, as_of_timestamp_ms)
            if snapshot is not None and not travelled:
                time_travel.check_read_mode(self.core, snapshot)
            scan = self.core.scan_snapshot(snapshot, filter, columns, limit=limit)
        if start is not None:
            scan.bucket, scan.files_from_ms = start.bucket, start.files_from_ms
        return scan

    def changes(self, snapshot_id: int | None = None, *, start=None, end=None, mode: str = "auto") -> pa.Table:
        """Changed rows with their row kind in a first column `_ROW_KIND` ('+I', '-U', '+U', '-D').

        `changes(5)`: what a stream reads from snapshot 5 (its changelog files when the table has a
        `changelog-producer`, otherwise the data files of an APPEND/OVERWRITE snapshot).
        `changes(start=a, end=b)`: Paimon's incremental read of the snapshots after `a` up to `b`
        (default: the latest): snapshot ids (int), tag names (str) or times (datetime; naive:
        local time). `mode`: `auto` (changelog files with a changelog producer, else the rows
        APPEND snapshots wrote), `delta`, `changelog`, or `diff` (the two snapshots compared per
        key: new and changed rows as +I, removed ones as -D; two tags diff by default).
        See docs/changelog-producers.md."""
        if start is None and end is None:
            if snapshot_id is None:
                raise InvalidArgument(f"table {self.name}: changes() needs a snapshot id, or start= (and end=)")
            from tarn.scan.changes import snapshot_changes

            return snapshot_changes(self.core, snapshot_id)
        if snapshot_id is not None or start is None:
            raise InvalidArgument(f"table {self.name}: changes() takes a snapshot id or start= (and end=), not both")
        from tarn.ops import incremental

        return incremental.read(self.core, incremental.between(self.core, start, end, mode))

    def consumer(self, consumer_id: str, start: str = "latest-full"):
        """A named consumer of this table's changes (Paimon's `consumer-<id>` file): `read()` the
        rows since it last committed, `commit()` to move on; expiry keeps what it has not read.
        `start` for a new consumer: "latest-full" (the latest snapshot's rows, then changes) or
        "earliest". See tarn/ops/consumer.py and docs/guide-maintenance.md."""
        from tarn.ops.consumer import Consumer

        return Consumer(self.core, consumer_id, start)

    # ------------------------------------------------------------------ tags, expiry, rollback

    def create_tag(self, name: str, snapshot_id: int | None = None, time_retained=None,
                   ignore_if_exists: bool = False):
        """Tag a snapshot (default: the latest); `time_retained` as timedelta, millis or "1 d"."""
        return tags.create_tag(self.core, name, snapshot_id, time_retained, ignore_if_exists)

    def delete_tag(self, name: str) -> None:
        """Delete a tag and exactly the files nothing else still uses."""
        tags.delete_tag(self.core, name)

    def rename_tag(self, name: str, new_name: str) -> None:
        """Rename a tag; SnapshotNotFound if it does not exist, InvalidArgument if `new_name` does."""
        tags.rename_tag(self.core, name, new_name)

    def replace_tag(self, name: str, snapshot_id: int | None = None, time_retained=None):
        """Point an existing tag at another snapshot (default: the latest), with a new
        `time_retained` (the files only the old snapshot held are not freed here)."""
        return tags.replace_tag(self.core, name, snapshot_id, time_retained)

    def list_tags(self) -> list:
        """Every tag (name, snapshot, creation time, retention), by tagged snapshot id then name."""
        return tags.list_tags(self.core)

    def expire_snapshots(self, retain_min: int | None = None, retain_max: int | None = None,
                         older_than_ms: int | None = None, max_deletes: int | None = None) -> int:
        """Expire snapshots by the retention options (or these overrides); returns how many.
        Options: `snapshot.num-retained.min` (10), `snapshot.num-retained.max`,
        `snapshot.time-retained` (1 h), `snapshot.expire.limit` (50); tagged snapshots' files
        and snapshots a consumer has not read stay. Runs after every commit unless `write-only`."""
        expired = expire.expire_snapshots(self.core, retain_min, retain_max, older_than_ms, max_deletes)
        changelog_expire.expire_changelogs(self.core)  # long-lived changelogs, when the table keeps them
        return expired

    def expire_partitions(self, expiration_time=None, timestamp_formatter: str | None = None,
                          timestamp_pattern: str | None = None, expire_strategy: str | None = None,
                          max_expires: int | None = None, options: dict | str | None = None) -> list[str]:
        """Drop the partitions older than `expiration_time` ('7 d' or a timedelta; default:
        the table's `partition.expiration-time`) now, as Paimon's `expire_partitions`
        procedure: by their values (`expire_strategy` 'values-time', read with
        `timestamp_pattern` / `timestamp_formatter`) or their newest file ('update-time'), at
        most `max_expires`. Returns the dropped partitions (`"dt=2026-01-01"`); each batch is
        one OVERWRITE commit. Tables with `partition.expiration-time` also do this after
        commits (tarn/ops/partition_expire.py)."""
        return partition_expire.expire_partitions(self.core, expiration_time, timestamp_formatter,
                                                  timestamp_pattern, expire_strategy, max_expires, options)

    def rollback_to(self, target: int | str) -> Snapshot:
        """Make the table hold exactly snapshot `target` (an id) or tag `target` (a name) again."""
        return rollback.rollback_to(self.core, target)

    # ------------------------------------------------------------------ branches

    def create_branch(self, name: str, from_tag: str | None = None, ignore_if_exists: bool = False) -> "Table":
        """Create branch `name`: empty (this branch's schemas, no snapshot) or from tag
        `from_tag` (the tagged snapshot); returns the branch as a Table. Names: not 'main', not
        blank or numeric, no '$' or '/'. See docs/guide-branches.md."""
        branches.create_branch(self.core, name, from_tag, ignore_if_exists)
        return self.branch_table(name)

    def branch_table(self, name: str) -> "Table":
        """Branch `name` of this table (`"main"` for the main branch) as a Table every verb works on."""
        base = self.name.split("$", 1)[0]
        label = base if name == "main" else f"{base}$branch_{name}"
        return Table(self.core.file_io, self.root, label, branch=name)

    def delete_branch(self, name: str) -> None:
        """Delete branch `name` (its snapshots, schemas and tags); the data files only it used
        are left to `remove_orphan_files`, as in Paimon."""
        branches.delete_branch(self.core, name)

    def list_branches(self) -> list[str]:
        """The names of every branch but main, sorted (`system_table("branches")` adds each
        one's creation time)."""
        return [b.name for b in branches.list_branches(self.core)]

    def fast_forward(self, name: str):
        """Make this branch (usually main) hold branch `name`'s history from the branch's first
        snapshot on: this branch's snapshots, tags and schemas from there are replaced by the
        branch's. Returns a `FastForward` (what was dropped, the new latest snapshot)."""
        return branches.fast_forward(self.core, name)

    # ------------------------------------------------------------------ statistics

    def analyze(self, columns: list[str] | None = None) -> CommitResult | None:
        """Paimon's ANALYZE: gather the statistics of the latest snapshot (merged record count and
        size; per column, all or `columns`, distinct count, min, max, null count, average and
        maximum length) and commit them as an ANALYZE snapshot, which it returns (None: no
        snapshot yet). See docs/guide-statistics.md."""
        return self.core.recorded("analyze", lambda: analyze.analyze(self.core, columns))

    def statistics(self, snapshot_id: int | None = None) -> "Statistics | None":
        """The statistics the latest snapshot (or `snapshot_id`) carries, min/max typed as the
        columns; None when it carries none."""
        return counts.read_statistics(self.core, snapshot_id)

    def system_table(self, name: str) -> "SystemTable":
        """`$snapshots`, `$schemas`, `$options`, `$tags`, `$files`, `$manifests`, `$partitions`,
        `$buckets`, `$consumers`, `$table_indexes`, `$statistics`, `$row_tracking` (row-tracking
        tables: the rows with `_ROW_ID` and `_SEQUENCE_NUMBER`; the `$` is optional) with Paimon's
        column names."""
        return SystemTable(system_tables.system_table(self.core, name))

    def remove_orphan_files(self, older_than=None, dry_run: bool = False) -> list[str]:
        """Delete (or with dry_run, list) files under the table nothing references, older than
        `older_than` (epoch millis or datetime; default one day ago)."""
        return orphans.remove_orphan_files(self.core, older_than, dry_run)


@dataclass(frozen=True)
class SystemTable:
    """A system table's rows (read when the table method is called)."""

    rows: pa.Table

    def __repr__(self) -> str:
        names = self.rows.column_names
        shown = ", ".join(names[:8]) + (f", ... {len(names) - 8} more" if len(names) > 8 else "")
        return f"SystemTable({self.rows.num_rows} rows; columns {shown})"

    def to_arrow(self) -> pa.Table:
        return self.rows

    def to_pandas(self):
        return self.rows.to_pandas()


def load_table(path: str, storage_options: dict | None = None, *, filesystem=None, lock=None,
               branch: str | None = None) -> Table:
    """Open the table stored at `path`: a local path, `s3://bucket/path`, another pyarrow URI,
    or a path inside `filesystem` (storage options and lock: docs/object-stores.md).
    `branch`, or a path ending in `$branch_<name>`: that branch of the table."""
    path = location_argument(path, "table path")
    path, named = split_branch_path(path)
    if branch is not None and named is not None and branch != named:
        raise InvalidArgument(f"table path {path}: branch '{named}' in the path and branch='{branch}' differ")
    file_io, root = file_io_for(path, storage_options, filesystem, lock)
    chosen = branch or named or "main"
    return Table(file_io, root, None if chosen == "main" else f"{root}$branch_{chosen}", branch=chosen)


def split_branch_path(path: str) -> tuple[str, str | None]:
    """`/wh/db.db/t$branch_dev` -> (`/wh/db.db/t`, 'dev'); a path without one -> (path, None)."""
    head, sep, tail = path.rstrip("/").rpartition("/")
    if "$" not in tail:
        return path, None
    name, branch = branch_of(tail, f"table path {path}")
    return head + sep + name, branch
