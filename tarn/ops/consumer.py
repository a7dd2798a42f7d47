"""A named consumer of a table's changes without Spark: `table.consumer("nightly")`.

It reads what a Paimon stream with `consumer-id` = "nightly" would read and keeps its place in
Paimon's own file, `consumer/consumer-<id>` (`{"nextSnapshot": N}`), which every engine's
snapshot expiry honours: snapshots a consumer has not read stay.

- `read()` returns the rows of the snapshots from the consumer's next snapshot up to the latest
  (at most `max_snapshots`), each with its row kind in a first `_ROW_KIND` column, exactly as
  `table.changes(id)` gives them per snapshot (changelog files with a changelog producer, else
  the rows APPEND snapshots wrote). A consumer that does not exist yet starts, as Paimon's
  default stream does, with the latest snapshot's whole content as +I rows (`start="earliest"`:
  from the earliest snapshot's changes instead).
- `commit()` then records the place after what `read()` returned. Reading again without
  committing returns the same rows: a job that fails between the two reads them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from tarn.errors import InvalidArgument
from tarn.scan.changes import ROW_KIND, snapshot_changes

if TYPE_CHECKING:
    from tarn.core import TableCore

STARTS = ("latest-full", "earliest")


@dataclass
class Consumer:
    """One consumer id of one table (see the module docstring)."""

    core: "TableCore"
    consumer_id: str
    start: str = "latest-full"
    _pending: int | None = field(default=None, repr=False)

    def __post_init__(self):
        if not self.consumer_id or "/" in self.consumer_id:
            raise InvalidArgument(f"table {self.core.name}: invalid consumer id {self.consumer_id!r}")
        if self.start not in STARTS:
            raise InvalidArgument(f"table {self.core.name}: consumer start {self.start!r} is not one of {STARTS}")

    @property
    def next_snapshot(self) -> int | None:
        """The first snapshot this consumer has not read (None: it has never committed)."""
        return self.core.consumer_store.next_snapshot(self.consumer_id)

    def read(self, max_snapshots: int | None = None) -> pa.Table:
        """The rows from where the consumer stopped up to the latest snapshot (or
        `max_snapshots` snapshots), `_ROW_KIND` first; `commit()` moves past them."""
        latest = self.core.snapshot_store.latest_id()
        schema = self.core.schema()
        output = pa.schema([pa.field(ROW_KIND, pa.string(), nullable=False),
                            *self.core.scan_latest().arrow_schema])
        if latest is None:
            self._pending = None
            return output.empty_table()
        first = self.next_snapshot
        parts = []
        if first is None and self.start == "latest-full":
            rows = self.core.scan_snapshot(self.core.snapshot_store.find(latest), schema=schema).to_arrow()
            parts.append(rows.add_column(0, ROW_KIND, pa.array(["+I"] * rows.num_rows, pa.string())))
            first = latest + 1
        elif first is None:
            first = self.core.snapshot_store.earliest_id()
        last = latest if max_snapshots is None else min(latest, first + max(1, max_snapshots) - 1)
        for snapshot_id in range(first, last + 1):
            parts.append(snapshot_changes(self.core, snapshot_id))
        self._pending = max(first, last + 1)
        tables = [p.select(output.names).cast(output) for p in parts if p.num_rows]
        return pa.concat_tables(tables) if tables else output.empty_table()

    def commit(self) -> int | None:
        """Record the place after the last `read()` (Paimon's consumer file); returns the next
        snapshot id, or None when nothing was read."""
        if self._pending is None:
            return None
        self.core.consumer_store.write(self.consumer_id, self._pending)
        done, self._pending = self._pending, None
        return done

    def reset(self, next_snapshot: int) -> None:
        """Make `next_snapshot` the next snapshot read (it must still exist)."""
        if self.core.snapshot_store.find(next_snapshot) is None and next_snapshot != \
                (self.core.snapshot_store.latest_id() or 0) + 1:
            raise InvalidArgument(f"table {self.core.name}: snapshot {next_snapshot} does not exist")
        self.core.consumer_store.write(self.consumer_id, next_snapshot)

    def delete(self) -> None:
        """Forget the consumer: expiry no longer keeps snapshots for it."""
        self.core.consumer_store.delete(self.consumer_id)


__all__ = ["Consumer", "STARTS"]
