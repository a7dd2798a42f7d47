"""Compaction (`Table.compact`): primary-key buckets through their LSM writer (universal
compaction, or a full one), append tables through tarn/ops/append_compaction.py."""

from __future__ import annotations

from tarn import partition
from tarn.core import TableCore
from tarn.meta.snapshot import Snapshot
from tarn.ops import append_compaction, postpone


def compact(core: TableCore, full: bool = False, partitions: list[dict] | None = None) -> Snapshot | None:
    """One COMPACT snapshot of what is due (`full`: everything), limited to `partitions`."""
    schema = core.schema()
    if not schema.primary_keys:
        return append_compaction.compact(core, full, partitions)
    if schema.shape.postpone:
        return postpone.compact(core, full, partitions)
    writer = core.new_writer()
    buckets = sorted(writer.restored_buckets())
    if partitions is not None:
        wanted = {partition.to_bytes(schema, [p.get(k) for k in schema.partition_keys]) for p in partitions}
        buckets = [b for b in buckets if b[0] in wanted]
    return core.commit(writer.compact(buckets, full))
