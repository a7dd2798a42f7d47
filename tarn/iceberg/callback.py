"""Iceberg metadata after each landed commit: a commit callback (tarn/commit/callbacks.py),
registered for every table whose `metadata.iceberg.storage` is not `disabled`.

Each snapshot the commit made is published in order (tarn/iceberg/publish.py). A failure never
fails the commit, which has landed: it is logged and returned (the table keeps it in
`last_maintenance_errors`), and the next commit repairs it, since a snapshot whose previous
metadata version is missing is published afresh (Java's retry). Branches other than main, and
tables whose commits a catalog owns (REST), are not published.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tarn.commit.callbacks import CommitCallback, register
from tarn.commit.result import Landed
from tarn.errors import TarnError
from tarn.iceberg.config import config_of, enabled
from tarn.iceberg.publish import check_publishable, publish
from tarn.meta.manifest import DELETION_VECTORS_INDEX
from tarn.meta.schema import TableSchema

if TYPE_CHECKING:
    from tarn.store.context import TableContext

log = logging.getLogger(__name__)


def check_iceberg(schema: TableSchema, identifier: str) -> None:
    """At creation and alter: the `metadata.iceberg.*` values tarn cannot honour (storage,
    format version, codec) and the columns Iceberg compatibility cannot publish, each naming
    the table and the option or column."""
    if enabled(schema.shape.options):
        config_of(schema.shape.options, identifier)
        check_publishable(schema, identifier)


def publish_landed(table: "TableContext", landed: tuple[Landed, ...]) -> list[Exception]:
    """Publish each landed snapshot; the failures, logged (never raised)."""
    if table.branch != "main" or getattr(table.snapshot_commit, "owner", None):
        return []
    errors = []
    for item in landed:
        try:
            publish(table, item.snapshot, item.delta, _vectors_changed(item))
        except Exception as exc:  # noqa: BLE001 - the commit landed; the next one repairs
            log.warning("table %s: writing Iceberg metadata for snapshot %s failed (the commit stands; the next "
                        "commit writes it afresh): %s", table.name, item.snapshot.id, exc)
            errors.append(exc if isinstance(exc, TarnError) else _named(table, item, exc))
    return errors


def _vectors_changed(landed: Landed) -> bool:
    return any(e.index_type == DELETION_VECTORS_INDEX for e in (*landed.index_added, *landed.index_removed))


def _named(table: "TableContext", landed: Landed, exc: Exception) -> TarnError:
    error = TarnError(f"table {table.name}: writing Iceberg metadata for snapshot {landed.snapshot.id} failed: "
                      f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


register(CommitCallback("iceberg", lambda shape: enabled(shape.options), publish_landed))
