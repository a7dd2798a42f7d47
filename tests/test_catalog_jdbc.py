"""The JDBC catalog (tarn/catalog/jdbc.py) on SQLite and PostgreSQL: the catalog tables Java
Paimon uses, create / load / list / write / read / alter / rename / drop, races between two
processes on one identifier, Java's distributed lock around commits, and a catalog database
that is locked or down."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3

import pyarrow as pa
import pytest

import tarn
from tarn.catalog import TableCatalog
from tarn.catalog.jdbc import JdbcCatalog, LockedCommit
from tarn.errors import InvalidArgument, TableAlreadyExists, TableNotFound, TarnError
from tests.postgres import TcpRelay, free_port, unique_key

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def rows(*keys: int) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"v{k}" for k in keys]}, schema=SCHEMA)


def read(table) -> list[tuple]:
    return sorted((r["k"], r["v"]) for r in table.scan().to_arrow().to_pylist())


@pytest.fixture(params=["sqlite", "postgresql"])
def options(request, tmp_path) -> dict[str, str]:
    """Options of an empty catalog: a SQLite file, or a catalog-key of its own on the
    session's PostgreSQL server."""
    warehouse = str(tmp_path / "warehouse")
    if request.param == "sqlite":
        return {"uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "warehouse": warehouse}
    server = request.getfixturevalue("postgres_url")
    return server.options(warehouse=warehouse, **{"catalog-key": unique_key()})


def catalog_rows(catalog: JdbcCatalog, table: str) -> list[tuple]:
    return sorted(catalog.db.rows("test", f"SELECT * FROM {table} WHERE catalog_key = ?", (catalog.catalog_key,)))


# ---------------------------------------------------------------------------- the catalog port


def test_create_write_alter_rename_drop(options):
    catalog = JdbcCatalog(options, "shop")
    assert isinstance(catalog, TableCatalog) and catalog.list_databases() == []
    table = catalog.create_table("db.orders", SCHEMA, primary_key="k", options={"bucket": "2"})
    table.write(rows(1, 2))
    table.write(pa.table({"k": [2], "v": ["new"]}, schema=SCHEMA))
    assert catalog.list_databases() == ["db"] and catalog.list_tables("db") == ["orders"]
    assert catalog.table_exists("db.orders") and not catalog.table_exists("db.other")
    assert read(catalog.load_table("db.orders")) == [(1, "v1"), (2, "new")]
    key = catalog.catalog_key
    assert catalog_rows(catalog, "paimon_tables") == [(key, "db", "orders")]
    assert ((key, "db", "orders", "primary-key", "k") in catalog_rows(catalog, "paimon_table_properties"))

    schema = catalog.alter_table("db.orders", tarn.SetOption("snapshot.num-retained.min", "3"))
    assert catalog.load_table("db.orders").schema().id == schema.id == 1
    assert (key, "db", "orders", "snapshot.num-retained.min", "3") in catalog_rows(catalog, "paimon_table_properties")

    old_path = catalog.table_path("db.orders")
    catalog.rename_table("db.orders", "sales.orders2")
    assert not os.path.exists(old_path) and os.path.isdir(catalog.table_path("sales.orders2"))
    assert catalog.list_tables("db") == [] and catalog.list_tables("sales") == ["orders2"]
    moved = catalog.load_table("sales.orders2")
    moved.write(rows(3))
    assert read(moved) == [(1, "v1"), (2, "new"), (3, "v3")]
    assert {r[1:3] for r in catalog_rows(catalog, "paimon_table_properties")} == {("sales", "orders2")}

    catalog.drop_table("sales.orders2")
    assert catalog.list_tables("sales") == [] and not os.path.exists(catalog.table_path("sales.orders2"))
    assert catalog_rows(catalog, "paimon_tables") == [] and catalog_rows(catalog, "paimon_table_properties") == []
    with pytest.raises(TableNotFound, match="catalog shop: table sales.orders2 does not exist"):
        catalog.load_table("sales.orders2")


def test_refusals_name_the_catalog_and_table(options):
    catalog = JdbcCatalog(options, "shop")
    catalog.create_table("db.a", SCHEMA)
    catalog.create_table("db.b", SCHEMA)
    with pytest.raises(TableAlreadyExists, match="catalog shop: table db.a already exists"):
        catalog.create_table("db.a", SCHEMA)
    assert catalog.create_table("db.a", SCHEMA, ignore_if_exists=True).name == "db.a"
    with pytest.raises(TableNotFound, match="catalog shop: table db.missing"):
        catalog.drop_table("db.missing")
    catalog.drop_table("db.missing", ignore_if_missing=True)
    with pytest.raises(TableNotFound, match="db.missing"):
        catalog.rename_table("db.missing", "db.c")
    with pytest.raises(TableAlreadyExists, match="db.b"):
        catalog.rename_table("db.a", "db.b")
    with pytest.raises(InvalidArgument, match="branches"):
        catalog.rename_table("db.a$branch_x", "db.c")
    assert catalog.list_tables("db") == ["a", "b"]
    assert read(catalog.load_table("db.a")) == [] and read(catalog.load_table("db.b")) == []


def test_databases(options):
    catalog = JdbcCatalog(options, "shop")
    catalog.create_database("empty", properties={"owner": "ann"})
    with pytest.raises(TarnError, match="database empty already exists"):
        catalog.create_database("empty", ignore_if_exists=False)
    assert catalog.database_properties("empty") == {"owner": "ann",
                                                    "location": os.path.join(options["warehouse"], "empty.db")}
    catalog.create_table("full.t", SCHEMA).write(rows(1))
    assert catalog.list_databases() == ["empty", "full"]
    with pytest.raises(TarnError, match="database full is not empty"):
        catalog.drop_database("full")
    catalog.drop_database("full", cascade=True)
    catalog.drop_database("empty")
    assert catalog.list_databases() == [] and not os.path.exists(os.path.join(options["warehouse"], "full.db", "t"))
    with pytest.raises(TarnError, match="database gone does not exist"):
        catalog.drop_database("gone")


def test_branches_load_as_in_the_directory_catalog(options):
    catalog = JdbcCatalog(options, "shop")
    table = catalog.create_table("db.t", SCHEMA, primary_key="k", options={"bucket": "1"})
    table.write(rows(1))
    table.create_tag("one")
    table.create_branch("dev", from_tag="one")
    dev = catalog.load_table("db.t$branch_dev")
    dev.write(rows(2))
    assert dev.branch == "dev" and read(dev) == [(1, "v1"), (2, "v2")]
    assert read(catalog.load_table("db.t")) == [(1, "v1")]
    assert catalog.table_exists("db.t$branch_dev") and not catalog.table_exists("db.t$branch_nope")
    with pytest.raises(TableNotFound, match="branch 'nope'"):
        catalog.load_table("db.t$branch_nope")


def test_a_directory_without_a_row_is_not_taken_over(tmp_path):
    """Java refuses to create over a schema already in the file system; so does tarn, and it
    deletes nothing of what it found."""
    options = {"uri": f"jdbc:sqlite:{tmp_path / 'c.db'}", "warehouse": str(tmp_path / "wh")}
    stray = tarn.create_table(str(tmp_path / "wh" / "db.db" / "t"), SCHEMA)
    stray.write(rows(7))
    catalog = JdbcCatalog(options, "shop")
    with pytest.raises(TableAlreadyExists, match="without a row in the catalog"):
        catalog.create_table("db.t", SCHEMA)
    assert catalog.list_tables("db") == [] and read(tarn.load_table(stray.root)) == [(7, "v7")]


def test_the_catalog_tables_are_javas(tmp_path):
    """Columns, types and primary keys of the tables Java's JdbcCatalog creates (and reads)."""
    path = tmp_path / "c.db"
    JdbcCatalog({"uri": f"jdbc:sqlite:{path}", "warehouse": str(tmp_path / "wh"), "lock.enabled": "true",
                 "lock-key-max-length": "300"}, "shop").create_database("db")
    connection = sqlite3.connect(path)

    def columns(table):  # (name, type, not null, primary key position)
        return [(c[1], c[2], c[3], c[5]) for c in connection.execute(f"PRAGMA table_info({table})")]

    assert columns("paimon_tables") == [("catalog_key", "VARCHAR(255)", 1, 1), ("database_name", "VARCHAR(255)", 1, 2),
                                        ("table_name", "VARCHAR(255)", 1, 3)]
    assert columns("paimon_database_properties") == [
        ("catalog_key", "VARCHAR(255)", 1, 1), ("database_name", "VARCHAR(255)", 1, 2),
        ("property_key", "VARCHAR(255)", 0, 3), ("property_value", "VARCHAR(1000)", 0, 0)]
    assert columns("paimon_table_properties") == [
        ("catalog_key", "VARCHAR(255)", 1, 1), ("database_name", "VARCHAR(255)", 1, 2),
        ("table_name", "VARCHAR(255)", 1, 3), ("property_key", "VARCHAR(255)", 1, 4),
        ("property_value", "VARCHAR(1000)", 0, 0)]
    assert columns("paimon_views") == [("catalog_key", "VARCHAR(255)", 1, 1), ("database_name", "VARCHAR(255)", 1, 2),
                                       ("view_name", "VARCHAR(255)", 1, 3), ("view_schema", "TEXT", 1, 0)]
    assert columns("paimon_distributed_locks") == [("lock_id", "VARCHAR(300)", 1, 1),
                                                   ("acquired_at", "TIMESTAMP", 1, 0),
                                                   ("expire_time_seconds", "BIGINT", 1, 0)]
    assert sorted(connection.execute("SELECT * FROM paimon_database_properties")) == [
        ("jdbc", "db", "exists", "true"), ("jdbc", "db", "location", str(tmp_path / "wh" / "db.db"))]


def test_options_are_checked(tmp_path):
    base = {"uri": f"jdbc:sqlite:{tmp_path / 'c.db'}", "warehouse": str(tmp_path / "wh")}
    with pytest.raises(InvalidArgument, match="catalog shop: uri 'jdbc:mysql://h/db' is not supported"):
        JdbcCatalog({**base, "uri": "jdbc:mysql://h/db"}, "shop")
    with pytest.raises(InvalidArgument, match="catalog shop: option 'uri' is required"):
        JdbcCatalog({"warehouse": base["warehouse"]}, "shop")
    with pytest.raises(InvalidArgument, match="'lock.enabled' must be true or false"):
        JdbcCatalog({**base, "lock.enabled": "yes"}, "shop")
    with pytest.raises(InvalidArgument, match="'lock-acquire-timeout' must be a duration"):
        JdbcCatalog({**base, "lock-acquire-timeout": "soon"}, "shop")
    with pytest.raises(InvalidArgument, match="'lock.type'"):
        JdbcCatalog({**base, "lock.type": "zookeeper"}, "shop")
    assert not os.path.exists(tmp_path / "c.db")  # refused before connecting


# ---------------------------------------------------------------------------- two processes


def race(options: dict, rounds: int, phase, pair, results, tag: str) -> None:
    """One racer (a spawned process): per phase (an operation the parent names), `rounds`
    times wait for the other racer, then run it on identifier db.t<i>; report ("ok" | error
    class name, message) per round. Both racers open the catalog (and create its tables) at
    once."""
    catalog = JdbcCatalog(options, "shop")
    while (op := phase.get(timeout=120)) != "stop":
        for i in range(rounds):
            pair.wait(timeout=120)
            try:
                if op == "create":
                    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), (f"by_{tag}", pa.string())])
                    catalog.create_table(f"db.t{i}", schema, primary_key="k", options={"bucket": "1"})
                elif op == "drop":
                    catalog.drop_table(f"db.t{i}")
                else:
                    catalog.rename_table(f"db.t{i}", f"db.{tag}{i}")
                results.put((tag, i, "ok", ""))
            except TarnError as exc:
                results.put((tag, i, type(exc).__name__, str(exc)))


