"""Tags: file format (FORMAT.md section 3), create/rename/delete/list, bad input, time travel,
automatic creation and expiry."""

import datetime as dt
import json
import os
import time

import pytest

import tarn
from tarn.errors import InvalidArgument, InvalidOption, SnapshotNotFound
from tarn.ops import tags as T
from tarn.ops import time_travel as TT
from tarn.ops.expire import expire_snapshots
from tarn.meta.snapshot import Snapshot
from tarn.store.tags import (
    duration_seconds_text, local_datetime_array, parse_local_datetime, parse_tag, tag_json,
)
from tests.maintenance_checks import (
    events, make_events, missing_files, rows, set_options_on_disk, tree, unreferenced_files,
)

FAR_FUTURE = int(time.time() * 1000) + 10**9


def expire_all_but_last(table):
    return expire_snapshots(table, retain_min=1, retain_max=1, older_than_ms=FAR_FUTURE, max_deletes=10**6)


# ---------------------------------------------------------------------------------------------
# the file format


def test_local_datetime_array_vectors():
    assert local_datetime_array(dt.datetime(2024, 1, 2, 3, 4, 5, 6000)) == [2024, 1, 2, 3, 4, 5, 6000000]
    assert local_datetime_array(dt.datetime(2024, 1, 2, 3, 4)) == [2024, 1, 2, 3, 4]
    assert local_datetime_array(dt.datetime(2024, 1, 2, 3, 4, 0, 1)) == [2024, 1, 2, 3, 4, 0, 1000]
    assert parse_local_datetime([2024, 1, 2, 3, 4, 5, 6000000], "x") == dt.datetime(2024, 1, 2, 3, 4, 5, 6000)
    assert parse_local_datetime([2024, 1, 2, 3, 4], "x") == dt.datetime(2024, 1, 2, 3, 4)


def test_duration_text_vectors():
    assert duration_seconds_text(dt.timedelta(days=1)) == "86400.000000000"
    assert duration_seconds_text(dt.timedelta(seconds=1, microseconds=500)) == "1.000500000"


def test_tag_without_retention_is_the_snapshot_json_and_its_creation_time(catalog):
    """Issue 44: tarn records `tagCreateTime` in every tag it creates (Java only with a retention)."""
    t = make_events(catalog)
    t.write(events("a", [1, 2]))
    tag = T.create_tag(t, "first")
    with open(os.path.join(t.root, "tag", "tag-first"), "rb") as f:
        tag_json = json.loads(f.read())
    with open(os.path.join(t.root, "snapshot", "snapshot-1"), "rb") as f:
        snapshot_json = json.loads(f.read())
    assert {k: v for k, v in tag_json.items() if k != "tagCreateTime"} == snapshot_json
    assert len(tag_json["tagCreateTime"]) == 7 and "tagTimeRetained" not in tag_json
    assert tag.create_time is not None and tag.time_retained is None


def test_tag_with_retention_json(catalog):
    t = make_events(catalog)
    t.write(events("a", [1]))
    T.create_tag(t, "kept", time_retained=dt.timedelta(days=1))
    text = open(os.path.join(t.root, "tag", "tag-kept")).read()
    assert '"tagTimeRetained" : 86400.000000000' in text
    obj = json.loads(text)
    assert len(obj["tagCreateTime"]) in (5, 6, 7) and obj["tagCreateTime"][0] == dt.datetime.now().year
    snapshot_obj = json.loads(open(os.path.join(t.root, "snapshot", "snapshot-1")).read())
    assert {k: v for k, v in obj.items() if not k.startswith("tag")} == snapshot_obj
    tag = parse_tag("kept", text, "x")
    assert tag.time_retained == dt.timedelta(days=1) and tag.snapshot.id == 1


