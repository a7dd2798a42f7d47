"""Cross-partition upsert (bucket = -1, a primary key without every partition key): random writes,
deletes and partition moves against a plain-Python oracle for every merge engine; bootstrap by
fresh writers, several writes of one writer, the index TTL, bucket fill, bad options."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tarn.errors import TarnError
from tarn.write.key_index import KeyIndex

SCHEMA = pa.schema([pa.field("p", pa.string()), pa.field("k", pa.int64(), nullable=False),
                    pa.field("a", pa.int64()), pa.field("b", pa.string())])
# the key holds one partition column (q) but not the other (p)
SCHEMA_PQ = pa.schema([pa.field("p", pa.string()), pa.field("q", pa.int32(), nullable=False),
                       pa.field("k", pa.int64(), nullable=False), pa.field("a", pa.int64()),
                       pa.field("b", pa.string())])
PARTS = ["x", "y", "z", None]
FAST = settings(max_examples=int(os.environ.get("TARN_CROSS_EXAMPLES", "30")), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.function_scoped_fixture])

ENGINE_OPTIONS = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "ignore-delete": "true",
                    "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "last_non_null_value"},
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
}


@dataclass(frozen=True)
class Config:
    engine: str
    key_holds_q: bool  # partitions (p, q), key (k, q); else partition p, key k
    target_rows: int  # dynamic-bucket.target-row-num: small, so partitions get several buckets
    deletion_vectors: bool

    @property
    def schema(self) -> pa.Schema:
        return SCHEMA_PQ if self.key_holds_q else SCHEMA

    @property
    def key_names(self) -> list[str]:
        return ["k", "q"] if self.key_holds_q else ["k"]

    @property
    def partition_names(self) -> list[str]:
        return ["p", "q"] if self.key_holds_q else ["p"]

    def create(self, catalog: tarn.Catalog, name: str = "db.t") -> tarn.Table:
        options = {**ENGINE_OPTIONS[self.engine], "dynamic-bucket.target-row-num": str(self.target_rows)}
        if self.deletion_vectors:
            options["deletion-vectors.enabled"] = "true"
        return catalog.create_table(name, schema=self.schema, primary_key=self.key_names,
                                    partition_keys=self.partition_names, options=options)


@st.composite
def configs(draw) -> Config:
    engine = draw(st.sampled_from(list(ENGINE_OPTIONS)))
    dv = engine != "first-row" and draw(st.booleans())
    return Config(engine, draw(st.booleans()), draw(st.sampled_from([1, 2, 1000])), dv)


@st.composite
def row_lists(draw, config: Config):
    n = draw(st.integers(1, 8))
    rows = []
    for _ in range(n):
        row = {"p": draw(st.sampled_from(PARTS)), "k": draw(st.integers(0, 5)),
               "a": draw(st.integers(-5, 5)), "b": draw(st.one_of(st.none(), st.sampled_from(["u", "v", "w"])))}
        if config.key_holds_q:
            row["q"] = draw(st.integers(0, 1))
        rows.append(row)
    kinds = draw(st.lists(st.sampled_from(["+I", "+I", "+U", "-U", "-D"]), min_size=n, max_size=n))
    return rows, kinds


class Oracle:
    """The table as Paimon's GlobalIndexAssigner leaves it: rows by key, each in its partition;
    `home` is the key index (partition of every key ever seen, deleted keys included)."""

    def __init__(self, config: Config):
        self.config = config
        self.rows: dict[tuple, dict] = {}
        self.home: dict[tuple, tuple] = {}

    def key(self, row: dict) -> tuple:
        return tuple(row[k] for k in self.config.key_names)

    def part(self, row: dict) -> tuple:
        return tuple(row[p] for p in self.config.partition_names)

    def placed(self, row: dict, part: tuple) -> dict:
        return {**row, **dict(zip(self.config.partition_names, part))}

    def new_writer(self) -> None:
        """A writer starts from the live rows (bootstrap) or continues the previous writer's
        index: they agree except on deleted keys, which only deduplicate has (and ignores)."""
        self.home = {key: self.part(row) for key, row in self.rows.items()} | {
            k: v for k, v in self.home.items() if k not in self.rows}

    def write(self, rows: list[dict], kinds: list[str]) -> None:
        for row, kind in zip(rows, kinds):
            getattr(self, "_" + self.config.engine.replace("-", "_"))(row, kind in ("+I", "+U"))

    def _deduplicate(self, row: dict, add: bool) -> None:
        key = self.key(row)
        if add:
            self.rows[key] = dict(row)
            self.home[key] = self.part(row)
        else:
            self.rows.pop(key, None)

    def _partial_update(self, row: dict, add: bool) -> None:
        if not add:  # ignore-delete; a retraction never makes a key known
            return
        key = self.key(row)
        part = self.home.setdefault(key, self.part(row))
        if add:
            old = self.rows.get(key, {})
            self.rows[key] = self.placed({**old, **{c: v for c, v in row.items() if v is not None}}, part)
            for column in ("a", "b"):
                self.rows[key].setdefault(column, None)

    def _aggregation(self, row: dict, add: bool) -> None:
        if not add:
            return
        key = self.key(row)
        part = self.home.setdefault(key, self.part(row))
        if add:
            old = self.rows.get(key)
            new = self.placed(dict(row), part)
            if old is not None:
                new["a"] = _plus(old["a"], row["a"])
                new["b"] = row["b"] if row["b"] is not None else old["b"]
            self.rows[key] = new

    def _first_row(self, row: dict, add: bool) -> None:
        if not add:
            return
        key = self.key(row)
        part = self.home.setdefault(key, self.part(row))
        if key not in self.rows and self.part(row) == part:
            self.rows[key] = dict(row)


def _plus(a, b):
    return b if a is None else a if b is None else a + b


def canonical(rows, names) -> list[tuple]:
    return sorted((tuple(r[n] for n in names) for r in rows), key=repr)


def check(table: tarn.Table, config: Config, oracle: Oracle) -> None:
    got = table.scan().to_arrow().to_pylist()
    names = config.schema.names
    keys = [tuple(r[k] for k in config.key_names) for r in got]
    assert len(keys) == len(set(keys)), "a key is read twice"
    assert canonical(got, names) == canonical(oracle.rows.values(), names)


def to_arrow(config: Config, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=config.schema)


@FAST
@given(config=configs(), data=st.data())
def test_random_writes_moves_and_deletes_match_the_oracle(tmp_path_factory, config, data):
    catalog = tarn.Catalog(str(tmp_path_factory.mktemp("wh")))
    table = config.create(catalog)
    oracle = Oracle(config)
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["write", "write", "writer", "compact"]))
        if op == "write":  # a fresh writer per commit: each one bootstraps the key index
            rows, kinds = data.draw(row_lists(config))
            table.write(to_arrow(config, rows), row_kind=kinds)
            oracle.new_writer()
            oracle.write(rows, kinds)
        elif op == "writer":  # one writer, several writes, one commit
            writer = table.new_writer()
            oracle.new_writer()
            for _ in range(data.draw(st.integers(2, 3))):
                rows, kinds = data.draw(row_lists(config))
                writer.write(to_arrow(config, rows), row_kind=kinds)
                oracle.write(rows, kinds)
            table.commit(writer.prepare_commit())
        else:
            table.compact(full=data.draw(st.booleans()))
        check(table, config, oracle)


def test_deduplicate_moves_a_row_and_deletes_it_where_it_lives(catalog):
    config = Config("deduplicate", False, 1000, False)
    table = config.create(catalog)
    table.write(to_arrow(config, [{"p": "x", "k": 1, "a": 1, "b": "u"}, {"p": "x", "k": 2, "a": 2, "b": "v"}]))
    table.write(to_arrow(config, [{"p": "y", "k": 1, "a": 10, "b": None}]))
    assert canonical(table.scan().to_arrow().to_pylist(), SCHEMA.names) == canonical(
        [{"p": "y", "k": 1, "a": 10, "b": None}, {"p": "x", "k": 2, "a": 2, "b": "v"}], SCHEMA.names)
    # the old partition got a -D of the moved row
    x_rows = table.scan(filter=tarn.col("p") == "x").to_arrow()
    assert x_rows.column("k").to_pylist() == [2]
    table.delete(pa.table({"k": pa.array([1], pa.int64())}))  # the key alone: found in partition y
    assert table.scan().to_arrow().column("k").to_pylist() == [2]


def test_partial_update_and_aggregation_stay_in_the_old_partition(catalog):
    for name, engine in (("db.pu", "partial-update"), ("db.agg", "aggregation")):
        config = Config(engine, False, 1000, False)
        table = config.create(catalog, name)
        table.write(to_arrow(config, [{"p": "x", "k": 1, "a": 1, "b": "u"}]))
        table.write(to_arrow(config, [{"p": "y", "k": 1, "a": 2, "b": None}]))
        expected_a = 2 if engine == "partial-update" else 3
        assert table.scan().to_arrow().to_pylist() == [{"p": "x", "k": 1, "a": expected_a, "b": "u"}]


def test_aggregation_retractions_go_where_the_key_lives(catalog):
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                                 options={"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"})
    table.write(to_arrow(Config("aggregation", False, 1, False), [{"p": "x", "k": 1, "a": 5, "b": "u"}]))
    table.write(pa.Table.from_pylist([{"p": "other", "k": 1, "a": 2, "b": None}], schema=SCHEMA), row_kind="-U")
    assert table.scan().to_arrow().to_pylist() == [{"p": "x", "k": 1, "a": 3, "b": "u"}]


def test_first_row_ignores_a_key_living_elsewhere(catalog):
    config = Config("first-row", False, 1000, False)
    table = config.create(catalog)
    table.write(to_arrow(config, [{"p": "x", "k": 1, "a": 1, "b": "u"}]))
    table.write(to_arrow(config, [{"p": "y", "k": 1, "a": 2, "b": "v"}, {"p": "y", "k": 2, "a": 3, "b": "w"}]))
    assert canonical(table.scan().to_arrow().to_pylist(), SCHEMA.names) == canonical(
        [{"p": "x", "k": 1, "a": 1, "b": "u"}, {"p": "y", "k": 2, "a": 3, "b": "w"}], SCHEMA.names)


def test_last_row_of_a_key_in_one_write_wins_and_moves_whole(catalog):
    config = Config("deduplicate", False, 1000, False)
    table = config.create(catalog)
    table.write(to_arrow(config, [{"p": "x", "k": 1, "a": 0, "b": None}]))
    table.write(to_arrow(config, [{"p": "y", "k": 1, "a": 1, "b": None}, {"p": "z", "k": 1, "a": 2, "b": None},
                                  {"p": "y", "k": 1, "a": 3, "b": None}]))
    assert table.scan().to_arrow().to_pylist() == [{"p": "y", "k": 1, "a": 3, "b": None}]


def test_buckets_fill_to_the_target_then_reuse_room_freed_by_moves(catalog):
    table = Config("deduplicate", False, 2, False).create(catalog)
    table.write(pa.Table.from_pylist([{"p": "x", "k": k, "a": k, "b": None} for k in range(5)], schema=SCHEMA))
    buckets = sorted({e.bucket for e in table.live_entries(table.latest_snapshot(), table.schema())})
    assert buckets == [0, 1, 2]  # 2 + 2 + 1 keys
    assert table.system_table("table_indexes").to_arrow().num_rows == 0  # Java writes no HASH index here
    moved = pa.Table.from_pylist([{"p": "y", "k": 0, "a": 0, "b": None}], schema=SCHEMA)
    writer = table.new_writer()
    writer.write(moved)  # bucket 0 of x now holds one key
    writer.write(pa.Table.from_pylist([{"p": "x", "k": 9, "a": 9, "b": None}], schema=SCHEMA))
    messages = writer.prepare_commit()
    table.commit(messages)
    x = tarn.partition.to_bytes(table.schema(), ["x"])
    new_in_x = [m for m in messages if m.partition == x and any(f.row_count for f in m.new_files)]
    by_bucket = {m.bucket: sum(f.row_count for f in m.new_files) for m in new_in_x}
    assert by_bucket == {0: 2}  # the -D of key 0 and the new key 9, both in bucket 0
    assert sorted(table.scan().to_arrow().column("k").to_pylist()) == [0, 1, 2, 3, 4, 9]


def test_a_fresh_writer_bootstraps_from_the_table_with_any_parallelism(catalog):
    table = Config("deduplicate", True, 3, True).create(catalog)
    rows = [{"p": "x", "q": k % 2, "k": k, "a": k, "b": None} for k in range(40)]
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA_PQ))
    table.delete(pa.Table.from_pylist([{"p": "x", "q": 1, "k": 1, "a": None, "b": None}], schema=SCHEMA_PQ))
    for parallelism in ("1", "7"):
        table.alter(tarn.SetOption("cross-partition-upsert.bootstrap-parallelism", parallelism))
        moved = [{"p": f"m{parallelism}", "q": k % 2, "k": k, "a": -k, "b": None} for k in range(0, 40, 3)]
        table.write(pa.Table.from_pylist(moved, schema=SCHEMA_PQ))
    got = table.scan().to_arrow().to_pylist()
    assert sorted(r["k"] for r in got) == [k for k in range(40) if k != 1]
    assert {r["k"]: r["p"] for r in got if r["k"] % 3 == 0} == {k: "m7" for k in range(0, 40, 3)}


def test_index_ttl_forgets_keys_written_before_it(catalog):
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                                 options={"cross-partition-upsert.index-ttl": "200 ms"})
    table.write(pa.Table.from_pylist([{"p": "x", "k": 1, "a": 1, "b": None}], schema=SCHEMA))
    table.write(pa.Table.from_pylist([{"p": "y", "k": 1, "a": 2, "b": None}], schema=SCHEMA))
    assert table.scan().to_arrow().column("p").to_pylist() == ["y"]  # within the TTL: moved
    time.sleep(0.4)
    table.write(pa.Table.from_pylist([{"p": "z", "k": 1, "a": 3, "b": None}], schema=SCHEMA))
    # the bucket of y is older than the TTL: not bootstrapped, key 1 is new again (Paimon warns of this)
    assert sorted(table.scan().to_arrow().column("p").to_pylist()) == ["y", "z"]


def test_key_index_spills_to_disk_and_expires_entries(tmp_path):
    index = KeyIndex(memory_limit=1 << 20, ttl_ms=1000, directory=str(tmp_path))
    rng = np.random.default_rng(0)
    keys = rng.permutation(300_000).astype(np.int64)
    for chunk in np.array_split(keys, 10):  # ~7 MB of entries: several disk runs
        index.put(chunk, chunk % 7, chunk % 5, now_ms=0)
    index.put(keys[:10], np.full(10, 99), np.full(10, 1), now_ms=900)  # newer entries win
    assert index.runs and all(isinstance(r.keys, np.memmap) for r in index.runs)
    probes = np.concatenate([keys[:20], [10**9]])
    found, parts, buckets = index.get(probes, now_ms=950)
    assert found.tolist() == [True] * 20 + [False]
    assert parts[:10].tolist() == [99] * 10 and parts[10:20].tolist() == (keys[10:20] % 7).tolist()
    found, _, _ = index.get(probes, now_ms=1500)  # past the TTL only the newer entries remain
    assert found.tolist() == [True] * 10 + [False] * 11
    index.close()
    assert list(tmp_path.iterdir()) == []


def test_bad_options_and_overwrite_are_refused(catalog):
    with pytest.raises(TarnError, match="bootstrap-parallelism"):
        catalog.create_table("db.a", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                             options={"cross-partition-upsert.bootstrap-parallelism": "0"})
    with pytest.raises(TarnError, match="index-ttl"):
        catalog.create_table("db.b", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                             options={"cross-partition-upsert.index-ttl": "soon"})
    with pytest.raises(TarnError, match="sequence.field"):
        catalog.create_table("db.c", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                             options={"sequence.field": "a"})
    table = catalog.create_table("db.d", schema=SCHEMA, primary_key=["k"], partition_keys=["p"])
    table.write(pa.Table.from_pylist([{"p": "x", "k": 1, "a": 1, "b": None}], schema=SCHEMA))
    with pytest.raises(TarnError, match="OVERWRITE"):
        table.overwrite(pa.Table.from_pylist([{"p": "y", "k": 1, "a": 1, "b": None}], schema=SCHEMA))
    assert table.scan().to_arrow().column("p").to_pylist() == ["x"]


def test_the_next_writer_continues_the_key_index_unless_another_commit_came_between(catalog):
    from tarn.write.cross_partition import KEPT_ASSIGNERS, CrossPartitionAssigner

    reads = []
    original = CrossPartitionAssigner._live_keys
    table = Config("deduplicate", False, 1000, False).create(catalog)
    try:
        CrossPartitionAssigner._live_keys = lambda self, bucket: reads.append(bucket) or original(self, bucket)
        table.write(pa.Table.from_pylist([{"p": "x", "k": k, "a": k, "b": None} for k in range(3)], schema=SCHEMA))
        kept = KEPT_ASSIGNERS._kept[table.root][1]
        writer = table.new_writer()
        writer.write(pa.Table.from_pylist([{"p": "y", "k": 1, "a": 9, "b": None}], schema=SCHEMA))
        assert writer._router is kept and reads == []  # continued: no file read
        table.commit(writer.prepare_commit())  # a commit that keeps no index
        table.write(pa.Table.from_pylist([{"p": "z", "k": 2, "a": 9, "b": None}], schema=SCHEMA))
        assert len(reads) == 2  # bootstrapped again: buckets x/0 and y/0
        table.compact(full=True)  # another commit: the kept index no longer matches the table
        table.write(pa.Table.from_pylist([{"p": "x", "k": 1, "a": 7, "b": None}], schema=SCHEMA))
        assert len(reads) > 2
    finally:
        CrossPartitionAssigner._live_keys = original
    got = {r["k"]: (r["p"], r["a"]) for r in table.scan().to_arrow().to_pylist()}
    assert got == {0: ("x", 0), 1: ("x", 7), 2: ("z", 9)}


class JavaAssigner:
    """Paimon's GlobalIndexAssigner.processInput with DeleteExistingProcessor and
    crosspartition.BucketAssigner, row by row (one assigner): the placement oracle."""

    def __init__(self, target: int):
        self.target = target
        self.index: dict[int, tuple[str, int]] = {}
        self.counts: dict[str, dict[int, int]] = {}

    def assign(self, part: str) -> int:
        buckets = self.counts.setdefault(part, {})
        for bucket in sorted(buckets):
            if buckets[bucket] < self.target:
                buckets[bucket] += 1
                return bucket
        bucket = 0
        while bucket in buckets:
            bucket += 1
        buckets[bucket] = 1
        return bucket

    def process(self, part: str, key: int) -> None:
        where = self.index.get(key)
        if where is not None and where[0] == part:
            return
        if where is not None:
            self.counts[where[0]][where[1]] -= 1
        self.index[key] = (part, self.assign(part))


@settings(max_examples=int(os.environ.get("TARN_CROSS_EXAMPLES", "60")), deadline=None)
@given(target=st.integers(1, 4), writes=st.lists(st.lists(st.tuples(st.sampled_from("xyz"), st.integers(0, 15)),
                                                          min_size=1, max_size=12), min_size=1, max_size=5))
def test_buckets_fill_exactly_as_paimon_row_by_row(target, writes):
    warehouse = tempfile.mkdtemp()
    table = tarn.Catalog(warehouse).create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                                                 options={"dynamic-bucket.target-row-num": str(target)})
    writer = table.new_writer()  # routes every write against the index of the writes before
    java = JavaAssigner(target)
    placed: dict[int, tuple[str, int]] = {}
    for write in writes:
        seen, rows = set(), []
        for part, key in write:  # one row per key in a write: Paimon's row-by-row order is then ours
            if key not in seen:
                seen.add(key)
                rows.append({"p": part, "k": key, "a": None, "b": None})
                java.process(part, key)
        data = pa.Table.from_pylist(rows, schema=SCHEMA).append_column("_VALUE_KIND", pa.array([0] * len(rows), pa.int8()))
        out, buckets = writer._route(data)
        kinds = out.column("_VALUE_KIND").to_pylist()
        for row, kind, bucket in zip(out.to_pylist(), kinds, buckets.tolist()):
            if kind == 3:
                assert placed[row["k"]] == (row["p"], bucket)  # the -D goes where the key lived
            else:
                placed[row["k"]] = (row["p"], bucket)
        assert placed == java.index
    shutil.rmtree(warehouse, ignore_errors=True)


def test_a_move_reaches_the_changelog_as_a_delete_and_an_insert(catalog):
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                                 options={"changelog-producer": "input"})
    table.write(pa.Table.from_pylist([{"p": "x", "k": 1, "a": 1, "b": "u"}], schema=SCHEMA))
    moved = table.write(pa.Table.from_pylist([{"p": "y", "k": 1, "a": 2, "b": "v"}], schema=SCHEMA))
    changes = table.changes(moved.id).to_pylist()
    assert sorted(changes, key=lambda r: r["_ROW_KIND"]) == [
        {"_ROW_KIND": "+I", "p": "y", "k": 1, "a": 2, "b": "v"},
        {"_ROW_KIND": "-D", "p": "x", "k": 1, "a": 2, "b": "v"},  # Paimon retracts with the new row's values
    ]


def test_moves_out_of_a_big_file_are_marked_by_deletion_vectors(catalog):
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                                 options={"deletion-vectors.enabled": "true"})
    oracle = {k: ("x", k) for k in range(3000)}
    table.write(pa.Table.from_pylist([{"p": "x", "k": k, "a": k, "b": None} for k in range(3000)], schema=SCHEMA))
    for step, (part, keys) in enumerate([("y", [1, 2, 3]), ("x", [2, 10]), ("z", [10, 2999])]):
        table.write(pa.Table.from_pylist([{"p": part, "k": k, "a": -step, "b": None} for k in keys], schema=SCHEMA))
        oracle.update({k: (part, -step) for k in keys})
    table.delete(pa.table({"k": pa.array([3, 4], pa.int64())}))
    del oracle[3], oracle[4]
    kinds = table.system_table("table_indexes").to_arrow().column("index_type").to_pylist()
    assert kinds and set(kinds) == {"DELETION_VECTORS"}
    got = table.scan().to_arrow().to_pylist()
    assert len(got) == len(oracle) and {r["k"]: (r["p"], r["a"]) for r in got} == oracle


@settings(max_examples=int(os.environ.get("TARN_CROSS_EXAMPLES", "60")), deadline=None)
@given(puts=st.lists(st.tuples(st.lists(st.integers(0, 3000), min_size=1, max_size=400), st.booleans(),
                               st.one_of(st.none(), st.integers(0, 3))), min_size=1, max_size=12),
       text=st.booleans())
def test_key_index_answers_as_a_dict(puts, text):
    index = KeyIndex(memory_limit=0)  # the floor (1 MB) is reached by no test: spill forced below
    index.memory_limit = 4000
    model: dict = {}
    for step, (keys, as_sorted, _) in enumerate(puts):
        keys = np.unique(keys) if as_sorted else np.asarray(keys)
        encoded = np.array([b"k%d" % k for k in keys], dtype="S") if text else keys.astype(np.int64)
        index.put(encoded, keys % 5, np.full(len(keys), step), now_ms=step)
        for k in keys.tolist():
            model[k] = (k % 5, step)
    probes = np.arange(0, 3001, 7)
    encoded = np.array([b"k%d" % k for k in probes], dtype="S") if text else probes
    found, parts, buckets = index.get(encoded, now_ms=len(puts))
    got = {int(k): (int(p), int(b)) for k, f, p, b in zip(probes, found, parts, buckets) if f}
    assert got == {k: v for k, v in model.items() if k % 7 == 0}
    assert len(index.runs) <= 8  # disk runs were merged (range by range) beyond that
    index.close()


def test_an_assigner_task_holds_its_key_range_and_creates_only_its_buckets(catalog):
    from tarn.data.reader import FileReader
    from tarn.options import Options
    from tarn.write.cross_partition import CrossPartitionAssigner, key_channels

    table = Config("deduplicate", False, 2, False).create(catalog)
    table.write(pa.Table.from_pylist([{"p": "x", "k": k, "a": k, "b": None} for k in range(40)], schema=SCHEMA))
    schema, options = table.schema(), Options(table.schema().options)
    writer = table.new_writer()
    task = CrossPartitionAssigner(schema, options, FileReader(table.file_io, schema, table.schema_by_id, options),
                                  writer._restored_buckets, channel=(1, 3))
    task.bootstrap()
    keys = pa.table({"k": pa.array(range(40), pa.int64())})
    mine = np.flatnonzero(key_channels(keys, schema, 3) == 1)
    found, parts, _ = task.index.get(np.arange(40, dtype=np.int64), now_ms=0)
    assert np.flatnonzero(found).tolist() == mine.tolist()  # only the keys of its range
    new = [k for k in range(100, 400) if key_channels(pa.table({"k": pa.array([k], pa.int64())}), schema, 3)[0] == 1]
    rows = pa.Table.from_pylist([{"p": "y", "k": k, "a": 0, "b": None} for k in new[:7]]
                                + [{"p": "y", "k": int(k), "a": 0, "b": None} for k in mine[:2]], schema=SCHEMA)
    placed, buckets = task.route(rows.append_column("_VALUE_KIND", pa.array([0] * rows.num_rows, pa.int8())))
    kinds = placed.column("_VALUE_KIND").to_pylist()
    assert sorted(b for b, kind in zip(buckets.tolist(), kinds) if kind == 0) == [1, 1, 4, 4, 7, 7, 10, 10, 13]
    assert sum(kind == 3 for kind in kinds) == 2  # the two moved keys retracted in x
    task.close()


def test_ignore_delete_with_deduplicate_is_refused(catalog):
    # the -D that removes a moved key's old row would be dropped (Paimon then keeps two rows)
    with pytest.raises(TarnError, match="ignore-delete"):
        catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                             options={"ignore-delete": "true"})
    table = catalog.create_table("db.u", schema=SCHEMA, primary_key=["k"], partition_keys=["p"])
    with pytest.raises(TarnError, match="ignore-delete"):
        table.alter(tarn.SetOption("ignore-delete", "true"))


def test_writes_stay_correct_when_expiry_removes_the_snapshots_just_written(catalog):
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], partition_keys=["p"],
                                 options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                                          "deletion-vectors.enabled": "true"})  # APPEND then COMPACT
    for step, part in enumerate(["x", "y", "x", "z"]):
        table.write(pa.Table.from_pylist([{"p": part, "k": k, "a": step, "b": None} for k in range(5)],
                                         schema=SCHEMA))
    assert len(table.snapshots()) == 1
    assert sorted((r["p"], r["k"], r["a"]) for r in table.scan().to_arrow().to_pylist()) == [
        ("z", k, 3) for k in range(5)]
