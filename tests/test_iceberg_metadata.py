"""Iceberg metadata beside tarn tables (tarn/iceberg/): the files on disk checked against the
Iceberg spec and Java Paimon's layout (Avro schemas and field ids, metadata JSON keys),
incremental manifests, atomic publication, repair after a failed callback, expiry, orphan
removal and the refusals. Engines reading the result are cross-checked elsewhere."""

from __future__ import annotations

import datetime as dt
import json
import os
import struct
import time

import fastavro
import pyarrow as pa
import pytest

import tarn
from tarn.errors import InvalidOption, UnsupportedFeature
from tarn.iceberg import config_of, metadata_dir
from tarn.iceberg.conversions import to_bytes, unscaled_bytes
from tarn.types import DATE, DECIMAL, INT, TIMESTAMP

SCHEMA = pa.schema([("dt", pa.date32()), ("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
ICEBERG = {"metadata.iceberg.storage": "table-location"}
DAY1, DAY2 = dt.date(2026, 1, 1), dt.date(2026, 1, 2)


def rows(ids, day=DAY1):
    return pa.table({"dt": [day] * len(ids), "id": ids, "name": [f"n{i}" if i % 2 else None for i in ids],
                     "amount": [i + 0.5 for i in ids]}, schema=SCHEMA)


def meta_dir(table) -> str:
    return os.path.join(table.root, "metadata")


def metadata(table, version=None) -> dict:
    directory = meta_dir(table)
    version = version or int(open(os.path.join(directory, "version-hint.text")).read())
    return json.load(open(os.path.join(directory, f"v{version}.metadata.json")))


def avro(path: str):
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return json.loads(reader.metadata["avro.schema"]), reader.codec, list(reader)


def current_list(table) -> list[dict]:
    meta = metadata(table)
    current = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    return avro(current["manifest-list"])[2]


def live_paths(table) -> set[str]:
    out = set()
    for m in current_list(table):
        for e in avro(m["manifest_path"])[2]:
            if e["status"] != 2 and e["data_file"]["content"] == 0:
                out.add(e["data_file"]["file_path"])
    return out


def paimon_paths(table) -> set[str]:
    core = table.core
    return {os.path.join(core.bucket_dir(core.schema(), e.partition, e.bucket), e.file.file_name)
            for e in core.live_entries(core.latest_snapshot())}


def field_ids(schema) -> dict:
    """name path -> field-id of every field of an Avro record schema (nested records too)."""
    out = {}

    def walk(record, prefix):
        for f in record["fields"]:
            out[prefix + f["name"]] = f.get("field-id")
            t = f["type"]
            t = t[1] if isinstance(t, list) else t
            if isinstance(t, dict) and t.get("type") == "record":
                walk(t, prefix + f["name"] + ".")
            if isinstance(t, dict) and t.get("type") == "array" and isinstance(t["items"], dict):
                walk(t["items"], prefix + f["name"] + ".")
    walk(schema, "")
    return out


# ------------------------------------------------------------------ what is on disk


def test_append_table_metadata_follows_the_spec(catalog):
    table = catalog.create_table("db.t", SCHEMA, partition_keys="dt", options=ICEBERG)
    table.write(rows([1, 2]))
    table.write(rows([3], DAY2))
    directory = meta_dir(table)
    names = sorted(os.listdir(directory))
    assert "v2.metadata.json" in names and "version-hint.text" in names
    assert "v1.metadata.json" not in names  # delete-after-commit, previous-versions-max 0
    assert open(os.path.join(directory, "version-hint.text")).read() == "2"
    meta = metadata(table, 2)
    assert list(meta) == ["format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms",
                          "last-column-id", "schemas", "current-schema-id", "partition-specs", "default-spec-id",
                          "last-partition-id", "sort-orders", "default-sort-order-id", "snapshots",
                          "current-snapshot-id", "properties", "refs"]
    assert meta["format-version"] == 2 and meta["location"] == table.root
    assert meta["last-sequence-number"] == 2 and meta["current-snapshot-id"] == 2
    assert meta["schemas"] == [{"type": "struct", "schema-id": 0, "fields": [
        {"id": 0, "name": "dt", "required": False, "type": "date"},
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
        {"id": 3, "name": "amount", "required": False, "type": "double"}]}]
    assert meta["partition-specs"] == [{"spec-id": 0, "fields": [
        {"name": "dt", "transform": "identity", "source-id": 0, "field-id": 1000}]}]
    assert meta["last-partition-id"] == 1000 and meta["last-column-id"] == 3
    assert meta["sort-orders"] == [{"order-id": 0, "fields": []}]
    first, second = meta["snapshots"]
    assert "parent-snapshot-id" not in first and second["parent-snapshot-id"] == 1
    assert second["summary"]["operation"] == "append"
    assert second["summary"]["total-records"] == "3" and second["summary"]["total-data-files"] == "2"
    assert live_paths(table) == paimon_paths(table)


def test_manifest_avro_schemas_carry_icebergs_field_ids(catalog):
    table = catalog.create_table("db.t", SCHEMA, partition_keys="dt", options=ICEBERG)
    table.write(rows([1, 2, 3]))
    list_schema, codec, metas = avro(metadata(table)["snapshots"][0]["manifest-list"])
    assert codec == "snappy"
    assert list_schema["name"] == "manifest_file"
    assert field_ids(list_schema) == {
        "manifest_path": 500, "manifest_length": 501, "partition_spec_id": 502, "content": 517,
        "sequence_number": 515, "min_sequence_number": 516, "added_snapshot_id": 503, "added_files_count": 504,
        "existing_files_count": 505, "deleted_files_count": 506, "added_rows_count": 512,
        "existing_rows_count": 513, "deleted_rows_count": 514, "partitions": 507,
        "partitions.contains_null": 509, "partitions.contains_nan": 518, "partitions.lower_bound": 510,
        "partitions.upper_bound": 511}
    partitions_type = list_schema["fields"][-1]["type"][1]
    assert partitions_type["element-id"] == 508 and partitions_type["items"]["name"] == "r508"
    (meta,) = metas
    assert (meta["content"], meta["sequence_number"], meta["added_snapshot_id"], meta["added_files_count"],
            meta["added_rows_count"]) == (0, 1, 1, 1, 3)
    days = (DAY1 - dt.date(1970, 1, 1)).days
    assert meta["partitions"] == [{"contains_null": False, "contains_nan": False,
                                   "lower_bound": struct.pack("<i", days), "upper_bound": struct.pack("<i", days)}]
    entry_schema, codec, entries = avro(meta["manifest_path"])
    assert entry_schema["name"] == "manifest_entry" and codec == "snappy"
    ids = field_ids(entry_schema)
    assert {k: ids[k] for k in ("status", "snapshot_id", "sequence_number", "file_sequence_number", "data_file",
                                "data_file.content", "data_file.file_path", "data_file.file_format",
                                "data_file.partition", "data_file.partition.dt", "data_file.record_count",
                                "data_file.file_size_in_bytes", "data_file.null_value_counts",
                                "data_file.lower_bounds", "data_file.upper_bounds",
                                "data_file.referenced_data_file", "data_file.content_offset",
                                "data_file.content_size_in_bytes")} == {
        "status": 0, "snapshot_id": 1, "sequence_number": 3, "file_sequence_number": 4, "data_file": 2,
        "data_file.content": 134, "data_file.file_path": 100, "data_file.file_format": 101,
        "data_file.partition": 102, "data_file.partition.dt": 1000, "data_file.record_count": 103,
        "data_file.file_size_in_bytes": 104, "data_file.null_value_counts": 110, "data_file.lower_bounds": 125,
        "data_file.upper_bounds": 128, "data_file.referenced_data_file": 143, "data_file.content_offset": 144,
        "data_file.content_size_in_bytes": 145}
    data_file_type = entry_schema["fields"][4]["type"]
    null_counts = data_file_type["fields"][6]["type"][1]
    assert null_counts["logicalType"] == "map" and null_counts["items"]["name"] == "k121_v122"
    assert [f["field-id"] for f in null_counts["items"]["fields"]] == [121, 122]
    assert [f["field-id"] for f in data_file_type["fields"][7]["type"][1]["items"]["fields"]] == [126, 127]
    (entry,) = entries
    file = entry["data_file"]
    assert (entry["status"], entry["snapshot_id"], entry["sequence_number"]) == (1, 1, 1)
    assert file["file_format"] == "parquet" and file["record_count"] == 3
    assert file["file_size_in_bytes"] == os.path.getsize(file["file_path"])
    assert file["partition"] == {"dt": DAY1}
    nulls = {p["key"]: p["value"] for p in file["null_value_counts"]}
    lower = {p["key"]: p["value"] for p in file["lower_bounds"]}
    upper = {p["key"]: p["value"] for p in file["upper_bounds"]}
    assert nulls == {0: 0, 1: 0, 2: 1, 3: 0}
    assert lower[1] == struct.pack("<q", 1) and upper[1] == struct.pack("<q", 3)
    assert lower[2] == b"n1" and upper[2] == b"n3"
    assert lower[3] == struct.pack("<d", 1.5) and upper[3] == struct.pack("<d", 3.5)


def test_single_value_serialisation():
    assert to_bytes(INT(), -2) == struct.pack("<i", -2)
    assert to_bytes(DATE(), dt.date(1970, 1, 3)) == b"\x02\x00\x00\x00"
    assert to_bytes(TIMESTAMP(6), dt.datetime(1970, 1, 1, 0, 0, 1, 5)) == struct.pack("<q", 1_000_005)
    assert to_bytes(DECIMAL(10, 2), __import__("decimal").Decimal("-1.28")) == b"\x80"  # -128: one byte
    assert unscaled_bytes(128, 0) == b"\x00\x80" and unscaled_bytes(0, 0) == b"\x00"
    assert unscaled_bytes(-1, 0) == b"\xff" and unscaled_bytes(-129, 0) == b"\xff\x7f"


def test_hadoop_catalog_writes_under_the_warehouse(catalog):
    table = catalog.create_table("db.t", SCHEMA, options={"metadata.iceberg.storage": "hadoop-catalog"})
    table.write(rows([1]))
    warehouse = os.path.dirname(os.path.dirname(table.root))
    directory = os.path.join(warehouse, "iceberg", "db", "t", "metadata")
    assert sorted(n for n in os.listdir(directory) if n.endswith(".json")) == ["v1.metadata.json"]
    assert not os.path.exists(os.path.join(table.root, "metadata"))
    assert metadata_dir(table.root, config_of(table.core.options, "t"), "t") == directory


# ------------------------------------------------------------------ incremental


def test_each_append_adds_one_manifest_and_reuses_the_others(catalog):
    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    lists = []
    for i in range(4):
        table.write(rows([i]))
        lists.append([m["manifest_path"] for m in current_list(table)])
    for before, after in zip(lists, lists[1:]):
        assert after[:-1] == before and len(after) == len(before) + 1
    assert live_paths(table) == paimon_paths(table)


def test_compaction_rewrites_only_manifests_with_removed_files(catalog):
    table = catalog.create_table("db.t", SCHEMA, partition_keys="dt", options=ICEBERG)
    table.write(rows([1]))
    table.write(rows([2], DAY2))
    table.write(rows([3]))
    table.write(rows([5]))
    before = {m["manifest_path"] for m in current_list(table)}
    table.compact(full=True)
    assert live_paths(table) == paimon_paths(table)
    meta = metadata(table)
    assert meta["snapshots"][-1]["summary"]["operation"] == "replace"
    after = current_list(table)
    day2_manifest = [m for m in after if m["manifest_path"] in before]
    assert len(day2_manifest) == 1  # DAY2's single file was not compacted: its manifest is reused
    statuses = sorted(e["status"] for m in after if m["manifest_path"] not in before
                      for e in avro(m["manifest_path"])[2])
    assert statuses == [1, 2, 2, 2]  # the compacted file ADDED, the three inputs DELETED


def test_primary_key_tables_show_only_fully_compacted_files(catalog):
    table = catalog.create_table("db.pk", SCHEMA, primary_key=["id"], options={**ICEBERG, "bucket": "1"})
    table.write(rows([1, 2]))
    # the first publication (no base) shows raw-convertible files, as Java's: one level-0 file
    # alone in its bucket needs no merge
    first = live_paths(table)
    assert first == paimon_paths(table) and len(first) == 1
    table.write(rows([2, 3]))
    assert live_paths(table) == first  # later commits add only fully compacted files
    table.compact(full=True)
    assert live_paths(table) == paimon_paths(table) and len(live_paths(table)) == 1
    table.write(rows([4]))
    assert len(live_paths(table)) == 1
    table.compact(full=True)
    assert live_paths(table) == paimon_paths(table)
    assert metadata(table)["snapshots"][-1]["summary"]["total-records"] == "4"


def test_schema_evolution_adds_iceberg_schemas(catalog):
    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    table.write(rows([1]))
    table.alter(tarn.AddColumn("extra", tarn.types.INT()))
    table.write(pa.table({**rows([2]).to_pydict(), "extra": [7]}))
    meta = metadata(table)
    assert [s["schema-id"] for s in meta["schemas"]] == [0, 1] and meta["current-schema-id"] == 1
    assert meta["schemas"][1]["fields"][-1] == {"id": 4, "name": "extra", "required": False, "type": "int"}
    assert meta["snapshots"][-1]["schema-id"] == 1 and meta["last-column-id"] == 4


# ------------------------------------------------------------------ atomicity, repair


def test_a_callback_failure_keeps_the_commit_and_the_next_commit_repairs(catalog):
    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    table.write(rows([1]))
    blocker = os.path.join(meta_dir(table), "v2.metadata.json")
    os.makedirs(blocker)  # the metadata file cannot be created: a crash after the manifests were written
    table.write(rows([2]))
    assert table.core.last_maintenance_errors, "the failure is reported"
    assert table.scan().to_arrow().num_rows == 2  # the Paimon commit stands
    assert open(os.path.join(meta_dir(table), "version-hint.text")).read() == "1"  # readers stay on v1
    assert len(metadata(table, 1)["snapshots"]) == 1
    os.rmdir(blocker)
    table.write(rows([3]))
    assert table.core.last_maintenance_errors == []
    meta = metadata(table)
    assert meta["current-snapshot-id"] == 3 and [s["snapshot-id"] for s in meta["snapshots"]] == [3]
    assert live_paths(table) == paimon_paths(table) and len(live_paths(table)) == 3
    assert meta["snapshots"][0]["summary"]["total-records"] == "3"
    listed = {m["manifest_path"] for m in current_list(table)}
    on_disk = {os.path.join(meta_dir(table), n) for n in os.listdir(meta_dir(table)) if "-m" in n}
    assert on_disk == listed  # made afresh: older manifests expired


def test_a_version_published_first_by_another_writer_stands(catalog):
    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    table.write(rows([1]))
    directory = meta_dir(table)
    theirs = json.dumps({**metadata(table, 1), "table-uuid": "theirs", "current-snapshot-id": 2,
                         "snapshots": [{**metadata(table, 1)["snapshots"][0], "snapshot-id": 2,
                                        "timestamp-ms": int(time.time() * 1000) + 60_000}]})
    before = set(os.listdir(directory))
    open(os.path.join(directory, "v2.metadata.json"), "w").write(theirs)
    table.write(rows([2]))
    assert json.load(open(os.path.join(directory, "v2.metadata.json")))["table-uuid"] == "theirs"
    assert set(os.listdir(directory)) - before == {"v2.metadata.json"}  # our manifests were removed


# ------------------------------------------------------------------ expiry, orphans


def test_iceberg_snapshots_expire_with_paimons_retention(catalog):
    options = {**ICEBERG, "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2"}
    table = catalog.create_table("db.t", SCHEMA, options=options)
    for i in range(5):
        table.write(rows([i]))
    meta = metadata(table)
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [4, 5]
    listed = {s["manifest-list"] for s in meta["snapshots"]}
    lists = {os.path.join(meta_dir(table), n) for n in os.listdir(meta_dir(table)) if n.startswith("snap-")}
    assert lists == listed
    assert [n for n in os.listdir(meta_dir(table)) if n.endswith(".json")] == ["v5.metadata.json"]
    assert live_paths(table) == paimon_paths(table)


def test_previous_versions_are_kept_when_asked(catalog):
    options = {**ICEBERG, "metadata.iceberg.previous-versions-max": "2"}
    table = catalog.create_table("db.t", SCHEMA, options=options)
    for i in range(4):
        table.write(rows([i]))
    assert sorted(n for n in os.listdir(meta_dir(table)) if n.endswith(".json")) == [
        "v2.metadata.json", "v3.metadata.json", "v4.metadata.json"]


def test_orphan_removal_never_deletes_iceberg_metadata(catalog):
    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    table.write(rows([1]))
    table.write(rows([2]))
    before = sorted(os.listdir(meta_dir(table)))
    stray = os.path.join(meta_dir(table), "unlisted-m9.avro")
    open(stray, "wb").write(b"x")
    removed = table.remove_orphan_files(older_than=int(time.time() * 1000) + 3_600_000)
    assert not [p for p in removed if "/metadata/" in p]
    assert sorted(os.listdir(meta_dir(table))) == sorted(before + ["unlisted-m9.avro"])


def test_tags_on_retained_snapshots_become_iceberg_tags(catalog):
    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    table.write(rows([1]))
    table.create_tag("first", 1)
    table.write(rows([2]))
    assert metadata(table)["refs"] == {"first": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 2**63 - 1}}


def test_tags_made_and_dropped_between_commits_update_the_latest_version(catalog):
    from pyiceberg.table import StaticTable

    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    table.write(rows([1]))
    table.write(rows([2]))
    latest = os.path.join(meta_dir(table), "v2.metadata.json")
    before = os.listdir(meta_dir(table))
    table.create_tag("first", 1)
    table.create_tag("second", 2)
    ref = {"type": "tag", "max-ref-age-ms": 2**63 - 1}
    assert metadata(table)["refs"] == {"first": {"snapshot-id": 1, **ref}, "second": {"snapshot-id": 2, **ref}}
    assert sorted(os.listdir(meta_dir(table))) == sorted(before)  # v2 rewritten in place
    iceberg = StaticTable.from_metadata(latest)
    assert iceberg.scan(snapshot_id=iceberg.metadata.refs["first"].snapshot_id).to_arrow().num_rows == 1
    table.replace_tag("first", 2)
    assert metadata(table)["refs"]["first"]["snapshot-id"] == 2
    table.rename_tag("second", "renamed")
    assert set(metadata(table)["refs"]) == {"first", "renamed"}
    table.delete_tag("first")
    assert set(metadata(table)["refs"]) == {"renamed"}
    table.write(rows([3]))  # a commit recomputes the refs: the same ones
    assert metadata(table)["refs"] == {"renamed": {"snapshot-id": 2, **ref}}


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize("storage", ["hive-catalog", "rest-catalog"])
def test_catalog_storages_are_refused_at_creation(catalog, storage):
    with pytest.raises(UnsupportedFeature, match=r"db\.t.*metadata\.iceberg\.storage.*" + storage):
        catalog.create_table("db.t", SCHEMA, options={"metadata.iceberg.storage": storage})


def test_a_catalog_storage_table_made_elsewhere_is_not_written(catalog):
    table = catalog.create_table("db.t", SCHEMA)
    table.write(rows([1]))
    schema_dir = os.path.join(table.root, "schema")
    path = os.path.join(schema_dir, "schema-0")
    saved = json.load(open(path))
    saved["options"]["metadata.iceberg.storage"] = "hive-catalog"  # as Java would have made it
    json.dump(saved, open(path, "w"))
    table = catalog.load_table("db.t")
    files_before = sorted(os.listdir(table.root))
    with pytest.raises(UnsupportedFeature, match="metadata.iceberg.storage"):
        table.write(rows([2]))
    assert sorted(os.listdir(table.root)) == files_before and table.scan().to_arrow().num_rows == 1


@pytest.mark.parametrize("options, error, words", [
    ({"metadata.iceberg.format-version": "1"}, InvalidOption, "format-version"),
    ({"metadata.iceberg.manifest-compression": "lzo"}, InvalidOption, "manifest-compression"),
])
def test_option_values_tarn_cannot_honour_are_refused(catalog, options, error, words):
    with pytest.raises(error, match=words):
        catalog.create_table("db.t", SCHEMA, options={**ICEBERG, **options})


@pytest.mark.parametrize("arrow_type, words", [
    (pa.timestamp("s"), "TIMESTAMP\\(0\\)"),
    (pa.timestamp("ns"), "TIMESTAMP\\(9\\)"),
    (pa.time64("us"), "TIME\\(6\\)"),
])
def test_types_iceberg_cannot_publish_are_refused_naming_the_column(catalog, arrow_type, words):
    schema = pa.schema([("id", pa.int64()), ("bad", arrow_type)])
    with pytest.raises(UnsupportedFeature, match="column 'bad'.*" + words):
        catalog.create_table("db.t", schema, options=ICEBERG)


def test_setting_the_option_later_checks_the_columns(catalog):
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("s"))])
    table = catalog.create_table("db.t", schema)
    with pytest.raises(UnsupportedFeature, match="column 'ts'"):
        table.alter(tarn.SetOption("metadata.iceberg.storage", "table-location"))


