from pathlib import Path

import pytest

import tarn
from tests.postgres import postgres_url  # noqa

TESTS = Path(__file__).resolve().parent
# Test groups by place: `-m "not spark and not interop and not stress and not s3"` is the fast
# loop of unit and model tests.
GROUP_OF_DIRECTORY = {"interop": "interop", "spark": "spark", "stress": "stress"}
MODEL_TESTS = {"test_model.py", "test_lsm_model.py", "test_maintenance_model.py"}


# With pytest-xdist (scripts/test.sh runs `-n 2 --dist loadgroup`): Spark's and the stress
# harness's tests run one after another on one worker — each starts JVMs or many processes, and
# two of them at once on 2 cores starve Spark's Python workers past their fixed 10 s to connect
# back — while the other worker takes the rest, a test file at a time.
HEAVY_DIRECTORIES = {"spark", "stress"}
# Spark tests that read through Spark's own scans (few Python workers) run with tests/test_docs.py,
# whose Spark guide starts a session on the other worker anyway: they share it, and the heavy
# worker, the longest of the two, gets shorter.
WITH_THE_DOCS = {"test_spark_tpch.py", "test_spark_pruning.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        relative = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
        if len(relative) > 1 and relative[0] in GROUP_OF_DIRECTORY:
            item.add_marker(GROUP_OF_DIRECTORY[relative[0]])
        if path.name in MODEL_TESTS:
            item.add_marker("model")
        heavy = len(relative) > 1 and relative[0] in HEAVY_DIRECTORIES
        if path.name in WITH_THE_DOCS:
            group = "test_docs.py"
        else:
            group = "heavy" if heavy else "/".join(relative)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "warehouse"))


@pytest.fixture(scope="session")
def s3_server():
    """A real S3 server (moto's, tests/s3server.py) with a bucket, for the session."""
    from tests.s3server import S3Server

    server = S3Server.start()
    yield server
    server.stop()


@pytest.fixture
def catalog_factory(tmp_path_factory):
    """New empty catalogs, one per call (for hypothesis tests that need a fresh table per example)."""
    return lambda: tarn.Catalog(str(tmp_path_factory.mktemp("warehouse")))
