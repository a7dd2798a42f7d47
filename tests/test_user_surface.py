"""The user surface of issue 14 (items 1-5): filter literals in the column's type, a name where
a list is expected, typed errors for every misuse, pandas frames with an index, and the data
tools (polars, DuckDB, Arrow streams, limit, pyarrow Expressions and SQL-like filters)."""

from __future__ import annotations

import datetime as dt
import decimal
import inspect
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tarn
from tarn import col
from tarn.errors import InvalidFilter, MissingDependency
from tarn.scan import reader as reader_module
from tarn.scan.filters import expression_tree
from tarn.scan.sql_filter import parse_filter
from tarn.types import DataField, INT

D = decimal.Decimal
UTC = dt.timezone.utc

ORDERS = pa.schema([("id", pa.int64()), ("order_date", pa.date32()), ("ts", pa.timestamp("us")),
                    ("at", pa.timestamp("us", tz="UTC")), ("amount", pa.decimal128(10, 2)),
                    ("qty", pa.int32()), ("price", pa.float64()), ("name", pa.string()), ("ok", pa.bool_())])


def _orders_rows(day: int, ids: list[int]) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": ids,
        "order_date": [dt.date(2026, 11, day)] * n,
        "ts": [dt.datetime(2026, 11, day, 10, i) for i in range(n)],
        "at": [dt.datetime(2026, 11, day, 10, i, tzinfo=UTC) for i in range(n)],
        "amount": [D(f"{i * 5}.25") for i in range(n)],
        "qty": [i if i % 3 else None for i in range(n)],
        "price": [float(i) for i in range(n)],
        "name": [f"{'ab' if i % 2 else 'cd'}-{i}" if i != 1 else None for i in range(n)],
        "ok": [i % 2 == 0 for i in range(n)],
    }, schema=ORDERS)


@pytest.fixture
def orders(catalog):
    """An append table partitioned by order_date: days 20, 21, 22 with 4 rows each, one file
    per day."""
    table = catalog.create_table("shop.orders", ORDERS, partition_keys=["order_date"])
    for day in (20, 21, 22):
        table.write(_orders_rows(day, [day * 10 + i for i in range(4)]))
    return table


def ids(scan) -> list[int]:
    return sorted(scan.to_arrow().column("id").to_pylist())


# ------------------------------------------------------------------ 1. literals in the column's type

def test_date_filter_with_a_string_literal(orders):
    """Regression: col("order_date") == "2026-11-20" failed at read time with an Arrow kernel error."""
    scan = orders.scan(filter=col("order_date") == "2026-11-20")
    assert ids(scan) == [200, 201, 202, 203]
    assert len(scan.plan()) == 1  # and the partition is still pruned by it
    assert ids(orders.scan(filter=col("order_date") >= "2026-11-21")) == list(range(210, 214)) + list(range(220, 224))
    assert ids(orders.scan(filter=col("order_date").isin(["2026-11-22", dt.date(2026, 11, 20)]))) == \
        [200, 201, 202, 203, 220, 221, 222, 223]
    assert ids(orders.scan(filter=col("order_date") == dt.datetime(2026, 11, 21))) == [210, 211, 212, 213]


def test_timestamp_decimal_and_number_literals(orders):
    assert ids(orders.scan(filter=col("ts") >= "2026-11-22 10:02:00")) == [222, 223]
    assert ids(orders.scan(filter=col("ts") == dt.date(2026, 11, 20))) == []
    assert ids(orders.scan(filter=col("at") < "2026-11-20T10:01:00+00:00")) == [200]
    assert ids(orders.scan(filter=col("at") == dt.datetime(2026, 11, 21, 11, 1, tzinfo=dt.timezone(
        dt.timedelta(hours=1))))) == [211]
    assert ids(orders.scan(filter=(col("amount") > 10) & (col("order_date") == "2026-11-20"))) == [202, 203]
    assert ids(orders.scan(filter=(col("amount") == "5.25") & (col("order_date") == "2026-11-20"))) == [201]
    assert ids(orders.scan(filter=(col("amount") <= 5.25) & (col("order_date") == "2026-11-20"))) == [200, 201]
    assert ids(orders.scan(filter=(col("qty") > 1.5) & (col("order_date") == "2026-11-20"))) == [202]
    assert ids(orders.scan(filter=(col("qty") == "2") & (col("order_date") == "2026-11-20"))) == [202]
    assert ids(orders.scan(filter=(col("price") >= "2") & (col("order_date") == "2026-11-20"))) == [202, 203]
    assert ids(orders.scan(filter=(col("ok") == "false") & (col("order_date") == "2026-11-20"))) == [201, 203]
    assert ids(orders.scan(filter=col("id") == pa.scalar(201))) == [201]


