"""Iceberg readers read what tarn commits with ``metadata.iceberg.storage`` on (issue 41).

Black-box: tables are written through tarn's API with the option set, then pyiceberg
(``StaticTable.from_metadata``), polars (``scan_iceberg``) and DuckDB's Iceberg extension read the
metadata files on disk. Iceberg snapshot ids mirror Paimon snapshot ids, so each Iceberg snapshot
is compared with tarn's own time travel to the same id; what an Iceberg reader should see is what
Java Paimon 2.0's IcebergCommitCallback publishes:

- append tables: every data file;
- primary-key tables: the first mirrored commit publishes every split a batch read can take raw
  (one file per bucket after one write); later commits add only files at the top level
  (``num-levels - 1``), i.e. what full compaction writes; with deletion vectors, v3 metadata and
  ``deletion-vectors.bitmap64`` every file above level 0 plus its deletion vector;
- deletion vectors are published only in format version 3 with ``deletion-vectors.bitmap64``;
  in version 2 Iceberg readers see the data files without them (rows deleted by a vector stay
  visible there). Java publishes Paimon's own index file (not a Puffin container) with each
  vector's offset and length, which Iceberg's Java reader follows; pyiceberg 0.12, polars and
  DuckDB 1.5 insist on Puffin's magic bytes and refuse such snapshots, so snapshots carrying
  vectors are checked by `spec_rows` (the blobs read by offset, as Iceberg Java does) and the
  engines read the snapshots without vectors;
- Iceberg snapshots past ``snapshot.num-retained.*`` are dropped when the next commit mirrors.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import tarn
from tests.interop.iceberg_peers import (
    bag_difference, current_metadata, current_version, duckdb_rows, hadoop_catalog_metadata, has_deletion_vectors,
    metadata_json, polars_rows, pyiceberg_rows, row_bag, snapshot_ids, spec_rows, table_location_metadata,
)

pytestmark = pytest.mark.interop

TABLE_LOCATION = {"metadata.iceberg.storage": "table-location"}
V3_DELETION_VECTORS = {**TABLE_LOCATION, "metadata.iceberg.format-version": "3",
                       "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"}


def tarn_rows(table, snapshot_id: int) -> pa.Table:
    return table.scan(snapshot_id=snapshot_id).to_arrow()


def check_readers(table, metadata_dir: Path, expected: dict[int, pa.Table], scratch: Path,
                  engines=("pyiceberg", "polars", "duckdb")) -> None:
    """Every reader in ``engines`` sees ``expected[s]`` at Iceberg snapshot ``s``, the hint names
    the latest Paimon snapshot, and DuckDB finds the same rows through the table directory."""
    latest = table.latest_snapshot().id
    assert current_version(metadata_dir) == latest
    metadata_path = current_metadata(metadata_dir)
    assert metadata_json(metadata_path)["current-snapshot-id"] == latest
    assert set(expected) <= set(snapshot_ids(metadata_path)), snapshot_ids(metadata_path)
    seen = []
    for snapshot_id in expected:
        if "pyiceberg" in engines:
            seen.append(("pyiceberg", snapshot_id, pyiceberg_rows(metadata_path, snapshot_id)))
        if "polars" in engines:
            seen.append(("polars", snapshot_id, polars_rows(metadata_path, snapshot_id)))
    if "duckdb" in engines:
        reads = [{"location": metadata_path, "snapshot_id": s} for s in expected]
        by_directory = [{"location": metadata_dir.parent}] if latest in expected else []
        tables = duckdb_rows(reads + by_directory, scratch)
        seen += [("duckdb", s, rows) for s, rows in zip(expected, tables)]
        if by_directory:
            seen.append(("duckdb by directory", latest, tables[-1]))
    failures = [f"{engine} at snapshot {snapshot_id}: {bag_difference(row_bag(expected[snapshot_id]), row_bag(rows))}"
                for engine, snapshot_id, rows in seen if row_bag(rows) != row_bag(expected[snapshot_id])]
    assert not failures, "\n".join(failures)


def check_deletion_vectors(table, scratch: Path) -> None:
    """Every snapshot read by the spec reader; those without vectors by the engines too; at least
    one snapshot carries vectors."""
    metadata_dir = table_location_metadata(table)
    metadata_path = current_metadata(metadata_dir)
    expected = every_snapshot(table)
    with_vectors = {s for s in expected if has_deletion_vectors(metadata_path, s)}
    assert with_vectors, "no snapshot published a deletion vector"
    for snapshot_id, rows in expected.items():
        got = spec_rows(metadata_path, snapshot_id)
        assert row_bag(got) == row_bag(rows), f"snapshot {snapshot_id}: {bag_difference(row_bag(rows), row_bag(got))}"
    without = {s: rows for s, rows in expected.items() if s not in with_vectors}
    if without:
        check_readers(table, metadata_dir, without, scratch)


def every_snapshot(table) -> dict[int, pa.Table]:
    return {snapshot.id: tarn_rows(table, snapshot.id) for snapshot in table.snapshots()}


def orders(ids, day="2026-11-27", amount_base=0) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [day] * len(ids), "id": pa.array(ids, pa.int64()),
                     "amount": pa.array([amount_base + i for i in ids], pa.int64()),
                     "note": [f"n{i}" if i % 3 else None for i in ids]})


ORDERS = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("amount", pa.int64()), ("note", pa.string())])


def test_appends_partitioned_and_not(catalog, tmp_path):
    partitioned = catalog.create_table("db.events", schema=ORDERS, partition_keys=["dt"], options=TABLE_LOCATION)
    partitioned.write(orders(range(0, 50)))
    partitioned.write(orders(range(50, 80), day="2026-11-28"))
    partitioned.write(orders(range(80, 90)))
    check_readers(partitioned, table_location_metadata(partitioned), every_snapshot(partitioned), tmp_path)

    bucketed = catalog.create_table("db.flat", schema=ORDERS, options={**TABLE_LOCATION, "bucket": "2",
                                                                       "bucket-key": "id"})
    bucketed.write(orders(range(0, 40)))
    bucketed.write(orders(range(40, 45), day="2026-11-28"))
    assert tarn_rows(bucketed, 2).num_rows == 45
    check_readers(bucketed, table_location_metadata(bucketed), every_snapshot(bucketed), tmp_path)
    spec = metadata_json(current_metadata(table_location_metadata(partitioned)))["partition-specs"]
    assert [[(f["name"], f["transform"]) for f in s["fields"]] for s in spec] == [[("dt", "identity")]]


def test_primary_key_rows_appear_with_full_compaction(catalog, tmp_path):
    table = catalog.create_table("db.pk", schema=ORDERS, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={**TABLE_LOCATION, "bucket": "2"})
    table.write(orders(range(0, 30)))                                    # 1: level 0, mirrored raw
    table.write(orders(range(20, 40), amount_base=1000))                 # 2: level 0, not mirrored
    table.compact(full=True)                                             # 3: the top level
    table.write(orders(range(0, 5), amount_base=5000))                   # 4: level 0 again
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "APPEND", "COMPACT", "APPEND"]
    assert row_bag(tarn_rows(table, 2)) != row_bag(tarn_rows(table, 1))
    assert row_bag(tarn_rows(table, 4)) != row_bag(tarn_rows(table, 3))
    expected = {1: tarn_rows(table, 1), 2: tarn_rows(table, 1), 3: tarn_rows(table, 3), 4: tarn_rows(table, 3)}
    check_readers(table, table_location_metadata(table), expected, tmp_path)


def test_primary_key_deletion_vectors_v3(catalog, tmp_path):
    """With v3 + bitmap64 Iceberg sees every file above level 0 with its deletion vector: what
    tarn itself reads from a deletion-vector table, at every snapshot."""
    table = catalog.create_table("db.pk_dv", schema=ORDERS, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={**V3_DELETION_VECTORS, "bucket": "2"})
    table.write(orders(range(0, 300)))
    table.compact(full=True)                              # one large top-level file per bucket
    table.write(orders(range(5, 8), amount_base=7000))    # small upserts: vectors on the large files
    table.delete(orders(range(30, 35)))
    assert tarn_rows(table, table.latest_snapshot().id).num_rows == 295
    check_deletion_vectors(table, tmp_path)


def test_append_deletion_vectors_v3(catalog, tmp_path):
    table = catalog.create_table("db.log_dv", schema=ORDERS, partition_keys=["dt"], options=V3_DELETION_VECTORS)
    table.write(orders(range(0, 60)))
    table.write(orders(range(60, 90), day="2026-11-28"))
    table.delete(filter="id IN (12, 16, 20, 61)")
    table.delete(filter="id < 10")
    assert tarn_rows(table, table.latest_snapshot().id).num_rows == 90 - 4 - 10
    check_deletion_vectors(table, tmp_path)


def test_append_deletion_vectors_v2_are_not_published(catalog, tmp_path):
    """Format version 2 has no deletion vectors: as Java, the data files are published without
    them, so Iceberg readers still see the rows a vector deleted."""
    table = catalog.create_table("db.log_dv2", schema=ORDERS, options={**TABLE_LOCATION,
                                                                       "deletion-vectors.enabled": "true"})
    table.write(orders(range(0, 40)))
    table.delete(filter="id < 10")
    assert tarn_rows(table, 2).num_rows == 30
    metadata_path = current_metadata(table_location_metadata(table))
    assert all(m["content"] == 0 for m in _manifests(metadata_path))   # no delete manifests
    check_readers(table, table_location_metadata(table), {1: tarn_rows(table, 1), 2: tarn_rows(table, 1)},
                  tmp_path)


def _manifests(metadata_path: Path) -> list[dict]:
    import fastavro

    metadata = metadata_json(metadata_path)
    current = next(s for s in metadata["snapshots"] if s["snapshot-id"] == metadata["current-snapshot-id"])
    with open(_local(current["manifest-list"]), "rb") as f:
        return list(fastavro.reader(f))


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def test_schema_evolution(catalog, tmp_path):
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.int32()), ("gone", pa.string())])
    table = catalog.create_table("db.evolving", schema=schema, options=TABLE_LOCATION)
    table.write(pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"],
                          "score": pa.array([10, 20], pa.int32()), "gone": ["x", "y"]}))
    table.alter(tarn.AddColumn("extra", "STRING"), tarn.RenameColumn("name", "label"),
                tarn.DropColumn("gone"), tarn.UpdateColumnType("score", "BIGINT"))
    table.write(pa.table({"id": pa.array([3], pa.int32()), "label": ["c"],
                          "score": pa.array([2**40], pa.int64()), "extra": ["e"]}))
    table.alter(tarn.UpdateColumnType("id", "BIGINT"))
    table.write(pa.table({"id": pa.array([2**33], pa.int64()), "label": ["d"],
                          "score": pa.array([4], pa.int64()), "extra": [None]}))
    latest = table.latest_snapshot()
    metadata_path = current_metadata(table_location_metadata(table))
    metadata = metadata_json(metadata_path)
    assert metadata["current-schema-id"] == table.schema().id == latest.schema_id == 2
    assert {s["snapshot-id"]: s["schema-id"] for s in metadata["snapshots"]} == \
        {s.id: s.schema_id for s in table.snapshots()}
    current = next(s for s in metadata["schemas"] if s["schema-id"] == 2)
    assert [(f["name"], f["type"]) for f in current["fields"]] == \
        [("id", "long"), ("label", "string"), ("score", "long"), ("extra", "string")]
    assert row_bag(tarn_rows(table, latest.id)) == row_bag(pa.table({
        "id": pa.array([1, 2, 3, 2**33], pa.int64()), "label": ["a", "b", "c", "d"],
        "score": pa.array([10, 20, 2**40, 4], pa.int64()), "extra": [None, None, "e", None]}))
    check_readers(table, table_location_metadata(table), every_snapshot(table), tmp_path)


def test_overwrite(catalog, tmp_path):
    table = catalog.create_table("db.daily", schema=ORDERS, partition_keys=["dt"], options=TABLE_LOCATION)
    table.write(orders(range(0, 20)))
    table.write(orders(range(20, 30), day="2026-11-28"))
    table.overwrite(orders(range(100, 105), day="2026-11-28"), partition={"dt": "2026-11-28"})
    table.overwrite(orders(range(200, 203), day="2026-11-29"), dynamic=False)   # the whole table
    assert row_bag(tarn_rows(table, 4)) == row_bag(orders(range(200, 203), day="2026-11-29"))
    check_readers(table, table_location_metadata(table), every_snapshot(table), tmp_path)


def test_snapshot_expiry(catalog, tmp_path):
    """At each commit Iceberg snapshots outside ``snapshot.num-retained.min/max`` are dropped,
    with the manifest lists and manifests only they used; older metadata files are deleted
    (``delete-after-commit``, ``previous-versions-max`` 0): the directory holds what the current
    metadata reaches, and every listed snapshot still reads (its data files are all there)."""
    table = catalog.create_table("db.short", schema=ORDERS, partition_keys=["dt"],
                                 options={**TABLE_LOCATION, "snapshot.num-retained.min": "2",
                                          "snapshot.num-retained.max": "3"})
    table.write(orders(range(0, 10)))
    table.write(orders(range(10, 20)))
    table.overwrite(orders(range(20, 30)))
    for start in (30, 40, 50):
        table.write(orders(range(start, start + 10), day="2026-11-28"))
    metadata_dir = table_location_metadata(table)
    metadata_path = current_metadata(metadata_dir)
    assert [s.id for s in table.snapshots()] == [4, 5, 6]
    assert snapshot_ids(metadata_path) == [4, 5, 6]
    assert _reachable(metadata_path) == {p.name for p in metadata_dir.iterdir()}
    check_readers(table, metadata_dir, every_snapshot(table), tmp_path)


def _reachable(metadata_path: Path) -> set[str]:
    """The file names the metadata reaches: itself, the hint, manifest lists and their manifests."""
    import fastavro

    names = {metadata_path.name, "version-hint.text"}
    for snapshot in metadata_json(metadata_path)["snapshots"]:
        names.add(Path(snapshot["manifest-list"]).name)
        with open(_local(snapshot["manifest-list"]), "rb") as f:
            names.update(Path(m["manifest_path"]).name for m in fastavro.reader(f))
    return names


def test_hadoop_catalog_storage(tmp_path):
    warehouse = tmp_path / "warehouse"
    catalog = tarn.Catalog(str(warehouse))
    options = {"metadata.iceberg.storage": "hadoop-catalog"}
    log = catalog.create_table("db.log", schema=ORDERS, partition_keys=["dt"], options=options)
    log.write(orders(range(0, 20)))
    log.write(orders(range(20, 25), day="2026-11-28"))
    pk = catalog.create_table("db.pk", schema=ORDERS, primary_key=["id"], options={**options, "bucket": "1"})
    pk.write(orders(range(0, 10)))
    pk.write(orders(range(5, 15), amount_base=100))
    pk.compact(full=True)
    for table, name in ((log, "log"), (pk, "pk")):
        assert not (Path(table.root) / "metadata").exists()
        check_readers(table, hadoop_catalog_metadata(warehouse, "db", name), every_snapshot(table) | (
            {1: tarn_rows(pk, 1), 2: tarn_rows(pk, 1)} if table is pk else {}), tmp_path)


def test_switched_on_later_mirrors_the_whole_table(catalog, tmp_path):
    """A table with history gets its first Iceberg metadata at the first commit after the option
    is set: one snapshot holding every data file the table has then."""
    table = catalog.create_table("db.late", schema=ORDERS, partition_keys=["dt"])
    table.write(orders(range(0, 10)))
    table.write(orders(range(10, 20), day="2026-11-28"))
    metadata_dir = table_location_metadata(table)
    assert not metadata_dir.exists()
    table.alter(tarn.SetOption("metadata.iceberg.storage", "table-location"))
    table.write(orders(range(20, 25)))
    assert snapshot_ids(current_metadata(metadata_dir)) == [3]
    check_readers(table, metadata_dir, {3: tarn_rows(table, 3)}, tmp_path)


def test_types(catalog, tmp_path):
    import datetime
    import decimal

    schema = pa.schema([
        ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
        ("f32", pa.float32()), ("f64", pa.float64()), ("d", pa.decimal128(10, 2)), ("big", pa.decimal128(30, 5)),
        ("s", pa.string()), ("bin", pa.binary()), ("day", pa.date32()), ("ts", pa.timestamp("us")),
        ("ts3", pa.timestamp("ms")), ("tz", pa.timestamp("us", tz="UTC")), ("xs", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.int64())), ("st", pa.struct([("a", pa.int32()), ("z", pa.string())])),
    ])
    rows = pa.table({
        "b": [True, False, None], "i8": pa.array([1, -2, None], pa.int8()), "i16": pa.array([300, None, -3], pa.int16()),
        "i32": pa.array([1, 2, 3], pa.int32()), "i64": pa.array([2**40, None, -1], pa.int64()),
        "f32": pa.array([1.5, None, -0.25], pa.float32()), "f64": [2.5, float("inf"), None],
        "d": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.00")], pa.decimal128(10, 2)),
        "big": pa.array([decimal.Decimal("123456789012345678901.12345"), None, decimal.Decimal("0.00001")],
                        pa.decimal128(30, 5)),
        "s": ["x", None, "ü"], "bin": [b"\x00\x01", None, b""],
        "day": [datetime.date(2026, 11, 27), None, datetime.date(1970, 1, 1)],
        "ts": [datetime.datetime(2026, 11, 27, 12, 0, 0, 123456), None, datetime.datetime(1999, 1, 1)],
        "ts3": pa.array([datetime.datetime(2026, 1, 1, 0, 0, 0, 5000), None, None], pa.timestamp("ms")),
        "tz": pa.array([datetime.datetime(2026, 11, 27, 12, tzinfo=datetime.timezone.utc), None, None],
                       pa.timestamp("us", tz="UTC")),
        "xs": [[1, 2], [], None], "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
        "st": [{"a": 1, "z": "q"}, None, {"a": None, "z": None}],
    }, schema=schema)
    table = catalog.create_table("db.types", schema=schema, options=TABLE_LOCATION)
    table.write(rows)
    table.write(rows.slice(0, 1))
    check_readers(table, table_location_metadata(table), every_snapshot(table), tmp_path)
