"""Post-commit maintenance: `after_commit(table)` is what Paimon's committer runs after each
commit unless the table is `write-only`: automatic tag creation, tag expiry, partition expiry,
consumer expiry, then snapshot expiration (and, when the changelog lifecycle is decoupled,
changelog expiry). It is registered as a commit callback (tarn/commit/callbacks.py), so
the kernel runs it without importing it.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import TYPE_CHECKING

import tarn.iceberg  # noqa: F401 - registers Iceberg metadata first: it runs before expiry, as in Java
from tarn.commit.callbacks import CommitCallback, register
from tarn.ops import partition_expire
from tarn.ops.changelog_expire import expire_changelogs
from tarn.ops.expire import changelog_decoupled, expire_snapshots
from tarn.ops.tags import auto_create_tags, expire_tags

if TYPE_CHECKING:
    from tarn.core import TableCore

log = logging.getLogger(__name__)


def after_commit(table: "TableCore") -> list[Exception]:
    """Post-commit maintenance, in Paimon's order (TableCommitImpl.maintain).

    The commit has landed: a failing step (a concurrent expiry, an unreadable tag file) is
    logged and returned, never raised, so a caller never retries (duplicates) a landed write.
    Each step runs even if an earlier one failed."""
    try:
        options = table.options
    except Exception as exc:
        return _failed("reading the table options", table, exc)
    if options.bool("write-only") or getattr(table.snapshot_commit, "owner", None):
        return []  # a table whose metadata a catalog owns (REST) is maintained by its owner
    steps = [("automatic tag creation", lambda: auto_create_tags(table))]
    if options.bool("tag.time-expire-enabled"):
        steps.append(("tag expiry", lambda: expire_tags(table, dt.datetime.now())))
    if options.get("partition.expiration-time") is not None:
        steps.append(("partition expiry", lambda: partition_expire.after_commit(table)))
    consumer_ttl = options.duration_ms("consumer.expiration-time")
    if consumer_ttl is not None:
        cutoff = int(time.time() * 1000) - consumer_ttl
        steps.append(("consumer expiry", lambda: table.consumer_store.expire(cutoff)))
    steps.append(("snapshot expiry", lambda: expire_snapshots(table)))
    if changelog_decoupled(options):
        steps.append(("changelog expiry", lambda: expire_changelogs(table)))
    errors = []
    for what, step in steps:
        try:
            step()
        except Exception as exc:
            errors.extend(_failed(what, table, exc))
    return errors


def _failed(what: str, table: "TableCore", exc: Exception) -> list[Exception]:
    log.warning("table %s: %s after commit failed (the commit stands): %s", table.name, what, exc)
    return [exc]


# every table (after_commit itself skips `write-only` ones); looked up on each call, so tests
# can stand in for it
register(CommitCallback("maintenance", lambda shape: True, lambda table, landed: after_commit(table)))
