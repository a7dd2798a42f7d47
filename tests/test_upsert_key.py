"""`upsert-key` (Paimon 2.0, issue 43 item 2): batch writes to an append table with an upsert key
merge the rows in as Paimon's Spark INSERT INTO does (RewriteUpsertTable): a model test
against a list of rows, with and without `sequence.field`, NULL keys, deletion vectors."""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tarn.errors import InvalidArgument, InvalidOption
from tarn.ops.upsert_key import latest_per_key

SCHEMA = pa.schema([("k", pa.int64()), ("k2", pa.string()), ("v", pa.int64()), ("s", pa.int64())])
KEYS = ("k", "k2")


def new_table(options: dict) -> tarn.Table:
    catalog = tarn.Catalog(tempfile.mkdtemp())
    return catalog.create_table("db.t", SCHEMA, options={"upsert-key": "k,k2", **options})


def key_of(row: dict) -> tuple:
    return tuple(row[k] for k in KEYS)  # None == None: the null-safe match


def model_write(model: list[dict], batch: list[dict], sequence: bool) -> list[dict]:
    """The rows after Paimon's upsert-key INSERT; raises ValueError where Spark's MERGE fails."""
    if sequence:
        best: dict[tuple, tuple] = {}
        for position, row in enumerate(batch):
            rank = (row["s"] is not None, row["s"] if row["s"] is not None else 0, position)
            if key_of(row) not in best or rank > best[key_of(row)][0]:
                best[key_of(row)] = (rank, row)
        kept = {id(r) for _, r in best.values()}
        batch = [r for r in batch if id(r) in kept]
    by_key: dict[tuple, list[dict]] = {}
    for row in batch:
        by_key.setdefault(key_of(row), []).append(row)
    result, target_keys = [], {key_of(r) for r in model}
    for row in model:
        matches = by_key.get(key_of(row), [])
        if len(matches) > 1:
            raise ValueError("a table row matches two source rows")
        newer = matches and (not sequence or (row["s"] is not None and matches[0]["s"] is not None
                                              and row["s"] <= matches[0]["s"]))
        result.append(matches[0] if newer else row)
    result += [r for r in batch if key_of(r) not in target_keys]
    return result


def canonical(rows: list[dict]) -> list:
    return sorted((tuple(r[n] for n in SCHEMA.names) for r in rows), key=repr)


row_strategy = st.fixed_dictionaries({
    "k": st.one_of(st.none(), st.integers(0, 3)),
    "k2": st.one_of(st.none(), st.sampled_from(["a", "b"])),
    "v": st.integers(0, 1000),
    "s": st.one_of(st.none(), st.integers(0, 3)),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(row_strategy, max_size=8), min_size=1, max_size=5),
       sequence=st.booleans(), vectors=st.booleans())
def test_writes_follow_the_model(batches, sequence, vectors):
    options = {"sequence.field": "s"} if sequence else {}
    if vectors:
        options["deletion-vectors.enabled"] = "true"
    table = new_table(options)
    model: list[dict] = []
    for batch in batches:
        try:
            expected = model_write(model, batch, sequence)
        except ValueError:
            before = table.latest_snapshot()
            with pytest.raises(InvalidArgument, match="more than one source row"):
                table.write(pa.Table.from_pylist(batch, schema=SCHEMA))
            assert table.latest_snapshot() == before  # nothing committed
            continue
        table.write(pa.Table.from_pylist(batch, schema=SCHEMA))
        model = expected
        assert canonical(table.scan().to_arrow().to_pylist()) == canonical(model)


def test_report_counts_and_one_snapshot():
    table = new_table({"sequence.field": "s"})
    table.write(pa.table({"k": [1, 2], "k2": ["a", "b"], "v": [1, 2], "s": [1, 1]}, schema=SCHEMA))
    result = table.write(pa.table({"k": [1, 3], "k2": ["a", "c"], "v": [10, 30], "s": [2, 2]}, schema=SCHEMA))
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    assert table.latest_snapshot().id == 2
    assert canonical(table.scan().to_arrow().to_pylist()) == canonical([
        {"k": 1, "k2": "a", "v": 10, "s": 2}, {"k": 2, "k2": "b", "v": 2, "s": 1},
        {"k": 3, "k2": "c", "v": 30, "s": 2}])


def test_overwrite_replaces_rows_as_usual():
    table = new_table({})
    table.write(pa.table({"k": [1], "k2": ["a"], "v": [1], "s": [1]}, schema=SCHEMA))
    table.overwrite(pa.table({"k": [1, 1], "k2": ["a", "a"], "v": [2, 3], "s": [1, 1]}, schema=SCHEMA))
    assert sorted(table.scan().to_arrow().column("v").to_pylist()) == [2, 3]


def test_latest_per_key_keeps_greatest_sequence_nulls_lowest_last_of_ties():
    rows = pa.table({"k": [1, 1, 1, None, None, 2], "k2": ["a"] * 6, "v": [0, 1, 2, 3, 4, 5],
                     "s": [None, 7, 7, 1, None, None]}, schema=SCHEMA)
    kept = latest_per_key(rows, list(KEYS), ["s"])
    assert kept.column("v").to_pylist() == [2, 3, 5]


def test_creation_checks():
    catalog = tarn.Catalog(tempfile.mkdtemp())
    with pytest.raises(InvalidOption, match="upsert-key"):
        catalog.create_table("db.pk", SCHEMA, primary_key=["k"], options={"upsert-key": "k"})
    with pytest.raises(InvalidOption, match="unknown column 'nope'"):
        catalog.create_table("db.bad", SCHEMA, options={"upsert-key": "nope"})
    catalog.create_table("db.seq", SCHEMA, options={"sequence.field": "s"})  # Java allows it on append tables
