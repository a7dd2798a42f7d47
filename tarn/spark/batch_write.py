"""Batch writes: tasks write data files and return commit messages; the driver commits once.

Everything that can be wrong is checked on the driver before a task starts: options, the
DataFrame schema against the table (the same `conform` the tasks run, on zero rows), key
columns, overwrite specs. A missing table is created from the DataFrame schema with the
`primary-key`, `partition` and table options given, or, with option `like` (a table path),
with that table's columns, primary key, partition keys and options. If the job fails, `abort` deletes every
file the finished tasks wrote (a failing task deletes its own; files of tasks Spark killed are
found by the job's file-name prefix), and a table this write created is removed again, so
nothing is left behind.

Primary-key tables: rows of one bucket should reach one task (`tarn.spark.write` shuffles by
tarn's bucket function and sets `write.bucket-owned`); then each task owns its buckets and
compacts them as the table options say. Without it several tasks may write the same bucket:
they still produce a correct table (level-0 runs merged on read) but do not compact.

Dynamic-bucket tables (`bucket` = -1 with a primary key) take rows whose bucket was assigned
on executors: the column `__tarn_bucket` (`tarn.spark.write` / `by_bucket` add it) carries
each row's bucket and the snapshot whose HASH index it was assigned against; the writer keeps
each bucket's index against that snapshot. A routed write (`route_dynamic`: an empty table's
first one, or an append to a table whose index fits the routing) instead carries the options
`write.assigner-channels` (N) and `write.assigner-snapshot` (S, 0 for none): its rows were
shuffled so Spark partition i holds the keys of assigner task i of N, and the task writing
partition i assigns them itself against snapshot S's index. Without either the write is
refused (tasks assigning buckets on their own would put one key into two buckets).

Cross-partition upsert tables (`bucket` = -1, a primary key without every partition column)
take only rows placed by `tarn.spark.cross_partition.place` (`tarn.spark.write` and `by_bucket`
call it): `__tarn_bucket` as above, plus `__tarn_kind`, each row's row kind (the -D rows of keys
that moved partition). Each task reports the snapshot its rows were placed against, and the
commit lands only directly on top of it (else CommitConflict naming the table, nothing lands).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, StructField, StructType

import tarn
from tarn.data import clustering
from tarn.spark import ref
from tarn.spark.ref import open_table
from tarn.table import split_branch_path
from tarn.commit.committer import Overwrite
from tarn.errors import CommitConflict, InvalidOption, OutcomeUnknown, SchemaMismatch, TableNotFound, TarnError
from tarn.fs import join
from tarn.meta.schema import TableSchema
from tarn.options import is_immutable
from tarn.scan import changes
from tarn.scan.planner import planner_for
from tarn.spark.target import WRITE_OPTIONS, check_options, load, storage_of, table_path
from tarn.spark.types import arrow_of
from tarn.write.conform import check_static_partition, conform
from tarn.write.message import CommitMessage
from tarn.write.assign import unpack_buckets, unpack_route
from tarn.commit.abort import abort, aborting
from tarn.write.writer import TableWriter

BUCKET_COLUMN = "__tarn_bucket"  # dynamic buckets assigned on executors (tarn.spark.dataframe)
# a routed dynamic-bucket write (`route_dynamic`): the rows of assigner task i of this many are
# in Spark partition i, and the writer task of partition i assigns as task i
ROUTE_OPTION = "write.assigner-channels"
# with ROUTE_OPTION: the snapshot whose HASH index the writer tasks assign against (0: none)
ROUTE_SNAPSHOT_OPTION = "write.assigner-snapshot"
KIND_COLUMN = "__tarn_kind"  # row kinds of rows placed into a cross-partition table (tarn.spark.cross_partition)

log = logging.getLogger(__name__)


@dataclass
class TaskMessages(WriterCommitMessage):
    """What one write task hands to the driver (picklable)."""

    messages: list[CommitMessage] = field(default_factory=list)
    placed_against: int | None = None  # cross-partition rows: the snapshot they were placed against


# ---------------------------------------------------------------------------------------------
# the table: found or created, and checked against the DataFrame


def _restore_case(options: dict[str, str], columns: list[str]) -> dict[str, str]:
    """Spark lower-cases option keys: give `fields.<column>.*` keys the column's own case."""
    by_lower = {c.lower(): c for c in columns}
    fixed = {}
    for key, value in options.items():
        if key.startswith("fields."):
            for lower, name in by_lower.items():
                if key.startswith(f"fields.{lower}."):
                    key = f"fields.{name}." + key[len(f"fields.{lower}."):]
                    break
        fixed[key] = value
    return fixed


