"""Table.update(set=..., filter=...) and delete(filter=...) against a Python oracle: primary-key
tables (upsert of the updated rows) and append tables (copy-on-write), literals converted with
the column's type, expressions over the row, and the refusals with their reasons."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tests.helpers import canonical_rows

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("n", pa.int32())])


def _rows(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _pk_table(catalog, **options):
    return catalog.create_table("db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "2", **options})


# ---------------------------------------------------------------------------------------------
# a sequence of writes, updates and deletes against an oracle

_ops = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 9), st.integers(-5, 5)),
                                         min_size=1, max_size=8)),
    st.tuples(st.just("update"), st.integers(0, 9), st.integers(0, 9), st.sampled_from(["lit", "expr", "null"])),
    st.tuples(st.just("delete"), st.integers(0, 9), st.integers(0, 9)),
), min_size=1, max_size=8)


def _apply_update(rows: list[dict], lo: int, hi: int, how: str, tag: str) -> None:
    for row in rows:
        if lo <= row["id"] <= hi:
            if how == "lit":
                row["v"] = tag
            elif how == "expr":
                row["n"] = row["n"] * 2 + 1 if row["n"] is not None else None
            else:
                row["v"] = None


def _update_args(lo: int, hi: int, how: str, tag: str):
    where = (tarn.col("id") >= lo) & (tarn.col("id") <= hi)
    if how == "lit":
        return {"v": tag}, where
    if how == "expr":
        return {"n": pc.field("n") * 2 + 1}, f"id between {lo} and {hi}"
    return {"v": None}, pc.field("id").isin(list(range(lo, hi + 1)))


def _run(table, ops, oracle_write):
    model: list[dict] = []
    for step, op in enumerate(ops):
        if op[0] == "write":
            batch = [{"dt": d, "id": i, "v": f"w{step}", "n": n} for d, i, n in op[1]]
            table.write(_rows(batch))
            model = oracle_write(model, batch)
        elif op[0] == "update":
            lo, hi = sorted(op[1:3])
            assignments, where = _update_args(lo, hi, op[3], f"u{step}")
            table.update(set=assignments, filter=where)
            _apply_update(model, lo, hi, op[3], f"u{step}")
        else:
            lo, hi = sorted(op[1:3])
            table.delete(filter=(tarn.col("id") >= lo) & (tarn.col("id") <= hi))
            model = [r for r in model if not lo <= r["id"] <= hi]
        assert canonical_rows(table.scan().to_arrow()) == canonical_rows(model), op
    return model


def _upsert(model: list[dict], batch: list[dict]) -> list[dict]:
    by_key = {(r["dt"], r["id"]): r for r in model}
    for row in batch:
        by_key[(row["dt"], row["id"])] = dict(row)
    return list(by_key.values())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_primary_key_table_follows_the_oracle(catalog_factory, ops):
    _run(_pk_table(catalog_factory()), ops, _upsert)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_append_table_follows_the_oracle(catalog_factory, ops):
    table = catalog_factory().create_table("db.a", schema=SCHEMA, partition_keys=["dt"])
    _run(table, ops, lambda model, batch: model + [dict(r) for r in batch])


# ---------------------------------------------------------------------------------------------
# what one update does


def test_update_of_primary_key_table_is_one_upsert_commit(tmp_path):
    table = _pk_table(tarn.Catalog(str(tmp_path)))
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 1}, {"dt": "a", "id": 2, "v": "y", "n": 2},
                       {"dt": "b", "id": 3, "v": "z", "n": 3}]))
    snapshot = table.update(set={"v": "new", "n": pc.field("n") * 10}, filter="id >= 2")
    assert snapshot.commit_kind == "APPEND" and snapshot.id == 2 and snapshot.delta_record_count == 2
    assert canonical_rows(table.scan().to_arrow()) == canonical_rows([
        {"dt": "a", "id": 1, "v": "x", "n": 1}, {"dt": "a", "id": 2, "v": "new", "n": 20},
        {"dt": "b", "id": 3, "v": "new", "n": 30}])


def test_update_matching_nothing_commits_nothing(tmp_path):
    table = _pk_table(tarn.Catalog(str(tmp_path)))
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 1}]))
    assert table.update(set={"v": "q"}, filter=tarn.col("id") == 99) is None
    assert table.latest_snapshot().id == 1


def test_expressions_see_the_rows_before_the_update(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.int64())])
    table = tarn.Catalog(str(tmp_path)).create_table("db.s", schema=schema, primary_key=["id"],
                                                      options={"bucket": "1"})
    table.write(pa.table({"id": [1, 2], "a": [10, 20], "b": [1, 2]}, schema=schema))
    table.update(set={"a": pc.field("b"), "b": pc.field("a")}, filter=None)
    assert table.scan().to_arrow().sort_by("id").to_pylist() == [{"id": 1, "a": 1, "b": 10},
                                                                 {"id": 2, "a": 2, "b": 20}]


def test_literals_take_the_columns_types(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("price", pa.decimal128(10, 2)),
                        ("at", pa.timestamp("us"))])
    table = tarn.Catalog(str(tmp_path)).create_table("db.d", schema=schema, primary_key=["id"],
                                                      options={"bucket": "1"})
    table.write(pa.table({"id": [1], "day": [dt.date(2026, 1, 1)], "price": [decimal.Decimal("1.00")],
                          "at": [dt.datetime(2026, 1, 1)]}, schema=schema))
    table.update(set={"day": "2026-11-20", "price": "12.50", "at": "2026-11-20 10:30:00"}, filter="id = 1")
    assert table.scan().to_arrow().to_pylist() == [{"id": 1, "day": dt.date(2026, 11, 20),
                                                   "price": decimal.Decimal("12.50"),
                                                   "at": dt.datetime(2026, 11, 20, 10, 30)}]


def test_partial_update_table_updates_only_the_set_columns(tmp_path):
    table = _pk_table(tarn.Catalog(str(tmp_path)), **{"merge-engine": "partial-update"})
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 1}]))
    table.update(set={"n": 5}, filter="id = 1")
    assert table.scan().to_arrow().to_pylist() == [{"dt": "a", "id": 1, "v": "x", "n": 5}]


def test_append_update_rewrites_files_in_one_overwrite(tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.a", schema=SCHEMA)
    table.write(_rows([{"dt": "a", "id": i, "v": "x", "n": i} for i in range(5)]))
    table.write(_rows([{"dt": "b", "id": 9, "v": "y", "n": 9}]))  # a file without matches: kept
    untouched = {e.file.file_name for e in table.live_entries(table.latest_snapshot()) if e.file.row_count == 1}
    snapshot = table.update(set={"v": "u"}, filter="id in (1, 3)")
    assert snapshot.commit_kind == "OVERWRITE"
    live = {e.file.file_name for e in table.live_entries(table.latest_snapshot())}
    assert untouched <= live and len(live) == 2
    assert table.scan().to_arrow().column("v").to_pylist() == ["x", "u", "x", "u", "x", "y"]  # order kept


# ---------------------------------------------------------------------------------------------
# refusals


@pytest.fixture
def table(tmp_path):
    table = _pk_table(tarn.Catalog(str(tmp_path)))
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 1}]))
    return table


@pytest.mark.parametrize("assignments, error, words", [
    ({"id": 2}, tarn.InvalidArgument, "primary-key column(s) ['id']"),
    ({"zz": 1}, tarn.SchemaMismatch, "unknown column(s) ['zz']"),
    ({"n": "abc"}, tarn.InvalidArgument, "column 'n' (INT) to 'abc'"),
    ({"n": 2 ** 40}, tarn.InvalidArgument, "column 'n' (INT)"),
    ({"n": pc.field("v")}, tarn.InvalidArgument, "which is of type string"),
    ({"n": pc.field("nope")}, tarn.InvalidArgument, "nope"),
    ({"n": pc.field("n") * 2 ** 40}, tarn.InvalidArgument, "does not fit"),
    ({}, tarn.InvalidArgument, "at least one column"),
])
def test_bad_assignments_are_refused_and_nothing_is_committed(table, assignments, error, words):
    with pytest.raises(error, match="table db.t: ") as raised:
        table.update(set=assignments, filter="id = 1")
    assert words in str(raised.value)
    assert table.latest_snapshot().id == 1
    assert table.scan().to_arrow().to_pylist() == [{"dt": "a", "id": 1, "v": "x", "n": 1}]


def test_partition_columns_cannot_be_set(tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.p", schema=SCHEMA, partition_keys=["dt"])
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 1}]))
    with pytest.raises(tarn.InvalidArgument, match=r"partition column\(s\) \['dt'\]: the row would have to move"):
        table.update(set={"dt": "b"})


def test_not_null_column_cannot_be_set_to_null(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.string(), False)])
    table = tarn.Catalog(str(tmp_path)).create_table("db.nn", schema=schema, primary_key=["id"],
                                                      options={"bucket": "1"})
    with pytest.raises(tarn.InvalidArgument, match="column 'v' to NULL"):
        table.update(set={"v": None})


@pytest.mark.parametrize("options, words", [
    ({"merge-engine": "aggregation"}, "aggregate it into itself"),
    ({"merge-engine": "first-row"}, "later writes are ignored"),
])
def test_merge_engines_that_cannot_take_an_update_are_refused(tmp_path, options, words):
    table = _pk_table(tarn.Catalog(str(tmp_path)), **options)
    with pytest.raises(tarn.InvalidArgument, match=words):
        table.update(set={"n": 1})


def test_partial_update_refuses_null(tmp_path):
    table = _pk_table(tarn.Catalog(str(tmp_path)), **{"merge-engine": "partial-update"})
    with pytest.raises(tarn.InvalidArgument, match="NULL keeps the previous value"):
        table.update(set={"v": None})


def test_append_table_with_deletion_vectors_is_refused(tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.dv", schema=SCHEMA,
                                                      options={"deletion-vectors.enabled": "true"})
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 1}]))
    with pytest.raises(tarn.InvalidArgument, match="deletion vectors"):
        table.update(set={"v": "y"})
    assert table.scan().to_arrow().column("v").to_pylist() == ["x"]


def _data_files(table) -> set[str]:
    import os
    found = set()
    for root, _, names in os.walk(table.root):
        found |= {os.path.join(root, n) for n in names if n.startswith("data-")}
    return found


def test_large_update_reads_split_by_split(tmp_path):
    import numpy as np

    table = _pk_table(tarn.Catalog(str(tmp_path)), **{"bucket": "4", "write-buffer-size": "1 mb"})
    n = 200_000
    ids = np.arange(n, dtype=np.int64)
    table.write(pa.table({"dt": pa.array(["a"] * n), "id": ids, "v": pa.nulls(n, pa.string()),
                          "n": pa.array((ids % 1000).astype(np.int32))}, schema=SCHEMA))
    table.update(set={"n": pc.field("n") + 1}, filter="id >= 1000")
    result = table.scan(columns=["id", "n"]).to_arrow().sort_by("id")
    expected = (ids % 1000 + (ids >= 1000)).astype(np.int32)
    assert result.num_rows == n and np.array_equal(result.column("n").to_numpy(), expected)


def test_failed_update_commits_nothing_and_leaves_no_files(tmp_path):
    import numpy as np

    table = _pk_table(tarn.Catalog(str(tmp_path)), **{"bucket": "4", "write-buffer-size": "1 mb"})
    n = 150_000
    ids = np.arange(n, dtype=np.int64)
    big = ids >= n - 10  # ten rows of partition 'b' overflow INT when 10^9 is added; the rest fits
    table.write(pa.table({"dt": pa.array(np.where(big, "b", "a")), "id": ids, "v": pa.nulls(n, pa.string()),
                          "n": pa.array(np.where(big, 2_000_000_000, 1).astype(np.int32))}, schema=SCHEMA))
    before = _data_files(table)
    with pytest.raises(tarn.InvalidArgument, match="overflow|does not fit"):
        table.update(set={"n": pc.field("n") + pa.scalar(1_000_000_000, pa.int64())})
    assert table.latest_snapshot().id == 1 and _data_files(table) == before
    assert pc.sum(table.scan(columns=["n"]).to_arrow().column("n").cast(pa.int64())).as_py() == \
        (n - 10) + 10 * 2_000_000_000


def test_append_update_evaluates_only_the_matched_rows(tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.a", schema=SCHEMA)
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 2_000_000_000}, {"dt": "a", "id": 2, "v": "y", "n": 5}]))
    table.update(set={"n": pc.field("n") * 2}, filter="id = 2")  # row 1 would overflow INT
    assert table.scan().to_arrow().column("n").to_pylist() == [2_000_000_000, 10]


@pytest.mark.parametrize("extra, expected", [
    ({}, [{"id": 1, "n": 0}, {"id": 2, "n": 2}]),                                  # sums retracted
    ({"aggregation.remove-record-on-delete": "true"}, [{"id": 2, "n": 2}]),        # rows removed
])
def test_delete_by_filter_on_aggregation_table_retracts_the_rows(tmp_path, extra, expected):
    schema = pa.schema([("id", pa.int64()), ("n", pa.int64())])
    table = tarn.Catalog(str(tmp_path)).create_table(
        "db.agg", schema=schema, primary_key=["id"],
        options={"bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", **extra})
    table.write(pa.table({"id": [1, 2], "n": [1, 2]}, schema=schema))
    table.write(pa.table({"id": [1], "n": [5]}, schema=schema))
    table.delete(filter="id = 1")
    assert table.scan().to_arrow().sort_by("id").to_pylist() == expected


def test_update_shows_as_update_after_rows_in_the_input_changelog(tmp_path):
    table = _pk_table(tarn.Catalog(str(tmp_path)), **{"changelog-producer": "input"})
    table.write(_rows([{"dt": "a", "id": 1, "v": "x", "n": 1}, {"dt": "a", "id": 2, "v": "y", "n": 2}]))
    snapshot = table.update(set={"v": "z"}, filter="id = 2")
    changes = table.changes(snapshot.id).to_pylist()
    assert changes == [{"_ROW_KIND": "+U", "dt": "a", "id": 2, "v": "z", "n": 2}]


@pytest.mark.parametrize("primary_key", [["id"], None])
def test_nested_columns_take_literals(tmp_path, primary_key):
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int32()))])
    table = tarn.Catalog(str(tmp_path)).create_table("db.nested", schema=schema, primary_key=primary_key,
                                                      options={"bucket": "1"} if primary_key else {})
    table.write(pa.table({"id": [1, 2], "tags": [["a"], ["b"]], "m": [[("k", 1)], None]}, schema=schema))
    table.update(set={"tags": ["x", "y"], "m": {"z": 3}}, filter="id = 2")
    assert table.scan().to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "tags": ["a"], "m": [("k", 1)]}, {"id": 2, "tags": ["x", "y"], "m": [("z", 3)]}]
