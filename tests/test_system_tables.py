"""System tables: Paimon's column names, types and nullability, and their values."""

import datetime as dt
import json
import os
import uuid
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from tarn.errors import InvalidArgument
from tarn.meta.manifest import ADD, HASH_INDEX, IndexManifestEntry
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.ops import tags as T
from tarn.store.consumers import ConsumerStore
from tarn.ops.system_tables import SYSTEM_TABLES, cast_text, internal_text, java_double_text, system_table
from tarn.types import DATE, DECIMAL, FLOAT, TIMESTAMP
from tests.helpers import ORDERS_SCHEMA, orders_rows

COLUMNS = {
    "snapshots": ["snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind", "commit_time",
                  "base_manifest_list", "delta_manifest_list", "changelog_manifest_list", "total_record_count",
                  "delta_record_count", "changelog_record_count", "watermark", "next_row_id", "operation",
                  "writer_version"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "comment", "update_time"],
    "options": ["key", "value"],
    "tags": ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count", "create_time",
             "time_retained"],
    "files": ["partition", "bucket", "file_path", "file_format", "schema_id", "level", "record_count",
              "file_size_in_bytes", "min_key", "max_key", "null_value_counts", "min_value_stats",
              "max_value_stats", "min_sequence_number", "max_sequence_number", "creation_time",
              "deleteRowCount", "file_source", "first_row_id", "write_cols", "deleted_row_count"],
    "manifests": ["file_name", "file_size", "num_added_files", "num_deleted_files", "schema_id",
                  "min_partition_stats", "max_partition_stats", "min_row_id", "max_row_id"],
    "partitions": ["partition", "record_count", "file_size_in_bytes", "file_count", "last_update_time",
                   "created_at", "created_by", "updated_by", "options", "total_buckets", "done",
                   "deleted_record_count"],
    "buckets": ["partition", "bucket", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "consumers": ["consumer_id", "next_snapshot_id"],
    "branches": ["branch_name", "create_time"],
    "table_indexes": ["partition", "bucket", "index_type", "file_name", "file_size", "row_count", "dv_ranges",
                      "row_range_start", "row_range_end", "index_field_id", "index_field_name"],
    "statistics": ["snapshot_id", "schema_id", "mergedRecordCount", "mergedRecordSize", "colstat"],
}


@pytest.fixture
def orders(catalog):
    t = catalog.create_table("db.orders", schema=ORDERS_SCHEMA, primary_key=["dt", "id"],
                             partition_keys=["dt"], options={"bucket": "2"})
    t.write(orders_rows(["d1", "d1", "d2"], [1, 2, 3], ["a", "b", None], [5, 6, 7]))
    t.write(orders_rows(["d2"], [4], ["z"], [9]))
    return t


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_columns(orders, name):
    got = system_table(orders, name)
    assert got.column_names == COLUMNS[name]
    assert system_table(orders, "$" + name).schema == got.schema


def test_types_and_nullability(orders):
    snaps = system_table(orders, "snapshots").schema
    assert snaps.field("snapshot_id").type == pa.int64() and not snaps.field("snapshot_id").nullable
    assert snaps.field("commit_time").type == pa.timestamp("ms") and not snaps.field("commit_time").nullable
    assert snaps.field("watermark").nullable
    files = system_table(orders, "files").schema
    assert files.field("bucket").type == pa.int32() and files.field("write_cols").type == pa.list_(pa.string())
    assert system_table(orders, "partitions").schema.field("done").type == pa.bool_()


def test_unknown_system_table(orders):
    with pytest.raises(InvalidArgument, match="audit"):
        system_table(orders, "$audit")
    assert set(SYSTEM_TABLES) - {"row_tracking"} == set(COLUMNS)  # row_tracking: tests/test_row_tracking.py


def test_snapshots_values(orders):
    got = system_table(orders, "snapshots").to_pylist()
    assert [r["snapshot_id"] for r in got] == [1, 2]
    first = orders.snapshot(1)
    assert got[0]["commit_kind"] == "APPEND" and got[0]["total_record_count"] == 3
    assert got[0]["base_manifest_list"] == first.base_manifest_list
    assert got[0]["commit_time"] == dt.datetime.fromtimestamp(first.time_millis / 1000).replace(
        microsecond=(first.time_millis % 1000) * 1000)


