"""Table maintenance: tags, time travel, snapshot expiration, rollback, orphan files.

`after_commit(table)` is what Paimon's committer runs after each commit unless the table is
`write-only`: automatic tag creation, tag expiry, consumer expiry, then snapshot expiration.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING

from tarn.maintenance.expire import expire_snapshots
from tarn.maintenance.tags import auto_create_tags, expire_tags
from tarn.store.consumers import ConsumerStore

if TYPE_CHECKING:
    from tarn.table import Table


def after_commit(table: "Table") -> None:
    """Post-commit maintenance, in Paimon's order (TableCommitImpl.maintain)."""
    options = table.options
    if options.bool("write-only"):
        return
    auto_create_tags(table)
    if options.bool("tag.time-expire-enabled"):
        expire_tags(table, dt.datetime.now())
    consumer_ttl = options.duration_ms("consumer.expiration-time")
    if consumer_ttl is not None:
        ConsumerStore(table.file_io, table.root).expire(int(time.time() * 1000) - consumer_ttl)
    expire_snapshots(table)
