"""Rescale (`Table.rescale`, `tarn.spark.maintenance.rescale`): rewrite the data of the table,
or of some partitions, into a number of buckets in one OVERWRITE, as Paimon's rescale does.

The overwrite replaces exactly the rescaled partitions and carries a requirement
(UntouchedSince): it fails when a snapshot after the rescale's base, by another writer,
changed their data or index files (Paimon's `commit.strict-mode.last-safe-snapshot`), since
the overwrite would drop that commit's rows. Once it landed, `bucket` becomes the table's option.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from tarn.commit.committer import Overwrite
from tarn.commit.requirements import UntouchedSince
from tarn.core import TableCore
from tarn.errors import CommitConflict, InvalidArgument, OutcomeUnknown, SchemaMismatch, StorageError
from tarn.meta.schema import SetOption, TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.ops.alter import alter
from tarn.paths import POSTPONE_BUCKET
from tarn.scan.planner import Split
from tarn.write.message import CommitMessage
from tarn.commit.abort import aborting
from tarn.write.writer import TableWriter

log = logging.getLogger(__name__)


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
    def postpone(self) -> bool:
        return self.schema.shape.postpone

    @property
    def writer_options(self) -> dict:
        return {**self.schema.options, "bucket": str(self.bucket)}


def rescale(core: TableCore, bucket: int | None = None, partitions: list[dict] | None = None) -> Snapshot | None:
    """Plan, rewrite the rows of the planned splits with one writer, commit (see `Table.rescale`)."""
    plan = plan_rescale(core, bucket, partitions)
    if plan is None:
        return None
    writer = rescale_writer(core, plan)
    reader = core.scan_snapshot(plan.base, schema=plan.schema).reader()
    with aborting(core.file_io, core.root, writer.schema, writer.messages):
        for split in plan.splits:
            for chunk in reader.read_chunks(split):
                if chunk.num_rows:
                    writer.write(chunk)
        messages = writer.prepare_commit()
    return commit_rescale(core, plan, messages)


def plan_rescale(core: TableCore, bucket: int | None, partitions: list[dict] | None) -> RescalePlan | None:
    """Check the request and pick the data to rewrite (None: the table or partitions hold no
    files)."""
    schema = core.schema()
    current = schema.shape.num_buckets
    target = current if bucket is None else int(bucket)
    if current == POSTPONE_BUCKET and (bucket is None or target <= 0):
        raise InvalidArgument(f"table {core.name}: a postpone-bucket table (bucket=-2) is rescaled to a given "
                              "bucket count: rescale(bucket=N) rewrites the placed rows into N buckets per "
                              "partition; postponed rows stay for the next compaction")
    if current == -1 and target != -1:
        raise InvalidArgument(f"table {core.name}: a bucket=-1 table cannot be rescaled to {target} buckets "
                              "(Paimon cannot change 'bucket' from -1); rescale() re-packs its buckets")
    if current != -1 and target <= 0:
        raise InvalidArgument(f"table {core.name}: rescale needs a bucket count > 0, got {target}")
    if current == -1 and not schema.primary_keys:
        raise InvalidArgument(f"table {core.name}: a bucket-unaware append table has no buckets to rescale")
    if partitions is not None and not schema.partition_keys:
        raise InvalidArgument(f"table {core.name}: partitions given, but the table is not partitioned")
    for spec in partitions or []:
        unknown = [k for k in spec if k not in schema.partition_keys]
        if unknown or not spec:
            raise SchemaMismatch(f"table {core.name}: {unknown or 'an empty dict'} in partitions: name partition "
                                 f"columns {list(schema.partition_keys)}")
    base = core.latest_snapshot()
    if base is None:
        return None
    if current == POSTPONE_BUCKET:  # the placed rows only: the postponed ones stay for their compaction
        schema = replace(schema, options={**schema.options, "postpone.merge-on-read": "false"})
    scan = core.scan_snapshot(base, schema=schema)
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


def rescale_writer(core: TableCore, plan: RescalePlan, options: dict | None = None) -> TableWriter:
    """A writer of the rewritten rows: every bucket starts empty (the overwrite replaces them),
    `plan.bucket` buckets, a fresh dynamic-bucket index, no changelog."""
    return TableWriter(core.file_io, core.root, core.name, plan.schema,
                       plan.schema.shape.options_with({**plan.writer_options, **(options or {})}), lambda: {}, core.schema_by_id,
                       produce_changelog=False)


def commit_rescale(core: TableCore, plan: RescalePlan, messages: list[CommitMessage],
                   commit_user: str | None = None) -> Snapshot | None:
    """Commit a rescale's messages as one OVERWRITE of its partitions, failing if another
    writer changed them since `plan.base`; then make `plan.bucket` the table's option."""
    postponed = plan.postpone
    overwrite = Overwrite(partitions=plan.partitions, keeps_postponed=postponed)

    def set_bucket() -> list[Exception]:
        if postponed or str(plan.bucket) == str(plan.schema.options.get("bucket", "-1")):
            return []  # a postpone table keeps bucket=-2: each partition keeps its own count
        return [e for e in [_set_bucket_option(core, plan.bucket)] if e is not None]

    return core.commit(messages, commit_user, overwrite=overwrite, schema=plan.schema,
                       untouched_since=UntouchedSince(plan.base, plan.partitions, postponed), on_landed=set_bucket)


def _set_bucket_option(core: TableCore, bucket: int) -> Exception | None:
    """After a rescale landed: make `bucket` the table's option, retried (the data is already
    committed, so a failure is reported, not raised: `table.rescale(bucket)` again finishes it)."""
    failure = None
    for attempt in range(3):
        try:
            if str(core.schema().options.get("bucket", "-1")) != str(bucket):
                alter(core, [SetOption("bucket", str(bucket))])
            return None
        except Exception as exc:  # noqa: BLE001 - reported below
            failure = exc
            if not isinstance(exc, (CommitConflict, StorageError, OutcomeUnknown)):
                break
            time.sleep(0.1 * 2 ** attempt)
    log.error("table %s: the rescale landed, but setting 'bucket' to %s failed: %s; run rescale(bucket=%s) "
              "again", core.name, bucket, failure, bucket)
    return failure

