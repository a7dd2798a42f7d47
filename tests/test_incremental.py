"""Incremental reads by time, by automatic tag and `scan.mode=latest-delta` (issue 43 item 3):
the range each option names, as Java 2.0 maps them (tarn/ops/incremental.py)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import tarn
from tarn.errors import InvalidOption
from tarn.meta.schema import SetOption

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])


def values(table: pa.Table) -> list:
    return sorted(table.column("v").to_pylist())


@pytest.fixture
def table(tmp_path):
    made = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    for i, v in enumerate(["a", "b", "c"]):
        made.write(pa.table({"k": [i], "v": [v]}, schema=SCHEMA))
    return made


def test_timestamps_map_to_the_snapshots_at_or_before(table):
    times = [s.time_millis for s in table.snapshots()]
    assert values(table.changes(start=dt.datetime.fromtimestamp(times[0] / 1000),
                                end=dt.datetime.fromtimestamp(times[2] / 1000 + 60))) == ["b", "c"]
    table.alter(SetOption("incremental-between-timestamp", f"{times[0] - 1000},{times[1]}"))
    assert values(table.scan().to_arrow()) == ["a", "b"]  # a start before the first snapshot includes it
    table.alter(SetOption("incremental-between-timestamp", f"{times[2] + 1000},{times[2] + 2000}"))
    assert table.scan().count() == 0  # after the latest snapshot: empty


def test_latest_delta_reads_the_last_append(table):
    table.alter(SetOption("scan.mode", "latest-delta"))
    assert values(table.scan().to_arrow()) == ["c"]


def test_to_auto_tag_diffs_from_the_previous_automatic_tag(table):
    table.create_tag("2026-11-01", 1)
    table.create_tag("manual", 2)
    table.create_tag("2026-11-03", 3)
    table.alter(SetOption("incremental-to-auto-tag", "2026-11-03"))
    assert values(table.scan().to_arrow()) == ["b", "c"]
    table.alter(SetOption("incremental-to-auto-tag", "2026-11-01"))
    assert table.scan().count() == 0  # no earlier automatic tag
    table.alter(SetOption("incremental-to-auto-tag", "manual"))
    with pytest.raises(InvalidOption, match="not an automatically created tag"):
        table.scan().to_arrow()


def test_bad_ranges_are_refused_naming_the_option(table):
    table.alter(SetOption("incremental-between", "1;2"))
    with pytest.raises(InvalidOption, match="incremental-between"):
        table.scan()


def test_end_defaults_to_the_latest_snapshot(table):
    assert values(table.changes(start=1)) == ["b", "c"]
    assert values(table.changes(start=dt.datetime(2000, 1, 1))) == ["a", "b", "c"]
    with pytest.raises(tarn.errors.InvalidArgument, match="end="):
        table.changes(start="some-tag")
