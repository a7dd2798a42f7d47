"""The `tarn` command line (tarn/cli): every command through typer's runner on the app the
console script runs, JSON outputs parsed, effects checked on the tables; one run of the
installed `tarn` script in a subprocess."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

typer_testing = pytest.importorskip("typer.testing")

import tarn  # noqa: E402
import typer  # noqa: E402
from tarn.cli import app  # noqa: E402
from tarn.cli.where import parse_value, where_predicate  # noqa: E402
from tarn.scan.predicate import And, Compare, In, IsNull, Not, Or  # noqa: E402
from tarn.table import Table  # noqa: E402
from tarn.types import DataField  # noqa: E402
from tarn import types as T  # noqa: E402

runner = typer_testing.CliRunner()
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def run(*args, status: int = 0, input: str | None = None, env: dict | None = None):
    result = runner.invoke(app, [str(a) for a in args], input=input, env={"COLUMNS": "200", **(env or {})})
    assert result.exit_code == status, (result.exit_code, result.output, result.exception)
    return result


def run_json(*args, **kwargs):
    return json.loads(run(*args, "--json", **kwargs).stdout)


@pytest.fixture
def warehouse(tmp_path) -> str:
    """shop.orders: primary key (dt, id), partitioned by dt, 2 buckets, 3 snapshots, tag 'first'."""
    path = str(tmp_path / "wh")
    orders = tarn.Catalog(path).create_table("shop.orders", schema=SCHEMA, primary_key=["dt", "id"],
                                             partition_keys=["dt"],
                                             options={"bucket": "2", "snapshot.num-retained.min": "1"})
    orders.write(pa.table({"dt": ["d1"] * 4 + ["d2"] * 2, "id": [1, 2, 3, 4, 1, 2], "v": list("abcdef")}))
    orders.create_tag("first")
    orders.write(pa.table({"dt": ["d1", "d1"], "id": [2, 5], "v": ["B", None]}))
    orders.write(pa.table({"dt": ["d2"], "id": [3], "v": ["g"]}))
    return path


def orders(warehouse: str) -> Table:
    return tarn.Catalog(warehouse).load_table("shop.orders")


# ---------------------------------------------------------------------------------------------
# looking


def test_info_json_and_table(warehouse):
    data = run_json("info", "shop.orders", "--warehouse", warehouse)
    assert data["name"] == "shop.orders" and data["kind"] == "primary-key"
    assert data["primary_keys"] == ["dt", "id"] and data["partition_keys"] == ["dt"] and data["bucket"] == 2
    assert [(f["name"], f["type"], f["primary_key"]) for f in data["fields"]] == [
        ("dt", "STRING NOT NULL", True), ("id", "BIGINT NOT NULL", True), ("v", "STRING", False)]
    assert data["options"] == {"bucket": "2", "snapshot.num-retained.min": "1"}
    assert data["snapshot"]["snapshot_id"] == 3 and data["snapshot"]["total_record_count"] == 9
    assert data["snapshots"] == {"count": 3, "earliest": 1, "latest": 3} and data["tags"] == ["first"]
    live = orders(warehouse).live_entries(orders(warehouse).latest_snapshot())
    assert data["sizes"]["data_files"] == len(live)
    assert data["sizes"]["data_bytes"] == sum(e.file.file_size for e in live) > 0
    assert data["sizes"]["partitions"] == 2 and data["sizes"]["records_in_files"] == 9

    text = run("info", orders(warehouse).root).stdout  # a directory instead of an identifier
    assert "primary-key (deduplicate, key dt, id)" in text and "STRING NOT NULL" in text
    assert "snapshot.num-retained.min" in text and "first" in text


def test_warehouse_from_the_environment(warehouse):
    assert run_json("info", "shop.orders", env={"TARN_WAREHOUSE": warehouse})["name"] == "shop.orders"


def test_system_table_commands(warehouse):
    table = orders(warehouse)
    snapshots = run_json("snapshots", "shop.orders", "-w", warehouse)
    assert [(s["snapshot_id"], s["commit_kind"], s["total_record_count"]) for s in snapshots] == [
        (1, "APPEND", 6), (2, "APPEND", 8), (3, "APPEND", 9)]
    assert [(t["tag_name"], t["snapshot_id"]) for t in run_json("tags", "shop.orders", "-w", warehouse)] == [
        ("first", 1)]
    files = run_json("files", "shop.orders", "-w", warehouse)
    assert sorted(f["file_path"] for f in files) == sorted(table.system_table("files").to_arrow()
                                                           .column("file_path").to_pylist())
    assert all(os.path.exists(f["file_path"]) for f in files)
    parts = run_json("partitions", "shop.orders", "-w", warehouse)
    assert [(p["partition"], p["record_count"]) for p in parts] == [("dt=d1", 6), ("dt=d2", 3)]

    text = run("files", "shop.orders", "-w", warehouse).stdout
    assert "files of shop.orders" in text and files[0]["file_path"].rsplit("/", 1)[-1] in text
    assert "dt=d1" in run("partitions", "shop.orders", "-w", warehouse).stdout
    assert "APPEND" in run("snapshots", "shop.orders", "-w", warehouse).stdout
    assert "first" in run("tags", "shop.orders", "-w", warehouse).stdout


def test_show_where_columns_limit_and_time_travel(warehouse):
    rows = run_json("show", "shop.orders", "-w", warehouse, "--limit", "0")
    assert sorted((r["dt"], r["id"], r["v"]) for r in rows) == [
        ("d1", 1, "a"), ("d1", 2, "B"), ("d1", 3, "c"), ("d1", 4, "d"), ("d1", 5, None),
        ("d2", 1, "e"), ("d2", 2, "f"), ("d2", 3, "g")]
    assert len(run_json("show", "shop.orders", "-w", warehouse, "--limit", "3")) == 3

    picked = run_json("show", "shop.orders", "-w", warehouse, "--where",
                      "dt = 'd1' and (id in (1, 5) or v >= 'c') and not id = 4", "-c", "id,v")
    assert sorted((r["id"], r["v"]) for r in picked) == [(1, "a"), (3, "c"), (5, None)]
    assert [r["id"] for r in run_json("show", "shop.orders", "-w", warehouse, "--where", "v is null")] == [5]
    between = run_json("show", "shop.orders", "-w", warehouse, "--where", "id between 2 and 3 and dt <> 'd1'")
    assert sorted((r["dt"], r["id"]) for r in between) == [("d2", 2), ("d2", 3)]

    at_tag = run_json("show", "shop.orders", "-w", warehouse, "--at", "first", "--where", "`dt` = 'd1'")
    assert sorted((r["id"], r["v"]) for r in at_tag) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    at_two = run_json("show", "shop.orders", "-w", warehouse, "--at", "2", "--limit", "0")
    assert len(at_two) == 7

    text = run("show", "shop.orders", "-w", warehouse, "--limit", "2").stdout
    assert "2 rows (first 2; more match" in text and "shop.orders" in text


def test_show_refuses_bad_filters_and_targets(warehouse):
    bad = run("show", "shop.orders", "-w", warehouse, "--where", "id >", status=2)
    assert "expected a value" in bad.output and "'--where'" in bad.output
    assert "unknown column(s) ['nope']" in run("show", "shop.orders", "-w", warehouse, "--where", "nope = 1",
                                               status=2).output
    assert "does not fit column 'id'" in run("show", "shop.orders", "-w", warehouse, "--where", "id = 'x'",
                                             status=2).output
    assert "text values take single quotes" in run("show", "shop.orders", "-w", warehouse, "--where",
                                                   "dt = \"d1\"", status=2).output
    missing = run("show", "shop.orders", "-w", warehouse, "--at", "99", status=1)
    assert "error:" in missing.stderr and "snapshot 99 does not exist" in missing.stderr
    assert "tag" in run("show", "shop.orders", "-w", warehouse, "--at", "nope", status=1).stderr


def test_help_and_version():
    assert run("--version").stdout == f"tarn {tarn.__version__}\n"
    assert run("--version").stdout != "tarn (not installed)\n"  # the distribution is tarn-lake, not tarn
    listing = run("--help").stdout
    for name in ("info", "snapshots", "tags", "files", "partitions", "show", "create", "import", "compact",
                 "expire", "rollback", "orphans", "analyze", "lsm"):
        assert name in listing


def test_errors_name_the_table(warehouse, tmp_path):
    result = run("info", "shop.missing", "-w", warehouse, status=1)
    assert "table shop.missing does not exist" in result.stderr and result.stdout == ""
    hint = run("info", "shop.orders", status=1)
    assert "give --warehouse WH" in hint.stderr
    assert "no Paimon table" in run("info", tmp_path, status=1).stderr


# ---------------------------------------------------------------------------------------------
# the --where filter: the scan's own parser and literal conversion (tarn/scan/sql_filter.py)


def where(text: str, **types):
    fields = [DataField(i, name, dtype) for i, (name, dtype) in enumerate(types.items())]
    return where_predicate(text, fields, "shop.t")


def test_where_grammar_and_precedence():
    types = {"a": T.BIGINT(), "s": T.STRING(), "b": T.BOOLEAN()}
    assert where("a = 1 or a = 2 and s != 'x'", **types) == Or((
        Compare("a", "==", 1), And((Compare("a", "==", 2), Compare("s", "!=", "x")))))
    assert where("(a < -1.5 or b = true) and s not in ('it''s', 'y')", **types) == And((
        Or((Compare("a", "<", -1.5), Compare("b", "==", True))), In("s", ("it's", "y"), negated=True)))
    assert where("NOT `a` IS NOT NULL AND s is null", **types) == And((
        Not(IsNull("a", negated=True)), IsNull("s")))
    assert where("a not between 1 and +3", **types) == Not(And((Compare("a", ">=", 1), Compare("a", "<=", 3))))
    assert where("s = '12'", **types) == Compare("s", "==", "12")
    assert where(None, **types) is None


def test_where_converts_literals_to_the_column_types():
    types = {"d": T.DATE(), "ts": T.TIMESTAMP(3), "p": T.DECIMAL(10, 2), "f": T.DOUBLE(), "n": T.INT()}
    assert where("d >= '2026-01-31'", **types) == Compare("d", ">=", dt.date(2026, 1, 31))
    assert where("ts < '2026-01-31 12:30:00'", **types) == Compare("ts", "<", dt.datetime(2026, 1, 31, 12, 30))
    assert where("p = 9.99", **types) == Compare("p", "==", decimal.Decimal("9.99"))
    assert where("f > 1e3 and n = '7'", **types) == And((Compare("f", ">", 1000.0), Compare("n", "==", 7)))


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("a = ", "expected a value"),
    ("a = 1 a", "expected AND, OR or the end"),
    ("a = null", "write 'a IS NULL'"),
    ("zz = 1", "unknown column(s) ['zz']"),
    ("d = 'tomorrow'", "does not fit column 'd' of type DATE"),
    ("a in (1, 2", "expected ')'"),
    ("a ~ 1", "unexpected '~ 1'"),
    ("a = true", "a bool is not a number"),
    ("a = \"x\"", "text values take single quotes"),
])
def test_where_errors_are_bad_parameters(text, message):
    with pytest.raises(typer.BadParameter) as e:
        where(text, a=T.BIGINT(), d=T.DATE())
    assert message in e.value.message and "table shop.t" in e.value.message


def test_partition_values_take_the_column_types():
    assert parse_value("2026-01-31", DataField(0, "d", T.DATE()), "shop.t", "'--partition'") == dt.date(2026, 1, 31)
    assert parse_value(" 7", DataField(0, "n", T.INT()), "shop.t", "'--partition'") == 7
    with pytest.raises(typer.BadParameter, match="does not fit column 'd'"):
        parse_value("tomorrow", DataField(0, "d", T.DATE()), "shop.t", "'--partition'")


# ---------------------------------------------------------------------------------------------
# creating and importing


def test_create_from_schema_file_then_import_csv_and_parquet(tmp_path):
    warehouse = str(tmp_path / "wh")
    schema_file = tmp_path / "prices.json"
    schema_file.write_text(json.dumps({
        "fields": [{"name": "day", "type": "DATE"}, {"name": "id", "type": "BIGINT"},
                   {"name": "price", "type": "DECIMAL(10, 2)"}, {"name": "at", "type": "TIMESTAMP(3)"}],
        "primaryKeys": ["day", "id"], "partitionKeys": ["day"], "options": {"bucket": "1"},
        "comment": "daily prices"}))
    created = run_json("create", "shop.prices", "-w", warehouse, "--schema", schema_file, "-o", "file.format=parquet")
    assert [f["type"] for f in created["fields"]] == ["DATE NOT NULL", "BIGINT NOT NULL", "DECIMAL(10, 2)",
                                                      "TIMESTAMP(3)"]
    assert created["options"] == {"bucket": "1", "file.format": "parquet"}
    table = tarn.Catalog(warehouse).load_table("shop.prices")
    assert table.schema().comment == "daily prices" and table.primary_keys == ("day", "id")

    csv_file = tmp_path / "prices.csv"
    csv_file.write_text("day,id,price,at\n2026-02-01,1,9.99,2026-02-01 10:00:00\n"
                        "2026-02-01,2,1.50,2026-02-01 11:00:00\n2026-02-02,3,3.00,\n")
    parquet_file = tmp_path / "more.parquet"
    pq.write_table(pa.table({"day": [dt.date(2026, 2, 2)], "id": [4], "price": [decimal.Decimal("4.25")],
                             "at": [None]}, schema=pa.schema([("day", pa.date32()), ("id", pa.int64()),
                                                              ("price", pa.decimal128(10, 2)),
                                                              ("at", pa.timestamp("ms"))])), parquet_file)
    imported = run_json("import", "shop.prices", csv_file, parquet_file, "-w", warehouse)
    assert imported["rows"] == 4 and [f["rows"] for f in imported["files"]] == [3, 1]
    assert imported["snapshot_id"] == 1 and [s.id for s in table.snapshots()] == [1]  # one commit
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["day"], r["id"], r["price"]) for r in rows] == [
        (dt.date(2026, 2, 1), 1, decimal.Decimal("9.99")), (dt.date(2026, 2, 1), 2, decimal.Decimal("1.50")),
        (dt.date(2026, 2, 2), 3, decimal.Decimal("3.00")), (dt.date(2026, 2, 2), 4, decimal.Decimal("4.25"))]
    assert rows[0]["at"] == dt.datetime(2026, 2, 1, 10) and rows[2]["at"] is None

    shown = run_json("show", "shop.prices", "-w", warehouse, "--where", "day = '2026-02-01' and price > 2")
    assert [(r["id"], r["price"], r["at"]) for r in shown] == [(1, "9.99", "2026-02-01T10:00:00")]
    assert "imported 4 rows from 2 files" in run("import", "shop.prices", csv_file, parquet_file,
                                                 "-w", warehouse).stdout
    again = run("create", "shop.prices", "-w", warehouse, "--schema", schema_file, status=1)
    assert "already exists" in again.stderr


def test_create_by_sampling_a_file_with_import(tmp_path):
    data = tmp_path / "events.parquet"
    pq.write_table(pa.table({"id": [3, 1, 2], "kind": ["x", "y", "x"], "score": [0.5, 1.5, 2.5]}), data)
    target = tmp_path / "events"
    result = run_json("create", target, "--from", data, "--primary-key", "id", "-o", "bucket=2", "--import")
    assert [(f["name"], f["type"]) for f in result["fields"]] == [
        ("id", "BIGINT NOT NULL"), ("kind", "STRING"), ("score", "DOUBLE")]
    assert result["import"]["rows"] == 3
    table = tarn.load_table(str(target))
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]

    tsv = tmp_path / "people.tsv"
    tsv.write_text("name\tage\nann\t31\nbob\t\n")
    made = run_json("create", tmp_path / "people", "--from", tsv)
    assert [(f["name"], f["type"]) for f in made["fields"]] == [("name", "STRING"), ("age", "BIGINT")]
    assert made["import"] is None and tarn.load_table(str(tmp_path / "people")).latest_snapshot() is None
    assert "exactly one of --schema" in run("create", tmp_path / "x", status=2).output


def test_import_refuses_unknown_formats_and_bad_rows(warehouse, tmp_path):
    odd = tmp_path / "rows.json"
    odd.write_text("{}")
    assert "--format parquet|csv" in run("import", "shop.orders", odd, "-w", warehouse, status=2).output
    bad = tmp_path / "bad.csv"
    bad.write_text("dt,id,v\nd1,not-a-number,x\n")
    assert "error:" in run("import", "shop.orders", bad, "-w", warehouse, status=1).stderr
    assert [s.id for s in orders(warehouse).snapshots()] == [1, 2, 3]  # nothing committed


# ---------------------------------------------------------------------------------------------
# maintenance


def test_compact_full_moves_every_file_to_the_top_level(warehouse):
    result = run_json("compact", "shop.orders", "-w", warehouse, "--full")
    table = orders(warehouse)
    latest = table.latest_snapshot()
    assert result["snapshot_id"] == latest.id == 4 and latest.commit_kind == "COMPACT"
    assert result["files_before"] > result["files_after"] == 4  # one file per (partition, bucket)
    assert {e.file.level for e in table.live_entries(latest)} == {5}
    assert table.scan().count() == 8
    assert "nothing to compact" in run("compact", "shop.orders", "-w", warehouse).stdout


def test_compact_one_partition(warehouse):
    run("compact", "shop.orders", "-w", warehouse, "--full", "--partition", "dt=d2")
    table = orders(warehouse)
    levels = {(e.partition, e.file.level) for e in table.live_entries(table.latest_snapshot())}
    by_partition = {}
    for part, level in levels:
        by_partition.setdefault(part, set()).add(level)
    assert sorted(map(sorted, by_partition.values())) == [[0], [5]]
    assert "not partition keys" in run("compact", "shop.orders", "-w", warehouse, "--partition", "id=1",
                                       status=2).output


def test_expire_and_rollback(warehouse):
    table = orders(warehouse)
    for n in range(3):
        table.write(pa.table({"dt": ["d3"], "id": [n], "v": ["x"]}))
    result = run_json("expire", "shop.orders", "-w", warehouse, "--retain-max", "4")
    assert result["expired"] == 2 and (result["earliest"], result["latest"], result["snapshots"]) == (3, 6, 4)
    assert [s.id for s in table.snapshots()] == [3, 4, 5, 6]
    assert "expired 0 snapshots" in run("expire", "shop.orders", "-w", warehouse, "--older-than", "1 d").stdout

    refused = run("rollback", "shop.orders", "4", "-w", warehouse, input="n\n", status=1)
    assert "Aborted" in refused.output and table.latest_snapshot().id == 6
    assert run_json("rollback", "shop.orders", "4", "-w", warehouse, "--yes")["snapshot_id"] == 4
    assert [s.id for s in table.snapshots()] == [3, 4]
    assert "latest snapshot is 1" in run("rollback", "shop.orders", "first", "-w", warehouse, input="y\n").stdout
    assert [s.id for s in table.snapshots()] == [1] and table.scan().count() == 6


def test_orphans_dry_run_then_delete(warehouse):
    table = orders(warehouse)
    stray = os.path.join(table.root, "dt=d1", "bucket-0", "data-left-by-a-crash.parquet")
    with open(stray, "wb") as f:
        f.write(b"PAR1")
    assert run_json("orphans", "shop.orders", "-w", warehouse, "--dry-run")["files"] == []  # too young
    old = time.time() - 3 * 24 * 3600
    os.utime(stray, (old, old))
    listed = run_json("orphans", "shop.orders", "-w", warehouse, "--dry-run")
    assert listed == {"table": "shop.orders", "dry_run": True, "files": [stray]} and os.path.exists(stray)
    assert "deleted 1 orphan file" in run("orphans", "shop.orders", "-w", warehouse, "--older-than", "1 h").stdout
    assert not os.path.exists(stray) and table.scan().count() == 8
    assert "neither a duration" in run("orphans", "shop.orders", "-w", warehouse, "--older-than", "soon",
                                       status=2).output


def test_analyze_prints_the_statistics_it_gathered(warehouse):
    result = run_json("analyze", "shop.orders", "-w", warehouse, "-c", "id,v")
    assert result["table"] == "shop.orders" and result["rows"] == 8
    by_column = {c["column"]: c for c in result["columns"]}
    assert set(by_column) == {"id", "v"} and by_column["id"]["distinct"] == 5 and by_column["id"]["min"] == 1
    text = run("analyze", "shop.orders", "-w", warehouse).stdout
    assert "8 rows" in text and "column statistics" in text and "distinct" in text


# ---------------------------------------------------------------------------------------------
# the LSM drawing


def test_lsm_levels_key_ranges_and_svg(warehouse, tmp_path):
    table = orders(warehouse)
    table.compact(full=True)
    table.write(pa.table({"dt": ["d1", "d1"], "id": [7, 9], "v": ["n", "n"]}))
    svg = tmp_path / "lsm.svg"
    data = run_json("lsm", "shop.orders", "-w", warehouse, "--partition", "dt=d1", "--svg", svg)
    assert data["snapshot_id"] == table.latest_snapshot().id and data["key_columns"] == ["id"]  # trimmed key
    buckets = data["buckets"]
    assert {b["partition"]["dt"] for b in buckets} == {"d1"} and len(buckets) == 2
    files = [f for b in buckets for level in b["levels"] for f in level["files"]]
    assert sum(f["rows"] for f in files) == 5 + 2 and all(f["size"] > 0 for f in files)
    assert {f["level"] for f in files} == {0, 5}
    for b in buckets:
        assert [level["level"] for level in b["levels"]] == list(range(6))
        for level in b["levels"]:
            for f in level["files"]:
                assert len(f["min_key"]) == 1 and f["min_key"][0] <= f["max_key"][0]
    new = sorted((f["min_key"][0], f["max_key"][0]) for f in files if f["level"] == 0)
    assert new in ([(7, 9)], [(7, 7), (9, 9)])

    drawing = ElementTree.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in drawing.iter(f"{ns}title")]
    assert len(titles) == len(files) and all(t.startswith("data-") for t in titles)

    one = run_json("lsm", "shop.orders", "-w", warehouse, "--bucket", "0", "--at", "first")
    assert {b["bucket"] for b in one["buckets"]} == {0} and one["snapshot_id"] == 1
    assert all(f["level"] == 0 for b in one["buckets"] for lv in b["levels"] for f in lv["files"])

    text = run("lsm", "shop.orders", "-w", warehouse, "--files").stdout
    assert "bucket 0" in text and "bucket 1" in text and "L0" in text and "L5" in text
    assert "sorted runs" in text and files[0]["file"] in text


def test_lsm_places_files_on_the_key_space():
    from tarn.cli.lsm import BucketTree, FileBox, bar, place

    def box(name, level, low, high):
        return FileBox(name, level, 1, 10, low, high, 0, 0, 0, False)

    numbers = BucketTree({}, 0, 3, [box("a", 2, (0,), (50,)), box("b", 2, (51,), (100,)), box("c", 0, (25,), (75,))])
    place(numbers)
    assert [f.span for f in numbers.files] == [(0.0, 0.5), (0.51, 1.0), (0.25, 0.75)]
    assert bar([numbers.files[2]], 8, 0).plain == "··████··"
    words = BucketTree({}, 0, 2, [box("a", 1, ("ant",), ("cat",)), box("b", 1, ("dog",), ("eel",)),
                                  box("c", 0, ("bee",), ("dog",))])
    place(words)  # ranks among ant < bee < cat < dog < eel
    assert [f.span for f in words.files] == [(0.0, 0.5), (0.75, 1.0), (0.25, 0.75)]
    assert [f.name for f in words.level_files(1)] == ["a", "b"] and words.sorted_runs == 2


def test_lsm_of_an_append_table(tmp_path):
    log = tarn.Catalog(str(tmp_path / "wh")).create_table("ops.log", schema=pa.schema([("n", pa.int64())]))
    log.write(pa.table({"n": [1, 2]}))
    log.write(pa.table({"n": [3]}))
    data = run_json("lsm", "ops.log", "-w", str(tmp_path / "wh"))
    assert len(data["buckets"]) == 1 and data["buckets"][0]["files"] == 2
    assert all(f["min_key"] is None for lv in data["buckets"][0]["levels"] for f in lv["files"])
    assert "append table" in run("lsm", "ops.log", "-w", str(tmp_path / "wh")).stdout


# ---------------------------------------------------------------------------------------------
# the installed console script


def test_installed_tarn_script(warehouse):
    script = Path(sys.executable).parent / "tarn"
    assert script.exists(), "the tarn console script is not installed: pip install -e '.[test]'"
    version = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert (version.returncode, version.stdout) == (0, f"tarn {tarn.__version__}\n")
    info = subprocess.run([script, "info", orders(warehouse).root, "--json"], capture_output=True, text=True,
                          timeout=60)
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["snapshot"]["snapshot_id"] == 3
    missing = subprocess.run([script, "info", "shop.nope", "-w", warehouse], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 1 and "table shop.nope does not exist" in missing.stderr


# ---------------------------------------------------------------------------------------------
# a missing dependency: one line naming the package, exit status 1, no traceback


def run_main(blocked: list[str], *args: str) -> subprocess.CompletedProcess:
    """`tarn.cli.main()` in a fresh interpreter where importing `blocked` fails as if they were
    not installed (a None entry in sys.modules makes `import` raise ModuleNotFoundError)."""
    code = (f"import sys\nfor name in {blocked!r}: sys.modules[name] = None\n"
            f"sys.argv = ['tarn', *{list(args)!r}]\nfrom tarn.cli import main\nmain()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("package", ["typer", "rich", "pyarrow"])
def test_a_missing_dependency_is_one_line_and_status_1(package):
    result = run_main([package], "--version")
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: ") and f"'{package}'" in lines[0] and "pip install" in lines[0]


def test_a_package_missing_when_a_command_runs_is_one_line(warehouse, tmp_path):
    """A package a command imports on first use (here the CSV reader) is reported the same way."""
    csv_file = tmp_path / "more.csv"
    csv_file.write_text("dt,id,v\nd9,9,x\n")
    result = run_main(["pyarrow.csv"], "import", orders(warehouse).root, str(csv_file))
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert "'pyarrow'" in result.stderr


def test_missing_module_of_tarn_itself_is_not_called_a_dependency():
    from tarn.cli import missing_package_message

    assert missing_package_message(ModuleNotFoundError("x", name="tarn.nope")) is None
    assert "'typer'" in missing_package_message(ModuleNotFoundError("x", name="typer.testing"))


def test_importing_tarn_cli_needs_no_third_party_package():
    result = run_main(["typer", "rich", "pyarrow"], "--help")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    code = "import sys\nfor n in ('typer', 'rich', 'pyarrow'): sys.modules[n] = None\nimport tarn.cli\nprint('ok')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "ok\n"


def test_changes_branches_aliases_and_plain_output(tmp_path):
    """Issue 44 item 4: `tarn changes`, `tarn branch ...`, `describe`/`history`, and tables printed
    to a pipe as plain columns (no box drawing)."""
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", pa.schema([("k", pa.int64())]))
    table.write(pa.table({"k": [1]}))
    table.write(pa.table({"k": [2]}))
    table.create_tag("t1", 1)
    changed = run_json("changes", table.root, "--from", "1")
    assert changed == [{"_ROW_KIND": "+I", "k": 2}]
    assert run_json("changes", table.root, "--from", "0", "--to", "1") == [{"_ROW_KIND": "+I", "k": 1}]
    history = run("history", table.root).stdout
    assert "APPEND" in history and not any(c in history for c in "┏━│╭─")
    assert "table" in run("describe", table.root).stdout
    run("branch", "create", table.root, "b1", "--from-tag", "t1")
    assert [r["branch_name"] for r in run_json("branch", "list", table.root)] == ["b1"]
    run("branch", "delete", table.root, "b1")
    assert run_json("branch", "list", table.root) == []


def test_ctrl_c_during_an_import_exits_at_once_with_one_line(tmp_path):
    """Issue 44 item 6: SIGINT in the middle of a large import: exit status 130 within seconds
    (not after the worker threads finish), one line on stderr, no traceback, nothing committed."""
    import signal

    import numpy as np
    import pyarrow.csv as pacsv

    table = tarn.Catalog(str(tmp_path)).create_table("db.t", pa.schema([("a", pa.int64()), ("b", pa.string())]),
                                                     primary_key=["a"], options={"bucket": "4"})
    rows = 4_000_000
    pacsv.write_csv(pa.table({"a": np.arange(rows), "b": np.char.add("x", np.arange(rows).astype(str))}),
                    tmp_path / "big.csv")
    job = subprocess.Popen([sys.executable, "-m", "tarn.cli", "import", table.root, str(tmp_path / "big.csv")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(Path(__file__).parents[1]))
    time.sleep(2.0)
    sent = time.monotonic()
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=120)
    waited = time.monotonic() - sent
    assert job.returncode == 130, err.decode()[-2000:]
    assert "interrupted:" in err.decode() and "Traceback" not in err.decode()
    assert waited < 10  # the import alone runs far longer; before, Ctrl-C waited for every worker thread
    assert tarn.load_table(table.root).latest_snapshot() is None
