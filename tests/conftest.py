import pytest

import tarn


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
