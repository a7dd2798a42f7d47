"""Model-based tests: random operation sequences on small tables, every read checked against a
plain-Python oracle of the table's content (a dict by key for primary-key tables, a multiset of
rows for append tables), then time travel to every snapshot and the snapshot invariants.

Profiles: `TARN_HYPOTHESIS_PROFILE=long` runs many more (and longer) sequences on demand."""

from __future__ import annotations

import copy
import datetime
import os
import tempfile
from dataclasses import dataclass, replace
from decimal import Decimal

import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tarn
from tarn import col
from tarn.meta.manifest import ADD
from tarn.scan.predicate import And, Compare, In, IsNull, Not, Or, StartsWith
from tests.helpers import canonical_rows

settings.register_profile(
    "tarn-model-ci", max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "tarn-model-long", max_examples=600, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(  # a quick look without shrinking: TARN_HYPOTHESIS_PROFILE=dev
    "tarn-model-dev", parent=settings.get_profile("tarn-model-ci"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile(  # long sequences without shrinking
    "tarn-model-longdev", parent=settings.get_profile("tarn-model-long"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate])
PROFILE_NAME = os.environ.get("TARN_HYPOTHESIS_PROFILE", "ci")
LONG = PROFILE_NAME in ("long", "longdev")
PROFILE = settings.get_profile({"long": "tarn-model-long", "dev": "tarn-model-dev", "longdev": "tarn-model-longdev"}.get(PROFILE_NAME, "tarn-model-ci"))
MAX_OPS = 14 if LONG else 7
MAX_ROWS = 12 if LONG else 6

KINDS = ["+I", "-U", "+U", "-D"]
FORMATS = ["parquet", "orc", "avro"]

# ------------------------------------------------------------------------------------------
# The table under test


@dataclass(frozen=True)
class Config:
    primary_key: bool
    partition: str | None  # None, "string" or "int": the type of partition column `p`
    string_key: bool  # PK tables: a second key column `ks` (STRING)
    bucket: int  # PK: 1..3; append: -1 (unaware) or 1..3 with bucket-key k
    file_format: str
    ignore_delete: bool
    cross: bool = False  # PK tables: key without `p`, bucket -1 (cross-partition upsert: rows move)

    @property
    def key_names(self) -> list[str]:
        keys = ["p"] if self.partition and not self.cross else []
        keys.append("k")
        if self.string_key:
            keys.append("ks")
        return keys

    @property
    def columns(self) -> list[tuple[str, pa.DataType]]:
        cols = []
        if self.partition:
            cols.append(("p", pa.string() if self.partition == "string" else pa.int32()))
        cols.append(("k", pa.int64()))
        if self.string_key:
            cols.append(("ks", pa.string()))
        cols += [("i", pa.int32()), ("s", pa.string()), ("dec", pa.decimal128(10, 2)),
                 ("ts", pa.timestamp("us")), ("d", pa.date32()), ("b", pa.bool_()), ("f", pa.float64())]
        return cols

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.columns]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(self.columns)

    @property
    def string_columns(self) -> list[str]:
        return [n for n, t in self.columns if pa.types.is_string(t)]

    def options(self) -> dict:
        opts = {"bucket": str(-1 if self.cross else self.bucket), "file.format": self.file_format}
        if not self.primary_key and self.bucket > 0:
            opts["bucket-key"] = "k"
        if self.ignore_delete:
            opts["ignore-delete"] = "true"
        return opts

    def create(self, catalog: tarn.Catalog) -> tarn.Table:
        return catalog.create_table(
            "db.model", schema=self.schema,
            primary_key=self.key_names if self.primary_key else None,
            partition_keys=["p"] if self.partition else None, options=self.options())


@st.composite
def configs(draw) -> Config:
    primary_key = draw(st.booleans())
    partition = draw(st.sampled_from([None, "string", "int"]))
    if primary_key:
        bucket = draw(st.integers(1, 3))
    else:
        bucket = draw(st.sampled_from([-1, 1, 2, 3]))
    config = Config(primary_key, partition, primary_key and draw(st.booleans()), bucket,
                    draw(st.sampled_from(FORMATS)), primary_key and draw(st.booleans()),
                    primary_key and partition is not None and draw(st.booleans()))
    # cross-partition tables move keys with -D rows: tarn refuses ignore-delete on them
    return config if not (config.cross and config.ignore_delete) else replace(config, ignore_delete=False)


# ------------------------------------------------------------------------------------------
# Values

TEXT = st.text(alphabet=st.sampled_from("ab zé€ß日\U0001F600\u0000"), max_size=20)
VALUES = {
    "i": st.one_of(st.integers(-4, 4), st.integers(-2**31, 2**31 - 1)),
    "s": st.one_of(st.sampled_from(["", "a", "ab", "é", "日本", "x" * 17, "x" * 18]), TEXT),
    "dec": st.decimals(min_value=Decimal("-99999999.99"), max_value=Decimal("99999999.99"), places=2,
                       allow_nan=False, allow_infinity=False),
    "ts": st.one_of(st.sampled_from([datetime.datetime(1970, 1, 1), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999)]),
                    st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1))),
    "d": st.one_of(st.sampled_from([datetime.date(1970, 1, 1)]),
                   st.dates(datetime.date(1900, 1, 1), datetime.date(2200, 1, 1))),
    "b": st.booleans(),
    "f": st.one_of(st.sampled_from([0.0, 1.5, -1.5]),
                   st.floats(allow_nan=False, width=64).filter(lambda x: x != 0.0)),
}
KEY_VALUES = {
    "k": st.integers(0, 6),
    "ks": st.sampled_from(["", "a", "é", "ß\U0001F600"]),
}
PARTITIONS = {"string": ["a", "ü", "x y", "2026-11-20"], "int": [-1, 0, 7]}