def test_file_statistics_prune_with_converted_literals(catalog):
    table = catalog.create_table("shop.days", pa.schema([("day", pa.date32()), ("v", pa.int64())]))
    for day in range(1, 6):
        table.write(pa.table({"day": [dt.date(2026, 1, day)] * 2, "v": [day, day]},
                             schema=table.scan().arrow_schema))
    scan = table.scan(filter=col("day") > "2026-01-03")
    assert len(scan.plan()) == 2
    assert sorted(scan.to_arrow().column("v").to_pylist()) == [4, 4, 5, 5]


@pytest.mark.parametrize("predicate, column", [
    (col("order_date") == "2026-13-45", "order_date"),
    (col("order_date") == dt.datetime(2026, 11, 20, 10, 30), "order_date"),
    (col("ts") > "yesterday", "ts"),
    (col("ts") > dt.datetime(2026, 1, 1, tzinfo=UTC), "ts"),
    (col("amount") > "a lot", "amount"),
    (col("qty") == "three", "qty"),
    (col("qty") == True, "qty"),  # noqa: E712
    (col("name") == 5, "name"),
    (col("name").isin(["x", 1]), "name"),
    (col("id").startswith("1"), "id"),
])
def test_a_literal_that_does_not_fit_fails_at_scan(orders, predicate, column):
    with pytest.raises(InvalidFilter) as e:
        orders.scan(filter=predicate)
    assert "table shop.orders" in str(e.value) and f"'{column}'" in str(e.value)
    assert isinstance(e.value, tarn.InvalidArgument)


def test_comparing_with_null_is_unknown_also_under_not(orders, catalog):
    assert ids(orders.scan(filter=col("name") == None)) == []  # noqa: E711
    assert ids(orders.scan(filter=~(col("name") == None))) == []  # noqa: E711
    # a value column of a primary-key table has no stats to prune by: the row filter decides
    table = catalog.create_table("shop.named", pa.schema([("id", pa.int64()), ("name", pa.string())]),
                                 primary_key=["id"], options={"bucket": "1"})
    table.write(pa.table({"id": [1, 2], "name": ["a", None]}))
    assert ids(table.scan(filter=~(col("name") == None))) == []  # noqa: E711
    assert ids(table.scan(filter=~(col("name").isin([None])))) == []


# ------------------------------------------------------------------ 2. a name where a list is expected

def test_a_single_name_where_a_list_is_expected(catalog, orders):
    """Regression: scan(columns="id") and primary_key="id" split the name into characters."""
    assert orders.scan(columns="id").to_arrow().column_names == ["id"]
    assert orders.scan(columns=("name", "id")).to_arrow().column_names == ["name", "id"]
    table = catalog.create_table("shop.pk", pa.schema([("dt", pa.string()), ("id", pa.int64())]),
                                 primary_key="id", partition_keys="dt", options={"bucket": "2"})
    assert table.primary_keys == ("id",) and table.partition_keys == ("dt",)
    assert ids(orders.scan(filter=col("name").isin("ab-3"))) == [203, 213, 223]


@pytest.mark.parametrize("columns", [["id", "id"], [1], 5, b"id", {"id": 1}])
def test_bad_columns_are_refused(orders, columns):
    with pytest.raises(tarn.InvalidArgument, match="table shop.orders"):
        orders.scan(columns=columns)


# ------------------------------------------------------------------ 3. typed errors, Path, datetime