class Racers:
    """Two spawned racer processes; `play(op)` runs one phase and answers per round
    {racer: (outcome, message)}."""

    def __init__(self, options: dict, rounds: int):
        context = multiprocessing.get_context("spawn")
        self.rounds, self.phases = rounds, [context.Queue() for _ in "ab"]
        self.pair, self.results = context.Barrier(2), context.Queue()  # kept: the children attach to them
        self.processes = [context.Process(target=race, args=(options, rounds, q, self.pair, self.results, tag))
                          for q, tag in zip(self.phases, "ab")]
        for p in self.processes:
            p.start()

    def play(self, op: str) -> dict[int, dict[str, tuple]]:
        for q in self.phases:
            q.put(op)
        outcomes: dict[int, dict[str, tuple]] = {}
        for _ in range(2 * self.rounds):
            tag, i, kind, message = self.results.get(timeout=60)
            outcomes.setdefault(i, {})[tag] = (kind, message)
        return outcomes

    def stop(self) -> None:
        for q in self.phases:
            q.put("stop")
        for p in self.processes:
            p.join(timeout=60)
            assert p.exitcode == 0


def winner(outcome: dict[str, tuple], loser_error: tuple[str, ...]) -> str:
    """The racer that succeeded; the other failed with one of `loser_error`, naming the catalog."""
    kinds = sorted(kind for kind, _ in outcome.values())
    assert kinds.count("ok") == 1 and set(kinds) - {"ok"} <= set(loser_error), outcome
    loser_message = next(m for kind, m in outcome.values() if kind != "ok")
    assert "catalog shop" in loser_message
    return next(tag for tag, (kind, _) in outcome.items() if kind == "ok")