def test_tag_json_round_trip_keeps_unknown_keys():
    snap = Snapshot(id=3, schema_id=0, base_manifest_list="b", delta_manifest_list="d", commit_user="u",
                    commit_identifier=1, commit_kind="APPEND", time_millis=5,
                    writer_version="java-2.1", extra={"someFutureField": [1, 2]})
    created = dt.datetime(2024, 1, 2, 3, 4, 5, 6000)
    tag = parse_tag("n", tag_json(snap, created, dt.timedelta(hours=2)), "x")
    assert tag.snapshot == snap and tag.snapshot.extra == {"someFutureField": [1, 2]}
    assert tag.snapshot.writer_version == "java-2.1"
    assert tag.create_time == created and tag.time_retained == dt.timedelta(hours=2)
    assert '"tagCreateTime" : [ 2024, 1, 2, 3, 4, 5, 6000000 ]' in tag_json(snap, created, dt.timedelta(hours=2))


# ---------------------------------------------------------------------------------------------
# manual tags


def test_create_list_rename_delete(catalog):
    t = make_events(catalog)
    t.write(events("a", [1]))
    t.write(events("b", [2]))
    T.create_tag(t, "one", 1)
    T.create_tag(t, "latest")
    assert [(x.name, x.snapshot_id) for x in T.list_tags(t)] == [("one", 1), ("latest", 2)]
    T.rename_tag(t, "one", "uno")
    assert [x.name for x in T.list_tags(t)] == ["uno", "latest"]
    assert rows(t, TT.snapshot_by_tag(t, "uno")) == rows(t, t.snapshot(1))
    T.delete_tag(t, "uno")
    assert [x.name for x in T.list_tags(t)] == ["latest"]
    assert len(rows(t, t.snapshot(1))) == 1  # the snapshot and its files are untouched


def test_default_time_retained_option(catalog):
    t = make_events(catalog, **{"tag.default-time-retained": "2 h"})
    t.write(events("a", [1]))
    assert T.create_tag(t, "x").time_retained == dt.timedelta(hours=2)
    assert T.create_tag(t, "y", time_retained="30 min").time_retained == dt.timedelta(minutes=30)


@pytest.mark.parametrize("name", ["", "   ", "12", "007", "a/b", ".hidden", None])
def test_bad_tag_names_change_nothing(catalog, name):
    t = make_events(catalog)
    t.write(events("a", [1]))
    before = tree(t.root)
    with pytest.raises(InvalidArgument):
        T.create_tag(t, name)
    assert tree(t.root) == before


def test_taken_name_and_bad_retention_change_nothing(catalog):
    t = make_events(catalog)
    t.write(events("a", [1]))
    T.create_tag(t, "v1")
    before = tree(t.root)
    with pytest.raises(InvalidArgument, match="already exists"):
        T.create_tag(t, "v1")
    with pytest.raises(InvalidArgument):
        T.create_tag(t, "v2", time_retained="-1")
    with pytest.raises(InvalidArgument):
        T.create_tag(t, "v2", time_retained="soon")
    with pytest.raises(InvalidArgument, match="already exists"):
        T.rename_tag(t, "v1", "v1")
    with pytest.raises(SnapshotNotFound, match="'nope'"):
        T.rename_tag(t, "nope", "v3")
    with pytest.raises(SnapshotNotFound, match="'nope'"):
        T.delete_tag(t, "nope")
    assert tree(t.root) == before
    assert T.create_tag(t, "v1", ignore_if_exists=True).snapshot_id == 1


def test_tag_on_empty_table_and_missing_snapshot(catalog):
    t = make_events(catalog)
    with pytest.raises(SnapshotNotFound, match="no snapshot"):
        T.create_tag(t, "x")
    t.write(events("a", [1]))
    before = tree(t.root)
    with pytest.raises(SnapshotNotFound, match="snapshot 7"):
        T.create_tag(t, "x", 7)
    assert tree(t.root) == before


