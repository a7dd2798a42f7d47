"""Partition expiry (issue 43 item 1): `partition.expiration-time` and its options dropping
whole partitions after commits as Java's PartitionExpire does, `expire_partitions` (Python, CLI,
Spark SQL's CALL), `partition.timestamp-format.strict`; a model test against a dict of
partitions."""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer import testing as typer_testing

import tarn
from tarn.cli import app
from tarn.errors import InvalidArgument, InvalidOption
from tarn.ops import partition_expire as PE
from tarn.partition_time import java_pattern_to_strptime, parse_partition_time, partition_time_text

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


def day(offset: int) -> str:
    return str(dt.date.today() - dt.timedelta(days=offset))  # today when asked: a suite may cross midnight


def rows(*days: str) -> pa.Table:
    return pa.table({"dt": list(days), "id": list(range(len(days)))}, schema=SCHEMA)


def partitions_of(table) -> list[str]:
    return sorted(set(table.scan(columns=["dt"]).to_arrow().column("dt").to_pylist()))


OPTION_NAMES = {
    "partition_expiration_time": "partition.expiration-time",
    "partition_expiration_check_interval": "partition.expiration-check-interval",
    "end_input_check_partition_expire": "end-input.check-partition-expire",
    "partition_timestamp_pattern": "partition.timestamp-pattern",
    "partition_timestamp_formatter": "partition.timestamp-formatter",
    "partition_expiration_batch_size": "partition.expiration-batch-size",
    "partition_expiration_strategy": "partition.expiration-strategy",
    "partition_timestamp_format_strict": "partition.timestamp-format.strict",
}


def make(tmp_path, name="db.p", schema=SCHEMA, keys=("dt",), **options) -> tarn.Table:
    """A table partitioned by `keys`; options by their Python spelling (OPTION_NAMES)."""
    return tarn.Catalog(str(tmp_path)).create_table(name, schema, partition_keys=list(keys),
                                                    options={OPTION_NAMES[k]: v for k, v in options.items()})


# ---------------------------------------------------------------------------------------------
# the time of a partition


def test_partition_time_as_java_extracts_it():
    assert parse_partition_time("2026-1-5", None) == dt.datetime(2026, 1, 5)
    assert parse_partition_time("2026-01-05 07:08:09.5", None) == dt.datetime(2026, 1, 5, 7, 8, 9, 500000)
    assert parse_partition_time("2026-13-01", None) == dt.datetime(2027, 1, 1)  # LENIENT rolls over
    with pytest.raises(ValueError):
        parse_partition_time("20260105", None)  # needs a formatter
    assert parse_partition_time("20260105", "yyyyMMdd") == dt.datetime(2026, 1, 5)
    assert parse_partition_time("2026/01/05 07", "yyyy/MM/dd HH") == dt.datetime(2026, 1, 5, 7)
    assert java_pattern_to_strptime("yyyy-MM-dd'T'HH:mm:ss.SSS", "t") == "%Y-%m-%dT%H:%M:%S.%f"
    with pytest.raises(InvalidOption, match="'EEE'"):
        java_pattern_to_strptime("EEE yyyy", "t")
    keys = ["dt", "dt1", "hour"]
    assert partition_time_text(keys, ["a", "b", "07"], "$dt1 $dt $hour:00:00") == "b a 07:00:00"
    assert partition_time_text(keys, ["a", "b", "07"], None) == "a"
    assert partition_time_text(keys, ["a", "b", "07"], "$nokey") == "$nokey"


# ---------------------------------------------------------------------------------------------
# after commits


def test_commits_drop_expired_partitions(tmp_path):
    t = make(tmp_path, partition_expiration_time="2 d", partition_expiration_check_interval="0 s")
    t.write(rows(day(0), day(1), day(2), day(9), "not a date"))
    latest = t.latest_snapshot()
    assert latest.commit_kind == "OVERWRITE" and latest.id == 2
    assert partitions_of(t) == sorted([day(0), day(1), "not a date"])
    assert ids_at(t, 1) == 5  # the write itself stands: time travel reads it whole
    t.write(rows(day(3)))  # written, then dropped by the same commit's expiry
    assert partitions_of(t) == sorted([day(0), day(1), "not a date"])


def ids_at(table, snapshot_id: int) -> int:
    return table.scan(snapshot_id=snapshot_id).count()