ROUNDS = 4


def test_two_processes_create_drop_and_rename_one_identifier(options):
    """Exactly one of two processes wins each create, drop and rename of one identifier; the
    other gets TableAlreadyExists / TableNotFound, and nothing is left half made."""
    racers = Racers(options, ROUNDS)
    try:
        created = racers.play("create")
        catalog = JdbcCatalog(options, "shop")
        assert catalog.list_tables("db") == [f"t{i}" for i in range(ROUNDS)]
        for i, outcome in created.items():
            won = winner(outcome, ("TableAlreadyExists",))
            table = catalog.load_table(f"db.t{i}")
            assert table.schema().field_names == ["k", f"by_{won}"]  # the winner's table, whole
            assert os.listdir(os.path.join(table.root, "schema")) == ["schema-0"]
            table.write(pa.table({"k": [i], f"by_{won}": ["x"]}))
            assert table.scan().count() == 1

        for outcome in racers.play("drop").values():
            winner(outcome, ("TableNotFound",))
        assert catalog.list_tables("db") == [] and os.listdir(catalog.database_path("db")) == []
        assert catalog_rows(catalog, "paimon_table_properties") == []

        for i in range(ROUNDS):
            catalog.create_table(f"db.t{i}", SCHEMA).write(rows(i))
        names = []
        for i, outcome in racers.play("rename").items():
            won = winner(outcome, ("TableNotFound", "TableAlreadyExists"))
            names.append(f"{won}{i}")
            assert read(catalog.load_table(f"db.{won}{i}")) == [(i, f"v{i}")]
        assert catalog.list_tables("db") == sorted(names)
        assert sorted(os.listdir(catalog.database_path("db"))) == sorted(names)
    finally:
        racers.stop()


