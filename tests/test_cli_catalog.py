"""`tarn -c NAME ...`: the command line opens tables by identifier in a catalog of the config
file, as Python's tarn.load_catalog(NAME) does."""

import json

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import tarn
from tarn.cli import app

runner = CliRunner()


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "tarn.yaml"
    path.write_text(f"catalog:\n  lake:\n    warehouse: {tmp_path}/wh\n")
    monkeypatch.setenv("TARN_CONFIG", str(path))
    monkeypatch.delenv("TARN_CATALOG", raising=False)
    monkeypatch.delenv("TARN_WAREHOUSE", raising=False)
    return tmp_path


def run(*args, status=0):
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == status, result.output
    return result.output


def test_commands_take_a_catalog_and_an_identifier(config, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"fields": [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                                  "primary_keys": ["id"]}))
    run("-c", "lake", "create", "shop.orders", "--schema", schema, "-o", "bucket=1")
    tarn.load_catalog("lake").load_table("shop.orders").write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    listed = json.loads(run("-c", "lake", "ls", "--json"))
    assert listed == [{"database": "shop", "table": "orders"}]
    shown = json.loads(run("-c", "lake", "show", "shop.orders", "--json"))
    assert sorted(r["id"] for r in shown) == [1, 2]
    run("-c", "lake", "drop", "shop.orders", "--yes")
    assert tarn.load_catalog("lake").list_tables("shop") == []


def test_an_unknown_catalog_is_a_clear_error(config):
    out = run("-c", "nope", "ls", status=1)
    assert "catalog 'nope' is not in" in out and "lake" in out
