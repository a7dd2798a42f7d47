"""The pypaimon 2.1 venv and a subprocess bridge to ``peer.py``.

pypaimon 2.1.0 pins pyarrow < 20, so it lives in its own venv
``<repo>/.venv-pypaimon``; tests talk to it through ``peer.py`` with a JSON spec
on stdin, a JSON answer on stdout and Arrow IPC files for rows.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PYPAIMON_REQUIREMENT = "pypaimon==2.1.0"
PYPAIMON_VERSION = "2.1.0"
VENV_DIR_NAME = ".venv-pypaimon"
PYTHON_OVERRIDE_ENV = "TARN_PYPAIMON_PYTHON"  # use this interpreter instead of the managed venv
REPO_ROOT = Path(__file__).resolve().parents[2]
PEER_SCRIPT = Path(__file__).resolve().with_name("peer.py")


class PeerError(RuntimeError):
    """The pypaimon peer failed; the message carries its stderr."""


def venv_python(venv_dir: Path) -> Path:
    if os.name == "nt":
        return venv_dir / "Scripts" / "python.exe"
    return venv_dir / "bin" / "python"


def has_pypaimon(python: Path) -> bool:
    """True when ``python`` runs and imports pypaimon at the pinned version."""
    if not python.exists():
        return False
    probe = ("import importlib.metadata as m, sys; "
             f"sys.exit(0 if m.version('pypaimon') == '{PYPAIMON_VERSION}' else 1)")
    result = subprocess.run([str(python), "-c", probe], capture_output=True)
    return result.returncode == 0


def _install(venv_dir: Path) -> None:
    python = venv_python(venv_dir)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True,
                       capture_output=True)
    result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", PYPAIMON_REQUIREMENT],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise PeerError(f"pip install {PYPAIMON_REQUIREMENT} into {venv_dir} failed:\n"
                        f"{result.stdout}\n{result.stderr}")


def ensure_pypaimon_venv(repo_root: Path) -> Path:
    """The python of ``<repo_root>/.venv-pypaimon``, created with pypaimon 2.1.0 if needed.

    Idempotent; an exclusive lock file (in the temp dir, keyed by the venv path)
    keeps parallel test processes from installing at the same time.
    """
    venv_dir = Path(repo_root) / VENV_DIR_NAME
    python = venv_python(venv_dir)
    if has_pypaimon(python):
        return python
    venv_key = hashlib.sha1(str(venv_dir.resolve()).encode()).hexdigest()[:16]
    lock_path = Path(tempfile.gettempdir()) / f"tarn-venv-pypaimon-{venv_key}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not has_pypaimon(python):
                _install(venv_dir)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if not has_pypaimon(python):
        raise PeerError(f"{python} still lacks {PYPAIMON_REQUIREMENT} after installing it")
    return python


@functools.cache
def peer_python() -> Path:
    override = os.environ.get(PYTHON_OVERRIDE_ENV)
    if override:
        return Path(override)
    return ensure_pypaimon_venv(REPO_ROOT)


def run_peer(command: str, spec: dict, timeout: float = 300) -> dict:
    """Run ``peer.py <command>`` under pypaimon's python with ``spec`` as JSON on stdin.

    Returns the peer's JSON answer; raises PeerError with its stderr on failure.
    """
    args = [str(peer_python()), str(PEER_SCRIPT), command]
    try:
        result = subprocess.run(args, input=json.dumps(spec), capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise PeerError(f"pypaimon peer '{command}' timed out after {timeout}s; "
                        f"stderr:\n{error.stderr}") from error
    if result.returncode != 0:
        raise PeerError(f"pypaimon peer '{command}' exited with {result.returncode}; "
                        f"spec: {json.dumps(spec)}\nstderr:\n{result.stderr}")
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as error:
        raise PeerError(f"pypaimon peer '{command}' printed no JSON: {result.stdout!r}; "
                        f"stderr:\n{result.stderr}") from error