# ---------------------------------------------------------------------------- the lock


def test_commits_hold_the_tables_lock(options):
    options = {**options, "lock.enabled": "true", "lock-acquire-timeout": "300 ms", "lock-check-max-sleep": "50 ms"}
    catalog = JdbcCatalog(options, "shop")
    table = catalog.create_table("db.t", SCHEMA)
    assert isinstance(catalog.commit_point(table), LockedCommit)
    table.write(rows(1))
    key = catalog.catalog_key
    holder = JdbcCatalog(options, "other").db  # another process holding the locks of db.t and db.u
    with holder.transaction("test") as run:
        for name in ("t", "u"):
            run("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES (?, 600)",
                (f"{key}.db.{name}",))
    with pytest.raises(TarnError, match=f"catalog shop: could not take the lock '{key}.db.t'"):
        table.write(rows(2))
    with pytest.raises(TarnError, match=f"could not take the lock '{key}.db.u'"):
        catalog.create_table("db.u", SCHEMA)
    assert not os.path.exists(catalog.table_path("db.u")) and catalog.list_tables("db") == ["t"]
    assert read(table) == [(1, "v1")] and table.snapshot_store.latest_id() == 1
    # a holder that died long ago: its row has expired and the next writer clears it
    with holder.transaction("test") as run:
        run("UPDATE paimon_distributed_locks SET acquired_at = '2000-01-01 00:00:00', expire_time_seconds = 1 "
            "WHERE lock_id = ?", (f"{key}.db.t",))
    table.write(rows(2))
    assert read(table) == [(1, "v1"), (2, "v2")]
    assert holder.rows("test", "SELECT lock_id FROM paimon_distributed_locks WHERE lock_id LIKE ?", (f"{key}.%",)) == [
        (f"{key}.db.u",)]


