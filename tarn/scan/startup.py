"""Where a batch read starts when the table's own options say so.

Paimon honours the `scan.*` read options stored in a table as it honours them given to one
read: `scan.mode` (or, with the default mode, whichever of `scan.timestamp-millis`,
`scan.timestamp`, `scan.snapshot-id`, `scan.tag-name`, `scan.watermark`, `scan.version`,
`scan.file-creation-time-millis`, `scan.creation-time-millis` is set) picks the snapshot a batch
read sees, and `scan.bucket` restricts every read to one bucket (Java: CoreOptions.startupMode,
AbstractDataTableScan.createStartingScanner, TimeTravelUtil). A time-travel argument given to
the read wins over all of them but `scan.bucket`.

`batch_start` answers with a `Start`: the snapshot to read, and the narrowing of its files
(bucket, file creation time). The incremental modes (`incremental-between*`,
`incremental-to-auto-tag`, `scan.mode` = `incremental` or `latest-delta`) read differences,
not snapshots: `Table.scan` and Spark's reads read them with tarn/ops/incremental.py (they ask
`is_incremental` first); `batch_start` refuses them, never reading them as a full snapshot.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tarn.errors import InvalidOption, SnapshotNotFound, UnsupportedFeature
from tarn.meta.snapshot import Snapshot
from tarn.options import Options

if TYPE_CHECKING:
    from tarn.store.context import TableContext

# the keys that pick a snapshot, in the order Java's default scan.mode checks them
TRAVEL_KEYS = ("scan.timestamp-millis", "scan.timestamp", "scan.snapshot-id", "scan.tag-name",
               "scan.watermark", "scan.version", "scan.file-creation-time-millis", "scan.creation-time-millis")
INCREMENTAL_KEYS = ("incremental-between", "incremental-between-timestamp", "incremental-to-auto-tag")
START_KEYS = ("scan.mode", *TRAVEL_KEYS, *INCREMENTAL_KEYS)
WATERMARK_PREFIX = "watermark-"


@dataclass(frozen=True)
class Start:
    """What a batch read reads: `snapshot` (None: the table is empty), only the files created at
    or after `files_from_ms` when set (local wall-clock millis, as data files record it), only
    bucket `bucket` when set; `pinned` when the options chose the snapshot (else: the latest)."""

    snapshot: Snapshot | None
    pinned: bool = False
    files_from_ms: int | None = None
    bucket: int | None = None


def stored_start_options(options: Options) -> dict[str, str]:
    """The start options a table carries (what `batch_start` reads)."""
    return {k: v for k, v in options.raw.items() if k in START_KEYS or k == "scan.bucket"
            or k in ("log.scan", "log.scan.timestamp-millis")}


def has_start(options: Options) -> bool:
    return bool(stored_start_options(options))


def batch_start(table: "TableContext", options: Options, travelled: bool = False) -> Start:
    """The start of a batch read of `table` by `options` (the table's, with a read's laid over
    them). `travelled`: the read named its own snapshot; only `scan.bucket` still applies."""
    bucket = options.int("scan.bucket")
    if travelled:
        return Start(None, bucket=bucket)
    mode = startup_mode(table.name, options)
    if mode == "latest-full":
        return Start(table.latest_snapshot(), bucket=bucket)
    if mode == "compacted-full":
        return Start(_compacted(table, options), True, bucket=bucket)
    if mode == "from-timestamp":
        return Start(_at_time(table, _timestamp_millis(table.name, options)), True, bucket=bucket)
    if mode == "from-file-creation-time":
        millis = _required(table.name, options, "scan.file-creation-time-millis", mode)
        return Start(table.latest_snapshot(), True, files_from_ms=local_wall_millis(millis), bucket=bucket)
    if mode == "from-creation-timestamp":
        return _from_creation_time(table, _required(table.name, options, "scan.creation-time-millis", mode), bucket)
    if mode in ("from-snapshot", "from-snapshot-full"):
        return Start(_from_snapshot(table, options, mode), True, bucket=bucket)
    key = next((k for k in INCREMENTAL_KEYS if k in options.raw), "scan.mode")
    raise UnsupportedFeature(
        f"table {table.name}: option '{key}' = '{options.get(key)}' asks for an incremental read (the "
        f"difference between snapshots): read it with table.scan() or table.changes(start=, end=)")


def is_incremental(options: Options) -> bool:
    """Does a batch read of these options read changed rows (tarn/ops/incremental.py)?"""
    return startup_mode("", options) in ("incremental", "latest-delta")


def startup_mode(name: str, options: Options) -> str:
    """Java's CoreOptions.startupMode: `default` resolved by which start option is set."""
    mode = options.enum("scan.mode")
    raw = options.raw
    if mode == "default":
        if "scan.timestamp-millis" in raw or "log.scan.timestamp-millis" in raw or "scan.timestamp" in raw:
            return "from-timestamp"
        if any(k in raw for k in ("scan.snapshot-id", "scan.tag-name", "scan.watermark", "scan.version")):
            return "from-snapshot"
        if "scan.file-creation-time-millis" in raw:
            return "from-file-creation-time"
        if "scan.creation-time-millis" in raw:
            return "from-creation-timestamp"
        if any(k in raw for k in INCREMENTAL_KEYS):
            return "incremental"
        return "latest-full"
    if mode in ("full", "latest"):  # a batch read of `latest` reads the latest snapshot whole
        return "latest-full"
    return mode


