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


def test_changed_bucket_count_refuses_writes_until_rescaled(catalog):
    t = catalog.create_table("db.rescale", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    keys = list(range(10))
    t.write(pa.table({"k": keys, "v": ["a"] * 10, "n": keys}))
    t.alter(SetOption("bucket", "4"))
    before = t.latest_snapshot().id
    with pytest.raises(tarn.TarnError, match="bucket=1.*Rescale"):
        t.write(pa.table({"k": keys, "v": ["b"] * 10, "n": keys}))
    assert t.latest_snapshot().id == before
    t.overwrite(t.scan().to_arrow())  # rescale: every file now has 4 buckets
    t.write(pa.table({"k": keys, "v": ["b"] * 10, "n": keys}))
    rows = t.scan().to_arrow()
    assert rows.num_rows == 10 and set(rows.column("v").to_pylist()) == {"b"}


def test_changed_bucket_count_checks_each_partition(catalog):
    schema = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.parts", schema=schema, primary_key=["dt", "k"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(pa.table({"dt": ["d1"], "k": [1], "v": ["a"]}))
    t.alter(SetOption("bucket", "2"))
    t.write(pa.table({"dt": ["d2"], "k": [1], "v": ["a"]}))  # a new partition takes the new count
    with pytest.raises(tarn.TarnError, match="dt.*d1"):
        t.write(pa.table({"dt": ["d1"], "k": [1], "v": ["b"]}))
    assert t.scan().to_arrow().num_rows == 2


def test_file_index_on_a_type_paimon_cannot_index_fails_at_creation(tmp_path):
    import pyarrow as pa
    import pytest

    import tarn

    catalog = tarn.Catalog(str(tmp_path))
    with pytest.raises(tarn.InvalidOption, match="bloom-filter.*'b'.*BOOLEAN"):
        catalog.create_table("t", schema=pa.schema([("b", pa.bool_())]),
                             options={"file-index.bloom-filter.columns": "b"})


def test_validate_change_refuses_a_changed_immutable_option(catalog):
    from tarn.meta.schema import apply_changes
    from tarn.ops.validate import validate_change

    before = agg_table(catalog).schema()
    after = apply_changes(before, [SetOption("merge-engine", "deduplicate")])
    with pytest.raises(tarn.InvalidOption, match="'merge-engine' cannot be changed after creation"):
        validate_change(before, after, "db.agg")
    validate_change(before, apply_changes(before, [SetOption("fields.n.aggregate-function", "sum")]), "db.agg")
