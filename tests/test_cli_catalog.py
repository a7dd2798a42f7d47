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


def test_tarn_serve_serves_a_named_catalog(config, tmp_path):
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    import httpx

    tarn.load_catalog("lake").create_table("shop.orders", pa.schema([("id", pa.int64())]))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tarn_command = os.path.join(os.path.dirname(sys.executable), "tarn")
    server = subprocess.Popen([tarn_command, "-c", "lake", "serve", "--port", str(port), "--token", "s3cret"],
                              stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                if httpx.get(f"{base}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        assert httpx.get(f"{base}/v1/tarn/databases").status_code == 401
        listed = httpx.get(f"{base}/v1/tarn/databases/shop/tables", headers={"Authorization": "Bearer s3cret"})
        assert listed.status_code == 200 and listed.json()["tables"] == ["orders"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
    assert "catalog" in server.stderr.read()
