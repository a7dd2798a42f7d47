"""What a newcomer tripped over (issue 30), item by item: each test failed before its fix."""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import tarn

typer_testing = pytest.importorskip("typer.testing")
from tarn.cli import app  # noqa: E402

runner = typer_testing.CliRunner()


def cli(*args, status: int = 0):
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == status, (result.exit_code, result.output, result.exception)
    return result


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "wh"))


# 1. a failed create-and-import leaves nothing behind

def test_failed_create_and_import_leaves_no_table(tmp_path):
    data = tmp_path / "people.csv"
    data.write_text("id,name\n1,ann\n,bob\n")  # a null in the key column
    target = tmp_path / "people"
    cli("create", target, "--from", data, "--primary-key", "id", "--import", status=1)
    assert not target.exists()
    data.write_text("id,name\n1,ann\n2,bob\n")
    cli("create", target, "--from", data, "--primary-key", "id", "--import")  # the same command now works
    assert tarn.load_table(str(target)).scan().count() == 2


# 2. nested types are refused as keys at creation

@pytest.mark.parametrize("kwargs", [
    {"primary_key": ["tags"]},
    {"primary_key": ["id", "attrs"]},
    {"options": {"bucket": "2", "bucket-key": "tags"}},
    {"partition_keys": ["tags"]},
])
def test_nested_key_columns_are_refused_at_creation(catalog, kwargs):
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())),
                        ("attrs", pa.map_(pa.string(), pa.string()))])
    with pytest.raises(tarn.TarnError, match="tags|attrs"):
        catalog.create_table("db.t", schema, **kwargs)
    assert not catalog.table_exists("db.t")


# 3. results you can see; 4. one INFO line per commit

