"""`import tarn` costs little: it loads `tarn.errors` only, the public names come on first use,
and a first table never loads what only some tables or tools need (ORC, sketches, Spark, the
dataframe libraries, the command line). Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tarn

# never loaded by `import tarn`
HEAVY = ["pyarrow", "numpy", "fastavro", "pyarrow.orc", "pyarrow.dataset", "pyspark", "datasketches", "pyroaring",
         "zstandard", "pandas", "polars", "duckdb", "tarn.spark", "tarn.cli", "tarn.table", "tarn.catalog"]
# never loaded by creating, writing and reading a parquet primary-key table
ONLY_SOME_TABLES = ["pyarrow.orc", "pyspark", "datasketches", "zstandard", "polars", "duckdb", "tarn.spark",
                    "tarn.cli", "typer", "rich"]


def loaded_after(code: str, modules: list[str]) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `code`."""
    script = f"import json, sys\n{code}\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_tarn_loads_nothing_heavy():
    assert loaded_after("import tarn", HEAVY) == []
    assert loaded_after("import tarn", ["tarn", "tarn.errors"]) == ["tarn", "tarn.errors"]


def test_the_public_classes_load_no_optional_or_slow_module():
    """pyarrow.dataset imports pandas (~0.5 s) when it is installed: modules import it where used."""
    code = "import tarn; [getattr(tarn, name) for name in tarn.__all__]"
    assert loaded_after(code, ONLY_SOME_TABLES + ["pyarrow.dataset", "pandas"]) == []


def test_a_first_parquet_table_loads_only_what_it_uses(tmp_path):
    code = f"""
import pyarrow as pa, tarn
t = tarn.Catalog({str(tmp_path)!r}).create_table(
    "db.t", schema=pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_key=["k"], options={{"bucket": "2"}})
t.write(pa.table({{"k": [1, 2], "v": ["a", "b"]}}))
assert t.scan(filter=tarn.col("k") == 1).to_arrow().to_pylist() == [{{"k": 1, "v": "a"}}]
"""
    assert loaded_after(code, ONLY_SOME_TABLES + ["fastavro", "pyarrow.parquet"]) == ["fastavro", "pyarrow.parquet"]


def test_orc_tables_load_orc_when_used(tmp_path):
    code = f"""
import pyarrow as pa, tarn
t = tarn.Catalog({str(tmp_path)!r}).create_table("db.t", schema=pa.schema([("k", pa.int64())]),
                                                 options={{"file.format": "orc"}})
t.write(pa.table({{"k": [1, 2]}}))
assert t.scan().to_arrow().num_rows == 2
"""
    assert loaded_after(code, ["pyarrow.orc"]) == ["pyarrow.orc"]


def test_public_names_resolve_on_first_use():
    from tarn.catalog import Catalog
    from tarn.scan.predicate import col

    assert tarn.Catalog is Catalog and tarn.col is col
    assert all(getattr(tarn, name) is not None for name in tarn.__all__)
    assert set(tarn.__all__) <= set(dir(tarn))
    assert loaded_after("from tarn import *; print(Catalog, AddColumn, TarnError)", ["tarn.catalog"]) == [
        "tarn.catalog"]


def test_submodules_resolve_as_attributes():
    assert loaded_after("import tarn; tarn.types.INT()", ["tarn.types"]) == ["tarn.types"]
    assert tarn.partition.__name__ == "tarn.partition"


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        tarn.nothing_here
    assert not hasattr(tarn, "Catalogue")


def test_a_plain_write_and_read_need_no_pandas(tmp_path):
    """Issue 39: tarn's write and read paths never import pandas (pyarrow itself may, when it is
    installed: `pa.array` probes for it). With pandas made unimportable, a primary-key table is
    created, written with a pa.Table, upserted, deleted from and read back."""
    code = f"""
import sys
class NoPandas:  # any `import pandas` now raises ImportError (pyarrow copes with that)
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is blocked in this test")
sys.meta_path.insert(0, NoPandas())
import pyarrow as pa, tarn
t = tarn.Catalog({str(tmp_path)!r}).create_table(
    "db.t", schema=pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_key=["k"], options={{"bucket": "2"}})
t.write(pa.table({{"k": [1, 2, 3], "v": ["a", "b", "c"]}}))
t.write(pa.table({{"k": [2], "v": ["B"]}}))
t.delete(filter="k = 3")
rows = t.scan(filter="k > 0").to_arrow().sort_by("k").to_pylist()
assert rows == [{{"k": 1, "v": "a"}}, {{"k": 2, "v": "B"}}], rows
"""
    assert loaded_after(code, ["tarn.table", "pandas"]) == ["tarn.table"]
