"""Stress tests (issue 9): short versions run by default, long ones with TARN_STRESS=long.

`pytest -m "not stress"` leaves them out of a fast loop."""

import os

import pytest

from tests.stress.workload import Warehouse

LONG = os.environ.get("TARN_STRESS", "").lower() == "long"


def pytest_configure(config):
    config.addinivalue_line("markers", "stress: concurrency and crash harness (issue 9); slow")


@pytest.fixture
def local_warehouse(tmp_path) -> Warehouse:
    return Warehouse(str(tmp_path / "warehouse"))
