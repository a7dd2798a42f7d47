"""The REST catalog client (tarn/catalog/rest.py) against tarn's own server (`tarn.server`, run
in a thread of this process over a directory catalog): databases and tables, paging, writes and
reads, schema changes, renames and drops, and commits that only the server makes (the server's
commit point counts them), a lost race, a server down, a bad token, an unknown table, pickling
and data tokens."""

from __future__ import annotations

import pickle
import socket
import threading
import time

import pyarrow as pa
import pytest

import tarn
from tarn.catalog.filesystem import FileSystemCatalog
from tarn.catalog.rest import RestCatalog, RestTable
from tarn.catalog.rest_commit import RestCommit
from tarn.catalog.rest_http import RestSession
from tarn.catalog.rest_token import TokenFileIO
from tarn.errors import (CommitConflict, InvalidArgument, InvalidOption, OutcomeUnknown, TableAlreadyExists,
                         TableNotFound, TarnError)
from tarn.server.run import ServerThread

TOKEN = "s3cr3t-token"
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
RETRIES_SEEN = 1  # a commit is sent once: an unanswered one is never sent again


class CountingCatalog:
    """The server's catalog: a directory catalog whose commit point counts what it published
    (and, when `refuse` is set, answers every commit as a lost race; when `fail` is set, raises
    after the snapshot landed)."""

    def __init__(self, warehouse: str):
        self.inner = FileSystemCatalog(warehouse)
        self.published: list[int] = []
        self.refuse = False
        self.fail = False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def commit_point(self, table):
        return CountingCommit(self, self.inner.commit_point(table))


class CountingCommit:
    def __init__(self, owner: CountingCatalog, inner):
        self.owner, self.inner = owner, inner

    def publish(self, publication) -> bool:
        if self.owner.refuse:
            return False
        landed = self.inner.publish(publication)
        if landed:
            self.owner.published.append(publication.snapshot.id)
        if self.owner.fail:
            raise RuntimeError("the server failed after the snapshot landed")
        return landed


@pytest.fixture
def served(tmp_path):
    """(server catalog, running server) over a fresh warehouse."""
    inner = CountingCatalog(str(tmp_path / "warehouse"))
    with ServerThread(inner, [TOKEN], page_size=2) as server:
        yield inner, server


def rest_catalog(server, **options) -> RestCatalog:
    return RestCatalog({"uri": server.url, "warehouse": "wh", "token.provider": "bear", "token": TOKEN, **options},
                       "prod")


@pytest.fixture
def client(served):
    return rest_catalog(served[1])


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"k": list(range(start, start + n)), "v": [f"v{i}" for i in range(start, start + n)]},
                    schema=SCHEMA)


def snapshot_ids(server_catalog: CountingCatalog, identifier: str) -> list[int]:
    return [s.id for s in server_catalog.inner.load_table(identifier).snapshots()]


# ---------------------------------------------------------------------------------------------
# catalog verbs


def test_databases_and_tables_are_listed_across_pages(client):
    for database in ("a", "b", "c", "d", "e"):
        client.create_database(database)
    client.create_database("a")  # ignore_if_exists by default
    with pytest.raises(TarnError, match="prod"):
        client.create_database("a", ignore_if_exists=False)
    assert client.list_databases() == ["a", "b", "c", "d", "e"]  # pages of 2
    for name in ("t1", "t2", "t3", "t4", "t5"):
        client.create_table(f"a.{name}", SCHEMA)
    assert client.list_tables("a") == ["t1", "t2", "t3", "t4", "t5"]
    assert client.list_tables("b") == []