def _names(text: str | None, columns: list[str]) -> list[str]:
    """A comma-separated list of column names, matched to the DataFrame's case."""
    if not text:
        return []
    by_lower = {c.lower(): c for c in columns}
    return [by_lower.get(n.strip().lower(), n.strip()) for n in text.split(",") if n.strip()]


def create_table(path: str, data_schema: pa.Schema, primary_key: list[str], partition: list[str],
                 options: dict[str, str], storage: dict | None = None) -> tarn.Table:
    """Create the table at `path` (or of a catalog: tarn/spark/ref.py) from an Arrow schema."""
    return ref.create_table(path, storage, data_schema, primary_key, partition, options)


def create_table_like(path: str, like: str, options: dict[str, str] | None = None, storage: dict | None = None,
                      primary_key: list[str] | None = None, partition: list[str] | None = None) -> tarn.Table:
    """Create the table at `path` like the table at `like` and return it: its columns (types,
    NOT NULL, comments), primary key, partition keys and options (`options` laid over them;
    `storage`: storage options of both). What a write with option `like` does to a missing
    table; call it first for a dynamic-bucket source, whose rows need `by_bucket(df, path)`.
    A given `primary_key` or `partition` must be the source's."""
    source = load(like, storage).schema()
    for given, actual, what in ((primary_key, source.primary_keys, "primary-key"),
                                (partition, source.partition_keys, "partition")):
        if given and list(given) != list(actual):
            raise InvalidOption(f"table {path}: option '{what}'={list(given)} differs from {list(actual)} of the "
                                f"table it is created like ({like})")
    return ref.create_table(path, storage, list(source.fields), list(source.primary_keys),
                            list(source.partition_keys), {**source.options, **(options or {})}, source.comment)


def _check_like(table: tarn.Table, source: tarn.Table) -> None:
    """An existing target of a write with option `like` must have the source's keys."""
    mine, theirs = table.schema(), source.schema()
    for what in ("primary_keys", "partition_keys"):
        if list(getattr(mine, what)) != list(getattr(theirs, what)):
            raise InvalidOption(f"table {table.name} exists with {what.replace('_', ' ')} "
                                f"{list(getattr(mine, what))}, but option 'like' names table {source.name} with "
                                f"{list(getattr(theirs, what))}")


def find_or_create(path: str, data_schema: pa.Schema, options: dict[str, str]) -> tuple[tarn.Table, bool, dict]:
    """(table, created, per-write option overrides) for a write of `data_schema` to `path`."""
    columns = list(data_schema.names)
    table_options = _restore_case(check_options(options, WRITE_OPTIONS, f"table {path}"), columns)
    primary_key = _names(options.get("primary-key"), columns)
    partition = _names(options.get("partition"), columns)
    like = options.get("like")
    try:
        table = load(path, storage_of(options))
    except TableNotFound:
        if split_branch_path(path)[1] is not None:
            raise  # a branch is created from an existing table (table.create_branch), never by a write
        if like:
            return create_table_like(path, like, table_options, storage_of(options), primary_key, partition), True, {}
        return create_table(path, data_schema, primary_key, partition, table_options,
                            storage_of(options)), True, {}
    schema = table.schema()
    if like:
        _check_like(table, load(like, storage_of(options)))
    for given, actual, what in ((primary_key, schema.primary_keys, "primary-key"),
                                (partition, schema.partition_keys, "partition")):
        if given and list(given) != list(actual):
            raise InvalidOption(f"table {path}: option '{what}'={given} differs from the existing "
                                f"table's {list(actual)}")
    fixed = [k for k, v in table_options.items()
             if is_immutable(k) and schema.options.get(k, v) != v]
    fixed += [k for k in ("bucket",) if k in table_options and table_options[k] != schema.options.get("bucket")]
    if fixed:
        raise InvalidOption(f"table {path}: option(s) {sorted(set(fixed))} cannot differ from the existing "
                            "table's (alter the table instead)")
    return table, False, table_options


