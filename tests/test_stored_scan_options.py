"""Read options stored in a table (`scan.mode`, `scan.snapshot-id`, `scan.tag-name`,
`scan.timestamp*`, `scan.watermark`, `scan.version`, `scan.file-creation-time-millis`,
`scan.creation-time-millis`, `scan.bucket`): every batch read starts where they say, as Java's
reads of such a table do (tarn/scan/startup.py); a read's own argument wins; writes are not
affected."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import tarn
from tarn.errors import InvalidOption, SnapshotNotFound, UnsupportedFeature
from tests.maintenance_checks import set_options_on_disk

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def ids(scan) -> list[int]:
    return sorted(scan.to_arrow().column("id").to_pylist())


def batch(*values: int) -> pa.Table:
    return pa.table({"id": list(values), "v": [f"v{i}" for i in values]}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path):
    """An append table with three commits: snapshot n adds the id n."""
    t = tarn.Catalog(str(tmp_path)).create_table("db.t", SCHEMA)
    for i in (1, 2, 3):
        t.write(batch(i))
        time.sleep(0.01)  # distinct commit times
    return t


def with_options(table, options: dict) -> tarn.Table:
    table.alter(*[tarn.SetOption(k, str(v)) for k, v in options.items()])
    return table


def test_stored_snapshot_id_pins_every_read_and_an_argument_wins(table):
    with_options(table, {"scan.snapshot-id": 2})
    assert ids(table.scan()) == [1, 2]
    assert table.scan().count() == 2
    assert ids(table.scan(snapshot_id=3)) == [1, 2, 3]  # a read argument wins
    assert ids(table.scan(snapshot_id=1)) == [1]
    table.write(batch(4))  # writes go to the latest snapshot as always
    assert table.latest_snapshot().id == 4
    assert ids(table.scan()) == [1, 2]
    assert ids(table.scan(snapshot_id=4)) == [1, 2, 3, 4]


def test_stored_tag_and_version(table):
    table.create_tag("two", snapshot_id=2)
    with_options(table, {"scan.tag-name": "two"})
    assert ids(table.scan()) == [1, 2]
    table.alter(tarn.RemoveOption("scan.tag-name"), tarn.SetOption("scan.version", "two"))
    assert ids(table.scan()) == [1, 2]
    table.alter(tarn.SetOption("scan.version", "1"))
    assert ids(table.scan()) == [1]
    table.alter(tarn.SetOption("scan.version", "nope"))
    with pytest.raises(SnapshotNotFound, match="scan.version"):
        table.scan()


def test_stored_timestamps(table):
    second = table.snapshot(2).time_millis
    with_options(table, {"scan.timestamp-millis": second})
    assert ids(table.scan()) == [1, 2]
    table.alter(tarn.RemoveOption("scan.timestamp-millis"), tarn.SetOption("scan.timestamp-millis", 0))
    with pytest.raises(SnapshotNotFound, match="earlier than or equal"):
        table.scan()
    moment = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second // 1000)) + f".{second % 1000:03d}"
    table.alter(tarn.RemoveOption("scan.timestamp-millis"), tarn.SetOption("scan.timestamp", moment))
    assert ids(table.scan()) == [1, 2]  # parsed in the local time zone, as Java parses it in the JVM's
    table.alter(tarn.SetOption("scan.timestamp", "2000-01-01"))
    with pytest.raises(SnapshotNotFound):
        table.scan()


def test_stored_watermark(tmp_path):
    t = tarn.Catalog(str(tmp_path)).create_table("db.w", SCHEMA)
    for i, watermark in ((1, None), (2, 100), (3, None), (4, 300)):
        writer = t.core.new_writer()
        writer.write(batch(i))
        t.commit(writer.prepare_commit(), watermark=watermark)
    for mark, expected in ((50, [1, 2]), (100, [1, 2]), (101, [1, 2, 3, 4]), (300, [1, 2, 3, 4])):
        t.alter(tarn.SetOption("scan.watermark", str(mark)))
        assert ids(t.scan()) == expected, mark
    t.alter(tarn.SetOption("scan.watermark", "301"))
    with pytest.raises(SnapshotNotFound, match="watermark"):
        t.scan()
    t.alter(tarn.RemoveOption("scan.watermark"), tarn.SetOption("scan.version", "watermark-100"))
    assert ids(t.scan()) == [1, 2]


def test_compacted_full_reads_the_latest_compaction(tmp_path):
    t = tarn.Catalog(str(tmp_path)).create_table("db.k", SCHEMA, primary_key="id", options={"bucket": "1"})
    t.write(batch(1, 2))
    t.write(batch(3))
    t.compact(full=True)  # snapshot 3
    t.write(batch(4))
    with_options(t, {"scan.mode": "compacted-full"})
    assert ids(t.scan()) == [1, 2, 3]
    assert ids(t.scan(snapshot_id=4)) == [1, 2, 3, 4]


def test_scan_bucket_reads_one_bucket(tmp_path):
    t = tarn.Catalog(str(tmp_path)).create_table("db.b", SCHEMA, primary_key="id", options={"bucket": "4"})
    t.write(batch(*range(40)))
    by_bucket = {s.bucket: s for s in t.scan().plan()}
    assert len(by_bucket) > 1
    bucket = min(by_bucket)
    with_options(t, {"scan.bucket": bucket})
    expected = sorted(t.scan(snapshot_id=1).to_arrow().column("id").to_pylist())  # argument keeps the bucket
    got = ids(t.scan())
    assert got == expected and 0 < len(got) < 40
    assert t.scan().count() == len(got)
    assert all(s.bucket == bucket for s in t.scan().plan())


def test_file_creation_time_keeps_newer_files(tmp_path):
    t = tarn.Catalog(str(tmp_path)).create_table("db.f", SCHEMA)
    t.write(batch(1))
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    t.write(batch(2))
    with_options(t, {"scan.file-creation-time-millis": cut})
    assert ids(t.scan()) == [2]
    t.alter(tarn.RemoveOption("scan.file-creation-time-millis"), tarn.SetOption("scan.creation-time-millis", cut))
    # the first snapshot committed at or after the cut: snapshot 2, read whole
    assert ids(t.scan()) == [1, 2]


def test_incremental_modes_read_changed_rows_and_writes_go_on(table):
    set_options_on_disk(table, {"scan.mode": "latest-delta"})  # as another engine stores it
    table = tarn.load_table(table.root)
    assert ids(table.scan()) == [3]  # the rows the latest APPEND snapshot wrote
    assert "snapshot=3" in repr(table)
    table.write(batch(9))
    assert table.latest_snapshot().id == 4
    assert ids(table.scan()) == [9]


@pytest.mark.parametrize("options, message", [
    ({"scan.mode": "from-snapshot"}, "exactly one"),
    ({"scan.mode": "from-timestamp"}, "exactly one"),
    ({"scan.snapshot-id": "1", "scan.tag-name": "t"}, "exactly one"),
    ({"scan.mode": "latest", "scan.snapshot-id": "1"}, "conflicts"),
    ({"scan.mode": "from-snapshot-full"}, "exactly one"),
    ({"scan.snapshot-id": "x"}, "scan.snapshot-id"),
])
def test_bad_start_options_fail_at_creation(tmp_path, options, message):
    catalog = tarn.Catalog(str(tmp_path))
    with pytest.raises(InvalidOption, match=message):
        catalog.create_table("db.bad", SCHEMA, options=options)
    assert not catalog.table_exists("db.bad")