def test_tagging_an_expired_snapshot_is_rejected(catalog):
    t = make_events(catalog)
    for i in range(4):
        t.write(events("a", [i]))
    T.create_tag(t, "two", 2)
    assert expire_all_but_last(t) == 3
    before = tree(t.root)
    with pytest.raises(SnapshotNotFound, match="snapshot 1 does not exist"):
        T.create_tag(t, "one", 1)
    assert tree(t.root) == before
    # an expired snapshot that a tag still holds can be tagged again (Paimon's findSnapshot)
    assert T.create_tag(t, "two-again", 2).snapshot_id == 2


# ---------------------------------------------------------------------------------------------
# deleting tags frees exactly what nothing else uses


def overwrite_history(catalog, n=5):
    """A table where every snapshot replaces partition 'a' (so each one's files die next)."""
    t = make_events(catalog)
    t.write(events("b", [100]))
    for i in range(n):
        t.overwrite(events("a", [i, i + 10], tag=f"s{i}"), partition={"p": "a"})
    return t


def test_delete_tag_of_expired_snapshot_frees_its_files(catalog):
    t = overwrite_history(catalog)
    T.create_tag(t, "t2", 2)
    T.create_tag(t, "t4", 4)
    want = {n: rows(t, TT.snapshot_by_tag(t, n)) for n in ("t2", "t4")}
    expire_all_but_last(t)
    assert t.snapshot_store.list_ids() == [6]
    assert {n: rows(t, TT.snapshot_by_tag(t, n)) for n in ("t2", "t4")} == want
    assert not missing_files(t) and not unreferenced_files(t)
    before = set(tree(t.root))
    T.delete_tag(t, "t2")
    gone = before - set(tree(t.root))
    assert any("/bucket-" in p for p in gone)  # t2's own data file went
    assert any(p.startswith("manifest/") for p in gone)
    assert rows(t, TT.snapshot_by_tag(t, "t4")) == want["t4"]
    assert not missing_files(t) and not unreferenced_files(t)
    T.delete_tag(t, "t4")
    assert not missing_files(t) and not unreferenced_files(t)
    assert len(rows(t, t.latest_snapshot())) == 3


def test_delete_one_of_two_tags_on_a_snapshot_keeps_files(catalog):
    t = overwrite_history(catalog)
    T.create_tag(t, "x", 3)
    T.create_tag(t, "y", 3)
    want = rows(t, t.snapshot(3))
    expire_all_but_last(t)
    T.delete_tag(t, "x")
    assert rows(t, TT.snapshot_by_tag(t, "y")) == want
    assert not missing_files(t)
    T.delete_tag(t, "y")
    assert not missing_files(t) and not unreferenced_files(t)


# ---------------------------------------------------------------------------------------------
# time travel


def test_time_travel_by_id_tag_and_timestamp(catalog):
    t = make_events(catalog)
    times = []
    for i in range(4):
        times.append(t.write(events("a", [i])).time_millis)
        time.sleep(0.005)
    T.create_tag(t, "t2", 2)
    assert TT.resolve(t, snapshot_id=3).id == 3
    assert TT.resolve(t, tag="t2").id == 2
    assert TT.resolve(t, timestamp_ms=times[1]).id == 2
    assert TT.resolve(t, timestamp_ms=times[1] + 1).id == 2
    assert TT.resolve(t, timestamp_ms=times[3] + 10**6).id == 4
    assert TT.resolve(t).id == 4
    with pytest.raises(SnapshotNotFound, match="earliest snapshot"):
        TT.resolve(t, timestamp_ms=times[0] - 1)
    with pytest.raises(SnapshotNotFound, match="tag 'nope'"):
        TT.resolve(t, tag="nope")
    with pytest.raises(SnapshotNotFound, match="snapshot 9 does not exist"):
        TT.resolve(t, snapshot_id=9)
    with pytest.raises(InvalidArgument):
        TT.resolve(t, snapshot_id=1, tag="t2")
    # once snapshots 1..3 expire: a timestamp before snapshot 4 finds the closest earlier tag
    expire_all_but_last(t)
    assert TT.resolve(t, timestamp_ms=times[2]).id == 2
    assert TT.resolve(t, snapshot_id=2).id == 2  # expired, but held by a tag
    assert rows(t, TT.resolve(t, timestamp_ms=times[2])) == [
        {"p": "a", "k": 0, "v": "x0"}, {"p": "a", "k": 1, "v": "x1"}]
    with pytest.raises(SnapshotNotFound, match="snapshot 1 does not exist"):
        TT.resolve(t, snapshot_id=1)
    with pytest.raises(SnapshotNotFound):
        TT.resolve(t, timestamp_ms=times[0])


