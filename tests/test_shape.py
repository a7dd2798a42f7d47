"""A table's shape (tarn/meta/shape.py): Java's bucket modes and the traits every layer asks."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from tarn.meta.shape import BucketMode, bucket_mode, bucket_problem, shape_of, shape_with

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])


@pytest.mark.parametrize("bucket, primary_keys, partition_keys, mode", [
    (4, ["k"], [], BucketMode.FIXED),
    (4, [], [], BucketMode.FIXED),
    (-1, ["k"], [], BucketMode.DYNAMIC),
    (-1, ["k", "p"], ["p"], BucketMode.DYNAMIC),
    (-1, ["k"], ["p"], BucketMode.CROSS_PARTITION),
    (-1, [], ["p"], BucketMode.UNAWARE),
    (-2, ["k"], ["p"], BucketMode.POSTPONE),
    (-2, [], [], None),
    (0, ["k"], [], None),
    (-3, [], [], None),
])
def test_bucket_modes_as_java_decides_them(bucket, primary_keys, partition_keys, mode):
    assert bucket_mode(bucket, primary_keys, partition_keys) is mode
    assert (bucket_problem(bucket, bool(primary_keys)) is None) == (mode is not None)
    shape = shape_of({"bucket": str(bucket)}, primary_keys, partition_keys)
    assert shape.bucket_mode is mode and shape.num_buckets == bucket
    assert shape.fixed_buckets == (bucket if mode is BucketMode.FIXED else -1)
    assert shape.dynamic == (mode in (BucketMode.DYNAMIC, BucketMode.CROSS_PARTITION))
    assert shape.postpone == (mode is BucketMode.POSTPONE)


def test_a_schema_decides_its_shape_once(catalog):
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options={
        "row-tracking.enabled": "true", "data-evolution.enabled": "true", "file.format": "PARQUET"})
    schema = table.schema()
    shape = schema.shape
    assert shape is schema.shape  # cached on the schema
    assert (shape.key_value, shape.bucket_mode, shape.tracks_rows, shape.evolves, shape.deletion_vectors,
            shape.file_format) == (False, BucketMode.UNAWARE, True, True, False, "parquet")
    assert shape.options.get("bucket") == "-1" and shape.options.int("snapshot.num-retained.min") == 10
    again = pickle.loads(pickle.dumps(schema))  # Spark ships schemas: the cache does not travel
    assert again == schema and again.shape.bucket_mode is BucketMode.UNAWARE


def test_dynamic_options_on_top_of_the_shape(catalog):
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "2"})
    schema = table.schema()
    assert schema.shape.options_with(None) is schema.shape.options
    assert schema.shape.options_with({"write-only": "true"}).bool("write-only")
    assert shape_with(schema, schema.shape.options) is schema.shape
    rescaled = shape_with(schema, schema.shape.options_with({"bucket": "8"}))
    assert rescaled.num_buckets == 8 and schema.shape.num_buckets == 2


def test_the_type_trait_table_covers_every_root_and_decides_the_rules(catalog):
    """types.TYPE_TRAITS: one row per type root; key, format and filter rules read it."""
    from tarn.errors import InvalidFilter, InvalidOption
    from tarn.types import ATOMIC_ROOTS, NESTED_ROOTS, TYPE_TRAITS, type_traits

    assert set(TYPE_TRAITS) == {*ATOMIC_ROOTS, *NESTED_ROOTS, "VARIANT", "GEOMETRY", "GEOGRAPHY", "BLOB", "VECTOR"}
    assert [r for r, t in TYPE_TRAITS.items() if not t.implemented] == ["BLOB", "VECTOR"]
    assert type_traits("NOT_A_TYPE").implemented is False
    nested = pa.schema([pa.field("k", pa.int64(), nullable=False), ("tags", pa.list_(pa.string()))])
    with pytest.raises(InvalidOption, match="'tags' has type ARRAY and cannot be a partition key"):
        catalog.create_table("db.a", nested, partition_keys=["tags"])
    with pytest.raises(InvalidOption, match="'tags' has type ARRAY and cannot be a primary key"):
        catalog.create_table("db.b", nested, primary_key=["k", "tags"])
    import tarn.variant
    variant = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", tarn.variant.ARROW_TYPE)])
    with pytest.raises(InvalidOption, match="'v' is a VARIANT, which Paimon stores in parquet files only"):
        catalog.create_table("db.c", variant, options={"file.format": "orc"})
    table = catalog.create_table("db.d", variant)
    with pytest.raises(InvalidFilter, match="'v' is a VARIANT"):
        table.scan(filter="v IS NULL").to_arrow()


def test_a_fixed_bucket_write_builds_no_index_parts(catalog):
    """The writer routes rows by bucket mode; HASH-index and deletion-vector parts are built
    only by writers that use them."""
    from tarn.write.writer import BUCKET_ROUTERS

    assert set(BUCKET_ROUTERS) == set(BucketMode) - {BucketMode.POSTPONE}  # postponed rows are not placed
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "2"})
    writer = table.new_writer()
    writer.write(pa.table({"k": [1, 2, 3], "p": ["a"] * 3, "v": ["x"] * 3}, schema=SCHEMA))
    table.commit(writer.prepare_commit())
    assert "hash_files" not in vars(writer) and "vector_files" not in vars(writer)
    dynamic = catalog.create_table("db.d", SCHEMA, primary_key=["k"])
    writer = dynamic.new_writer()
    writer.write(pa.table({"k": [1, 2, 3], "p": ["a"] * 3, "v": ["x"] * 3}, schema=SCHEMA))
    dynamic.commit(writer.prepare_commit())
    assert "hash_files" in vars(writer)
    assert dynamic.scan().count() == 3 and table.scan().count() == 3


def test_each_split_kind_has_its_reader(catalog):
    """The planner decides one kind per split; the first of SPLIT_READS taking it reads it."""
    from tarn.scan.reader import SPLIT_READS

    assert [r.name for r in SPLIT_READS] == ["postponed", "stitched", "raw", "newest-wins", "merged"]
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    table.write(pa.table({"k": [1, 2], "p": ["a", "a"], "v": ["x", "y"]}, schema=SCHEMA))
    table.write(pa.table({"k": [2], "p": ["a"], "v": ["z"]}, schema=SCHEMA))
    scan = table.scan()
    reader = scan.reader()
    kinds = [(split.kind, reader.split_read(split).name) for split in scan.plan()]
    assert kinds in ([("merged", "newest-wins")], [("merged", "merged")], [("raw", "raw")])
    table.compact(full=True)
    scan = table.scan()
    assert [(s.kind, scan.reader().split_read(s).name) for s in scan.plan()] == [("raw", "raw")]
    assert sorted(scan.to_arrow().column("v").to_pylist()) == ["x", "z"]
