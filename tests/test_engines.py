"""Every merge engine through the Table API, on the examples of the primary-key table page."""

import pyarrow as pa
import pytest

import tarn
from tests.helpers import rows_by_key


def make(catalog, schema, options, pk=("k",)):
    return catalog.create_table("db.e", schema=schema, primary_key=list(pk), options={"bucket": "1", **options})


def read(t, key="k"):
    return sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r[key])


def test_partial_update_page_example(catalog):
    schema = pa.schema([("k", pa.int32()), ("a", pa.float64()), ("b", pa.int32()), ("c", pa.string())])
    t = make(catalog, schema, {"merge-engine": "partial-update"})
    t.write(pa.table({"k": [1], "a": [23.0], "b": [10], "c": [None]}, schema=schema))
    t.write(pa.table({"k": [1], "a": [None], "b": [None], "c": ["This is a book"]}, schema=schema))
    t.write(pa.table({"k": [1], "a": [25.2], "b": [None], "c": [None]}, schema=schema))
    assert read(t) == [{"k": 1, "a": 25.2, "b": 10, "c": "This is a book"}]
    t.compact(full=True)
    assert read(t) == [{"k": 1, "a": 25.2, "b": 10, "c": "This is a book"}]


def test_partial_update_delete_without_options_fails_and_commits_nothing(catalog):
    schema = pa.schema([("k", pa.int32()), ("a", pa.int32())])
    t = make(catalog, schema, {"merge-engine": "partial-update"})
    t.write(pa.table({"k": [1], "a": [1]}, schema=schema))
    with pytest.raises(tarn.TarnError, match="ignore-delete"):
        t.delete(pa.table({"k": [1]}))
    assert t.latest_snapshot().id == 1 and read(t) == [{"k": 1, "a": 1}]


def test_sequence_group_page_example(catalog):
    names = ["k", "a", "b", "g_1", "c", "d", "g_2"]
    schema = pa.schema([(n, pa.int32()) for n in names])
    t = make(catalog, schema, {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b",
                               "fields.g_2.sequence-group": "c,d"})

    def row(*values):
        return pa.table({n: [v] for n, v in zip(names, values)}, schema=schema)

    t.write(row(1, 1, 1, 1, 1, 1, 1))
    t.write(row(1, 2, 2, 2, 2, 2, None))
    assert [tuple(r.values()) for r in read(t)] == [(1, 2, 2, 2, 1, 1, 1)]
    t.write(row(1, 3, 3, 1, 3, 3, 3))
    assert [tuple(r.values()) for r in read(t)] == [(1, 2, 2, 2, 3, 3, 3)]


def test_aggregation_functions_inside_sequence_groups(catalog):
    """partial-update folds a guarded field with any of the aggregation engine's field
    aggregators (one implementation, tarn.lsm.field_aggs); rows with an older sequence still
    reach it, in front for listagg and nested_update (Java's aggReversed); count is refused."""
    item = pa.struct([("id", pa.int32()), ("v", pa.int32())])
    schema = pa.schema([("k", pa.int32()), ("g", pa.int32()), ("tags", pa.string()), ("p", pa.int64()),
                        ("items", pa.list_(item))])
    options = {"merge-engine": "partial-update", "fields.g.sequence-group": "tags,p,items",
               "fields.tags.aggregate-function": "listagg", "fields.p.aggregate-function": "product",
               "fields.items.aggregate-function": "nested_update", "fields.items.nested-key": "id"}
    t = make(catalog, schema, options)

    def row(g, tags, p, items):
        return pa.table({"k": [1], "g": [g], "tags": [tags], "p": [p],
                         "items": [[{"id": i, "v": v} for i, v in items]]}, schema=schema)

    t.write(row(2, "b", 3, [(1, 20)]))
    t.write(row(1, "a", 5, [(1, 10), (2, 10)]))  # older: in front, and its id 1 loses
    t.write(row(3, "c", 2, [(3, 30)]))
    expected = [{"k": 1, "g": 3, "tags": "a,b,c", "p": 30,
                 "items": [{"id": 1, "v": 20}, {"id": 2, "v": 10}, {"id": 3, "v": 30}]}]
    assert read(t) == expected
    t.compact(full=True)
    assert read(t) == expected
    with pytest.raises(tarn.InvalidOption, match="'count' is not supported inside partial-update"):
        catalog.create_table("db.counted", schema=schema, primary_key=["k"],
                             options={"bucket": "1", **options, "fields.p.aggregate-function": "count"})


def test_default_value_page_example(catalog):
    schema = pa.schema([("k", pa.int32()), ("a", pa.int32()), ("b", pa.int32()), ("c", pa.int32())])
    t = make(catalog, schema, {"merge-engine": "partial-update", "fields.b.default-value": "0"})
    t.write(pa.table({"k": [1], "a": [1], "b": [None], "c": [None]}, schema=schema))
    t.write(pa.table({"k": [1], "a": [None], "b": [None], "c": [1]}, schema=schema))
    assert read(t) == [{"k": 1, "a": 1, "b": 0, "c": 1}]