def check_fits(table: tarn.Table, data_schema: pa.Schema) -> None:
    """Raise SchemaMismatch unless rows of `data_schema` can be written to `table`."""
    schema = table.schema()
    empty = data_schema.empty_table()
    missing_keys = [k for k in schema.primary_keys if k not in data_schema.names]
    if missing_keys:
        raise SchemaMismatch(f"table {table.name}: a write to a primary-key table needs the key "
                             f"column(s) {missing_keys} (DataFrame columns: {data_schema.names})")
    conform(empty, list(schema.fields), table.name, schema.primary_keys)


def overwrite_spec(options: dict[str, str], schema: TableSchema, overwrite: bool) -> Overwrite | None:
    """INSERT OVERWRITE as Spark means it: the whole table, unless `partitionOverwriteMode`
    is 'dynamic' (only partitions written to) or `overwrite-partition` names one partition."""
    mode = options.get("partitionoverwritemode", "static").lower()
    if mode not in ("static", "dynamic"):
        raise InvalidOption(f"option 'partitionOverwriteMode'='{mode}' must be static or dynamic")
    static = parse_partition_spec(options.get("overwrite-partition"), schema)
    if not overwrite:
        if static or "partitionoverwritemode" in options:
            raise InvalidOption("options 'overwrite-partition' and 'partitionOverwriteMode' need mode('overwrite')")
        return None
    if static and mode == "dynamic":
        raise InvalidOption("option 'overwrite-partition' is a static overwrite; drop partitionOverwriteMode=dynamic")
    if static:
        return Overwrite(static=static)
    return Overwrite(dynamic=mode == "dynamic" and bool(schema.partition_keys))


def parse_partition_spec(text: str | None, schema: TableSchema) -> dict:
    """'dt=2026-11-20,region=eu' -> {'dt': '2026-11-20', 'region': 'eu'} (partition keys only)."""
    if not text:
        return {}
    spec = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        name = next((k for k in schema.partition_keys if k.lower() == key.lower()), None)
        if not sep or name is None:
            raise InvalidOption(f"option 'overwrite-partition'='{text}': '{part}' is not <partition key>=<value> "
                                f"(partition keys: {list(schema.partition_keys)})")
        spec[name] = value.strip()
    return spec


# ---------------------------------------------------------------------------------------------
# the writer


