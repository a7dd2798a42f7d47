"""Tags: create, delete (with the files only that tag kept), rename, list; automatic creation
(`tag.automatic-creation`) and expiry (`tag.num-retained-max`, tag retention).

Deleting a tag whose snapshot has expired frees the data files and metadata nothing else uses.
A file lives over a contiguous run of snapshot ids, so only the neighbours can share files
with the tag: the previous tag and the nearer of the next tag and the earliest snapshot.
Files another branch's snapshots, tags or long-lived changelogs reach always stay (a branch
created from the tag holds a copy of it).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from tarn.errors import CorruptFile, InvalidArgument, InvalidOption, OutcomeUnknown, SnapshotNotFound
from tarn.iceberg import refs as iceberg_refs
from tarn.ops.references import (TableFiles, branch_references, branched_since, delete_empty_dirs,
                                         delete_paths)
from tarn.meta.snapshot import Snapshot
from tarn.options import Options, parse_duration_ms
from tarn.store.commit_point import check_writes_metadata
from tarn.store.tags import Tag, TagStore, retried

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from tarn.core import TableCore

BATCH_TAG_PREFIX = "batch-write-"
LONG_MIN = -(1 << 63)


def tag_store(table: "TableCore") -> TagStore:
    return table.tag_store


def _iceberg_tag(table: "TableCore", name: str, snapshot_id: int | None) -> None:
    """Tell the table's Iceberg metadata that tag `name` now points at `snapshot_id` (None:
    is gone). The tag change landed: a failure is kept, never raised."""
    try:
        if snapshot_id is None:
            iceberg_refs.tag_deleted(table, name)
        else:
            iceberg_refs.tag_created(table, name, snapshot_id)
    except Exception as exc:  # noqa: BLE001 - the next commit rewrites every ref
        kept_error(table, f"tag '{name}' changed, but updating its Iceberg ref failed (the next commit does)", exc)


def kept_error(table: "TableCore", what: str, exc: Exception) -> None:
    """A failure after the operation's change landed: logged and kept in the table's
    `last_maintenance_errors`, never raised (the caller must not retry a landed change)."""
    log.warning("table %s: %s (the change stands): %s", table.name, what, exc)
    errors = getattr(table, "last_maintenance_errors", None)
    if isinstance(errors, list):
        errors.append(exc)


# ---------------------------------------------------------------------------------------------
# manual tags


def check_tag_name(name, table_name: str, what: str = "tag name") -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"table {table_name}: {what} must not be blank (got {name!r})")
    if name.isdigit():
        raise InvalidArgument(f"table {table_name}: {what} '{name}' is numeric; a numeric name "
                              "would be taken for a snapshot id")
    if "/" in name or name.startswith("."):
        raise InvalidArgument(f"table {table_name}: {what} '{name}' must not contain '/' "
                              "or start with '.'")
    return name


def as_duration(value, table_name: str, what: str = "time_retained") -> dt.timedelta | None:
    """A retention given as timedelta, milliseconds, or a Paimon duration string ('1 d')."""
    if value is None or isinstance(value, dt.timedelta):
        result = value
    elif isinstance(value, bool):
        raise InvalidArgument(f"table {table_name}: {what} must be a duration, got {value!r}")
    elif isinstance(value, int):
        result = dt.timedelta(milliseconds=value)
    elif isinstance(value, str):
        try:
            result = dt.timedelta(milliseconds=parse_duration_ms(value))
        except ValueError as exc:
            raise InvalidArgument(f"table {table_name}: {what} '{value}': {exc}") from None
    else:
        raise InvalidArgument(f"table {table_name}: {what} must be a duration, got {value!r}")
    if result is not None and result <= dt.timedelta(0):
        raise InvalidArgument(f"table {table_name}: {what} must be positive (got {value!r})")
    return result


def find_snapshot(table: "TableCore", snapshot_id: int) -> Snapshot:
    """The snapshot with that id, from the snapshot files or, once expired, from a tag."""
    if table.snapshot_store.exists(snapshot_id):
        return table.snapshot_store.get(snapshot_id)
    for tag in tag_store(table).tags():
        if tag.snapshot.id == snapshot_id:
            return tag.snapshot
    earliest, latest = table.snapshot_store.earliest_id(), table.snapshot_store.latest_id()
    span = "no snapshots" if latest is None else f"snapshots {earliest}..{latest} exist"
    raise SnapshotNotFound(f"table {table.name}: snapshot {snapshot_id} does not exist "
                           f"({span}; expired snapshots live on only in tags)")


def create_tag(table: "TableCore", name: str, snapshot_id: int | None = None, time_retained=None,
               ignore_if_exists: bool = False) -> Tag:
    """Tag a snapshot (default: the latest). `time_retained` defaults to
    `tag.default-time-retained`; without one the tag never expires by time.

    Returns once the tag landed. A create whose request failed is settled by reading the
    tag file back; OutcomeUnknown when neither that nor the check that its snapshot did not
    expire meanwhile can be done; any other error means no tag was created."""
    check_writes_metadata(table, "create_tag")
    check_tag_name(name, table.name)
    retained = as_duration(time_retained, table.name)
    if retained is None:
        retained = _default_retention(table)
    store = tag_store(table)
    if snapshot_id is None:
        snapshot = table.latest_snapshot()
        if snapshot is None:
            raise SnapshotNotFound(f"table {table.name}: cannot create tag '{name}': "
                                   "the table has no snapshot yet")
    else:
        snapshot = find_snapshot(table, int(snapshot_id))
    # the creation time always (Java writes it only with a retention, for readers <= 0.7 that
    # do not know the field; every release since reads it)
    tag = store.write(name, snapshot, dt.datetime.now(), retained, create=True)
    if tag is not None:
        _check_still_there(table, tag)
        _iceberg_tag(table, name, tag.snapshot.id)
        return tag
    if ignore_if_exists:
        return store.get(name)
    raise InvalidArgument(f"table {table.name}: tag '{name}' already exists "
                          f"(snapshot {store.get(name).snapshot.id})")


def _check_still_there(table: "TableCore", tag: Tag) -> None:
    """Expiry deletes a snapshot's file before its files and re-reads the tags after: a tag
    written while its snapshot still exists is seen by that expiry. If the snapshot is already
    gone (and no other tag holds it), its files may be too: take the tag back. The tag file
    exists by now: a check that keeps failing is OutcomeUnknown, never another error."""
    snapshot_id = tag.snapshot.id
    store = tag_store(table)

    def held() -> bool:
        if table.snapshot_store.exists(snapshot_id):
            return True
        for name in store.names():
            try:
                other = store.find(name) if name != tag.name else None
            except CorruptFile:  # an unreadable tag holds nothing
                continue
            if other is not None and other.snapshot.id == snapshot_id:
                return True
        return False

    try:
        if retried(held):
            return
    except Exception as exc:
        raise OutcomeUnknown(f"table {table.name}: tag '{tag.name}' was created, but whether its snapshot "
                             f"{snapshot_id} had expired meanwhile could not be checked ({exc}): check that the "
                             "tag reads (scan(tag=...)) before using it") from exc
    try:
        store.delete(tag.name)
    except Exception as exc:
        raise OutcomeUnknown(f"table {table.name}: snapshot {snapshot_id} expired while tag '{tag.name}' was "
                             f"being created, and taking the tag back failed ({exc}): delete_tag('{tag.name}') "
                             "removes it") from exc
    raise SnapshotNotFound(f"table {table.name}: snapshot {snapshot_id} expired while tag '{tag.name}' was "
                           "being created; no tag was created")


def replace_tag(table: "TableCore", name: str, snapshot_id: int | None = None, time_retained=None) -> Tag:
    """Point an existing tag at another snapshot (the old snapshot's files are not freed).
    A write whose request failed is settled by reading the tag file back (our bytes: it
    landed); OutcomeUnknown when it cannot be read; any other error: the tag is unchanged."""
    check_writes_metadata(table, "replace_tag")
    check_tag_name(name, table.name)
    store = tag_store(table)
    store.get(name)
    retained = as_duration(time_retained, table.name)
    snapshot = table.latest_snapshot() if snapshot_id is None else find_snapshot(table, int(snapshot_id))
    if snapshot is None:
        raise SnapshotNotFound(f"table {table.name}: cannot replace tag '{name}': no snapshot")
    tag = store.write(name, snapshot, dt.datetime.now(), retained)
    _iceberg_tag(table, name, snapshot.id)
    return tag


def rename_tag(table: "TableCore", name: str, new_name: str) -> None:
    """The rename lands with the creation of the new name (settled as `create_tag`'s); a
    failure to delete the old name after that is kept in `last_maintenance_errors`."""
    check_writes_metadata(table, "rename_tag")
    check_tag_name(name, table.name, "original tag name")
    check_tag_name(new_name, table.name, "new tag name")
    table.last_maintenance_errors = []
    store = tag_store(table)
    if not store.exists(name):
        raise SnapshotNotFound(f"table {table.name}: tag '{name}' does not exist (tags: {store.names()})")
    if not store.copy(name, new_name):  # create-if-absent: one winner
        raise InvalidArgument(f"table {table.name}: tag '{new_name}' already exists")
    _iceberg_tag(table, new_name, store.get(new_name).snapshot.id)
    try:
        store.delete(name)
    except Exception as exc:  # noqa: BLE001 - the rename landed
        kept_error(table, f"tag '{name}' was renamed to '{new_name}', but deleting the old name failed "
                   f"(delete_tag('{name}') removes it)", exc)
        return
    _iceberg_tag(table, name, None)


def list_tags(table: "TableCore") -> list[Tag]:
    """Every tag, by tagged snapshot id then name."""
    return tag_store(table).tags()


@dataclass(frozen=True)
class TagDeletePlan:
    """What deleting tags removes, in order: the tag files `tag_names`, the data files
    `data_paths`, then `metadata_paths` (empty when another tag or snapshot still holds them)."""

    tag_names: tuple[str, ...]
    data_paths: tuple[str, ...] = ()
    metadata_paths: tuple[str, ...] = ()
    clean_empty_dirs: bool = False
    branches: tuple[str, ...] = ()  # the branches whose files the plan keeps


def delete_tag(table: "TableCore", name: str) -> None:
    """Delete a tag and the files only it kept alive. The deletion of the tag file decides
    (settled: an error means the tag is still there); failures deleting the files after it
    are kept in `last_maintenance_errors` (remove_orphan_files frees those files later)."""
    table.last_maintenance_errors = []
    execute_delete_tags(table, plan_delete_tag(table, name))


def plan_delete_tag(table: "TableCore", name: str) -> TagDeletePlan:
    check_writes_metadata(table, "delete_tag")
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"table {table.name}: tag name must not be blank (got {name!r})")
    store = tag_store(table)
    try:
        tag = store.get(name)
    except CorruptFile:  # an unreadable tag file (another engine's crash): drop just the file;
        if not store.exists(name):  # remove_orphan_files frees what it alone kept
            raise
        log.warning("table %s: tag '%s' is unreadable; deleting only its file", table.name, name)
        return TagDeletePlan((name,))
    return plan_delete_tags(table, [name], tag.snapshot)


def delete_tags_of_snapshot(table: "TableCore", names: list[str], snapshot: Snapshot) -> None:
    """Delete the tag files `names` (all on `snapshot`) and, when the snapshot has expired and
    no other tag holds it, the data and metadata files nothing else refers to."""
    execute_delete_tags(table, plan_delete_tags(table, names, snapshot))


def plan_delete_tags(table: "TableCore", names: list[str], snapshot: Snapshot) -> TagDeletePlan:
    """The plan of `delete_tags_of_snapshot`; changes nothing."""
    if table.snapshot_store.exists(snapshot.id):
        return TagDeletePlan(tuple(names))
    all_tags = tag_store(table).tags()
    if any(t.snapshot.id == snapshot.id and t.name not in names for t in all_tags):
        return TagDeletePlan(tuple(names))
    tagged = _unique_snapshots(all_tags)
    position = next((i for i, s in enumerate(tagged) if s.id == snapshot.id), None)
    if position is None:  # the tags are already gone
        return TagDeletePlan(tuple(names))
    neighbours = [tagged[position - 1]] if position > 0 else []
    right = table.snapshot_store.earliest_id()
    right_snapshot = table.snapshot_store.get(right) if right is not None else None
    if position + 1 < len(tagged) and (right_snapshot is None or tagged[position + 1].id < right_snapshot.id):
        right_snapshot = tagged[position + 1]
    if right_snapshot is not None:
        neighbours.append(right_snapshot)
    files = TableFiles(table)
    data, metadata = unshared_files(files, snapshot, neighbours)
    branches = branch_references(table, files)
    return TagDeletePlan(tuple(names), tuple(branches.keep_out(data)), tuple(branches.keep_out(metadata)),
                         files.options.bool("snapshot.clean-empty-directories"), branches.branches)


def execute_delete_tags(table: "TableCore", plan: TagDeletePlan, delete: Callable[[list[str]], object] | None = None) -> None:
    """Carry out a plan; `delete(paths)` removes the data files (default: from this process).

    The tag files go first and decide the outcome: an error while deleting the first means
    nothing changed, one after some were deleted is OutcomeUnknown. Failures deleting the
    files after that are logged and kept in `table.last_maintenance_errors`, not raised."""
    store = tag_store(table)
    deleted: list[str] = []
    try:
        for name in plan.tag_names:
            store.delete(name)
            deleted.append(name)
    except Exception as exc:
        if not deleted or isinstance(exc, OutcomeUnknown):
            raise
        raise OutcomeUnknown(f"table {table.name}: tags {deleted} were deleted, but deleting tag "
                             f"'{plan.tag_names[len(deleted)]}' failed ({exc}); delete it again") from exc
    for name in deleted:
        _iceberg_tag(table, name, None)
    try:
        if (plan.data_paths or plan.metadata_paths) and branched_since(table, plan.branches):
            return  # a branch created from the tag meanwhile uses them: orphan removal frees them later
        if plan.data_paths:
            (delete or partial(delete_paths, table.file_io))(list(plan.data_paths))
            if plan.clean_empty_dirs:
                delete_empty_dirs(table.file_io, table.root, plan.data_paths)
        delete_paths(table.file_io, plan.metadata_paths)
    except Exception as exc:  # noqa: BLE001 - the tags are gone: the change landed
        kept_error(table, f"tag(s) {list(plan.tag_names)} were deleted, but deleting the files only they kept "
                   "failed (remove_orphan_files deletes them)", exc)


def unshared_files(files: TableFiles, snapshot: Snapshot, neighbours: list[Snapshot]
                   ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(data paths, metadata paths) `snapshot` refers to and none of `neighbours` does."""
    kept_files = set()
    kept_names = set()
    for other in neighbours:
        kept_files.update(files.live_files(other))
        kept_names.update(files.metadata_names(other))
    live = files.live_files(snapshot, missing_ok=True)
    data = [p for key, entry in live.items() if key not in kept_files for p in files.data_paths(entry)]
    names = {n for n in files.metadata_names(snapshot, missing_ok=True) if n not in kept_names}
    return tuple(dict.fromkeys(data)), tuple(files.metadata_paths(snapshot, names))


def _unique_snapshots(tags: list[Tag]) -> list[Snapshot]:
    by_id: dict[int, Snapshot] = {}
    for tag in tags:
        by_id.setdefault(tag.snapshot.id, tag.snapshot)
    return [by_id[i] for i in sorted(by_id)]


def _default_retention(table: "TableCore") -> dt.timedelta | None:
    ms = table.options.duration_ms("tag.default-time-retained")
    return None if ms is None else dt.timedelta(milliseconds=ms)


# ---------------------------------------------------------------------------------------------
# tag expiry


def expire_tags(table: "TableCore", now: dt.datetime | None = None,
                older_than: dt.datetime | None = None) -> list[str]:
    """Delete tags past their retention (`create time + time retained < now`, local clock) and,
    when `older_than` is given, tags created before it (tags without a create time use their
    file's modification time). Returns the deleted names."""
    check_writes_metadata(table, "tag expiry")
    now = now or dt.datetime.now()
    store = tag_store(table)
    expired = []
    for tag in store.tags():
        created = tag.create_time
        if created is None and older_than is not None:
            mtime = store.modification_time_ms(tag.name)
            created = None if mtime is None else dt.datetime.fromtimestamp(mtime / 1000)
        if created is None:
            continue
        past_retention = tag.time_retained is not None and now > created + tag.time_retained
        too_old = older_than is not None and older_than > created
        if past_retention or too_old:
            current = store.find(tag.name)
            if current is not None:
                delete_tags_of_snapshot(table, [tag.name], current.snapshot)
                expired.append(tag.name)
    return expired


# ---------------------------------------------------------------------------------------------
# automatic creation


@dataclass(frozen=True)
class TagPeriod:
    """How automatic tags are named for one `tag.creation-period` and formatter."""

    period: dt.timedelta
    pattern: str  # regex with named groups y, m, d and optionally h, mi
    template: str  # strftime form
    date_only: bool = False  # daily tags: anything after a space is ignored when parsing

    def tag_time(self, name: str) -> dt.datetime | None:
        """The period start a tag name stands for; None if it is not an automatic tag name."""
        text = name.split(" ")[0] if self.date_only else name
        found = re.fullmatch(self.pattern, text)
        if found is None:
            return None
        parts = {k: int(v) for k, v in found.groupdict().items()}
        try:
            return dt.datetime(parts["y"], parts["m"], parts["d"], parts.get("h", 0), parts.get("mi", 0))
        except ValueError:
            return None

    def tag_name(self, time_: dt.datetime) -> str:
        return time_.strftime(self.template)

    def previous_tag_time(self, time_: dt.datetime) -> dt.datetime:
        """The start of the period before the one holding `time_` (the one to tag now)."""
        millis = _naive_millis(time_)
        step = int(self.period.total_seconds() * 1000)
        start = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=(millis // step) * step)
        return start - self.period


_Y, _M, _D, _H, _MI = r"(?P<y>\d{4})", r"(?P<m>\d{2})", r"(?P<d>\d{2})", r"(?P<h>\d{2})", r"(?P<mi>\d{2})"


def tag_period(options: Options, table_name: str = "") -> TagPeriod:
    duration = options.duration_ms("tag.creation-period-duration")
    if duration is not None:
        if duration <= 0:
            raise InvalidOption(f"table {table_name}: tag.creation-period-duration must be positive")
        return TagPeriod(dt.timedelta(milliseconds=duration), _Y + _M + _D + _H + _MI, "%Y%m%d%H%M")
    period = options.enum("tag.creation-period")
    formatter = options.enum("tag.period-formatter")
    if period == "daily":
        if formatter == "with_dashes":
            return TagPeriod(dt.timedelta(days=1), f"{_Y}-{_M}-{_D}", "%Y-%m-%d", True)
        return TagPeriod(dt.timedelta(days=1), _Y + _M + _D, "%Y%m%d", True)
    if period == "two-hours":
        return TagPeriod(dt.timedelta(hours=2), f"{_Y}-{_M}-{_D} {_H}", "%Y-%m-%d %H")
    if formatter == "with_dashes":
        return TagPeriod(dt.timedelta(hours=1), f"{_Y}-{_M}-{_D} {_H}", "%Y-%m-%d %H")
    if formatter == "without_dashes":
        return TagPeriod(dt.timedelta(hours=1), f"{_Y}{_M}{_D} {_H}", "%Y%m%d %H")
    return TagPeriod(dt.timedelta(hours=1), _Y + _M + _D + _H, "%Y%m%d%H")


def check_tag_options(options: Options, table_name: str) -> None:
    """Raise InvalidOption for tag options Paimon would reject."""
    mode = options.enum("tag.automatic-creation")
    delay = dt.timedelta(milliseconds=options.duration_ms("tag.creation-delay") or 0)
    if mode in ("process-time", "watermark"):
        period = tag_period(options, table_name)
        if delay >= period.period:
            raise InvalidOption(f"table {table_name}: tag.creation-delay ({delay}) must be shorter "
                                f"than the tag creation period ({period.period})")
    retained_max = options.int("tag.num-retained-max")
    if retained_max is not None and retained_max < 1:
        raise InvalidOption(f"table {table_name}: tag.num-retained-max should be at least 1 (got {retained_max})")
    default_retained = options.duration_ms("tag.default-time-retained")
    if default_retained is not None and default_retained <= 0:
        raise InvalidOption(f"table {table_name}: tag.default-time-retained must be positive")


def auto_create_tags(table: "TableCore") -> list[str]:
    """Run `tag.automatic-creation` after a commit; returns the tags created."""
    options = table.options
    mode = options.enum("tag.automatic-creation")
    if mode == "none":
        return []
    check_tag_options(options, table.name)
    if mode == "batch":
        return _batch_tag(table, options)
    return _periodic_tags(table, options, mode)


def _periodic_tags(table: "TableCore", options: Options, mode: str) -> list[str]:
    period = tag_period(options, table.name)
    delay = dt.timedelta(milliseconds=options.duration_ms("tag.creation-delay") or 0)
    store = tag_store(table)
    snapshots = table.snapshot_store
    auto = sorted((t, n) for n in store.names() if (t := period.tag_time(n)) is not None)
    next_tag: dt.datetime | None = None
    if auto:
        last_time, last_name = auto[-1]
        next_snapshot = store.get(last_name).snapshot.id + 1
        next_tag = last_time + period.period
    else:
        next_snapshot = snapshots.earliest_id() or 1
    latest = snapshots.latest_id()
    created = []
    while latest is not None and next_snapshot <= latest:
        if not snapshots.exists(next_snapshot):
            earliest = snapshots.earliest_id()
            if earliest is None or earliest <= next_snapshot:
                break
            next_snapshot = earliest
            continue
        snapshot = snapshots.get(next_snapshot)
        next_snapshot += 1
        moment = _snapshot_time(snapshot, options, mode)
        if moment is None:
            continue
        if next_tag is not None and moment - delay < next_tag + period.period:
            continue
        this_tag = period.previous_tag_time(moment)
        if options.bool("tag.automatic-completion") and next_tag is not None:
            this_tag = next_tag
        name = period.tag_name(this_tag)
        if not store.exists(name):
            create_tag(table, name, snapshot.id, ignore_if_exists=True)
            created.append(name)
        next_tag = this_tag + period.period
        _trim_auto_tags(table, period, options.int("tag.num-retained-max"))
    return created


def _trim_auto_tags(table: "TableCore", period: TagPeriod, retained_max: int | None) -> None:
    if retained_max is None:
        return
    auto = [t for t in tag_store(table).tags() if period.tag_time(t.name) is not None]
    for tag in auto[: max(len(auto) - retained_max, 0)]:
        delete_tags_of_snapshot(table, [tag.name], tag.snapshot)


def _batch_tag(table: "TableCore", options: Options) -> list[str]:
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return []
    name = options.get("tag.batch.customized-name")
    if not name:
        day = _zoned(snapshot.time_millis, options.get("sink.process-time-zone")).strftime("%Y-%m-%d")
        name = BATCH_TAG_PREFIX + day
    store = tag_store(table)
    existing = store.find(name)
    if existing is not None:
        delete_tags_of_snapshot(table, [name], existing.snapshot)
    create_tag(table, name, snapshot.id, ignore_if_exists=True)
    _trim_all_tags(table, options.int("tag.num-retained-max"))
    return [name]


def _trim_all_tags(table: "TableCore", retained_max: int | None) -> None:
    """Delete the oldest tags (by snapshot, then file age) beyond `retained_max`."""
    if retained_max is None:
        return
    store = tag_store(table)
    tags = store.tags()
    excess = len(tags) - retained_max
    if excess <= 0:
        return
    tags.sort(key=lambda t: (t.snapshot.id, store.modification_time_ms(t.name) or 0, t.name))
    doomed = tags[:excess]
    for snapshot_id in dict.fromkeys(t.snapshot.id for t in doomed):
        names = [t.name for t in doomed if t.snapshot.id == snapshot_id]
        delete_tags_of_snapshot(table, names, next(t.snapshot for t in doomed if t.snapshot.id == snapshot_id))


def _snapshot_time(snapshot: Snapshot, options: Options, mode: str) -> dt.datetime | None:
    if mode == "process-time":
        return _zoned(snapshot.time_millis, options.get("sink.process-time-zone"))
    if snapshot.watermark is None or snapshot.watermark == LONG_MIN:
        return None
    return _zoned(snapshot.watermark, options.get("sink.watermark-time-zone"))


def _zoned(millis: int, zone: str | None) -> dt.datetime:
    """The local date-time of epoch millis in a Java zone id (None: the system zone)."""
    if zone is None:
        return dt.datetime.fromtimestamp(millis / 1000).replace(microsecond=(millis % 1000) * 1000)
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=millis)
    return instant.astimezone(_zone(zone)).replace(tzinfo=None)


def _zone(name: str) -> dt.tzinfo:
    if name in ("UTC", "Z", "GMT", "UT"):
        return dt.timezone.utc
    offset = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", name)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0)))
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InvalidOption(f"unknown time zone '{name}'") from None


def _naive_millis(value: dt.datetime) -> int:
    return (value - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)

