"""The streaming sink, exactly once: each micro-batch is one commit whose identifier is the
batch id, under a commit user that is stable for the query.

The commit user is derived from the query's checkpoint location (or given as `commit-user`).
When Spark replays a batch after a crash between tarn's commit and its own checkpoint commit,
the table already holds a snapshot of this user with that identifier: the replay's files are
deleted and nothing is committed, so no batch lands twice.
"""

from __future__ import annotations

import uuid
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter
from pyspark.sql.types import StructType

import tarn
from tarn.commit.committer import Overwrite
from tarn.errors import InvalidOption
from tarn.spark.batch_write import TaskMessages, WritePlan, plan_write

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


def already_committed(table: tarn.Table, commit_user: str, batch_id: int) -> bool:
    """Has this user committed batch `batch_id` (or a later one)?"""
    latest = table.latest_snapshot()
    if latest is None:
        return False
    own = table.committer().latest_of_user(latest, commit_user)
    return own is not None and own.commit_identifier >= batch_id


class StreamWriter(DataSourceStreamArrowWriter):
    """`df.writeStream.format("tarn").option("checkpointLocation", ...).start(path)`."""

    def __init__(self, plan: WritePlan, commit_user: str):
        self.plan = plan
        self.commit_user = commit_user

    @classmethod
    def prepare(cls, options: dict[str, str], schema: StructType, overwrite: bool) -> "StreamWriter":
        commit_user = commit_user_of(options)
        plan = plan_write(options, schema, overwrite=False)
        plan.created = False  # a streaming query keeps its table even if a batch fails
        if overwrite:  # outputMode("complete"): every batch replaces the table
            plan.overwrite = Overwrite()
        return cls(plan, commit_user)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        return TaskMessages(self.plan.write_task(iterator))

    def commit(self, messages: list, batchId: int) -> None:
        table = tarn.load_table(self.plan.path)
        if already_committed(table, self.commit_user, batchId):
            self.plan.abort(messages)  # a replayed batch: its files are not needed
            return
        self.plan.commit(messages, commit_user=self.commit_user, commit_identifier=batchId)

    def abort(self, messages: list, batchId: int) -> None:
        self.plan.abort(messages)