@dataclass
class WritePlan:
    """What tasks need to write (picklable; decided on the driver).

    Every file of the write is named `<data-file.prefix or changelog-file.prefix><job token>...`:
    when the job fails, the driver deletes them all, including those of tasks Spark killed
    before they could report."""

    path: str
    overrides: dict  # per-write table options (write tuning)
    overwrite: Overwrite | None
    bucket_owned: bool
    created: bool
    job_token: str  # e.g. spark-3f2a9c1e07b4- (file names: data-spark-3f2a9c1e07b4-...)
    commit_user: str
    storage: dict | None = None  # storage options (s3.endpoint, ...): every task opens the table with them
    given_buckets: bool = False  # rows carry BUCKET_COLUMN (dynamic-bucket tables)
    route_channels: int = 0  # > 0: task i assigns as assigner task i of this many (ROUTE_OPTION)
    route_snapshot: int = 0  # ... against this snapshot's index (ROUTE_SNAPSHOT_OPTION; 0: none)
    placed_rows: bool = False  # rows carry KIND_COLUMN too (cross-partition upsert tables)

    def open(self) -> tarn.Table:
        return open_table(self.path, self.storage)

    def task_writer(self, table: tarn.Table, token: str, index_snapshot=None) -> TableWriter:
        """A TableWriter for one task; it compacts only buckets it owns."""
        schema = table.schema()
        options = {**self.overrides, **job_prefixes({**schema.options, **self.overrides}, token)}
        if schema.primary_keys and not self.bucket_owned:
            options["write-only"] = "true"  # other tasks may write the same buckets
        return table.new_writer(ignore_previous_files=self.overwrite is not None, options=options,
                                index_snapshot=index_snapshot)

    def token_of(self, batch_id: int | None) -> str:
        return self.job_token if batch_id is None else f"{self.job_token}b{batch_id}-"

    def write_task(self, batches: Iterator[pa.RecordBatch], batch_id: int | None = None) -> TaskMessages:
        """Write one task's rows; on failure delete what it wrote and re-raise."""
        table = self.open()
        schema = table.schema()
        assigned: dict = {}  # the snapshot the given buckets were assigned against
        writer = self.task_writer(table, self.token_of(batch_id), index_snapshot=lambda: assigned.get("snapshot"))
        static = self.overwrite.static if self.overwrite is not None else {}
        if batch_id is None and clustering.sorts_writes(schema):  # Paimon's Spark sorts each task's rows
            batches = _clustered(batches, schema, table.name)
        if self.route_channels:  # routed rows (route_dynamic): this task assigns its own rows
            assigned["snapshot"] = self.route_snapshot  # against that snapshot's index (0: none)
            writer.assign_as(_task_partition(), self.route_channels)
        with aborting(table.file_io, table.root, schema, writer.messages):
            for batch in batches:
                if batch.num_rows:
                    data = pa.Table.from_batches([batch])
                    if static:
                        check_static_partition(data, static, table.name)
                    if self.placed_rows:  # cross-partition: row kinds and buckets given
                        data, kinds = _without_column(data, KIND_COLUMN)
                        data, buckets = _placed_buckets(data, assigned, table.name)
                        writer.write(data, row_kind=kinds, buckets=buckets)
                    elif self.given_buckets:
                        data, buckets = given_buckets(data, assigned)
                        if buckets is None:  # routed to this task as an assigner (first write of a table)
                            writer.assign_as(*assigned["route"])
                        writer.write(data, buckets=buckets)
                    else:
                        writer.write(data)
            messages = writer.prepare_commit()
        if table.file_io.exists(self.abort_marker(table, batch_id)) or not table.schema_store.list_ids():
            # Spark stops the input of a task it kills, which looks like the end of the data:
            # a task finishing after the job was aborted deletes what it wrote (and the
            # directories it made again if the aborted write had created the table).
            abort(table.file_io, table.root, schema, messages)
            if self.created and not table.schema_store.list_ids():
                drop_created_table(table)
            raise TarnError(f"table {table.name}: the write was aborted")
        return TaskMessages(messages, assigned.get("snapshot") if self.placed_rows else None)

    def abort_marker(self, table: tarn.Table, batch_id: int | None) -> str:
        """`<table>/.tarn-spark/aborted-<prefix>`: written when the job (micro-batch) is aborted."""
        return join(table.root, ".tarn-spark", "aborted-" + self.token_of(batch_id).rstrip("-"))

    def commit(self, results: list, commit_identifier: int | None = None) -> None:
        table = self.open()
        messages = [m for r in results if r is not None for m in r.messages]
        if self.overwrite is not None and self.overwrite.dynamic and not messages:
            return
        kwargs = {} if commit_identifier is None else {"commit_identifier": commit_identifier}
        if self.placed_rows:
            kwargs["expected_base"] = _placed_against(table, results)
        with noting_unknown_outcome(self.token_of(commit_identifier)):
            table.commit(messages, commit_user=self.commit_user, overwrite=self.overwrite, **kwargs)
        self.compact_level_0(table)

    def compact_level_0(self, table: tarn.Table) -> None:
        """Tasks that did not own their buckets wrote level-0 files without compacting them
        (a plain df.write / writeStream of a primary-key table). After the commit the driver
        compacts what the table's options make due (universal compaction, as Paimon's writers
        do after each commit), so level-0 runs do not pile up micro-batch after micro-batch;
        a failure is logged and kept in `last_maintenance_errors` (the write landed)."""
        schema = table.schema()
        options = schema.shape.options_with(self.overrides)  # `write-only` given to this write counts
        if not schema.primary_keys or self.bucket_owned or options.write_only \
                or schema.shape.postpone:  # placed by its compaction
            return
        try:
            table.compact()
        except Exception as exc:  # noqa: BLE001 - the data commit stands
            log.warning("table %s: compacting level 0 after the Spark write failed (the write stands): %s",
                        table.name, exc)
            table.last_maintenance_errors.append(exc)

    def landed(self, table: tarn.Table, batch_id: int | None = None) -> bool:
        """Did this write (this micro-batch) commit? Then nothing of it may be deleted."""
        latest = table.latest_snapshot()
        if latest is None:
            return False
        own = table.committer().latest_of_user(latest, self.commit_user)
        return own is not None and (batch_id is None or own.commit_identifier >= batch_id)

    def abort(self, results: list, batch_id: int | None = None, settle_seconds: float = 3.0) -> None:
        """Delete what the job wrote; drop the table if this write created it. An abort marker
        tells tasks still running to delete their files; files of killed tasks are found by
        name, and a second sweep after `settle_seconds` catches workers killed mid-file. After
        a commit of unknown outcome (its snapshot may exist) nothing is deleted."""
        if kept_after_unknown_outcome(self.token_of(batch_id), f"table {self.path}"):
            return
        table = self.open()
        if self.landed(table, batch_id):
            return
        table.file_io.write_bytes(self.abort_marker(table, batch_id), b"")
        messages = [m for r in results if r is not None for m in r.messages]
        abort(table.file_io, table.root, table.schema(), messages)
        token = self.token_of(batch_id)
        if sweep(table, token) and settle_seconds:
            time.sleep(settle_seconds)
            sweep(table, token)
        if self.created and table.latest_snapshot() is None:
            drop_created_table(table)


