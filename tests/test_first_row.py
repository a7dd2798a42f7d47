"""The first-row merge engine: the first +I/+U of each key survives, unchanged."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarn.errors import InvalidOption, SchemaMismatch
from tarn.lsm.first_row import merge_first_row, validate_first_row
from tarn.lsm.merge import DELETE, INSERT, SEQUENCE, UPDATE_AFTER, UPDATE_BEFORE, VALUE_KIND, MergeSpec
from tarn.types import INT, DataField

FIELDS = (DataField(0, "k", INT(False)), DataField(1, "v", INT()))


def table_of(rows):
    """rows: (k, v, sequence, kind), sorted by key then sequence."""
    k, v, seq, kind = zip(*rows)
    return pa.table({"k": pa.array(k, pa.int32()), "v": pa.array(v, pa.int32()),
                     SEQUENCE: pa.array(seq, pa.int64()), VALUE_KIND: pa.array(kind, pa.int8())})


def spec(ignore_delete=False):
    return MergeSpec(("k",), "first-row", ignore_delete, (), FIELDS, None)


def test_keeps_the_first_row_of_each_key():
    table = table_of([(1, 10, 3, INSERT), (1, 11, 5, UPDATE_AFTER), (2, None, 4, UPDATE_AFTER),
                      (2, 20, 7, INSERT), (3, 30, 9, INSERT)])
    out = merge_first_row(table, spec())
    assert out.to_pylist() == [
        {"k": 1, "v": 10, SEQUENCE: 3, VALUE_KIND: INSERT},
        {"k": 2, "v": None, SEQUENCE: 4, VALUE_KIND: UPDATE_AFTER},
        {"k": 3, "v": 30, SEQUENCE: 9, VALUE_KIND: INSERT},
    ]
    assert out.schema == table.schema


def test_unique_keys_pass_through():
    table = table_of([(1, 10, 3, INSERT), (2, 20, 4, INSERT)])
    assert merge_first_row(table, spec()).equals(table)
    empty = table.slice(0, 0)
    assert merge_first_row(empty, spec()).num_rows == 0


def test_retracts_are_refused_unless_ignored():
    table = table_of([(1, 10, 3, DELETE), (1, 11, 5, INSERT), (2, 20, 6, UPDATE_BEFORE)])
    with pytest.raises(SchemaMismatch, match="ignore-delete"):
        merge_first_row(table, spec())
    out = merge_first_row(table, spec(ignore_delete=True))
    assert out.to_pylist() == [{"k": 1, "v": 11, SEQUENCE: 5, VALUE_KIND: INSERT}]


rows_st = st.lists(st.tuples(st.integers(0, 4), st.one_of(st.none(), st.integers(0, 9)),
                             st.sampled_from([INSERT, UPDATE_AFTER, UPDATE_BEFORE, DELETE])),
                   min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(rows=rows_st, cut=st.integers(0, 30))
def test_matches_a_row_at_a_time_fold_and_remerges(rows, cut):
    data = sorted(((k, v, seq, kind) for seq, (k, v, kind) in enumerate(rows)), key=lambda r: (r[0], r[2]))
    expected = {}
    for k, v, seq, kind in data:
        if kind in (INSERT, UPDATE_AFTER) and k not in expected:
            expected[k] = {"k": k, "v": v, SEQUENCE: seq, VALUE_KIND: kind}
    table = table_of(data)
    once = merge_first_row(table, spec(True))
    assert once.to_pylist() == [expected[k] for k in sorted(expected)]
    # merged in two steps (split by sequence), then together: the same rows
    early = table.filter(pa.compute.less(table.column(SEQUENCE), cut))
    late = table.filter(pa.compute.greater_equal(table.column(SEQUENCE), cut))
    parts = pa.concat_tables([merge_first_row(p, spec(True)) for p in (early, late) if p.num_rows])
    again = merge_first_row(parts.sort_by([("k", "ascending"), (SEQUENCE, "ascending")]), spec(True))
    assert again.to_pylist() == once.to_pylist()


def test_validation():
    validate_first_row(FIELDS, ("k",), {"changelog-producer": "lookup"}, "db.t")
    with pytest.raises(InvalidOption, match="sequence.field"):
        validate_first_row(FIELDS, ("k",), {"sequence.field": "v"}, "db.t")
    with pytest.raises(InvalidOption, match="changelog-producer"):
        validate_first_row(FIELDS, ("k",), {"changelog-producer": "input"}, "db.t")
    with pytest.raises(InvalidOption, match="deletion-vectors.enabled"):
        validate_first_row(FIELDS, ("k",), {"deletion-vectors.enabled": "true"}, "db.t")