def value_strategy(config: Config, name: str, nullable: bool = True):
    if name == "p":
        values = st.sampled_from(PARTITIONS[config.partition])
        # Append tables may hold null partition values (the default partition directory).
        return st.one_of(st.none(), values) if not config.primary_key and nullable else values
    if name in KEY_VALUES:
        return KEY_VALUES[name]
    return st.one_of(st.none(), VALUES[name]) if nullable else VALUES[name]


def rows_strategy(config: Config, min_size: int = 1, partition_value=...):
    fields = {n: value_strategy(config, n) for n in config.names}
    if partition_value is not ...:
        fields["p"] = st.just(partition_value)
    return st.lists(st.fixed_dictionaries(fields), min_size=min_size, max_size=MAX_ROWS)


def to_table(config: Config, rows: list[dict], names: list[str] | None = None) -> pa.Table:
    names = names or config.names
    schema = pa.schema([(n, t) for n, t in config.columns if n in names])
    return pa.Table.from_pylist([{n: r[n] for n in names} for r in rows], schema=schema)


# ------------------------------------------------------------------------------------------
# The oracle


class Oracle:
    """The table's content: {key: row} for primary-key tables, a list of rows otherwise."""

    def __init__(self, config: Config):
        self.config = config
        self.by_key: dict[tuple, dict] = {}
        self.bag: list[dict] = []

    def key(self, row: dict) -> tuple:
        return tuple(row[k] for k in self.config.key_names)

    def rows(self) -> list[dict]:
        return list(self.by_key.values()) if self.config.primary_key else list(self.bag)

    def write(self, rows: list[dict], kinds: list[str]) -> None:
        if not self.config.primary_key:
            self.bag.extend(rows)
            return
        for row, kind in zip(rows, kinds):
            if kind in ("+I", "+U"):
                self.by_key[self.key(row)] = row
            elif not self.config.ignore_delete:
                self.by_key.pop(self.key(row), None)

    def overwrite(self, rows: list[dict], doomed) -> None:
        """Remove the rows `doomed(row)` selects, then write `rows`."""
        if self.config.primary_key:
            self.by_key = {k: r for k, r in self.by_key.items() if not doomed(r)}
        else:
            self.bag = [r for r in self.bag if not doomed(r)]
        self.write(rows, ["+I"] * len(rows))

    def snapshot(self) -> list[dict]:
        return copy.deepcopy(self.rows())


