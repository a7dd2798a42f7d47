"""The core table cases on a local warehouse and on S3 (moto's server, tests/s3server.py).

The tests are the existing ones, imported: collected here they take this module's `catalog`
fixture, so each runs once per warehouse. Only store-agnostic tests are listed (no os.path on
table files). On S3 every commit goes through the conditional PUT.
"""

from __future__ import annotations

import multiprocessing
import time

import pyarrow as pa
import pytest

import tarn
from tarn.meta.schema import AddColumn
from tarn.types import STRING
from tests.helpers import orders_rows, rows_by_key

from tests.test_table import (  # noqa: F401  (collected here, against both warehouses)
    test_pk_upsert_and_delete, test_overwrite_whole_static_dynamic, test_predicates_and_projection,
    test_partition_pruning_skips_files, test_empty_table_scan, test_target_file_size_rolls_files,
    test_append_table_fixed_bucket_uses_paimon_hash)
from tests.test_lsm import test_partition_filtered_compaction  # noqa: F401
from tests.test_tags import test_create_list_rename_delete, test_time_travel_by_id_tag_and_timestamp  # noqa: F401
from tests.test_rollback import test_rollback_to_latest_is_a_no_op  # noqa: F401
from tests.test_expire import test_expire_limit  # noqa: F401
from tests.test_evolution_table import test_primary_key_upserts_across_the_change  # noqa: F401
from tests.test_commit import (  # noqa: F401
    test_conflict_deleting_already_removed_file, test_streaming_identifier_is_idempotent,
    test_uncertain_publish_settled_by_uuid)


FAR_FUTURE = int(time.time() * 1000) + 10**9


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def warehouse(request, tmp_path):
    """(warehouse URI, storage options): a local directory or a fresh prefix on the S3 server."""
    if request.param == "local":
        return str(tmp_path / "warehouse"), None
    server = request.getfixturevalue("s3_server")
    return server.new_prefix(), server.storage_options


@pytest.fixture
def catalog(warehouse):
    uri, storage_options = warehouse
    return tarn.Catalog(uri, storage_options)


def orders(catalog):
    return catalog.create_table("db.t", schema=pa.schema([("dt", pa.string()), ("id", pa.int64()),
                                                          ("item", pa.string()), ("qty", pa.int32())]),
                                primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})


def test_full_compaction_then_read(catalog):
    t = orders(catalog)
    for i in range(4):
        t.write(orders_rows(["d1", "d2"], [i, i], [f"v{i}", f"w{i}"], [i, i]))
    t.delete(pa.table({"dt": ["d1"], "id": [0]}))
    t.compact(full=True)
    assert t.latest_snapshot().commit_kind == "COMPACT"
    got = rows_by_key(t.scan().to_arrow(), ["dt", "id"])
    assert sorted(got) == [("d1", 1), ("d1", 2), ("d1", 3), ("d2", 0), ("d2", 1), ("d2", 2), ("d2", 3)]
    assert got[("d2", 3)]["item"] == "w3"


def test_schema_alter_and_reopen_by_uri(catalog, warehouse):
    uri, storage_options = warehouse
    t = orders(catalog)
    t.write(orders_rows(["d1"], [1], ["a"], [1]))
    t.alter(AddColumn(("note",), STRING()))
    reopened = tarn.load_table(f"{uri}/db.db/t", storage_options)
    reopened.write(pa.table({"dt": ["d1"], "id": [2], "item": ["b"], "qty": [2], "note": ["new"]}))
    rows = rows_by_key(reopened.scan().to_arrow(), ["dt", "id"])
    assert rows[("d1", 1)]["note"] is None and rows[("d1", 2)]["note"] == "new"
    assert catalog.list_tables("db") == ["t"]


def test_concurrent_writers_all_land(catalog):
    """Threads committing to one table at once: every commit lands, once (on S3: If-None-Match)."""
    t = orders(catalog)
    from tests.test_object_store import race
    race(lambda i: catalog.load_table("db.t").write(orders_rows([f"d{i}"], [i])), 5)
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5]
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3, 4]


def _write_in_process(uri: str, storage_options, i: int, barrier) -> None:
    table = tarn.Catalog(uri, storage_options).load_table("db.t")
    barrier.wait()
    table.write(orders_rows([f"p{i}"], [i]))


def test_concurrent_processes_all_land(catalog, warehouse):
    t = orders(catalog)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(3)
    workers = [context.Process(target=_write_in_process, args=(*warehouse, i, barrier)) for i in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2]


def data_files(t) -> set[str]:
    return {i.path for i in t.file_io.list_files(t.root) if "/bucket-" in i.path}


def test_expire_tag_and_rollback(catalog):
    """Overwrites make files unreachable: expiry deletes them but keeps a tag's; a rollback to
    the tag then reads the tagged rows, and orphan removal finds nothing left behind."""
    t = orders(catalog)
    for i in range(5):
        t.overwrite(orders_rows(["d1"], [i], [f"v{i}"], [i]))
    t.create_tag("keep", 2)
    before = data_files(t)
    assert t.expire_snapshots(retain_min=1, older_than_ms=FAR_FUTURE) == 4
    after = data_files(t)
    assert len(before - after) == 3 and len(after) == 2  # snapshots 1, 3, 4 gone; the tag's stays
    assert [r["id"] for r in t.scan(tag="keep").to_arrow().to_pylist()] == [1]
    t.rollback_to("keep")
    assert t.latest_snapshot().id == 2
    assert [r["item"] for r in t.scan().to_arrow().to_pylist()] == ["v1"]
    assert t.remove_orphan_files(older_than=FAR_FUTURE) == []
