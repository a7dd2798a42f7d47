"""pypaimon 2.1 reads what tarn writes, and tarn reads what pypaimon writes: the same rows."""

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import tarn
from tests.interop.pypaimon_env import run_peer
from tests.helpers import canonical_rows


def read_ipc(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def write_ipc(path, table: pa.Table) -> str:
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)
    return str(path)


def pypaimon_read(table_root, out, snapshot_id=None) -> pa.Table:
    spec = {"table_path": table_root, "out_ipc": str(out)}
    if snapshot_id is not None:
        spec["snapshot_id"] = snapshot_id
    run_peer("read", spec)
    return read_ipc(out)


def canon(table: pa.Table, columns=None) -> list:
    return canonical_rows(table, columns)


SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                    ("price", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")), ("flag", pa.bool_())])


def batch(dts, ids, names):
    import datetime as dt
    import decimal

    n = len(ids)
    return pa.table({
        "dt": dts, "id": ids, "name": names,
        "price": [decimal.Decimal(f"{i}.25") for i in ids],
        "ts": [dt.datetime(2026, 11, 20, 12, 0, i % 60, 123456) for i in ids],
        "flag": [i % 2 == 0 for i in ids],
    }, schema=SCHEMA)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_pypaimon_reads_tarn_pk_table(tmp_path, fmt):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", "file.format": fmt})
    t.write(batch(["a"] * 4 + ["b"] * 3, [1, 2, 3, 4, 1, 2, 3], list("abcdefg")))
    t.write(batch(["a", "b"], [2, 3], ["B", "G"]))
    t.delete(pa.table({"dt": ["a", "b"], "id": [4, 1]}))
    t.write(batch(["c"], [9], ["z"]))
    expected = t.scan().to_arrow()
    assert expected.num_rows == 6
    got = pypaimon_read(t.root, tmp_path / "out.arrow")
    assert canon(got, SCHEMA.names) == canon(expected)
    # and at an earlier snapshot
    got1 = pypaimon_read(t.root, tmp_path / "out1.arrow", snapshot_id=1)
    assert canon(got1, SCHEMA.names) == canon(t.scan(snapshot_id=1).to_arrow())


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_pypaimon_reads_tarn_append_table(tmp_path, fmt):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    t = catalog.create_table("db.app", schema=SCHEMA, partition_keys=["dt"], options={"file.format": fmt})
    t.write(batch(["a", "a", "b"], [1, 2, 3], ["x", None, "z"]))
    t.write(batch(["b"], [4], ["w"]))
    got = pypaimon_read(t.root, tmp_path / "out.arrow")
    assert canon(got, SCHEMA.names) == canon(t.scan().to_arrow())


def test_tarn_reads_pypaimon_tables(tmp_path):
    warehouse = str(tmp_path / "wh")
    schema = [["dt", "STRING NOT NULL"], ["id", "BIGINT NOT NULL"], ["name", "STRING"], ["op", "STRING"]]
    first = pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 1], "name": ["x", "y", "z"], "op": ["+I"] * 3})
    second = pa.table({"dt": ["a"], "id": [2], "name": ["Y"], "op": ["+I"]})
    gone = pa.table({"dt": ["b"], "id": [1], "name": ["z"], "op": ["-D"]})
    run_peer("write", {
        "warehouse": warehouse, "table": "db.pk", "schema": schema, "primary_keys": ["dt", "id"],
        "partition_keys": ["dt"], "options": {"bucket": "2", "rowkind.field": "op"},
        "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "1.arrow", first)},
                    {"kind": "write", "rows_ipc": write_ipc(tmp_path / "2.arrow", second)},
                    {"kind": "delete", "rows_ipc": write_ipc(tmp_path / "3.arrow", gone)}],
    })
    t = tarn.Catalog(warehouse).load_table("db.pk")
    want = pypaimon_read(t.root, tmp_path / "peer.arrow")
    got = t.scan().to_arrow()
    assert canon(got, ["dt", "id", "name"]) == canon(want, ["dt", "id", "name"])
    assert canon(got, ["dt", "id", "name"]) == [{"dt": "a", "id": 1, "name": "x"}, {"dt": "a", "id": 2, "name": "Y"}]

    app_rows = pa.table({"k": [1, 2, 3], "v": ["p", None, "r"]})
    run_peer("write", {
        "warehouse": warehouse, "table": "db.app", "schema": [["k", "INT"], ["v", "STRING"]],
        "primary_keys": [], "partition_keys": [], "options": {},
        "commits": [{"kind": "write", "rows_ipc": write_ipc(tmp_path / "a.arrow", app_rows)}] * 2,
    })
    app = tarn.Catalog(warehouse).load_table("db.app")
    assert canon(app.scan().to_arrow()) == canon(pa.concat_tables([app_rows, app_rows]).cast(app.scan().arrow_schema))

    # tarn keeps writing to pypaimon's table; pypaimon reads the result
    t.write(pa.table({"dt": ["b"], "id": [5], "name": ["new"], "op": ["+I"]}))
    again = pypaimon_read(t.root, tmp_path / "peer2.arrow")
    assert canon(again, ["dt", "id", "name"]) == canon(t.scan().to_arrow(), ["dt", "id", "name"])
