"""The REST catalog's endpoints over any tarn catalog (the `TableCatalog` port), as plain
functions of decoded requests: no HTTP here (tarn/server/app.py carries them over HTTP).

Each endpoint takes the path's names, the query parameters and the JSON body, and returns the
JSON body of its answer (None: 200 without content) or raises: `HttpError` for answers the
spec names (404 with the resource, 409, 400), a tarn error otherwise (mapped by
`rest_wire.error_for`)."""

from __future__ import annotations

import time

from tarn import paths
from tarn.catalog import rest_wire as wire
from tarn.errors import InvalidArgument, SchemaMismatch, SnapshotNotFound, TableNotFound
from tarn.partition import from_bytes
from tarn.server.commits import SnapshotTotals, TableLocks, commit
from tarn.server.tables import LoadedTables
from tarn.server.settings import ServerSettings
from tarn.types import UNKNOWN_TRAITS, first_root_where


class HttpError(Exception):
    """An answer other than 200, with the spec's ErrorResponse."""

    def __init__(self, code: int, message: str, resource_type: str | None = None, resource_name: str | None = None):
        super().__init__(message)
        self.error = wire.ErrorBody(code, message, resource_type, resource_name)


def not_found(kind: str, name: str, message: str) -> HttpError:
    return HttpError(404, message, kind, name)


