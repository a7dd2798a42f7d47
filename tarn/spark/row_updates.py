"""Spark jobs of data-evolution tables (tarn/ops/row_updates.py): the rows to change are found
and computed by Spark (`_ROW_ID` plus the new values of the set columns), shuffled so that each
row-id group reaches one task, and each task writes its groups' files of the set columns; rows
to insert are appended by tasks as a write does. The driver commits every file in one snapshot,
checked against the row ids' snapshot (a conflicting concurrent update or compaction fails the
commit, and the job's files are deleted)."""

from __future__ import annotations

import pickle
from functools import partial

import numpy as np
import pyarrow as pa

import tarn
from tarn.spark.ref import open_table
from tarn.meta.row_ranges import ROW_ID
from tarn.ops.row_updates import RowGroups, column_file, locate
from tarn.spark.batch_write import collect_messages, job_prefixes, new_job_token, sweep_job

GROUP_COLUMN = "__tarn_group"


def commit_column_updates(spark, table: tarn.Table, snapshot, changed, inserted=None, storage=None):
    """Commit `changed` (a DataFrame of `_ROW_ID` and the columns to set, read at `snapshot`,
    None for an empty table)
    as files of those columns, and `inserted` (whole rows, or None) as appended files, in one
    commit. None when nothing changed."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = table.schema()
    groups = RowGroups.of(table, schema, snapshot)
    token = new_job_token()
    overrides = job_prefixes(schema.options, token)
    located = changed.mapInArrow(partial(_locate, groups.starts, groups.ends, table.name),
                                 StructType([*changed.schema.fields, StructField(GROUP_COLUMN, IntegerType(), False)]))
    shuffled = located.repartition(max(1, min(len(groups.splits), 200)), F.col(GROUP_COLUMN))
    read_at = snapshot.id if snapshot is not None else 0  # 0: an empty table (nothing to update)
    messages = collect_messages(table, token, shuffled,
                                partial(_column_task, table.location, storage, read_at, overrides))
    if inserted is not None:
        messages += collect_messages(table, token, inserted, partial(_append_task, table.location, storage, overrides))
    if not any(m.new_files for m in messages):
        sweep_job(table, token)
        return None
    return table.commit(messages, row_ids_read_at=read_at)


def _locate(starts: np.ndarray, ends: np.ndarray, table_name: str, batches):
    for batch in batches:
        ids = batch.column(batch.schema.get_field_index(ROW_ID)).to_numpy(zero_copy_only=False)
        found = locate(starts, ends, ids.astype(np.int64), table_name)
        yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(found, pa.int32())],
                                         schema=batch.schema.append(pa.field(GROUP_COLUMN, pa.int32(), False)))


def _column_task(path: str, storage, snapshot_id: int, overrides: dict, batches):
    table = open_table(path, storage)
    schema = table.schema()
    received = [b for b in batches if b.num_rows]
    messages = []
    if received:
        data = pa.Table.from_batches(received)
        groups = RowGroups.of(table, schema, table.snapshot(snapshot_id))
        column = data.column(GROUP_COLUMN).to_numpy()
        names = [n for n in data.column_names if n not in (ROW_ID, GROUP_COLUMN)]
        for group in np.unique(column):  # a failed task's files are swept by the job (collect_messages)
            chosen = data.filter(pa.array(column == group))
            ids = chosen.column(ROW_ID).to_numpy().astype(np.int64)
            messages.append(column_file(table, schema, groups.splits[group], int(groups.starts[group]), ids,
                                        chosen.select(names), overrides))
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], names=["messages"])


def _append_task(path: str, storage, overrides: dict, batches):
    table = open_table(path, storage)
    writer = table.new_writer(options=overrides)
    for batch in batches:
        if batch.num_rows:
            writer.write(pa.Table.from_batches([batch]))
    messages = writer.prepare_commit()
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], names=["messages"])
