"""`tarn serve` (tarn/server): the Paimon REST catalog server, run in this process on a free
port and driven over HTTP with httpx. Snapshots to commit are built by tarn itself on the
same warehouse, through a commit point that hands the built snapshot over instead of
publishing it (what a REST client does: write the files, then POST the snapshot)."""

import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pyarrow as pa
import pytest

import tarn
from tarn.catalog import rest_wire as wire
from tarn.errors import InvalidArgument
from tarn.server import ServerThread, read_tokens
from tarn.server.routes import ROUTES
from tarn.server.settings import ServerSettings

TOKEN = "t0k-secret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
P = wire.RestPaths("tarn")
MAX_BODY = 64 * 1024
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
TYPE_NAMES = {pa.int64(): "BIGINT", pa.string(): "STRING"}


@pytest.fixture
def served(tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    server = ServerThread(catalog, [TOKEN, "other-token"], max_body_bytes=MAX_BODY, page_size=50,
                          data_token={"s3.access-key": "AK", "s3.secret-key": "SK"}, data_token_seconds=60)
    server.start()
    client = httpx.Client(base_url=server.url, headers=AUTH, timeout=30)
    yield catalog, client
    client.close()
    server.stop()


def create_db(client, name="db"):
    assert client.post(P.databases(), json={"name": name}).status_code == 200


def create_table(client, name="t", database="db", schema=SCHEMA, partition_keys=(), primary_keys=("id",),
                 options=None):
    body = {"identifier": {"database": database, "object": name},
            "schema": {"fields": [{"id": i, "name": f.name, "type": TYPE_NAMES[f.type]
                                   + (" NOT NULL" if f.name in primary_keys else "")}
                                  for i, f in enumerate(schema)],
                       "partitionKeys": list(partition_keys), "primaryKeys": list(primary_keys),
                       "options": options or {"bucket": "1"}}}
    return client.post(P.tables(database), json=body)


def error_of(response, code, resource_type=None, resource_name=None):
    body = response.json()
    assert response.status_code == code and body["code"] == code, response.text
    assert body["message"]
    if resource_type:
        assert (body["resourceType"], body["resourceName"]) == (resource_type, resource_name)
    return body


class Handover:
    """A client-side commit point: keeps the snapshot the committer built (its files are
    written) and reports it landed, so the test can POST it to the server."""

    def __init__(self):
        self.snapshots = []

    def publish(self, publication):
        self.snapshots.append(publication.snapshot)
        return True


def built_snapshot(catalog, identifier, ids):
    """The snapshot a write of rows `ids` builds on the table's current latest, not committed."""
    table = catalog.load_table(identifier)
    handover = Handover()
    table.core.snapshot_commit = handover
    table.write(pa.table({"id": ids, "v": [str(i) for i in ids]}, schema=SCHEMA))
    return handover.snapshots[-1]


def commit(client, snapshot, table_id, base_uuid=None, table="t"):
    body = {"tableId": table_id, "baseSnapshotUuid": base_uuid, "snapshot": snapshot.to_dict(), "statistics": []}
    return client.post(P.commit("db", table), json=body)


def ids_of(catalog, identifier="db.t"):
    return sorted(catalog.load_table(identifier).scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def table(served):
    catalog, client = served
    create_db(client)
    assert create_table(client).status_code == 200
    return catalog, client, client.get(P.table("db", "t")).json()["id"]


# ------------------------------------------------------------------------------------ auth


def _concrete(pattern):
    return "/v1/tarn/" + pattern.format(database="db", table="t", branch="b", tag="x")


ENDPOINTS = [(m, p) for m, p, _ in ROUTES] + [("GET", "config")]


def test_every_endpoint_needs_a_valid_bearer_token(served):
    catalog, client = served
    create_db(client)
    assert create_table(client).status_code == 200
    assert len(ENDPOINTS) == 26
    anonymous = httpx.Client(base_url=client.base_url)
    for method, pattern in ENDPOINTS:
        path = "/v1/config" if pattern == "config" else _concrete(pattern)
        body = {} if method == "POST" else None
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                        {"Authorization": "Basic x"}):
            response = anonymous.request(method, path, headers=headers, json=body)
            assert response.status_code == 401, (method, path, headers)
            error_of(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"
    assert catalog.list_tables("db") == ["t"]  # nothing was done


def test_second_token_is_accepted_and_health_needs_none(served):
    _, client = served
    assert httpx.get(client.base_url.join("/health")).json()["status"] == "ok"
    response = httpx.get(client.base_url.join(P.databases()), headers={"Authorization": "Bearer other-token"})
    assert response.status_code == 200


# ------------------------------------------------------------------------------------ config, routing, bodies


def test_config_announces_the_prefix_and_data_tokens(served):
    _, client = served
    body = client.get(P.config(), params={"warehouse": "anything"}).json()
    assert body["defaults"] == {"prefix": "tarn", "data-token.enabled": "true"}
    assert wire.merged_options(body, {"prefix": "mine", "uri": "u"})["prefix"] == "mine"


def test_unknown_paths_wrong_prefix_and_methods(served):
    _, client = served
    error_of(client.get("/v1/other/databases"), 404)
    error_of(client.get("/v1/tarn/nothing/here"), 404)
    error_of(client.put(P.databases(), json={}), 405)
    error_of(client.post(P.config(), json={}), 405)


def test_malformed_bodies_are_400(served):
    _, client = served
    error_of(client.post(P.databases(), content=b"{not json", headers={"content-type": "application/json"}), 400)
    error_of(client.post(P.databases(), json=["a list"]), 400)
    error_of(client.post(P.databases(), json={"name": 7}), 400)
    error_of(client.post(P.databases(), content=b"\xff\xfe"), 400)


def test_bodies_over_the_bound_are_413_without_reading_them(served):
    catalog, client = served
    big = b'{"name": "' + b"x" * MAX_BODY + b'"}'
    error_of(client.post(P.databases(), content=big), 413)

    def chunks():  # no Content-Length: refused while it streams in
        for _ in range(2 * MAX_BODY // 1024):
            yield b" " * 1024

    error_of(client.post(P.databases(), content=chunks()), 413)
    assert catalog.list_databases() == []


# ------------------------------------------------------------------------------------ databases


def test_databases_create_get_list_page_drop(served):
    catalog, client = served
    for name in ["d3", "d1", "d2", "e1"]:
        create_db(client, name)
    error_of(client.post(P.databases(), json={"name": "d1"}), 409, "DATABASE", "d1")
    assert sorted(catalog.list_databases()) == ["d1", "d2", "d3", "e1"]
    first = client.get(P.databases(), params={"maxResults": 3}).json()
    assert first == {"databases": ["d1", "d2", "d3"], "nextPageToken": "d3"}
    second = client.get(P.databases(), params={"maxResults": 3, "pageToken": "d3"}).json()
    assert second == {"databases": ["e1"], "nextPageToken": None}
    assert client.get(P.databases(), params={"databaseNamePattern": "d%"}).json()["databases"] == ["d1", "d2", "d3"]
    error_of(client.get(P.databases(), params={"maxResults": "many"}), 400)
    error_of(client.get(P.databases(), params={"databaseNamePattern": "%x"}), 400)

    assert client.get(P.database("d1")).json()["name"] == "d1"
    error_of(client.get(P.database("nope")), 404, "DATABASE", "nope")
    error_of(client.post(P.database("d1"), json={"updates": {"a": "b"}}), 501)
    assert create_table(client, "t", "d1").status_code == 200
    assert client.delete(P.database("d1")).status_code == 200
    assert "d1" not in catalog.list_databases()
    error_of(client.delete(P.database("d1")), 404, "DATABASE", "d1")


# ------------------------------------------------------------------------------------ tables


def test_create_get_list_tables(served):
    catalog, client = served
    create_db(client)
    assert create_table(client, "t", options={"bucket": "2", "file.format": "parquet"}).status_code == 200
    error_of(create_table(client, "t"), 409, "TABLE", "db.t")
    error_of(create_table(client, "t", database="nodb"), 404, "DATABASE", "nodb")
    table = catalog.load_table("db.t")
    assert table.schema().primary_keys == ("id",) and table.options.get("bucket") == "2"

    body = client.get(P.table("db", "t")).json()
    assert (body["name"], body["database"], body["schemaId"], body["isExternal"]) == ("t", "db", 0, False)
    assert body["path"] == table.location and len(body["id"]) == 36
    schema = wire.schema_from(body["schema"])
    assert [f.name for f in schema.fields] == ["id", "v"] and schema.primary_keys == ["id"]
    error_of(client.get(P.table("db", "nope")), 404, "TABLE", "db.nope")

    for name in ["t2", "u1"]:
        assert create_table(client, name).status_code == 200
    assert client.get(P.tables("db"), params={"maxResults": 2}).json() == {"tables": ["t", "t2"],
                                                                             "nextPageToken": "t2"}
    assert client.get(P.tables("db"), params={"tableNamePattern": "t%"}).json()["tables"] == ["t", "t2"]
    details = client.get(P.table_details("db"), params={"tableNamePattern": "u%"}).json()["tableDetails"]
    assert [d["name"] for d in details] == ["u1"]
    error_of(client.get(P.tables("nodb")), 404, "DATABASE", "nodb")


def test_create_table_with_a_bad_schema_is_400_and_writes_nothing(served):
    catalog, client = served
    create_db(client)
    ident = {"database": "db", "object": "bad"}
    cases = [{"identifier": ident, "schema": {"fields": []}},
             {"identifier": ident, "schema": {"fields": [{"id": 0, "name": "a", "type": "NOPE"}]}},
             {"identifier": ident, "schema": {"fields": [{"id": 0, "name": "a", "type": "INT"}],
                                              "primaryKeys": ["b"]}},
             {"identifier": ident, "schema": {"fields": [{"id": 0, "name": "a", "type": "INT"}],
                                              "options": {"bucket": "zero"}}},
             {"identifier": ident, "schema": "not an object"},
             {"identifier": {"database": "db"}, "schema": {"fields": []}}]
    for body in cases:
        error_of(client.post(P.tables("db"), json=body), 400)
    assert catalog.list_tables("db") == []


def test_alter_rename_drop_table(table):
    catalog, client, _ = table
    changes = [{"action": "setOption", "key": "snapshot.num-retained.max", "value": "70"},
               {"action": "addColumn", "fieldNames": ["w"], "dataType": "INT", "comment": "new",
                "move": {"fieldName": "w", "referenceFieldName": None, "type": "FIRST"}}]
    assert client.post(P.table("db", "t"), json={"changes": changes}).status_code == 200
    schema = catalog.load_table("db.t").schema()
    assert schema.id == 1 and schema.field_names == ["w", "id", "v"]
    assert schema.options["snapshot.num-retained.max"] == "70"
    too_few = [{"action": "setOption", "key": "snapshot.num-retained.max", "value": "1"}]
    error_of(client.post(P.table("db", "t"), json={"changes": too_few}), 400)
    error_of(client.post(P.table("db", "t"), json={"changes": [{"action": "dropColumn", "fieldNames": ["id"]}]}),
             400)
    error_of(client.post(P.table("db", "t"), json={"changes": [{"action": "bogus"}]}), 400)
    error_of(client.post(P.table("db", "t"), json={"changes": [{"action": "dropPrimaryKey"}]}), 501)
    error_of(client.post(P.table("db", "nope"), json={"changes": changes}), 404, "TABLE", "db.nope")
    assert catalog.load_table("db.t").schema().id == 1  # nothing half-made

    assert create_table(client, "taken").status_code == 200
    rename = lambda s, d: client.post(P.rename_table(), json=wire.rename_body(("db", s), ("db", d)))  # noqa: E731
    error_of(rename("t", "taken"), 409, "TABLE", "db.taken")
    error_of(rename("nope", "x"), 404, "TABLE", "db.nope")
    assert rename("t", "t2").status_code == 200
    assert sorted(catalog.list_tables("db")) == ["t2", "taken"]

    assert client.delete(P.table("db", "t2")).status_code == 200
    error_of(client.delete(P.table("db", "t2")), 404, "TABLE", "db.t2")
    assert catalog.list_tables("db") == ["taken"]


# ------------------------------------------------------------------------------------ commits


def test_commit_makes_the_snapshot_the_latest(table):
    catalog, client, table_id = table
    error_of(client.get(P.snapshot("db", "t")), 404, "SNAPSHOT", "db.t")
    first = built_snapshot(catalog, "db.t", [1, 2])
    assert catalog.load_table("db.t").latest_snapshot() is None  # built, not committed
    assert commit(client, first, table_id).json() == {"success": True}
    assert ids_of(catalog) == [1, 2]

    second = built_snapshot(catalog, "db.t", [3])
    assert commit(client, second, table_id, base_uuid=first.uuid).json() == {"success": True}
    assert ids_of(catalog) == [1, 2, 3]
    body = client.get(P.snapshot("db", "t")).json()["snapshot"]
    assert body["snapshot"]["id"] == 2 and body["snapshot"]["uuid"] == second.uuid
    assert body["recordCount"] == 3 and body["fileCount"] == 2 and body["fileSizeInBytes"] > 0


def test_commit_lost_race_answers_success_false(table):
    catalog, client, table_id = table
    mine = built_snapshot(catalog, "db.t", [1])
    theirs = built_snapshot(catalog, "db.t", [2])  # both on the empty table: both are snapshot 1
    assert mine.id == theirs.id == 1
    assert commit(client, theirs, table_id).json() == {"success": True}
    assert commit(client, mine, table_id).json() == {"success": False}
    assert ids_of(catalog) == [2]
    # rebuilt on the new latest, it lands
    again = built_snapshot(catalog, "db.t", [1])
    assert commit(client, again, table_id, base_uuid=theirs.uuid).json() == {"success": True}
    assert ids_of(catalog) == [1, 2]


def test_commit_conflict_rules(table):
    catalog, client, table_id = table
    base = built_snapshot(catalog, "db.t", [1])
    assert commit(client, base, table_id).json()["success"]
    next_one = built_snapshot(catalog, "db.t", [2])
    # built on another base than the latest (its uuid): lost
    assert commit(client, next_one, table_id, base_uuid="not-the-latest").json() == {"success": False}
    # an id past the next one (its base was rolled back or never existed): lost
    assert commit(client, next_one.replace(id=5), table_id, base_uuid=base.uuid).json() == {"success": False}
    # a schema the table does not have, manifest lists not on storage: 400
    error_of(commit(client, next_one.replace(schema_id=9), table_id, base.uuid), 400)
    error_of(commit(client, next_one.replace(delta_manifest_list="manifest-list-missing"), table_id, base.uuid), 400)
    # another table's id (dropped and created again): 404
    error_of(commit(client, next_one, "0" * 36, base.uuid), 404, "TABLE", "db.t")
    error_of(commit(client, next_one, table_id, base.uuid, table="nope"), 404, "TABLE", "db.nope")
    error_of(client.post(P.commit("db", "t"), json={"tableId": table_id}), 400)
    error_of(client.post(P.commit("db", "t"), json={"snapshot": {"id": 2}}), 400)
    assert ids_of(catalog) == [1]
    assert commit(client, next_one, table_id, base.uuid).json() == {"success": True}
    assert ids_of(catalog) == [1, 2]


def test_a_table_dropped_and_created_again_has_another_id(table):
    catalog, client, table_id = table
    first = built_snapshot(catalog, "db.t", [1])
    assert commit(client, first, table_id).json()["success"]
    # through the server: the table it had loaded is forgotten with the drop
    assert client.delete(P.table("db", "t")).status_code == 200
    assert create_table(client).status_code == 200
    second_id = client.get(P.table("db", "t")).json()["id"]
    assert second_id != table_id
    again = built_snapshot(catalog, "db.t", [2])
    error_of(commit(client, again, table_id), 404, "TABLE", "db.t")
    assert commit(client, again, second_id).json()["success"]
    # behind the server's back (the same warehouse through the directory catalog): seen too
    catalog.drop_table("db.t")
    error_of(client.get(P.table("db", "t")), 404, "TABLE", "db.t")
    time.sleep(0.002)  # another creation time
    catalog.create_table("db.t", SCHEMA, primary_key="id", options={"bucket": "1"})
    third_id = client.get(P.table("db", "t")).json()["id"]
    assert third_id not in (table_id, second_id)
    last = built_snapshot(catalog, "db.t", [3])
    error_of(commit(client, last, second_id), 404, "TABLE", "db.t")
    assert commit(client, last, third_id).json()["success"]
    assert ids_of(catalog) == [3]
    # a schema added behind its back is known at the next commit
    catalog.load_table("db.t").alter(tarn.SetOption("snapshot.num-retained.max", "70"))
    evolved = built_snapshot(catalog, "db.t", [4])
    assert evolved.schema_id == 1
    assert commit(client, evolved, third_id, last.uuid).json()["success"]
    assert ids_of(catalog) == [3, 4]


def test_delta_files_are_read_only_when_asked_for(table):
    from tarn.meta.manifest import ADD, DELETE
    from tarn.server.commits import DeltaFiles

    catalog, client, table_id = table
    snapshot = built_snapshot(catalog, "db.t", [1, 2])
    context = catalog.load_table("db.t").core
    delta = DeltaFiles(context.manifests(), snapshot.delta_manifest_list)
    added, removed = delta.names(ADD), delta.names(DELETE)
    written = {e.file.file_name for e in context.manifests().live_entries(snapshot)}
    assert len(written) == 1 and set(added) == written and not removed and len(removed) == 0
    assert added & written == written and (added & {"other"}) == set() and next(iter(written)) in added
    # a delta manifest list that is not there is read (and fails) only when asked for
    gone = DeltaFiles(context.manifests(), "manifest-list-missing").names(ADD)
    with pytest.raises(Exception):
        bool(gone)


def test_concurrent_commits_to_one_table_are_serialised(table):
    catalog, _, table_id = table
    url = str(_.base_url)
    writers, landed, errors = 4, [], []

    def writer(n):
        with httpx.Client(base_url=url, headers=AUTH, timeout=60) as own:
            try:
                for _attempt in range(50):
                    snapshot = built_snapshot(catalog, "db.t", [n])
                    latest = catalog.load_table("db.t").latest_snapshot()
                    base_uuid = latest.uuid if latest is not None and latest.id == snapshot.id - 1 else None
                    if commit(own, snapshot, table_id, base_uuid).json()["success"]:
                        landed.append(snapshot.id)
                        return
                errors.append(f"writer {n} never landed")
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(repr(exc))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert sorted(landed) == list(range(1, writers + 1))  # each id landed once
    assert ids_of(catalog) == list(range(writers))
    assert [s.id for s in catalog.load_table("db.t").snapshots()] == list(range(1, writers + 1))


def test_serves_a_jdbc_catalog_and_commits_through_its_commit_point(tmp_path):
    from tarn.catalog.jdbc import JdbcCatalog

    catalog = JdbcCatalog({"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path}/c.db",
                           "warehouse": str(tmp_path / "wh")}, "jdbc-test")
    with ServerThread(catalog, [TOKEN]) as server, httpx.Client(base_url=server.url, headers=AUTH) as client:
        create_db(client)
        assert create_table(client).status_code == 200
        error_of(create_table(client), 409, "TABLE", "db.t")
        table_id = client.get(P.table("db", "t")).json()["id"]
        first, rival = built_snapshot(catalog, "db.t", [1]), built_snapshot(catalog, "db.t", [2])
        assert commit(client, first, table_id).json() == {"success": True}
        assert commit(client, rival, table_id).json() == {"success": False}
        assert ids_of(catalog) == [1]
        assert client.delete(P.database("db")).status_code == 200
        assert catalog.list_databases() == []


# ------------------------------------------------------------------------------------ token, partitions


def test_table_token_hands_out_the_configured_options(table):
    _, client, _ = table
    before = int(time.time() * 1000)
    body = client.get(P.token("db", "t")).json()
    assert body["token"] == {"s3.access-key": "AK", "s3.secret-key": "SK"}
    assert before + 59_000 <= body["expiresAt"] <= int(time.time() * 1000) + 61_000
    error_of(client.get(P.token("db", "nope")), 404, "TABLE", "db.nope")


def test_partitions_list_from_the_latest_snapshot(served):
    catalog, client = served
    create_db(client)
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    assert create_table(client, "pt", schema=schema, partition_keys=["p"], primary_keys=["id", "p"]).status_code == 200
    assert client.get(P.partitions("db", "pt")).json()["partitions"] == []
    catalog.load_table("db.pt").write(pa.table({"id": [1, 2, 3], "p": ["a", "b", "b"]}, schema=schema))
    parts = client.get(P.partitions("db", "pt")).json()["partitions"]
    assert [(x["spec"], x["recordCount"], x["fileCount"]) for x in parts] == [({"p": "a"}, 1, 1), ({"p": "b"}, 2, 1)]
    assert all(x["fileSizeInBytes"] > 0 and x["totalBuckets"] == 1 for x in parts)
    page = client.get(P.partitions("db", "pt"), params={"maxResults": 1}).json()
    assert [x["spec"] for x in page["partitions"]] == [{"p": "a"}] and page["nextPageToken"] == "p=a"
    assert [x["spec"] for x in client.get(P.partitions("db", "pt"), params={"partitionNamePattern": "p=b%"})
            .json()["partitions"]] == [{"p": "b"}]
    error_of(client.get(P.partitions("db", "nope")), 404, "TABLE", "db.nope")


# ------------------------------------------------------------------------------------ tags, branches, rollback


def test_tags(table):
    catalog, client, _ = table
    t = catalog.load_table("db.t")
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    assert client.post(P.tags("db", "t"), json={"tagName": "v1", "snapshotId": 1}).status_code == 200
    assert client.post(P.tags("db", "t"), json={"tagName": "v2"}).status_code == 200
    error_of(client.post(P.tags("db", "t"), json={"tagName": "v1"}), 409, "TAG", "v1")
    assert client.post(P.tags("db", "t"), json={"tagName": "v1", "ignoreIfExists": True}).status_code == 200
    error_of(client.post(P.tags("db", "t"), json={"tagName": "v9", "snapshotId": 9}), 404, "SNAPSHOT", "9")
    assert [tag.snapshot_id for tag in catalog.load_table("db.t").list_tags()] == [1, 2]
    assert client.get(P.tags("db", "t")).json() == {"tags": ["v1", "v2"], "nextPageToken": None}
    assert client.get(P.tags("db", "t"), params={"maxResults": 1}).json() == {"tags": ["v1"], "nextPageToken": "v1"}
    got = client.get(P.tag("db", "t", "v1")).json()
    assert got["tagName"] == "v1" and got["snapshot"]["id"] == 1
    error_of(client.get(P.tag("db", "t", "nope")), 404, "TAG", "nope")
    assert client.delete(P.tag("db", "t", "v1")).status_code == 200
    error_of(client.delete(P.tag("db", "t", "v1")), 404, "TAG", "v1")
    assert [tag.name for tag in catalog.load_table("db.t").list_tags()] == ["v2"]


def test_branches_and_rollback(table):
    catalog, client, table_id = table
    t = catalog.load_table("db.t")
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.create_tag("v1")
    assert client.post(P.branches("db", "t"), json={"branch": "dev", "fromTag": "v1"}).status_code == 200
    error_of(client.post(P.branches("db", "t"), json={"branch": "dev"}), 409, "BRANCH", "dev")
    error_of(client.post(P.branches("db", "t"), json={"branch": "x", "fromTag": "nope"}), 404, "TAG", "nope")
    assert client.get(P.branches("db", "t")).json() == {"branches": ["dev"]}
    # a branch is a table `t$branch_dev`: committed to through the same endpoint
    branch = client.get(P.table("db", "t$branch_dev")).json()
    branch_id = branch["id"]
    assert branch["path"] == t.location  # the table's directory, as Java answers for a branch
    snapshot = built_snapshot(catalog, "db.t$branch_dev", [2])
    # its base (the tagged snapshot) has a uuid the request does not name: lost
    assert commit(client, snapshot, branch_id, None, table="t$branch_dev").json() == {"success": False}
    latest = catalog.load_table("db.t$branch_dev").latest_snapshot()
    assert commit(client, snapshot, branch_id, latest.uuid, table="t$branch_dev").json() == {"success": True}
    assert ids_of(catalog, "db.t$branch_dev") == [1, 2] and ids_of(catalog) == [1]
    assert client.post(P.branch("db", "t", "dev") + "/forward", json={}).status_code == 200
    assert ids_of(catalog) == [1, 2]
    error_of(client.post(P.branch("db", "t", "nope") + "/forward", json={}), 404, "BRANCH", "nope")
    assert client.delete(P.branch("db", "t", "dev")).status_code == 200
    error_of(client.delete(P.branch("db", "t", "dev")), 404, "BRANCH", "dev")

    assert client.post(P.rollback("db", "t"), json={"instant": {"type": "tag", "tagName": "v1"}}).status_code == 200
    assert ids_of(catalog) == [1]
    error_of(client.post(P.rollback("db", "t"), json={"instant": {"type": "snapshot", "snapshotId": 99}}), 404,
             "SNAPSHOT", "99")
    error_of(client.post(P.rollback("db", "t"), json={"instant": {"type": "tag", "tagName": "no"}}), 404, "TAG", "no")
    error_of(client.post(P.rollback("db", "t"), json={"instant": {"type": "when"}}), 400)


# ------------------------------------------------------------------------------------ the wire format


def test_names_travel_as_one_encoded_segment(served):
    catalog, client = served
    for name in ["a b", "x+y", "pct%20", "tilde~"]:
        create_db(client, name)
        assert client.get(P.database(name)).json()["name"] == name
    assert sorted(catalog.list_databases()) == sorted(["a b", "x+y", "pct%20", "tilde~"])
    assert P.database("a b/c~") == "/v1/tarn/databases/a+b%2Fc%7E"
    assert wire.decode_name("a+b%2Fc%7E") == "a b/c~"


def test_wire_round_trips_and_errors():
    changes = [tarn.SetOption("a", "1"), tarn.RemoveOption("b"), tarn.UpdateComment(None),
               tarn.AddColumn(("r", "x"), "INT", "c", ("before", "y")), tarn.AddColumn("z", "STRING"),
               tarn.RenameColumn("z", "w"), tarn.DropColumn("w"), tarn.UpdateColumnComment("x", "n"),
               tarn.UpdateColumnType("x", "BIGINT", True), tarn.UpdateColumnNullability("x", False)]
    assert [wire.change_from(wire.change_body(c)) for c in changes] == changes
    with pytest.raises(InvalidArgument, match="addColumn"):
        wire.change_from({"action": "addColumn", "dataType": "INT"})
    assert wire.like_prefix("ab\\%%")("ab%x") and not wire.like_prefix("ab\\%%")("abx")
    assert wire.like_prefix("a_c")("abc") and not wire.like_prefix("a_c")("abcd")
    error = wire.ErrorBody.of({"message": "gone", "resourceType": "TABLE", "resourceName": "db.t", "code": 404}, 404)
    raised = wire.exception_for(error, "prod")
    assert isinstance(raised, tarn.errors.TableNotFound) and "prod" in str(raised) and "db.t" in str(raised)
    assert isinstance(wire.exception_for(wire.ErrorBody.of("<html>", 502), "prod"), tarn.errors.StorageError)
    assert isinstance(wire.exception_for(wire.ErrorBody(409, "x", "TABLE", "t"), "c"), tarn.errors.TableAlreadyExists)
    assert isinstance(wire.exception_for(wire.ErrorBody(404, "x", "SNAPSHOT", "3"), "c"),
                      tarn.errors.SnapshotNotFound)


# ------------------------------------------------------------------------------------ settings and running


def test_settings_refuse_no_tokens_and_read_token_files(tmp_path):
    with pytest.raises(InvalidArgument, match="token"):
        ServerSettings(frozenset())
    with pytest.raises(InvalidArgument, match="max_body_bytes"):
        ServerSettings(frozenset({"a"}), max_body_bytes=0)
    path = tmp_path / "tokens"
    path.write_text("# ops team\nalpha\n\n  beta  \n")
    assert read_tokens(path) == {"alpha", "beta"}
    path.write_text("# none\n")
    with pytest.raises(InvalidArgument, match=str(path)):
        read_tokens(path)


def test_stop_closes_the_server(tmp_path):
    server = ServerThread(tarn.Catalog(str(tmp_path)), [TOKEN]).start()
    assert httpx.get(server.url + "/health").status_code == 200
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/health", timeout=2)


def test_module_entry_serves_until_sigterm(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    port = ServerThread(tarn.Catalog(str(tmp_path / "x")), [TOKEN]).port  # a free port
    process = subprocess.Popen([sys.executable, "-m", "tarn.server", "--warehouse", str(tmp_path / "wh"),
                                "--token-file", str(tokens), "--port", str(port), "--log-level", "warning"],
                               stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert httpx.post(url + P.databases(), json={"name": "db"}, headers=AUTH).status_code == 200
        assert os.path.isdir(tmp_path / "wh" / "db.db")
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it shut down
    finally:
        process.kill()
    log = process.stderr.read()
    assert "tarn serve: catalog" in log and "Traceback" not in log


def test_module_entry_refuses_to_start_without_tokens(tmp_path, monkeypatch, capsys):
    from tarn.server.__main__ import main

    monkeypatch.delenv("TARN_SERVE_TOKEN", raising=False)
    assert main(["--warehouse", str(tmp_path)]) == 2
    assert "bearer token" in capsys.readouterr().err
    (tmp_path / "empty").write_text("\n")
    assert main(["--warehouse", str(tmp_path), "--token-file", str(tmp_path / "empty")]) == 2
    assert "holds no token" in capsys.readouterr().err
    assert main(["--warehouse", str(tmp_path), "--token", "a", "--data-token", "novalue"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
