"""The REST catalog client: Paimon's REST catalog protocol (docs/static/rest-catalog-open-api.yaml
in Paimon 2.0) over httpx, as `RestCatalog(options, name)` (`tarn.load_catalog(metastore="rest",
uri=..., warehouse=..., **{"token.provider": "bear", "token": ...})`).

The server owns the catalog and the tables' metadata: names, schemas and every snapshot. A
table loaded here reads and writes its data files at the path the server gives (with the
catalog's storage options, or a data token the server hands out), and commits only through
the server (tarn/catalog/rest_commit.py). Schema changes, tags, rollbacks and branches go to
the server's endpoints for them; what the spec has no endpoint for and would write the table's
metadata files directly (snapshot expiry, rename_tag, replace_tag, post-commit maintenance) is
refused or, after a commit, left to the server (tarn/store/commit_point.py
`check_writes_metadata`).
"""

from __future__ import annotations

from functools import partial

from tarn.catalog.creation import new_table_schema
from tarn.catalog.filesystem import DEFAULT_DATABASE, FileSystemCatalog
from tarn.catalog.rest_commit import RestCommit
from tarn.catalog.rest_http import RestSession, Unanswered
from tarn.catalog.rest_token import DataToken, TokenFileIO, storage_options
from tarn.catalog.rest_wire import (BEARER, PREFIX, SNAPSHOT, WAREHOUSE, FileTotals, RestPaths, alter_body,
                                    create_table_body, merged_options, page_from, page_params, partition_from,
                                    rename_body, table_from, table_snapshot_from)
from tarn.errors import InvalidArgument, TableNotFound, TarnError
from tarn.fs import file_io_for
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.ops.tags import as_duration
from tarn.options import parse_bool
from tarn.store.branches import MAIN_BRANCH, branch_of
from tarn.table import Table

CATALOG_OPTIONS = {
    "token.provider": "how requests authenticate: bear (a bearer token, option 'token')",
    "token": "the bearer token sent as 'Authorization: Bearer <token>' (token.provider=bear)",
    "data-token.enabled": "true: read and write table files with credentials the server hands out per table",
}
OPTION_PREFIXES = ("header.",)  # header.<Name>: an HTTP header sent with every request
HEADER_PREFIX = "header."
TOKEN_PROVIDERS = ("bear",)
SECRET_WORDS = ("password",)  # options never carried when a catalog is pickled


