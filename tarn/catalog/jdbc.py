"""The JDBC catalog: table names kept in a SQL database, table files in the warehouse.

The same catalog database Java Paimon's JdbcCatalog (paimon-core `jdbc/`) and pypaimon's
`jdbc_catalog.py` use, so that all three share one catalog: a row of `paimon_tables`
(catalog_key, database_name, table_name) is the truth of a table's existence; its files are
at `<warehouse>/<database>.db/<table>` as in the directory catalog. Databases are rows of
`paimon_database_properties` (or have tables, or views in `paimon_views`); with
`sync-all-properties` (default true) a table's options and keys are copied to
`paimon_table_properties`. The catalog tables are created on first use, as Java creates them.

`uri` is a JDBC URL: `jdbc:sqlite:<path>` (the standard library's sqlite3) or
`jdbc:postgresql://host:port/db` (psycopg 3; `jdbc.user`, `jdbc.password` and any other
`jdbc.<name>` are connection parameters). With `lock.enabled` (by default only for object
store warehouses, as in Java) creates, renames, schema changes and every snapshot commit of a
table hold Java's distributed lock: a row `<catalog-key>.<database>.<table>` of
`paimon_distributed_locks`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from tarn.catalog.creation import check_name, create_table_at
from tarn.catalog.filesystem import DB_SUFFIX, DEFAULT_DATABASE, FileSystemCatalog
from tarn.errors import InvalidArgument, OutcomeUnknown, TableAlreadyExists, TableNotFound, TarnError
from tarn.fs import file_io_for, join
from tarn.meta.schema import TableSchema
from tarn.options import parse_duration_ms
from tarn.store.branches import branch_of
from tarn.store.commit_point import FileSystemCommit
from tarn.store.schemas import SchemaStore
from tarn.table import Table

log = logging.getLogger(__name__)

CATALOG_OPTIONS = {
    "uri": "JDBC URL of the catalog database: jdbc:sqlite:<path> or jdbc:postgresql://host:port/db",
    "warehouse": "where table files live (<warehouse>/<db>.db/<table>): a local path or s3://bucket/path",
    "catalog-key": "the catalog's key in the shared catalog tables (default jdbc)",
    "lock.enabled": "hold the distributed lock around creates, renames, alters and commits "
                    "(default: true only for object-store warehouses)",
    "lock.type": "the catalog lock: only 'jdbc' (the distributed lock table)",
    "lock-acquire-timeout": "longest wait for the lock (default 8 min)",
    "lock-check-max-sleep": "longest pause between attempts to take the lock (default 8 s)",
    "lock-key-max-length": "width of the lock table's lock_id column when it is created (default 255)",
    "sync-all-properties": "copy table options and keys to paimon_table_properties (default true)",
    "client-pool-size": "accepted for Paimon compatibility; tarn keeps one connection per catalog",
}
OPTION_PREFIXES = ("jdbc.",)

DEFAULT_CATALOG_KEY = "jdbc"
DEFAULT_ACQUIRE_TIMEOUT = "8 min"
DEFAULT_CHECK_MAX_SLEEP = "8 s"
DEFAULT_LOCK_KEY_LENGTH = 255
SQLITE_BUSY_TIMEOUT_MS = 3000  # what Java's sqlite driver waits for a locked database
POSTGRES_CONNECT_TIMEOUT_S = 10  # what Java's PostgreSQL driver waits for a connection
DATABASE_EXISTS_PROPERTY = "exists"
LOCATION_PROPERTY = "location"

TABLES = "paimon_tables"
DATABASE_PROPERTIES = "paimon_database_properties"
TABLE_PROPERTIES = "paimon_table_properties"
VIEWS = "paimon_views"
LOCKS = "paimon_distributed_locks"

# The catalog tables as Java's JdbcUtils creates them: columns, then the primary key.
CATALOG_TABLES = {
    TABLES: (["catalog_key VARCHAR(255) NOT NULL", "database_name VARCHAR(255) NOT NULL",
              "table_name VARCHAR(255) NOT NULL"], "catalog_key, database_name, table_name"),
    DATABASE_PROPERTIES: (["catalog_key VARCHAR(255) NOT NULL", "database_name VARCHAR(255) NOT NULL",
                           "property_key VARCHAR(255)", "property_value VARCHAR(1000)"],
                          "catalog_key, database_name, property_key"),
    TABLE_PROPERTIES: (["catalog_key VARCHAR(255) NOT NULL", "database_name VARCHAR(255) NOT NULL",
                        "table_name VARCHAR(255) NOT NULL", "property_key VARCHAR(255) NOT NULL",
                        "property_value VARCHAR(1000)"], "catalog_key, database_name, table_name, property_key"),
    VIEWS: (["catalog_key VARCHAR(255) NOT NULL", "database_name VARCHAR(255) NOT NULL",
             "view_name VARCHAR(255) NOT NULL", "view_schema TEXT NOT NULL"],
            "catalog_key, database_name, view_name"),
}
LOCK_COLUMNS = ["lock_id VARCHAR({width}) NOT NULL", "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL",
                "expire_time_seconds BIGINT DEFAULT 0 NOT NULL"]
# A lock row older than its expire_time_seconds is taken away by the next acquirer.
EXPIRED_LOCK = {
    "sqlite": f"DELETE FROM {LOCKS} WHERE strftime('%s', 'now') - strftime('%s', acquired_at) > "
              "expire_time_seconds AND lock_id = ?",
    "postgresql": f"DELETE FROM {LOCKS} WHERE EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > "
                  "expire_time_seconds AND lock_id = ?",
}


def create_table_sql(table: str, columns: list[str], primary_key: str) -> str:
    return f"CREATE TABLE {table}({', '.join(columns)}, PRIMARY KEY ({primary_key}))"


class Duplicate(Exception):
    """A statement broke a primary key (another writer inserted that row first); the catalog
    turns it into TableAlreadyExists and the like. Never leaves this module."""


# ---------------------------------------------------------------------------- the SQL database


@dataclass(frozen=True)
class JdbcUrl:
    """Where the catalog database is: `dialect` "sqlite" (`target`: the database file, or a
    `file:` URI) or "postgresql" (`params`: psycopg connection parameters)."""

    dialect: str
    target: str
    params: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, uri: str, options: dict[str, str], catalog: str) -> "JdbcUrl":
        """The URL of option `uri` with the `jdbc.*` options; InvalidArgument for others."""
        passed = {k[len("jdbc."):]: v for k, v in options.items() if k.startswith("jdbc.")}
        if uri.startswith("jdbc:sqlite:"):
            return cls("sqlite", uri[len("jdbc:sqlite:"):], passed)
        if uri.startswith("jdbc:postgresql:"):
            return cls("postgresql", uri, postgres_params(uri, passed, catalog))
        raise InvalidArgument(f"catalog {catalog}: uri '{uri}' is not supported: the JDBC catalog takes "
                              "jdbc:sqlite:<path> or jdbc:postgresql://host:port/database")


# pgjdbc's names of connection properties that libpq spells differently
PGJDBC_NAMES = {"connectTimeout": "connect_timeout", "ApplicationName": "application_name",
                "applicationName": "application_name", "sslrootcert": "sslrootcert", "currentSchema": "options"}


def postgres_params(uri: str, passed: dict[str, str], catalog: str) -> dict:
    """psycopg's connection parameters from `jdbc:postgresql://host:port/db?k=v` and `jdbc.*`."""
    rest = uri[len("jdbc:postgresql:"):]
    if not rest.startswith("//"):  # jdbc:postgresql:database (localhost)
        rest = "//localhost/" + rest
    parts = urlsplit(rest)
    try:
        port = parts.port or 5432
    except ValueError:
        raise InvalidArgument(f"catalog {catalog}: uri '{uri}' has an invalid port") from None
    params = {"host": parts.hostname or "localhost", "port": port, "dbname": unquote(parts.path.lstrip("/"))}
    params.update(dict(parse_qsl(parts.query)))
    params.update(passed)
    params = {PGJDBC_NAMES.get(k, k): v for k, v in params.items()}
    if "options" in params and not str(params["options"]).startswith("-"):  # pgjdbc currentSchema
        params["options"] = f"-c search_path={params['options']}"
    params.setdefault("connect_timeout", POSTGRES_CONNECT_TIMEOUT_S)
    if not params["dbname"]:
        raise InvalidArgument(f"catalog {catalog}: uri '{uri}' names no database (jdbc:postgresql://host:port/db)")
    return params


