"""One SparkSession (local[2]) shared by every Spark test; skipped without pyspark or Java."""

from __future__ import annotations

import importlib.util
import shutil
import sys

import pytest


def _missing() -> str | None:
    """Why these tests cannot run here (None: they can)."""
    if importlib.util.find_spec("pyspark") is None:
        return "needs pyspark: pip install 'tarn-lake[spark]'"
    if shutil.which("java") is None:
        return "needs Java 17+ on the PATH (pyspark starts a JVM)"
    return None


SPARK_MISSING = _missing()


class _Unavailable(pytest.Module):
    """A test file reported as skipped, with the reason, instead of imported (its imports of
    pyspark would fail): the run shows the Spark tests it did not run."""

    def collect(self):
        raise pytest.skip.Exception(SPARK_MISSING, allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
    if SPARK_MISSING is not None and module_path.name.startswith("test_"):
        return _Unavailable.from_parent(parent, path=module_path)
    return None


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
