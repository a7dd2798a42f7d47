"""Stress tests (issue 9): short versions run by default, long ones with TARN_STRESS=long.

Every test here carries the `stress` marker (pyproject.toml): `pytest -m "not stress"` leaves
them out of a fast loop."""

import os

import pytest

from tests.stress.workload import Warehouse

LONG = os.environ.get("TARN_STRESS", "").lower() == "long"


@pytest.fixture
def local_warehouse(tmp_path) -> Warehouse:
    return Warehouse(str(tmp_path / "warehouse"))
