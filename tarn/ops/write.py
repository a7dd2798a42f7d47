"""Writing rows in one commit (`Table.write`, `Table.overwrite`): upserts or appends, and
INSERT OVERWRITE of the whole table, a static partition or the partitions the rows touch."""

from __future__ import annotations

import logging
import random
import time
import uuid

import pyarrow as pa

from tarn.commit.committer import Overwrite
from tarn.data import clustering
from tarn.core import TableCore, best_effort
from tarn.errors import DynamicBucketConflict, SchemaMismatch
from tarn.meta.snapshot import Snapshot
from tarn.write.conform import check_static_partition, to_arrow_table
from tarn.commit.abort import aborting

log = logging.getLogger(__name__)


WRITE_ATTEMPTS = 3  # a dynamic-bucket write that lost its partition's index to another writer


def write(core: TableCore, data, row_kind=None) -> Snapshot | None:
    """Write `data` in one commit (see `_write_once`). When another writer changed a
    dynamic-bucket partition's index meanwhile (DynamicBucketConflict: nothing landed, the
    files were deleted) and the rows can be read again, the write starts over from the new
    latest snapshot, up to WRITE_ATTEMPTS times."""
    replayable = isinstance(data, (pa.Table, pa.RecordBatch, dict, list, tuple)) or _is_frame(data)
    for attempt in range(WRITE_ATTEMPTS if replayable else 1):
        try:
            return _write_once(core, data, row_kind)
        except DynamicBucketConflict:
            if attempt == WRITE_ATTEMPTS - 1 or not replayable:
                raise
            log.info("table %s: another writer changed a dynamic-bucket index; writing again", core.name)
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
    raise AssertionError("unreachable")


def _is_frame(data) -> bool:
    return type(data).__name__ == "DataFrame"


def _write_once(core: TableCore, data, row_kind=None) -> Snapshot | None:
    """Write `data` in one commit with one writer (the files of earlier flushes are deleted
    when a later one fails), then keep a cross-partition table's key index for the next write
    (a failure there is kept in `last_maintenance_errors`, the commit stands)."""
    writer = core.new_writer()
    if clustering.sorts_writes(core.schema()):  # clustering.columns: the batch sorted as Java's sinks sort it
        data = clustering.sorted_rows(to_arrow_table(data, core.name), core.schema().shape.options, core.name)
    # a flush that fails deletes the files earlier flushes wrote
    with aborting(core.file_io, core.root, writer.schema, writer.messages):
        writer.write(data, row_kind=row_kind)
    commit_user = str(uuid.uuid4())
    snapshot = core.commit(writer.prepare_commit(), commit_user=commit_user)
    core.counted.update(writer.counted)
    failure = best_effort(core, "keeping the key index for the next write",  # cross-partition tables
                          lambda: writer.keep_key_index(core, commit_user))
    core.last_maintenance_errors += [failure] if failure else []
    return snapshot


def overwrite(core: TableCore, data, partition: dict | None = None, dynamic: bool | None = None) -> Snapshot | None:
    """INSERT OVERWRITE (see `Table.overwrite`): None when a dynamic overwrite wrote nothing."""
    schema = core.schema()
    options = schema.shape.options
    table = to_arrow_table(data, core.name)
    if partition:
        unknown = [k for k in partition if k not in schema.partition_keys]
        if unknown:
            raise SchemaMismatch(f"table {core.name}: {unknown} are not partition keys "
                                 f"(partition keys: {list(schema.partition_keys)})")
        check_static_partition(table, partition, core.name)
        spec = Overwrite(static=dict(partition))
    else:
        if dynamic is None:
            dynamic = bool(schema.partition_keys) and options.bool("dynamic-partition-overwrite")
        spec = Overwrite(dynamic=bool(dynamic) and bool(schema.partition_keys))
    writer = core.new_writer(ignore_previous_files=True)
    if clustering.sorts_writes(schema):
        table = clustering.sorted_rows(table, options, core.name)
    if table.num_rows:
        writer.write(table)
    messages = writer.prepare_commit()
    if spec.dynamic and not messages:
        return None
    core.counted.update(rows_written=table.num_rows)
    return core.commit(messages, overwrite=spec)
