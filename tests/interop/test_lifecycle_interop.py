"""Partition expiry between tarn and Java Paimon 1.0 (javaref): a table with
`partition.expiration-time` (checked after every commit) expires the same partitions whichever
engine commits, each engine reads the other's result, and the drop is an OVERWRITE snapshot in
both. Values-time with a `yyyyMMdd` formatter, a pattern over two keys, and values that never
expire (unparsable)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

import tarn
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)

SCHEMA = pa.schema([pa.field("d", pa.string()), pa.field("h", pa.string()), pa.field("id", pa.int64())])


def day(ago: int) -> str:
    return (dt.date.today() - dt.timedelta(days=ago)).strftime("%Y%m%d")


def java_parts(read: dict) -> list[tuple]:
    return sorted({(r["d"], r["h"]) for r in read["rows"]})


def tarn_parts(table) -> list[tuple]:
    got = table.scan(columns=["d", "h"]).to_arrow().to_pylist()
    return sorted({(r["d"], r["h"]) for r in got})


def test_both_engines_expire_the_same_partitions(tmp_path, javaref):  # noqa: F811
    options = {"partition.expiration-time": "3 d", "partition.expiration-check-interval": "0 s",
               "partition.timestamp-formatter": "yyyyMMdd HH", "partition.timestamp-pattern": "$d $h"}
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, partition_keys=["d", "h"],
                                                             options=options)
    # tarn commits: the old partitions go, "junk" never parses
    table.write(pa.table({"d": [day(0), day(2), day(5), "junk"], "h": ["01", "23", "00", "00"],
                          "id": [1, 2, 3, 4]}, schema=SCHEMA))
    expected = sorted([(day(0), "01"), (day(2), "23"), ("junk", "00")])
    assert tarn_parts(table) == expected
    read, = javaref.run_many([["read", table.root]])
    assert java_parts(read) == expected

    # Java commits on top: its own expiry drops what it finds expired
    rows = [{"d": day(1), "h": "05", "id": 5}, {"d": day(9), "h": "05", "id": 6}]
    write, read, snapshots = javaref.run_many([
        ["write", table.root, "--rows", javaref.rows_arg(rows, tmp_path)], ["read", table.root],
        ["snapshots", table.root]])
    expected = sorted(expected + [(day(1), "05")])
    assert java_parts(read) == expected
    kinds = [s["commitKind"] for s in snapshots["snapshots"]]
    assert kinds[-1] == "OVERWRITE" and kinds.count("OVERWRITE") == 2  # one drop by tarn, one by Java
    assert tarn_parts(tarn.load_table(table.root)) == expected

    # tarn commits again on Java's table state and drops by the same rule
    table = tarn.load_table(table.root)
    table.write(pa.table({"d": [day(4)], "h": ["00"], "id": [7]}, schema=SCHEMA))
    assert tarn_parts(table) == expected
    read, = javaref.run_many([["read", table.root]])
    assert java_parts(read) == expected


def test_record_level_expiry_twins(tmp_path, javaref):  # noqa: F811
    """One table written by tarn, copied: Java 1.0's full compaction and tarn's drop the same
    expired rows (filtered before the merge: key 1 falls back to its live older row). INT
    seconds: Java 1.0 still wanted `record-level.time-field-type` for BIGINT, which 2.0 dropped
    for detecting millis by size, and refused null times, which 2.0 keeps (both in
    tests/test_record_expire.py)."""
    import shutil
    import time

    now = int(time.time())
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("t", pa.int32())])
    table = tarn.Catalog(str(tmp_path / "a")).create_table(
        "db.t", schema, primary_key="k",
        options={"bucket": "1", "record-level.expire-time": "1 h", "record-level.time-field": "t"})
    table.write(pa.table({"k": [1, 2, 3, 4], "v": ["v1", "b", "c", "d"],
                          "t": pa.array([now, now - 7200, now - 600, now + 60], pa.int32())}))
    table.write(pa.table({"k": [1], "v": ["v2"], "t": pa.array([now - 7200], pa.int32())}))
    twin = str(tmp_path / "b" / "db.db" / "t")
    shutil.copytree(table.root, twin)
    table.compact(full=True)
    compacted, read = javaref.run_many([["compact", twin, "--full"], ["read", twin]])
    java = {r["k"]: r["v"] for r in read["rows"]}
    assert java == {1: "v1", 3: "c", 4: "d"}
    assert {r["k"]: r["v"] for r in table.scan().to_arrow().to_pylist()} == java
    read, = javaref.run_many([["read", table.root]])
    assert {r["k"]: r["v"] for r in read["rows"]} == java


def test_long_lived_changelogs_both_ways(tmp_path, javaref):  # noqa: F811
    """A decoupled changelog lifecycle: tarn's expiry keeps changelog/changelog-<id> and Java 1.0
    streams the expired snapshots' changes from them; Java's expiry keeps them and tarn reads
    them back (Table.changes)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    options = {"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "2", "changelog.num-retained.max": "20",
               "num-sorted-run.compaction-trigger": "50"}
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.c", schema, primary_key="k", options=options)
    for i in range(1, 5):
        table.write(pa.table({"k": [i], "v": [f"t{i}"]}, schema=schema))
    assert table.snapshot_store.list_ids() == [3, 4] and table.changelog_store.list_ids() == [1, 2]
    stream, = javaref.run_many([["stream", table.root, "--from-snapshot", "1"]])
    got = [(r["_ROW_KIND"], r["k"], r["v"]) for e in stream["entries"] for r in e["rows"]]
    assert got == [("+I", i, f"t{i}") for i in range(1, 5)]

    rows = [{"k": 10 + i, "v": f"j{i}"} for i in range(3)]
    javaref.run_many([["write", table.root, "--rows", javaref.rows_arg([r], tmp_path)] for r in rows])
    table = tarn.load_table(table.root)
    latest = table.snapshot_store.latest_id()
    assert latest == 7 and table.snapshot_store.list_ids() == [6, 7]
    assert table.changelog_store.list_ids() == [1, 2, 3, 4, 5]  # Java kept 3..5 as changelogs
    for snapshot_id, (k, v) in zip((3, 4, 5), [(3, "t3"), (4, "t4"), (10, "j0")]):
        got = table.changes(snapshot_id)
        assert list(zip(got.column("_ROW_KIND").to_pylist(), got.column("k").to_pylist(),
                        got.column("v").to_pylist())) == [("+I", k, v)]
