"""One SparkSession (local[2]) shared by every Spark test; skipped without pyspark or Java."""

from __future__ import annotations

import importlib.util
import shutil
import sys

import pytest

SPARK_AVAILABLE = importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None
if not SPARK_AVAILABLE:  # pyspark (pip install 'tarn-lake[spark]') and Java 17+ are needed
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def spark():
    import tarn.spark

    session = tarn.spark.session("local[2]", "tarn-tests", {"spark.pyspark.python": sys.executable})
    yield session
    # Left running: tests/test_docs.py runs the Spark guide in the same session afterwards.


@pytest.fixture
def path(tmp_path):
    """An absolute table path in a fresh directory."""
    return str(tmp_path / "wh" / "t")


def pytest_configure(config):
    # pyspark 4.3 warns on every session start that pandas 3 is newer than it knows.
    config.addinivalue_line("filterwarnings", "ignore:PySpark does not yet fully support pandas:FutureWarning")
