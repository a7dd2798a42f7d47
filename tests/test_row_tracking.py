"""Row tracking and data evolution: a model of random appends, partial-column updates, deletes
and compactions against a dict of row id -> row; concurrent appenders never share a row id;
bad input is refused with the table unchanged."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())])
EVOLVING = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "deletion-vectors.enabled": "true"}


def rows(ids, name="n", score=0.0) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "name": [f"{name}{i}" for i in ids],
                     "score": pa.array([score + i for i in ids], pa.float64())})


def by_row_id(table) -> dict:
    data = table.scan(columns=["id", "name", "score", "_ROW_ID"]).to_arrow().to_pylist()
    return {r.pop("_ROW_ID"): r for r in data}


def files_on_disk(root) -> dict:
    import os
    found = {}
    for base, _, names in os.walk(root):
        for n in names:
            path = os.path.join(base, n)
            found[path] = open(path, "rb").read()
    return found


# ------------------------------------------------------------------------------- model

OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 6)),
    st.tuples(st.just("update"), st.lists(st.integers(0, 40), min_size=1, max_size=5, unique=True),
              st.sampled_from(["name", "score", "both"])),
    st.tuples(st.just("update_where"), st.integers(0, 30)),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("upsert"), st.lists(st.integers(0, 8), min_size=1, max_size=4, unique=True)),
), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_model_of_row_ids(tmp_path_factory, ops):
    table = tarn.Catalog(str(tmp_path_factory.mktemp("wh"))).create_table("db.t", SCHEMA, options=EVOLVING)
    model: dict[int, dict] = {}
    next_id, step = 0, 0
    for op in ops:
        step += 1
        if op[0] == "append":
            ids = list(range(100 * step, 100 * step + op[1]))
            table.write(rows(ids, name=f"s{step}-"))
            for i, row in enumerate(rows(ids, name=f"s{step}-").to_pylist()):
                model[next_id + i] = row
            next_id += op[1]
        elif op[0] == "update":
            targets = [r for r in op[1] if r in model]
            if not targets:
                continue
            columns = ["name", "score"] if op[2] == "both" else [op[2]]
            data = {"_ROW_ID": pa.array(targets, pa.int64())}
            if "name" in columns:
                data["name"] = [f"u{step}-{r}" for r in targets]
            if "score" in columns:
                data["score"] = pa.array([float(step * 1000 + r) for r in targets], pa.float64())
            table.update_columns(pa.table(data))
            for r in targets:
                model[r].update({k: (v[targets.index(r)].as_py() if isinstance(v, pa.Array) else v[targets.index(r)])
                                 for k, v in data.items() if k != "_ROW_ID"})
        elif op[0] == "update_where":
            table.update({"score": -1.0}, filter=f"_ROW_ID <= {op[1]}")
            for r in model:
                if r <= op[1]:
                    model[r]["score"] = -1.0
        elif op[0] == "delete":
            table.delete(filter=f"_ROW_ID = {op[1]}")
            model.pop(op[1], None)
        elif op[0] == "upsert":  # keys 0..8: fresh ones appended, present ones updated wherever they are
            data = pa.table({"id": pa.array(op[1], pa.int32()), "name": [f"up{step}"] * len(op[1]),
                             "score": pa.array([float(k) for k in op[1]], pa.float64())})
            table.upsert(data, on="id")
            for key, row in zip(op[1], data.to_pylist()):
                matches = [r for r, v in model.items() if v["id"] == key]
                for r in matches:
                    model[r] = dict(row)
                if not matches:
                    model[next_id] = dict(row)
                    next_id += 1
        else:
            table.compact(full=op[1])
        assert by_row_id(table) == model, f"after {op}"
    assert table.scan().count() == len(model)
    snapshot = table.latest_snapshot()
    assert (snapshot.next_row_id if snapshot else 0) == next_id


# ------------------------------------------------------------------------------- concurrency

def test_concurrent_appenders_never_share_a_row_id(tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    catalog.create_table("db.t", SCHEMA, options={**EVOLVING, "commit.max-retries": "100"})
    errors = []

    def appender(worker: int):
        try:
            table = catalog.load_table("db.t")
            for k in range(5):
                table.write(rows([worker * 1000 + k * 10 + j for j in range(3)]))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=appender, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    table = catalog.load_table("db.t")
    ids = table.scan(columns=["_ROW_ID"]).to_arrow().column("_ROW_ID").to_pylist()
    assert sorted(ids) == list(range(60))
    assert table.latest_snapshot().next_row_id == 60


def test_concurrent_updates_of_one_column_both_land(tmp_path):
    """Two updates planned on the same snapshot: the second commit finds the first (a row-id
    conflict), plans again on top of it, and lands; neither value is lost."""
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, options=EVOLVING)
    table.write(rows([1, 2, 3]))
    from tarn.ops import row_updates
    first = row_updates.update_columns
    # land another update of the same rows between this update's plan and its commit
    original_commit = table.core.commit  # the operation commits through the kernel
    raced = []

    def racing_commit(messages, **kwargs):
        if not raced:
            raced.append(True)
            first(table.core, pa.table({"_ROW_ID": pa.array([0], pa.int64()), "score": [100.0]}))
        return original_commit(messages, **kwargs)

    table.core.commit = racing_commit
    table.update_columns(pa.table({"_ROW_ID": pa.array([2], pa.int64()), "score": [300.0]}))
    del table.core.commit
    assert by_row_id(table)[0]["score"] == 100.0 and by_row_id(table)[2]["score"] == 300.0


# ------------------------------------------------------------------------------- bad input

@pytest.fixture
def evolving(tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, options=EVOLVING)
    table.write(rows([1, 2, 3]))
    return table


@pytest.mark.parametrize("data, error, match", [
    ({"_ROW_ID": [0], "nope": [1]}, tarn.SchemaMismatch, "unknown column"),
    ({"_ROW_ID": [7], "score": [1.0]}, tarn.InvalidArgument, r"row id\(s\) \[7\] are in no data file"),
    ({"score": [1.0]}, tarn.SchemaMismatch, "_ROW_ID"),
    ({"_ROW_ID": [0, 0], "score": [1.0, 2.0]}, tarn.InvalidArgument, "more than once"),
    ({"_ROW_ID": [0], "score": ["x"]}, tarn.SchemaMismatch, "do not fit"),
])
def test_bad_updates_change_nothing(evolving, data, error, match):
    before = files_on_disk(evolving.root)
    with pytest.raises(error, match=match):
        evolving.update_columns(pa.table(data))
    assert files_on_disk(evolving.root) == before


def test_updating_a_deleted_row_is_refused(evolving):
    evolving.delete(filter="id = 2")
    before = files_on_disk(evolving.root)
    with pytest.raises(tarn.InvalidArgument, match="were deleted"):
        evolving.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "score": [1.0]}))
    assert files_on_disk(evolving.root) == before


@pytest.mark.parametrize("options, primary_key, match", [
    ({"row-tracking.enabled": "true"}, ["id"], "primary key"),
    ({"row-tracking.enabled": "true", "bucket": "2", "bucket-key": "id"}, None, "bucket"),
    ({"data-evolution.enabled": "true"}, None, "needs 'row-tracking.enabled'"),
])
def test_creation_rules(tmp_path, options, primary_key, match):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    with pytest.raises(tarn.TarnError, match=match):
        catalog.create_table("db.t", SCHEMA, primary_key=primary_key, options=options)


def test_switching_the_options_is_refused(evolving, tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh2")).create_table("db.t", SCHEMA)
    table.write(rows([1]))
    with pytest.raises(tarn.TarnError, match="row-tracking.enabled"):
        table.alter(tarn.SetOption("row-tracking.enabled", "true"))
    with pytest.raises(tarn.TarnError, match="data-evolution.enabled"):
        evolving.alter(tarn.SetOption("data-evolution.enabled", "false"))


def test_update_columns_needs_data_evolution(tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true"})
    table.write(rows([1]))
    with pytest.raises(tarn.InvalidArgument, match="data-evolution"):
        table.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "score": [1.0]}))


def test_system_columns_on_plain_tables_are_named(tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA)
    table.write(rows([1]))
    with pytest.raises(tarn.UnsupportedFeature, match="row-tracking tables"):
        table.scan(columns=["_ROW_ID"]).to_arrow()


def test_partial_update_writes_only_the_set_column(evolving):
    evolving.update({"score": 9.0}, filter="id = 2")
    added = [e.file for e in evolving.live_entries(evolving.latest_snapshot()) if e.file.write_cols]
    assert [f.write_cols for f in added] == [("score",)]
    assert added[0].first_row_id == 0 and added[0].row_count == 3


def test_row_tracking_system_table(evolving):
    evolving.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "name": ["B"]}))
    table = evolving.system_table("$row_tracking").to_arrow()
    assert table.column_names == ["id", "name", "score", "_ROW_ID", "_SEQUENCE_NUMBER"]
    assert sorted(table.to_pylist(), key=lambda r: r["_ROW_ID"]) == [
        {"id": 1, "name": "n1", "score": 1.0, "_ROW_ID": 0, "_SEQUENCE_NUMBER": 2},
        {"id": 2, "name": "B", "score": 2.0, "_ROW_ID": 1, "_SEQUENCE_NUMBER": 2},
        {"id": 3, "name": "n3", "score": 3.0, "_ROW_ID": 2, "_SEQUENCE_NUMBER": 2}]


def test_upsert_updates_matches_and_appends_the_rest(evolving):
    evolving.write(rows([2]))  # key 2 twice in the table: both rows are updated
    evolving.upsert(pa.table({"id": pa.array([2, 7, 2], pa.int32()), "name": ["x", "seven", "two"],
                              "score": [0.0, 7.0, 22.0]}), on=["id"])
    assert by_row_id(evolving) == {
        0: {"id": 1, "name": "n1", "score": 1.0}, 1: {"id": 2, "name": "two", "score": 22.0},
        2: {"id": 3, "name": "n3", "score": 3.0}, 3: {"id": 2, "name": "two", "score": 22.0},
        4: {"id": 7, "name": "seven", "score": 7.0}}
    assert len(evolving.snapshots()) == 3  # one commit
    evolving.upsert(pa.table({"id": pa.array([3], pa.int32()), "name": ["N3"], "score": [0.0]}), on="id",
                    columns=["name"])
    assert by_row_id(evolving)[2] == {"id": 3, "name": "N3", "score": 3.0}


def test_upsert_needs_whole_rows(evolving):
    before = files_on_disk(evolving.root)
    with pytest.raises(tarn.SchemaMismatch, match="lacks column"):
        evolving.upsert(pa.table({"id": pa.array([1], pa.int32())}), on="id")
    assert files_on_disk(evolving.root) == before


def test_count_of_stitched_groups_and_estimates(evolving):
    evolving.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "name": ["B"]}))
    evolving.delete(filter="id = 3")
    assert evolving.scan().count() == 2
    assert sum(e.rows for e in evolving.scan().estimates()) == 2


def test_streams_refuse_update_snapshots_and_read_appends(evolving):
    assert evolving.changes(1).num_rows == 3
    evolving.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "name": ["B"]}))
    with pytest.raises(tarn.UnsupportedFeature, match="updates columns"):
        evolving.changes(evolving.latest_snapshot().id)


def test_update_of_a_column_added_later(evolving):
    evolving.alter(tarn.AddColumn("extra", tarn.types.STRING()))
    evolving.update_columns(pa.table({"_ROW_ID": pa.array([2], pa.int64()), "extra": ["x"]}))
    evolving.alter(tarn.RenameColumn("name", "label"))
    found = evolving.scan(columns=["label", "extra", "_ROW_ID"]).to_arrow().sort_by("_ROW_ID").to_pylist()
    assert found == [{"label": "n1", "extra": None, "_ROW_ID": 0}, {"label": "n2", "extra": None, "_ROW_ID": 1},
                     {"label": "n3", "extra": "x", "_ROW_ID": 2}]


def test_row_tracking_switched_on_under_existing_files_refuses_writes(tmp_path):
    """Another engine's ALTER that switched row tracking on over files without ids (Paimon
    forbids it): reads go on, writes are refused with the directory untouched."""
    import json
    import os
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA)
    table.write(rows([1]))
    with open(os.path.join(table.root, "schema", "schema-0")) as f:
        altered = json.load(f)
    altered["id"] = 1
    altered["options"]["row-tracking.enabled"] = "true"
    with open(os.path.join(table.root, "schema", "schema-1"), "w") as f:
        json.dump(altered, f)
    table = tarn.load_table(table.root)
    assert table.scan().to_arrow().num_rows == 1
    before = files_on_disk(table.root)
    with pytest.raises(tarn.UnsupportedFeature, match="has no row ids"):
        table.write(rows([2]))
    assert files_on_disk(table.root) == before
