"""The pypaimon-rust 0.4.0 venv and a subprocess bridge to ``rust_peer.py``.

pypaimon-rust (the Rust Paimon core behind a Python module, ``import pypaimon_rust``) lives in
its own venv ``<repo>/.venv-pypaimon-rust`` beside pyarrow (its wheel imports pyarrow but does
not depend on it); tests talk to it through ``rust_peer.py`` with a JSON spec on stdin, a JSON
answer on stdout and Arrow IPC files for rows, as they talk to pypaimon 2.1 through
``pypaimon_env.py``.
"""

from __future__ import annotations

from pathlib import Path

from tests.interop.peer_venv import PeerVenv

RUST_VERSION = "0.4.0"
RUST_REQUIREMENTS = (f"pypaimon-rust=={RUST_VERSION}", "pyarrow>=19")
VENV_DIR_NAME = ".venv-pypaimon-rust"
PYTHON_OVERRIDE_ENV = "TARN_PYPAIMON_RUST_PYTHON"  # use this interpreter instead of the managed venv
PEER_SCRIPT = Path(__file__).resolve().with_name("rust_peer.py")


class RustPeerError(RuntimeError):
    """The pypaimon-rust peer failed; the message carries its stderr."""


RUST = PeerVenv("pypaimon-rust", VENV_DIR_NAME, RUST_REQUIREMENTS, "pypaimon-rust", RUST_VERSION,
                PYTHON_OVERRIDE_ENV, PEER_SCRIPT, RustPeerError, probe_imports="import pyarrow; ")


def ensure_rust_venv(repo_root: Path) -> Path:
    """The python of ``<repo_root>/.venv-pypaimon-rust``, created with pypaimon-rust 0.4.0 if needed."""
    return RUST.ensure(repo_root)


def rust_python() -> Path:
    return RUST.python


def run_rust_peer(command: str, spec: dict, timeout: float = 300) -> dict:
    """Run ``rust_peer.py <command>`` under pypaimon-rust's python with ``spec`` as JSON on stdin."""
    return RUST.run(command, spec, timeout)