def _clustered(batches: Iterator[pa.RecordBatch], schema, table_name: str) -> Iterator[pa.RecordBatch]:
    """A task's rows sorted by the table's clustering columns (tarn/data/clustering.py)."""
    given = [b for b in batches if b.num_rows]
    if given:
        rows = pa.Table.from_batches(given)
        yield from clustering.sorted_rows(rows, schema.shape.options, table_name).combine_chunks().to_batches()


def given_buckets(data: pa.Table, assigned: dict) -> tuple[pa.Table, pa.Array | None]:
    """The rows without BUCKET_COLUMN, and their buckets; every row of a task must have been
    assigned against the same snapshot (recorded in `assigned`). Rows routed to this task as
    an assigner (`tarn.write.assign.route_base`: an empty table's first write) give None and
    record (assigner task, channels) as `assigned["route"]`, against no snapshot."""
    index = next(i for i, name in enumerate(data.column_names) if name.lower() == BUCKET_COLUMN)
    packed = data.column(index).to_numpy()
    route = unpack_route(packed)
    if route is not None or "route" in assigned:
        if route is None or assigned.setdefault("route", route) != route or assigned.setdefault("snapshot", 0):
            raise TarnError("dynamic bucket assignment: a task received rows routed to different assigner tasks "
                            "or assigned against a snapshot; nothing was committed, write again")
        return data.remove_column(index), None
    snapshot, buckets = unpack_buckets(packed)
    if assigned.setdefault("snapshot", snapshot) != snapshot:
        raise TarnError("dynamic bucket assignment: rows were assigned against different snapshots (another "
                        "writer committed while the assigner tasks ran); nothing was committed, write again")
    return data.remove_column(index), pa.array(buckets)


def _without_column(data: pa.Table, name: str) -> tuple[pa.Table, pa.ChunkedArray]:
    """`data` without the column `name` (any case), and that column."""
    index = next(i for i, column in enumerate(data.column_names) if column.lower() == name)
    return data.remove_column(index), data.column(index)


