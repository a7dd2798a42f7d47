"""Clustering of append tables (issue 43 item 4): Java's z-order and Hilbert keys byte for byte
(vectors computed by Paimon 2.0's ZOrderByteUtils / HilbertCurve 0.2.2), batch writes sorted by
`clustering.columns`, incremental clustering by levels on `compact()`, and what is refused."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tarn.codec.binary_row import deserialize_row
from tarn.data import clustering
from tarn.data.reader import FileReader
from tarn.errors import InvalidOption

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.float64())])


def z(table: pa.Table, columns, width=8) -> str:
    return clustering.zorder_keys(table, columns, width)[0].tobytes().hex()


def test_zorder_keys_match_java():
    assert z(pa.table({"a": pa.array([1], pa.int32()), "b": pa.array([2], pa.int32())}), ["a", "b"]) == \
        "c0000000000000000000000000000006"
    assert z(pa.table({"a": pa.array([-1], pa.int32()), "b": pa.array([5], pa.int64())}), ["a", "b"]) == \
        "6aaaaaaaaaaaaaaaaaaaaaaaaaaaaabb"
    assert z(pa.table({"a": ["abc"], "b": pa.array([7], pa.int32())}), ["a", "b"]) == \
        "68022808280a00000000000000000015"
    assert z(pa.table({"a": ["abcdef"], "b": pa.array([7], pa.int32())}), ["a", "b"], 3) == \
        "68022808280a0000000007"
    floats = clustering.zorder_keys(pa.table({"f": [1.5, -1.5]}), ["f"], 8)
    assert [row.tobytes().hex() for row in floats] == ["bff800007ff00000", "4007ffff7ff00000"]
    nulls = clustering.zorder_keys(pa.table({"a": pa.array([None], pa.int64()), "b": pa.array([None], pa.string())}),
                                   ["a", "b"], 4)
    assert not nulls.any()  # NULL is zeros, whatever the type


@pytest.mark.parametrize("point, tail", [
    ((1, 2), "0d"), ((3, 5, 7), "b1"), ((-1, 0), "3f" + "ff" * 15), ((2**63 - 1, 2**63 - 1), "2a" + "aa" * 15),
])
def test_hilbert_keys_match_java(point, tail):
    key = clustering.hilbert_index_bytes(np.array([point], dtype=np.int64).view(np.uint64))[0]
    assert len(key) == 63 and key.tobytes().hex().endswith(tail) and not key[:63 - len(tail) // 2].any()


def test_auto_strategy_by_column_count():
    def resolved(columns: str) -> str:
        return clustering.columns_and_strategy(tarn.options.Options({"clustering.columns": columns}), "t")[1]
    assert [resolved("a"), resolved("a,b"), resolved("a,b,c,d"), resolved("a,b,c,d,e")] == \
        ["order", "zorder", "zorder", "hilbert"]


def rows(rng, n=500) -> pa.Table:
    b = [None if x == 0 else f"s{x:02d}" for x in rng.integers(0, 40, n)]
    return pa.table({"a": rng.integers(-50, 50, n), "b": b, "v": rng.random(n)}, schema=SCHEMA)


def file_rows(table) -> list[pa.Table]:
    scan = table.scan()
    return [pa.concat_tables(scan.reader().read_all([split])) for split in scan.plan()]


def test_batch_writes_sort_by_the_clustering_column(tmp_path):
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, options={"clustering.columns": "b"})
    data = rows(np.random.default_rng(3))
    table.write(data)
    written = file_rows(table)[0].column("b")
    expected = data.column("b").take(pc.sort_indices(data, sort_keys=[("b", "ascending", "at_start")]))
    assert written.to_pylist() == expected.to_pylist()  # NULLs first, then byte order


def test_incremental_clustering_levels_and_full(tmp_path):
    options = {"clustering.columns": "a,b", "clustering.incremental": "true", "num-sorted-run.compaction-trigger": "3"}
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, options=options)
    rng = np.random.default_rng(7)
    written = [rows(rng) for _ in range(4)]
    for data in written:
        table.write(data)
    result = table.compact()
    assert result is not None and result.commit_kind == "COMPACT"
    entries = table.core.live_entries(table.latest_snapshot(), table.schema())
    assert {e.file.level for e in entries} == {3}  # all runs: the top level (trigger 3 -> 4 levels)
    assert {e.file.file_source for e in entries} == {0}  # APPEND files, as Java's unaware clustering
    merged = pa.concat_tables(file_rows(table))
    keys = clustering.zorder_keys(merged, ["a", "b"], 8)
    as_text = [k.tobytes() for k in keys]
    assert as_text == sorted(as_text)  # one file (or run) in z-order
    everything = pa.concat_tables(written)
    assert sorted(map(repr, merged.to_pylist())) == sorted(map(repr, everything.to_pylist()))
    assert table.compact(full=True) is None  # one top-level run clustered by these columns already
    table.write(rows(rng, 50))
    assert table.compact(full=True).commit_kind == "COMPACT"
    assert table.scan().count() == 2050


@pytest.mark.parametrize("options, message", [
    ({"clustering.columns": "nope"}, "unknown column 'nope'"),
    ({"clustering.columns": "a", "clustering.strategy": "hilbert"}, "at least two"),
    ({"clustering.columns": "a", "clustering.strategy": "spiral"}, "clustering.strategy"),
    ({"clustering.columns": "a", "clustering.incremental": "true", "bucket": "2", "bucket-key": "a"},
     "bucket-append-ordered"),
])
def test_bad_clustering_options_fail_at_creation(tmp_path, options, message):
    with pytest.raises(InvalidOption, match=message):
        tarn.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, options=options)


def test_incremental_clustering_needs_an_append_table(tmp_path):
    with pytest.raises(InvalidOption, match="append tables"):
        tarn.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_key=["a"],
                                                 options={"clustering.columns": "b", "clustering.incremental": "true"})


def test_pk_clustering_override_reads_skip_level_0_and_refuse_merge_on_read(tmp_path):
    """Java's clustering layout: level-1 files read raw with their deletion vectors, level 0 (not
    yet clustered) left out of batch reads; reads that would merge those files are refused."""
    from tests.maintenance_checks import set_options_on_disk

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("c", pa.string())])
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "clustering.columns": "c",
               "pk-clustering-override": "true", "write-only": "true"}
    table = tarn.Catalog(str(tmp_path)).create_table("db.t", schema, primary_key=["k"], options=options)
    table.write(pa.table({"k": [1, 2, 3], "c": ["z", "y", "x"]}, schema=schema))
    assert table.scan().count() == 0  # level 0 only
    table.compact()
    assert table.scan().to_arrow().column("c").to_pylist() == ["x", "y", "z"]  # one file, clustered
    table.write(pa.table({"k": [2], "c": ["w"]}, schema=schema))
    assert sorted(table.scan().to_arrow().column("c").to_pylist()) == ["x", "y", "z"]
    table.compact()
    assert sorted(table.scan().to_arrow().column("c").to_pylist()) == ["w", "x", "z"]
    set_options_on_disk(table, {"deletion-vectors.merge-on-read": "true"})
    with pytest.raises(tarn.errors.UnsupportedFeature, match="merge-on-read"):
        tarn.load_table(table.root).scan().to_arrow()


PK_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("c", pa.string()), ("v", pa.int64())])
op_strategy = st.lists(st.tuples(st.sampled_from(["upsert", "delete", "full"]),
                                 st.lists(st.tuples(st.integers(0, 12), st.one_of(st.none(), st.sampled_from("abcde"))),
                                          min_size=1, max_size=6)),
                       min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=op_strategy, engine=st.sampled_from(["deduplicate", "first-row"]))
def test_pk_clustering_override_follows_the_model(tmp_path_factory, ops, engine):
    options = {"bucket": "1", "clustering.columns": "c", "pk-clustering-override": "true", "merge-engine": engine,
               "target-file-size": "1 kb"}
    if engine == "deduplicate":
        options["deletion-vectors.enabled"] = "true"
    table = tarn.Catalog(str(tmp_path_factory.mktemp("wh"))).create_table("db.t", PK_SCHEMA, primary_key=["k"],
                                                                          options=options)
    model: dict[int, tuple] = {}
    version = 0
    for kind, items in ops:
        if kind == "full":
            table.compact(full=True)
            continue
        if kind == "delete" and engine == "first-row":
            continue
        keys = list(dict((k, c) for k, c in items).items())  # one row per key per write
        version += 1
        data = pa.table({"k": [k for k, _ in keys], "c": [c for _, c in keys], "v": [version] * len(keys)},
                        schema=PK_SCHEMA)
        if kind == "delete":
            table.delete(data.select(["k"]))
            for k, _ in keys:
                model.pop(k, None)
        else:
            table.write(data)
            for k, c in keys:
                if engine == "deduplicate" or k not in model:
                    model[k] = (c, version)
        got = {r["k"]: (r["c"], r["v"]) for r in table.scan().to_arrow().to_pylist()}
        assert table.scan().count() == len(got)  # no key twice
        assert got == model
    if table.latest_snapshot() is None:
        return
    schema = table.schema()
    reader = FileReader(table.core.file_io, schema, table.core.schema_by_id, schema.shape.options)
    for entry in table.core.live_entries(table.latest_snapshot(), schema):
        assert entry.file.level in (0, 1)
        if entry.file.level == 1:  # sorted by c, NULLs first; the key fields hold c of the ends
            path = table.core.bucket_dir(schema, entry.partition, entry.bucket)
            values = reader.read(path, entry.file, [schema.field("c")], with_system=False,
                                 skip_deleted=False).column("c").to_pylist()
            assert values == sorted(values, key=lambda v: (v is not None, v or ""))
            types = [schema.field("c").type]
            assert deserialize_row(entry.file.min_key, types) == [values[0]]
            assert deserialize_row(entry.file.max_key, types) == [values[-1]]