def test_tag_reads_with_schema_of_then(catalog):
    t = make_events(catalog)
    t.write(events("a", [1]))
    T.create_tag(t, "old")
    t.alter(tarn.AddColumn("extra", tarn.types.INT()))
    scan = TT.scan_at(t, TT.snapshot_by_tag(t, "old"))
    assert scan.to_arrow().column_names == ["p", "k", "v"]


# ---------------------------------------------------------------------------------------------
# automatic creation and expiry


def set_snapshot_time(table, snapshot_id, when: dt.datetime, watermark=None):
    """Rewrite a snapshot file with another commit time (to test periods deterministically)."""
    snap = table.snapshot(snapshot_id)
    millis = int(when.timestamp() * 1000)
    changed = snap.replace(time_millis=millis, watermark=watermark)
    with open(os.path.join(table.root, "snapshot", f"snapshot-{snapshot_id}"), "w") as f:
        f.write(changed.to_json())


def test_tag_period_names():
    opts = tarn.options.Options
    daily = T.tag_period(opts({}))
    assert daily.tag_name(dt.datetime(2024, 3, 5)) == "2024-03-05"
    assert daily.tag_time("2024-03-05") == dt.datetime(2024, 3, 5)
    assert daily.tag_time("2024-03-05 10") == dt.datetime(2024, 3, 5)  # Paimon ignores the hour part
    assert daily.tag_time("2024-3-5") is None and daily.tag_time("2024-02-30") is None
    assert daily.tag_time("v1") is None
    assert daily.previous_tag_time(dt.datetime(2024, 3, 5, 10, 30)) == dt.datetime(2024, 3, 4)
    hourly = T.tag_period(opts({"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes"}))
    assert hourly.tag_name(dt.datetime(2024, 3, 5, 7)) == "20240305 07"
    assert hourly.previous_tag_time(dt.datetime(2024, 3, 5, 7, 59)) == dt.datetime(2024, 3, 5, 6)
    two = T.tag_period(opts({"tag.creation-period": "two-hours"}))
    assert two.previous_tag_time(dt.datetime(2024, 3, 5, 7, 1)) == dt.datetime(2024, 3, 5, 4)
    assert two.tag_name(dt.datetime(2024, 3, 5, 4)) == "2024-03-05 04"
    compact = T.tag_period(opts({"tag.creation-period": "daily", "tag.period-formatter": "without_dashes"}))
    assert compact.tag_name(dt.datetime(2024, 3, 5)) == "20240305"


def test_process_time_daily_tags_and_retained_max(catalog):
    # write-only: no after-commit hook, so the test drives tag creation by hand
    t = make_events(catalog, **{"tag.automatic-creation": "process-time", "tag.num-retained-max": "2",
                                "write-only": "true"})
    days = [dt.datetime(2024, 1, d, 12) for d in (1, 1, 2, 3, 5)]
    for i, day in enumerate(days, start=1):
        t.write(events("a", [i]))
        set_snapshot_time(t, i, day)
    created = T.auto_create_tags(t)
    # snapshot 1 tags the day before it; 2 is the same day; 3, 4, 5 each start a new period
    assert created == ["2023-12-31", "2024-01-01", "2024-01-02", "2024-01-04"]
    assert [(x.name, x.snapshot_id) for x in T.list_tags(t)] == [("2024-01-02", 4), ("2024-01-04", 5)]
    assert T.auto_create_tags(t) == []  # resumes after the latest automatic tag
    t.write(events("a", [6]))
    set_snapshot_time(t, 6, dt.datetime(2024, 1, 5, 23))
    assert T.auto_create_tags(t) == []
    t.write(events("a", [7]))
    set_snapshot_time(t, 7, dt.datetime(2024, 1, 6, 0, 1))
    assert T.auto_create_tags(t) == ["2024-01-05"]