class RestCatalog:
    """A Paimon REST catalog at `options["uri"]`; `name` names it in messages. The server's
    `/v1/config` answer is merged with `options` as Paimon does (its defaults, then these
    options, then its overrides). One keep-alive HTTP client per catalog, made on first use and
    made again after unpickling (the token travels, the connection pool does not)."""

    def __init__(self, options: dict[str, str], name: str):
        self.catalog_name = name
        options = {str(k): str(v) for k, v in options.items()}
        uri = _uri(options, name)
        warehouse = options.get(WAREHOUSE)
        session = RestSession(name, uri, _headers(options, name))
        config = session.call("GET", RestPaths.config(), "loading the catalog's configuration",
                              params={WAREHOUSE: warehouse} if warehouse else None)
        self.options = merged_options(config, options)
        headers = _headers(self.options, name)  # the server's defaults may add headers
        if headers != session.headers:
            session.close()
            session = RestSession(name, uri, headers)
        self.session = session
        self.paths = RestPaths(self.options.get(PREFIX) or "")
        self.data_token_enabled = _bool_option(self.options, "data-token.enabled", name)

    def __repr__(self) -> str:
        return f"RestCatalog({self.catalog_name!r}, uri={self.session.uri!r})"

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["options"] = {k: v for k, v in self.options.items() if not any(w in k.lower() for w in SECRET_WORDS)}
        return state

    @property
    def name(self) -> str:
        """How messages name this catalog."""
        return self.catalog_name

    def close(self) -> None:
        """Close the HTTP connections (a later call opens new ones)."""
        self.session.close()

    # ------------------------------------------------------------------ databases

    def create_database(self, database: str, ignore_if_exists: bool = True) -> None:
        """Create a database on the server (an existing one is fine when `ignore_if_exists`)."""
        _check_name("database", database)
        answer = self.session.send("POST", self.paths.databases(), f"creating database {database}",
                                   body={"name": database, "options": {}})
        if answer.status == 409 and ignore_if_exists:
            return
        if answer.status >= 400:
            raise self.session.error_of(answer, f"creating database {database}")

    def drop_database(self, database: str, ignore_if_missing: bool = False) -> None:
        """Drop a database on the server (its tables go with it, as the server decides)."""
        _check_name("database", database)
        answer = self.session.send("DELETE", self.paths.database(database), f"dropping database {database}")
        if answer.status == 404 and ignore_if_missing:
            return
        if answer.status >= 400:
            raise self.session.error_of(answer, f"dropping database {database}")

    def list_databases(self) -> list[str]:
        """Every database, following the server's pages."""
        return self._all_pages(self.paths.databases(), "databases", "listing databases")

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """Names of the tables in a database, following the server's pages."""
        _check_name("database", database)
        return self._all_pages(self.paths.tables(database), "tables", f"listing the tables of database {database}")

    def latest_snapshot(self, identifier: str) -> tuple[Snapshot, FileTotals] | None:
        """The table's latest snapshot as the server states it, with its record, file and byte
        totals (GET .../snapshot); None for a table without snapshots."""
        database, table, _ = _parts(identifier)
        answer = self.session.send("GET", self.paths.snapshot(database, table), f"table {identifier}",
                                   retry_unanswered=True)
        if answer.status == 404 and (answer.body or {}).get("resourceType") == SNAPSHOT:
            return None
        if answer.status >= 400:
            raise self.session.error_of(answer, f"reading the latest snapshot of table {identifier}")
        return table_snapshot_from(answer.body or {})

    def list_partitions(self, identifier: str) -> list[tuple[dict[str, str], FileTotals]]:
        """The table's partitions with their totals (GET .../partitions, every page)."""
        database, table, _ = _parts(identifier)
        path = self.paths.partitions(database, table)
        return [partition_from(p) for p in self._all_pages(path, "partitions", f"listing the partitions of {identifier}")]

    def _all_pages(self, path: str, key: str, about: str) -> list:
        items, token, seen = [], None, set()
        while True:
            page = page_from(self.session.call("GET", path, about, params=page_params(page_token=token)), key)
            items.extend(page.items)
            if not page.next_page_token or not page.items:
                return items
            if page.next_page_token in seen:
                raise TarnError(f"catalog {self.name} ({self.session.uri}): {about}: the server sent the page "
                                f"token {page.next_page_token!r} twice; its paging loops")
            seen.add(page.next_page_token)
            token = page.next_page_token

    # ------------------------------------------------------------------ tables

    def table_exists(self, identifier: str) -> bool:
        """Whether the server knows the table."""
        database, table, _ = _parts(identifier)
        answer = self.session.send("GET", self.paths.table(database, table), f"table {identifier}",
                                   retry_unanswered=True)
        if answer.status == 404:
            return False
        if answer.status >= 400:
            raise self.session.error_of(answer, f"table {identifier}")
        return True

    def create_table(self, identifier: str, schema, primary_key=None, partition_keys=None,
                     options: dict | None = None, comment: str | None = None,
                     ignore_if_exists: bool = False) -> Table:
        """Create a table on the server (everything validated here first, as the directory
        catalog does, so a bad request fails before it is sent), then load it."""
        database, table, branch = _parts(identifier)
        if branch != MAIN_BRANCH:
            raise InvalidArgument(f"catalog {self.name}: create_table({identifier!r}): create the table, then "
                                  "its branches")
        first = new_table_schema(identifier, schema, primary_key, partition_keys, options, comment)
        about = f"creating table {identifier}"
        try:
            answer = self.session.send("POST", self.paths.tables(database), about,
                                       body=create_table_body(database, table, first))
        except Unanswered as exc:
            raise TarnError(f"{exc}; the table may or may not have been created (table_exists tells)") from exc
        if answer.status == 409 and ignore_if_exists:
            return self.load_table(identifier)
        if answer.status >= 400:
            raise self.session.error_of(answer, about)
        return self.load_table(identifier)

    def load_table(self, identifier: str) -> Table:
        """Open a table at the path the server gives, committing through the server;
        `"db.t$branch_dev"` opens its branch `dev`."""
        database, table, branch = _parts(identifier)
        meta = table_from(self.session.call("GET", self.paths.table(database, table), f"loading table {identifier}"))
        object_name = table if branch == MAIN_BRANCH else f"{table}$branch_{branch}"
        name = f"{database}.{object_name}"
        location = meta.path  # the table's directory, a branch's too
        file_io, root = self._file_io(location, database, object_name)
        try:
            loaded = RestTable(file_io, root, name, branch=branch)
        except TableNotFound as exc:
            raise TableNotFound(f"catalog {self.name}: table {name} is known to the server, but its files are not "
                                f"at {location} ({exc})") from exc
        object.__setattr__(loaded, "catalog", self)
        loaded.core.snapshot_commit = RestCommit(self.session, self.paths, database, object_name, meta.id,
                                                 loaded.core)
        return loaded

    def _file_io(self, location: str, database: str, object_name: str):
        """The FileIO of a table's files and the table's path inside it: with a data token when
        enabled, else with the catalog's own storage options."""
        if not self.data_token_enabled:
            return file_io_for(location, storage_options({}, self.options) or None)
        token_io = TokenFileIO(location, partial(self._data_token, database, object_name), self.options)
        return token_io, token_io.root

    def _data_token(self, database: str, object_name: str) -> DataToken:
        body = self.session.call("GET", self.paths.token(database, object_name),
                                 f"the data token of table {database}.{object_name}")
        token = body.get("token") or {}
        expires = body.get("expiresAtMillis", body.get("expiresAt"))
        if not isinstance(token, dict) or not isinstance(expires, int):
            raise TarnError(f"catalog {self.name} ({self.session.uri}): the data token of table "
                            f"{database}.{object_name} is malformed (a 'token' object and an integer "
                            "'expiresAt' are expected)")
        return DataToken({str(k): str(v) for k, v in token.items()}, expires)

    def drop_table(self, identifier: str, ignore_if_missing: bool = False) -> None:
        """Drop a table on the server (the server deletes its files)."""
        database, table, branch = _parts(identifier)
        if branch != MAIN_BRANCH:
            raise InvalidArgument(f"catalog {self.name}: drop_table({identifier!r}): a branch is not a table")
        answer = self.session.send("DELETE", self.paths.table(database, table), f"dropping table {identifier}")
        if answer.status == 404 and ignore_if_missing:
            return
        if answer.status >= 400:
            raise self.session.error_of(answer, f"dropping table {identifier}")

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename a table on the server."""
        source, target = _parts(identifier), _parts(new_identifier)
        if source[2] != MAIN_BRANCH or target[2] != MAIN_BRANCH:
            raise InvalidArgument(f"rename_table({identifier!r}, {new_identifier!r}): branches are renamed with "
                                  "the table, not on their own")
        self.session.call("POST", self.paths.rename_table(), f"renaming table {identifier} to {new_identifier}",
                          body=rename_body(source[:2], target[:2]))

    def alter_table(self, identifier: str, *changes) -> TableSchema:
        """Apply schema changes on the server as one new schema version; returns it."""
        database, table, branch = _parts(identifier)
        object_name = table if branch == MAIN_BRANCH else f"{table}$branch_{branch}"
        if not changes:
            raise InvalidArgument(f"catalog {self.name}: alter_table({identifier!r}) needs at least one change")
        self.session.call("POST", self.paths.table(database, object_name), f"altering table {identifier}",
                          body=alter_body(changes))
        return self.load_table(identifier).schema()

    # ------------------------------------------------------------------ tags, rollback, branches

    def create_tag(self, identifier: str, name: str, snapshot_id: int | None = None, time_retained=None,
                   ignore_if_exists: bool = False) -> None:
        """Tag a snapshot of a table (default: its latest) on the server."""
        database, object_name = self._object(identifier)
        retained = as_duration(time_retained, identifier)
        body = {"tagName": name, "snapshotId": snapshot_id, "ignoreIfExists": bool(ignore_if_exists),
                "timeRetained": None if retained is None else f"{int(retained.total_seconds() * 1000)} ms"}
        self.session.call("POST", self.paths.tags(database, object_name), f"table {identifier}: creating tag {name}",
                          body=body)

    def delete_tag(self, identifier: str, name: str) -> None:
        """Delete a tag of a table on the server."""
        database, object_name = self._object(identifier)
        self.session.call("DELETE", self.paths.tag(database, object_name, name),
                          f"table {identifier}: deleting tag {name}")

    def rollback_to(self, identifier: str, target: int | str) -> None:
        """Roll a table back to snapshot id `target` (an int) or tag `target` (a str) on the server."""
        database, object_name = self._object(identifier)
        if isinstance(target, bool) or not isinstance(target, (int, str)):
            raise InvalidArgument(f"table {identifier}: rollback target must be a snapshot id or a tag name, "
                                  f"got {target!r}")
        instant = {"type": "snapshot", "snapshotId": target} if isinstance(target, int) else {
            "type": "tag", "tagName": target}
        self.session.call("POST", self.paths.rollback(database, object_name),
                          f"table {identifier}: rolling back to {target!r}", body={"instant": instant})

    def create_branch(self, identifier: str, name: str, from_tag: str | None = None,
                      ignore_if_exists: bool = False) -> None:
        """Create a branch of a table on the server (empty, or from tag `from_tag`)."""
        database, object_name = self._object(identifier)
        about = f"table {identifier}: creating branch {name}"
        answer = self.session.send("POST", self.paths.branches(database, object_name), about,
                                   body={"branch": name, "fromTag": from_tag})
        if answer.status == 409 and ignore_if_exists:
            return
        if answer.status >= 400:
            raise self.session.error_of(answer, about)

    def drop_branch(self, identifier: str, name: str) -> None:
        """Delete a branch of a table on the server."""
        database, object_name = self._object(identifier)
        self.session.call("DELETE", self.paths.branch(database, object_name, name),
                          f"table {identifier}: deleting branch {name}")

    def fast_forward(self, identifier: str, name: str) -> None:
        """Make a table's main branch hold branch `name`'s history, on the server."""
        database, object_name = self._object(identifier)
        self.session.call("POST", f"{self.paths.branch(database, object_name, name)}/forward",
                          f"table {identifier}: fast-forwarding to branch {name}")

    def _object(self, identifier: str) -> tuple[str, str]:
        database, table, branch = _parts(identifier)
        return database, table if branch == MAIN_BRANCH else f"{table}$branch_{branch}"

    def commit_point(self, table: Table) -> RestCommit:
        """The server's commit endpoint for this table."""
        return table.core.snapshot_commit