class CatalogService:
    """The endpoints of one catalog; the handlers run in worker threads, so every state here
    is thread-safe (per-table locks, the loaded tables, the snapshot totals cache). Every
    endpoint that changes a table's metadata forgets its loaded table afterwards."""

    def __init__(self, catalog, settings: ServerSettings):
        self.catalog = catalog
        self.settings = settings
        self.locks = TableLocks()
        self.totals = SnapshotTotals()
        self.tables = LoadedTables(catalog)

    # ------------------------------------------------------------------ helpers

    def _database(self, database: str) -> str:
        if database not in self.catalog.list_databases():
            raise not_found(wire.DATABASE, database, f"database {database} does not exist")
        return database

    def _table(self, database: str, table: str):
        """The Table `database.table` (`t$branch_b` for a branch); 404 TABLE when absent."""
        identifier, loaded = self._loaded(database, table)
        return identifier, loaded.table

    def _loaded(self, database: str, table: str):
        """(identifier, LoadedTable) of `database.table`; 404 TABLE when absent."""
        identifier = f"{database}.{table}"
        try:
            return identifier, self.tables.get(identifier)
        except TableNotFound as exc:
            raise not_found(wire.TABLE, identifier, str(exc)) from None

    def _changed(self, identifier: str) -> None:
        """Forget the loaded table `identifier` and its branches (its metadata changed)."""
        self.tables.forget(identifier.split("$", 1)[0])

    def _lock(self, table):
        return self.locks.of(table.core.root)

    def _page(self, names: list[str], query: dict, pattern_key: str | None = None) -> wire.Page:
        if pattern_key:
            match = wire.like_prefix(query.get(pattern_key))
            names = [n for n in names if match(n)]
        size = wire.max_results_param(query.get(wire.MAX_RESULTS), self.settings.page_size,
                                      self.settings.max_page_size)
        return wire.page_of(names, size, query.get(wire.PAGE_TOKEN))

    def _metadata(self, database: str, name: str, loaded) -> dict:
        """GetTableResponse; its path is the table's directory, a branch's too (a branch keeps
        its metadata under it)."""
        table = loaded.table
        schema = table.schema()
        rest_schema = wire.RestSchema(list(schema.fields), list(schema.partition_keys), list(schema.primary_keys),
                                      dict(schema.options), schema.comment)
        path = table.core.file_io.uri(table.core.root)
        return wire.table_body(wire.TableMetadata(loaded.table_id, database, name, path, schema.id, rest_schema))

    # ------------------------------------------------------------------ config

    def config(self, query: dict, body) -> dict:
        defaults = {"data-token.enabled": "true"} if self.settings.data_token else {}
        return wire.config_body(self.settings.prefix, defaults)

    # ------------------------------------------------------------------ databases

    def list_databases(self, query: dict, body) -> dict:
        page = self._page(self.catalog.list_databases(), query, wire.DATABASE_NAME_PATTERN)
        return {"databases": page.items, "nextPageToken": page.next_page_token}

    def create_database(self, query: dict, body) -> None:
        name = _field(body, "name", str)
        if name in self.catalog.list_databases():
            raise HttpError(409, f"database {name} already exists", wire.DATABASE, name)
        self.catalog.create_database(name, ignore_if_exists=False)

    def get_database(self, database: str, query: dict, body) -> dict:
        self._database(database)
        location = self.catalog.database_path(database) if hasattr(self.catalog, "database_path") else ""
        return wire.database_body(database, location)

    def drop_database(self, database: str, query: dict, body) -> None:
        self._database(database)
        try:
            self._drop_database(database)
        finally:
            self.tables.forget_database(database)

    def _drop_database(self, database: str) -> None:
        drop = getattr(self.catalog, "drop_database", None)
        if drop is not None:
            drop(database, ignore_if_missing=False, cascade=True)
            return
        if not hasattr(self.catalog, "database_path"):
            raise HttpError(501, f"catalog {self.catalog.name} cannot drop databases")
        for name in self.catalog.list_tables(database):
            self.catalog.drop_table(f"{database}.{name}", ignore_if_missing=True)
        self.catalog.file_io.delete_dir(self.catalog.database_path(database))

    def alter_database(self, database: str, query: dict, body) -> dict:
        self._database(database)
        raise HttpError(501, f"database {database}: tarn's catalogs keep no database options to alter")

    # ------------------------------------------------------------------ tables

    def list_tables(self, database: str, query: dict, body) -> dict:
        page = self._page(self.catalog.list_tables(self._database(database)), query, wire.TABLE_NAME_PATTERN)
        return {"tables": page.items, "nextPageToken": page.next_page_token}

    def list_table_details(self, database: str, query: dict, body) -> dict:
        page = self._page(self.catalog.list_tables(self._database(database)), query, wire.TABLE_NAME_PATTERN)
        details = []
        for name in page.items:
            try:
                details.append(self._metadata(database, name, self.tables.get(f"{database}.{name}")))
            except TableNotFound:
                continue  # dropped meanwhile
        return {"tableDetails": details, "nextPageToken": page.next_page_token}

    def create_table(self, database: str, query: dict, body) -> None:
        db, name = wire.identifier_from(_field(body, "identifier", dict))
        if db != database:
            raise InvalidArgument(f"create table {db}.{name} sent to database {database}")
        schema = wire.schema_from(_field(body, "schema", dict))
        self._database(database)
        identifier = f"{database}.{name}"
        for column in schema.fields:
            unknown = first_root_where(column.type, lambda traits: traits is UNKNOWN_TRAITS)
            if unknown:
                raise SchemaMismatch(f"table {identifier}: column {column.name} has type {unknown}, which is "
                                     "not a Paimon type")
        if self.catalog.table_exists(identifier):
            raise HttpError(409, f"table {identifier} already exists", wire.TABLE, identifier)
        try:
            self.catalog.create_table(identifier, schema.fields, schema.primary_keys or None,
                                      schema.partition_keys or None, schema.options, schema.comment)
        finally:
            self._changed(identifier)

    def get_table(self, database: str, table: str, query: dict, body) -> dict:
        _, loaded = self._loaded(database, table)
        return self._metadata(database, table, loaded)

    def alter_table(self, database: str, table: str, query: dict, body) -> None:
        changes = _field(body, "changes", list)
        parsed = [wire.change_from(c) for c in changes]
        identifier, loaded = self._table(database, table)
        if not parsed:
            raise InvalidArgument(f"table {identifier}: alter without changes")
        with self._lock(loaded):
            try:
                self.catalog.alter_table(identifier, *parsed)
            finally:
                self._changed(identifier)

    def drop_table(self, database: str, table: str, query: dict, body) -> None:
        identifier, loaded = self._table(database, table)
        with self._lock(loaded):
            try:
                self.catalog.drop_table(identifier)
            finally:
                self._changed(identifier)

    def rename_table(self, query: dict, body) -> None:
        source = wire.identifier_from(_field(body, "source", dict))
        target = wire.identifier_from(_field(body, "destination", dict))
        identifier, loaded = self._table(*source)
        destination = ".".join(target)
        self._database(target[0])
        if self.catalog.table_exists(destination):
            raise HttpError(409, f"table {destination} already exists", wire.TABLE, destination)
        with self._lock(loaded):
            try:
                self.catalog.rename_table(identifier, destination)
            finally:
                self._changed(identifier)
                self._changed(destination)

    # ------------------------------------------------------------------ commits and snapshots

    def commit(self, database: str, table: str, query: dict, body) -> dict:
        request = wire.commit_from(body)
        identifier, loaded = self._loaded(database, table)
        with self._lock(loaded.table):
            try:
                return wire.commit_result_body(commit(self.catalog, identifier, loaded, request))
            except TableNotFound as exc:  # the request's table id is not this table's
                raise not_found(wire.TABLE, identifier, str(exc)) from None

    def snapshot(self, database: str, table: str, query: dict, body) -> dict:
        identifier, loaded = self._table(database, table)
        latest = loaded.latest_snapshot()
        if latest is None:
            raise not_found(wire.SNAPSHOT, identifier, f"table {identifier} has no snapshot yet")
        context = loaded.core
        totals = self.totals.get((context.metadata_root, latest.id, latest.uuid),
                                 lambda: _totals(context.live_entries(latest)))
        return wire.table_snapshot_body(latest, totals)

    def rollback(self, database: str, table: str, query: dict, body) -> None:
        instant = _field(body, "instant", dict)
        identifier, loaded = self._table(database, table)
        kind = instant.get("type")
        if kind == "snapshot" and isinstance(instant.get("snapshotId"), int):
            target, resource = instant["snapshotId"], wire.SNAPSHOT
        elif kind == "tag" and isinstance(instant.get("tagName"), str):
            target, resource = instant["tagName"], wire.TAG
        else:
            raise InvalidArgument(f"table {identifier}: rollback instant must be a snapshot id or a tag name, "
                                  f"got {instant!r}")
        with self._lock(loaded):
            from_snapshot = body.get("fromSnapshot")
            latest = loaded.latest_snapshot()
            if from_snapshot is not None and (latest is None or latest.id != from_snapshot):
                raise HttpError(409, f"table {identifier}: the latest snapshot is not {from_snapshot}",
                                wire.SNAPSHOT, str(from_snapshot))
            if resource == wire.TAG and not loaded.core.tag_store.exists(target):
                raise not_found(wire.TAG, target, f"table {identifier}: tag {target} does not exist")
            try:
                loaded.rollback_to(target)
            except SnapshotNotFound as exc:
                raise not_found(resource, str(target), str(exc)) from None
            finally:
                self._changed(identifier)

    def token(self, database: str, table: str, query: dict, body) -> dict:
        self._table(database, table)
        expires = int(time.time() * 1000) + self.settings.data_token_seconds * 1000
        return wire.token_body(self.settings.data_token, expires)

    def partitions(self, database: str, table: str, query: dict, body) -> dict:
        _, loaded = self._table(database, table)
        by_name = _partitions(loaded)
        page = self._page(list(by_name), query, wire.PARTITION_NAME_PATTERN)
        return {"partitions": [by_name[n] for n in page.items], "nextPageToken": page.next_page_token}

    # ------------------------------------------------------------------ branches and tags

    def list_branches(self, database: str, table: str, query: dict, body) -> dict:
        _, loaded = self._table(database, table)
        return {"branches": loaded.list_branches()}

    def create_branch(self, database: str, table: str, query: dict, body) -> None:
        name, from_tag = _field(body, "branch", str), body.get("fromTag")
        identifier, loaded = self._table(database, table)
        with self._lock(loaded):
            if name in loaded.list_branches():
                raise HttpError(409, f"table {identifier}: branch {name} already exists", wire.BRANCH, name)
            if from_tag is not None and not loaded.core.tag_store.exists(from_tag):
                raise not_found(wire.TAG, from_tag, f"table {identifier}: tag {from_tag} does not exist")
            try:
                loaded.create_branch(name, from_tag)
            finally:
                self._changed(identifier)

    def drop_branch(self, database: str, table: str, branch: str, query: dict, body) -> None:
        identifier, loaded = self._table(database, table)
        with self._lock(loaded):
            self._branch(identifier, loaded, branch)
            try:
                loaded.delete_branch(branch)
            finally:
                self._changed(identifier)

    def forward_branch(self, database: str, table: str, branch: str, query: dict, body) -> None:
        identifier, loaded = self._table(database, table)
        with self._lock(loaded):
            self._branch(identifier, loaded, branch)
            try:
                loaded.fast_forward(branch)
            finally:
                self._changed(identifier)

    @staticmethod
    def _branch(identifier: str, table, branch: str) -> None:
        if branch not in table.list_branches():
            raise not_found(wire.BRANCH, branch, f"table {identifier}: branch {branch} does not exist")

    def list_tags(self, database: str, table: str, query: dict, body) -> dict:
        _, loaded = self._table(database, table)
        names = [t.name for t in loaded.list_tags()]
        prefix = query.get(wire.TAG_NAME_PREFIX) or ""
        page = self._page([n for n in names if n.startswith(prefix)], query)
        return {"tags": page.items, "nextPageToken": page.next_page_token}

    def create_tag(self, database: str, table: str, query: dict, body) -> None:
        name = _field(body, "tagName", str)
        snapshot_id, retained = body.get("snapshotId"), body.get("timeRetained")
        identifier, loaded = self._table(database, table)
        with self._lock(loaded):
            if loaded.core.tag_store.exists(name):
                if body.get("ignoreIfExists"):
                    return
                raise HttpError(409, f"table {identifier}: tag {name} already exists", wire.TAG, name)
            try:
                loaded.create_tag(name, snapshot_id, retained)
            except SnapshotNotFound as exc:
                raise not_found(wire.SNAPSHOT, str(snapshot_id), str(exc)) from None

    def get_tag(self, database: str, table: str, tag: str, query: dict, body) -> dict:
        identifier, loaded = self._table(database, table)
        found = self._tag(identifier, loaded, tag)
        created = None if found.create_time is None else int(found.create_time.timestamp() * 1000)
        retained = None if found.time_retained is None else f"PT{int(found.time_retained.total_seconds())}S"
        return wire.tag_body(found.name, found.snapshot, created, retained)

    def delete_tag(self, database: str, table: str, tag: str, query: dict, body) -> None:
        identifier, loaded = self._table(database, table)
        with self._lock(loaded):
            self._tag(identifier, loaded, tag)
            loaded.delete_tag(tag)

    @staticmethod
    def _tag(identifier: str, table, tag: str):
        store = table.core.tag_store
        if not store.exists(tag):
            raise not_found(wire.TAG, tag, f"table {identifier}: tag {tag} does not exist")
        return store.get(tag)


