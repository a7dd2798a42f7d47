"""VARIANT across engines: pypaimon 2.1 writes variants from Python objects (plain and
shredded files), tarn reads the same values; tarn writes, pypaimon 2.1 decodes the same values
and pypaimon-rust 0.4 reads the same bytes."""

from __future__ import annotations

import datetime as dt
import json
import pickle
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest

import tarn
import tarn.variant
from tests.interop.pypaimon_env import run_peer
from tests.interop.rust_env import run_rust_peer
from tests.interop.test_today_tables import read_ipc

pytestmark = pytest.mark.interop

# what both pypaimon 2.1 and tarn encode (pypaimon has no time of day, wraps ints past 64 bits)
VALUES = [None, True, False, 7, -300, 70000, 2**40, 1.5, Decimal("12.345"), Decimal("1234567890123.45"),
          "short", "long " * 30, b"\x00\x01", dt.date(2026, 11, 27), dt.datetime(2026, 11, 27, 1, 2, 3, 456),
          dt.datetime(2026, 11, 27, 1, 2, tzinfo=dt.timezone.utc), uuid.UUID(int=12345), {}, [],
          {"a": 1, "b": [1, None, "x"], "c": {"d": {"e": []}}}, [{"k": "v"}, [1, [2]]]]
SHRED = {"type": "ROW", "fields": [{"id": 0, "name": "v", "type": {"type": "ROW", "fields": [
    {"id": 0, "name": "age", "type": "BIGINT"}, {"id": 1, "name": "city", "type": "STRING"}]}}]}


def pypaimon_writes(warehouse, tmp_path, values, options=None, table="db.v") -> None:
    path = tmp_path / "values.pickle"
    path.write_bytes(pickle.dumps(values))
    run_peer("variant_write", {"warehouse": str(warehouse), "table": table, "values_pickle": str(path),
                               "options": options or {}})


def tarn_values(root) -> dict:
    rows = tarn.load_table(str(root)).scan().to_arrow()
    return dict(zip(rows.column("id").to_pylist(), tarn.variant.to_python(rows.column("v"))))


def test_pypaimon_writes_tarn_reads_every_kind(tmp_path):
    warehouse = tmp_path / "wh"
    pypaimon_writes(warehouse, tmp_path, VALUES)
    assert tarn_values(warehouse / "db.db" / "v") == dict(enumerate(VALUES))


def test_pypaimon_shredded_files_read_back(tmp_path):
    warehouse = tmp_path / "wh"
    values = [{"age": 41, "city": "Oslo", "extra": [1]}, {"age": 7}, "scalar", {"city": "Rome", "z": {"q": 1}}, None]
    pypaimon_writes(warehouse, tmp_path, values, {"variant.shreddingSchema": json.dumps(SHRED)})
    root = warehouse / "db.db" / "v"
    import pyarrow.parquet as pq
    files = list(root.rglob("*.parquet"))
    assert any("typed_value" in str(pq.ParquetFile(f).schema) for f in files)  # really shredded
    assert tarn_values(root) == dict(enumerate(values))


def test_tarn_writes_pypaimon_decodes_rust_reads(tmp_path):
    warehouse = tmp_path / "wh"
    table = tarn.Catalog(str(warehouse)).create_table(
        "db.v", pa.schema([("id", pa.int32()), ("v", tarn.variant.ARROW_TYPE)]))
    table.write({"id": pa.array(range(len(VALUES)), pa.int32()), "v": tarn.variant.from_python(VALUES)})
    out = tmp_path / "decoded.pickle"
    run_peer("variant_read", {"warehouse": str(warehouse), "table": "db.v", "out_pickle": str(out)})
    assert pickle.loads(out.read_bytes()) == dict(enumerate(VALUES))
    rust_out = tmp_path / "rust.arrow"
    run_rust_peer("read", {"warehouse": str(warehouse), "table": "db.v", "out_ipc": str(rust_out)})
    rust = read_ipc(rust_out).sort_by("id")
    mine = table.scan().to_arrow().sort_by("id")
    assert rust.column("v").to_pylist() == mine.column("v").to_pylist()  # the same bytes
    # pypaimon keeps writing to tarn's table; tarn reads both
    path = tmp_path / "more.pickle"
    path.write_bytes(pickle.dumps([{"from": "pypaimon"}]))
    run_peer("variant_write", {"warehouse": str(warehouse), "table": "db.v", "values_pickle": str(path),
                               "first_id": 100})
    assert tarn_values(table.root) == {**dict(enumerate(VALUES)), 100: {"from": "pypaimon"}}


def test_tarn_shredded_files_read_by_the_peers(tmp_path):
    warehouse = tmp_path / "wh"
    table = tarn.Catalog(str(warehouse)).create_table(
        "db.v", pa.schema([("id", pa.int32()), ("v", tarn.variant.ARROW_TYPE)]),
        options={"variant.shreddingSchema": json.dumps(SHRED)})
    values = [{"age": 41, "city": "Oslo", "extra": [1]}, {"age": "old"}, "scalar", None, {"city": "Rome"}]
    table.write({"id": pa.array(range(len(values)), pa.int32()), "v": tarn.variant.from_python(values)})
    out = tmp_path / "decoded.pickle"
    run_peer("variant_read", {"warehouse": str(warehouse), "table": "db.v", "out_pickle": str(out)})
    assert pickle.loads(out.read_bytes()) == dict(enumerate(values))