def test_commit_results_say_what_landed(catalog, caplog):
    table = catalog.create_table("db.r", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"],
                                 options={"bucket": "1"})
    first = table.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    assert isinstance(first, tarn.CommitResult)
    assert first.snapshot_ids == [1] and first.rows_written == 3 and first.rows_added == 3 and first.files_added == 1
    assert first.id == 1 and first.commit_kind == "APPEND"  # the Snapshot's attributes read through
    assert first.bytes_added == sum(e.file.file_size for e in table.live_entries(table.latest_snapshot()))
    caplog.set_level(logging.INFO, logger="tarn")
    table.alter(tarn.SetOption("full-compaction.delta-commits", "1"))  # every write compacts fully
    second = table.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]}))
    assert [s.commit_kind for s in second.snapshots] == ["APPEND", "COMPACT"]  # the write's compaction too
    assert second.snapshot_ids == [2, 3] and second.files_removed >= 2
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and r.name.startswith("tarn")]
    assert len(lines) == 2 and lines[0].startswith("table db.r: APPEND snapshot 2") and "COMPACT snapshot 3" in lines[1]
    deleted = table.delete(filter="id >= 2")
    assert deleted.rows_deleted == 2
    updated = table.update({"v": "y"}, filter="id = 1")
    assert updated.rows_updated == 1 and updated.rows_deleted is None
    text = repr(updated)
    assert text.startswith("CommitResult(update db.r; snapshot") and "updated 1" in text and "\n" not in text
    metrics = updated.metrics()
    assert metrics["operation"] == "update" and metrics["commit_kinds"] == ["APPEND", "COMPACT"]
    assert metrics["rows_updated"] == 1 and json.loads(json.dumps(metrics)) == metrics
    assert table.compact(full=True) is None  # already one run at the top level: nothing committed
    log_table = catalog.create_table("db.log", pa.schema([("id", pa.int64())]))
    log_table.write(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    assert log_table.delete(filter="id > 1").rows_deleted == 2
    assert log_table.overwrite(pa.table({"id": pa.array([7], pa.int64())})).rows_removed == 1


# 14. smaller items

def test_expire_with_only_retain_max_lowers_the_minimum(catalog):
    table = catalog.create_table("db.e", pa.schema([("id", pa.int64())]))  # retain_min defaults to 10
    for i in range(5):
        table.write(pa.table({"id": pa.array([i], pa.int64())}))
    assert table.expire_snapshots(retain_max=1, older_than_ms=2 ** 62) == 4
    assert [s.id for s in table.snapshots()] == [5]
    with pytest.raises(tarn.InvalidOption, match="retain_min=3, retain_max=2"):
        table.expire_snapshots(retain_min=3, retain_max=2)


def test_delete_without_arguments_says_what_it_needs(catalog):
    table = catalog.create_table("db.d", pa.schema([("id", pa.int64())]))
    with pytest.raises(tarn.InvalidArgument, match="delete needs keys .* or filter="):
        table.delete()


def test_dir_shows_the_public_api_only():
    names = dir(tarn)
    assert "Catalog" in names and "create_table" in names and "CommitResult" in names
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    assert "importlib" not in names and "TYPE_CHECKING" not in names


def test_tags_record_creation_time_whenever_tarn_creates_one(catalog):
    """Issue 44 item 4: `tagCreateTime` in every tag tarn creates (Java 2.0 writes it only with a
    retention, for readers before 0.8; every later release reads it either way)."""
    table = catalog.create_table("db.tg", pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": pa.array([1], pa.int64())}))
    table.create_tag("plain")
    table.create_tag("kept", time_retained="1 d")
    with open(os.path.join(table.root, "tag", "tag-plain")) as f:
        assert "tagCreateTime" in json.load(f) and "tagTimeRetained" not in json.load(open(f.name))
    with open(os.path.join(table.root, "tag", "tag-kept")) as f:
        assert "tagCreateTime" in json.load(f)
    by_name = {t.name: t for t in table.list_tags()}
    assert by_name["kept"].create_time is not None and by_name["plain"].create_time is not None


@pytest.mark.parametrize("legacy, expected", [  # ':' is escaped in paths as Paimon does (%3A)
    ("true", "d=20395/t=36000000/ts=2025-11-03T10%3A00"),
    ("false", "d=2025-11-03/t=10%3A00%3A00.0/ts=2025-11-03 10%3A00%3A00.000")])
def test_partition_legacy_name(catalog, legacy, expected):
    import datetime as dt

    schema = pa.schema([("d", pa.date32()), ("t", pa.time32("ms")), ("ts", pa.timestamp("ms")), ("v", pa.int64())])
    table = catalog.create_table("db.p", schema, partition_keys=["d", "t", "ts"],
                                 options={"partition.legacy-name": legacy})
    table.write(pa.table({"d": [dt.date(2025, 11, 3)], "t": [dt.time(10, 0)],
                          "ts": [dt.datetime(2025, 11, 3, 10, 0)], "v": pa.array([1], pa.int64())}, schema=schema))
    entry = table.live_entries(table.latest_snapshot())[0]
    assert os.path.exists(os.path.join(table.root, expected, "bucket-0", entry.file.file_name))
    assert table.scan().to_arrow().column("v").to_pylist() == [1]


# 8. one meaning for update strings

def test_update_strings_are_values_and_sql_quoted_ones_are_refused(catalog):
    table = catalog.create_table("db.u", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"],
                                 options={"bucket": "1"})
    table.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    table.update({"v": "upper(v)"}, filter="id = 1")  # a value, not SQL
    assert table.scan().to_arrow().column("v").to_pylist() == ["upper(v)"]
    before = table.latest_snapshot().id
    with pytest.raises(tarn.InvalidArgument, match="'paid'.*quotes would be stored.*Expression"):
        table.update({"v": "'paid'"}, filter="id = 1")
    assert table.latest_snapshot().id == before


# 7. a local merge

import pyarrow.compute as pc  # noqa: E402
from hypothesis import given, settings, strategies as st, HealthCheck  # noqa: E402

MERGE_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])


def _model_merge(model: dict, source: list[dict], delete_when_v: str | None, update: bool, insert: bool,
                 by_source_delete: bool) -> dict:
    out = dict(model)
    keys = {r["id"] for r in source}
    for r in source:
        k = r["id"]
        if k in model:
            if delete_when_v is not None and r["v"] == delete_when_v:
                out.pop(k)
            elif update:
                out[k] = {"id": k, "v": model[k]["v"], "n": (model[k]["n"] or 0) + (r["n"] or 0)}
        elif insert:
            out[k] = dict(r)
    if by_source_delete:
        for k in list(out):
            if k in model and k not in keys:
                out.pop(k)
    return out


