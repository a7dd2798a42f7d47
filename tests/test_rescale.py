"""Table.rescale: a table's or partitions' rows rewritten into another bucket count in one
OVERWRITE commit (Paimon's rescale overwrite), refused writes into partitions whose files have
another bucket count, and the strict check against concurrent writers."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import tarn
from tarn.errors import CommitConflict, InvalidArgument, SchemaMismatch, TarnError
from tarn.meta.schema import SetOption
from tarn.ops.rescale import commit_rescale, plan_rescale, rescale_writer

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    ("v", pa.string())])


def rows(dt, keys, value="x"):
    return pa.table({"dt": [dt] * len(keys), "k": pa.array(keys, pa.int64()), "v": [f"{value}{k}" for k in keys]},
                    schema=SCHEMA)


def table(catalog, name="t", **options):
    return catalog.create_table(name, schema=SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"],
                                options={"bucket": "2", **options})


def content(t) -> dict:
    return {(r["dt"], r["k"]): r["v"] for r in t.scan().to_arrow().to_pylist()}


def total_buckets(t) -> dict:
    out = {}
    for e in t.live_entries(t.latest_snapshot()):
        values = tarn.partition.from_bytes(t.schema(), e.partition)
        out.setdefault(values[0], set()).add(e.total_buckets)
    return out


def files_on_disk(t) -> set:
    return {os.path.join(d, f) for d, _, fs in os.walk(t.root) for f in fs if not d.endswith(("snapshot", "schema"))}


def test_rescale_the_whole_table(catalog):
    t = table(catalog)
    t.write(pa.concat_tables([rows("a", range(40)), rows("b", range(20))]))
    t.write(rows("a", range(10), "y"))
    before = content(t)
    snapshot = t.rescale(bucket=5)
    assert snapshot.commit_kind == "OVERWRITE" and snapshot.id == t.latest_snapshot().id
    assert t.schema().options["bucket"] == "5"
    assert total_buckets(t) == {"a": {5}, "b": {5}}
    assert content(t) == before
    assert {e.bucket for e in t.live_entries(t.latest_snapshot())} <= set(range(5))
    t.write(rows("a", [1], "z"))  # the table takes writes again
    assert content(t)[("a", 1)] == "z1" and len(content(t)) == len(before)


def test_rescale_partitions_and_refused_writes_name_rescale(catalog):
    t = table(catalog)
    t.write(pa.concat_tables([rows("a", range(30)), rows("b", range(30)), rows("c", range(5))]))
    before = content(t)
    t.rescale(bucket=4, partitions=[{"dt": "a"}, {"dt": "c"}])
    assert total_buckets(t) == {"a": {4}, "b": {2}, "c": {4}}
    assert content(t) == before and t.schema().options["bucket"] == "4"
    latest = t.latest_snapshot().id
    with pytest.raises(TarnError, match=r"partition \{'dt': 'b'\}.*bucket=2.*Rescale first: "
                                        r"table.rescale\(bucket=4, partitions=\[\{'dt': 'b'\}\]\)"):
        t.write(rows("b", [1], "new"))
    assert t.latest_snapshot().id == latest
    t.write(rows("a", [1], "new"))  # rescaled partitions and new ones take writes
    t.write(rows("d", [1], "new"))
    t.rescale(partitions=[{"dt": "b"}])  # to the table's own count
    assert total_buckets(t) == {"a": {4}, "b": {4}, "c": {4}, "d": {4}}
    t.write(rows("b", [1], "new"))
    assert content(t)[("b", 1)] == "new1" and len(content(t)) == len(before) + 1


def test_rescale_after_alter_as_in_paimons_docs(catalog):
    """ALTER 'bucket' first (writes into old partitions are refused), then rescale."""
    t = table(catalog)
    t.write(rows("a", range(10)))
    t.alter(SetOption("bucket", "3"))
    with pytest.raises(TarnError, match="Rescale first"):
        t.write(rows("a", [1]))
    t.rescale()
    t.write(rows("a", [1], "after"))
    assert total_buckets(t) == {"a": {3}} and content(t)[("a", 1)] == "after1"


def test_rescale_repacks_a_dynamic_bucket_table(catalog):
    t = catalog.create_table("dyn", schema=SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "10"})
    t.write(rows("a", range(100)))
    t.delete(rows("a", range(0, 100, 2)))
    t.rescale()
    from tarn.store.deletion_vectors import live_index_entries
    held = live_index_entries(t.manifests(), t.latest_snapshot())
    assert sorted((e.bucket, e.row_count) for e in held) == [(b, 10) for b in range(5)]
    assert content(t) == {("a", k): f"x{k}" for k in range(1, 100, 2)}
    t.write(rows("a", [0, 1], "n"))
    assert content(t)[("a", 0)] == "n0" and len(content(t)) == 51
    with pytest.raises(InvalidArgument, match="cannot be rescaled to 4 buckets"):
        t.rescale(bucket=4)


def test_rescale_with_deletion_vectors(catalog):
    t = table(catalog, **{"deletion-vectors.enabled": "true"})
    t.write(rows("a", range(3000)))
    t.write(rows("a", range(10), "u"))
    before = content(t)
    t.rescale(bucket=3)
    assert content(t) == before and total_buckets(t) == {"a": {3}}
    assert all(m.level > 0 for s in t.scan().plan() for m in s.files)


def test_rescale_fails_on_a_concurrent_write_and_loses_nothing(catalog):
    t = table(catalog)
    t.write(pa.concat_tables([rows("a", range(20)), rows("b", range(20))]))
    plan = plan_rescale(t, 4, [{"dt": "a"}])
    writer = rescale_writer(t, plan)
    reader = t.scan_snapshot(plan.base).reader()
    for split in plan.splits:
        writer.write(reader.read(split))
    messages = writer.prepare_commit()
    t.write(rows("b", [99], "other"))  # another partition: fine
    t.write(rows("a", [99], "late"))  # the rescaled partition: the overwrite would drop it
    on_disk = files_on_disk(t)
    with pytest.raises(CommitConflict, match="changed the data being rescaled"):
        commit_rescale(t, plan, messages)
    assert content(t)[("a", 99)] == "late99" and t.schema().options["bucket"] == "2"
    assert total_buckets(t) == {"a": {2}, "b": {2}}
    assert files_on_disk(t) <= on_disk  # the rescale's files are gone again
    t.rescale(bucket=4, partitions=[{"dt": "a"}])  # run again, it lands
    assert content(t)[("a", 99)] == "late99" and total_buckets(t)["a"] == {4}


def test_rescale_ignores_its_own_and_compact_free_history(catalog):
    t = table(catalog)
    t.write(rows("a", range(5)))
    plan = plan_rescale(t, 3, None)
    writer = rescale_writer(t, plan)
    for split in plan.splits:
        writer.write(t.scan_snapshot(plan.base).reader().read(split))
    t.create_tag("before")  # tags change no data
    commit_rescale(t, plan, writer.prepare_commit())
    assert total_buckets(t) == {"a": {3}}


def test_bad_rescales(catalog):
    t = table(catalog)
    assert t.rescale(bucket=3) is None  # no snapshot: nothing to rescale
    assert t.schema().options["bucket"] == "2"
    t.write(rows("a", [1]))
    with pytest.raises(InvalidArgument, match="bucket count > 0"):
        t.rescale(bucket=-1)
    with pytest.raises(InvalidArgument, match="bucket count > 0"):
        t.rescale(bucket=0)
    with pytest.raises(SchemaMismatch, match="partition columns"):
        t.rescale(partitions=[{"k": 1}])
    assert t.rescale(partitions=[{"dt": "nope"}]) is None
    plain = catalog.create_table("plain", schema=SCHEMA, primary_key=["dt", "k"], options={"bucket": "2"})
    plain.write(rows("a", [1]))
    with pytest.raises(InvalidArgument, match="not partitioned"):
        plain.rescale(partitions=[{"dt": "a"}])
    append = catalog.create_table("app", schema=SCHEMA)
    append.write(rows("a", [1]))
    with pytest.raises(InvalidArgument, match="no buckets to rescale"):
        append.rescale()


def test_rescale_an_append_table_with_bucket_key(catalog):
    t = catalog.create_table("app", schema=SCHEMA, options={"bucket": "2", "bucket-key": "k"})
    t.write(rows("a", range(20)))
    t.write(rows("a", range(5)))
    t.rescale(bucket=3)
    assert t.scan().count() == 25
    assert {e.total_buckets for e in t.live_entries(t.latest_snapshot())} == {3}
