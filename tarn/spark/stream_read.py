"""The streaming source: offsets are snapshot ids.

An offset is `{"next": n, "full": f}`: snapshot `n` is the first not yet read; with `full` the
next batch reads all of snapshot `n` (the merged table then) before the changes after it. A
micro-batch from `start` to `end` reads, for each snapshot in `[start.next, end.next)`, the
data files its APPEND commit added (or, for tables with a `changelog-producer`, the changelog
files it recorded, and the first full read leaves out levels whose changelog is still to
come: level 0 for `lookup`, all but the top level for `full-compaction`); COMPACT snapshots
of tables without a producer add no rows, OVERWRITE snapshots are skipped unless
`streaming-read-overwrite` (then their removed rows come as -D before the rows they added):
the streaming-scan rules live in tarn/scan/changes.py. Rows of primary-key tables carry their row kind: with
`read.changelog` it is shown in a `rowkind` column (+I, -U, +U, -D), without it only +I and +U
rows are emitted (an upsert stream).

`scan.mode`: `latest-full` (default; also `full`, `default`), `latest`, `from-snapshot`
(`scan.snapshot-id`), `from-snapshot-full`, `from-timestamp` (`scan.timestamp-millis`).
With `consumer-id`, the next snapshot to read is kept in `consumer/consumer-<id>` (Paimon's
`{"nextSnapshot": n}`), written when Spark commits a batch; a new query with that id starts
there, and snapshot expiry keeps what the consumer has not read. Read limits
(`read.stream.maxFilesPerTrigger`, ...) bound a micro-batch by whole snapshots: see
tarn/spark/stream_limits.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

import tarn
from tarn.data.reader import FileReader
from tarn.errors import InvalidOption, SnapshotNotFound
from tarn.lsm.merge import INSERT, UPDATE_AFTER
from tarn.meta.snapshot import Snapshot
from tarn.options import Options
from tarn.scan import changes
from tarn.scan.changes import KIND_NAMES, AddedFile, full_scan_levels, keep_levels
from tarn.scan.planner import Split, pack_in_order, planner_for
from tarn.scan.startup import START_KEYS
from tarn.spark.batch_read import pack_splits
from tarn.spark.target import READ_OPTIONS, ROW_KIND_COLUMN, check_options, load, storage_of, table_path
from tarn.spark.stream_limits import Cost, StreamLimits, applies
from tarn.spark.types import arrow_target, fit_batch

STREAM_MODES = ("default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full",
                "from-timestamp")
BATCH_ROWS = 65536


@dataclass
class StreamPart(InputPartition):
    """One task of a micro-batch: splits of a full snapshot read and/or added files."""

    snapshot: Snapshot | None = None  # the snapshot `full` reads
    full: list[Split] = field(default_factory=list)
    files: list[AddedFile] = field(default_factory=list)


def offset(next_snapshot: int, full: bool = False) -> dict:
    return {"next": int(next_snapshot), "full": bool(full)}


def start_offset(table: tarn.Table, options: dict[str, str]) -> dict:
    """Where a new query starts, by `scan.mode` (and a consumer's progress)."""
    store = table.snapshot_store
    latest = store.latest_id()
    first = store.earliest_id() or 1
    consumer = options.get("consumer-id")
    if consumer and options.get("consumer.ignore-progress", "false").lower() != "true":
        progress = table.consumer_store.next_snapshot(consumer)
        if progress is not None:
            return offset(progress)
    options = with_stored_start(table, options)
    mode = options.get("scan.mode", "default").lower()
    if mode not in STREAM_MODES:
        raise InvalidOption(f"table {table.name}: scan.mode '{mode}' is not supported by the tarn "
                            f"streaming source (use one of {list(STREAM_MODES)})")
    if mode == "default":
        mode = ("from-timestamp" if options.get("scan.timestamp-millis") else
                "from-snapshot" if options.get("scan.snapshot-id") else "latest-full")
    if mode in ("latest-full", "full"):
        return offset(latest, full=True) if latest is not None else offset(first)
    if mode == "latest":
        return offset((latest or 0) + 1)
    if mode in ("from-snapshot", "from-snapshot-full"):
        snapshot_id = _required_long(options, "scan.snapshot-id", mode)
        if not store.exists(snapshot_id) and not table.changelog_store.exists(snapshot_id) \
                and not (latest is not None and snapshot_id == latest + 1):
            span = "no snapshots" if latest is None else f"snapshots {first}..{latest}"
            raise SnapshotNotFound(f"table {table.name}: scan.snapshot-id {snapshot_id} does not exist ({span})")
        return offset(snapshot_id, full=mode == "from-snapshot-full" and store.exists(snapshot_id))
    millis = _required_long(options, "scan.timestamp-millis", mode)
    before = store.at_or_before(millis)
    return offset(before.id + 1 if before is not None else first)


def with_stored_start(table: tarn.Table, options: dict[str, str]) -> dict[str, str]:
    """The read's options, with the table's stored start options (`scan.mode`,
    `scan.snapshot-id`, ...) when the read gives none of its own."""
    if any(k in options for k in START_KEYS):
        return options
    stored = {k: v for k, v in table.schema().options.items() if k in START_KEYS}
    return {**stored, **options}


def _required_long(options: dict, key: str, mode: str) -> int:
    if not options.get(key):
        raise InvalidOption(f"scan.mode '{mode}' needs option '{key}'")
    try:
        return int(options[key])
    except ValueError:
        raise InvalidOption(f"option '{key}'='{options[key]}' is not an integer") from None


def stream_files(table: tarn.Table, snapshot: Snapshot, options: Options) -> list[AddedFile]:
    """The files a streaming read of `snapshot` reads (tarn.scan.changes.stream_files)."""
    schema = table.schema()
    return changes.stream_files(planner_for(table, schema), table.root, schema, snapshot,
                                changes.reads_overwrite(schema, options))


def pack_files(files: list[AddedFile], target_size: int, open_cost: int) -> list[list[AddedFile]]:
    return pack_in_order(files, lambda f: max(f.meta.file_size, open_cost), target_size)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`spark.readStream.format("tarn").load(path)`."""

    def __init__(self, path: str, options: dict[str, str], schema: StructType):
        self.path = path
        self.options = options
        self.storage = storage_of(options)
        self.schema = schema
        self.arrow_schema = arrow_target(schema)
        self.row_kind = options.get("read.changelog", "false").lower() == "true"
        self.stop_at: int | None = None  # Trigger.AvailableNow: the latest snapshot at start
        self.limits = StreamLimits.of(options, f"table {path}")
        self.costs: dict[int, Cost] = {}  # snapshot id -> what it adds (for the limits)
        self.last_batch_at = time.monotonic()

    @classmethod
    def prepare(cls, options: dict[str, str], schema: StructType) -> "StreamReader":
        path = table_path(options)
        check_options(options, READ_OPTIONS, f"table {path}")
        reader = cls(path, options, schema)
        start_offset(load(path, storage_of(options)), options)  # a bad start position fails before the query runs
        return reader

    def table_options(self, table: tarn.Table) -> Options:
        overrides = {k: v for k, v in self.options.items() if k not in READ_OPTIONS}
        return table.schema().shape.options_with(overrides)

    # ------------------------------------------------------------------ offsets

    def initialOffset(self) -> dict:
        table = load(self.path, self.storage)
        start = start_offset(table, self.options)
        consumer = self.options.get("consumer-id")
        if consumer:  # from now on expiry keeps what this consumer has not read
            table.consumer_store.write(consumer, start["next"])
        return start

    def latestOffset(self, start: dict, limit) -> dict:
        # Spark asks for the next batch only once the batch ending at `start` is done (and in
        # the checkpoint): the consumer has read everything before `start` (commit() comes
        # one batch later, and never for the last batch of an availableNow run).
        self._record(start["next"])
        latest = load(self.path, self.storage).snapshot_store.latest_id() or 0
        if self.stop_at is not None:
            latest = min(latest, self.stop_at)
        limited = self.limits.bounded and applies(limit)
        if start["full"]:  # the whole table, and (without limits) every change after it
            return self._advance(offset((start["next"] if limited else max(latest, start["next"])) + 1))
        if latest < start["next"]:
            return start
        if not limited:
            return self._advance(offset(latest + 1))
        table = load(self.path, self.storage)
        pending = range(start["next"], latest + 1)
        costs = [self._cost(table, s) for s in pending]
        waiting = sum(costs, Cost())
        if self.stop_at is None and self.limits.waits(waiting, 1000 * (time.monotonic() - self.last_batch_at)):
            return start
        return self._advance(offset(start["next"] + self.limits.take(costs)))

    def getDefaultReadLimit(self):
        return self.limits.default_read_limit()

    def _advance(self, end: dict) -> dict:
        self.last_batch_at = time.monotonic()
        self.costs = {k: v for k, v in self.costs.items() if k >= end["next"]}
        return end

    def _cost(self, table: tarn.Table, snapshot_id: int) -> Cost:
        """Files, bytes and rows a streaming read of the snapshot emits (cached)."""
        if snapshot_id not in self.costs:
            files = stream_files(table, self._snapshot(table, snapshot_id), self.table_options(table))
            self.costs[snapshot_id] = Cost(len(files), sum(f.meta.file_size for f in files),
                                           sum(f.meta.row_count for f in files))
        return self.costs[snapshot_id]

    def prepareForTriggerAvailableNow(self) -> None:
        self.stop_at = load(self.path, self.storage).snapshot_store.latest_id() or 0

    def commit(self, end: dict) -> None:
        self._record(end["next"])

    def _record(self, next_snapshot: int) -> None:
        """Write the consumer's progress (`consumer-id`), never moving it backwards."""
        consumer = self.options.get("consumer-id")
        if not consumer:
            return
        table = load(self.path, self.storage)
        store = table.consumer_store
        if (store.next_snapshot(consumer) or 0) < next_snapshot:
            store.write(consumer, next_snapshot)

    # ------------------------------------------------------------------ planning and reading

    def partitions(self, start: dict, end: dict) -> list[StreamPart]:
        table = load(self.path, self.storage)
        options = self.table_options(table)
        target = options.memory_bytes("source.split.target-size")
        open_cost = options.memory_bytes("source.split.open-file-cost")
        bucket = options.int("scan.bucket")
        parts: list[StreamPart] = []
        first = start["next"]
        if start["full"]:
            snapshot = self._snapshot(table, first)
            from tarn.ops.time_travel import scan_at
            splits = keep_levels(scan_at(table, snapshot).plan(), full_scan_levels(table.schema()))
            splits = [s for s in splits if bucket is None or s.bucket == bucket]
            parts += [StreamPart(snapshot, group) for group in pack_splits(splits, target, open_cost)]
            first += 1
        files: list[AddedFile] = []
        for snapshot_id in range(first, end["next"]):
            files += stream_files(table, self._snapshot(table, snapshot_id), options)
        if bucket is not None:  # `scan.bucket`: this bucket only
            files = [f for f in files if f.bucket == bucket]
        parts += [StreamPart(files=group) for group in pack_files(files, target, open_cost)]
        return parts

    def _snapshot(self, table: tarn.Table, snapshot_id: int) -> Snapshot:
        """The snapshot, or its long-lived changelog once it expired (a decoupled changelog
        lifecycle keeps them for streams)."""
        try:
            return table.changes_of(snapshot_id)
        except SnapshotNotFound:
            raise SnapshotNotFound(
                f"table {table.name}: snapshot {snapshot_id} expired before this stream read it; "
                "set 'consumer-id' so expiry keeps the snapshots a stream has not read") from None

    def read(self, partition: StreamPart) -> Iterator[pa.RecordBatch]:
        table = load(self.path, self.storage)
        names = [f.name for f in self.arrow_schema if not (self.row_kind and f.name == ROW_KIND_COLUMN)]
        if partition.full:
            from tarn.ops.time_travel import scan_at
            reader = scan_at(table, partition.snapshot, None, names).reader()
            for split in partition.full:
                for chunk in reader.read_chunks(split):
                    kinds = pa.array(np.zeros(chunk.num_rows, dtype=np.int8))
                    yield from self._emit(chunk, kinds)
        if not partition.files:
            return
        schema = table.schema()
        fields = [schema.field(n) for n in names]
        files = FileReader(table.file_io, schema, table.schema_by_id, self.table_options(table))
        for f in partition.files:
            data, kinds = changes.file_rows(files, schema, f, fields)
            yield from self._emit(data, kinds)

    def _emit(self, data: pa.Table, kinds: pa.Array) -> Iterator[pa.RecordBatch]:
        if self.row_kind:
            data = data.add_column(0, ROW_KIND_COLUMN, pc.take(KIND_NAMES, kinds.cast(pa.int32())))
        else:
            keep = pc.or_(pc.equal(kinds, INSERT), pc.equal(kinds, UPDATE_AFTER))
            if not pc.all(keep).as_py():
                data = data.filter(keep)
        if data.num_rows:
            yield from fit_batch(data, self.arrow_schema).to_batches(BATCH_ROWS)
