"""What a notebook shows for tarn's objects (short reprs naming what matters) and what tarn logs
(debug records on `tarn.commit`, `tarn.compact`, `tarn.expire`)."""

from __future__ import annotations

import logging

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
    snapshot = orders.write(pa.table({"dt": ["2026-11-20"], "id": [4], "v": ["d"]}, schema=SCHEMA))
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
