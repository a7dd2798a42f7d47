"""What a notebook shows for tarn's objects (short reprs naming what matters) and what tarn logs
(debug records on `tarn.commit`, `tarn.compact`, `tarn.expire`)."""

from __future__ import annotations

import logging
import shutil

import pyarrow as pa
import pytest

import tarn
from tarn.meta.schema import TableSchema, new_schema
from tarn.types import BIGINT, STRING, DataField

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "wh"))


@pytest.fixture
def orders(catalog):
    table = catalog.create_table("db.orders", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "4"})
    table.write(pa.table({"dt": ["2026-11-20"] * 3, "id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    return table


def one_or_few_lines(text: str, max_chars: int = 300, max_lines: int = 4) -> None:
    assert len(text) <= max_chars, text
    assert text.count("\n") < max_lines, text


def test_catalog_repr_names_the_warehouse(catalog, tmp_path):
    assert repr(catalog) == f"Catalog({str(tmp_path / 'wh')!r})"


def test_snapshot_repr_is_one_short_line(orders):
    snapshot = orders.write(pa.table({"dt": ["2026-11-20"], "id": [4], "v": ["d"]}, schema=SCHEMA)).snapshot
    text = repr(snapshot)
    one_or_few_lines(text, max_chars=120, max_lines=1)
    assert text.startswith("Snapshot(id=2, APPEND, schema_id=0, ")
    assert "delta_records=1" in text and "total_records=4" in text and "UTC" in text
    assert "manifest-list" not in text and snapshot.commit_user not in text


def test_schema_repr_lists_keys_columns_and_options(orders):
    text = repr(orders.schema())
    one_or_few_lines(text)
    assert text.startswith("TableSchema(id=0, primary_keys=['dt', 'id'], partition_keys=['dt'],")
    assert "columns=[dt STRING NOT NULL, id BIGINT NOT NULL, v STRING]" in text
    assert "'bucket': '4'" in text


def test_wide_schema_repr_stays_short():
    fields = [DataField(i, f"column_{i}", BIGINT()) for i in range(2000)]
    options = {f"fields.column_{i}.aggregate-function": "sum" for i in range(50)}
    schema = TableSchema(0, fields, 1999, [], [], options, None, 0)
    text = repr(schema)
    one_or_few_lines(text, max_chars=800)
    assert "column_11 BIGINT, ... 1988 more]" in text and "... 42 more}" in text


def test_field_and_type_reprs_use_sql_types():
    assert repr(DataField(3, "name", STRING(False), description="who")) == \
        "DataField(3, 'name', STRING NOT NULL, description='who')"
    assert repr(BIGINT()) == "DataType(BIGINT)"
    assert repr(new_schema([DataField(0, "a", BIGINT())]).fields) == "(DataField(0, 'a', BIGINT),)"


# ---------------------------------------------------------------------------------------- logging


def messages(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith(logger) and r.levelno == logging.DEBUG]


def test_commit_logs_snapshot_kind_and_files(orders, caplog):
    caplog.set_level(logging.DEBUG, logger="tarn")
    orders.write(pa.table({"dt": ["2026-11-20", "2026-11-21"], "id": [4, 5], "v": ["d", "e"]}, schema=SCHEMA))
    assert messages(caplog, "tarn.commit") == [
        "table db.orders: committed snapshot 2 (APPEND): 2 files added, 0 deleted, 0 changelog files, 2 records"]


def test_compaction_logs_the_files_it_merged(orders, caplog):
    orders.write(pa.table({"dt": ["2026-11-20"], "id": [1], "v": ["a2"]}, schema=SCHEMA))
    caplog.set_level(logging.DEBUG, logger="tarn")
    orders.compact(full=True)
    compacted = messages(caplog, "tarn.write.compact")
    assert compacted and all("compacted" in m and "into level 5" in m for m in compacted)
    assert sum(int(m.split("compacted ")[1].split(" files")[0]) for m in compacted) == 4  # 2 + 1 + 1 files
    committed = messages(caplog, "tarn.commit")
    assert len(committed) == 1 and "(COMPACT)" in committed[0] and "4 deleted" in committed[0]


def test_append_compaction_logs_its_plan(catalog, caplog):
    table = catalog.create_table("db.log", schema=pa.schema([("x", pa.int64())]))
    for i in range(3):
        table.write(pa.table({"x": [i]}))
    caplog.set_level(logging.DEBUG, logger="tarn")
    table.compact(full=True)
    assert messages(caplog, "tarn.ops.append_compaction") == ["table db.log: compacting 3 files in 1 groups (full)"]


def test_expiry_logs_the_snapshots_and_files_removed(catalog, caplog):
    table = catalog.create_table("db.exp", schema=SCHEMA, primary_key=["dt", "id"],
                                 options={"bucket": "1", "snapshot.num-retained.min": "1",
                                          "snapshot.num-retained.max": "100", "write-only": "true"})
    for i in range(4):
        table.write(pa.table({"dt": ["d"], "id": [i], "v": ["x"]}, schema=SCHEMA))
    caplog.set_level(logging.DEBUG, logger="tarn")
    assert table.expire_snapshots(retain_max=2) == 2
    expired = messages(caplog, "tarn.ops.expire")
    assert len(expired) == 1 and expired[0].startswith("table db.exp: expired snapshots 1..2: ")


def test_lost_race_is_logged_before_the_retry(orders, caplog, monkeypatch):
    from tarn.commit.committer import Committer

    publish, calls = Committer._publish, []

    def lose_first(self, snapshot, base, messages, delta):
        calls.append(snapshot.id)
        return False if len(calls) == 1 else publish(self, snapshot, base, messages, delta)

    monkeypatch.setattr(Committer, "_publish", lose_first)
    caplog.set_level(logging.DEBUG, logger="tarn")
    orders.write(pa.table({"dt": ["2026-11-20"], "id": [9], "v": ["z"]}, schema=SCHEMA))
    assert messages(caplog, "tarn.commit") == [
        "table db.orders: commit attempt 1 lost the race on top of snapshot 1; retrying",
        "table db.orders: committed snapshot 2 (APPEND): 1 files added, 0 deleted, 0 changelog files, 1 records"]


def test_a_plain_write_logs_one_info_line_per_commit(orders, caplog):
    caplog.set_level(logging.INFO, logger="tarn")
    orders.write(pa.table({"dt": ["2026-11-20"], "id": [9], "v": ["z"]}, schema=SCHEMA))
    records = [r for r in caplog.records if r.name.startswith("tarn")]
    assert [r.levelno for r in records] == [logging.INFO]
    assert records[0].getMessage().startswith("table db.orders: APPEND snapshot 2: +1/-0 rows, +1/-0 files, ")


def test_table_repr_names_keys_bucket_and_snapshot(orders, catalog):
    assert repr(orders) == "Table('db.orders', primary_key=['dt', 'id'], partition_keys=['dt'], bucket=4, snapshot=1)"
    logs = catalog.create_table("db.logs", schema=pa.schema([("x", pa.int64())]))
    assert repr(logs) == "Table('db.logs', snapshot=None)"
    dynamic = catalog.create_table("db.dyn", schema=SCHEMA, primary_key=["id"])
    assert repr(dynamic) == "Table('db.dyn', primary_key=['id'], bucket=dynamic, snapshot=None)"


def test_table_repr_survives_an_unreadable_table(orders, tmp_path):
    shutil.rmtree(tmp_path / "wh" / "db.db" / "orders" / "schema")
    assert repr(orders) == "Table('db.orders')"


def test_scan_repr_names_table_snapshot_filter_and_columns(orders):
    scan = orders.scan(filter=tarn.col("id") > 1, columns=["id"], limit=5)
    text = repr(scan)
    one_or_few_lines(text, max_lines=1)
    assert text.startswith("Scan(table=db.orders, snapshot=1, filter=") and "columns=['id']" in text
    assert "limit=5" in text


def test_filter_reprs_read_as_the_code_that_built_them():
    col = tarn.col
    assert repr(col("id") > 1) == "col('id') > 1"
    assert repr((col("a") == "x") & ~col("b").is_null()) == "(col('a') == 'x') & (~(col('b').is_null()))"
    assert repr(col("s").startswith("ab") | col("x").not_in([1, 2])) == \
        "(col('s').startswith('ab')) | (col('x').not_in([1, 2]))"
    assert repr(col("id").isin(range(10_000))) == "col('id').isin([0, 1, 2, 3, 4, 5, 6, 7, ... 9992 more])"


def test_scan_with_a_large_isin_filter_stays_short(orders):
    scan = orders.scan(filter=tarn.col("id").isin(range(100_000)))
    one_or_few_lines(repr(scan), max_chars=150, max_lines=1)


def test_plan_and_system_table_reprs_are_summaries(orders):
    splits = orders.scan().plan()
    assert repr(splits[0]) == "Split(partition=('2026-11-20',), bucket=%d, files=1, rows=%d)" % (
        splits[0].bucket, splits[0].row_count)
    meta = splits[0].files[0]
    assert repr(meta) == (f"DataFileMeta({meta.file_name!r}, level=0, rows={meta.row_count}, size={meta.file_size}, "
                          f"seq={meta.min_sequence_number}..{meta.max_sequence_number}, schema_id=0)")
    text = repr(orders.system_table("snapshots"))
    assert text.startswith("SystemTable(1 rows; columns snapshot_id, schema_id, ") and text.endswith(" more)")
    one_or_few_lines(text, max_lines=1)
