"""The tables a server has loaded, kept per identifier (`db.t`, `db.t$branch_b`) so that a
request does not load its table again: the Table (with the schemas its context has read),
its id and the schema ids it has.

An entry is checked on every use with one listing of the table's schema directory and one
read of its first schema file, compared byte for byte with the bytes it was loaded with: a
table dropped and created again (by this server or by anyone writing the warehouse) has
another first schema (its creation time is in it), a dropped or renamed one has none, and
either way the catalog loads the table afresh (TableNotFound when it is gone). The server
also forgets a table's entries after every change it makes to the table's metadata."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from tarn.errors import FileMissing


@dataclass
class LoadedTable:
    """A table as loaded by the catalog, its id, and what it was checked with."""

    table: object  # tarn.table.Table
    table_id: str
    first_schema: bytes | None  # the bytes of its first schema file when loaded
    schema_ids: list[int]  # the schema ids it has (listed when last checked)


class LoadedTables:
    """Loaded tables of `catalog` per identifier, at most `size` of them (least recently used
    dropped first); thread-safe."""

    def __init__(self, catalog, size: int = 512):
        self.catalog = catalog
        self._size = size
        self._entries: OrderedDict[str, LoadedTable] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, identifier: str) -> LoadedTable:
        """The table `identifier`, loaded again when it is not the one kept; TableNotFound
        (from the catalog) when it does not exist."""
        with self._guard:
            entry = self._entries.get(identifier)
            if entry is not None:
                self._entries.move_to_end(identifier)
        if entry is not None and _still_current(entry):
            return entry
        entry = _load(self.catalog, identifier)
        with self._guard:
            self._entries[identifier] = entry
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return entry

    def forget(self, identifier: str) -> None:
        """Drop the entries of table `identifier` (`db.t`): the table and its branches."""
        self._drop(lambda name: name == identifier or name.startswith(identifier + "$"))

    def forget_database(self, database: str) -> None:
        """Drop the entries of every table of `database`."""
        self._drop(lambda name: name.startswith(database + "."))

    def _drop(self, matches) -> None:
        with self._guard:
            for identifier in [i for i in self._entries if matches(i)]:
                del self._entries[identifier]


def table_id(table) -> str:
    """A stable id of a table (GetTableResponse `id`, sent back with each commit): derived from
    its directory and the creation time of its first schema, so a table dropped and created
    again under the same name has another id."""
    context = table.core
    first = context.schema_by_id(context.schema_store.list_ids()[0])
    digest = hashlib.sha256(f"{context.root}\n{first.time_millis}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _load(catalog, identifier: str) -> LoadedTable:
    table = catalog.load_table(identifier)
    store = table.core.schema_store
    ids = store.list_ids()
    first = _first_schema_bytes(store, ids)
    return LoadedTable(table, table_id(table), first, ids)


def _still_current(entry: LoadedTable) -> bool:
    """Is the table at the entry's path still the one it was loaded as? Updates its schema ids."""
    store = entry.table.core.schema_store
    ids = store.list_ids()
    if not ids or _first_schema_bytes(store, ids) != entry.first_schema:
        return False
    entry.schema_ids = ids
    return True


def _first_schema_bytes(store, ids: list[int]) -> bytes | None:
    if not ids:
        return None
    try:
        return store.file_io.read_bytes(store.path(ids[0]))
    except FileMissing:
        return None
