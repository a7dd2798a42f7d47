"""Tag files `<table>/tag/tag-<name>` (FORMAT.md section 3).

A tag file is the tagged snapshot's JSON, written by plain overwrite. A tag with a retention
carries two more keys, and a tag without one must not carry them (readers up to 0.7 fail):
- `tagCreateTime`: the local wall clock as Jackson's JavaTimeModule writes a LocalDateTime,
  `[y, m, d, h, min(, s(, nanos))]` with trailing zero seconds/nanos left out;
- `tagTimeRetained`: a Duration as decimal seconds with nine fraction digits (`86400.000000000`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import time
from dataclasses import dataclass

from tarn import paths
from tarn.errors import CorruptFile, FileMissing, OutcomeUnknown, SnapshotNotFound
from tarn.fs import FileIO, join
from tarn.meta.snapshot import Snapshot

CREATE_TIME_KEY = "tagCreateTime"
TIME_RETAINED_KEY = "tagTimeRetained"


@dataclass(frozen=True)
class Tag:
    """A named snapshot, with Paimon's optional creation time and retention."""

    name: str
    snapshot: Snapshot
    create_time: dt.datetime | None = None  # local wall clock (Java LocalDateTime)
    time_retained: dt.timedelta | None = None

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    def expires_at(self) -> dt.datetime | None:
        if self.create_time is None or self.time_retained is None:
            return None
        return self.create_time + self.time_retained


# ---------------------------------------------------------------------------------------------
# JSON form


def local_datetime_array(value: dt.datetime) -> list[int]:
    """A LocalDateTime as JavaTimeModule writes it: seconds and nanos only when needed."""
    parts = [value.year, value.month, value.day, value.hour, value.minute]
    nanos = value.microsecond * 1000
    if value.second or nanos:
        parts.append(value.second)
    if nanos:
        parts.append(nanos)
    return parts