def test_format_version_3_with_64_bit_vectors_publishes_deletion_vectors(catalog):
    options = {**ICEBERG, "metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true",
               "deletion-vectors.bitmap64": "true", "bucket": "1"}
    table = catalog.create_table("db.pk", SCHEMA, primary_key=["id"], options=options)
    table.write(rows([1, 2, 3]))
    table.compact(full=True)
    table.write(rows([2]))  # marks row 2 of the compacted file deleted
    table.compact()
    meta = metadata(table)
    assert meta["format-version"] == 3
    deletes = [e["data_file"] for m in current_list(table) if m["content"] == 1
               for e in avro(m["manifest_path"])[2]]
    data = live_paths(table)
    for d in deletes:
        assert d["content"] == 1 and d["file_format"] == "puffin" and d["referenced_data_file"] in data
        assert d["content_offset"] is not None and d["content_size_in_bytes"] > 0 and d["record_count"] >= 1


def test_a_lost_race_for_the_metadata_file_leaves_no_files_behind(catalog):
    """Another publisher creates v2 between this one's manifests and its metadata file."""
    table = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    table.write(rows([1]))
    directory = meta_dir(table)
    first = metadata(table, 1)
    io = table.core.file_io

    class Racing(type(io)):
        def write_if_absent(self, path, data):
            if path.endswith("v2.metadata.json"):  # the other publisher wins, after the Paimon commit
                snapshot = {**first["snapshots"][0], "snapshot-id": 2, "timestamp-ms": int(time.time() * 1000)}
                theirs = {**first, "table-uuid": "theirs", "current-snapshot-id": 2, "snapshots": [snapshot]}
                io.write_bytes(path, json.dumps(theirs).encode())
            return super().write_if_absent(path, data)

    before = set(os.listdir(directory))
    table.core.file_io = Racing(io.fs, io.conditional, io.lock)
    table.write(rows([2]))
    assert table.core.last_maintenance_errors == []
    assert json.load(open(os.path.join(directory, "v2.metadata.json")))["table-uuid"] == "theirs"
    assert set(os.listdir(directory)) - before == {"v2.metadata.json"}  # our manifest and list were removed


