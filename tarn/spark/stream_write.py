"""The streaming sink, exactly once: each micro-batch is one commit whose identifier is the
batch id, under a commit user that is stable for the query.

The commit user is derived from the query's checkpoint location (or given as `commit-user`).
When Spark replays a batch after a crash between tarn's commit and its own checkpoint commit,
the table already holds a snapshot of this user with that identifier: the replay's files are
deleted and nothing is committed, so no batch lands twice.

Cross-partition upsert tables: each batch's rows come placed by assigner tasks against the
latest snapshot when they ran (`tarn.spark.by_bucket`, tarn/spark/cross_partition.py); its
commit lands only directly on that snapshot, else it fails naming the table (another writer
committed in between) and the restarted query places the batch again.
"""

from __future__ import annotations

import uuid
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter
from pyspark.sql.types import StructType

from tarn.commit.committer import Overwrite
from tarn.errors import InvalidOption
from tarn.spark.batch_write import TaskMessages, WritePlan, plan_write
from tarn.commit.abort import abort

COMMIT_USER_PREFIX = "tarn-spark-"


def commit_user_of(options: dict[str, str]) -> str:
    """The query's commit user: `commit-user`, else derived from `checkpointLocation`."""
    if options.get("commit-user"):
        return options["commit-user"]
    location = options.get("checkpointlocation")
    if not location:
        raise InvalidOption("a tarn streaming sink needs option('checkpointLocation', ...) (or "
                            "'commit-user'): exactly-once commits are keyed by a stable commit user")
    return COMMIT_USER_PREFIX + str(uuid.uuid5(uuid.NAMESPACE_URL, location.rstrip("/")))


def current_batch_id() -> int | None:
    """The micro-batch a write task belongs to (Spark sets it as a job property)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    value = context.getLocalProperty("streaming.sql.batchId") if context is not None else None
    return int(value) if value is not None else None


class StreamWriter(DataSourceStreamArrowWriter):
    """`df.writeStream.format("tarn").option("checkpointLocation", ...).start(path)`."""

    def __init__(self, plan: WritePlan):
        self.plan = plan

    @classmethod
    def prepare(cls, options: dict[str, str], schema: StructType, overwrite: bool) -> "StreamWriter":
        commit_user = commit_user_of(options)
        plan = plan_write(options, schema, overwrite=False, streaming=True)
        plan.created = False  # a streaming query keeps its table even if a batch fails
        plan.commit_user = commit_user
        if overwrite:  # outputMode("complete"): every batch replaces the table
            if plan.placed_rows:
                raise InvalidOption(f"table {plan.path}: outputMode('complete') (INSERT OVERWRITE) of a "
                                    "cross-partition upsert table is not supported: keys in other partitions "
                                    "would stay")
            plan.overwrite = Overwrite()
        return cls(plan)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        return self.plan.write_task(iterator, batch_id=current_batch_id())

    def commit(self, messages: list, batchId: int) -> None:
        table = self.plan.open()
        if self.plan.landed(table, batchId):  # a replay of a committed batch: drop its files
            abort(table.file_io, table.root, table.schema(),
                  [m for r in messages if r is not None for m in r.messages])
            return
        self.plan.commit(messages, commit_identifier=batchId)

    def abort(self, messages: list, batchId: int) -> None:
        self.plan.abort(messages, batch_id=batchId)