def _placed_buckets(data: pa.Table, assigned: dict, table_name: str) -> tuple[pa.Table, pa.Array]:
    """`given_buckets` of rows placed into a cross-partition table, failing with the table's
    name when a task holds rows placed against different snapshots."""
    try:
        return given_buckets(data, assigned)
    except TarnError as exc:
        raise CommitConflict(f"table {table_name}: the rows were placed against different snapshots (another "
                             "writer committed while the assigner tasks ran); nothing was committed, write "
                             "again") from exc


def _placed_against(table: tarn.Table, results: list) -> int | None:
    """The one snapshot every task's cross-partition rows were placed against (None: no rows)."""
    snapshots = {r.placed_against for r in results if r is not None and r.placed_against is not None}
    if len(snapshots) > 1:
        raise CommitConflict(f"table {table.name}: the rows were placed against different snapshots "
                             f"{sorted(snapshots)} (another writer committed while the assigner tasks ran); "
                             "nothing was committed, write again")
    return snapshots.pop() if snapshots else None


def _task_partition() -> int:
    """The Spark partition this write task writes (its assigner task in a routed write)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise TarnError("a routed dynamic-bucket write runs only in Spark tasks (no TaskContext)")
    return context.partitionId()


def _route_channels(options: dict[str, str]) -> int:
    """The value of ROUTE_OPTION (0 when absent), removed from `options`."""
    text = options.pop(ROUTE_OPTION, None)
    if text is None:
        return 0
    if not text.strip().isdigit() or int(text) <= 0:
        raise InvalidOption(f"option '{ROUTE_OPTION}'='{text}' must be a positive channel count")
    return int(text)


def _route_snapshot(options: dict[str, str], route: int) -> int:
    """The value of ROUTE_SNAPSHOT_OPTION (0 when absent), removed from `options`."""
    text = options.pop(ROUTE_SNAPSHOT_OPTION, None)
    if text is None:
        return 0
    if not route or not text.strip().isdigit():
        raise InvalidOption(f"option '{ROUTE_SNAPSHOT_OPTION}'='{text}' must be a snapshot id (0: none) "
                            f"given with '{ROUTE_OPTION}'")
    return int(text)


def _route_base_exists(table: tarn.Table, snapshot_id: int) -> bool:
    """Rows routed against no index need an empty table; against a snapshot, that snapshot."""
    latest = table.latest_snapshot()
    if not snapshot_id:
        return latest is None
    return latest is not None and snapshot_id <= latest.id and table.snapshot_store.exists(snapshot_id)


# Spark calls a writer's `abort` after its `commit` raised, each on a fresh copy of the writer
# (unpickled again in a Python worker on the driver): a commit that raised OutcomeUnknown leaves
# a note in the driver's temp directory, keyed by the job token, and the abort that follows
# finds it and deletes nothing (the snapshot may exist and reference every file).


def _unknown_outcome_note(token: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"tarn-outcome-unknown-{token.rstrip('-')}")


@contextlib.contextmanager
def noting_unknown_outcome(token: str):
    """Around a commit on the driver: an OutcomeUnknown it raises is noted for `abort`."""
    try:
        yield
    except OutcomeUnknown:
        try:
            with open(_unknown_outcome_note(token), "w"):
                pass
        except OSError as exc:
            log.error("job %s: the commit's outcome is unknown, but noting it for Spark's abort failed (%s): "
                      "the abort may delete files of a snapshot that landed", token, exc)
        raise


def kept_after_unknown_outcome(token: str, what: str) -> bool:
    """In `abort`: True (and nothing may be deleted) when the commit of job `token` raised
    OutcomeUnknown; the note is removed."""
    note = _unknown_outcome_note(token)
    if not os.path.exists(note):
        return False
    log.warning("%s: the commit of job %s has an unknown outcome: its files are kept (orphans if it did not "
                "land; remove_orphan_files deletes them)", what, token)
    with contextlib.suppress(OSError):
        os.remove(note)
    return True


def new_job_token() -> str:
    return f"spark-{uuid.uuid4().hex[:12]}-"


def job_prefixes(options: dict, token: str) -> dict[str, str]:
    """The file-name prefixes of a Spark job's data and changelog files (job `token`)."""
    return {"data-file.prefix": (options.get("data-file.prefix") or "data-") + token,
            "changelog-file.prefix": (options.get("changelog-file.prefix") or "changelog-") + token}