def test_schemas_and_options(orders):
    row = system_table(orders, "schemas").to_pylist()[0]
    assert json.loads(row["fields"])[0] == {"id": 0, "name": "dt", "type": "STRING NOT NULL"}
    assert row["partition_keys"] == '["dt"]' and row["primary_keys"] == '["dt","id"]'
    assert row["options"] == '{"bucket":"2"}' and row["comment"] is None
    assert system_table(orders, "options").to_pylist() == [{"key": "bucket", "value": "2"}]


def test_tags_and_consumers(orders):
    T.create_tag(orders, "b", 1, time_retained="1 d")
    T.create_tag(orders, "a")
    got = system_table(orders, "tags").to_pylist()
    assert [(r["tag_name"], r["snapshot_id"], r["record_count"]) for r in got] == [("a", 2, 4), ("b", 1, 3)]
    assert got[0]["create_time"] is not None and got[0]["time_retained"] is None
    assert got[1]["time_retained"] == "PT24H" and got[1]["create_time"] is not None
    ConsumerStore(orders.file_io, orders.root).write("job", 2)
    assert system_table(orders, "consumers").to_pylist() == [{"consumer_id": "job", "next_snapshot_id": 2}]


def test_files_manifests_partitions_buckets(orders):
    files = system_table(orders, "files").to_pylist()
    assert sum(r["record_count"] for r in files) == 4
    assert all(os.path.exists(r["file_path"]) and r["file_format"] == "parquet" for r in files)
    assert {r["partition"] for r in files} == {"{d1}", "{d2}"}
    one = next(r for r in files if r["partition"] == "{d1}")  # ids 1, 2 hash to bucket 0 (FORMAT.md 6)
    assert (one["bucket"], one["min_key"], one["max_key"]) == (0, "[1]", "[2]")  # trimmed key: id
    assert one["null_value_counts"] == "{dt=0, id=0, item=0, qty=0}"
    assert one["min_value_stats"] == "{dt=d1, id=1, item=a, qty=5}"
    assert one["file_source"] == "APPEND" and one["level"] == 0
    manifests = system_table(orders, "manifests").to_pylist()
    assert sum(r["num_added_files"] for r in manifests) == len(files)
    assert manifests[0]["min_partition_stats"] == "{d1}" and manifests[0]["max_partition_stats"] == "{d2}"
    parts = system_table(orders, "partitions").to_pylist()
    assert [(r["partition"], r["record_count"], r["total_buckets"], r["done"]) for r in parts] == [
        ("dt=d1", 2, 2, False), ("dt=d2", 2, 2, False)]
    assert all(r["deleted_record_count"] == 0 and r["last_update_time"] is not None for r in parts)
    buckets = system_table(orders, "buckets").to_pylist()
    assert sum(r["record_count"] for r in buckets) == 4
    assert [(r["partition"], r["bucket"]) for r in buckets] == sorted((r["partition"], r["bucket"]) for r in buckets)


def test_empty_table(catalog):
    t = catalog.create_table("db.empty", schema=ORDERS_SCHEMA)
    for name in COLUMNS:
        assert system_table(t, name).num_rows == (1 if name == "schemas" else 0)


def test_java_text_forms():
    assert java_double_text(1e7) == "1.0E7" and java_double_text(0.001) == "0.001"
    assert java_double_text(1e-4) == "1.0E-4" and java_double_text(0.1, single=True) == "0.1"
    assert internal_text(dt.date(2024, 1, 1), DATE()) == "19723"
    assert internal_text(dt.datetime(2024, 1, 1), TIMESTAMP(3)) == "2024-01-01T00:00"
    assert cast_text(dt.date(2024, 1, 1), DATE()) == "2024-01-01"
    assert cast_text(dt.datetime(2024, 1, 1, 1, 2, 3), TIMESTAMP(3)) == "2024-01-01 01:02:03.000"
    import decimal
    assert cast_text(decimal.Decimal("12.30"), DECIMAL(10, 2)) == "12.30"
    assert internal_text(2.5, FLOAT()) == "2.5"


# ---------------------------------------------------------------------------------------------
# deletion vectors: `$table_indexes` and `$files.deleted_row_count` over hand-made index files


def commit_index_files(table, entries):
    """A snapshot on top of the latest with the same data files and `entries` as its index
    manifest (what a deletion-vector commit leaves, made by hand)."""
    latest = table.latest_snapshot()
    name = table.manifests().write_index_manifest(entries)
    snapshot = replace(latest, id=latest.id + 1, index_manifest=name, uuid=str(uuid.uuid4()))
    assert table.snapshot_store.create(snapshot)
    return snapshot


