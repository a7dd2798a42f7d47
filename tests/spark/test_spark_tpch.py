"""TPC-H by name (issue 42): the eight queries of bench/bench_tpch.py over tarn tables of a
catalog (append tables, one commit each), through the attached views (plain `spark.sql`) and through `tarn.spark.sql`, give the
rows Spark gives over the generator's parquet (tpchgen-cli, scale factor 0.01)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tarn
import tarn.spark
from bench.bench_tpch import KEYS, QUERIES, by_names, normalized

SCALE = "0.01"


def plain_strings(table: pa.Table) -> pa.Table:
    """The generator's string_view columns as strings."""
    fields = [pa.field(f.name, pa.string(), f.nullable) if f.type == pa.string_view() else f for f in table.schema]
    return table.cast(pa.schema(fields))


@pytest.fixture(scope="module")
def tpch(spark, tmp_path_factory):
    generator = shutil.which("tpchgen-cli", path=os.path.dirname(sys.executable)) or shutil.which("tpchgen-cli")
    if generator is None:
        pytest.fail("tpchgen-cli is missing: it is in the test extra (pip install -e '.[test]')")
    data = tmp_path_factory.mktemp("tpch")
    subprocess.run([generator, "parquet", "-s", SCALE, "-o", str(data), "-T", ",".join(KEYS), "--no-progress"],
                   check=True)
    catalog = tarn.Catalog(str(tmp_path_factory.mktemp("lake")))
    for name in KEYS:  # append tables (bench/bench_tpch.py measures primary-key tables)
        rows = plain_strings(pq.read_table(data / f"{name}.parquet"))
        catalog.create_table(f"tpch.{name}", rows.schema).write(rows)
    for name in KEYS:
        spark.read.parquet(str(data / f"{name}.parquet")).createOrReplaceTempView(f"pq_{name}")
    expected = {q: normalized(spark.sql(by_names(sql, "pq_{}")).collect()) for q, sql in QUERIES.items()}
    return catalog, expected


def test_tpch_by_name_through_attached_views(spark, tpch):
    catalog, expected = tpch
    tarn.spark.attach(spark, catalog)
    for q, sql in QUERIES.items():
        assert normalized(spark.sql(by_names(sql, "`tpch.{}`")).collect()) == expected[q], q


def test_tpch_by_name_through_tarn_spark_sql(spark, tpch):
    catalog, expected = tpch
    tarn.spark.attach(spark, catalog, name="lake")
    for q, sql in QUERIES.items():
        assert normalized(tarn.spark.sql(spark, by_names(sql, "lake.tpch.{}")).collect()) == expected[q], q
        assert expected[q], q  # the scale factor is big enough for every query to find rows
