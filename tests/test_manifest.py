"""Manifest records, their Avro codec and the manifest store (FORMAT.md sections 4, 5, 7)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import textwrap

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarn import types as T
from tarn.codec import avro
from tarn.codec.binary_row import deserialize_row, serialize_row
from tarn.errors import CorruptFile, InvalidOption
from tarn.fs import local_file_io
from tarn.meta.manifest import (
    ADD,
    DELETE,
    EMPTY_ROW,
    EMPTY_STATS,
    INDEX_MANIFEST_ENTRY_SCHEMA,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    DataFileMeta,
    DeletionVectorRange,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from tarn.store.manifests import ManifestStore
from tests.helpers import data_file_meta

PYPAIMON = "/work/main/.venv-pypaimon/bin/python"
PART_TYPES = [T.STRING(), T.INT()]


def part(dt: str | None, hour: int | None) -> bytes:
    return serialize_row([dt, hour], PART_TYPES)


def data_file(name: str, level: int = 0, **kw) -> DataFileMeta:
    key = serialize_row([1], [T.BIGINT()])
    base = dict(file_name=name, file_size=1000, row_count=10, key_stats=SimpleStats(key, key, [0]),
                max_sequence_number=9, level=level, creation_time=1_700_000_000_123)
    return data_file_meta(1, key_types=[T.BIGINT()], **{**base, **kw})


def entry(name: str, kind: int = ADD, partition: bytes | None = None, bucket: int = 0, **kw) -> ManifestEntry:
    return ManifestEntry(kind, partition or part("2024", 1), bucket, 2, data_file(name, **kw))


def store(tmp_path, options: dict | None = None, types=PART_TYPES) -> ManifestStore:
    return ManifestStore(local_file_io(), str(tmp_path / "manifest"), types, options or {})


FULL_FILE = data_file(
    "data-full.parquet", level=3, extra_files=("a.index", "b.index"), creation_time=1_700_000_000_999,
    delete_row_count=4, embedded_index=b"\x01\x02", file_source=1, value_stats_cols=("v", "w"),
    external_path="s3://bucket/x/data-full.parquet", first_row_id=100, write_cols=("v",),
    write_cols_sequences=(7, 8),
)  # fmt: skip
BARE_FILE = data_file(
    "data-bare.parquet", creation_time=None, delete_row_count=None, file_source=None,
    key_stats=SimpleStats(EMPTY_ROW, EMPTY_ROW, None),
)  # fmt: skip


# ------------------------------------------------------------------ record round trips


def avro_round_trip(records: list[dict], schema: dict) -> list[dict]:
    return avro.read_avro(avro.write_avro(records, schema), "test")


@pytest.mark.parametrize("file", [FULL_FILE, BARE_FILE], ids=["all-set", "all-unset"])
def test_manifest_entry_round_trip(file):
    original = ManifestEntry(DELETE, part("2024", None), 3, 4, file)
    [back] = avro_round_trip([original.to_avro()], MANIFEST_ENTRY_SCHEMA)
    assert ManifestEntry.from_avro(back) == original
    assert back["_VERSION"] == 2 and back["_FILE"]["_EXTRA_FILES"] == list(file.extra_files)


@pytest.mark.parametrize(
    "meta",
    [
        ManifestFileMeta("manifest-x-0", 123, 5, 2, SimpleStats(part("a", 1), part("b", 2), [0, 1]), 3,
                         0, 7, 0, 5, 10, 99),
        ManifestFileMeta("manifest-x-1", 1, 0, 0, EMPTY_STATS, 0),
    ],
    ids=["all-set", "all-unset"],
)  # fmt: skip
def test_manifest_file_meta_round_trip(meta):
    [back] = avro_round_trip([meta.to_avro()], MANIFEST_FILE_META_SCHEMA)
    assert back["_VERSION"] == 2
    assert ManifestFileMeta.from_avro(back) == meta


GLOBAL_INDEX = {
    "_ROW_RANGE_START": 0, "_ROW_RANGE_END": 99, "_INDEX_FIELD_ID": 3,
    "_EXTRA_FIELD_IDS": [4, 5], "_INDEX_META": b"m", "_SOURCE_META": None,
}  # fmt: skip


@pytest.mark.parametrize(
    "index_entry",
    [
        IndexManifestEntry(ADD, part("a", 1), 1, "DELETION_VECTORS", "index-u-0", 31, 2,
                           (DeletionVectorRange("data-1.parquet", 1, 22, 1),
                            DeletionVectorRange("data-2.parquet", 27, 19, None)),
                           "s3://x/index-u-0", GLOBAL_INDEX),
        IndexManifestEntry(DELETE, EMPTY_ROW, 0, "HASH", "index-u-1", 8, 2),
    ],
    ids=["all-set", "all-unset"],
)  # fmt: skip
def test_index_manifest_entry_round_trip(index_entry):
    [back] = avro_round_trip([index_entry.to_avro()], INDEX_MANIFEST_ENTRY_SCHEMA)
    assert back["_VERSION"] == 1
    assert IndexManifestEntry.from_avro(back) == index_entry


def test_from_avro_tolerates_missing_optional_fields():
    record = FULL_FILE.to_avro()
    for name in ("_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE",
                 "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS",
                 "_WRITE_COLS_SEQUENCES"):  # fmt: skip
        del record[name]
    back = DataFileMeta.from_avro(record)
    assert back.file_name == FULL_FILE.file_name and back.extra_files == FULL_FILE.extra_files
    assert (back.creation_time, back.delete_row_count, back.value_stats_cols, back.write_cols) == (None,) * 4
    meta = ManifestFileMeta("m", 1, 1, 0, EMPTY_STATS, 0).to_avro()
    for name in ("_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL", "_MIN_ROW_ID", "_MAX_ROW_ID"):
        del meta[name]
    assert ManifestFileMeta.from_avro(meta) == ManifestFileMeta("m", 1, 1, 0, EMPTY_STATS, 0)


def test_wrong_version_is_rejected():
    record = entry("d").to_avro() | {"_VERSION": 3}
    with pytest.raises(CorruptFile, match="_VERSION 3"):
        ManifestEntry.from_avro(record)


def test_empty_stats_is_arity_zero_rows():
    assert EMPTY_ROW == serialize_row([], []) == bytes(12)
    assert EMPTY_STATS == SimpleStats(bytes(12), bytes(12), [])


optional = lambda s: st.none() | s  # noqa: E731
names = st.text(min_size=1, max_size=12)
longs = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=60, deadline=None)
@given(
    extra=st.lists(names, max_size=3).map(tuple), creation=optional(longs), deletes=optional(longs),
    index=optional(st.binary(max_size=20)), source=optional(st.sampled_from([0, 1])),
    cols=optional(st.lists(names, max_size=3).map(tuple)), path=optional(names),
    row_id=optional(longs), nulls=optional(st.lists(optional(longs), max_size=4)),
)  # fmt: skip
def test_data_file_meta_round_trip_property(extra, creation, deletes, index, source, cols, path, row_id, nulls):
    file = data_file(
        "f", extra_files=extra, creation_time=creation, delete_row_count=deletes, embedded_index=index,
        file_source=source, value_stats_cols=cols, external_path=path, first_row_id=row_id,
        write_cols=cols, value_stats=SimpleStats(b"\x00\x00\x00\x00" + bytes(8), bytes(12), nulls),
    )  # fmt: skip
    [back] = avro_round_trip([ManifestEntry(ADD, EMPTY_ROW, 0, -1, file).to_avro()], MANIFEST_ENTRY_SCHEMA)
    assert ManifestEntry.from_avro(back).file == file


# ------------------------------------------------------------------ the written Avro schema

R = "org.apache.paimon.avro.generated.record"
STATS = [("_MIN_VALUES", "bytes"), ("_MAX_VALUES", "bytes"),
         ("_NULL_COUNTS", ["null", {"type": "array", "items": ["null", "long"]}])]  # fmt: skip


def rec(name: str, fields: list) -> dict:
    out = []
    for field_name, field_type in fields:
        field = {"name": field_name, "type": field_type}
        if isinstance(field_type, list) and field_type[0] == "null":
            field["default"] = None
        out.append(field)
    return {"type": "record", "name": name, "fields": out}


def opt_array(items) -> list:
    return ["null", {"type": "array", "items": items}]


EXPECTED_ENTRY = rec(R, [
    ("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"),
    ("_TOTAL_BUCKETS", "int"),
    ("_FILE", rec(R + "__FILE", [
        ("_FILE_NAME", "string"), ("_FILE_SIZE", "long"), ("_ROW_COUNT", "long"),
        ("_MIN_KEY", "bytes"), ("_MAX_KEY", "bytes"),
        ("_KEY_STATS", rec(R + "__FILE__KEY_STATS", STATS)),
        ("_VALUE_STATS", rec(R + "__FILE__VALUE_STATS", STATS)),
        ("_MIN_SEQUENCE_NUMBER", "long"), ("_MAX_SEQUENCE_NUMBER", "long"), ("_SCHEMA_ID", "long"),
        ("_LEVEL", "int"), ("_EXTRA_FILES", {"type": "array", "items": "string"}),
        ("_CREATION_TIME", ["null", {"type": "long", "logicalType": "timestamp-millis"}]),
        ("_DELETE_ROW_COUNT", ["null", "long"]), ("_EMBEDDED_FILE_INDEX", ["null", "bytes"]),
        ("_FILE_SOURCE", ["null", "int"]), ("_VALUE_STATS_COLS", opt_array("string")),
        ("_EXTERNAL_PATH", ["null", "string"]), ("_FIRST_ROW_ID", ["null", "long"]),
        ("_WRITE_COLS", opt_array("string")), ("_WRITE_COLS_SEQUENCES", opt_array("long")),
    ])),
])  # fmt: skip

EXPECTED_LIST = rec(R, [
    ("_VERSION", "int"), ("_FILE_NAME", "string"), ("_FILE_SIZE", "long"),
    ("_NUM_ADDED_FILES", "long"), ("_NUM_DELETED_FILES", "long"),
    ("_PARTITION_STATS", rec(R + "__PARTITION_STATS", STATS)), ("_SCHEMA_ID", "long"),
    ("_MIN_BUCKET", ["null", "int"]), ("_MAX_BUCKET", ["null", "int"]),
    ("_MIN_LEVEL", ["null", "int"]), ("_MAX_LEVEL", ["null", "int"]),
    ("_MIN_ROW_ID", ["null", "long"]), ("_MAX_ROW_ID", ["null", "long"]),
])  # fmt: skip

EXPECTED_INDEX = rec(R, [
    ("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"),
    ("_INDEX_TYPE", "string"), ("_FILE_NAME", "string"), ("_FILE_SIZE", "long"), ("_ROW_COUNT", "long"),
    ("_DELETIONS_VECTORS_RANGES", opt_array(["null", rec(R + "__DELETIONS_VECTORS_RANGES", [
        ("f0", "string"), ("f1", "int"), ("f2", "int"), ("_CARDINALITY", ["null", "long"])])])),
    ("_EXTERNAL_PATH", ["null", "string"]),
    ("_GLOBAL_INDEX", ["null", rec(R + "__GLOBAL_INDEX", [
        ("_ROW_RANGE_START", "long"), ("_ROW_RANGE_END", "long"), ("_INDEX_FIELD_ID", "int"),
        ("_EXTRA_FIELD_IDS", opt_array("int")), ("_INDEX_META", ["null", "bytes"]),
        ("_SOURCE_META", ["null", "bytes"])])]),
])  # fmt: skip


def header(data: bytes) -> tuple[dict, str]:
    reader = fastavro.reader(io.BytesIO(data))
    return json.loads(reader.metadata["avro.schema"]), reader.metadata["avro.codec"]


def test_written_files_carry_java_schemas_and_zstandard(tmp_path):
    s = store(tmp_path)
    [meta] = s.write_manifests([entry("d1")], 0)
    list_name, list_size = s.write_manifest_list([meta])
    index_name = s.write_index_manifest([IndexManifestEntry(ADD, EMPTY_ROW, 0, "HASH", "index-1", 8, 2)])
    for name, expected in ((meta.file_name, EXPECTED_ENTRY), (list_name, EXPECTED_LIST),
                           (index_name, EXPECTED_INDEX)):  # fmt: skip
        schema, codec = header((tmp_path / "manifest" / name).read_bytes())
        assert schema == expected, name
        assert codec == "zstandard"
    assert list_size == os.path.getsize(tmp_path / "manifest" / list_name)
    assert meta.file_size == os.path.getsize(tmp_path / "manifest" / meta.file_name)
    records = avro.read_avro((tmp_path / "manifest" / index_name).read_bytes(), index_name)
    assert [r["_VERSION"] for r in records] == [1]


def test_file_names_share_one_uuid_with_a_counter_per_kind(tmp_path):
    s = store(tmp_path, {"manifest.target-file-size": "1b"})
    metas = s.write_manifests([entry(f"d{i}") for i in range(2500)], 0)
    names = [m.file_name for m in metas] + [s.write_manifest_list([])[0], s.write_manifest_list([])[0]]
    names.append(s.write_index_manifest([]))
    u = s.uuid
    assert names == [f"manifest-{u}-0", f"manifest-{u}-1", f"manifest-{u}-2",
                     f"manifest-list-{u}-0", f"manifest-list-{u}-1", f"index-manifest-{u}-0"]  # fmt: skip
    assert sorted(os.listdir(tmp_path / "manifest")) == sorted(names)


@pytest.mark.parametrize(("option", "codec"), [("zstd", "zstandard"), ("none", "null"), ("deflate", "deflate")])
def test_manifest_compression_option(tmp_path, option, codec):
    s = store(tmp_path, {"manifest.compression": option})
    [meta] = s.write_manifests([entry("d1")], 0)
    assert header((tmp_path / "manifest" / meta.file_name).read_bytes())[1] == codec
    assert s.read_manifest(meta.file_name) == [entry("d1")]


def test_codec_and_memory_options():
    assert avro.avro_codec("ZSTD") == "zstandard" and avro.avro_codec("snappy") == "snappy"
    with pytest.raises(InvalidOption, match="manifest.compression"):
        avro.avro_codec("brotli")
    store = ManifestStore(local_file_io(), "/tmp/unused", [], {"manifest.target-file-size": "2 kb"})
    assert store.target_size == 2048 and store.full_compaction_size == 16 << 20
    with pytest.raises(InvalidOption, match="manifest.target-file-size"):
        ManifestStore(local_file_io(), "/tmp/unused", [], {"manifest.target-file-size": "lots"})


def test_zstd_level_option_changes_output(tmp_path):
    entries = [entry(f"data-{i}-with-a-longer-name.parquet") for i in range(300)]
    fast = store(tmp_path / "a").write_manifests(entries, 0)[0].file_size
    small = store(tmp_path / "b", {"file.compression.zstd-level": "19"}).write_manifests(entries, 0)[0].file_size
    assert small < fast


def test_corrupt_manifest_names_the_file(tmp_path):
    s = store(tmp_path)
    [meta] = s.write_manifests([entry("d1")], 0)
    path = tmp_path / "manifest" / meta.file_name
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(CorruptFile, match=meta.file_name):
        s.read_manifest(meta.file_name)
    (tmp_path / "manifest" / "junk").write_bytes(b"not avro")
    with pytest.raises(CorruptFile, match="junk"):
        s.read_manifest_list("junk")


# ------------------------------------------------------------------ manifest metadata


def test_manifest_meta_stats(tmp_path):
    s = store(tmp_path)
    entries = [
        entry("a", partition=part("2024", 3), bucket=2, level=1, schema_id=1, first_row_id=0),
        entry("b", partition=part("2023", None), bucket=0, level=4, schema_id=2, first_row_id=10),
        entry("c", kind=DELETE, partition=part(None, 7), bucket=5, level=0, first_row_id=20),
    ]
    [meta] = s.write_manifests(entries, schema_id=9)
    assert (meta.num_added_files, meta.num_deleted_files, meta.schema_id) == (2, 1, 2)
    assert (meta.min_bucket, meta.max_bucket, meta.min_level, meta.max_level) == (0, 5, 0, 4)
    assert (meta.min_row_id, meta.max_row_id) == (0, 29)
    stats = meta.partition_stats
    assert deserialize_row(stats.min_values, PART_TYPES) == ["2023", 3]
    assert deserialize_row(stats.max_values, PART_TYPES) == ["2024", 7]
    assert stats.null_counts == [1, 1]
    assert s.read_manifest(meta.file_name) == entries
    name, _ = s.write_manifest_list([meta])
    assert s.read_manifest_list(name) == [meta]


def test_manifest_meta_without_partitions_or_row_ids(tmp_path):
    s = store(tmp_path, types=[])
    [meta] = s.write_manifests([entry("a", partition=EMPTY_ROW), entry("b", partition=EMPTY_ROW, first_row_id=5)], 0)
    assert meta.partition_stats == EMPTY_STATS
    assert (meta.min_row_id, meta.max_row_id) == (None, None)
    assert s.write_manifests([], 0) == []


def test_rolling_at_target_size(tmp_path):
    s = store(tmp_path, {"manifest.target-file-size": "4 kb"})
    entries = [entry(f"data-{i:05d}.parquet", bucket=i % 7) for i in range(5000)]
    metas = s.write_manifests(entries, 0)
    assert len(metas) > 1
    assert sum(m.num_added_files for m in metas) == 5000
    assert all(m.num_added_files % 1000 == 0 for m in metas[:-1])  # size checked every 1000 records
    assert [e for m in metas for e in s.read_manifest(m.file_name)] == entries


def test_index_manifest_round_trip(tmp_path):
    s = store(tmp_path)
    entries = [
        IndexManifestEntry(ADD, part("a", 1), 0, "DELETION_VECTORS", "index-u-0", 31, 1,
                           (DeletionVectorRange("data-1.parquet", 1, 22, 1),)),
        IndexManifestEntry(ADD, part("a", 1), 1, "HASH", "index-u-1", 8, 2),
    ]  # fmt: skip
    name = s.write_index_manifest(entries)
    assert name.startswith("index-manifest-")
    assert s.read_index_manifest(name) == entries


def test_reads_pypaimon_shaped_index_manifest(tmp_path):
    """pypaimon writes non-null DV range items and its own record names."""
    schema = {"type": "record", "name": "IndexManifestEntry", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"}, {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"}, {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_DELETIONS_VECTORS_RANGES", "default": None, "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "DeletionVectorMeta", "fields": [
                {"name": "f0", "type": "string"}, {"name": "f1", "type": "int"}, {"name": "f2", "type": "int"},
                {"name": "_CARDINALITY", "default": None, "type": ["null", "long"]}]}}]},
    ]}  # fmt: skip
    record = {"_VERSION": 1, "_KIND": 0, "_PARTITION": EMPTY_ROW, "_BUCKET": 0, "_INDEX_TYPE": "DELETION_VECTORS",
              "_FILE_NAME": "index-x", "_FILE_SIZE": 31, "_ROW_COUNT": 1,
              "_DELETIONS_VECTORS_RANGES": [{"f0": "data-1.parquet", "f1": 1, "f2": 22, "_CARDINALITY": 1}]}  # fmt: skip
    (tmp_path / "manifest").mkdir()
    (tmp_path / "manifest" / "index-manifest-x").write_bytes(avro.write_avro([record], schema))
    [back] = store(tmp_path, types=[]).read_index_manifest("index-manifest-x")
    assert back == IndexManifestEntry(ADD, EMPTY_ROW, 0, "DELETION_VECTORS", "index-x", 31, 1,
                                      (DeletionVectorRange("data-1.parquet", 1, 22, 1),))  # fmt: skip


# ------------------------------------------------------------------ merging


def test_merge_live_applies_entries_in_order(tmp_path):
    s = store(tmp_path)
    a, b, c = entry("a"), entry("b"), entry("c")
    live = s.merge_live([a, b, entry("a", kind=DELETE), c, entry("x", kind=DELETE)])
    assert live == [b, c]
    # the identifier includes the level, so an upgrade is DELETE of level 0 + ADD of level 5
    upgraded = entry("b", level=5)
    assert s.merge_live([a, b, entry("b", kind=DELETE), upgraded]) == [a, upgraded]
    # a DELETE of another partition / bucket / level does not touch the file
    assert s.merge_live([a, entry("a", kind=DELETE, bucket=1), entry("a", kind=DELETE, level=1)]) == [a]
    # a DELETE whose ADD is in an older manifest stays pending in merge_entries
    pending = s.merge_entries([entry("old", kind=DELETE), a])
    assert [e.kind for e in pending.values()] == [DELETE, ADD]


def test_merge_live_rejects_a_file_added_twice(tmp_path):
    with pytest.raises(CorruptFile, match="data-dup"):
        store(tmp_path).merge_live([entry("data-dup"), entry("data-dup")])


def write_small_manifests(s: ManifestStore, count: int) -> tuple[list[ManifestFileMeta], list[ManifestEntry]]:
    """`count` one-commit manifests; every third commit deletes a file of the one before."""
    metas, all_entries = [], []
    for i in range(count):
        entries = [entry(f"data-{i}-{j}.parquet", partition=part(f"d{i % 4}", j), bucket=j) for j in range(3)]
        if i % 3 == 2:
            entries.append(entry(f"data-{i - 1}-0.parquet", kind=DELETE, partition=part(f"d{(i - 1) % 4}", 0)))
        metas += s.write_manifests(entries, 0)
        all_entries += entries
    return metas, all_entries


def live_of(s: ManifestStore, metas: list[ManifestFileMeta]) -> list[ManifestEntry]:
    return s.merge_live(e for m in metas for e in s.read_manifest(m.file_name))


def test_merge_manifests_minor_merges_40_small_manifests(tmp_path):
    s = store(tmp_path)
    metas, entries = write_small_manifests(s, 40)
    merged = s.merge_manifests(metas, 0)
    assert len(merged) == 1
    assert live_of(s, merged) == s.merge_live(entries)
    assert merged[0].num_deleted_files == 0  # all deletes met their adds
    assert all((tmp_path / "manifest" / m.file_name).exists() for m in metas)  # old ones kept


def test_merge_manifests_keeps_few_small_manifests(tmp_path):
    s = store(tmp_path)
    metas, _ = write_small_manifests(s, 29)  # below manifest.merge-min-count
    assert s.merge_manifests(metas, 0) == metas
    s = store(tmp_path / "b", {"manifest.merge-min-count": "5"})
    metas, entries = write_small_manifests(s, 6)
    merged = s.merge_manifests(metas, 0)
    assert len(merged) == 1 and live_of(s, merged) == s.merge_live(entries)


def test_merge_manifests_minor_keeps_pending_deletes(tmp_path):
    s = store(tmp_path, {"manifest.merge-min-count": "2"})
    [old] = s.write_manifests([entry("old")], 0)
    [m1] = s.write_manifests([entry("new")], 0)
    [m2] = s.write_manifests([entry("old", kind=DELETE)], 0)
    merged = s.merge_manifests([m1, m2], 0)  # "old" was added in a manifest not being merged
    assert [(e.kind, e.file.file_name) for e in s.read_manifest(merged[0].file_name)] == [
        (ADD, "new"), (DELETE, "old")]  # fmt: skip
    assert [e.file.file_name for e in live_of(s, [old] + merged)] == ["new"]


def test_merge_manifests_full_compaction(tmp_path):
    # a target of 1 byte makes no file "small", so only files with deletes must change, and a
    # tiny threshold triggers full compaction
    s = store(tmp_path, {"manifest.target-file-size": "1b", "manifest.full-compaction-threshold-size": "1b"})
    metas, entries = write_small_manifests(s, 12)
    merged = s.merge_manifests(metas, 0)
    by_name = lambda es: sorted(es, key=lambda e: e.file.file_name)  # noqa: E731
    assert by_name(live_of(s, merged)) == by_name(s.merge_live(entries))
    assert all(m.num_deleted_files == 0 for m in merged)
    untouched = [m for m in merged if m in metas]
    rewritten = [m for m in merged if m not in metas]
    # files without deletes whose partitions hold no deleted file are kept as they are
    assert untouched and rewritten
    deleted_names = {e.file.file_name for e in entries if e.kind == DELETE}
    for m in untouched:
        assert not deleted_names & {e.file.file_name for e in s.read_manifest(m.file_name)}


# ------------------------------------------------------------------ pypaimon interoperability

PYPAIMON_SCRIPT = textwrap.dedent(
    """
    import sys, pyarrow as pa
    from pypaimon import CatalogFactory, Schema
    catalog = CatalogFactory.create({"warehouse": sys.argv[1]})
    catalog.create_database("db", True)
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string()), pa.field("v", pa.string())]
    schema = Schema.from_pyarrow_schema(pa.schema(fields), partition_keys=["dt"], primary_keys=["id", "dt"],
                                        options={"bucket": "2"})
    catalog.create_table("db.t", schema, True)
    table = catalog.get_table("db.t")
    for i in range(2):
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "a"], "v": [f"x{i}", "y", "z"]},
                                   schema=pa.schema(fields)))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    """
)

PYPAIMON_READ_SCRIPT = textwrap.dedent(
    """
    import sys, json
    from pypaimon import CatalogFactory
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    table = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.t")
    metas = ManifestListManager(table).read(sys.argv[2])
    out = []
    for m in metas:
        for e in ManifestFileManager(table).read(m.file_name, drop_stats=False):
            out.append([m.file_name, e.kind, e.bucket, e.total_buckets, e.file.file_name, e.file.row_count,
                        e.file.level, list(e.partition.values)])
    print(json.dumps(out))
    """
)


def run_pypaimon(script: str, *args: str) -> str:
    assert os.path.exists(PYPAIMON), f"pypaimon venv missing at {PYPAIMON}"
    done = subprocess.run([PYPAIMON, "-c", script, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def pypaimon_table(tmp_path_factory):
    warehouse = tmp_path_factory.mktemp("pypaimon")
    run_pypaimon(PYPAIMON_SCRIPT, str(warehouse))
    return warehouse, warehouse / "db.db" / "t"


def test_reads_pypaimon_manifests(pypaimon_table):
    _, root = pypaimon_table
    s = ManifestStore(local_file_io(), str(root / "manifest"), [T.STRING()], {})
    snapshot = json.loads((root / "snapshot" / "snapshot-2").read_text())
    metas = s.read_manifest_list(snapshot["baseManifestList"]) + s.read_manifest_list(snapshot["deltaManifestList"])
    assert len(metas) == 2
    assert all(m.num_added_files == 3 and m.num_deleted_files == 0 for m in metas)
    assert [deserialize_row(metas[0].partition_stats.min_values, [T.STRING()]),
            deserialize_row(metas[0].partition_stats.max_values, [T.STRING()])] == [["a"], ["b"]]  # fmt: skip
    entries = [e for m in metas for e in s.read_manifest(m.file_name)]
    live = s.merge_live(entries)
    assert len(live) == 6
    on_disk = {p.name for p in root.rglob("data-*.parquet")}
    assert {e.file.file_name for e in live} == on_disk
    for e in live:
        assert e.total_buckets == 2 and e.bucket in (0, 1) and e.file.level == 0
        dt = deserialize_row(e.partition, [T.STRING()])[0]
        assert (root / f"dt={dt}" / f"bucket-{e.bucket}" / e.file.file_name).exists()
        assert deserialize_row(e.file.min_key, [T.BIGINT()])[0] in (1, 2, 3)
        assert isinstance(e.file.creation_time, int)


def test_pypaimon_reads_our_manifests(pypaimon_table, tmp_path):
    warehouse, root = pypaimon_table
    ours = ManifestStore(local_file_io(), str(root / "manifest"), [T.STRING()], {})
    theirs = json.loads((root / "snapshot" / "snapshot-2").read_text())
    entries = [e for m in ours.read_manifest_list(theirs["baseManifestList"]) for e in ours.read_manifest(m.file_name)]
    metas = ours.write_manifests(entries, 0)
    list_name, _ = ours.write_manifest_list(metas)
    try:
        rows = json.loads(run_pypaimon(PYPAIMON_READ_SCRIPT, str(warehouse), list_name))
    finally:
        for name in [list_name] + [m.file_name for m in metas]:
            ours.delete(name)
    expected = [[metas[0].file_name, e.kind, e.bucket, e.total_buckets, e.file.file_name, e.file.row_count,
                 e.file.level, deserialize_row(e.partition, [T.STRING()])] for e in entries]  # fmt: skip
    assert rows == expected