def test_metadata_json_is_plain_compact_json_spliced_from_its_base():
    import json

    from tarn.iceberg import metadata as md

    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "snapshots", "required": False,
                                                             "type": "string"}]}
    snapshots = [md.snapshot_json(i, {"operation": "append"}, f"/t/metadata/snap-{i}.avro", 0) for i in (1, 2, 3)]
    metadata = md.table_metadata(2, "uuid", '/t/"snapshots":[]', 3, 1, [schema], 0, [md.partition_spec([])], 999,
                                 snapshots, {})
    def plain(m):
        return json.dumps(m, separators=(",", ":")).encode()

    assert md.to_json(metadata) == plain(metadata)
    base = metadata  # each next version spliced from its base's text: some expired, one or two new
    for kept_from, added in [(0, 1), (2, 1), (1, 2), (3, 1), (5, 0), (0, 1)]:
        new = [md.snapshot_json(len(base["snapshots"]) + 10 + i, {"operation": "append"}, f"/t/s{i}.avro", 0)
               for i in range(added)]
        following = dict(base, snapshots=base["snapshots"][kept_from:] + new)
        assert md.to_json(following, base) == plain(following)
        base = following
    stranger = dict(metadata, snapshots=[dict(s) for s in metadata["snapshots"]])  # equal, not the same dicts
    assert md.to_json(dict(stranger, snapshots=stranger["snapshots"][1:]), stranger) == \
        plain(dict(stranger, snapshots=stranger["snapshots"][1:]))
    assert md.to_json(dict(metadata, snapshots=[]), metadata) == plain(dict(metadata, snapshots=[]))
