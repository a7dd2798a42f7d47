"""Commits a REST client sends: the client wrote the data files, manifests and manifest lists
into the table's directory; the server makes its snapshot the table's latest through the
table's commit point, one commit per table at a time.

The snapshot id pins the base: a snapshot must be the one after the latest (id taken, or a
base that a rollback or expiry removed: a lost race, `success=false`, and the client rebuilds
on the new latest, as Paimon's committer does), built on the latest snapshot's uuid when the
latest has one, under a schema the table has, over manifest lists that are on storage.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Set as AbstractSet

from tarn.catalog.rest_wire import CommitRequest
from tarn.errors import InvalidArgument, TableNotFound
from tarn.meta.manifest import ADD, DELETE
from tarn.store.commit_point import Publication

log = logging.getLogger(__name__)


class TableLocks:
    """One lock per table (its directory), created on first use; branches share the table's.
    Commits, schema changes, drops, renames, tags and branches of one table take it."""

    def __init__(self):
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def of(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


def commit(catalog, identifier: str, loaded, request: CommitRequest) -> bool:
    """Make `request.snapshot` the latest snapshot of `loaded` (a LoadedTable,
    tarn/server/tables.py; the caller holds the table's lock). True when it landed; False on a
    lost race; InvalidArgument (400) for a snapshot that cannot be the table's (unknown
    schema, missing manifest lists); TableNotFound (404) when the request names another table
    (a stale `tableId`). No manifest is read unless the commit point needs the snapshot's
    files (its base vanished meanwhile)."""
    if request.table_id is not None and request.table_id != loaded.table_id:
        raise TableNotFound(f"table {identifier}: the commit is for table id {request.table_id}, which is not this "
                            "table's (dropped and created again?); load the table again")
    table = loaded.table
    context = table.core
    snapshot = request.snapshot
    if not isinstance(snapshot.id, int) or snapshot.id < 1:
        raise InvalidArgument(f"table {identifier}: snapshot id {snapshot.id!r} is not a positive number")
    # the base is the snapshot before it (read directly: the commit point creates `snapshot-<id>`
    # only if absent, so an id another commit took is a lost race there; a base that is gone or
    # another one than the client built on is a lost race here)
    latest = context.snapshot_store.find(snapshot.id - 1) if snapshot.id > 1 else None
    if snapshot.id > 1 and latest is None:
        log.info("table %s: commit of snapshot %d refused, its base %d is not there", identifier, snapshot.id,
                 snapshot.id - 1)
        return False
    if latest is not None and latest.uuid is not None and request.base_snapshot_uuid != latest.uuid:
        return False
    if latest is None and request.base_snapshot_uuid is not None:
        return False  # built on a snapshot that is gone
    schema = _schema_of(context, identifier, snapshot.schema_id, loaded.schema_ids)
    manifests = context.manifests(schema)
    _check_files(context, manifests, identifier, snapshot)
    delta = DeltaFiles(manifests, snapshot.delta_manifest_list)
    publication = Publication(snapshot=snapshot, base=latest, added=delta.names(ADD), removed=delta.names(DELETE),
                              manifests=manifests)
    return catalog.commit_point(table).publish(publication)


def _schema_of(context, identifier: str, schema_id, schema_ids: list[int]):
    if not isinstance(schema_id, int) or schema_id not in schema_ids:
        raise InvalidArgument(f"table {identifier}: the snapshot names schema {schema_id!r}, which the table "
                              f"does not have (schemas {schema_ids})")
    if schema_id != schema_ids[-1]:
        log.info("table %s: snapshot written with schema %s, the latest is %s", identifier, schema_id, schema_ids[-1])
    return context.schema_by_id(schema_id)


def _check_files(context, manifests, identifier: str, snapshot) -> None:
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.changelog_manifest_list]
    wanted = [manifests.path(name) for name in lists if name]
    if snapshot.index_manifest:
        wanted.append(manifests.path(snapshot.index_manifest))
    missing = [path for path in wanted if not context.file_io.exists(path)]
    if missing:
        raise InvalidArgument(f"table {identifier}: snapshot {snapshot.id} references {missing[:3]}, which are not "
                              "in the table's directory; write the files before committing")


class DeltaFiles:
    """The data files a snapshot's delta manifests add and remove, read on first use: the
    commit point asks for them only to tell whether a snapshot whose base vanished after it
    was created landed behind the latest (tarn/store/commit_point.py), so a commit that lands
    on its base reads no manifest."""

    def __init__(self, manifests, delta_manifest_list: str):
        self._manifests = manifests
        self._list = delta_manifest_list
        self._by_kind: dict[int, set[str]] | None = None

    def names(self, kind: int) -> "FileNames":
        return FileNames(self, kind)

    def of_kind(self, kind: int) -> set[str]:
        if self._by_kind is None:
            by_kind = {ADD: set(), DELETE: set()}
            for meta in self._manifests.read_manifest_list(self._list):
                for entry in self._manifests.read_manifest(meta.file_name):
                    by_kind[ADD if entry.kind == ADD else DELETE].add(entry.file.file_name)
            self._by_kind = by_kind
        return self._by_kind[kind]


class FileNames(AbstractSet):
    """A set of file names `DeltaFiles` reads when first asked (for `bool`, `&`, `in`, ...)."""

    def __init__(self, delta: DeltaFiles, kind: int):
        self._delta, self._kind = delta, kind

    @classmethod
    def _from_iterable(cls, names):
        return set(names)

    def __contains__(self, name) -> bool:
        return name in self._delta.of_kind(self._kind)

    def __iter__(self):
        return iter(self._delta.of_kind(self._kind))

    def __len__(self) -> int:
        return len(self._delta.of_kind(self._kind))


class SnapshotTotals:
    """Record, file and byte totals of snapshots, computed once per (table, snapshot): GET
    .../snapshot is asked before every scan and commit."""

    def __init__(self, size: int = 256):
        self._size = size
        self._cache: OrderedDict = OrderedDict()
        self._guard = threading.Lock()

    def get(self, key, compute):
        with self._guard:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        value = compute()
        with self._guard:
            self._cache[key] = value
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return value