def test_schema_changes_take_pyarrow_types_and_type_names(catalog):
    """Regression: AddColumn("x", pa.int32()) raised AttributeError inside alter."""
    table = catalog.create_table("shop.evolve", pa.schema([("id", pa.int64())]))
    table.alter(tarn.AddColumn("x", pa.int32()), tarn.AddColumn("y", "DECIMAL(10, 2)"),
                tarn.SetOption("snapshot.num-retained.min", 5), tarn.SetOption("manifest.merge-min-count", 3))
    schema = table.schema()
    assert [(f.name, str(f.type)) for f in schema.fields] == [("id", "BIGINT"), ("x", "INT"),
                                                              ("y", "DECIMAL(10, 2)")]
    assert schema.options["snapshot.num-retained.min"] == "5"
    table.alter(tarn.UpdateColumnType("x", pa.int64()))
    assert str(table.schema().field("x").type) == "BIGINT"


@pytest.mark.parametrize("build", [
    lambda: tarn.AddColumn("x", 5),
    lambda: tarn.AddColumn("x", int),
    lambda: tarn.AddColumn(5, INT()),
    lambda: tarn.AddColumn("x", INT(), position="middle"),
    lambda: tarn.AddColumn("x", INT(), comment=3),
    lambda: tarn.RenameColumn("x", None),
    lambda: tarn.RenameColumn("", "y"),
    lambda: tarn.DropColumn(None),
    lambda: tarn.UpdateColumnType("x", None),
    lambda: tarn.UpdateColumnNullability("x", "yes"),
    lambda: tarn.UpdateColumnComment(("a", 1), "c"),
    lambda: tarn.SetOption("bucket", None),
    lambda: tarn.SetOption(None, "1"),
    lambda: tarn.RemoveOption(""),
    lambda: tarn.UpdateComment(5),
])
def test_bad_schema_changes_fail_when_built(build):
    with pytest.raises(tarn.InvalidArgument):
        build()


def test_paths_are_accepted(tmp_path):
    """Regression: Catalog(Path(...)) raised TypeError."""
    catalog = tarn.Catalog(tmp_path / "wh")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1]}))
    assert tarn.load_table(tmp_path / "wh" / "db.db" / "t").scan().count() == 1
    with pytest.raises(tarn.InvalidArgument):
        tarn.Catalog(42)
    with pytest.raises(tarn.InvalidArgument):
        tarn.load_table(None)


def test_time_travel_by_datetime_date_and_timedelta(orders):
    """Regression: scan(as_of_timestamp_ms=datetime) raised TypeError."""
    first = orders.snapshots()[0]
    at = dt.datetime.fromtimestamp(first.time_millis / 1000)  # naive: local time
    assert orders.scan(as_of_timestamp_ms=at).snapshot.id == first.id
    assert orders.scan(as_of_timestamp_ms=at.astimezone(UTC)).snapshot.id == first.id
    assert orders.scan(as_of_timestamp_ms=pd.Timestamp(at)).snapshot.id == first.id
    assert orders.scan(as_of_timestamp_ms=dt.timedelta(0)).snapshot.id == orders.latest_snapshot().id
    with pytest.raises(tarn.SnapshotNotFound):
        orders.scan(as_of_timestamp_ms=dt.timedelta(days=365 * 100))
    with pytest.raises(tarn.SnapshotNotFound):
        orders.scan(as_of_timestamp_ms=dt.date(1990, 1, 1))
    for bad in ("yesterday", 1.5, True):
        with pytest.raises(tarn.InvalidArgument, match="as_of_timestamp_ms"):
            orders.scan(as_of_timestamp_ms=bad)


def test_create_table_from_a_dataframe_schema(catalog):
    """Regression: create_table(schema=<DataFrame>) raised AttributeError."""
    frame = pd.DataFrame({"id": [1, 2], "name": ["a", "b"], "price": [1.5, 2.5]})
    table = catalog.create_table("shop.from_pandas", frame)
    assert [f.name for f in table.schema().fields] == ["id", "name", "price"]
    assert table.scan().count() == 0  # the columns, not the rows
    table.write(frame)
    assert table.scan().count() == 2

    import polars as pl

    table = catalog.create_table("shop.from_polars", pl.DataFrame({"id": [1], "s": ["x"]}))
    assert [(f.name, str(f.type)) for f in table.schema().fields] == [("id", "BIGINT"), ("s", "STRING")]
    table = catalog.create_table("shop.from_fields", [pa.field("id", pa.int32())])
    assert str(table.schema().field("id").type) == "INT"
    assert catalog.create_table("shop.from_table", pa.table({"x": [1.0]})).schema().field_names == ["x"]