def test_create_write_read_alter_rename_drop(served, client):
    server_catalog, _ = served
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "2"})
    assert isinstance(table, RestTable) and isinstance(table.snapshot_commit, RestCommit)
    with pytest.raises(TableAlreadyExists, match="db.t"):
        client.create_table("db.t", SCHEMA)
    assert client.create_table("db.t", SCHEMA, ignore_if_exists=True).name == "db.t"
    table.write(rows(3))
    table.write(pa.table({"k": [1], "v": ["changed"]}, schema=SCHEMA))
    assert table.scan().to_arrow().sort_by("k").column("v").to_pylist() == ["v0", "changed", "v2"]

    schema = table.alter(tarn.AddColumn("extra", tarn.types.INT()))
    assert schema.field_names == ["k", "v", "extra"] and table.schema().id == schema.id
    schema = client.alter_table("db.t", tarn.SetOption("snapshot.num-retained.min", "3"))
    assert schema.options["snapshot.num-retained.min"] == "3"
    # the server made both schema versions: the directory catalog sees them
    assert server_catalog.inner.load_table("db.t").schema().field_names == ["k", "v", "extra"]

    client.rename_table("db.t", "db.moved")
    assert not client.table_exists("db.t") and client.table_exists("db.moved")
    moved = client.load_table("db.moved")
    moved.write(pa.table({"k": [9], "v": ["nine"], "extra": [1]}))
    assert moved.scan().count() == 4
    client.drop_table("db.moved")
    assert client.list_tables("db") == []
    client.drop_table("db.moved", ignore_if_missing=True)
    with pytest.raises(TableNotFound, match="db.moved"):
        client.drop_table("db.moved")


def test_create_table_is_validated_before_it_is_sent(served, client):
    client.create_database("db")
    with pytest.raises(InvalidOption, match="db.t.*bucket"):
        client.create_table("db.t", SCHEMA, options={"bucket": "not a number"})
    with pytest.raises(TarnError, match="'missing' is not in the table columns"):
        client.create_table("db.t", SCHEMA, primary_key=["missing"])
    assert client.list_tables("db") == []


# ---------------------------------------------------------------------------------------------
# commits


def test_commits_go_through_the_server_only(served, client):
    server_catalog, _ = served
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA)
    for i in range(3):
        table.write(rows(2, start=10 * i))
    # every snapshot on disk was published by the server's commit point, none by the client
    assert snapshot_ids(server_catalog, "db.t") == server_catalog.published == [1, 2, 3]
    assert table.scan().count() == 6


def test_a_commit_the_server_refuses_lands_nothing(served, client):
    server_catalog, _ = served
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA, options={"commit.max-retries": "1"})
    server_catalog.refuse = True
    with pytest.raises(CommitConflict, match="db.t"):
        table.write(rows(2))
    assert snapshot_ids(server_catalog, "db.t") == [] and table.latest_snapshot() is None
    assert not [f for f in table.file_io.list_files(table.root) if "/manifest/" in f.path]  # cleaned up


def test_a_commit_racing_another_lands_both(served, client):
    """Writer A's snapshot 1 lands while B's commit is on its way with id 1 too: the server says
    success=false, B rebuilds on snapshot 1 and lands as snapshot 2."""
    server_catalog, server = served
    client.create_database("db")
    first = client.create_table("db.t", SCHEMA)
    second = rest_catalog(server).load_table("db.t")
    real = second.snapshot_commit
    answers = []

    class LetTheOtherWinFirst:
        owner = real.owner

        def publish(self, publication):
            if not answers:
                first.write(rows(1, start=100))  # lands while our snapshot 1 is in flight
            answers.append(real.publish(publication))
            return answers[-1]

    second.core.snapshot_commit = LetTheOtherWinFirst()
    second.write(rows(1, start=200))
    assert answers == [False, True]
    assert snapshot_ids(server_catalog, "db.t") == server_catalog.published == [1, 2]
    assert sorted(second.scan().to_arrow().column("k").to_pylist()) == [100, 200]


