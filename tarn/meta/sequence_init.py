"""`write.sequence-number-init-mode`: where a writer's sequence numbers start.

`scan` (default): above the largest `maxSequenceNumber` of the bucket's restored files.
`snapshot`: above the larger of that and the table-wide maximum the latest snapshot records in
its properties (`sequence.generation.max-sequence-number`), which every commit in this mode
writes: the latest snapshot's value (or, when it has none, the largest of the ADD entries of
its data manifests) merged with the files the commit adds (Java's SequenceSnapshotProperties
and AbstractFileStoreWrite.startingMaxSequenceNumber).
"""

from __future__ import annotations

from tarn.options import Options

MAX_SEQUENCE_NUMBER = "sequence.generation.max-sequence-number"


def snapshot_mode(options: Options) -> bool:
    return (options.get("write.sequence-number-init-mode") or "scan").strip().lower() == "snapshot"


def recorded_max(properties: dict | None) -> int | None:
    """The maximum a snapshot's properties record (None: none recorded)."""
    value = (properties or {}).get(MAX_SEQUENCE_NUMBER)
    return None if value is None else int(value)


def merged_properties(properties: dict | None, latest_max: int | None, added_max: int | None) -> dict | None:
    """The new snapshot's properties with the merged maximum (unchanged when neither is known)."""
    if latest_max is None and added_max is None:
        return properties
    known = [v for v in (latest_max, added_max) if v is not None]
    return {**(properties or {}), MAX_SEQUENCE_NUMBER: str(max(known))}