@pytest.mark.parametrize("call", [
    lambda c: c.create_table("shop.bad", "id INT"),
    lambda c: c.create_table("shop.bad", None),
    lambda c: c.create_table("shop.bad", [("id", 1)]),
    lambda c: c.create_table("shop.bad", pa.schema([("id", pa.int64())]), primary_key=[1]),
    lambda c: c.create_table("shop.bad", pa.schema([("id", pa.int64())]), options=["bucket=1"]),
    lambda c: c.create_table("shop.bad", pa.schema([("id", pa.int64())]), comment=5),
    lambda c: c.create_table(None, pa.schema([("id", pa.int64())])),
    lambda c: tarn.Catalog(str(c.warehouse), storage_options="x"),
])
def test_create_table_misuse_is_a_typed_error(catalog, call):
    with pytest.raises(tarn.InvalidArgument):
        call(catalog)


@pytest.mark.parametrize("make_filter", [
    lambda: 5,
    lambda: col("ok"),
    lambda: [("id", "=", 1)],
    lambda: "id ==",
    lambda: pc.field("id") == "x",
    lambda: tarn.scan.predicate.And(()),
])
def test_bad_filters_are_typed_errors(orders, make_filter):
    with pytest.raises(InvalidFilter, match="table shop.orders"):
        orders.scan(filter=make_filter())


# ------------------------------------------------------------------ 4. pandas frames with an index

def test_writing_a_filtered_dataframe(catalog):
    """Regression: a filtered DataFrame failed with "unknown column(s) ['__index_level_0__']"."""
    table = catalog.create_table("shop.frames", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    frame = pd.DataFrame({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]})
    table.write(frame[frame.id > 2])
    table.write(frame.set_index("id").loc[[1]])  # a named index that is a table column is written
    table.write(frame[frame.id == 2].rename_axis("row"))  # a named index that is not is dropped
    table.write(pa.Table.from_pandas(frame[frame.id > 3]))  # converted by the user, index kept
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}, {"id": 4, "v": "d"}, {"id": 4, "v": "d"}]
    table.overwrite(frame[frame.id < 3])
    assert table.scan().count() == 2


# ------------------------------------------------------------------ 5. data tools

def test_to_polars_and_the_arrow_stream(orders):
    import polars as pl

    scan = orders.scan(filter=col("order_date") == "2026-11-21", columns=["id", "amount"])
    frame = scan.to_polars()
    assert isinstance(frame, pl.DataFrame) and sorted(frame["id"].to_list()) == [210, 211, 212, 213]
    assert frame.columns == ["id", "amount"]
    reader = scan.to_arrow_batch_reader()
    assert isinstance(reader, pa.RecordBatchReader) and reader.schema == scan.arrow_schema
    assert reader.read_all().num_rows == 4
    assert pa.table(scan).num_rows == 4  # __arrow_c_stream__, read again
    assert sorted(pl.DataFrame(scan)["id"].to_list()) == [210, 211, 212, 213]
    stream = pa.RecordBatchReader.from_stream(scan)
    assert stream.schema.names == ["id", "amount"]


def test_to_duckdb(orders):
    import duckdb

    scan = orders.scan(filter="amount > 10", columns=["id", "order_date", "amount"])
    connection = scan.to_duckdb("big_orders")
    rows = connection.sql("SELECT order_date, count(*) FROM big_orders GROUP BY 1 ORDER BY 1").fetchall()
    assert rows == [(dt.date(2026, 11, day), 2) for day in (20, 21, 22)]
    mine = duckdb.connect()
    assert orders.scan(columns="id").to_duckdb("ids", connection=mine) is mine
    assert mine.sql("SELECT sum(id) FROM ids").fetchall() == [(sum(range(200, 204)) + sum(range(210, 214))
                                                               + sum(range(220, 224)),)]
    with pytest.raises(tarn.InvalidArgument):
        scan.to_duckdb(None)