class SqlDatabase:
    """One connection to the catalog database, opened on first use and again after it broke
    (or in a forked child). Statements are written with `?` placeholders; driver errors come
    out as TarnError naming the catalog and what was being done, a broken primary key as
    Duplicate."""

    def __init__(self, url: JdbcUrl, catalog: str):
        self.url, self.catalog = url, catalog
        self.dialect = url.dialect
        self._connection = None
        self._pid = None
        self._committing = False  # a PostgreSQL transaction is sending its COMMIT
        self._mutex = threading.RLock()

    def __getstate__(self) -> dict:
        """Pickled without its connection (a process opens its own)."""
        return {"url": self.url, "catalog": self.catalog}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["url"], state["catalog"])

    def close(self) -> None:
        with self._mutex:
            if self._connection is not None:
                try:
                    self._connection.close()
                finally:
                    self._connection = None

    def rows(self, what: str, sql: str, args: tuple = ()) -> list[tuple]:
        """The rows a query answers (outside any transaction)."""
        with self._mutex, self._errors(what):
            cursor = self._connect().cursor()
            try:
                cursor.execute(self._sql(sql), args)
                return cursor.fetchall()
            finally:
                cursor.close()

    def exists(self, what: str, sql: str, args: tuple = ()) -> bool:
        return bool(self.rows(what, sql, args))

    @contextmanager
    def transaction(self, what: str):
        """A write transaction (SQLite: BEGIN IMMEDIATE, so writers queue instead of
        deadlocking); yields `run(sql, args) -> rows changed`. Rolled back on any error."""
        with self._mutex, self._errors(what):
            connection = self._connect()
            if self.dialect == "sqlite":
                with _sqlite_transaction(connection) as cursor:
                    yield lambda sql, args=(): self._run(cursor, sql, args)
            else:
                self._committing = False
                with connection.transaction():
                    with connection.cursor() as cursor:
                        yield lambda sql, args=(): self._run(cursor, sql, args)
                    self._committing = True  # leaving the block commits: its answer may be lost

    def _run(self, cursor, sql: str, args: tuple) -> int:
        cursor.execute(self._sql(sql), args)
        return cursor.rowcount

    def _sql(self, sql: str) -> str:
        return sql if self.dialect == "sqlite" else sql.replace("?", "%s")

    def _connect(self):
        if self._connection is not None and self._pid == os.getpid() and not _closed(self._connection):
            return self._connection
        self._connection = None
        self._connection = self._open()
        self._pid = os.getpid()
        return self._connection

    def _open(self):
        if self.dialect == "sqlite":
            busy_ms = _int_option(self.url.params.get("busy_timeout", SQLITE_BUSY_TIMEOUT_MS), "jdbc.busy_timeout",
                                  self.catalog)
            target = self.url.target
            return sqlite3.connect(target, timeout=busy_ms / 1000, isolation_level=None, check_same_thread=False,
                                   uri=target.startswith("file:"))
        import psycopg

        try:
            return psycopg.connect(autocommit=True, **self.url.params)
        except psycopg.ProgrammingError as exc:  # an unknown connection parameter
            raise InvalidArgument(f"catalog {self.catalog}: a jdbc.* option is not a PostgreSQL connection "
                                  f"parameter: {exc}") from None

    @contextmanager
    def _errors(self, what: str):
        driver_error, integrity_error = _driver_errors(self.dialect)
        self._committing = False
        try:
            yield
        except integrity_error as exc:
            raise Duplicate(str(exc)) from exc
        except driver_error as exc:
            if self.dialect == "postgresql" and self._connection is not None and _closed(self._connection):
                self._connection = None
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if self._committing:
                raise OutcomeUnknown(f"catalog {self.catalog}: {what}: the catalog database did not answer the "
                                     f"commit ({detail}); the change may or may not have been made") from exc
            raise TarnError(f"catalog {self.catalog}: {what} failed: the catalog database "
                            f"({self.dialect}) answered: {detail}") from exc


