"""One validation path: creation and alter refuse the same schemas."""

import pyarrow as pa
import pytest

import tarn
from tarn.meta.schema import SetOption
from tarn.types import INT

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("n", pa.int64())])


def agg_table(catalog):
    return catalog.create_table("db.agg", schema=SCHEMA, primary_key=["k"],
                                options={"bucket": "1", "merge-engine": "aggregation"})


@pytest.mark.parametrize("option, value, match", [
    ("fields.v.aggregate-function", "sum", "'v'"),
    ("file.format", "csv", "file.format"),
    ("fields.nope.aggregate-function", "sum", "nope"),
    ("snapshot.num-retained.min", "0", "snapshot.num-retained.min"),
])
def test_alter_runs_the_creation_checks(catalog, option, value, match):
    with pytest.raises(tarn.TarnError, match=match):
        catalog.create_table("db.new", schema=SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "merge-engine": "aggregation", option: value})
    t = agg_table(catalog)
    before = t.schema()
    with pytest.raises(tarn.TarnError, match=match):
        t.alter(SetOption(option, value))
    assert t.schema() == before
    t.write(pa.table({"k": [1], "v": ["a"], "n": [1]}))  # the table still writes
    t.alter(SetOption("fields.n.aggregate-function", "sum"))
    t.write(pa.table({"k": [1], "v": ["b"], "n": [2]}))
    assert t.scan().to_arrow().to_pylist() == [{"k": 1, "v": "b", "n": 3}]


def test_alter_of_a_table_tarn_cannot_write_still_evolves(catalog):
    """A table another engine made (here: dynamic bucket mode) keeps loading and evolving."""
    t = catalog.create_table("db.dyn", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    import json
    import os

    path = os.path.join(t.root, "schema", "schema-0")
    with open(path) as f:
        schema = json.load(f)
    schema["options"]["bucket"] = "-1"
    with open(path, "w") as f:
        json.dump(schema, f)
    t = catalog.load_table("db.dyn")
    t.alter(tarn.AddColumn("extra", INT()))
    assert "extra" in t.schema().field_names
    with pytest.raises(tarn.InvalidOption, match="file.format"):  # new problems are still refused
        t.alter(SetOption("file.format", "csv"))