def drop_created_table(table: tarn.Table, attempts: int = 5) -> None:
    """Remove the directory of a table an aborted write created. Tasks of the job may still be
    finishing (and deleting) their files inside it, so a removal that meets a changing directory
    is tried again; one that keeps failing is logged, not raised (it would hide the job's error)."""
    for attempt in range(attempts):
        try:
            table.file_io.delete_dir(table.root)
            return
        except TarnError as exc:
            if attempt == attempts - 1:
                log.warning("table %s: could not remove the directory the aborted write created: %s",
                            table.name, exc)
            else:
                time.sleep(0.5 * (attempt + 1))


def sweep(table: tarn.Table, token: str) -> int:
    """Delete the uncommitted data and changelog files of job `token` under the table; how
    many there were."""
    prefixes = tuple(job_prefixes(table.schema().options, token).values())
    candidates = [info.path for info in table.file_io.list_files(table.root, recursive=True)
                  if info.path.rsplit("/", 1)[-1].startswith(prefixes)]
    if not candidates:
        return 0
    latest = table.latest_snapshot()
    live = set()
    if latest is not None:
        planner = planner_for(table)
        live = {e.file.file_name for e in planner.live_entries(latest)}
        live |= {f.meta.file_name for f in changes.committed_files(planner, table.root, table.schema(), latest)}
    doomed = [p for p in candidates if p.rsplit("/", 1)[-1] not in live]
    for p in doomed:
        table.file_io.delete(p)
    return len(candidates)


def sweep_job(table: tarn.Table, token: str) -> None:
    """Sweep job `token`'s uncommitted files; if there were any, again a little later (a killed
    task may still be finishing a file)."""
    if sweep(table, token):
        time.sleep(3)
        sweep(table, token)


def collect_messages(table: tarn.Table, token: str, df, task) -> list:
    """Run `task` (a mapInArrow function yielding pickled commit messages in a `messages` column)
    over `df` and return the messages; on any failure the job's files are swept and it re-raises."""
    try:
        rows = df.mapInArrow(task, StructType([StructField("messages", BinaryType(), False)])).collect()
    except BaseException:
        sweep_job(table, token)
        raise
    return [m for row in rows for m in pickle.loads(row["messages"])]


def plan_write(options: dict[str, str], schema: StructType, overwrite: bool, streaming: bool = False) -> WritePlan:
    """Driver side of every write: find or create the table, check the rows fit. A batch
    append to an append table with `upsert-key` is refused here (its rows are merged in, which
    tarn.spark.write does); streaming writes append, as Paimon's streaming sinks do."""
    path = table_path(options)
    options = dict(options)
    route = _route_channels(options)
    route_snapshot = _route_snapshot(options, route)
    data_schema = arrow_of(schema)
    data_schema, given = _split_off(data_schema, BUCKET_COLUMN)
    data_schema, placed = _split_off(data_schema, KIND_COLUMN)
    table, created, overrides = find_or_create(path, data_schema, options)
    try:
        check_fits(table, data_schema)
        if not overwrite and not streaming and table.schema().shape.options.get("upsert-key") \
                and not table.primary_keys:
            raise InvalidOption(f"table {table.name}: option 'upsert-key' makes an INSERT a merge on "
                                f"{table.schema().shape.options.list('upsert-key')}; write with "
                                "tarn.spark.write(df, path) or tarn.spark.sql('INSERT INTO ...'), not "
                                "df.write.format('tarn')")
        spec = overwrite_spec(options, table.schema(), overwrite)
        if route and (given or not _dynamic(table) or (spec is not None and route_snapshot)
                      or not _route_base_exists(table, route_snapshot)):
            raise InvalidOption(f"table {table.name}: options '{ROUTE_OPTION}' and '{ROUTE_SNAPSHOT_OPTION}' are "
                                "for appends to a dynamic-bucket table, rows shuffled by "
                                "tarn.spark.dataframe.route_dynamic, assigned against an existing snapshot "
                                "(0: an empty table)")
        _check_placed(table, given, placed, spec)
        _check_bucket_column(table, given or bool(route), created and bool(options.get("like")))
    except BaseException:
        if created:
            table.file_io.delete_dir(table.root)
        raise
    owned = options.get("write.bucket-owned", "false").lower() == "true"
    return WritePlan(path, overrides, spec, owned, created, new_job_token(),
                     commit_user=options.get("commit-user") or str(uuid.uuid4()), storage=storage_of(options),
                     given_buckets=given,
                     route_channels=route, route_snapshot=route_snapshot, placed_rows=placed)