def test_racing_writers_lose_nothing(served, client):
    server_catalog, server = served
    client.create_database("db")
    client.create_table("db.t", SCHEMA, options={"commit.max-retries": "50"})
    errors = []

    def writer(w: int):
        try:
            table = rest_catalog(server).load_table("db.t")
            for c in range(4):
                table.write(rows(1, start=w * 100 + c))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    ids = snapshot_ids(server_catalog, "db.t")
    assert ids == sorted(server_catalog.published) == list(range(1, 17))
    keys = client.load_table("db.t").scan().to_arrow().column("k").to_pylist()
    assert sorted(keys) == sorted(w * 100 + c for w in range(4) for c in range(4))


def test_a_server_error_after_the_request_leaves_the_outcome_unknown(served, client):
    server_catalog, _ = served
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA)
    server_catalog.fail = True
    with pytest.raises(OutcomeUnknown, match="snapshot 1"):
        table.write(rows(2))
    server_catalog.fail = False
    # it did land, and no file it references was deleted on the way out
    assert table.scan().count() == 2 and snapshot_ids(server_catalog, "db.t") == [1]


def test_a_commit_without_an_answer_leaves_the_outcome_unknown(served, client):
    """The request reached a server that closed the connection without answering: the snapshot
    may have landed, so the commit raises OutcomeUnknown and deletes none of its files."""
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA)
    listener = socket.create_server(("127.0.0.1", 0))

    def swallow_and_hang_up():
        for _ in range(RETRIES_SEEN):
            connection, _ = listener.accept()
            connection.recv(65536)
            connection.close()

    threading.Thread(target=swallow_and_hang_up, daemon=True).start()
    commit_point = table.snapshot_commit
    commit_point.session = RestSession("prod", f"http://127.0.0.1:{listener.getsockname()[1]}",
                                       commit_point.session.headers)
    before = {f.path for f in table.file_io.list_files(table.root)}
    with pytest.raises(OutcomeUnknown, match="did not answer.*snapshot 1 may or may not have landed"):
        table.write(rows(2))
    listener.close()
    written = {f.path for f in table.file_io.list_files(table.root)} - before
    assert any("/manifest/" in p for p in written) and any(p.endswith(".parquet") for p in written)
    assert table.latest_snapshot() is None  # nothing landed here, yet nothing was taken back either


def test_branches_commit_through_the_server(served, client):
    server_catalog, _ = served
    client.create_database("db")
    client.create_table("db.t", SCHEMA).write(rows(2))
    server_catalog.inner.load_table("db.t").create_branch("dev")
    branch = client.load_table("db.t$branch_dev")
    assert branch.name == "db.t$branch_dev" and branch.branch == "dev"
    branch.write(rows(1, start=50))
    assert server_catalog.published == [1, 1]  # main's snapshot 1, then the branch's own
    assert branch.scan().count() == 1 and client.load_table("db.t").scan().count() == 2
    assert client.load_table("db.t").branch_table("dev").scan().count() == 1


def test_tags_rollback_and_branches_go_through_the_server(served, client):
    server_catalog, _ = served
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA)
    table.write(rows(1))
    tag = table.create_tag("first", time_retained="1 d")
    assert tag.name == "first" and tag.snapshot.id == 1
    table.write(rows(1, start=1))
    assert [t.name for t in server_catalog.inner.load_table("db.t").list_tags()] == ["first"]
    assert table.rollback_to("first").id == 1 and table.scan().count() == 1
    table.delete_tag("first")
    assert table.list_tags() == []
    branch = table.create_branch("dev")
    assert isinstance(branch.snapshot_commit, RestCommit) and table.list_branches() == ["dev"]
    branch.write(rows(2, start=10))
    table.fast_forward("dev")
    assert table.scan().count() == 2
    table.delete_branch("dev")
    assert server_catalog.inner.load_table("db.t").list_branches() == []