def test_creation_delay_and_invalid_delay(catalog):
    t = make_events(catalog, **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                                "tag.creation-delay": "10 min", "write-only": "true"})
    for i, when in enumerate([dt.datetime(2024, 1, 1, 9, 30), dt.datetime(2024, 1, 1, 11, 5),
                              dt.datetime(2024, 1, 1, 11, 20)], start=1):
        t.write(events("a", [i]))
        set_snapshot_time(t, i, when)
    # 09:30 tags hour 08; 11:05 - 10 min passed 10:00 (end of hour 09) and, like Paimon, names
    # the tag after the hour before its own (10); 11:20 - 10 min has not reached 12:00
    assert T.auto_create_tags(t) == ["2024-01-01 08", "2024-01-01 10"]
    assert TT.snapshot_by_tag(t, "2024-01-01 10").id == 2
    bad = make_events(catalog, "db.bad", **{"tag.automatic-creation": "process-time",
                                            "tag.creation-period": "hourly", "write-only": "true"})
    bad.write(events("a", [1]))
    set_options_on_disk(bad, {"tag.creation-delay": "2 h"})
    before = tree(bad.root)
    with pytest.raises(InvalidOption, match="tag.creation-delay"):
        T.auto_create_tags(bad)
    assert tree(bad.root) == before


def test_watermark_tags(catalog):
    t = make_events(catalog, **{"tag.automatic-creation": "watermark", "write-only": "true"})
    t.write(events("a", [1]))  # no watermark: no tag
    t.write(events("a", [2]))
    set_snapshot_time(t, 2, dt.datetime(2030, 1, 1), watermark=int(dt.datetime(
        2024, 5, 6, 7, tzinfo=dt.timezone.utc).timestamp() * 1000))
    assert T.auto_create_tags(t) == ["2024-05-05"]


def test_batch_tag_created_after_each_commit(catalog):
    # the table's after-commit hook creates the tag; no explicit call
    t = make_events(catalog, **{"tag.automatic-creation": "batch", "tag.num-retained-max": "1"})
    t.write(events("a", [1]))
    day = dt.datetime.fromtimestamp(t.latest_snapshot().time_millis / 1000).strftime("%Y-%m-%d")
    assert [(x.name, x.snapshot_id) for x in t.list_tags()] == [(f"batch-write-{day}", 1)]
    t.write(events("a", [2]))
    assert [(x.name, x.snapshot_id) for x in t.list_tags()] == [(f"batch-write-{day}", 2)]


def test_expire_tags_by_retention_and_age(catalog):
    t = overwrite_history(catalog, 3)
    T.create_tag(t, "short", 2, time_retained="1 h")
    T.create_tag(t, "long", 3, time_retained="10 d")
    T.create_tag(t, "forever", 4)
    expire_all_but_last(t)
    now = dt.datetime.now()
    assert T.expire_tags(t, now) == []
    assert T.expire_tags(t, now + dt.timedelta(hours=2)) == ["short"]
    assert not missing_files(t) and not unreferenced_files(t)
    assert T.expire_tags(t, now, older_than=now + dt.timedelta(minutes=1)) == ["long", "forever"]
    assert T.list_tags(t) == []
    assert not missing_files(t) and not unreferenced_files(t)
