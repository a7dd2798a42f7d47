"""tarn's Iceberg metadata against the metadata Java Paimon writes for the same operations.

The Java reference (shared/javaref, Paimon 1.0-SNAPSHOT) has the feature under its first name,
``metadata.iceberg-compatible = true`` (metadata beside the table, format version 2, what
``metadata.iceberg.storage = table-location`` writes in later versions). The same rows go through
the same operations on two tables, one written by Java, one by tarn; then the two Iceberg trees
are decoded with fastavro (the reference compresses manifests with zstd, which today's DuckDB
and pyiceberg do not read) and compared: per Iceberg snapshot the live data files (partition
values, record count, column null counts and lower/upper bounds in Iceberg's single-value
binary form), the current schema as Iceberg JSON and the partition specs. File names differ
between writers; everything a reader plans with must not.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from tests.interop.iceberg_peers import current_metadata, metadata_json
from tests.interop.javaref import javaref  # noqa: F401 (fixture)

pytestmark = pytest.mark.interop

JAVA_ICEBERG = {"metadata.iceberg-compatible": "true"}
TARN_ICEBERG = {"metadata.iceberg.storage": "table-location"}
DELETED = 2  # manifest entry status


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def _avro(path: str) -> list[dict]:
    with open(_local(path), "rb") as f:
        return list(fastavro.reader(f))


def _pairs(mapping) -> tuple:
    """An Avro map of field id -> value (a list of key/value records) as sorted pairs."""
    return tuple(sorted((item["key"], item["value"]) for item in mapping or ()))


def field_types(metadata: dict) -> dict[int, str]:
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    return {field["id"]: field["type"] for field in schema["fields"]}


def _bounds(mapping, types: dict[int, str]) -> tuple:
    """Bounds by field id, as both Java versions agree on them: Java 1.0 pads string bounds with
    NULs (Java 2.0's IcebergConversions strips them) and has no binary column bounds."""
    return tuple((key, value.rstrip(b"\x00") if types[key] == "string" else value)
                 for key, value in _pairs(mapping) if types[key] != "binary")


def live_files(metadata: dict, snapshot_id: int) -> collections.Counter:
    """What a reader plans from Iceberg snapshot ``snapshot_id``: one descriptor per live data file."""
    snapshot = next(s for s in metadata["snapshots"] if s["snapshot-id"] == snapshot_id)
    types = field_types(metadata)
    files = collections.Counter()
    for manifest in _avro(snapshot["manifest-list"]):
        assert manifest["content"] == 0, "a delete manifest in a format-version 2 table"
        for entry in _avro(manifest["manifest_path"]):
            if entry["status"] == DELETED:
                continue
            data = entry["data_file"]
            files[(tuple((data["partition"] or {}).values()), data["record_count"], data["file_format"],
                   _pairs(data.get("null_value_counts")), _bounds(data.get("lower_bounds"), types),
                   _bounds(data.get("upper_bounds"), types))] += 1
    return files


def schema_fields(metadata: dict) -> list[dict]:
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    return [{key: field[key] for key in ("id", "name", "required", "type")} for field in schema["fields"]]


def partition_specs(metadata: dict) -> list:
    return [[{key: field[key] for key in ("name", "transform", "source-id", "field-id")} for field in spec["fields"]]
            for spec in metadata["partition-specs"]]


def run_both(javaref, catalog, tmp_path, schema_json, arrow_schema, steps, primary_keys=(), partition_keys=(),
             options=None):
    """Create the table in Java and in tarn, then run ``steps`` (``("write", rows)`` or
    ``("compact", None)``) on both; the two current Iceberg metadata documents."""
    java_path = tmp_path / "java" / "db.db" / "t"
    create = ["create", java_path, "--schema", json.dumps(schema_json),
              "--options", json.dumps({**(options or {}), **JAVA_ICEBERG})]
    if primary_keys:
        create += ["--primary-keys", ",".join(primary_keys)]
    if partition_keys:
        create += ["--partition-keys", ",".join(partition_keys)]
    calls = [create]
    table = catalog.create_table("db.t", schema=arrow_schema, primary_key=list(primary_keys) or None,
                                 partition_keys=list(partition_keys) or None,
                                 options={**(options or {}), **TARN_ICEBERG})
    for step, rows in steps:
        if step == "write":
            calls.append(["write", java_path, "--rows", javaref.rows_arg(rows, tmp_path)])
            table.write(pa.Table.from_pylist(rows, schema=arrow_schema))
        else:
            calls.append(["compact", java_path, "--full"])
            table.compact(full=True)
    javaref.run_many(calls)
    java = metadata_json(current_metadata(java_path / "metadata"))
    tarn_metadata = metadata_json(current_metadata(Path(table.root) / "metadata"))
    return java, tarn_metadata


def assert_same_trees(java: dict, tarn_metadata: dict, stale=lambda snapshot_id: collections.Counter()) -> None:
    """`stale(snapshot_id)`: files Java 1.0 still lists although Paimon removed them (see
    test_primary_key_table_trees_match)."""
    assert tarn_metadata["format-version"] == java["format-version"] == 2
    assert schema_fields(tarn_metadata) == schema_fields(java)
    assert partition_specs(tarn_metadata) == partition_specs(java)
    assert tarn_metadata["current-snapshot-id"] == java["current-snapshot-id"]
    java_ids = [s["snapshot-id"] for s in java["snapshots"]]
    assert [s["snapshot-id"] for s in tarn_metadata["snapshots"]] == java_ids
    for snapshot_id in java_ids:
        tarn_files, java_files = live_files(tarn_metadata, snapshot_id), live_files(java, snapshot_id)
        java_files = java_files - stale(snapshot_id)
        assert tarn_files == java_files, f"snapshot {snapshot_id}:\n tarn only: {sorted(tarn_files - java_files)}" \
                                         f"\n java only: {sorted(java_files - tarn_files)}"


ORDERS_JSON = [{"name": "dt", "type": "STRING"}, {"name": "id", "type": "BIGINT"},
               {"name": "amount", "type": "DOUBLE"}, {"name": "note", "type": "STRING"}]
ORDERS = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("amount", pa.float64()), ("note", pa.string())])