@pytest.mark.parametrize("kind", ["primary-key", "append", "append-dv"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_merge_matches_a_dict_model(tmp_path_factory, kind, data):
    options = {"primary-key": {"bucket": "2"}, "append": {}, "append-dv": {"deletion-vectors.enabled": "true"}}[kind]
    catalog = tarn.Catalog(str(tmp_path_factory.mktemp("merge")))
    table = catalog.create_table("db.m", MERGE_SCHEMA, primary_key=["id"] if kind == "primary-key" else None,
                                 options=options)
    model: dict = {}
    ids = st.integers(0, 12)
    for _ in range(data.draw(st.integers(1, 4), label="merges")):
        source_ids = data.draw(st.lists(ids, unique=True, max_size=6), label="source ids")
        source = [{"id": i, "v": data.draw(st.sampled_from(["x", "del"]), label="v"),
                   "n": data.draw(st.integers(0, 9), label="n")} for i in source_ids]
        delete_when = data.draw(st.sampled_from([None, "del"]), label="delete when")
        update = data.draw(st.booleans(), label="update")
        insert = data.draw(st.booleans(), label="insert")
        by_source = data.draw(st.booleans(), label="by source delete")
        result = table.merge(pa.Table.from_pylist(source, schema=MERGE_SCHEMA), on="id",
                             when_matched_delete="source.v = 'del'" if delete_when else None,
                             when_matched_update={"n": pc.field("source.n") + pc.field("target.n")} if update else None,
                             when_not_matched_insert="*" if insert else None,
                             when_not_matched_by_source_delete=True if by_source else None)
        expected = _model_merge(model, source, delete_when, update, insert, by_source)
        if result is not None:
            assert result.rows_inserted == len(set(expected) - set(model))
        model = expected
        got = {r["id"]: r for r in table.scan().to_arrow().to_pylist()}
        assert got == model


def test_merge_conditions_values_and_bad_input(catalog):
    table = catalog.create_table("db.mc", MERGE_SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"], "n": pa.array([1, 2], pa.int64())}))
    source = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": ["A", "B", "C", "D"],
                       "n": pa.array([10, 20, 30, 40], pa.int64())})
    result = table.merge(source, when_matched_update="*", matched_update_if="source.n > 15",
                         when_not_matched_insert={"id": pc.field("source.id"), "v": "ins"},
                         not_matched_insert_if="source.id = 3")
    assert (result.rows_updated, result.rows_inserted, result.rows_deleted) == (1, 1, 0)
    got = {r["id"]: (r["v"], r["n"]) for r in table.scan().to_arrow().to_pylist()}
    assert got == {1: ("a", 1), 2: ("B", 20), 3: ("ins", None)}
    before = table.latest_snapshot().id
    with pytest.raises(tarn.InvalidArgument, match="more than once"):
        table.merge(pa.concat_tables([source, source]), when_matched_update="*")
    with pytest.raises(tarn.InvalidArgument, match="primary-key"):
        table.merge(source, when_matched_update={"id": 5})
    with pytest.raises(tarn.SchemaMismatch, match="lacks"):
        table.merge(source.select(["id", "v"]), when_not_matched_insert="*")
    with pytest.raises(tarn.TarnError, match="source.nope"):
        table.merge(source, when_matched_delete="source.nope = 1")
    assert table.latest_snapshot().id == before


# 12. the command line

def test_cli_verbs_tag_delete_update_alter_ls_drop(tmp_path):
    warehouse = str(tmp_path / "wh")
    table = tarn.Catalog(warehouse).create_table("shop.orders", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                                                 primary_key=["id"], options={"bucket": "1"})
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    made = json.loads(cli("tag", "create", "shop.orders", "t1", "-w", warehouse, "--json").stdout)
    assert made["snapshot_id"] == 1 and [t.name for t in table.list_tags()] == ["t1"]
    deleted = json.loads(cli("delete", "shop.orders", "--where", "id = 2", "-w", warehouse, "--json").stdout)
    assert deleted["operation"] == "delete" and deleted["rows_deleted"] == 1
    assert "update shop.orders: updated 1" in cli("update", "shop.orders", "--set", "v=zz", "--where", "id = 3",
                                                  "-w", warehouse).stdout
    assert {r["id"]: r["v"] for r in table.scan().to_arrow().to_pylist()} == {1: "a", 3: "zz"}
    cli("alter", "shop.orders", "--add-column", "note STRING", "--set-option", "snapshot.num-retained.min=2",
        "-w", warehouse)
    assert table.schema().field_names == ["id", "v", "note"] and table.options.int("snapshot.num-retained.min") == 2
    cli("tag", "delete", "shop.orders", "t1", "-w", warehouse)
    assert table.list_tags() == []
    listed = json.loads(cli("ls", "-w", warehouse, "--json").stdout)
    assert listed == [{"database": "shop", "table": "orders"}]
    assert "delete needs" not in cli("delete", "shop.orders", "-w", warehouse, status=2).output
    cli("drop", "shop.orders", "-w", warehouse, "--yes")
    assert not tarn.Catalog(warehouse).table_exists("shop.orders")


def test_cli_output_is_plain_when_piped_and_help_is_quick(tmp_path):
    import subprocess
    import sys
    import time

    warehouse = str(tmp_path / "wh")
    tarn.Catalog(warehouse).create_table("shop.wide", pa.schema([(f"a_very_long_column_name_{i}", pa.int64())
                                                                 for i in range(12)]))
    piped = subprocess.run([sys.executable, "-m", "tarn.cli", "info", "shop.wide", "-w", warehouse],
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout  # no colour codes when piped
    assert all(len(line) < 400 for line in piped.stdout.splitlines())
    started = time.perf_counter()
    helped = subprocess.run([sys.executable, "-m", "tarn.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "delete" in helped.stdout
    code = ("import sys; sys.argv = ['tarn', '--help']\nfrom tarn.cli import main\ntry:\n    main()\n"
            "except SystemExit:\n    pass\nprint('pyarrow.lib' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip().endswith("False")  # --help imports no pyarrow (lazy imports)
    assert time.perf_counter() - started < 30


# 5. progress on long local work (opt in from Python)

def test_progress_bars_are_opt_in_and_drawn_on_a_terminal(catalog, monkeypatch):
    import io
    import sys

    from tarn import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    table = catalog.create_table("db.big", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_key=["k"],
                                 options={"bucket": "16"})
    rows = pa.table({"k": pa.array(range(5000), pa.int64()), "v": pa.array(range(5000), pa.int64())})
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    progress.show_progress(False)  # the default (an in-process CLI run above turned it on)
    table.write(rows)
    assert screen.getvalue() == ""  # off by default: libraries stay quiet
    tarn.show_progress(True)
    try:
        table.write(rows)
        table.compact(full=True)
        assert "writing db.big" in screen.getvalue() and "compacting db.big" in screen.getvalue()
    finally:
        progress.show_progress(False)


def test_a_bad_csv_import_is_a_tarn_error_naming_the_file(tmp_path):
    warehouse = str(tmp_path / "wh")
    tarn.Catalog(warehouse).create_table("shop.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    bad = tmp_path / "bad.csv"
    bad.write_text("id,v\n1,a\nnot-a-number,b\n")
    result = cli("import", "shop.t", bad, "-w", warehouse, status=1)
    assert f"file {bad}" in result.stderr and "error:" in result.stderr
    from tarn.cli.commands import read_batches

    with pytest.raises(tarn.TarnError, match="bad.csv"):
        _, batches = read_batches(bad, "csv", None, {"id": pa.int64(), "v": pa.string()})
        list(batches)


def test_merge_into_a_deletion_vector_append_table_is_one_snapshot(catalog):
    table = catalog.create_table("db.dv", MERGE_SCHEMA, options={"deletion-vectors.enabled": "true"})
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"],
                          "n": pa.array([1, 2, 3], pa.int64())}))
    source = pa.table({"id": pa.array([2, 7], pa.int64()), "v": ["B", "new"], "n": pa.array([20, 70], pa.int64())})
    result = table.merge(source, on="id", when_matched_update="*", when_not_matched_insert="*")
    assert [s.commit_kind for s in result.snapshots] == ["APPEND"]  # old versions marked with the new rows
    assert sorted((r["id"], r["v"]) for r in table.scan().to_arrow().to_pylist()) == \
        [(1, "a"), (2, "B"), (3, "c"), (7, "new")]
    assert table.scan(snapshot_id=result.id - 1).count() == 3


def test_row_dicts_write_and_the_common_date_mistakes_say_what_to_do(tmp_path):
    """Issue 44 item 5: a list of row dicts is accepted; pandas datetime64 or ISO text written to a
    DATE column names the conversion; anything else lists what write takes."""
    import datetime as dt

    import pandas as pd

    table = tarn.Catalog(str(tmp_path)).create_table("db.t", pa.schema([("k", pa.int64()), ("d", pa.date32())]))
    table.write([{"k": 1, "d": dt.date(2026, 1, 1)}, {"k": 2, "d": None}])
    assert table.scan().count() == 2
    with pytest.raises(tarn.errors.SchemaMismatch, match=r"\.dt\.date"):
        table.write(pd.DataFrame({"k": [3], "d": pd.to_datetime(["2026-01-01"])}))
    with pytest.raises(tarn.errors.SchemaMismatch, match="parse the text first"):
        table.write(pd.DataFrame({"k": [3], "d": ["2026-01-01"]}))
    with pytest.raises(tarn.errors.SchemaMismatch, match="a list of row dicts"):
        table.write([1, 2])
    assert table.scan().count() == 2