def test_table_indexes_and_deleted_row_counts(orders):
    files = system_table(orders, "files").to_pylist()
    assert all(r["deleted_row_count"] is None for r in files)  # no deletion vectors here
    assert system_table(orders, "table_indexes").num_rows == 0
    by_place = {}
    for meta in orders.live_entries(orders.latest_snapshot()):
        by_place.setdefault((meta.partition, meta.bucket), []).append(meta)
    (d1_part, d1_bucket), = [k for k, v in by_place.items() if any(m.file.row_count == 2 for m in v)]
    d1_file = by_place[(d1_part, d1_bucket)][0].file.file_name
    d2 = sorted(k for k in by_place if k[0] != d1_part)[0]
    d2_file = by_place[d2][0].file.file_name
    vectors = DeletionVectorFiles(orders.file_io, orders.root)
    first = vectors.write(d1_part, d1_bucket, {d1_file: np.array([1])}, bitmap64=False)
    second = vectors.write(d2[0], d2[1], {d2_file: np.array([0])}, bitmap64=True)
    second = replace(second, dv_ranges=tuple(replace(r, cardinality=None) for r in second.dv_ranges))
    hash_index = IndexManifestEntry(ADD, d1_part, d1_bucket, HASH_INDEX, "index-hash-0", 8, 2)
    global_index = IndexManifestEntry(ADD, d1_part, 0, "btree", "index-global-0", 64, 3, global_index={
        "_ROW_RANGE_START": 0, "_ROW_RANGE_END": 9, "_INDEX_FIELD_ID": 3, "_EXTRA_FIELD_IDS": [1],
        "_INDEX_META": None, "_SOURCE_META": None})
    commit_index_files(orders, [first, second, hash_index, global_index])

    indexes = system_table(orders, "table_indexes")
    assert indexes.schema.field("dv_ranges").type.value_type == pa.struct([
        pa.field("f0", pa.string(), nullable=False), pa.field("f1", pa.int32(), nullable=False),
        pa.field("f2", pa.int32(), nullable=False), pa.field("_CARDINALITY", pa.int64())])
    assert not indexes.schema.field("bucket").nullable and indexes.schema.field("partition").nullable
    rows = indexes.to_pylist()
    assert rows == [
        {"partition": "{d1}", "bucket": d1_bucket, "index_type": "DELETION_VECTORS",
         "file_name": first.file_name, "file_size": first.file_size, "row_count": 1,
         "dv_ranges": [{"f0": d1_file, "f1": 1, "f2": 22, "_CARDINALITY": 1}],
         "row_range_start": None, "row_range_end": None, "index_field_id": None, "index_field_name": None},
        {"partition": "{d2}", "bucket": d2[1], "index_type": "DELETION_VECTORS",
         "file_name": second.file_name, "file_size": 43, "row_count": 1,
         "dv_ranges": [{"f0": d2_file, "f1": 1, "f2": 42, "_CARDINALITY": None}],
         "row_range_start": None, "row_range_end": None, "index_field_id": None, "index_field_name": None},
        {"partition": "{d1}", "bucket": d1_bucket, "index_type": "HASH", "file_name": "index-hash-0",
         "file_size": 8, "row_count": 2, "dv_ranges": None, "row_range_start": None, "row_range_end": None,
         "index_field_id": None, "index_field_name": None},
        {"partition": "{d1}", "bucket": 0, "index_type": "btree", "file_name": "index-global-0",
         "file_size": 64, "row_count": 3, "dv_ranges": None, "row_range_start": 0, "row_range_end": 9,
         "index_field_id": 3, "index_field_name": "qty,id"},
    ]
    counts = {r["file_path"].rsplit("/", 1)[-1]: r["deleted_row_count"] for r in system_table(orders, "files").to_pylist()}
    assert counts[d1_file] == 1  # from the manifest's cardinality
    assert counts[d2_file] == 1  # no cardinality: the vector was read
    assert all(v == 0 for k, v in counts.items() if k not in (d1_file, d2_file))
    assert len(counts) == 3


def test_deleted_row_count_is_zero_in_a_deletion_vector_table_without_vectors(catalog):
    t = catalog.create_table("db.dv", schema=ORDERS_SCHEMA, options={"deletion-vectors.enabled": "true"})
    t.write(orders_rows(["d1", "d2"], [1, 2], ["a", "b"], [5, 6]))
    assert [r["deleted_row_count"] for r in system_table(t, "files").to_pylist()] == [0]
    assert system_table(t, "table_indexes").num_rows == 0
