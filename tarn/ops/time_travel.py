"""Time travel: a snapshot id, a tag name or a timestamp -> the Snapshot to read.

- By id: the snapshot file, or, once it has expired, a tag on that snapshot.
- By tag: the tag's snapshot.
- By timestamp (epoch millis): the latest snapshot committed at or before it; when every such
  snapshot has expired, the latest tag whose snapshot was committed at or before it (the tag
  PIP). Errors name what does not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tarn.errors import InvalidArgument, SnapshotNotFound, TarnError
from tarn.meta.snapshot import Snapshot

if TYPE_CHECKING:
    from tarn.scan.predicate import Predicate
    from tarn.core import TableCore
    from tarn.scan.scan import Scan


def resolve(table: "TableCore", snapshot_id: int | None = None, tag: str | None = None,
            timestamp_ms: int | None = None) -> Snapshot | None:
    """The snapshot to read: at most one selector may be given; none means the latest."""
    given = [k for k, v in (("snapshot_id", snapshot_id), ("tag", tag), ("as_of_timestamp_ms", timestamp_ms))
             if v is not None]
    if len(given) > 1:
        raise InvalidArgument(f"table {table.name}: time travel takes only one of {given}")
    if snapshot_id is not None:
        found = snapshot_by_id(table, snapshot_id)
    elif tag is not None:
        found = snapshot_by_tag(table, tag)
    elif timestamp_ms is not None:
        found = snapshot_at_time(table, timestamp_ms)
    else:
        return table.latest_snapshot()
    if found is not None:
        check_read_mode(table, found)
    return found


def check_read_mode(table: "TableCore", snapshot: Snapshot) -> None:
    """The deletion-vector PIP's migration rule: time travel across a switch of
    'deletion-vectors.enabled' is refused (those snapshots were written for the other mode)."""
    then = table.schema_by_id(snapshot.schema_id).shape.deletion_vectors
    now = table.schema().shape.deletion_vectors
    if then != now:
        raise TarnError(f"table {table.name}: snapshot {snapshot.id} was written with "
                        f"'deletion-vectors.enabled'={str(then).lower()}, the table now has "
                        f"{str(now).lower()}; time travel across that switch is not allowed")


def snapshot_by_id(table: "TableCore", snapshot_id: int) -> Snapshot:
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise InvalidArgument(f"table {table.name}: snapshot id must be an int, got {snapshot_id!r}")
    store = table.snapshot_store
    if store.exists(snapshot_id):
        return store.get(snapshot_id)
    for tagged in table.tag_store.tagged_snapshots():
        if tagged.id == snapshot_id:
            return tagged
    earliest, latest = store.earliest_id(), store.latest_id()
    span = "the table has no snapshots" if latest is None else f"available: {earliest}..{latest}"
    raise SnapshotNotFound(f"table {table.name}: snapshot {snapshot_id} does not exist ({span})")


def snapshot_by_tag(table: "TableCore", name: str) -> Snapshot:
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"table {table.name}: tag name must not be blank (got {name!r})")
    return table.tag_store.get(name).snapshot


def snapshot_at_time(table: "TableCore", timestamp_ms: int) -> Snapshot:
    found = table.snapshot_store.at_or_before(timestamp_ms)
    if found is not None:
        return found
    tagged = [s for s in table.tag_store.tagged_snapshots()
              if s.time_millis <= timestamp_ms]
    if tagged:
        return max(tagged, key=lambda s: (s.time_millis, s.id))
    earliest = table.snapshot_store.earliest_id()
    first = "the table has no snapshots" if earliest is None else (
        f"the earliest snapshot ({earliest}) was committed at {table.snapshot_store.get(earliest).time_millis}")
    raise SnapshotNotFound(f"table {table.name}: no snapshot or tag committed at or before "
                           f"{timestamp_ms} ({first})")


def scan_at(table: "TableCore", snapshot: Snapshot | None, filter: "Predicate | None" = None,
            columns: list[str] | None = None) -> "Scan":
    """A Scan of `snapshot` (read with the schema it was written with)."""
    return table.scan_snapshot(snapshot, filter, columns)