def test_metadata_writes_without_an_endpoint_are_refused(served, client):
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA, options={"snapshot.num-retained.max": "1",
                                                          "snapshot.num-retained.min": "1",
                                                          "snapshot.time-retained": "1 ms"})
    table.write(rows(1))
    table.write(rows(1, start=1))
    assert len(table.snapshots()) == 2  # the writer ran no expiry after its commits
    table.create_tag("t1")
    refused = [lambda: table.expire_snapshots(), lambda: table.rename_tag("t1", "t2"),
               lambda: table.replace_tag("t1", 1), lambda: tarn.Table.create_tag(table, "t3"),
               lambda: tarn.Table.alter(table, tarn.SetOption("bucket-key", "k"))]
    for verb in refused:
        with pytest.raises(TarnError, match=r"table db\.t: .* owned by REST catalog prod"):
            verb()
    assert len(table.snapshots()) == 2 and [t.name for t in table.list_tags()] == ["t1"]
    assert table.schema().id == 0


# ---------------------------------------------------------------------------------------------
# failures


def test_unknown_tables_and_databases(client):
    client.create_database("db")
    with pytest.raises(TableNotFound, match=r"prod.*db\.missing|db\.missing.*prod"):
        client.load_table("db.missing")
    assert not client.table_exists("db.missing")
    with pytest.raises(TarnError, match="nodb"):
        client.list_tables("nodb")


def test_a_bad_token_is_an_authentication_error(served):
    with pytest.raises(TarnError, match="refused the credentials.*401"):
        RestCatalog({"uri": served[1].url, "token.provider": "bear", "token": "wrong"}, "prod")
    with pytest.raises(TarnError, match="refused the credentials"):
        RestCatalog({"uri": served[1].url}, "prod")


def test_load_catalog_opens_a_rest_catalog(served, monkeypatch, tmp_path):
    monkeypatch.delenv("TARN_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.tarn.yaml
    catalog = tarn.load_catalog(metastore="rest", uri=served[1].url, warehouse="wh",
                                **{"token.provider": "bear", "token": TOKEN, "header.X-Trace": "on"})
    assert isinstance(catalog, RestCatalog) and catalog.session.headers["X-Trace"] == "on"
    catalog.create_database("db")
    assert catalog.list_databases() == ["db"]
    with pytest.raises(InvalidOption, match="did you mean 'token.provider'"):
        tarn.load_catalog(metastore="rest", uri=served[1].url, **{"token.providr": "bear"})


def test_options_are_checked(served):
    url = served[1].url
    with pytest.raises(InvalidArgument, match="catalog prod: .*uri"):
        RestCatalog({}, "prod")
    with pytest.raises(InvalidArgument, match="ftp://x"):
        RestCatalog({"uri": "ftp://x"}, "prod")
    with pytest.raises(InvalidArgument, match="token.provider='dlf'"):
        RestCatalog({"uri": url, "token.provider": "dlf"}, "prod")
    with pytest.raises(InvalidArgument, match="token.provider"):
        RestCatalog({"uri": url, "token": TOKEN}, "prod")
    with pytest.raises(InvalidArgument, match="data-token.enabled"):
        RestCatalog({"uri": url, "token.provider": "bear", "token": TOKEN, "data-token.enabled": "yes"}, "prod")


def test_server_down(tmp_path):
    inner = CountingCatalog(str(tmp_path / "warehouse"))
    server = ServerThread(inner, [TOKEN]).start()
    client = rest_catalog(server)
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA)
    table.write(rows(1))
    files_before = {f.path for f in table.file_io.list_files(table.root)}
    server.stop()
    started = time.monotonic()
    with pytest.raises(TarnError, match=rf"catalog prod: cannot reach the REST server at {server.url} .*db\.t"):
        client.load_table("db.t")
    with pytest.raises(TarnError, match=rf"cannot reach the REST server at {server.url} .*db\.t"):
        table.write(rows(1, start=1))  # the request never left: nothing landed, its files are gone
    assert time.monotonic() - started < 10
    assert [s.id for s in inner.inner.load_table("db.t").snapshots()] == [1]
    assert {f.path for f in table.file_io.list_files(table.root)} == files_before  # the failed commit's are gone
    assert table.scan().count() == 1