def parse_local_datetime(value, source: str) -> dt.datetime:
    if isinstance(value, str):  # ISO text, as some writers produce
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError as exc:
            raise CorruptFile(f"tag file {source}: bad {CREATE_TIME_KEY} {value!r}") from exc
    if not isinstance(value, list) or not 5 <= len(value) <= 7:
        raise CorruptFile(f"tag file {source}: bad {CREATE_TIME_KEY} {value!r}")
    year, month, day, hour, minute, *rest = (int(v) for v in value)
    second = rest[0] if rest else 0
    nanos = rest[1] if len(rest) > 1 else 0
    return dt.datetime(year, month, day, hour, minute, second, nanos // 1000)


def duration_seconds_text(value: dt.timedelta) -> str:
    """A Duration as Jackson writes it: whole seconds, '.', nine digits of nanoseconds."""
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    seconds, micro_part = divmod(micros, 1_000_000)
    return f"{seconds}.{micro_part * 1000:09d}"


def parse_duration(value, source: str) -> dt.timedelta:
    try:
        seconds = decimal.Decimal(str(value))
    except decimal.InvalidOperation as exc:
        raise CorruptFile(f"tag file {source}: bad {TIME_RETAINED_KEY} {value!r}") from exc
    micros = int((seconds * 1_000_000).to_integral_value(rounding=decimal.ROUND_FLOOR))
    return dt.timedelta(microseconds=micros)


def tag_json(snapshot: Snapshot, create_time: dt.datetime | None = None,
             time_retained: dt.timedelta | None = None) -> str:
    """The tag file text: the snapshot JSON, plus `tagCreateTime` when given (or retained) and
    `tagTimeRetained` when retained."""
    base = {k: v for k, v in snapshot.to_dict().items() if k not in (CREATE_TIME_KEY, TIME_RETAINED_KEY)}
    text = json.dumps(base, indent=2, separators=(",", " : "))
    if time_retained is None and create_time is None:
        return text
    create_time = create_time or dt.datetime.now()
    array = ", ".join(str(v) for v in local_datetime_array(create_time))
    extra = f',\n  "{CREATE_TIME_KEY}" : [ {array} ]'
    if time_retained is not None:
        extra += f',\n  "{TIME_RETAINED_KEY}" : {duration_seconds_text(time_retained)}'
    return text[: text.rstrip().rfind("}")].rstrip() + extra + "\n}"


def parse_tag(name: str, text: str | bytes, source: str) -> Tag:
    try:
        obj = json.loads(text, parse_float=decimal.Decimal)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptFile(f"tag file {source} is not valid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise CorruptFile(f"tag file {source} does not hold a JSON object")
    raw_time = obj.pop(CREATE_TIME_KEY, None)
    raw_retained = obj.pop(TIME_RETAINED_KEY, None)
    create_time = parse_local_datetime(raw_time, source) if raw_time is not None else None
    retained = parse_duration(raw_retained, source) if raw_retained is not None else None
    return Tag(name, Snapshot.from_dict(obj, source), create_time, retained)


# ---------------------------------------------------------------------------------------------
# Settled writes: a metadata change whose request failed is looked at again (tags, rollback)

SETTLE_ATTEMPTS = 4  # tries of a request (or a look at its effect) before giving up


def retried(step, attempts: int = SETTLE_ATTEMPTS):
    """`step()`, tried again after a storage error (an OSError but not FileMissing)."""
    for attempt in range(1, attempts + 1):
        try:
            return step()
        except FileMissing:
            raise
        except OSError:  # StorageError is one
            if attempt == attempts:
                raise
            time.sleep(0.05 * 2 ** attempt)


def holds(file_io: FileIO, path: str, data: bytes, cause: Exception) -> bool:
    """After a write of `data` to `path` raised `cause`: does the file hold `data`? Absent
    raises `cause` (nothing was written); unreadable raises OutcomeUnknown."""
    try:
        on_disk = retried(lambda: file_io.read_bytes(path))
    except FileMissing:
        on_disk = None
    except Exception as exc:
        raise OutcomeUnknown(f"writing {path} failed ({cause}) and the file could not be read back ({exc}): "
                             "it may or may not hold what was written") from exc
    if on_disk is None:
        raise cause
    return on_disk == data


def create_settled(file_io: FileIO, path: str, data: bytes) -> bool:
    """`FileIO.write_if_absent`, a failed create settled by reading the file back (as a
    snapshot's create is): our bytes True, another's False, absent the store's error (not
    created), unreadable OutcomeUnknown."""
    try:
        return file_io.write_if_absent(path, data)
    except OutcomeUnknown:
        raise
    except Exception as exc:  # noqa: BLE001 - settled below
        return holds(file_io, path, data, exc)


def write_settled(file_io: FileIO, path: str, data: bytes) -> None:
    """`FileIO.write_bytes` (create or replace); a failed write whose bytes are there anyway
    (a PUT that landed before its answer was lost) counts as done."""
    try:
        file_io.write_bytes(path, data)
    except OutcomeUnknown:
        raise
    except Exception as exc:  # noqa: BLE001 - settled below
        if not holds(file_io, path, data, exc):
            raise


def delete_settled(file_io: FileIO, path: str) -> None:
    """Delete `path`, retried; one that keeps failing is settled by looking: gone is done.
    Raises the store's error when the file is still there, OutcomeUnknown when that cannot
    be told."""
    try:
        retried(lambda: file_io.delete(path))
        return
    except Exception as exc:  # noqa: BLE001 - settled below
        failure = exc
    try:
        there = retried(lambda: file_io.exists(path))
    except Exception as exc:
        raise OutcomeUnknown(f"deleting {path} failed ({failure}) and whether it is gone could not be told "
                             f"({exc})") from exc
    if there:
        raise failure


# ---------------------------------------------------------------------------------------------
# Storage


class TagStore:
    """Reads and writes the tag files of one table (main branch)."""

    def __init__(self, file_io: FileIO, root: str, table_name: str = ""):
        self.file_io = file_io
        self.root = root
        self.table_name = table_name or root
        self.dir = join(root, paths.TAG_DIR)

    def path(self, name: str) -> str:
        return paths.tag_path(self.root, name)

    def exists(self, name: str) -> bool:
        return self.file_io.exists(self.path(name))

    def names(self) -> list[str]:
        prefix = paths.TAG_PREFIX
        return sorted(n[len(prefix):] for n in self.file_io.list_dir(self.dir)
                      if n.startswith(prefix) and len(n) > len(prefix))

    def find(self, name: str) -> Tag | None:
        path = self.path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileMissing:
            return None  # not found (deleted meanwhile)
        return parse_tag(name, data, path)

    def get(self, name: str) -> Tag:
        tag = self.find(name)
        if tag is None:
            raise SnapshotNotFound(f"table {self.table_name}: tag '{name}' does not exist "
                                   f"(tags: {self.names()})")
        return tag

    def tags(self) -> list[Tag]:
        """Every tag, ordered by tagged snapshot id, then name."""
        found = [t for t in (self.find(n) for n in self.names()) if t is not None]
        return sorted(found, key=lambda t: (t.snapshot.id, t.name))

    def tagged_snapshots(self) -> list[Snapshot]:
        """One snapshot per tagged id, ascending (several tags may share one)."""
        by_id: dict[int, Snapshot] = {}
        for tag in self.tags():
            by_id.setdefault(tag.snapshot.id, tag.snapshot)
        return [by_id[i] for i in sorted(by_id)]

    def write(self, name: str, snapshot: Snapshot, create_time: dt.datetime | None = None,
              time_retained: dt.timedelta | None = None, create: bool = False) -> Tag | None:
        """Write the tag file atomically (readers never see a torn one). `create`: only if no
        tag of that name exists (None when one does: another writer created it first). A
        write that failed is settled by reading the file back: returns when it landed, raises
        the store's error when it did not, OutcomeUnknown when that cannot be told."""
        text = tag_json(snapshot, create_time, time_retained)
        if create:
            if not create_settled(self.file_io, self.path(name), text.encode()):
                return None
        else:
            write_settled(self.file_io, self.path(name), text.encode())
        return parse_tag(name, text, self.path(name))

    def delete(self, name: str) -> None:
        """Delete the tag file (settled: raises only when it is still there, OutcomeUnknown
        when that cannot be told)."""
        delete_settled(self.file_io, self.path(name))

    def copy(self, name: str, new_name: str) -> bool:
        """Create the new name with the tag file's bytes; False if the new name was taken
        (settled as `write(create=True)`)."""
        data = self.file_io.read_bytes(self.path(name))
        return create_settled(self.file_io, self.path(new_name), data)

    def rename(self, name: str, new_name: str) -> bool:
        """Move the tag file to the new name, bytes unchanged; False if the new name was taken."""
        if not self.copy(name, new_name):
            return False
        self.delete(name)
        return True

    def modification_time_ms(self, name: str) -> int | None:
        info = self.file_io.info(self.path(name))
        if info.mtime_ns is None:
            return None
        return info.mtime_ns // 1_000_000