def truth(p, row: dict):
    """Three-valued (SQL) truth of predicate `p` on one row: True, False or None (unknown)."""
    if isinstance(p, And):
        results = [truth(c, row) for c in p.children]
        return False if False in results else None if None in results else True
    if isinstance(p, Or):
        results = [truth(c, row) for c in p.children]
        return True if True in results else None if None in results else False
    if isinstance(p, Not):
        inner = truth(p.child, row)
        return None if inner is None else not inner
    value = row[p.column]
    if isinstance(p, IsNull):
        return (value is not None) if p.negated else (value is None)
    if value is None:
        return None
    if isinstance(p, Compare):
        return {"==": value == p.value, "!=": value != p.value, "<": value < p.value,
                "<=": value <= p.value, ">": value > p.value, ">=": value >= p.value}[p.op]
    if isinstance(p, In):
        return (value in p.values) != p.negated
    if isinstance(p, StartsWith):
        return value.startswith(p.prefix)
    raise TypeError(p)


def predicates(config: Config, seen: dict[str, list]):
    """Random predicates over the table's columns; literals come from written values or are new."""

    def literal(name):
        fresh = value_strategy(config, name, nullable=False)
        return st.one_of(st.sampled_from(seen[name]), fresh) if seen.get(name) else fresh

    def leaf(name):
        lit = literal(name)
        options = [
            st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), lit).map(
                lambda t: {"==": col(name).__eq__, "!=": col(name).__ne__, "<": col(name).__lt__,
                           "<=": col(name).__le__, ">": col(name).__gt__, ">=": col(name).__ge__}[t[0]](t[1])),
            st.lists(lit, min_size=1, max_size=3).map(lambda vs: col(name).isin(vs)),
            st.lists(lit, min_size=1, max_size=3).map(lambda vs: col(name).not_in(vs)),
            st.just(col(name).is_null()),
            st.just(col(name).is_not_null()),
        ]
        if name in config.string_columns:
            options.append(st.one_of(lit.map(lambda v: v[:2]), st.text("aéx日", max_size=2))
                           .map(lambda prefix: col(name).startswith(prefix)))
        return st.one_of(options)

    leaves = st.sampled_from(config.names).flatmap(leaf)
    return st.recursive(leaves, lambda kids: st.one_of(
        st.tuples(kids, kids).map(lambda t: t[0] & t[1]),
        st.tuples(kids, kids).map(lambda t: t[0] | t[1]),
        kids.map(lambda p: ~p)), max_leaves=4)


# ------------------------------------------------------------------------------------------
# Comparing reads


def canonical(rows: list[dict], names: list[str]) -> list[tuple]:
    return canonical_rows(rows, names, as_tuples=True)


def check_scan(table: tarn.Table, config: Config, expected: list[dict], snapshot_id=None,
               predicate=None, columns=None) -> None:
    result = table.scan(filter=predicate, columns=columns, snapshot_id=snapshot_id).to_arrow()
    names = columns or config.names
    assert result.column_names == names
    want = [r for r in expected if predicate is None or truth(predicate, r) is True]
    got = canonical(result.to_pylist(), names)
    assert got == canonical(want, names), (
        f"snapshot {snapshot_id}, filter {predicate}, columns {columns}:\n got {got}\nwant {canonical(want, names)}"
        f"\n{describe_files(table, snapshot_id)}")