def _field(body, key: str, kind: type):
    """`body[key]`, which must be of `kind`; InvalidArgument (400) otherwise."""
    if not isinstance(body, dict):
        raise InvalidArgument(f"the request body must be a JSON object, got {type(body).__name__}")
    value = body.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        raise InvalidArgument(f"the request body needs '{key}' as a {kind.__name__}, got {value!r}")
    return value


def _totals(entries) -> wire.FileTotals:
    created = [e.file.creation_time for e in entries if e.file.creation_time is not None]
    return wire.FileTotals(sum(e.file.row_count for e in entries), sum(e.file.file_size for e in entries),
                           len(entries), max(created) if created else 0)


def _partitions(table) -> dict[str, dict]:
    """Partition name (`k=v/...`) -> the spec's Partition, from the latest snapshot's files."""
    latest = table.latest_snapshot()
    schema = table.schema()
    if latest is None or not schema.partition_keys:
        return {}
    default = schema.options.get("partition.default-name") or paths.DEFAULT_PARTITION_NAME
    legacy = str(schema.options.get("partition.legacy-name", "true")).strip().lower() != "false"
    groups: dict[bytes, list] = {}
    for entry in table.core.live_entries(latest):
        groups.setdefault(entry.partition, []).append(entry)
    out = {}
    for partition, entries in groups.items():
        spec = {}
        for key, value in zip(schema.partition_keys, from_bytes(schema, partition)):
            t = schema.field(key).type
            spec[key] = paths.partition_value_text(value, t.root, t.precision, default, legacy)
        name = "/".join(f"{k}={v}" for k, v in spec.items())
        out[name] = wire.partition_body(spec, _totals(entries), entries[0].total_buckets)
    return out