class RestTable(Table):
    """A table a REST catalog loaded: commits go to the server, and so do schema changes, tags,
    rollbacks and branches (the spec's endpoints for them); verbs the spec has no endpoint for
    and that would write metadata files directly (rename_tag, replace_tag, expire_snapshots)
    are refused."""

    def alter(self, *changes) -> TableSchema:
        """Schema evolution through the server (see `Table.alter` for the changes)."""
        return self.catalog.alter_table(self.name, *changes)

    def create_tag(self, name: str, snapshot_id: int | None = None, time_retained=None,
                   ignore_if_exists: bool = False):
        """Tag a snapshot through the server; returns the tag."""
        self.catalog.create_tag(self.name, name, snapshot_id, time_retained, ignore_if_exists)
        return self.core.tag_store.get(name)

    def delete_tag(self, name: str) -> None:
        """Delete a tag through the server (the server frees the files only it kept)."""
        self.catalog.delete_tag(self.name, name)

    def rollback_to(self, target: int | str) -> Snapshot:
        """Roll back through the server; returns the table's latest snapshot afterwards."""
        self.catalog.rollback_to(self.name, target)
        return self.core.latest_snapshot()

    def create_branch(self, name: str, from_tag: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a branch through the server; returns it, loaded through the catalog."""
        self.catalog.create_branch(self.name, name, from_tag, ignore_if_exists)
        return self.branch_table(name)

    def delete_branch(self, name: str) -> None:
        """Delete a branch through the server."""
        self.catalog.drop_branch(self.name, name)

    def fast_forward(self, name: str) -> None:
        """Fast-forward this branch to branch `name` through the server (the server does not
        say what it dropped: this returns None)."""
        self.catalog.fast_forward(self.name, name)

    def branch_table(self, name: str) -> Table:
        """Branch `name` of this table, loaded through the catalog (it commits through the server)."""
        base = self.name.split("$", 1)[0]
        return self.catalog.load_table(base if name == MAIN_BRANCH else f"{base}$branch_{name}")


def _parts(identifier: str) -> tuple[str, str, str]:
    """`"db.t$branch_dev"` -> ("db", "t", "dev"); a bare name is in database `default`."""
    if not isinstance(identifier, str):
        raise InvalidArgument(f"table identifier must be a string 'database.table', got {identifier!r}")
    branch = MAIN_BRANCH
    if "$" in identifier:
        identifier, branch = branch_of(identifier, f"table identifier '{identifier}'")
    database, table = FileSystemCatalog.split_identifier(identifier)
    return database, table, branch


def _check_name(kind: str, name) -> None:
    from tarn.catalog.creation import check_name

    check_name(kind, name)


def _uri(options: dict[str, str], name: str) -> str:
    uri = (options.get("uri") or "").strip()
    if not uri:
        raise InvalidArgument(f"catalog {name}: a REST catalog needs the option 'uri' (the server's http(s) URL)")
    if not uri.lower().startswith(("http://", "https://")):
        raise InvalidArgument(f"catalog {name}: option uri={uri!r} is not an http:// or https:// URL")
    return uri.rstrip("/")


def _headers(options: dict[str, str], name: str) -> dict[str, str]:
    """`header.*` options plus the Authorization header of `token.provider`."""
    headers = {k[len(HEADER_PREFIX):]: v for k, v in options.items() if k.startswith(HEADER_PREFIX)}
    provider = (options.get("token.provider") or "").strip().lower()
    token = options.get("token")
    if provider and provider not in TOKEN_PROVIDERS:
        raise InvalidArgument(f"catalog {name}: option token.provider={provider!r} is not supported by tarn "
                              f"(supported: {', '.join(TOKEN_PROVIDERS)})")
    if provider == "bear":
        if not token:
            raise InvalidArgument(f"catalog {name}: token.provider=bear needs the option 'token'")
        headers["Authorization"] = BEARER + token
    elif token:
        raise InvalidArgument(f"catalog {name}: option 'token' is set but token.provider is not (set "
                              "token.provider=bear, as Paimon requires)")
    return headers


def _bool_option(options: dict[str, str], key: str, name: str) -> bool:
    try:
        return parse_bool(options.get(key, "false").strip())
    except ValueError:
        raise InvalidArgument(f"catalog {name}: option {key}={options[key]!r} must be true or false") from None