def describe_files(table: tarn.Table, snapshot_id=None) -> str:
    """The snapshots and the live files of one, for failure messages."""
    snapshot = table.snapshot(snapshot_id) if snapshot_id else table.latest_snapshot()
    lines = [f"snapshots: {[(s.id, s.commit_kind) for s in table.snapshots()]}"]
    for e in table.planner(table.schema()).live_entries(snapshot):
        f = e.file
        lines.append(f"  bucket {e.bucket} {f.file_name} level {f.level} seq {f.min_sequence_number}.."
                     f"{f.max_sequence_number} rows {f.row_count} deletes {f.delete_row_count}")
    return "\n".join(lines)


def check_snapshots(table: tarn.Table, expected_by_snapshot: dict[int, list[dict]]) -> None:
    """Ids 1..n without gaps, LATEST hint, record counts against live files and delta manifests."""
    ids = table.snapshot_store.list_ids()
    assert ids == list(range(1, len(expected_by_snapshot) + 1)) == sorted(expected_by_snapshot)
    if not ids:
        return
    with open(os.path.join(table.root, "snapshot", "LATEST")) as f:
        assert int(f.read().strip()) == ids[-1]
    assert table.latest_snapshot().id == ids[-1]
    planner = table.planner(table.schema())
    previous_total = 0
    for sid in ids:
        snap = table.snapshot(sid)
        live = planner.live_entries(snap)
        assert snap.total_record_count == sum(e.file.row_count for e in live), f"snapshot {sid}"
        assert snap.delta_record_count == snap.total_record_count - previous_total, f"snapshot {sid}"
        delta = [e for m in planner.manifests.read_manifest_list(snap.delta_manifest_list)
                 for e in planner.manifests.read_manifest(m.file_name)]
        signed = sum(e.file.row_count if e.kind == ADD else -e.file.row_count for e in delta)
        assert snap.delta_record_count == signed, f"snapshot {sid}"
        previous_total = snap.total_record_count


# ------------------------------------------------------------------------------------------
# Operations


def op_write(data, table, config, oracle) -> None:
    rows = data.draw(rows_strategy(config), label="write rows")
    kinds = ["+I"] * len(rows)
    row_kind = None
    if config.primary_key and data.draw(st.booleans(), label="with row kinds"):
        kinds = data.draw(st.lists(st.sampled_from(KINDS), min_size=len(rows), max_size=len(rows)),
                          label="row kinds")
        row_kind = kinds
    elif data.draw(st.booleans(), label="explicit +I"):
        row_kind = "+I"
    table.write(to_table(config, rows), row_kind=row_kind)
    oracle.write(rows, kinds)


def op_delete(data, table, config, oracle) -> None:
    rows = data.draw(rows_strategy(config), label="delete keys")
    table.delete(to_table(config, rows, config.key_names))
    oracle.write(rows, ["-D"] * len(rows))


def op_overwrite(data, table, config, oracle) -> None:
    modes = ["whole"] + (["static", "dynamic"] if config.partition else [])
    mode = data.draw(st.sampled_from(modes), label="overwrite mode")
    if mode == "static":
        value = data.draw(value_strategy(config, "p"), label="static partition")
        rows = data.draw(rows_strategy(config, 0, partition_value=value), label="overwrite rows")
        table.overwrite(to_table(config, rows), partition={"p": value})
        oracle.overwrite(rows, lambda r: r["p"] == value)
    elif mode == "dynamic":
        rows = data.draw(rows_strategy(config, 0), label="overwrite rows")
        touched = {r["p"] for r in rows}
        table.overwrite(to_table(config, rows), dynamic=True)
        oracle.overwrite(rows, lambda r: r["p"] in touched)
    else:
        rows = data.draw(rows_strategy(config, 0), label="overwrite rows")
        table.overwrite(to_table(config, rows), dynamic=False)
        oracle.overwrite(rows, lambda r: True)


def op_scan(data, table, config, oracle, seen) -> None:
    predicate = data.draw(st.none() | predicates(config, seen), label="filter")
    columns = None
    if data.draw(st.booleans(), label="project"):
        order = data.draw(st.permutations(config.names), label="column order")
        columns = order[: data.draw(st.integers(1, len(order)), label="column count")]
    check_scan(table, config, oracle.rows(), predicate=predicate, columns=columns)


