"""The catalog port (tarn/catalog/): the directory catalog implements TableCatalog, including
rename and alter, and names the table it could not find or create."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
from tarn.catalog import FileSystemCatalog, TableCatalog
from tarn.errors import InvalidArgument, TableAlreadyExists, TableNotFound, TarnError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def test_the_directory_catalog_is_a_table_catalog(catalog):
    assert isinstance(catalog, TableCatalog) and isinstance(catalog, FileSystemCatalog)
    assert tarn.Catalog is FileSystemCatalog and catalog.name == catalog.warehouse
    table = catalog.create_table("db.t", SCHEMA)
    assert catalog.commit_point(table) == table.snapshot_commit  # its own snapshot directory


def test_rename_table_moves_it_with_its_history(catalog):
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    table.write(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table.create_tag("first")
    catalog.rename_table("db.t", "other.moved")
    assert not catalog.table_exists("db.t") and catalog.list_tables("other") == ["moved"]
    moved = catalog.load_table("other.moved")
    assert moved.scan().to_arrow().sort_by("k").column("v").to_pylist() == ["a", "b"]
    assert [t.name for t in moved.list_tags()] == ["first"]
    moved.write(pa.table({"k": [3], "v": ["c"]}, schema=SCHEMA))
    assert moved.scan().count() == 3


def test_rename_and_alter_refuse_clearly(catalog):
    catalog.create_table("db.a", SCHEMA)
    catalog.create_table("db.b", SCHEMA)
    with pytest.raises(TableNotFound, match="db.missing"):
        catalog.rename_table("db.missing", "db.c")
    with pytest.raises(TableAlreadyExists, match="db.b"):
        catalog.rename_table("db.a", "db.b")
    with pytest.raises(InvalidArgument, match="branches"):
        catalog.rename_table("db.a$branch_x", "db.c")
    schema = catalog.alter_table("db.a", tarn.SetOption("snapshot.num-retained.min", "3"))
    assert schema.options["snapshot.num-retained.min"] == "3"
    assert catalog.load_table("db.a").schema().id == schema.id


def test_drop_database_of_the_directory_catalog(tmp_path):
    catalog = FileSystemCatalog(str(tmp_path))
    catalog.create_table("shop.orders", pa.schema([("id", pa.int64())]))
    with pytest.raises(TarnError, match=r"database shop is not empty: it holds table\(s\) \['orders'\]"):
        catalog.drop_database("shop")
    assert catalog.table_exists("shop.orders")
    catalog.drop_database("shop", cascade=True)
    assert catalog.list_databases() == [] and not (tmp_path / "shop.db").exists()
    with pytest.raises(TarnError, match="database shop does not exist"):
        catalog.drop_database("shop")
    catalog.drop_database("shop", ignore_if_missing=True)