def _split_off(data_schema: pa.Schema, name: str) -> tuple[pa.Schema, bool]:
    """`data_schema` without the column `name` (any case), and whether it was there."""
    index = next((i for i, n in enumerate(data_schema.names) if n.lower() == name), None)
    return (data_schema, False) if index is None else (data_schema.remove(index), True)


def _check_placed(table: tarn.Table, given: bool, placed: bool, overwrite: Overwrite | None) -> None:
    """Rows of a cross-partition upsert table must come placed (row kinds and buckets), and
    only there; INSERT OVERWRITE of such a table is refused."""
    schema = table.schema()
    cross = schema.shape.cross_partition
    if cross and overwrite is not None:
        raise InvalidOption(f"table {table.name}: INSERT OVERWRITE of a cross-partition upsert table is not "
                            "supported: keys in other partitions would stay")
    if cross and not placed:
        raise InvalidOption(f"table {table.name} is a cross-partition upsert table (primary key without every "
                            "partition key, bucket=-1): write it with tarn.spark.write(df, path), or "
                            "tarn.spark.by_bucket(df, path) before df.write / df.writeStream, so keys are "
                            "placed by assigner tasks")
    if placed and not (cross and given):
        raise SchemaMismatch(f"table {table.name}: column '{KIND_COLUMN}' carries rows placed into a "
                             f"cross-partition upsert table (with '{BUCKET_COLUMN}'); this table is not one, "
                             "or the bucket column is missing")


def _dynamic(table: tarn.Table) -> bool:
    schema = table.schema()
    return schema.shape.dynamic


def _check_bucket_column(table: tarn.Table, given: bool, created_like: bool = False) -> None:
    schema = table.schema()
    dynamic = _dynamic(table)
    if dynamic and not given:
        first = ("create it first with tarn.spark.create_table_like(path, like_path), then "
                 if created_like else "")
        raise InvalidOption(f"table {table.name} has dynamic buckets (bucket=-1): {first}write it with "
                            "tarn.spark.write(df, path), or tarn.spark.by_bucket(df, path) before "
                            "df.write / df.writeStream, so buckets are assigned on executors (or create "
                            "it with a fixed 'bucket' > 0)")
    if given and not dynamic:
        raise SchemaMismatch(f"table {table.name}: column '{BUCKET_COLUMN}' carries dynamic buckets, but the "
                             f"table has bucket={schema.options.get('bucket', '-1')}")


class BatchWriter(DataSourceArrowWriter):
    """`df.write.format("tarn").mode(...).save(path)`."""

    def __init__(self, plan: WritePlan):
        self.plan = plan

    @classmethod
    def prepare(cls, options: dict[str, str], schema: StructType, overwrite: bool) -> "BatchWriter":
        return cls(plan_write(options, schema, overwrite))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        return self.plan.write_task(iterator)

    def commit(self, messages: list) -> None:
        self.plan.commit(messages)  # on failure Spark calls abort()

    def abort(self, messages: list) -> None:
        self.plan.abort(messages)