# ---------------------------------------------------------------------------- a database locked or down


def test_a_locked_sqlite_database_fails_cleanly(tmp_path):
    options = {"uri": f"jdbc:sqlite:{tmp_path / 'c.db'}", "warehouse": str(tmp_path / "wh"),
               "jdbc.busy_timeout": "100"}
    catalog = JdbcCatalog(options, "shop")
    catalog.create_table("db.kept", SCHEMA).write(rows(1))
    other = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(TarnError, match="catalog shop: .*table db.t.*database is locked"):
        catalog.create_table("db.t", SCHEMA)
    with pytest.raises(TarnError, match="catalog shop: dropping table db.kept failed.*locked"):
        catalog.drop_table("db.kept")
    other.execute("ROLLBACK")
    assert not os.path.exists(catalog.table_path("db.t"))
    assert catalog.list_tables("db") == ["kept"] and read(catalog.load_table("db.kept")) == [(1, "v1")]
    assert read(catalog.create_table("db.t", SCHEMA)) == []


def test_a_row_that_cannot_be_written_takes_its_files_back(tmp_path):
    """In WAL mode readers pass an exclusive writer: the files are made, the row insert is
    refused, and the files go again."""
    path = tmp_path / "c.db"
    sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").fetchall()
    catalog = JdbcCatalog({"uri": f"jdbc:sqlite:{path}", "warehouse": str(tmp_path / "wh"),
                           "jdbc.busy_timeout": "100"}, "shop")
    catalog.create_database("db")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(TarnError, match="catalog shop: creating table db.t failed.*locked"):
        catalog.create_table("db.t", SCHEMA)
    other.execute("ROLLBACK")
    assert not os.path.exists(catalog.table_path("db.t")) and catalog.list_tables("db") == []


def test_a_postgresql_server_that_is_down(postgres_url, tmp_path):
    options = postgres_url.options(warehouse=str(tmp_path / "wh"), **{"catalog-key": unique_key()})
    with pytest.raises(TarnError, match="catalog shop: .*failed: the catalog database"):
        JdbcCatalog({**options, "uri": f"jdbc:postgresql://127.0.0.1:{free_port()}/x"}, "shop")
    relay = TcpRelay((postgres_url.host, postgres_url.port))
    catalog = JdbcCatalog({**options, "uri": f"jdbc:postgresql://127.0.0.1:{relay.port}/{postgres_url.database}"},
                          "shop")
    catalog.create_table("db.kept", SCHEMA).write(rows(1))
    relay.cut()
    with pytest.raises(TarnError, match="catalog shop: .*table db.t failed"):
        catalog.create_table("db.t", SCHEMA)
    with pytest.raises(TarnError, match="catalog shop: dropping table db.kept failed"):
        catalog.drop_table("db.kept")
    assert not os.path.exists(catalog.table_path("db.t"))
    again = JdbcCatalog(options, "shop")  # the server itself was up all along
    assert again.list_tables("db") == ["kept"] and read(again.load_table("db.kept")) == [(1, "v1")]
