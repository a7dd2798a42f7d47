import pytest

import tarn


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "warehouse"))
