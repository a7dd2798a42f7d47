"""Table.changes follows Java's stream scan (tarn.scan.changes), OVERWRITE snapshots included."""

import pyarrow as pa
import pytest

import tarn

from tarn.meta.schema import SetOption

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def rows(keys, value="x"):
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{value}{k}" for k in keys]})


def kinds_and_keys(changes):
    return sorted(zip(changes.column("_ROW_KIND").to_pylist(), changes.column("k").to_pylist()))


@pytest.mark.parametrize("primary_key", [None, ["k"]])
def test_overwrite_snapshots_are_skipped_by_default(catalog, primary_key):
    options = {"bucket": "1"} if primary_key else {}
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=primary_key, options=options)
    t.write(rows([1, 2]))
    t.overwrite(rows([3]))
    overwrite = t.latest_snapshot()
    assert overwrite.commit_kind == "OVERWRITE"
    assert t.changes(overwrite.id).num_rows == 0
    assert kinds_and_keys(t.changes(1)) == [("+I", 1), ("+I", 2)]


def test_streaming_read_overwrite_retracts_then_adds(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "streaming-read-overwrite": "true"})
    t.write(rows([1, 2]))
    t.overwrite(rows([3]))
    changes = t.changes(t.latest_snapshot().id)
    assert changes.column("_ROW_KIND").to_pylist() == ["-D", "-D", "+I"]
    assert kinds_and_keys(changes) == [("+I", 3), ("-D", 1), ("-D", 2)]
    t.alter(SetOption("streaming-read-overwrite", "false"))
    assert t.changes(t.latest_snapshot().id).num_rows == 0


def test_append_tables_stream_overwrites_by_their_own_option(catalog):
    """Java's append tables read an OVERWRITE snapshot's added rows when
    `streaming-read-append-overwrite` is on; `streaming-read-overwrite` is the primary-key one."""
    t = catalog.create_table("db.t", schema=SCHEMA, options={"streaming-read-append-overwrite": "true"})
    t.write(rows([1, 2]))
    t.overwrite(rows([3]))
    assert kinds_and_keys(t.changes(t.latest_snapshot().id)) == [("+I", 3)]
    t.alter(SetOption("streaming-read-append-overwrite", "false"))
    assert t.changes(t.latest_snapshot().id).num_rows == 0
    with pytest.raises(tarn.InvalidOption, match="streaming-read-append-overwrite"):
        catalog.create_table("db.u", schema=SCHEMA, options={"streaming-read-overwrite": "true"})


def test_compact_snapshots_add_no_changes_without_a_producer(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    t.write(rows([1]))
    t.write(rows([1], "y"))
    t.compact(full=True)
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert t.changes(t.latest_snapshot().id).num_rows == 0
