"""Iceberg tags for Paimon tags made or dropped between commits (Java's IcebergCommitCallback as
a TagCallback): the latest metadata version is rewritten in place with the tag's ref added or
removed, since a version's number is the Paimon snapshot id it describes. A commit recomputes
every ref anyway (publish.py); these keep Iceberg readers current until then.

As Java: nothing is written when the table has no snapshot, when the latest version's file is
missing (the next commit writes it afresh, refs included), or when the tagged snapshot is not
one the metadata lists (an Iceberg reader would fail on a ref to an unknown snapshot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tarn.iceberg import metadata as md
from tarn.iceberg.config import config_of, enabled, metadata_dir

if TYPE_CHECKING:
    from tarn.store.context import TableContext


def tag_created(table: "TableContext", name: str, snapshot_id: int) -> bool:
    """Add the Iceberg tag `name` on `snapshot_id`; whether a metadata file was rewritten."""
    return _rewrite_refs(table, lambda refs, listed: _added(refs, name, snapshot_id, listed))


def tag_deleted(table: "TableContext", name: str) -> bool:
    """Remove the Iceberg tag `name`; whether a metadata file was rewritten."""
    return _rewrite_refs(table, lambda refs, listed: {k: v for k, v in refs.items() if k != name})


def _added(refs: dict, name: str, snapshot_id: int, listed: set[int]) -> dict:
    """`refs` with `name` on `snapshot_id`; without it when Iceberg does not list that snapshot
    (a replaced tag's old ref must not stay)."""
    kept = {k: v for k, v in refs.items() if k != name}
    return {**kept, name: md.tag_ref(snapshot_id)} if snapshot_id in listed else kept


def _rewrite_refs(table: "TableContext", change) -> bool:
    schema = table.schema()
    if not enabled(schema.shape.options) or table.branch != "main" or getattr(table.snapshot_commit, "owner", None):
        return False
    latest = table.latest_snapshot()
    if latest is None:
        return False
    directory = metadata_dir(table.root, config_of(schema.shape.options, table.name), table.name)
    path = md.version_path(directory, latest.id)
    if not table.file_io.exists(path):
        return False
    base = md.read_metadata(table.file_io, path)
    refs = base.get("refs") or {}
    updated = change(refs, {s["snapshot-id"] for s in base.get("snapshots") or ()})
    if updated == refs:
        return False
    metadata = dict(base, refs=updated)
    data = md.to_json(metadata, base)
    table.file_io.write_bytes(path, data)  # replaced atomically: readers see either version
    md.remember(path, data, metadata)
    return True
