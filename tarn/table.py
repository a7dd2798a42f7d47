"""The Table facade: write, delete, overwrite, scan, alter, snapshots."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from tarn import features, maintenance, partition, system_tables
from tarn.maintenance import expire, orphans, rollback, tags, time_travel
from tarn.maintenance import statistics as table_stats
from tarn.commit.committer import Committer, Overwrite
from tarn.append_compaction import compact as compact_append
from tarn.delete import delete_where
from tarn.update import update_where
from tarn.errors import (CommitConflict, FileMissing, InvalidArgument, InvalidOption, SchemaMismatch, SnapshotNotFound,
                         TableNotFound, TarnError, UnsupportedFeature)
from tarn.fs import FileIO, file_io_for
from tarn.meta.schema import SetOption, TableSchema, apply_changes
from tarn.meta.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from tarn.options import Options, is_immutable
from tarn.scan.planner import Planner, Split, planner_for
from tarn.errors import MissingDependency
from tarn.errors import OutcomeUnknown, StorageError
from tarn.scan.arguments import limit_argument, location_argument, millis_argument, names_argument
from tarn.scan.filters import RowFilterReader, scan_filter
from tarn.scan.predicate import Predicate
from tarn.scan.reader import SplitReader, parallel_map
from tarn.store.context import TableContext
from tarn.types import arrow_schema
from tarn.validate import validate_change
from tarn.write.conform import check_static_partition, to_arrow_table
from tarn.write.message import CommitMessage
from tarn.lsm.merge import merge_spec_of
from tarn.write.writer import TableWriter, abort, restore_from

log = logging.getLogger(__name__)


class Table(TableContext):
    """One Paimon table at `root`: its storage (TableContext) plus the verbs users call. Cheap
    to create; every operation reads the latest state."""

    def __init__(self, file_io: FileIO, root: str, name: str | None = None):
        super().__init__(file_io, root, name)
        self.last_maintenance_errors: list[Exception] = []
        if self.schema() is None:
            raise TableNotFound(f"no Paimon table at {self.root} (no schema/schema-N file)")

    def __repr__(self) -> str:
        """`Table('db.t', primary_key=[...], partition_keys=[...], bucket=N, snapshot=N)`, read from
        the latest schema and snapshot (just the name if they cannot be read)."""
        try:
            return f"Table({', '.join(self._repr_parts())})"
        except Exception:  # a repr never raises: an unreadable table still shows its name
            return f"Table({self.name!r})"

    def _repr_parts(self) -> list[str]:
        schema, latest = self.schema(), self.snapshot_store.latest_id()
        bucket = schema.options.get("bucket", "-1")
        parts = [repr(self.name)]
        parts += [f"{key}={list(value)!r}" for key, value in
                  (("primary_key", schema.primary_keys), ("partition_keys", schema.partition_keys)) if value]
        if bucket != "-1":
            parts.append(f"bucket={bucket}")
        elif schema.primary_keys:
            parts.append("bucket=dynamic")
        return parts + [f"snapshot={latest}"]

    # ------------------------------------------------------------------ metadata

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
        return [self.snapshot_store.get(i) for i in self.snapshot_store.list_ids()]

    def alter(self, *changes) -> TableSchema:
        """Schema evolution: `table.alter(tarn.AddColumn("c", tarn.types.INT()), tarn.RenameColumn("a", "b"))`.

        Option changes are validated like options at creation; options Paimon treats as
        immutable (`bucket-key`, `merge-engine`, `sequence.field`, ...) cannot change."""
        before = self.schema()
        after = apply_changes(before, changes)
        validate_change(before, after, self.name)
        for key in set(before.options) | set(after.options):
            if before.options.get(key) != after.options.get(key) and is_immutable(key):
                raise InvalidOption(f"table {self.name}: option '{key}' cannot be changed after creation")
        self._check_deletion_vector_switch(before, after)
        return self.schema_store.alter(changes)

    def _check_deletion_vector_switch(self, before: TableSchema, after: TableSchema) -> None:
        """The PIP's migration rule: switch 'deletion-vectors.enabled' on a primary-key table only
        after a full compaction (every file at the top level, no deletion vector left)."""
        was = bool(Options(before.options).bool("deletion-vectors.enabled"))
        will = bool(Options(after.options).bool("deletion-vectors.enabled"))
        latest = self.latest_snapshot()
        if was == will or not before.primary_keys or latest is None:
            return
        from tarn.lsm.policy import num_levels

        top = num_levels(Options(before.options)) - 1
        low = [e.file.file_name for e in self.live_entries(latest, before) if e.file.level != top]
        held = self.manifests(before).read_index_manifest(latest.index_manifest) if latest.index_manifest else []
        if low or any(e.index_type == "DELETION_VECTORS" for e in held):
            raise TarnError(f"table {self.name}: run a full compaction (table.compact(full=True)) before "
                            f"switching 'deletion-vectors.enabled' to {str(will).lower()}")

    # ------------------------------------------------------------------ plumbing

    def planner(self, schema: TableSchema | None = None) -> Planner:
        """The scan planner (snapshot -> manifests -> pruned files -> splits) for `schema`
        (default: the latest); engines such as tarn.spark use it, users call `scan()`."""
        return planner_for(self, schema)

    def committer(self, schema: TableSchema | None = None) -> Committer:
        """The committer that turns commit messages into a snapshot (conflict checks, retries
        up to `commit.max-retries`); users call `commit()` or `write()`."""
        schema = schema or self.schema()
        return Committer(self, schema or self.schema())

    def new_writer(self, ignore_previous_files: bool = False, options: dict | None = None,
                   index_snapshot=None) -> TableWriter:
        """A writer for one commit: `write()` any number of batches, then `commit()` its messages.
        `ignore_previous_files` (INSERT OVERWRITE): start every bucket empty, as Java does, so
        the writer never compacts files the overwrite removes, and write no changelog files (an
        overwrite commits none). `options` override table options for this writer only (file
        prefixes, write tuning). `index_snapshot` (dynamic buckets given with the rows): the
        snapshot id, or a function giving it, whose HASH index the buckets were assigned against."""
        schema = self.schema()
        restore = (lambda: {}) if ignore_previous_files else restore_from(self, schema, index_snapshot=index_snapshot)
        return TableWriter(self.file_io, self.root, self.name, schema, Options({**schema.options, **(options or {})}),
                           restore, self.schema_by_id, produce_changelog=not ignore_previous_files)

    def commit(self, messages: list[CommitMessage], commit_user: str | None = None,
               commit_identifier: int = BATCH_COMMIT_IDENTIFIER, overwrite: Overwrite | None = None,
               watermark: int | None = None, expected_base: int | None = None) -> Snapshot | None:
        """Commit writer messages (an APPEND or OVERWRITE snapshot, then a COMPACT one for their
        compaction part). It returns once the snapshot landed; raises `OutcomeUnknown` when the
        store could not tell whether it did (every file is kept); any other error means it did
        not land, and the files no snapshot references are deleted. A compaction part that
        fails after the data landed is dropped and the data commit stands. Work after the
        commit (a dropped compaction's files, tags, expiry) never turns a landed commit into an
        error: its failures
        are logged and kept in `last_maintenance_errors`. `expected_base`: the commit fails
        (CommitConflict) unless it lands directly on that snapshot id (0: an empty table)."""
        schema = self.schema()
        try:
            features.check_write(self.name, schema)  # writers checked it before writing; the schema may have moved
        except UnsupportedFeature:
            abort(self.file_io, self.root, schema, messages)
            raise
        committer = self.committer(schema)
        self.last_maintenance_errors = []
        try:
            snapshot = committer.commit(messages, commit_user or str(uuid.uuid4()),
                                        commit_identifier, overwrite, watermark, expected_base=expected_base)
        except BaseException:  # not landed (OutcomeUnknown: maybe landed, every file stays)
            if not committer.outcome_unknown:
                _best_effort(self, "deleting the files of a failed commit", lambda: abort(
                    self.file_io, self.root, schema, messages, keep=committer.landed_files))
            raise
        # `+=` on the list maintenance steps append to (kept_error): none of their failures is lost
        self.last_maintenance_errors += _after_landed(self, committer, schema, messages)
        return snapshot

    # ------------------------------------------------------------------ writes

    def write(self, data, row_kind=None) -> Snapshot | None:
        """Write rows in one commit: upsert for primary-key tables, append otherwise. `data`: a
        pyarrow Table, RecordBatch(es) or RecordBatchReader, a dict of columns, a pandas or
        polars DataFrame, or any Arrow PyCapsule stream; columns matched by name, cast only
        when lossless. `row_kind`: '+I', '-U', '+U', '-D' (or 0-3) for all rows or per row.
        Returns the snapshot (None when nothing was written)."""
        writer = self.new_writer()
        try:
            writer.write(data, row_kind=row_kind)
        except BaseException:  # a flush failed: delete the files earlier flushes wrote
            abort(self.file_io, self.root, writer.schema, writer.messages())
            raise
        commit_user = str(uuid.uuid4())
        snapshot = self.commit(writer.prepare_commit(), commit_user=commit_user)
        failure = _best_effort(self, "keeping the key index for the next write",  # cross-partition tables
                               lambda: writer.keep_key_index(self, commit_user))
        self.last_maintenance_errors += [failure] if failure else []
        return snapshot

    def compact(self, full: bool = False, partitions: list[dict] | None = None) -> Snapshot | None:
        """Compact the table in one COMPACT snapshot (None: nothing was due). `partitions`
        limits it to those partitions (dicts of partition column -> value).

        Primary-key buckets: `full=True` rewrites every bucket into one sorted run at the top
        level; otherwise universal compaction picks what is due. Append tables
        (tarn/append_compaction.py): small files are merged in sequence order into files of
        `target-file-size` (`compaction.min.file-num`, `compaction.small-file-ratio`, ...), rows
        their deletion vectors mark are dropped; `full=True` rewrites each bucket (partition,
        in unaware-bucket tables) as Paimon's full compaction does."""
        schema = self.schema()
        if not schema.primary_keys:
            return compact_append(self, full, partitions)
        writer = self.new_writer()
        buckets = sorted(writer.restored_buckets())
        if partitions is not None:
            wanted = {partition.to_bytes(schema, [p.get(k) for k in schema.partition_keys]) for p in partitions}
            buckets = [b for b in buckets if b[0] in wanted]
        return self.commit(writer.compact(buckets, full))

    def delete(self, keys=None, *, filter=None) -> Snapshot | None:
        """Delete rows in one commit: by primary key (`keys`: rows holding at least the key
        columns; written as -D rows), or every row matching `filter` (whatever `scan` takes: a
        predicate, a pyarrow Expression, a SQL-like string; tarn/delete.py: -D rows on
        primary-key tables, deletion vectors on append tables with deletion-vectors.enabled,
        otherwise the files holding matches are rewritten)."""
        if filter is not None:
            if keys is not None:
                raise InvalidArgument(f"table {self.name}: delete takes keys or filter, not both")
            return delete_where(self, filter)
        schema = self.schema()
        if not schema.primary_keys:
            raise SchemaMismatch(f"table {self.name}: delete by key needs a primary-key table")
        rows = _complete_rows(to_arrow_table(keys, self.name), schema, self.name)
        return self.write(rows, row_kind="-D")

    def update(self, set: dict, filter=None) -> Snapshot | None:
        """Set columns on every row matching `filter` (whatever `scan` takes; None: all rows)
        in one commit; None when no row matches. `set`: column -> a literal (converted with
        the column's type as filter values are; None is NULL) or a pyarrow Expression over the
        row's columns (`pc.field("amount") * 2`, evaluated on the rows before the update).
        Primary-key tables: an upsert of the updated rows (key and partition columns cannot
        be set; merge engines deduplicate and partial-update). Append tables without deletion
        vectors: the files holding matches are rewritten in one OVERWRITE. See tarn/update.py
        and docs/guide-delete-update.md."""
        return update_where(self, set, filter)

    def overwrite(self, data, partition: dict | None = None, dynamic: bool | None = None) -> Snapshot | None:
        """INSERT OVERWRITE. `partition={...}`: replace that static partition; `dynamic=True`:
        replace only the partitions `data` touches; otherwise the whole table. When neither is
        given on a partitioned table, Paimon's `dynamic-partition-overwrite` option (default
        true) decides."""
        schema = self.schema()
        options = Options(schema.options)
        table = to_arrow_table(data, self.name)
        if partition:
            unknown = [k for k in partition if k not in schema.partition_keys]
            if unknown:
                raise SchemaMismatch(f"table {self.name}: {unknown} are not partition keys "
                                     f"(partition keys: {list(schema.partition_keys)})")
            check_static_partition(table, partition, self.name)
            spec = Overwrite(static=dict(partition))
        else:
            if dynamic is None:
                dynamic = bool(schema.partition_keys) and options.bool("dynamic-partition-overwrite")
            spec = Overwrite(dynamic=bool(dynamic) and bool(schema.partition_keys))
        writer = self.new_writer(ignore_previous_files=True)
        if table.num_rows:
            writer.write(table)
        messages = writer.prepare_commit()
        if spec.dynamic and not messages:
            return None
        return self.commit(messages, overwrite=spec)

    def rescale(self, bucket: int | None = None, partitions: list[dict] | None = None) -> Snapshot | None:
        """Rewrite the table's data, or that of `partitions` (dicts of partition column ->
        value; a dict may name only some partition columns), into `bucket` buckets in one
        OVERWRITE commit, as Paimon's rescale overwrite does. `bucket` (default: the table's
        own) becomes the table's 'bucket' option once the data is committed, so the rewritten
        partitions take writes again; other partitions with older bucket counts are refused
        until they are rescaled too. Dynamic-bucket tables (bucket=-1) re-pack their buckets.

        The rewrite reads the latest snapshot; a commit by another writer that changes those
        partitions before the rewrite lands makes it fail (nothing committed, nothing lost):
        stop other writers first. Returns the OVERWRITE snapshot (None: nothing to rescale)."""
        plan = plan_rescale(self, bucket, partitions)
        if plan is None:
            return None
        writer = rescale_writer(self, plan)
        reader = self.scan_snapshot(plan.base, schema=plan.schema).reader()
        try:
            for split in plan.splits:
                for chunk in reader.read_chunks(split):
                    if chunk.num_rows:
                        writer.write(chunk)
            messages = writer.prepare_commit()
        except BaseException:
            abort(self.file_io, self.root, writer.schema, writer.messages())
            raise
        return commit_rescale(self, plan, messages)

    # ------------------------------------------------------------------ reads

    def scan(self, filter=None, columns: list[str] | str | None = None,
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
        if snapshot_id is None and tag is None and as_of_timestamp_ms is None:
            scan = self.scan_snapshot(self.latest_snapshot(), filter, columns, self.schema(), limit)
            scan.follows_latest = True
            return scan
        snapshot = time_travel.resolve(self, snapshot_id, tag, as_of_timestamp_ms)
        return self.scan_snapshot(snapshot, filter, columns, limit=limit)

    def scan_snapshot(self, snapshot: Snapshot | None, filter=None, columns: list[str] | str | None = None,
                      schema: TableSchema | None = None, limit: int | None = None) -> "Scan":
        """A scan of this exact snapshot (with its own schema unless `schema` is given);
        `filter`, `columns` and `limit` as in `scan`."""
        if schema is None:
            schema = self.schema_by_id(snapshot.schema_id) if snapshot is not None else self.schema()
        names = schema.field_names
        columns = names_argument(columns, self.name, "columns")
        if columns is not None:
            unknown = [c for c in columns if c not in names]
            features.check_system_columns(self.name, unknown)
            if unknown:
                raise SchemaMismatch(f"table {self.name}: unknown column(s) {unknown} (columns: {names})")
        found = scan_filter(filter, schema.fields, self.name)
        return Scan(self, schema, snapshot, found.predicate, columns, limit=limit_argument(limit, self.name),
                    row_filter=found.row_filter, row_filter_columns=found.row_filter_columns)

    def changes(self, snapshot_id: int) -> pa.Table:
        """The rows snapshot `snapshot_id` added, with their row kind in a first column
        `_ROW_KIND` ('+I', '-U', '+U', '-D'): its changelog files when the table has a
        `changelog-producer`, otherwise the data files of an APPEND/OVERWRITE snapshot."""
        from tarn.scan.changes import snapshot_changes

        return snapshot_changes(self, snapshot_id)

    # ------------------------------------------------------------------ tags, expiry, rollback

    def create_tag(self, name: str, snapshot_id: int | None = None, time_retained=None,
                   ignore_if_exists: bool = False):
        """Tag a snapshot (default: the latest); `time_retained` as timedelta, millis or "1 d"."""
        return tags.create_tag(self, name, snapshot_id, time_retained, ignore_if_exists)

    def delete_tag(self, name: str) -> None:
        """Delete a tag and exactly the files nothing else still uses."""
        tags.delete_tag(self, name)

    def rename_tag(self, name: str, new_name: str) -> None:
        """Rename a tag; SnapshotNotFound if it does not exist, InvalidArgument if `new_name` does."""
        tags.rename_tag(self, name, new_name)

    def replace_tag(self, name: str, snapshot_id: int | None = None, time_retained=None):
        """Point an existing tag at another snapshot (default: the latest), with a new
        `time_retained` (the files only the old snapshot held are not freed here)."""
        return tags.replace_tag(self, name, snapshot_id, time_retained)

    def list_tags(self) -> list:
        """Every tag (name, snapshot, creation time, retention), by tagged snapshot id then name."""
        return tags.list_tags(self)

    def expire_snapshots(self, retain_min: int | None = None, retain_max: int | None = None,
                         older_than_ms: int | None = None, max_deletes: int | None = None) -> int:
        """Expire snapshots by the retention options (or these overrides); returns how many.
        Options: `snapshot.num-retained.min` (10), `snapshot.num-retained.max`,
        `snapshot.time-retained` (1 h), `snapshot.expire.limit` (50); tagged snapshots' files
        and snapshots a consumer has not read stay. Runs after every commit unless `write-only`."""
        return expire.expire_snapshots(self, retain_min, retain_max, older_than_ms, max_deletes)

    def rollback_to(self, target: int | str) -> Snapshot:
        """Make the table hold exactly snapshot `target` (an id) or tag `target` (a name) again."""
        return rollback.rollback_to(self, target)

    # ------------------------------------------------------------------ statistics

    def analyze(self, columns: list[str] | None = None) -> Snapshot | None:
        """Paimon's ANALYZE: gather the statistics of the latest snapshot (merged record count and
        size; per column, all or `columns`, distinct count, min, max, null count, average and
        maximum length) and commit them as an ANALYZE snapshot, which it returns (None: no
        snapshot yet). See docs/guide-statistics.md."""
        return table_stats.analyze(self, columns)

    def statistics(self, snapshot_id: int | None = None) -> "table_stats.Statistics | None":
        """The statistics the latest snapshot (or `snapshot_id`) carries, min/max typed as the
        columns; None when it carries none."""
        return table_stats.read_statistics(self, snapshot_id)

    def system_table(self, name: str) -> "SystemTable":
        """`$snapshots`, `$schemas`, `$options`, `$tags`, `$files`, `$manifests`, `$partitions`,
        `$buckets`, `$consumers`, `$table_indexes`, `$statistics` (the `$` is optional) with
        Paimon's column names."""
        return SystemTable(system_tables.system_table(self, name))

    def remove_orphan_files(self, older_than=None, dry_run: bool = False) -> list[str]:
        """Delete (or with dry_run, list) files under the table nothing references, older than
        `older_than` (epoch millis or datetime; default one day ago)."""
        return orphans.remove_orphan_files(self, older_than, dry_run)


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


@dataclass
class Scan:
    """The rows of one snapshot that `table.scan(...)` selects; nothing is read until a
    reading method runs, and each run reads again.

    Readers: `to_arrow()`, `to_pandas()`, `to_polars()`, `to_duckdb(name)`, `to_batches()`,
    `to_arrow_batch_reader()`; any Arrow PyCapsule consumer (`pa.table(scan)`,
    `polars.DataFrame(scan)`, DuckDB) reads it through `__arrow_c_stream__`. `count()` counts
    the rows, `plan()` lists the splits (one per file of an append table, one per bucket of a
    primary-key table).

    `filter`: the tarn predicate (literals in the columns' types) that prunes partitions and
    files and filters rows; `row_filter`: a pyarrow Expression, or the part of one tarn could
    not translate, applied to the rows after the read; `limit`: at most that many rows."""

    table: Table
    schema: TableSchema
    snapshot: Snapshot | None
    filter: Predicate | None = None
    columns: list[str] | None = None
    _splits: list[Split] | None = field(default=None, repr=False)

    follows_latest: bool = False  # a scan of "the latest snapshot", not of a pinned one
    limit: int | None = None
    row_filter: pc.Expression | None = None
    row_filter_columns: tuple[str, ...] = ()  # the columns `row_filter` reads

    def __repr__(self) -> str:
        parts = [f"table={self.table.name}", f"snapshot={self.snapshot.id if self.snapshot else None}"]
        if self.filter is not None:
            parts.append(f"filter={self.filter!r}")
        if self.row_filter is not None:
            parts.append(f"row_filter={self.row_filter}")
        if self.columns is not None:
            parts.append(f"columns={self.columns!r}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        return f"Scan({', '.join(parts)})"

    def plan(self) -> list[Split]:
        """The splits to read, planned once (partitions, manifests and files the filter rules
        out are skipped)."""
        if self._splits is None:
            self._splits = self._retrying(
                lambda: self.table.planner(self.schema).plan(self.snapshot, self.filter))
        return self._splits

    def _retrying(self, read):
        """Run `read`; when a scan of the latest snapshot finds a file gone because expiry
        removed its snapshot meanwhile, move to the new latest snapshot and read again."""
        for _ in range(5):
            try:
                return read()
            except (FileMissing, SnapshotNotFound):
                if not self._move_to_latest():
                    raise
        return read()

    def _move_to_latest(self) -> bool:
        """Re-pin a latest-snapshot scan after its snapshot expired; False if nothing changed."""
        if not self.follows_latest:
            return False
        latest = self.table.latest_snapshot()
        if latest is None or (self.snapshot is not None and latest.id == self.snapshot.id
                              and self.table.snapshot_store.exists(latest.id)):
            return False
        self.snapshot, self._splits = latest, None
        return True

    def reader(self) -> SplitReader:
        """The reader of this scan's splits: rows merged, filtered (filter and row_filter) and
        shaped as the scan's columns; `limit` is not applied."""
        schema = self.schema
        names = self.columns if self.columns is not None else schema.field_names
        read_fields = [schema.field(n) for n in names]
        options = Options(schema.options)
        spec = merge_spec_of(schema, options) if schema.primary_keys else None
        features.check_columns(self.table.name, read_fields)
        if spec is not None and spec.engine != "deduplicate":
            features.check_columns(self.table.name, schema.fields)  # merged across every column
        if self.row_filter is not None:
            return RowFilterReader(self.table.file_io, schema, self.table.schema_by_id, options, read_fields,
                                   self.filter, spec, self.row_filter, self.row_filter_columns)
        return SplitReader(self.table.file_io, schema, self.table.schema_by_id, options, read_fields,
                           self.filter, spec)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the rows this scan returns."""
        names = self.columns if self.columns is not None else self.schema.field_names
        return arrow_schema([self.schema.field(n) for n in names])

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as Arrow record batches, split after split (memory bounded by a split);
        with `limit`, no split is read once enough rows came."""
        remaining = self.limit
        if remaining == 0:
            return
        reader = self.reader()
        for split in self.plan():
            for table in reader.read_chunks(split):
                for batch in table.to_batches():
                    if remaining is not None:
                        if batch.num_rows >= remaining:
                            yield batch.slice(0, remaining)
                            return
                        remaining -= batch.num_rows
                    yield batch

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """A `pyarrow.RecordBatchReader` streaming the rows (read as it is consumed)."""
        return pa.RecordBatchReader.from_batches(self.arrow_schema, self.to_batches())

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream protocol: `pa.table(scan)`, `polars.DataFrame(scan)`,
        DuckDB and other consumers read the scan as a stream of batches."""
        return self.to_arrow_batch_reader().__arrow_c_stream__(requested_schema)

    def to_arrow(self) -> pa.Table:
        """All rows as one Arrow table (splits read in parallel; with `limit`, in order until
        enough rows came)."""
        return self._retrying(self._read_all)

    def _read_all(self) -> pa.Table:
        if self.limit is not None:
            return pa.Table.from_batches(list(self.to_batches()), schema=self.arrow_schema)
        reader = self.reader()
        tables = parallel_map(reader.read, self.plan())
        if not tables:
            return self.arrow_schema.empty_table()
        return pa.concat_tables(tables)

    def to_pandas(self, **kwargs):
        """All rows as a pandas DataFrame; keyword arguments go to `pyarrow.Table.to_pandas`."""
        table = self.to_arrow()
        try:
            return table.to_pandas(**kwargs)
        except ImportError as e:
            raise MissingDependency(f"Scan.to_pandas needs pandas: pip install 'tarn-lake[pandas]' ({e})") from None

    def to_polars(self):
        """All rows as a `polars.DataFrame` (needs polars: pip install 'tarn-lake[polars]')."""
        try:
            import polars
        except ImportError:
            raise MissingDependency("Scan.to_polars needs polars: pip install 'tarn-lake[polars]'") from None
        return polars.from_arrow(self.to_arrow())

    def to_duckdb(self, name: str, connection=None):
        """Register the rows (read now) as the DuckDB view `name` in `connection` (default: a
        new in-memory database) and return the connection: `scan.to_duckdb("t").sql("SELECT
        ... FROM t")`. Needs duckdb: pip install 'tarn-lake[duckdb]'."""
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"table {self.table.name}: to_duckdb needs a view name (a string), got {name!r}")
        try:
            import duckdb
        except ImportError:
            raise MissingDependency("Scan.to_duckdb needs duckdb: pip install 'tarn-lake[duckdb]'") from None
        connection = duckdb.connect() if connection is None else connection
        connection.register(name, self.to_arrow())
        return connection

    def count(self) -> int:
        """The rows this scan returns, from manifests where they tell (append tables, buckets
        needing no merge, fresh statistics of primary-key tables), else by reading."""
        return self._retrying(lambda: table_stats.count(self))

    def estimates(self) -> list["table_stats.SplitEstimate"]:
        """A guess of the rows and bytes each planned split returns, from metadata only."""
        return self._retrying(lambda: table_stats.estimates(self))


# ---------------------------------------------------------------------------------------------
# rescale (`Table.rescale`, `tarn.spark.maintenance.rescale`)


@dataclass
class RescalePlan:
    """A rescale decided on the latest snapshot: what is read, how it is written, what the
    commit replaces."""

    base: Snapshot
    schema: TableSchema
    bucket: int  # the bucket count the data is written with
    partitions: frozenset | None  # partition bytes rewritten; None: the whole table
    splits: list[Split]

    @property
    def writer_options(self) -> dict:
        return {**self.schema.options, "bucket": str(self.bucket)}


def plan_rescale(table: Table, bucket: int | None, partitions: list[dict] | None) -> RescalePlan | None:
    """Check the request and pick the data to rewrite (None: the table or partitions hold no
    files)."""
    schema = table.schema()
    current = Options(schema.options).int("bucket")
    target = current if bucket is None else int(bucket)
    if current == -1 and target != -1:
        raise InvalidArgument(f"table {table.name}: a bucket=-1 table cannot be rescaled to {target} buckets "
                              "(Paimon cannot change 'bucket' from -1); rescale() re-packs its buckets")
    if current != -1 and target <= 0:
        raise InvalidArgument(f"table {table.name}: rescale needs a bucket count > 0, got {target}")
    if current == -1 and not schema.primary_keys:
        raise InvalidArgument(f"table {table.name}: a bucket-unaware append table has no buckets to rescale")
    if partitions is not None and not schema.partition_keys:
        raise InvalidArgument(f"table {table.name}: partitions given, but the table is not partitioned")
    for spec in partitions or []:
        unknown = [k for k in spec if k not in schema.partition_keys]
        if unknown or not spec:
            raise SchemaMismatch(f"table {table.name}: {unknown or 'an empty dict'} in partitions: name partition "
                                 f"columns {list(schema.partition_keys)}")
    base = table.latest_snapshot()
    if base is None:
        return None
    scan = table.scan_snapshot(base, schema=schema)
    splits = scan.plan()
    chosen = None
    if partitions is not None:
        chosen = frozenset(s.partition for s in splits
                           if any(_partition_matches(schema, s.partition_values, spec) for spec in partitions))
        splits = [s for s in splits if s.partition in chosen]
    if not splits:
        return None
    return RescalePlan(base, schema, target, chosen, splits)


def _partition_matches(schema: TableSchema, values: tuple, spec: dict) -> bool:
    named = dict(zip(schema.partition_keys, values))
    return all(named[k] == v or (named[k] is not None and str(named[k]) == str(v)) for k, v in spec.items())


def rescale_writer(table: Table, plan: RescalePlan, options: dict | None = None) -> TableWriter:
    """A writer of the rewritten rows: every bucket starts empty (the overwrite replaces them),
    `plan.bucket` buckets, a fresh dynamic-bucket index, no changelog."""
    return TableWriter(table.file_io, table.root, table.name, plan.schema,
                       Options({**plan.writer_options, **(options or {})}), lambda: {}, table.schema_by_id,
                       produce_changelog=False)


def commit_rescale(table: Table, plan: RescalePlan, messages: list[CommitMessage],
                   commit_user: str | None = None) -> Snapshot | None:
    """Commit a rescale's messages as one OVERWRITE of its partitions, failing if another
    writer changed them since `plan.base`; then make `plan.bucket` the table's option."""
    committer = RescaleCommitter(table, plan.schema, plan=plan)
    table.last_maintenance_errors = []
    try:
        snapshot = committer.commit(messages, commit_user or str(uuid.uuid4()), overwrite=Overwrite())
    except BaseException:
        if not committer.outcome_unknown:
            _best_effort(table, "deleting the files of a failed rescale", lambda: abort(
                table.file_io, table.root, plan.schema, messages, keep=committer.landed_files))
        raise
    errors = []
    if str(plan.bucket) != str(plan.schema.options.get("bucket", "-1")):
        errors += [e for e in [_set_bucket_option(table, plan.bucket)] if e is not None]
    table.last_maintenance_errors = errors + _after_landed(table, committer, plan.schema, messages)
    return snapshot


def _set_bucket_option(table: Table, bucket: int) -> Exception | None:
    """After a rescale landed: make `bucket` the table's option, retried (the data is already
    committed, so a failure is reported, not raised: `table.rescale(bucket)` again finishes it)."""
    failure = None
    for attempt in range(3):
        try:
            if str(table.schema().options.get("bucket", "-1")) != str(bucket):
                table.alter(SetOption("bucket", str(bucket)))
            return None
        except Exception as exc:  # noqa: BLE001 - reported below
            failure = exc
            if not isinstance(exc, (CommitConflict, StorageError, OutcomeUnknown)):
                break
            time.sleep(0.1 * 2 ** attempt)
    log.error("table %s: the rescale landed, but setting 'bucket' to %s failed: %s; run rescale(bucket=%s) "
              "again", table.name, bucket, failure, bucket)
    return failure


def _after_landed(table: Table, committer: Committer, schema: TableSchema, messages: list) -> list[Exception]:
    """Everything after a commit landed, never raising (a caller must not retry, and so
    duplicate, a landed commit): deleting the files of a compaction part that was dropped,
    then post-commit maintenance. Returns the failures (the dropped compaction among them)."""
    errors: list[Exception] = []
    if committer.dropped_compaction is not None:
        errors.append(committer.dropped_compaction)
        failure = _best_effort(table, "deleting the files of the dropped compaction", lambda: abort(
            table.file_io, table.root, schema, [m.compact_part() for m in messages], keep=committer.landed_files))
        errors += [failure] if failure else []
    try:
        errors += maintenance.after_commit(table)
    except Exception as exc:  # noqa: BLE001 - after_commit reports its own; this is a last guard
        log.warning("table %s: maintenance after commit failed (the commit stands): %s", table.name, exc)
        errors.append(exc)
    return errors


def _best_effort(table: Table, what: str, step) -> Exception | None:
    """Run a clean-up step whose failure must not replace the operation's outcome; the failure
    is logged and returned."""
    try:
        step()
    except Exception as exc:  # noqa: BLE001
        log.warning("table %s: %s failed: %s", table.name, what, exc)
        return exc
    return None


class RescaleCommitter(Committer):
    """Commits a rescale: its OVERWRITE replaces exactly the rescaled partitions, and fails
    when a snapshot after the rescale's base, by another writer, changed their data files or
    index files (Paimon's `commit.strict-mode.last-safe-snapshot`, which its rescale sets):
    the overwrite would drop that commit's rows."""

    def __init__(self, context, schema: TableSchema, plan: RescalePlan):
        super().__init__(context, schema)
        self.plan = plan

    def _try_once(self, latest, messages, request):
        if request.overwrite is not None and latest is not None and latest.id != self.plan.base.id:
            self._check_untouched(latest, request.commit_user)
        return super()._try_once(latest, messages, request)

    def _check_untouched(self, latest: Snapshot, commit_user: str) -> None:
        previous_index = self.plan.base.index_manifest
        for snapshot_id in range(self.plan.base.id + 1, latest.id + 1):
            try:
                snapshot = latest if snapshot_id == latest.id else self.snapshots.get(snapshot_id)
            except (SnapshotNotFound, FileMissing):
                raise CommitConflict(f"table {self.table_name}: snapshot {snapshot_id}, committed while the "
                                     "rescale ran, expired before it could be checked; nothing was committed, "
                                     "rescale again") from None
            if snapshot.commit_user != commit_user and self._touches(snapshot, previous_index):
                raise CommitConflict(
                    f"table {self.table_name}: snapshot {snapshot_id} ({snapshot.commit_kind}, by another writer) "
                    "changed the data being rescaled while the rescale ran; nothing was committed. Stop other "
                    "writers of these partitions and rescale again")
            previous_index = snapshot.index_manifest

    def _touches(self, snapshot: Snapshot, previous_index: str | None) -> bool:
        wanted = self.plan.partitions
        for meta in self.manifests.read_manifest_list(snapshot.delta_manifest_list):
            for entry in self.manifests.read_manifest(meta.file_name):
                if wanted is None or entry.partition in wanted:
                    return True
        if snapshot.index_manifest == previous_index:
            return False
        before = {(e.partition, e.file_name) for e in self.manifests.read_index_manifest(previous_index)} \
            if previous_index else set()
        after = {(e.partition, e.file_name) for e in self.manifests.read_index_manifest(snapshot.index_manifest)} \
            if snapshot.index_manifest else set()
        return any(wanted is None or part in wanted for part, _ in before ^ after)

    def _overwrite_deletes(self, latest, delta, overwrite: Overwrite):
        doomed = super()._overwrite_deletes(latest, delta, Overwrite())
        if self.plan.partitions is None:
            return doomed
        return [e for e in doomed if e.partition in self.plan.partitions]

    def _replaced_partitions(self, live, delta, overwrite: Overwrite) -> set[bytes]:
        if self.plan.partitions is None:
            return super()._replaced_partitions(live, delta, Overwrite())
        return set(self.plan.partitions)


def load_table(path: str, storage_options: dict | None = None, *, filesystem=None, lock=None) -> Table:
    """Open the table stored at `path`: a local path, `s3://bucket/path`, another pyarrow URI,
    or a path inside `filesystem` (storage options and lock: docs/object-stores.md)."""
    file_io, root = file_io_for(location_argument(path, "table path"), storage_options, filesystem, lock)
    return Table(file_io, root)


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