def remember_values(seen: dict[str, list], rows: list[dict]) -> None:
    for row in rows:
        for name, value in row.items():
            if value is not None and value not in seen.setdefault(name, []):
                seen[name].append(value)


def run_sequence(data, config: Config) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = config.create(tarn.Catalog(warehouse))
        oracle = Oracle(config)
        expected: dict[int, list[dict]] = {}
        seen: dict[str, list] = {}
        ops = ["write", "write", "scan"] + (["write", "delete"] if config.primary_key else [])
        ops += [] if config.cross else ["overwrite"]  # cross-partition tables refuse INSERT OVERWRITE
        for _ in range(data.draw(st.integers(1, MAX_OPS), label="number of ops")):
            op = data.draw(st.sampled_from(ops), label="op")
            before = table.latest_snapshot()
            if op == "scan":
                op_scan(data, table, config, oracle, seen)
                continue
            {"write": op_write, "delete": op_delete, "overwrite": op_overwrite}[op](data, table, config, oracle)
            remember_values(seen, oracle.rows())
            latest = table.latest_snapshot()
            new_ids = range(before.id + 1 if before else 1, latest.id + 1 if latest else 1)
            # One op makes one snapshot, plus a COMPACT one when the write triggered compaction.
            assert len(new_ids) <= 2
            for sid in new_ids:
                assert sid == new_ids[0] or table.snapshot(sid).commit_kind == "COMPACT"
                expected[sid] = oracle.snapshot()
            check_scan(table, config, oracle.rows())
        for sid, rows in expected.items():
            check_scan(table, config, rows, snapshot_id=sid)
        if expected:
            sid = data.draw(st.sampled_from(sorted(expected)), label="time travel with filter")
            predicate = data.draw(predicates(config, seen), label="time travel filter")
            check_scan(table, config, expected[sid], snapshot_id=sid, predicate=predicate)
        check_snapshots(table, expected)


@PROFILE
@given(config=configs(), data=st.data())
def test_random_operations_match_oracle(config, data):
    run_sequence(data, config)


@PROFILE
@given(config=configs().filter(lambda c: c.primary_key), data=st.data())
def test_random_primary_key_operations_match_oracle(config, data):
    run_sequence(data, config)


def test_negated_membership_drops_null_rows(tmp_path):
    """NOT (s IN (...)) is unknown, not true, on a NULL s (SQL semantics, as Paimon's NotIn)."""
    config = Config(False, None, False, -1, "parquet", False)
    table = config.create(tarn.Catalog(str(tmp_path)))
    base = {n: None for n in config.names}
    rows = [{**base, "k": 1, "s": "x"}, {**base, "k": 2, "s": None}, {**base, "k": 3, "s": "y"}]
    table.write(to_table(config, rows))
    for predicate, want in [(~col("s").isin(["x"]), [3]), (~col("s").not_in(["x"]), [1]),
                            (col("s").not_in(["x"]), [3]), (~(col("s") == "x"), [3])]:
        got = table.scan(filter=predicate, columns=["k"]).to_arrow().column("k").to_pylist()
        assert sorted(got) == want, predicate


def test_overwrite_never_compacts_the_files_it_replaces(tmp_path):
    """INSERT OVERWRITE writes with previous files ignored (as Java's withIgnorePreviousFiles):
    a bucket one run short of the compaction trigger must not compact the replaced files."""
    config = Config(True, None, False, 1, "parquet", False)
    table = config.create(tarn.Catalog(str(tmp_path)))
    base = {n: None for n in config.names}
    for k in range(4):
        table.write(to_table(config, [{**base, "k": k, "i": k}]))
    table.overwrite(to_table(config, [{**base, "k": 9, "i": 9}]))
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"] * 4 + ["OVERWRITE"]
    assert table.scan(columns=["k", "i"]).to_arrow().to_pylist() == [{"k": 9, "i": 9}]
    check_snapshots(table, {i: None for i in range(1, 6)})