def test_a_table_pickles_with_its_token_but_no_connection(served, client):
    server_catalog, _ = served
    client.create_database("db")
    table = client.create_table("db.t", SCHEMA)
    table.write(rows(1))
    data = pickle.dumps(table)
    assert TOKEN.encode() in data and b"httpx" not in data
    again = pickle.loads(data)
    again.write(rows(1, start=5))  # a new connection pool, the same token
    assert server_catalog.published == [1, 2] and again.scan().count() == 2
    catalog_again = pickle.loads(pickle.dumps(client))
    assert catalog_again.list_tables("db") == ["t"]


# ---------------------------------------------------------------------------------------------
# data tokens


def test_data_token_is_fetched_and_refreshed(tmp_path):
    inner = CountingCatalog(str(tmp_path / "warehouse"))
    with ServerThread(inner, [TOKEN], data_token={"s3.region": "eu-west-1"}, data_token_seconds=1) as server:
        client = rest_catalog(server)  # the server's config turns data-token.enabled on
        client.create_database("db")
        table = client.create_table("db.t", SCHEMA)
        assert isinstance(table.file_io, TokenFileIO)
        table.write(rows(2))
        first = table.file_io.token
        assert first.options == {"s3.region": "eu-west-1"}
        time.sleep(0.6)  # past half of its one second
        assert table.scan().count() == 2
        assert table.file_io.token is not first and table.file_io.token.expires_at_millis > first.expires_at_millis
        again = pickle.loads(pickle.dumps(table))  # with its token: no new one until it needs one
        assert again.file_io.token == table.file_io.token and again.scan().count() == 2


@pytest.mark.s3
def test_data_token_carries_the_store_credentials(s3_server):
    """The client has no S3 settings of its own: it reads and writes with the server's token."""
    warehouse = s3_server.new_prefix()
    inner = FileSystemCatalog(warehouse, s3_server.storage_options)
    with ServerThread(inner, [TOKEN], data_token=s3_server.storage_options) as server:
        client = rest_catalog(server, **{"data-token.enabled": "true"})
        client.create_database("db")
        table = client.create_table("db.t", SCHEMA)
        table.write(rows(3))
        assert table.scan().count() == 3
        assert inner.load_table("db.t").scan().count() == 3
        assert any("/snapshot/snapshot-1" in key for key in s3_server.keys(warehouse))


def test_requests_take_the_proxy_the_environment_names(monkeypatch):
    from tarn.catalog.rest_http import environment_proxy

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert environment_proxy("https://catalog.example.com") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert environment_proxy("https://catalog.example.com") == "http://proxy:3128"
    assert environment_proxy("http://catalog.example.com") is None  # no proxy for plain http
    monkeypatch.setenv("ALL_PROXY", "http://all:8080")
    assert environment_proxy("http://catalog.example.com") == "http://all:8080"
    monkeypatch.setenv("NO_PROXY", "example.com,localhost")
    assert environment_proxy("https://catalog.example.com") is None
    assert environment_proxy("https://other.org") == "http://proxy:3128"


def test_latest_snapshot_and_partitions_as_the_server_states_them(served, client):
    client.create_database("db")
    table = client.create_table("db.p", pa.schema([("k", pa.int64()), ("day", pa.string())]),
                                partition_keys="day")
    assert client.latest_snapshot("db.p") is None
    table.write(pa.table({"k": [1, 2, 3], "day": ["a", "a", "b"]}))
    snapshot, totals = client.latest_snapshot("db.p")
    assert snapshot.id == 1 and totals.record_count == 3 and totals.file_count == 2
    partitions = sorted((spec["day"], t.record_count) for spec, t in client.list_partitions("db.p"))
    assert partitions == [("a", 2), ("b", 1)]
