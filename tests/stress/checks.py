"""What a table looks like on storage, checked against the issue-9 promises.

Everything goes through the table's FileIO, so the same checks run on a local directory and
on an object store. Each check returns a list of problems (strings naming the file or
snapshot); an empty list means the promise holds.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import pyarrow as pa

from tarn import paths
from tarn.fs import basename, join
from tarn.ops.references import TableFiles
from tarn.meta.snapshot import Snapshot
from tarn.store.tags import TagStore, parse_tag


@dataclass
class Readback:
    """Every snapshot and tag of a table, read in full (or the error reading it gave)."""

    ids: list[int]
    earliest_id: int | None
    latest_id: int | None
    snapshots: dict[int, pa.Table] = field(default_factory=dict)
    tags: dict[str, tuple[int, pa.Table]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # "snapshot 7" / "tag t1" -> error

    def unreadable(self) -> list[str]:
        return [f"{what} unreadable: {error}" for what, error in sorted(self.errors.items())]


def read_everything(table, columns: list[str] | None = None) -> Readback:
    """Scan every snapshot file and every tag. Unreadable ones are recorded, not raised."""
    store = table.snapshot_store
    ids = store.list_ids()
    back = Readback(ids, None, None)
    try:
        back.latest_id, back.earliest_id = store.latest_id(), store.earliest_id()
    except Exception as exc:
        back.errors["latest/earliest"] = _describe(exc)
    for sid in ids:
        try:
            snapshot = store.get(sid)
            back.snapshots[sid] = table.scan_snapshot(snapshot, columns=columns).to_arrow()
        except Exception as exc:
            back.errors[f"snapshot {sid}"] = _describe(exc)
    tag_store = TagStore(table.file_io, table.root, table.name)
    for name in tag_store.names():
        try:
            tag = tag_store.find(name)
            if tag is None:
                continue  # deleted meanwhile
            back.tags[name] = (tag.snapshot.id, table.scan_snapshot(tag.snapshot, columns=columns).to_arrow())
        except Exception as exc:
            back.errors[f"tag {name}"] = _describe(exc)
    return back


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def continuity_problems(back: Readback) -> list[str]:
    """Snapshot ids form one run from the earliest to the latest, and readers resolve the
    earliest and latest snapshot (hints, with their fallback to listing) to the files there."""
    problems = []
    ids = back.ids
    if not ids:
        return problems
    if ids != list(range(ids[0], ids[-1] + 1)):
        missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
        problems.append(f"snapshot ids not continuous: {ids[0]}..{ids[-1]} lacks {_short(missing)}")
    if back.latest_id != ids[-1]:
        problems.append(f"latest snapshot resolves to {back.latest_id}, newest file is snapshot-{ids[-1]}")
    if back.earliest_id != ids[0]:
        problems.append(f"earliest snapshot resolves to {back.earliest_id}, oldest file is snapshot-{ids[0]}")
    return problems


def tags_beyond_latest(back: Readback) -> list[str]:
    """Tags on snapshot ids past the latest snapshot: only an interrupted rollback leaves
    them, and the next commit reuses the id for a different snapshot (two snapshots, one id)."""
    if back.latest_id is None:
        return []
    return [f"tag {name} is on snapshot {sid}, past the latest snapshot {back.latest_id}: "
            f"the next commit reuses id {sid}" for name, (sid, _) in sorted(back.tags.items())
            if sid > back.latest_id]


def _short(items: list, limit: int = 12) -> str:
    if len(items) <= limit:
        return str(items)
    return f"{items[:limit]} ... ({len(items)} in all)"


# ---------------------------------------------------------------------------------------------
# metadata files


def _parse_snapshot(data: bytes, path: str) -> None:
    Snapshot.from_json(data, path)


def _parse_hint(data: bytes, path: str) -> None:
    if not data.decode().strip().isdigit():
        raise ValueError(f"hint {path} holds {data[:40]!r}")


def _parse_json(data: bytes, path: str) -> None:
    if not isinstance(json.loads(data), dict):
        raise ValueError(f"{path} is not a JSON object")


def metadata_problems(table) -> list[str]:
    """Every visible file of snapshot/, tag/, schema/, consumer/ parses; none is empty.
    Hidden temp files (a killed writer's `.<name>.<uuid>.tmp`) are not visible metadata."""
    io, root = table.file_io, table.root
    problems = []
    checks = {
        paths.SNAPSHOT_DIR: lambda name: (_parse_hint if name in (paths.LATEST, paths.EARLIEST)
                                          else _parse_snapshot),
        paths.TAG_DIR: lambda name: (lambda data, path: parse_tag(name[len(paths.TAG_PREFIX):], data, path)),
        paths.SCHEMA_DIR: lambda name: _parse_json,
        paths.CONSUMER_DIR: lambda name: _parse_json,
    }
    for directory, parser_for in checks.items():
        for info in io.list_files(join(root, directory), recursive=False):
            name = basename(info.path)
            if name.startswith("."):
                continue
            if info.size == 0:
                problems.append(f"0-byte metadata file {directory}/{name}")
                continue
            try:
                parser_for(name)(io.read_bytes(info.path), info.path)
            except Exception as exc:
                problems.append(f"torn metadata file {directory}/{name}: {_describe(exc)}")
    return problems


# ---------------------------------------------------------------------------------------------
# files on storage vs files referenced


def referenced_files(table) -> tuple[set[str], list[str]]:
    """(paths of every file a snapshot or tag refers to, plus the snapshot, hint, schema, tag
    and consumer files themselves; problems met while reading what they refer to)."""
    io, root = table.file_io, table.root
    files = TableFiles(table)
    used: set[str] = set()
    problems: list[str] = []
    retained: list[tuple[str, Snapshot]] = []
    store = table.snapshot_store
    for sid in store.list_ids():
        try:
            retained.append((f"snapshot {sid}", store.get(sid)))
        except Exception as exc:
            problems.append(f"snapshot {sid} unreadable: {_describe(exc)}")
    tag_store = TagStore(io, root, table.name)
    for name in tag_store.names():
        try:
            tag = tag_store.find(name)
        except Exception as exc:
            problems.append(f"tag {name} unreadable: {_describe(exc)}")
            continue
        if tag is not None:
            retained.append((f"tag {name}", tag.snapshot))
    for what, snapshot in retained:
        try:
            for entry in files.live_files(snapshot).values():
                used.update(files.data_paths(entry))
            names = set(files.metadata_names(snapshot, changelog=True))
            used.update(files.metadata_paths(snapshot, names))
            for entry in files.changelog_files(snapshot):
                used.update(files.data_paths(entry))
        except Exception as exc:
            problems.append(f"{what}: cannot list its files: {_describe(exc)}")
    for directory in (paths.SNAPSHOT_DIR, paths.SCHEMA_DIR, paths.TAG_DIR, paths.CONSUMER_DIR):
        for info in io.list_files(join(root, directory), recursive=False):
            if not basename(info.path).startswith("."):
                used.add(info.path)
    return used, problems


def all_files(table) -> set[str]:
    return {info.path for info in table.file_io.list_files(table.root, recursive=True)}


def storage_problems(table) -> list[str]:
    """Referenced files that are missing, and files nothing refers to."""
    used, problems = referenced_files(table)
    present = all_files(table)
    missing = sorted(used - present)
    extra = sorted(present - used)
    root = table.root + "/"
    if missing:
        problems.append(f"{len(missing)} referenced file(s) missing: {_short([p.replace(root, '') for p in missing], 6)}")
    if extra:
        problems.append(f"{len(extra)} unreferenced file(s): {_short([p.replace(root, '') for p in extra], 6)}")
    return problems


def remove_orphans_now(table) -> list[str]:
    """remove_orphan_files with `older_than` = now (after the clock has moved past every file)."""
    time.sleep(0.01)
    return table.remove_orphan_files(older_than=int(time.time() * 1000) + 1)