def test_the_check_interval_is_kept_per_process_and_table(tmp_path):
    t = make(tmp_path, partition_expiration_time="1 d", partition_expiration_check_interval="1 h")
    PE._LAST_CHECK[t.root.rstrip("/")] = time.monotonic() - 7200  # the last check was 2 h ago: due
    t.write(rows(day(5)))
    assert partitions_of(t) == []
    t.write(rows(day(6)))  # checked moments ago: not due
    assert partitions_of(t) == [day(6)]


def test_end_input_checks_every_batch_commit(tmp_path):
    t = make(tmp_path, partition_expiration_time="1 d", partition_expiration_check_interval="1 d",
             end_input_check_partition_expire="true")
    t.write(rows(day(5)))
    t.write(rows(day(6)))
    assert partitions_of(t) == []


def test_pattern_over_two_keys_and_a_formatter(tmp_path):
    schema = pa.schema([("d", pa.string()), ("h", pa.int32()), ("id", pa.int64())])
    old = (dt.date.today() - dt.timedelta(days=3)).strftime("%Y%m%d")
    new = dt.date.today().strftime("%Y%m%d")
    t = make(tmp_path, schema=schema, keys=("d", "h"), partition_expiration_time="1 d",
             partition_expiration_check_interval="0 s", partition_timestamp_pattern="$d $h:00:00",
             partition_timestamp_formatter="yyyyMMdd H:mm:ss")
    t.write(pa.table({"d": [old, old, new], "h": [1, 23, 0], "id": [1, 2, 3]}, schema=schema))
    assert t.scan().to_arrow().column("id").to_pylist() == [3]


def test_update_time_strategy(tmp_path):
    t = make(tmp_path)
    t.write(rows("a"))
    time.sleep(1.2)
    t.write(rows("b"))
    assert t.expire_partitions("1 s", expire_strategy="update-time") == ["dt=a"]
    assert partitions_of(t) == ["b"]


def test_max_expires_and_batches(tmp_path):
    t = make(tmp_path, partition_expiration_batch_size="2")
    t.write(rows(*[day(i) for i in range(3, 8)]))
    before = t.latest_snapshot().id
    dropped = t.expire_partitions("1 d", max_expires=3)
    assert dropped == [f"dt={day(i)}" for i in (7, 6, 5)]  # in the order of their values
    assert t.latest_snapshot().id == before + 2  # batches of 2: two OVERWRITE commits
    assert partitions_of(t) == [day(4), day(3)]
    assert t.expire_partitions("1 d", options="partition.expiration-max-num=10") == [f"dt={day(4)}", f"dt={day(3)}"]
    assert t.expire_partitions("1 d") == []


def test_nulls_and_tags(tmp_path):
    t = make(tmp_path)
    t.write(pa.table({"dt": [None, day(5)], "id": [1, 2]}, schema=SCHEMA))
    t.create_tag("before")
    assert t.expire_partitions("1 d") == [f"dt={day(5)}"]  # a null value never expires by values-time
    assert t.scan().count() == 1
    assert t.scan(tag="before").count() == 2  # the tag keeps the dropped partition's files
    assert t.expire_partitions("0 s", expire_strategy="update-time") == ["dt=__DEFAULT_PARTITION__"]


def test_bad_input(tmp_path):
    t = make(tmp_path)
    with pytest.raises(InvalidArgument, match="expiration time"):
        t.expire_partitions()
    with pytest.raises(InvalidArgument, match="expiration_time"):
        t.expire_partitions("soon")
    with pytest.raises(InvalidOption, match="partition.expiration-strategy"):
        t.expire_partitions("1 d", expire_strategy="custom")
    with pytest.raises(InvalidOption, match="partition.expiration-strategy"):
        make(tmp_path, name="db.bad", partition_expiration_time="1 d", partition_expiration_strategy="whenever")
    with pytest.raises(InvalidOption, match="pattern letters"):
        make(tmp_path, name="db.bad2", partition_timestamp_formatter="yyyy-ww")
    plain = tarn.Catalog(str(tmp_path)).create_table("db.plain", SCHEMA)
    with pytest.raises(InvalidArgument, match="partitioned"):
        plain.expire_partitions("1 d")


