"""DuckDB with its Iceberg extension, in a venv of its own, and a bridge to ``duckdb_iceberg_peer.py``.

The extension comes from PyPI as ``duckdb-extension-iceberg``: a wheel holding the binary
``duckdb_extension_iceberg/extensions/v<version>/iceberg.duckdb_extension``, built for exactly one
DuckDB release (``duckdb==<version>`` is its only requirement; DuckDB refuses to load it into any
other release). It needs DuckDB's Avro extension for manifests, shipped the same way as
``duckdb-extension-avro``. tarn's own venv tracks the newest DuckDB, so the three pinned packages
(plus pyarrow, for rows travelling as Arrow IPC) live in ``<repo>/.venv-duckdb-iceberg``, created on
first use; the peer LOADs both binaries by path, so nothing is fetched at run time.
"""

from __future__ import annotations

from pathlib import Path

from tests.interop.peer_venv import PeerVenv

DUCKDB_VERSION = "1.5.5"  # the newest release with a matching duckdb-extension-iceberg wheel
DUCKDB_REQUIREMENTS = (f"duckdb=={DUCKDB_VERSION}", f"duckdb-extension-iceberg=={DUCKDB_VERSION}",
                       f"duckdb-extension-avro=={DUCKDB_VERSION}", "pyarrow>=19")
VENV_DIR_NAME = ".venv-duckdb-iceberg"
PYTHON_OVERRIDE_ENV = "TARN_DUCKDB_ICEBERG_PYTHON"  # use this interpreter instead of the managed venv
PEER_SCRIPT = Path(__file__).resolve().with_name("duckdb_iceberg_peer.py")


class DuckDBPeerError(RuntimeError):
    """The DuckDB Iceberg peer failed; the message carries its stderr."""


DUCKDB_ICEBERG = PeerVenv("duckdb-iceberg", VENV_DIR_NAME, DUCKDB_REQUIREMENTS, "duckdb-extension-iceberg",
                          DUCKDB_VERSION, PYTHON_OVERRIDE_ENV, PEER_SCRIPT, DuckDBPeerError,
                          probe_imports="import pyarrow, duckdb_extension_avro; ")


def run_duckdb(command: str, spec: dict, timeout: float = 300) -> dict:
    """Run ``duckdb_iceberg_peer.py <command>`` under the peer venv's python with ``spec`` on stdin."""
    return DUCKDB_ICEBERG.run(command, spec, timeout)
