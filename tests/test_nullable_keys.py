"""`primary-key.nullable` (Paimon 2.1, issue 43 item 2): primary-key columns stored nullable,
NULL key parts merged null-safely (NULL equals NULL) in every read and compaction path, against
a dict model; creation rules as Java's."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tarn.errors import InvalidOption

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.int64())])
KEYS = pa.schema([("a", pa.int64()), ("b", pa.string())])
LAYOUTS = [{"bucket": "1"}, {"bucket": "2", "deletion-vectors.enabled": "true"}, {"bucket": "-1"},
           {"bucket": "1", "changelog-producer": "lookup"}, {"bucket": "1", "merge-engine": "partial-update"},
           {"bucket": "1", "num-sorted-run.compaction-trigger": "2"}]

key_strategy = st.tuples(st.one_of(st.none(), st.integers(0, 2)), st.one_of(st.none(), st.sampled_from("xy")))
ops_strategy = st.lists(st.tuples(st.sampled_from(["write", "write", "delete", "compact"]),
                                  st.lists(key_strategy, min_size=1, max_size=5, unique=True)),
                        min_size=1, max_size=7)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(ops=ops_strategy, layout=st.sampled_from(LAYOUTS))
def test_null_keys_merge_like_the_model(tmp_path_factory, ops, layout):
    table = tarn.Catalog(str(tmp_path_factory.mktemp("wh"))).create_table(
        "db.t", SCHEMA, primary_key=["a", "b"], options={"primary-key.nullable": "true", **layout})
    partial = layout.get("merge-engine") == "partial-update"
    model: dict[tuple, int] = {}
    version = 0
    for kind, keys in ops:
        if kind == "compact":
            table.compact(full=True)
        elif kind == "delete" and not partial:
            table.delete(pa.table({"a": [k[0] for k in keys], "b": [k[1] for k in keys]}, schema=KEYS))
            for k in keys:
                model.pop(k, None)
        elif kind == "write":
            version += 1
            table.write(pa.table({"a": [k[0] for k in keys], "b": [k[1] for k in keys],
                                  "v": [version] * len(keys)}, schema=SCHEMA))
            model.update({k: version for k in keys})
        got = table.scan().to_arrow().to_pylist()
        assert len(got) == len({(r["a"], r["b"]) for r in got})  # every key once
        assert {(r["a"], r["b"]): r["v"] for r in got} == model


def test_keys_are_stored_nullable_and_need_a_primary_key(tmp_path):
    catalog = tarn.Catalog(str(tmp_path))
    table = catalog.create_table("db.t", SCHEMA, primary_key=["a", "b"], options={"primary-key.nullable": "true"})
    fields = json.load(open(f"{table.root}/schema/schema-0"))["fields"]
    assert [f["type"] for f in fields] == ["BIGINT", "STRING", "BIGINT"]  # Java: no NOT NULL on the keys
    strict = catalog.create_table("db.s", SCHEMA, primary_key=["a", "b"])
    with pytest.raises(tarn.errors.TarnError):
        strict.write(pa.table({"a": [None], "b": ["x"], "v": [1]}, schema=SCHEMA))
    with pytest.raises(InvalidOption, match="primary keys"):
        catalog.create_table("db.n", SCHEMA, options={"primary-key.nullable": "true"})