def test_aggregation_page_example_and_retraction(catalog):
    schema = pa.schema([("k", pa.int64()), ("price", pa.float64()), ("sales", pa.int64()), ("n", pa.int64())])
    t = make(catalog, schema, {"merge-engine": "aggregation", "fields.price.aggregate-function": "max",
                               "fields.sales.aggregate-function": "sum", "fields.n.aggregate-function": "count",
                               "fields.price.ignore-retract": "true"})
    t.write(pa.table({"k": [1], "price": [23.0], "sales": [15], "n": [1]}, schema=schema))
    t.write(pa.table({"k": [1], "price": [30.2], "sales": [20], "n": [1]}, schema=schema))
    assert read(t) == [{"k": 1, "price": 30.2, "sales": 35, "n": 2}]
    t.write(pa.table({"k": [1], "price": [30.2], "sales": [20], "n": [1]}, schema=schema), row_kind="-U")
    assert read(t) == [{"k": 1, "price": 30.2, "sales": 15, "n": 1}]
    t.compact(full=True)
    t.write(pa.table({"k": [1], "price": [1.0], "sales": [5], "n": [1]}, schema=schema))
    assert read(t) == [{"k": 1, "price": 30.2, "sales": 20, "n": 2}]


def test_first_row_rows_wait_in_level_0_until_compacted(catalog):
    """Java's first-row batch reads leave level 0 out (CoreOptions.batchScanSkipLevel0), and so
    do tarn's: with write-only nothing is visible until a compaction, which keeps the first."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = make(catalog, schema, {"merge-engine": "first-row", "write-only": "true"})
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.write(pa.table({"k": [1, 3], "v": ["A", "c"]}, schema=schema))
    assert all(e.file.level == 0 for e in t.planner(t.schema()).live_entries(t.latest_snapshot()))
    assert read(t) == []
    t.compact(full=True)
    assert read(t) == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]


def test_first_row_writes_reach_level_1_for_other_readers(catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = make(catalog, schema, {"merge-engine": "first-row"})
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=schema))
    t.write(pa.table({"k": [1], "v": ["b"]}, schema=schema))
    assert all(e.file.level > 0 for e in t.planner(t.schema()).live_entries(t.latest_snapshot()))
    assert read(t) == [{"k": 1, "v": "a"}]


def test_sequence_field_orders_out_of_order_events(catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("ts", pa.int64())])
    t = make(catalog, schema, {"sequence.field": "ts"})
    t.write(pa.table({"k": [1, 1], "v": ["new", "old"], "ts": [20, 10]}, schema=schema))
    t.write(pa.table({"k": [1], "v": ["older"], "ts": [5]}, schema=schema))
    assert read(t) == [{"k": 1, "v": "new", "ts": 20}]
    t.compact(full=True)
    assert read(t) == [{"k": 1, "v": "new", "ts": 20}]
    t.write(pa.table({"k": [1], "v": ["tie"], "ts": [20]}, schema=schema))  # ties: arrival order
    assert read(t) == [{"k": 1, "v": "tie", "ts": 20}]


def test_two_sequence_fields_and_descending(catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("a", pa.int32()), ("b", pa.int32())])
    t = make(catalog, schema, {"sequence.field": "a,b"})
    t.write(pa.table({"k": [1, 1, 1], "v": ["x", "y", "z"], "a": [2, 2, 1], "b": [1, 3, 9]}, schema=schema))
    assert read(t)[0]["v"] == "y"
    catalog2 = tarn.Catalog(t.root + "-desc")
    t2 = catalog2.create_table("db.d", schema=schema, primary_key=["k"],
                               options={"bucket": "1", "sequence.field": "a",
                                        "sequence.field.sort-order": "descending"})
    t2.write(pa.table({"k": [1, 1], "v": ["x", "y"], "a": [2, 1], "b": [0, 0]}, schema=schema))
    assert read(t2)[0]["v"] == "y"


def test_row_kind_flag_padding(catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("op_ts", pa.int64())])
    t = make(catalog, schema, {"sequence.field": "op_ts", "sequence.auto-padding": "row-kind-flag"})
    t.write(pa.table({"k": [1], "v": ["a"], "op_ts": [1]}, schema=schema))
    # -U and +U with the same op_ts, the +U arriving first: the flag still orders -U before +U
    t.write(pa.table({"k": [1, 1], "v": ["b", "a"], "op_ts": [2, 2]}, schema=schema), row_kind=["+U", "-U"])
    assert read(t) == [{"k": 1, "v": "b", "op_ts": 2}]


@pytest.mark.parametrize("options, message", [
    ({"merge-engine": "first-row", "sequence.field": "v"}, "sequence.field"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, "fields.v.aggregate-function"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "bool_and"}, "'v'"),
    ({"merge-engine": "partial-update", "fields.nope.sequence-group": "v"}, "nope"),
    ({"sequence.field": "nope"}, "nope"),
    ({"sequence.field": "n", "sequence.auto-padding": "row-kind"}, "sequence.auto-padding"),
    ({"merge-engine": "dedup"}, "deduplicate"),
])
def test_bad_engine_options_fail_at_creation(catalog, options, message):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
    with pytest.raises(tarn.InvalidOption, match=message):
        make(catalog, schema, options)
    assert not catalog.table_exists("db.e")
