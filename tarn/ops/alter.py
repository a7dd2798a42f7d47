"""Schema evolution (`Table.alter`): changes applied to the latest schema, validated like a
table at creation (tarn/ops/validate.py), options Paimon treats as immutable refused, the
deletion-vector switch allowed only after a full compaction; then a new schema file."""

from __future__ import annotations

from tarn.errors import TarnError
from tarn.lsm.policy import num_levels
from tarn.meta.schema import TableSchema, apply_changes
from tarn.ops.validate import validate_change
from tarn.scan import fallback
from tarn.store.commit_point import check_writes_metadata
from tarn.store.context import TableContext


def alter(context: TableContext, changes) -> TableSchema:
    """Apply `changes` (AddColumn, RenameColumn, SetOption, ...) as one new schema."""
    check_writes_metadata(context, "a schema change (alter)")
    before = context.schema()
    after = apply_changes(before, changes)
    validate_change(before, after, context.name)  # immutable options among its checks
    check_deletion_vector_switch(context, before, after)
    fallback.check_options(context, after.options)
    return context.schema_store.alter(changes)


def check_deletion_vector_switch(context: TableContext, before: TableSchema, after: TableSchema) -> None:
    """The PIP's migration rule: switch 'deletion-vectors.enabled' on a primary-key table only
    after a full compaction (every file at the top level, no deletion vector left)."""
    was, will = before.shape.deletion_vectors, after.shape.deletion_vectors
    latest = context.latest_snapshot()
    if was == will or not before.primary_keys or latest is None:
        return
    top = num_levels(before.shape.options) - 1
    low = [e.file.file_name for e in context.live_entries(latest, before) if e.file.level != top]
    held = context.manifests(before).read_index_manifest(latest.index_manifest) if latest.index_manifest else []
    if low or any(e.index_type == "DELETION_VECTORS" for e in held):
        raise TarnError(f"table {context.name}: run a full compaction (table.compact(full=True)) before "
                        f"switching 'deletion-vectors.enabled' to {str(will).lower()}")
