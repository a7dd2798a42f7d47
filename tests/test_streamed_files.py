"""Compaction output written a row group at a time: files roll at `target-file-size` on disk
(as Java's rolling writer does), their manifest entries describe exactly the rows they hold,
and a failure leaves none of the stream's files behind."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tarn
import tarn.codec.data_file as data_file
from tarn.codec.binary_row import deserialize_row
from tarn.stats import collect_stats, decode_stats

SCHEMA = pa.schema([("id", pa.int64()), ("price", pa.float64()), ("name", pa.string())])
TARGET = 256 * 1024


def rows(ids: np.ndarray, salt: int) -> pa.Table:
    rng = np.random.default_rng(salt)
    price = rng.random(len(ids))
    price[::97] = np.nan
    names = [None if i % 13 == 0 else f"name-{i * 7 + salt:09d}-{'x' * (i % 23)}" for i in ids]
    return pa.table({"id": ids, "price": price, "name": names}, schema=SCHEMA)


def live_entries(table):
    return table.planner(table.schema()).live_entries(table.latest_snapshot())


@pytest.fixture
def compacted(tmp_path):
    table = tarn.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                              options={"bucket": "1", "target-file-size": f"{TARGET // 1024} kb"})
    oracle = {}
    for salt in range(3):
        ids = np.random.default_rng(salt).choice(400_000, 150_000, replace=False).astype(np.int64)
        batch = rows(ids, salt)
        table.write(batch)
        oracle.update({r["id"]: r for r in batch.to_pylist()})
    table.compact(full=True)
    return table, oracle


def test_files_roll_on_disk_size_and_hold_every_row_once(compacted):
    table, oracle = compacted
    entries = sorted(live_entries(table), key=lambda e: e.file.min_sequence_number)
    assert len(entries) > 3 and {e.file.level for e in entries} == {5}
    sizes = sorted(e.file.file_size for e in entries)
    # every file but the last reached the target; none overshot it by more than a row group
    assert all(size >= TARGET for size in sizes[1:]) and max(sizes) < 2 * TARGET
    assert sum(e.file.row_count for e in entries) == len(oracle)
    got = table.scan().to_arrow()
    assert sorted(got.column("id").to_pylist()) == sorted(oracle)
    sample = {r["id"]: r for r in got.to_pylist()[:2000]}
    for key, row in sample.items():
        want = oracle[key]
        assert row["name"] == want["name"]
        assert row["price"] == want["price"] or (np.isnan(row["price"]) and np.isnan(want["price"]))


def test_entries_describe_the_rows_of_their_files(compacted):
    """Each streamed file's entry (row count, key range, key and value stats, sequence range,
    size) equals what its bytes hold; files of several row groups included."""
    table, _ = compacted
    schema = table.schema()
    key_type = schema.field("id").type
    value_fields = list(schema.fields)
    row_groups = 0
    for e in live_entries(table):
        path = os.path.join(table.root, "bucket-0", e.file.file_name)
        data = pq.read_table(path)
        row_groups += pq.ParquetFile(path).metadata.num_row_groups
        assert e.file.file_size == os.path.getsize(path)
        assert e.file.row_count == data.num_rows
        ids = data.column("_KEY_id").to_pylist()
        assert ids == sorted(ids)
        assert deserialize_row(e.file.min_key, [key_type]) == [ids[0]]
        assert deserialize_row(e.file.max_key, [key_type]) == [ids[-1]]
        sequence = data.column("_SEQUENCE_NUMBER").to_numpy()
        assert (e.file.min_sequence_number, e.file.max_sequence_number) == (sequence.min(), sequence.max())
        values = data.select([f.name for f in value_fields])
        expected = decode_stats(collect_stats(values, value_fields, ["truncate(16)"] * 3), value_fields)
        got = decode_stats(e.file.value_stats, value_fields)
        assert _same(got, expected)
        assert e.file.delete_row_count == 0
    assert row_groups > len(live_entries(table))  # the files were written in several row groups


def _same(a, b) -> bool:
    def norm(v):
        return "nan" if isinstance(v, float) and np.isnan(v) else v
    return [[norm(v) for v in part] for part in a] == [[norm(v) for v in part] for part in b]


def test_a_failing_stream_leaves_no_file_and_no_commit(tmp_path, monkeypatch):
    table = tarn.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                              options={"bucket": "1", "target-file-size": "128 kb",
                                       "write-only": "true"})
    for salt in range(2):
        table.write(rows(np.arange(salt, 120_000, 2, dtype=np.int64), salt))
    before = sorted(os.listdir(os.path.join(table.root, "bucket-0")))
    snapshot = table.latest_snapshot().id
    writes = {"count": 0}
    original = data_file.ParquetStream.write

    def failing(self, data):
        writes["count"] += 1
        if writes["count"] == 4:
            raise OSError("disk full")
        original(self, data)

    monkeypatch.setattr(data_file.ParquetStream, "write", failing)
    with pytest.raises(Exception, match="disk full"):
        table.compact(full=True)
    assert writes["count"] == 4  # it failed in the middle of the stream, after whole files
    assert sorted(os.listdir(os.path.join(table.root, "bucket-0"))) == before
    assert table.latest_snapshot().id == snapshot
    monkeypatch.undo()
    table.compact(full=True)
    assert table.scan().to_arrow().num_rows == 120_000


def test_a_write_rolls_its_files_on_disk_size_and_numbers_rows_on(tmp_path):
    """An append table's write: files roll at the target on disk, and their sequence numbers
    run on from file to file (each file's rows numbered after the previous file's)."""
    table = tarn.create_table(str(tmp_path / "t"), SCHEMA, options={"target-file-size": f"{TARGET // 1024} kb"})
    batch = rows(np.arange(300_000, dtype=np.int64), 5)
    table.write(batch)
    entries = sorted(live_entries(table), key=lambda e: e.file.min_sequence_number)
    assert len(entries) > 3
    sizes = [e.file.file_size for e in entries]
    assert all(size >= TARGET for size in sizes[:-1]) and max(sizes) < 2 * TARGET
    ranges = [(e.file.min_sequence_number, e.file.max_sequence_number, e.file.row_count) for e in entries]
    assert ranges[0][0] == 0 and ranges[-1][1] == batch.num_rows - 1
    assert all(low == previous_high + 1 for (_, previous_high, _), (low, _, _) in zip(ranges, ranges[1:]))
    assert all(high - low + 1 == count for low, high, count in ranges)
    assert table.scan().to_arrow().column("id").to_pylist() == batch.column("id").to_pylist()
