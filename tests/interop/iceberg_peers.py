"""Iceberg readers of the metadata tarn writes beside a table (``metadata.iceberg.storage``).

Three engines that know nothing of Paimon: pyiceberg (``StaticTable.from_metadata``) and polars
(``scan_iceberg``) in tarn's venv, DuckDB's Iceberg extension in its own (duckdb_iceberg_env.py).
Each reads an Iceberg table by its ``v<N>.metadata.json`` (DuckDB also by the table directory,
through ``version-hint.text``), at its current snapshot or at a snapshot id; Iceberg snapshot
ids are the Paimon snapshot ids they mirror, so every Iceberg snapshot can be checked against
tarn's own time travel to the same id.

Rows are compared as multisets of canonical tuples (`row_bag`): column names and values, with
lists/maps/structs frozen and aware datetimes in UTC, so engines returning int32 where tarn has
int8, or large strings, still compare by value.
"""

from __future__ import annotations

import collections
import datetime
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from tests.interop.duckdb_iceberg_env import run_duckdb

HINT_FILE = "version-hint.text"


def table_location_metadata(table) -> Path:
    """``<table>/metadata``: where ``metadata.iceberg.storage = table-location`` writes."""
    return Path(table.location) / "metadata"


def hadoop_catalog_metadata(warehouse, database: str, name: str) -> Path:
    """``<warehouse>/iceberg/<db>/<table>/metadata``: where ``hadoop-catalog`` storage writes."""
    return Path(warehouse) / "iceberg" / database / name / "metadata"


def current_version(metadata_dir: Path) -> int:
    """The version ``version-hint.text`` names."""
    hint = metadata_dir / HINT_FILE
    assert hint.is_file(), f"no Iceberg metadata: {hint} is missing"
    return int(hint.read_text().strip())


def current_metadata(metadata_dir: Path) -> Path:
    """The metadata file the hint points at (it must exist)."""
    path = metadata_dir / f"v{current_version(metadata_dir)}.metadata.json"
    assert path.is_file(), f"{HINT_FILE} names {path.name}, which is not in {metadata_dir}"
    return path


def metadata_json(metadata_path: Path) -> dict:
    return json.loads(Path(metadata_path).read_text())


def snapshot_ids(metadata_path: Path) -> list[int]:
    return sorted(s["snapshot-id"] for s in metadata_json(metadata_path).get("snapshots", []))


def pyiceberg_table(metadata_path: Path):
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(str(metadata_path))


def pyiceberg_rows(metadata_path: Path, snapshot_id: int | None = None) -> pa.Table:
    return pyiceberg_table(metadata_path).scan(snapshot_id=snapshot_id).to_arrow()


def polars_rows(metadata_path: Path, snapshot_id: int | None = None) -> pa.Table:
    import polars as pl

    return pl.scan_iceberg(str(metadata_path), snapshot_id=snapshot_id).collect().to_arrow()


def duckdb_rows(reads: list[dict], scratch: Path) -> list[pa.Table]:
    """One DuckDB process for many reads: each ``{"location": path, "snapshot_id": id?}``."""
    calls = []
    for index, read in enumerate(reads):
        calls.append(["read", {**read, "location": str(read["location"]),
                               "out_ipc": str(scratch / f"duckdb-{index}.arrow")}])
    answers = run_duckdb("batch", {"calls": calls})["results"]
    tables = []
    for (_, spec), answer in zip(calls, answers):
        with pa.memory_map(spec["out_ipc"]) as source:
            tables.append(ipc.open_file(source).read_all())
        assert tables[-1].num_rows == answer["rows"]
    return tables


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((key, _freeze(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc)
    return value


def row_bag(rows: pa.Table) -> collections.Counter:
    """The rows as a multiset of ``((column, value), ...)`` tuples, columns in name order."""
    return collections.Counter(tuple(sorted((name, _freeze(value)) for name, value in row.items()))
                               for row in rows.to_pylist())


def bag_difference(expected: collections.Counter, actual: collections.Counter) -> str:
    missing = sorted(map(repr, (expected - actual).elements()))[:10]
    extra = sorted(map(repr, (actual - expected).elements()))[:10]
    return f"missing {len(list((expected - actual).elements()))}: {missing}\n" \
           f"extra {len(list((actual - expected).elements()))}: {extra}"


DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])