@contextmanager
def _sqlite_transaction(connection):
    cursor = connection.cursor()
    cursor.execute("BEGIN IMMEDIATE")
    try:
        yield cursor
        cursor.execute("COMMIT")
    except BaseException:
        try:
            connection.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # no transaction left to roll back
        raise
    finally:
        cursor.close()


def _closed(connection) -> bool:
    return bool(getattr(connection, "closed", False)) or bool(getattr(connection, "broken", False))


def _driver_errors(dialect: str) -> tuple[type, type]:
    if dialect == "sqlite":
        return sqlite3.Error, sqlite3.IntegrityError
    import psycopg

    return psycopg.Error, psycopg.IntegrityError


# ---------------------------------------------------------------------------- the distributed lock


@dataclass
class JdbcLock:
    """Java's JdbcCatalogLock: a row `lock_id` of paimon_distributed_locks held while a
    catalog operation or commit runs; taken by inserting it (a duplicate: held elsewhere, try
    again with a doubling pause up to `check_max_sleep_ms`, for at most `acquire_timeout_ms`),
    released by deleting it. A row older than its expire_time_seconds (the acquire timeout)
    was left by a dead holder: the next acquirer deletes it."""

    db: SqlDatabase
    catalog_key: str
    acquire_timeout_ms: int
    check_max_sleep_ms: int

    def create_table(self, key_length: int) -> None:
        columns = [c.format(width=key_length) for c in LOCK_COLUMNS]
        create_if_absent(self.db, LOCKS, create_table_sql(LOCKS, columns, "lock_id"))

    @contextmanager
    def held(self, database: str, object_name: str):
        """Hold the lock of one table (`object_name`: a table, or `t$branch_b`)."""
        key = f"{self.catalog_key}.{database}.{object_name}"
        self._acquire(key)
        try:
            yield
        finally:
            self._release(key)

    def _acquire(self, key: str) -> None:
        started, pause = time.monotonic(), 0.05
        while not self._try_acquire(key):
            pause = min(pause * 2, self.check_max_sleep_ms / 1000)
            if (time.monotonic() - started) * 1000 > self.acquire_timeout_ms:
                raise TarnError(f"catalog {self.db.catalog}: could not take the lock '{key}' within "
                                f"{self.acquire_timeout_ms} ms (lock-acquire-timeout): another writer holds it")
            time.sleep(pause)

    def _try_acquire(self, key: str) -> bool:
        with self.db.transaction(f"clearing an expired lock {key}") as run:
            run(EXPIRED_LOCK[self.db.dialect], (key,))
        try:
            with self.db.transaction(f"taking the lock {key}") as run:
                run(f"INSERT INTO {LOCKS} (lock_id, expire_time_seconds) VALUES (?, ?)",
                    (key, self.acquire_timeout_ms // 1000))
            return True
        except Duplicate:
            return False

    def _release(self, key: str) -> None:
        """Delete the lock row; a failure is logged, not raised (what ran under the lock has
        happened; the row expires after expire_time_seconds)."""
        try:
            with self.db.transaction(f"releasing the lock {key}") as run:
                run(f"DELETE FROM {LOCKS} WHERE lock_id = ?", (key,))
        except (TarnError, Duplicate) as exc:
            log.warning("catalog %s: could not release lock %s (it expires on its own): %s", self.db.catalog,
                        key, exc)


@dataclass
class LockedCommit:
    """The commit point of a table of a JDBC catalog with `lock.enabled`: the file system's
    commit point (tarn/store/commit_point.py) run while holding the table's lock, as Java's
    RenamingSnapshotCommit runs under the catalog lock. Failing to take the lock fails the
    commit before anything is created."""

    inner: FileSystemCommit
    lock: JdbcLock
    database: str
    object_name: str

    def publish(self, publication) -> bool:
        with self.lock.held(self.database, self.object_name):
            return self.inner.publish(publication)


def create_if_absent(db: SqlDatabase, table: str, ddl: str) -> None:
    """Create a catalog table unless it exists (two catalogs starting at once: the loser's
    CREATE fails and the table is there)."""
    if _table_present(db, table):
        return
    try:
        with db.transaction(f"creating the catalog table {table}") as run:
            run(ddl)
    except (TarnError, Duplicate):
        if not _table_present(db, table):
            raise


def _table_present(db: SqlDatabase, table: str) -> bool:
    if db.dialect == "sqlite":
        return db.exists(f"looking up the catalog table {table}",
                         "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return db.rows(f"looking up the catalog table {table}", "SELECT to_regclass(?)", (table,))[0][0] is not None


# ---------------------------------------------------------------------------- the catalog


class JdbcCatalog:
    """A catalog whose table names live in a SQL database shared with Java Paimon and
    pypaimon (see the module's docstring); `options` are Paimon's catalog options
    (`uri`, `warehouse`, `catalog-key`, `lock.enabled`, `jdbc.user`, ...), `name` names it in
    messages. Identifiers are `"database.table"` (a bare name is in `default`); a create or a
    rename into a database that is not there creates the database first."""

    def __init__(self, options: dict[str, str], name: str = "jdbc"):
        self.name = name
        self.options = {str(k): str(v) for k, v in options.items()}
        uri, warehouse = self._required("uri"), self._required("warehouse")
        self.catalog_key = self.options.get("catalog-key", DEFAULT_CATALOG_KEY)
        if not self.catalog_key:
            raise InvalidArgument(f"catalog {name}: option catalog-key must not be empty")
        storage = {k: v for k, v in self.options.items() if k.lower().startswith("s3.")}
        self.file_io, self.warehouse = file_io_for(warehouse, storage or None)
        self.sync_properties = self._bool("sync-all-properties", True)
        self.db = SqlDatabase(JdbcUrl.parse(uri, self.options, name), name)
        self.lock = self._lock_option()
        for table, (columns, key) in CATALOG_TABLES.items():
            create_if_absent(self.db, table, create_table_sql(table, columns, key))
        if self.lock is not None:
            self.lock.create_table(self._int("lock-key-max-length", DEFAULT_LOCK_KEY_LENGTH))

    def __repr__(self) -> str:
        return f"JdbcCatalog({self.name!r}, uri={self.options['uri']!r}, warehouse={self.warehouse!r})"

    def close(self) -> None:
        """Close the connection to the catalog database (the next call opens it again)."""
        self.db.close()

    # ------------------------------------------------------------------ options

    def _required(self, key: str) -> str:
        value = self.options.get(key, "").strip()
        if not value:
            raise InvalidArgument(f"catalog {self.name}: option '{key}' is required for a JDBC catalog "
                                  f"({CATALOG_OPTIONS[key]})")
        return value

    def _bool(self, key: str, default: bool | None) -> bool | None:
        value = self.options.get(key)
        if value is None:
            return default
        if value.strip().lower() not in ("true", "false"):
            raise InvalidArgument(f"catalog {self.name}: option '{key}' must be true or false, got {value!r}")
        return value.strip().lower() == "true"

    def _int(self, key: str, default: int) -> int:
        return _int_option(self.options.get(key, default), key, self.name)

    def _duration_ms(self, key: str, default: str) -> int:
        value = self.options.get(key, default)
        try:
            return parse_duration_ms(value)
        except (TarnError, ValueError) as exc:
            raise InvalidArgument(f"catalog {self.name}: option '{key}' must be a duration such as '30 s' or "
                                  f"'8 min', got {value!r} ({exc})") from None

    def _lock_option(self) -> JdbcLock | None:
        """The distributed lock when `lock.enabled` (by default: on object stores, as Java)."""
        self._int("client-pool-size", 2)
        lock_type = self.options.get("lock.type")
        if lock_type is not None and lock_type != "jdbc":
            raise InvalidArgument(f"catalog {self.name}: option 'lock.type' = {lock_type!r} is not supported by "
                                  "the JDBC catalog (only 'jdbc', its lock table)")
        timeout = self._duration_ms("lock-acquire-timeout", DEFAULT_ACQUIRE_TIMEOUT)
        max_sleep = self._duration_ms("lock-check-max-sleep", DEFAULT_CHECK_MAX_SLEEP)
        if not self._bool("lock.enabled", not self.file_io.is_local):
            return None
        return JdbcLock(self.db, self.catalog_key, timeout, max_sleep)

    @contextmanager
    def _locked(self, database: str, object_name: str):
        """Hold one table's lock when the lock is enabled."""
        if self.lock is None:
            yield
            return
        with self.lock.held(database, object_name):
            yield

    # ------------------------------------------------------------------ identifiers and paths

    def _split(self, identifier: str, what: str) -> tuple[str, str, str]:
        """(database, table, branch) of `"db.t"` or `"db.t$branch_b"`."""
        base, branch = identifier, "main"
        if isinstance(identifier, str) and "$" in identifier:
            base, branch = branch_of(identifier, f"{what} '{identifier}'")
        database, name = FileSystemCatalog.split_identifier(base)
        return database, name, branch

    def _main(self, identifier: str, what: str) -> tuple[str, str]:
        database, name, branch = self._split(identifier, what)
        if branch != "main":
            raise InvalidArgument(f"catalog {self.name}: {what}({identifier!r}): branches are created and "
                                  "dropped with table.create_branch / drop_branch, and renamed with the table")
        return database, name

    def database_path(self, database: str) -> str:
        check_name("database", database)
        return join(self.warehouse, database + DB_SUFFIX)

    def table_path(self, identifier: str) -> str:
        """The directory of a table (whether or not it exists)."""
        database, name, _ = self._split(identifier, "table_path")
        return join(self.database_path(database), name)

    # ------------------------------------------------------------------ rows

    def _table_row(self, database: str, name: str) -> bool:
        return self.db.exists(f"looking up table {database}.{name}",
                              f"SELECT table_name FROM {TABLES} WHERE catalog_key = ? AND database_name = ? "
                              "AND table_name = ?", (self.catalog_key, database, name))

    def _taken(self, database: str, name: str) -> bool:
        """Is the name a table's or a view's (Java refuses both for a new table)?"""
        return self._table_row(database, name) or self.db.exists(
            f"looking up view {database}.{name}",
            f"SELECT view_name FROM {VIEWS} WHERE catalog_key = ? AND database_name = ? AND view_name = ?",
            (self.catalog_key, database, name))

    def _database_exists(self, database: str) -> bool:
        key = (self.catalog_key, database)
        what = f"looking up database {database}"
        return any(self.db.exists(what, f"SELECT database_name FROM {table} WHERE catalog_key = ? AND "
                                  "database_name = ? LIMIT 1", key)
                   for table in (TABLES, DATABASE_PROPERTIES, VIEWS))

    def _table_properties(self, schema: TableSchema) -> dict[str, str]:
        """What Java copies to paimon_table_properties: the options and the keys."""
        properties = dict(schema.options)
        keys = {"primary-key": schema.primary_keys, "partition": schema.partition_keys,
                "bucket-key": schema.bucket_keys}
        properties.update({k: ",".join(v) for k, v in keys.items() if v})
        return properties

    def _write_properties(self, run, database: str, name: str, schema: TableSchema) -> None:
        run(f"DELETE FROM {TABLE_PROPERTIES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
            (self.catalog_key, database, name))
        if not self.sync_properties:
            return
        for key, value in sorted(self._table_properties(schema).items()):
            run(f"INSERT INTO {TABLE_PROPERTIES} (catalog_key, database_name, table_name, property_key, "
                "property_value) VALUES (?, ?, ?, ?, ?)", (self.catalog_key, database, name, key, value))

    # ------------------------------------------------------------------ databases

    def create_database(self, database: str, ignore_if_exists: bool = True,
                        properties: dict[str, str] | None = None) -> None:
        """Register a database: its rows in paimon_database_properties (`exists`, `location`
        and `properties`), as Java's createDatabase writes them."""
        check_name("database", database)
        if self._database_exists(database):
            if ignore_if_exists:
                return
            raise TarnError(f"catalog {self.name}: database {database} already exists")
        values = {DATABASE_EXISTS_PROPERTY: "true", LOCATION_PROPERTY: self.file_io.uri(self.database_path(database))}
        values.update({str(k): str(v) for k, v in (properties or {}).items()})
        try:
            with self.db.transaction(f"creating database {database}") as run:
                for key, value in values.items():
                    run(f"INSERT INTO {DATABASE_PROPERTIES} (catalog_key, database_name, property_key, "
                        "property_value) VALUES (?, ?, ?, ?)", (self.catalog_key, database, key, value))
        except Duplicate:
            if not ignore_if_exists:
                raise TarnError(f"catalog {self.name}: database {database} already exists") from None

    def database_properties(self, database: str) -> dict[str, str]:
        """The database's properties (`location` and those given at creation)."""
        rows = self.db.rows(f"reading database {database}",
                            f"SELECT property_key, property_value FROM {DATABASE_PROPERTIES} WHERE catalog_key = ? "
                            "AND database_name = ?", (self.catalog_key, database))
        if not rows and not self._database_exists(database):
            raise TarnError(f"catalog {self.name}: database {database} does not exist")
        properties = {k: v for k, v in rows if k != DATABASE_EXISTS_PROPERTY}
        properties.setdefault(LOCATION_PROPERTY, self.file_io.uri(self.database_path(database)))
        return properties

    def list_databases(self) -> list[str]:
        """Databases with properties, tables or views under this catalog key."""
        names = set()
        for table in (TABLES, DATABASE_PROPERTIES, VIEWS):
            names.update(r[0] for r in self.db.rows("listing databases", f"SELECT DISTINCT database_name FROM "
                                                    f"{table} WHERE catalog_key = ?", (self.catalog_key,)))
        return sorted(names)

    def drop_database(self, database: str, ignore_if_missing: bool = False, cascade: bool = False) -> None:
        """Drop a database: TarnError if it holds tables or views unless `cascade` (then each
        table is dropped with its files), then its rows."""
        check_name("database", database)
        if not self._database_exists(database):
            if ignore_if_missing:
                return
            raise TarnError(f"catalog {self.name}: database {database} does not exist")
        tables = self.list_tables(database)
        views = self.db.rows(f"listing views of {database}", f"SELECT view_name FROM {VIEWS} WHERE catalog_key = ? "
                             "AND database_name = ?", (self.catalog_key, database))
        if (tables or views) and not cascade:
            raise TarnError(f"catalog {self.name}: database {database} is not empty ({len(tables)} tables, "
                            f"{len(views)} views); drop them first or pass cascade=True")
        for table in tables:
            self.drop_table(f"{database}.{table}", ignore_if_missing=True)
        with self.db.transaction(f"dropping database {database}") as run:
            for table in (TABLES, DATABASE_PROPERTIES, TABLE_PROPERTIES, VIEWS):
                run(f"DELETE FROM {table} WHERE catalog_key = ? AND database_name = ?", (self.catalog_key, database))

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """Names of the tables of a database (its rows of paimon_tables)."""
        check_name("database", database)
        rows = self.db.rows(f"listing tables of {database}", f"SELECT table_name FROM {TABLES} WHERE catalog_key = ? "
                            "AND database_name = ?", (self.catalog_key, database))
        return sorted(r[0] for r in rows)

    # ------------------------------------------------------------------ tables

    def table_exists(self, identifier: str) -> bool:
        """Whether the table has its row (and, for `"db.t$branch_b"`, the branch exists)."""
        database, name, branch = self._split(identifier, "table_exists")
        if branch == "main":
            return self._table_row(database, name)
        try:
            self.load_table(identifier)
            return True
        except TableNotFound:
            return False

    def load_table(self, identifier: str) -> Table:
        """Open a table (`"db.t$branch_dev"`: its branch `dev`); TableNotFound when it has no
        row, or its row but no schema file at its path."""
        database, name, branch = self._split(identifier, "load_table")
        if not self._table_row(database, name):
            raise TableNotFound(f"catalog {self.name}: table {database}.{name} does not exist")
        path = join(self.database_path(database), name)
        object_name = name if branch == "main" else f"{name}$branch_{branch}"
        try:
            table = Table(self.file_io, path, f"{database}.{object_name}", branch=branch)
        except TableNotFound as exc:
            raise TableNotFound(f"catalog {self.name}: table {database}.{object_name}: {exc}") from None
        if self.lock is not None:
            table.core.snapshot_commit = LockedCommit(FileSystemCommit(table.core.snapshot_store, table.name),
                                                      self.lock, database, object_name)
        return table

    def create_table(self, identifier: str, schema, primary_key: list[str] | str | None = None,
                     partition_keys: list[str] | str | None = None, options: dict | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a table as Java does: its files first (`schema/schema-0`, created only if
        absent), then its row. A table whose row another writer inserted first is theirs
        (TableAlreadyExists); when the row cannot be written, the files this call created are
        deleted again. Arguments as `FileSystemCatalog.create_table`."""
        database, name = self._main(identifier, "create_table")
        identifier = f"{database}.{name}"
        if self._taken(database, name):
            if ignore_if_exists:
                return self.load_table(identifier)
            raise TableAlreadyExists(f"catalog {self.name}: table {identifier} already exists")
        self.create_database(database, ignore_if_exists=True)
        with self._locked(database, name):
            if self._taken(database, name):
                raise TableAlreadyExists(f"catalog {self.name}: table {identifier} already exists")
            path = join(self.database_path(database), name)
            existed = self.file_io.exists(path)
            try:
                table = create_table_at(self.file_io, path, identifier, schema, primary_key, partition_keys,
                                        options, comment)
            except TableAlreadyExists:
                raise TableAlreadyExists(f"catalog {self.name}: table {identifier} already exists at {path}: "
                                         "another writer is creating it, or its files were left there without "
                                         "a row in the catalog (then move or delete them first)") from None
            self._register(database, name, table.schema(), path, existed)
        return self.load_table(identifier)

    def _register(self, database: str, name: str, schema: TableSchema, path: str, existed: bool) -> None:
        """Insert the new table's row (and properties); on failure delete the files we made."""
        identifier = f"{database}.{name}"
        try:
            with self.db.transaction(f"creating table {identifier}") as run:
                run(f"INSERT INTO {TABLES} (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                    (self.catalog_key, database, name))
                self._write_properties(run, database, name, schema)
        except Duplicate:
            raise TableAlreadyExists(f"catalog {self.name}: table {identifier} was created by another writer "
                                     "at the same time") from None
        except OutcomeUnknown:  # the row may be there: its files stay
            raise
        except BaseException:
            self._remove_created(path, existed)
            raise

    def _remove_created(self, path: str, existed: bool) -> None:
        """Take back the files of a create whose row was not written: the schema file, and
        the directory when this create made it and nothing else is in it."""
        try:
            store = SchemaStore(self.file_io, path)
            self.file_io.delete(store.path(0))
            if not existed and not self.file_io.list_files(path):
                self.file_io.delete_dir(path)
        except Exception as exc:  # the caller's error is the one to see
            log.warning("catalog %s: could not remove %s after a failed create: %s", self.name, path, exc)

    def drop_table(self, identifier: str, ignore_if_missing: bool = False) -> None:
        """Delete the table's row (with its properties), then its directory; TableNotFound
        when there is no row (a concurrent drop deleted it first)."""
        database, name = self._main(identifier, "drop_table")
        identifier = f"{database}.{name}"
        with self.db.transaction(f"dropping table {identifier}") as run:
            deleted = run(f"DELETE FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                          (self.catalog_key, database, name))
            run(f"DELETE FROM {TABLE_PROPERTIES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                (self.catalog_key, database, name))
        if not deleted:
            if ignore_if_missing:
                return
            raise TableNotFound(f"catalog {self.name}: table {identifier} does not exist")
        path = join(self.database_path(database), name)
        try:
            self.file_io.delete_dir(path)
        except TarnError as exc:  # dropped: the row is gone; the files are orphans now
            log.warning("catalog %s: table %s dropped, but deleting %s failed: %s", self.name, identifier, path, exc)

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename the table's row and move its directory (Java's JdbcCatalog does both): the
        row is updated and the directory moved in one transaction of the catalog database, so
        a failed move leaves the old name. Refused on object stores, which cannot move a
        directory atomically (as the directory catalog refuses)."""
        source_db, source = self._main(identifier, "rename_table")
        target_db, target = self._main(new_identifier, "rename_table")
        identifier, new_identifier = f"{source_db}.{source}", f"{target_db}.{target}"
        if not self._table_row(source_db, source):
            raise TableNotFound(f"catalog {self.name}: table {identifier} does not exist")
        if identifier == new_identifier:
            raise TableAlreadyExists(f"catalog {self.name}: table {new_identifier} already exists")
        if not self.file_io.is_local:
            raise TarnError(f"catalog {self.name}: table {identifier}: rename_table on {self.file_io.store} is not "
                            "supported: an object store has no atomic directory rename")
        self.create_database(target_db, ignore_if_exists=True)
        with self._locked_pair((source_db, source), (target_db, target)):
            if self._taken(target_db, target):
                raise TableAlreadyExists(f"catalog {self.name}: table {new_identifier} already exists")
            self._move(source_db, source, target_db, target)

    @contextmanager
    def _locked_pair(self, first: tuple[str, str], second: tuple[str, str]):
        """Both tables' locks, taken in key order (as Java's runWithLocks)."""
        if self.lock is None:
            yield
            return
        a, b = sorted([first, second])
        with self.lock.held(*a), self.lock.held(*b):
            yield

    def _move(self, source_db: str, source: str, target_db: str, target: str) -> None:
        identifier, new_identifier = f"{source_db}.{source}", f"{target_db}.{target}"
        source_path = join(self.database_path(source_db), source)
        target_path = join(self.database_path(target_db), target)
        moved = False
        try:
            with self.db.transaction(f"renaming table {identifier} to {new_identifier}") as run:
                changed = run(f"UPDATE {TABLES} SET database_name = ?, table_name = ? WHERE catalog_key = ? AND "
                              "database_name = ? AND table_name = ?",
                              (target_db, target, self.catalog_key, source_db, source))
                if changed != 1:
                    raise TableNotFound(f"catalog {self.name}: table {identifier} does not exist")
                run(f"UPDATE {TABLE_PROPERTIES} SET database_name = ?, table_name = ? WHERE catalog_key = ? AND "
                    "database_name = ? AND table_name = ?", (target_db, target, self.catalog_key, source_db, source))
                if SchemaStore(self.file_io, source_path).list_ids():  # not an external table: move it
                    if self.file_io.exists(target_path):
                        raise TableAlreadyExists(f"catalog {self.name}: cannot rename {identifier} to "
                                                 f"{new_identifier}: {target_path} already exists")
                    self.file_io.mkdirs(self.database_path(target_db))
                    self.file_io.fs.move(source_path, target_path)
                    moved = True
        except Duplicate:
            raise TableAlreadyExists(f"catalog {self.name}: table {new_identifier} already exists") from None
        except OutcomeUnknown:
            if moved and self._still_named(source_db, source):  # the rename did not land after all
                self.file_io.fs.move(target_path, source_path)
            raise
        except BaseException:
            if moved:  # the row kept its old name: so do the files
                self.file_io.fs.move(target_path, source_path)
            raise

    def _still_named(self, database: str, name: str) -> bool:
        """After a rename's commit went unanswered: does the row still have its old name?
        (False when that cannot be read either: the files stay where the rename put them.)"""
        try:
            return self._table_row(database, name)
        except TarnError:
            return False

    def alter_table(self, identifier: str, *changes) -> TableSchema:
        """Apply schema changes (see `Table.alter`) under the table's lock, then copy the new
        options to paimon_table_properties."""
        database, name, branch = self._split(identifier, "alter_table")
        table = self.load_table(identifier)
        object_name = name if branch == "main" else f"{name}$branch_{branch}"
        with self._locked(database, object_name):
            schema = table.alter(*changes)
        if branch == "main":
            with self.db.transaction(f"recording the new schema of {database}.{name}") as run:
                self._write_properties(run, database, name, schema)
        return schema

    def commit_point(self, table: Table):
        """Where the table's snapshots are committed: its snapshot directory, under the
        table's lock when `lock.enabled`."""
        return table.snapshot_commit


def _int_option(value, key: str, catalog: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise InvalidArgument(f"catalog {catalog}: option '{key}' must be a positive whole number, got {value!r}")
    return number