def _required(name: str, options: Options, key: str, mode: str) -> int:
    value = options.int(key)
    if value is None:
        raise InvalidOption(f"table {name}: option '{key}' must be set when 'scan.mode' is '{mode}'")
    return value


def _timestamp_millis(name: str, options: Options) -> int:
    millis = options.int("scan.timestamp-millis")
    if millis is not None:
        return millis
    text = options.get("scan.timestamp")
    if text is None:
        raise InvalidOption(f"table {name}: 'scan.mode' = 'from-timestamp' needs option "
                            f"'scan.timestamp-millis' or 'scan.timestamp'")
    try:  # Java parses it in the JVM's time zone: here, the local one
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidOption(f"table {name}: option 'scan.timestamp' = '{text}' is not a date-time "
                            f"like '2026-11-20 10:00:00'") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)


def _at_time(table: "TableContext", millis: int) -> Snapshot:
    found = table.snapshot_store.at_or_before(millis)
    if found is None:
        earliest = table.snapshot_store.earliest_id()
        first = "none" if earliest is None else str(table.snapshot_store.get(earliest).time_millis)
        raise SnapshotNotFound(f"table {table.name}: there is no snapshot earlier than or equal to "
                               f"timestamp {millis} (the earliest snapshot's timestamp is {first})")
    return found


def _from_snapshot(table: "TableContext", options: Options, mode: str) -> Snapshot:
    raw = dict(options.raw)
    version = raw.pop("scan.version", None)
    if version is not None:
        raw.update(_version_key(table, version))
    picked = [k for k in ("scan.snapshot-id", "scan.tag-name", "scan.watermark", "scan.timestamp",
                          "scan.timestamp-millis") if k in raw]
    if len(picked) > 1:
        raise InvalidOption(f"table {table.name}: only one of the options {picked} may be set")
    chosen = options.updated(raw)
    if "scan.snapshot-id" in raw:
        return _snapshot_by_id(table, chosen.int("scan.snapshot-id"))
    if mode == "from-snapshot-full":
        raise InvalidOption(f"table {table.name}: 'scan.snapshot-id' must be set when 'scan.mode' is "
                            f"'from-snapshot-full'")
    if "scan.watermark" in raw:
        return _at_watermark(table, chosen.int("scan.watermark"))
    if "scan.tag-name" in raw:
        return table.tag_store.get(raw["scan.tag-name"]).snapshot
    raise InvalidOption(f"table {table.name}: 'scan.mode' = '{mode}' needs 'scan.snapshot-id', "
                        f"'scan.tag-name', 'scan.watermark' or 'scan.version'")


def _version_key(table: "TableContext", version: str) -> dict[str, str]:
    """`scan.version` as Java adapts it: a tag of that name, else `watermark-<n>`, else digits
    as a snapshot id."""
    if table.tag_store.exists(version):
        return {"scan.tag-name": version}
    if version.startswith(WATERMARK_PREFIX) and version[len(WATERMARK_PREFIX):].lstrip("-").isdigit():
        return {"scan.watermark": version[len(WATERMARK_PREFIX):]}
    if version.isdigit():
        return {"scan.snapshot-id": version}
    raise SnapshotNotFound(f"table {table.name}: option 'scan.version' = '{version}' names no tag, "
                           f"watermark or snapshot")


def _snapshot_by_id(table: "TableContext", snapshot_id: int) -> Snapshot:
    store = table.snapshot_store
    if store.exists(snapshot_id):
        return store.get(snapshot_id)
    earliest, latest = store.earliest_id(), store.latest_id()
    if latest is None:
        raise SnapshotNotFound(f"table {table.name}: option 'scan.snapshot-id' = {snapshot_id}: "
                               f"the table has no snapshots")
    raise SnapshotNotFound(f"table {table.name}: option 'scan.snapshot-id' = {snapshot_id} is out of "
                           f"the available snapshot ids [{earliest}, {latest}]")


def _missing(watermark: int | None) -> bool:
    return watermark is None or watermark == -(2 ** 63)


