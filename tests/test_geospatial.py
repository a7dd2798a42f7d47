"""GEOMETRY and GEOGRAPHY columns (Paimon 2.1, issue 43 item 6): the schema's type strings as
Java writes and parses them (GeospatialTypeTest), WKB values through Arrow as binary, parquet's
geospatial logical types on disk, null counts without min/max, and Java's refusals."""

from __future__ import annotations

import glob
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tarn
from tarn.errors import InvalidOption, SchemaMismatch, UnsupportedFeature
from tarn.stats import decode_stats
from tarn.types import BIGINT, GEOGRAPHY, GEOMETRY, DataField, parse_type, type_to_json

POINT = bytes.fromhex("0101000000000000000000f03f0000000000000040")  # POINT(1 2)


@pytest.mark.parametrize("text, written", [
    ("GEOMETRY", "GEOMETRY(OGC:CRS84)"),
    ("geometry(ogc:crs84) NOT NULL", "GEOMETRY(ogc:crs84) NOT NULL"),
    ("GEOGRAPHY", "GEOGRAPHY(OGC:CRS84, spherical)"),
    ("GEOGRAPHY(EPSG:4326, karney)", "GEOGRAPHY(EPSG:4326, karney)"),
    ("GEOGRAPHY(OGC:CRS84, spherical) NOT NULL", "GEOGRAPHY(OGC:CRS84, spherical) NOT NULL"),
    ("GEOMETRY('custom, crs''s definition')", "GEOMETRY('custom, crs''s definition')"),
    ("GEOMETRY('4326')", "GEOMETRY('4326')"),
])
def test_type_strings_round_trip_as_java_writes_them(text, written):
    parsed = parse_type(text)
    assert type_to_json(parsed) == written
    assert parse_type(written) == parsed


@pytest.mark.parametrize("text", ["GEOMETRY('')", "GEOGRAPHY(OGC:CRS84, rhumb)"])
def test_bad_type_strings(text):
    with pytest.raises(SchemaMismatch):
        parse_type(text)


def test_values_round_trip_with_parquet_geospatial_types(tmp_path):
    fields = [DataField(0, "id", BIGINT(False)), DataField(1, "g", GEOMETRY("EPSG:3857")),
              DataField(2, "h", GEOGRAPHY())]
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", fields)
    schema_json = json.load(open(f"{table.root}/schema/schema-0"))
    assert [f["type"] for f in schema_json["fields"]] == ["BIGINT NOT NULL", "GEOMETRY(EPSG:3857)",
                                                          "GEOGRAPHY(OGC:CRS84, spherical)"]
    table.write(pa.table({"id": [1, 2, 3], "g": [POINT, None, POINT], "h": [None, POINT, POINT]}))
    got = table.scan().to_arrow().sort_by("id")
    assert got.schema.field("g").type == pa.binary()
    assert got.column("g").to_pylist() == [POINT, None, POINT]
    assert got.column("h").to_pylist() == [None, POINT, POINT]
    path, = glob.glob(f"{table.root}/bucket-0/*.parquet")
    parquet_schema = pq.ParquetFile(path).metadata.schema
    assert str(parquet_schema.column(1).logical_type) == "Geometry(crs=EPSG:3857)"
    assert str(parquet_schema.column(2).logical_type).startswith("Geography(")
    entry, = table.core.live_entries(table.latest_snapshot(), table.schema())
    mins, maxs, nulls = decode_stats(entry.file.value_stats, fields)
    assert (mins[1:], maxs[1:], nulls) == ([None, None], [None, None], [0, 1, 1])  # Java: counts only
    # an Arrow schema carries the type in its field metadata: a table created from it keeps it
    again = tarn.Catalog(str(tmp_path)).create_table("db.u", got.schema)
    assert [str(f.type) for f in again.schema().fields][1:] == ["GEOMETRY(EPSG:3857)", "GEOGRAPHY(OGC:CRS84, spherical)"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(primary_key=["g"]), "primary key"),
    (dict(partition_keys=["g"]), "partition key"),
    (dict(options={"file.format": "orc"}), "parquet"),
    (dict(options={"clustering.columns": "g"}), "no order"),
    (dict(primary_key=["id"], options={"sequence.field": "g"}), "sequence fields"),
])
def test_java_refusals(tmp_path, kwargs, message):
    fields = [DataField(0, "id", BIGINT(False)), DataField(1, "g", GEOMETRY())]
    with pytest.raises(InvalidOption, match=message):
        tarn.Catalog(str(tmp_path)).create_table("db.t", fields, **kwargs)


def test_geography_edges_pyarrow_cannot_write_are_refused_before_writing(tmp_path):
    fields = [DataField(0, "id", BIGINT(False)), DataField(1, "h", GEOGRAPHY("OGC:CRS84", "karney"))]
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", fields)
    with pytest.raises(UnsupportedFeature, match="karney"):
        table.write(pa.table({"id": [1], "h": [POINT]}))
    assert table.latest_snapshot() is None
