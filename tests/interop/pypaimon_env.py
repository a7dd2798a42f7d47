"""The pypaimon 2.1 venv and a subprocess bridge to ``peer.py``.

pypaimon 2.1.0 pins pyarrow < 20, so it lives in its own venv
``<repo>/.venv-pypaimon``; tests talk to it through ``peer.py`` with a JSON spec
on stdin, a JSON answer on stdout and Arrow IPC files for rows.
"""

from __future__ import annotations

from pathlib import Path

from tests.interop.peer_venv import REPO_ROOT, PeerVenv, venv_python  # noqa: F401 (re-exported)

PYPAIMON_REQUIREMENT = "pypaimon==2.1.0"
PYPAIMON_VERSION = "2.1.0"
VENV_DIR_NAME = ".venv-pypaimon"
PYTHON_OVERRIDE_ENV = "TARN_PYPAIMON_PYTHON"  # use this interpreter instead of the managed venv
PEER_SCRIPT = Path(__file__).resolve().with_name("peer.py")


class PeerError(RuntimeError):
    """The pypaimon peer failed; the message carries its stderr."""


PYPAIMON = PeerVenv("pypaimon", VENV_DIR_NAME, (PYPAIMON_REQUIREMENT,), "pypaimon", PYPAIMON_VERSION,
                    PYTHON_OVERRIDE_ENV, PEER_SCRIPT, PeerError)


def ensure_pypaimon_venv(repo_root: Path) -> Path:
    """The python of ``<repo_root>/.venv-pypaimon``, created with pypaimon 2.1.0 if needed."""
    return PYPAIMON.ensure(repo_root)


def peer_python() -> Path:
    return PYPAIMON.python


def run_peer(command: str, spec: dict, timeout: float = 300) -> dict:
    """Run ``peer.py <command>`` under pypaimon's python with ``spec`` as JSON on stdin."""
    return PYPAIMON.run(command, spec, timeout)