def _at_watermark(table: "TableContext", watermark: int) -> Snapshot:
    """The first snapshot whose watermark is at or after `watermark` (a snapshot without one
    takes the place of the closest earlier one that has it): Java's laterOrEqualWatermark."""
    store = table.snapshot_store
    ids = store.list_ids()
    found, lo, hi = None, 0, len(ids) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        pos = mid
        snapshot = store.get(ids[pos])
        while _missing(snapshot.watermark) and pos > lo:
            pos -= 1
            snapshot = store.get(ids[pos])
        if _missing(snapshot.watermark):
            lo = mid + 1
        elif snapshot.watermark >= watermark:
            found, hi = snapshot, pos - 1
        else:
            lo = mid + 1
    if found is None:
        raise SnapshotNotFound(f"table {table.name}: there is no snapshot with a watermark later than or "
                               f"equal to {watermark}")
    return found


def _compacted(table: "TableContext", options: Options) -> Snapshot | None:
    """`compacted-full`: the latest COMPACT snapshot (with `changelog-producer` =
    `full-compaction` or `full-compaction.delta-commits`: the latest full compaction), else the
    latest snapshot."""
    store = table.snapshot_store
    latest = store.latest_id()
    if latest is None:
        return None
    full = (options.get("changelog-producer") == "full-compaction"
            or "full-compaction.delta-commits" in options.raw)
    delta_commits = options.int("full-compaction.delta-commits") or 1
    for snapshot_id in reversed(store.list_ids()):
        snapshot = store.get(snapshot_id)
        if snapshot.commit_kind != "COMPACT":
            continue
        identifier = snapshot.commit_identifier
        if not full or identifier % delta_commits == 0 or identifier == 2 ** 63 - 1:
            return snapshot
    return store.get(latest)


def _from_creation_time(table: "TableContext", millis: int, bucket: int | None) -> Start:
    """`from-creation-timestamp`: the first snapshot committed at or after `millis`; when none
    is, or every snapshot is, the latest snapshot's files created at or after it."""
    store = table.snapshot_store
    earliest = store.earliest_id()
    if earliest is not None and store.get(earliest).time_millis < millis:
        before = store.at_or_before(millis - 1)
        if before is not None and store.exists(before.id + 1):
            return Start(store.get(before.id + 1), True, bucket=bucket)
    return Start(table.latest_snapshot(), True, files_from_ms=local_wall_millis(millis), bucket=bucket)


def local_wall_millis(epoch_millis: int) -> int:
    """Epoch millis as data files record their creation time: the local wall clock read as UTC."""
    moment = dt.datetime.fromtimestamp(epoch_millis / 1000).replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp() * 1000)


# Java's SchemaValidation.validateStartupMode: per mode, the options it needs (exactly one of)
# and the options it conflicts with
_CONFLICTS_OF_OTHER_MODES = ("scan.timestamp-millis", "scan.file-creation-time-millis", "scan.timestamp",
                             "scan.snapshot-id", "scan.tag-name", *INCREMENTAL_KEYS)
_MODE_RULES = {
    "from-timestamp": (("scan.timestamp-millis", "scan.timestamp"),
                       ("scan.snapshot-id", "scan.file-creation-time-millis", "scan.tag-name", *INCREMENTAL_KEYS)),
    "from-snapshot": (("scan.snapshot-id", "scan.tag-name", "scan.watermark", "scan.version"),
                      ("scan.timestamp-millis", "scan.timestamp", "scan.file-creation-time-millis",
                       *INCREMENTAL_KEYS)),
    "incremental": (INCREMENTAL_KEYS, ("scan.snapshot-id", "scan.timestamp-millis", "scan.file-creation-time-millis",
                                       "scan.timestamp", "scan.tag-name")),
    "from-snapshot-full": (("scan.snapshot-id",), ("scan.timestamp-millis", "scan.timestamp",
                                                   "scan.file-creation-time-millis", "scan.tag-name",
                                                   *INCREMENTAL_KEYS)),
    "from-file-creation-time": (("scan.file-creation-time-millis",),
                                ("scan.snapshot-id", "scan.timestamp-millis", "scan.tag-name", *INCREMENTAL_KEYS)),
    "latest-delta": ((), (*TRAVEL_KEYS, *INCREMENTAL_KEYS)),
}


def check_start_options(options: Options, identifier: str) -> None:
    """The start options of a table tarn creates or alters agree with its `scan.mode`, as
    Java validates them (one snapshot selector, the ones a mode needs, none it excludes)."""
    raw = options.raw
    if not any(k in raw for k in START_KEYS):
        return
    mode = startup_mode(identifier, options)
    needed, conflicting = _MODE_RULES.get(mode, ((), _CONFLICTS_OF_OTHER_MODES))
    if needed:
        present = [k for k in needed if k in raw]
        if len(present) != 1:
            raise InvalidOption(f"table {identifier}: 'scan.mode' = '{mode}' needs exactly one of the options "
                                f"{list(needed)}, got {present or 'none'}")
    clash = [k for k in conflicting if k in raw]
    if clash:
        raise InvalidOption(f"table {identifier}: option '{clash[0]}' conflicts with 'scan.mode' = '{mode}'")