def orders(ids, day="2026-11-27", base=0.0) -> list[dict]:
    # no 0.0: Java's parquet statistics give a zero minimum as -0.0 (parquet-mr's rule), tarn's as 0.0
    return [{"dt": day, "id": i, "amount": base + i / 4 + 0.5, "note": f"note-{i}" if i % 3 else None}
            for i in ids]


def test_append_table_trees_match(javaref, catalog, tmp_path):
    steps = [("write", orders(range(0, 30)) + orders(range(30, 40), day="2026-11-28")),
             ("write", orders(range(40, 45)))]
    java, tarn_metadata = run_both(javaref, catalog, tmp_path, ORDERS_JSON, ORDERS, steps, partition_keys=["dt"])
    assert_same_trees(java, tarn_metadata)
    assert sum(live_files(java, 2).values()) == 3


def test_primary_key_table_trees_match(javaref, catalog, tmp_path):
    """Java's visibility rules for primary-key tables: the first commit's raw files, then only
    what full compaction writes at the top level."""
    steps = [("write", orders(range(0, 20))), ("write", orders(range(10, 30), base=100.0)), ("compact", None),
             ("write", orders(range(0, 3), base=500.0))]
    java, tarn_metadata = run_both(javaref, catalog, tmp_path, ORDERS_JSON, ORDERS, steps,
                                   primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
    # Java 1.0 drops a removed file from Iceberg only if it was at the top level, so the first
    # commit's level-0 files stay listed after full compaction removed them (rows twice); Java
    # 2.0 (IcebergCommitCallback.collectFileChanges) removes every DELETE entry, as tarn does
    first = live_files(java, 1)
    assert_same_trees(java, tarn_metadata, stale=lambda snapshot_id: first if snapshot_id >= 3 else collections.Counter())
    assert live_files(java, 2) == first
    assert live_files(tarn_metadata, 4) == live_files(tarn_metadata, 3)
    assert not set(live_files(tarn_metadata, 3)) & set(first)


def test_types_trees_match(javaref, catalog, tmp_path):
    """Iceberg types and single-value bounds of the scalar types Java 1.0 serialises (it has no
    timestamp bounds yet: Java 2.0 does, and tests/interop/test_iceberg_readers.py reads them)."""
    import datetime
    import decimal

    schema_json = [{"name": "b", "type": "BOOLEAN"}, {"name": "i", "type": "INT"}, {"name": "l", "type": "BIGINT"},
                   {"name": "f", "type": "FLOAT"}, {"name": "d", "type": "DOUBLE"},
                   {"name": "dec", "type": "DECIMAL(10,2)"}, {"name": "s", "type": "STRING"},
                   {"name": "bin", "type": "BYTES"}, {"name": "day", "type": "DATE"}]
    schema = pa.schema([("b", pa.bool_()), ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()),
                        ("d", pa.float64()), ("dec", pa.decimal128(10, 2)), ("s", pa.string()), ("bin", pa.binary()),
                        ("day", pa.date32())])
    java_rows = [{"b": True, "i": -5, "l": 2**40, "f": 1.5, "d": -2.25, "dec": "12.30", "s": "abc", "bin": "AAE=",
                  "day": "2026-11-27"},
                 {"b": False, "i": 7, "l": -1, "f": -0.5, "d": 9.75, "dec": "-1.05", "s": "zz", "bin": "/w==",
                  "day": "1970-01-02"}]
    tarn_rows = [{"b": True, "i": -5, "l": 2**40, "f": 1.5, "d": -2.25, "dec": decimal.Decimal("12.30"), "s": "abc",
                  "bin": b"\x00\x01", "day": datetime.date(2026, 11, 27)},
                 {"b": False, "i": 7, "l": -1, "f": -0.5, "d": 9.75, "dec": decimal.Decimal("-1.05"), "s": "zz",
                  "bin": b"\xff", "day": datetime.date(1970, 1, 2)}]
    java_path = tmp_path / "java" / "db.db" / "t"
    javaref.run_many([["create", java_path, "--schema", json.dumps(schema_json), "--options", json.dumps(JAVA_ICEBERG)],
                      ["write", java_path, "--rows", javaref.rows_arg(java_rows, tmp_path)]])
    table = catalog.create_table("db.t", schema=schema, options=TARN_ICEBERG)
    table.write(pa.Table.from_pylist(tarn_rows, schema=schema))
    assert_same_trees(metadata_json(current_metadata(java_path / "metadata")),
                      metadata_json(current_metadata(Path(table.root) / "metadata")))