def deletion_vector_positions(path: str, offset: int, length: int) -> set[int]:
    """The row positions of one Iceberg deletion-vector blob, read by its offset and length the way
    Iceberg's Java reader does (without requiring a Puffin container): a big-endian length, the
    magic, a portable 64-bit roaring bitmap (a little-endian count, then per 32-bit key its bitmap)
    and a big-endian CRC-32 of magic + bitmap."""
    import zlib

    from pyroaring import BitMap

    with open(_local(path), "rb") as f:
        f.seek(offset)
        blob = f.read(length)
    size = int.from_bytes(blob[:4], "big")
    assert len(blob) == size + 8 and blob[4:8] == DV_MAGIC, f"not a deletion-vector blob: {path}@{offset}"
    assert zlib.crc32(blob[4:4 + size]) == int.from_bytes(blob[4 + size:], "big"), "deletion vector CRC mismatch"
    payload = memoryview(blob)[8:4 + size]
    count, at, positions = int.from_bytes(payload[:8], "little"), 8, set()
    for _ in range(count):
        key = int.from_bytes(payload[at:at + 4], "little")
        bitmap = BitMap.deserialize(bytes(payload[at + 4:]))
        at += 4 + len(bitmap.serialize())
        positions.update((key << 32) | position for position in bitmap)
    return positions


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def spec_rows(metadata_path: Path, snapshot_id: int | None = None) -> pa.Table:
    """The rows of an Iceberg snapshot of identity-partitioned Parquet files with deletion vectors,
    read straight from the manifests: each live data file minus the positions of its vector,
    projected on the snapshot schema's column names (enough for tables whose data files hold
    every column under its current name)."""
    import fastavro
    import pyarrow.parquet as pq

    metadata = metadata_json(metadata_path)
    snapshot_id = metadata["current-snapshot-id"] if snapshot_id is None else snapshot_id
    snapshot = next(s for s in metadata["snapshots"] if s["snapshot-id"] == snapshot_id)
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == snapshot["schema-id"])
    names = [field["name"] for field in schema["fields"]]
    data_files, deleted = [], {}
    with open(_local(snapshot["manifest-list"]), "rb") as f:
        manifests = list(fastavro.reader(f))
    for manifest in manifests:
        with open(_local(manifest["manifest_path"]), "rb") as f:
            for entry in fastavro.reader(f):
                if entry["status"] == 2:
                    continue
                data = entry["data_file"]
                if data["content"] == 0:
                    data_files.append(data["file_path"])
                else:
                    assert data["content"] == 1 and data["file_format"].lower() == "puffin", data
                    deleted[data["referenced_data_file"]] = deletion_vector_positions(
                        data["file_path"], data["content_offset"], data["content_size_in_bytes"])
    assert set(deleted) <= set(data_files), "a deletion vector for a file the snapshot does not list"
    tables = []
    for path in data_files:
        rows = pq.read_table(_local(path), columns=names)
        gone = deleted.get(path, set())
        keep = pa.array([position not in gone for position in range(rows.num_rows)])
        tables.append(rows.filter(keep))
    return pa.concat_tables(tables) if tables else pa.table({name: [] for name in names})


def has_deletion_vectors(metadata_path: Path, snapshot_id: int) -> bool:
    import fastavro

    snapshot = next(s for s in metadata_json(metadata_path)["snapshots"] if s["snapshot-id"] == snapshot_id)
    with open(_local(snapshot["manifest-list"]), "rb") as f:
        return any(manifest["content"] == 1 for manifest in fastavro.reader(f))