def test_missing_optional_packages_name_the_extra(orders, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_polars(name, *args, **kwargs):
        if name in ("polars", "duckdb"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_polars)
    with pytest.raises(MissingDependency, match=r"tarn-lake\[polars\]"):
        orders.scan().to_polars()
    with pytest.raises(MissingDependency, match=r"tarn-lake\[duckdb\]"):
        orders.scan().to_duckdb("t")


def _count_split_reads(monkeypatch) -> list:
    reads = []
    original = reader_module.SplitReader.read_chunks

    def counting(self, split):
        reads.append(split)
        return original(self, split)

    monkeypatch.setattr(reader_module.SplitReader, "read_chunks", counting)
    return reads


def test_limit_stops_reading_early(orders, monkeypatch):
    reads = _count_split_reads(monkeypatch)
    assert orders.scan(limit=3).to_arrow().num_rows == 3
    assert len(reads) == 1  # three files of four rows: the first one is enough
    reads.clear()
    assert len(list(orders.scan(limit=5).to_batches())) >= 2 and len(reads) == 2
    reads.clear()
    limited = orders.scan(filter=col("price") >= 3, limit=2).to_arrow()  # the limit applies after the filter
    assert limited.num_rows == 2 and set(limited.column("price").to_pylist()) == {3.0}
    assert orders.scan(limit=100).to_arrow().num_rows == 12
    empty = orders.scan(limit=0, columns=["id"]).to_arrow()
    assert empty.num_rows == 0 and empty.column_names == ["id"]
    assert orders.scan(limit=3).to_arrow_batch_reader().read_all().num_rows == 3
    assert len(orders.scan(limit=2).to_pandas()) == 2


@pytest.mark.parametrize("limit", [-1, "5", 2.5, True])
def test_bad_limits(orders, limit):
    with pytest.raises(tarn.InvalidArgument, match="limit"):
        orders.scan(limit=limit)


def test_count_honours_limit_and_row_filter(orders):
    assert orders.scan(limit=5).count() == 5
    assert orders.scan(filter=pc.field("price") * 2 > 5).count() == 3


def test_pyarrow_expressions_become_predicates(orders):
    scan = orders.scan(filter=(pc.field("order_date") == pa.scalar(dt.date(2026, 11, 20)))
                       & (pc.field("amount") > D("1")))
    assert scan.row_filter is None and scan.filter is not None
    assert len(scan.plan()) == 1  # pruned by partition like a tarn predicate
    assert ids(scan) == [201, 202, 203]
    # string literals are converted for the column too
    assert ids(orders.scan(filter=pc.field("order_date") == "2026-11-22")) == [220, 221, 222, 223]


def test_untranslatable_expressions_filter_rows_after_the_read(orders):
    expression = (pc.field("price") * 2 > 5) & (pc.field("order_date") == pa.scalar(dt.date(2026, 11, 21)))
    scan = orders.scan(filter=expression, columns=["id"])
    assert scan.row_filter is not None
    assert len(scan.plan()) == 1  # the translatable conjunct still prunes
    assert scan.to_arrow().to_pylist() == [{"id": 213}]
    whole = orders.scan(filter=pc.field("price") * 2 > 5, columns=["name"])
    assert sorted(whole.to_arrow().column("name").to_pylist()) == ["ab-3"] * 3
    assert sum(b.num_rows for b in whole.to_batches()) == 3


EXPRESSIONS = [
    pc.field("qty") == 2,
    pc.field("qty") != 2,
    ~(pc.field("qty") == 2),
    pc.field("qty").isin([0, 2]),
    ~pc.field("qty").isin([0, 2]),
    pc.field("qty").isin([2, None]),
    ~pc.field("qty").isin([2, None]),
    pc.field("name").is_null(),
    ~pc.field("name").is_valid(),
    pc.starts_with(pc.field("name"), "ab"),
    ~pc.starts_with(pc.field("name"), "ab"),
    (pc.field("qty") > 0) | pc.field("name").is_null(),
    ~((pc.field("qty") > 0) & (pc.field("name") != "cd-2")),
    pc.scalar(2) <= pc.field("qty"),
    pc.field("ok") == True,  # noqa: E712
    ~(pc.field("qty") == pa.scalar(None, pa.int32())),
]


@pytest.mark.parametrize("expression", EXPRESSIONS, ids=str)
def test_expressions_keep_arrows_meaning(orders, expression):
    """A translated Expression returns exactly the rows Arrow's own filter returns (nulls too)."""
    everything = orders.scan().to_arrow()
    expected = sorted(everything.filter(expression).column("id").to_pylist())
    scan = orders.scan(filter=expression)
    assert scan.row_filter is None, "expected a full translation"
    assert ids(scan) == expected


def test_expression_decoding_reads_pyarrows_own_form():
    tree = expression_tree((pc.field("a b") == 5) & pc.field("c").isin(["x"]))
    assert tree.name == "and_kleene" and [a.name for a in tree.args] == ["equal", "is_in"]
    assert tree.args[0].args[0].name == "a b" and tree.args[0].args[1].value.as_py() == 5
    assert tree.args[1].options["value_set"] == ["x"]


def test_expressions_with_unknown_columns(orders):
    with pytest.raises(tarn.SchemaMismatch, match="'nope'"):
        orders.scan(filter=pc.field("nope") > 1)


def test_sql_like_filters(orders):
    def same(text, predicate):
        assert ids(orders.scan(filter=text)) == ids(orders.scan(filter=predicate)), text

    assert ids(orders.scan(filter="order_date = '2026-11-20' and amount > 10")) == [202, 203]
    same("order_date = DATE '2026-11-21' AND (qty IN (1, 2) OR name IS NULL)",
         (col("order_date") == "2026-11-21") & (col("qty").isin([1, 2]) | col("name").is_null()))
    same("name LIKE 'ab%' AND NOT id <> 213", col("name").startswith("ab") & (col("id") == 213))
    same("name NOT LIKE 'ab%'", ~col("name").startswith("ab"))
    same("qty NOT IN (1, 2) or qty is null", col("qty").not_in([1, 2]) | col("qty").is_null())
    same("name IS NOT NULL and ok = true", col("name").is_not_null() & (col("ok") == True))  # noqa: E712
    same("ts >= TIMESTAMP '2026-11-21 10:02:00' and ts < '2026-11-22'",
         (col("ts") >= dt.datetime(2026, 11, 21, 10, 2)) & (col("ts") < dt.datetime(2026, 11, 22)))
    same("amount between 5 and 10.25", (col("amount") >= 5) & (col("amount") <= D("10.25")))
    same("10 < amount", col("amount") > 10)
    same("price >= 1.5 and price != 3", (col("price") >= 1.5) & (col("price") != 3))
    same("\"order_date\" = '2026-11-22' and `id` > -1", col("order_date") == "2026-11-22")
    same("name = 'it''s'", col("name") == "it's")
    same("name like 'cd-0'", col("name") == "cd-0")
    scan = orders.scan(filter="order_date = '2026-11-22'")
    assert len(scan.plan()) == 1  # pruned like a predicate


@pytest.mark.parametrize("text, fragment", [
    ("amount >", "expected a value to compare 'amount' with"),
    ("name = \"x\"", "text values take single quotes"),
    ("name LIKE '%x'", "only 'prefix%'"),
    ("(qty = 1", "expected ')'"),
    ("qty = 1 qty = 2", "expected AND, OR or the end"),
    ("order_date = DATE '2026-02-30'", "not an ISO date"),
    ("name = 'open", "closing quote"),
    ("qty ; 1", "unexpected ';"),
    ("", "empty"),
    ("id = 1 or", "a column or a value"),
    ("1 = 2", "a column on one side"),
])
def test_sql_like_filter_errors(orders, text, fragment):
    with pytest.raises(InvalidFilter) as e:
        orders.scan(filter=text)
    assert "table shop.orders" in str(e.value) and fragment in str(e.value)


def test_sql_like_filter_errors_name_the_column(orders):
    with pytest.raises(tarn.SchemaMismatch, match=r"table shop.orders: filter names unknown column\(s\) \['cost'\]"):
        orders.scan(filter="cost > 1")
    with pytest.raises(InvalidFilter, match="column 'qty' of type INT"):
        orders.scan(filter="qty = 'many'")


def test_sql_parser_values_stay_as_written():
    assert parse_filter("a = 1.50 and b = -2 and c = 'x' and d = TIMESTAMP '2026-01-01 10:00'") == tarn.scan.predicate.And((
        tarn.scan.predicate.Compare("a", "==", D("1.50")), tarn.scan.predicate.Compare("b", "==", -2),
        tarn.scan.predicate.Compare("c", "==", "x"),
        tarn.scan.predicate.Compare("d", "==", dt.datetime(2026, 1, 1, 10))))


def test_sql_parser_signs_names_and_null_in_lists():
    P = tarn.scan.predicate
    assert parse_filter("a > +2 and `order-id` not between -1 and +1.5 and v$1 in (1, NULL)") == P.And((
        P.Compare("a", ">", 2), P.Not(P.And((P.Compare("order-id", ">=", -1), P.Compare("order-id", "<=", D("1.5"))))),
        P.In("v$1", (1, None))))


@pytest.mark.parametrize("text, column", [
    ("name = NULL", "name"),
    ("NOT qty <> null", "qty"),
    ("NULL < id", "id"),
    ("qty BETWEEN NULL AND 3", "qty"),
    ("qty NOT BETWEEN 1 AND NULL", "qty"),
])
def test_sql_comparisons_with_null_point_to_is_null(orders, text, column):
    with pytest.raises(InvalidFilter) as e:
        orders.scan(filter=text)
    assert "table shop.orders" in str(e.value) and f"write '{column} IS NULL'" in str(e.value)


def test_filters_work_on_primary_key_tables_and_time_travel(catalog):
    table = catalog.create_table("shop.accounts", pa.schema([("id", pa.int64()), ("since", pa.date32())]),
                                 primary_key="id", options={"bucket": "1"})
    table.write(pa.table({"id": [1, 2], "since": [dt.date(2026, 1, 1), dt.date(2026, 2, 1)]},
                         schema=table.scan().arrow_schema))
    table.write(pa.table({"id": [1], "since": [dt.date(2026, 3, 1)]}, schema=table.scan().arrow_schema))
    assert ids(table.scan(filter="since < '2026-02-15'")) == [2]
    assert ids(table.scan(filter="since < '2026-02-15'", snapshot_id=1)) == [1, 2]
    assert ids(table.scan(filter=pc.field("since").cast(pa.string()) > "2026-02")) == [1, 2]
    table.delete(filter=col("since") == "2026-03-01")  # a primary-key delete scans with the filter
    assert ids(table.scan()) == [2]


def test_scan_is_documented():
    public = [name for name, _ in inspect.getmembers(tarn.Scan) if not name.startswith("_")]
    for name in public + ["__arrow_c_stream__"]:
        member = getattr(tarn.Scan, name)
        if callable(member) or isinstance(member, property):
            assert (member.__doc__ or "").strip(), f"Scan.{name} has no docstring"
    assert {"to_polars", "to_duckdb", "to_arrow_batch_reader", "to_pandas", "to_arrow"} <= set(public)
    assert "limit" in inspect.signature(tarn.Table.scan).parameters


def test_datafields_still_make_tables(catalog):
    table = catalog.create_table("shop.fields", [DataField(0, "id", INT())], primary_key="id",
                                 options={"bucket": "1"})
    assert table.primary_keys == ("id",)
    assert isinstance(Path(table.root).name, str)


def test_the_table_shows_its_verbs_not_the_kernel(catalog):
    """Issue 39: internals leave `Table`'s surface (they live on `table.core`, and a Table still
    forwards them for engines and tools); the parameters people type most are annotated."""
    import inspect

    import pyarrow as pa

    internals = {"recorded", "start_operation", "counted", "landed", "bucket_dir", "committer", "planner",
                 "manifests", "forget_schemas", "live_entries", "scan_latest", "scan_snapshot", "schema_by_id"}
    surface = {n for n in dir(tarn.Table) if not n.startswith("_")}
    assert not surface & internals
    assert {"write", "scan", "delete", "update", "merge", "compact", "commit", "new_writer", "schema"} <= surface
    table = catalog.create_table("db.t", pa.schema([pa.field("k", pa.int64(), nullable=False)]), primary_key=["k"],
                                 options={"bucket": "1"})
    assert table.live_entries(None) == [] and table.core.planner() is not None  # still reachable
    for verb, names in (("write", ["data"]), ("delete", ["keys", "filter"]), ("scan", ["filter"]),
                        ("merge", ["source", "on", "when_matched_update", "when_matched_delete",
                                   "when_not_matched_insert", "when_not_matched_by_source_delete"]),
                        ("upsert", ["data", "on"]), ("update", ["set", "filter"])):
        parameters = inspect.signature(getattr(tarn.Table, verb)).parameters
        assert all(parameters[n].annotation is not inspect.Parameter.empty for n in names), verb
