"""Record-level expiry (issue 43 item 1): `record-level.expire-time` with
`record-level.time-field` — compactions of primary-key tables drop expired rows as Java's
RecordLevelExpire does (filtered as read, before the merge; files whose oldest row expired are
rewritten); reads before a compaction still see them."""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

import tarn
from tarn.errors import InvalidOption

HOUR = 3600


def make(tmp_path, time_type: pa.DataType, expire: str = "1 h", name: str = "db.r") -> tarn.Table:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("t", time_type)])
    return tarn.Catalog(str(tmp_path)).create_table(
        name, schema, primary_key="k",
        options={"bucket": "1", "record-level.expire-time": expire, "record-level.time-field": "t"})


def rows_of(table) -> dict:
    return {r["k"]: r["v"] for r in table.scan(columns=["k", "v"]).to_arrow().to_pylist()}


def times(time_type: pa.DataType, seconds: list[int | None]) -> pa.Array:
    if pa.types.is_int32(time_type):
        return pa.array(seconds, time_type)
    if pa.types.is_int64(time_type):  # milliseconds (>= 10^12)
        return pa.array([None if s is None else s * 1000 for s in seconds], time_type)
    return pa.array([None if s is None else dt.datetime.fromtimestamp(s, dt.timezone.utc).replace(
        tzinfo=None if time_type.tz is None else dt.timezone.utc) for s in seconds], time_type)


@pytest.mark.parametrize("time_type", [pa.int32(), pa.int64(), pa.timestamp("us"), pa.timestamp("ms", tz="UTC")],
                         ids=["int-seconds", "bigint-millis", "timestamp", "timestamp-ltz"])
def test_compaction_drops_expired_rows(tmp_path, time_type):
    now = int(time.time())  # taken here: the suite may run long after this module loads
    t = make(tmp_path, time_type)
    data = pa.table({"k": [1, 2, 3, 4], "v": ["old", "fresh", "no time", "edge"],
                     "t": times(time_type, [now - 2 * HOUR, now, None, now - HOUR + 600])})
    t.write(data)
    assert rows_of(t) == {1: "old", 2: "fresh", 3: "no time", 4: "edge"}  # reads do not filter
    t.compact(full=True)
    assert rows_of(t) == {2: "fresh", 3: "no time", 4: "edge"}


def test_bigint_seconds_and_an_older_live_version(tmp_path):
    """BIGINT below 10^12 is seconds. Rows are filtered before they merge: a key whose newest
    row expired falls back to its older live row (Java's order of filter and merge)."""
    now = int(time.time())
    t = make(tmp_path, pa.int64())
    t.write(pa.table({"k": [1, 2], "v": ["live v1", "x"], "t": pa.array([now, now], pa.int64())}))
    t.write(pa.table({"k": [1, 2], "v": ["expired v2", "gone"], "t": pa.array([now - 2 * HOUR] * 2, pa.int64())}))
    assert rows_of(t) == {1: "expired v2", 2: "gone"}
    t.compact(full=True)
    assert rows_of(t) == {1: "live v1", 2: "x"}


def test_a_compacted_file_is_rewritten_once_its_rows_expire(tmp_path):
    t = make(tmp_path, pa.int64(), expire="2 s")
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"], "t": pa.array([int(time.time() * 1000), None], pa.int64())}))
    t.compact(full=True)  # one max-level file
    before = t.latest_snapshot().id
    assert t.compact(full=True) is None  # nothing expired yet: nothing to do
    time.sleep(3.1)
    t.compact(full=True)
    assert t.latest_snapshot().id == before + 1 and rows_of(t) == {2: "b"}


def test_bad_time_fields(tmp_path):
    catalog = tarn.Catalog(str(tmp_path))
    schema = pa.schema([("k", pa.int64()), ("t", pa.string())])
    with pytest.raises(InvalidOption, match="record-level.time-field"):
        catalog.create_table("db.a", schema, options={"record-level.expire-time": "1 h"})
    with pytest.raises(InvalidOption, match="must be one of INT, BIGINT"):
        catalog.create_table("db.b", schema, options={"record-level.expire-time": "1 h",
                                                      "record-level.time-field": "t"})
    with pytest.raises(InvalidOption, match="does not have"):
        catalog.create_table("db.c", schema, options={"record-level.expire-time": "1 h",
                                                      "record-level.time-field": "nope"})