def test_strict_format_refuses_unparsable_partitions_before_writing(tmp_path):
    t = make(tmp_path, partition_timestamp_formatter="yyyyMMdd", partition_timestamp_format_strict="true")
    t.write(rows("20260101"))
    files = sorted(os.listdir(t.root))
    with pytest.raises(InvalidArgument, match="dt=2026-01-01 does not match"):
        t.write(rows("20260102", "2026-01-01"))
    assert t.latest_snapshot().id == 1 and sorted(os.listdir(t.root)) == files
    assert partitions_of(t) == ["20260101"]


def test_cli_expire_partitions(tmp_path):
    t = make(tmp_path)
    t.write(rows(day(0), day(4)))
    runner = typer_testing.CliRunner()
    out = runner.invoke(app, ["expire-partitions", "db.p", "--expiration-time", "2 d", "--warehouse", str(tmp_path),
                              "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == {"table": "db.p", "expired_partitions": [f"dt={day(4)}"]}
    out = runner.invoke(app, ["expire-partitions", "db.p", "--expiration-time", "2 d", "--warehouse", str(tmp_path)])
    assert out.exit_code == 0 and "no expired partitions" in out.output
    out = runner.invoke(app, ["expire-partitions", "db.p", "--warehouse", str(tmp_path)])
    assert out.exit_code == 1 and "expiration time" in out.output


# ---------------------------------------------------------------------------------------------
# the model: a dict of partitions, dropped exactly when Java's values-time would drop them


WRITE = st.tuples(st.just("write"), st.lists(st.integers(0, 8), min_size=1, max_size=4))
TTL = st.tuples(st.just("ttl"), st.integers(1, 6))
TAG = st.tuples(st.just("tag"), st.just(0))
DROP = st.tuples(st.just("expire_now"), st.integers(1, 6))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(WRITE, WRITE, TTL, TAG, DROP), min_size=1, max_size=10))
def test_model_of_partition_expiry(ops):
    with tempfile.TemporaryDirectory() as warehouse:
        t = make(warehouse, partition_expiration_check_interval="0 s")
        ttl: int | None = None
        model: dict[str, int] = {}  # partition -> rows
        tags: dict[str, dict] = {}
        for op, arg in ops:
            if op == "write":
                t.write(rows(*[day(o) for o in arg]))
                for o in arg:
                    model[day(o)] = model.get(day(o), 0) + 1
                if ttl is not None:
                    model = {p: n for p, n in model.items() if p > day(ttl)}
            elif op == "ttl":
                ttl = arg
                t.alter(tarn.SetOption("partition.expiration-time", f"{arg} d"))  # a schema change: no commit, no expiry yet
            elif op == "tag" and t.latest_snapshot() is not None:
                name = f"t{len(tags)}"
                t.create_tag(name)
                tags[name] = dict(model)
            elif op == "expire_now":
                expected = sorted(p for p in model if p <= day(arg))
                assert t.expire_partitions(f"{arg} d") == [f"dt={p}" for p in expected]
                model = {p: n for p, n in model.items() if p > day(arg)}
            got = t.scan(columns=["dt"]).to_arrow().column("dt").to_pylist()
            assert {p: got.count(p) for p in set(got)} == model
        for name, seen in tags.items():
            got = t.scan(tag=name, columns=["dt"]).to_arrow().column("dt").to_pylist()
            assert {p: got.count(p) for p in set(got)} == seen


def test_dropping_a_dynamic_bucket_partition_drops_its_hash_index(tmp_path):
    """An OVERWRITE of no rows (the drop) removes the partition's HASH index too (it kept the
    stale key-to-bucket map before), and the partition takes writes again from scratch."""
    from tarn import partition

    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False)])
    t = tarn.Catalog(str(tmp_path)).create_table("db.h", schema, primary_key=["dt", "id"], partition_keys="dt",
                                                 options={"bucket": "-1"})
    t.write(pa.table({"dt": [day(0), day(5)] * 3, "id": [1, 1, 2, 2, 3, 3]}, schema=schema))
    assert t.expire_partitions("2 d") == [f"dt={day(5)}"]
    snapshot = t.latest_snapshot()
    entries = t.core.manifests().read_index_manifest(snapshot.index_manifest)
    assert {partition.from_bytes(t.schema(), e.partition) for e in entries} == {(day(0),)}
    t.write(pa.table({"dt": [day(5)], "id": [1]}, schema=schema))
    assert sorted(r["dt"] for r in t.scan().to_arrow().to_pylist()) == sorted([day(0)] * 3 + [day(5)])
