"""The pypaimon-rust 0.4.0 venv and a subprocess bridge to ``rust_peer.py``.

pypaimon-rust (the Rust Paimon core behind a Python module, ``import pypaimon_rust``) lives in
its own venv ``<repo>/.venv-pypaimon-rust`` beside pyarrow (its wheel imports pyarrow but does
not depend on it); tests talk to it through ``rust_peer.py`` with a JSON spec on stdin, a JSON
answer on stdout and Arrow IPC files for rows, as they talk to pypaimon 2.1 through
``pypaimon_env.py``.
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

RUST_VERSION = "0.4.0"
RUST_REQUIREMENTS = [f"pypaimon-rust=={RUST_VERSION}", "pyarrow>=19"]
VENV_DIR_NAME = ".venv-pypaimon-rust"
PYTHON_OVERRIDE_ENV = "TARN_PYPAIMON_RUST_PYTHON"  # use this interpreter instead of the managed venv
REPO_ROOT = Path(__file__).resolve().parents[2]
PEER_SCRIPT = Path(__file__).resolve().with_name("rust_peer.py")


class RustPeerError(RuntimeError):
    """The pypaimon-rust peer failed; the message carries its stderr."""


def venv_python(venv_dir: Path) -> Path:
    if os.name == "nt":
        return venv_dir / "Scripts" / "python.exe"
    return venv_dir / "bin" / "python"


def has_pypaimon_rust(python: Path) -> bool:
    """True when ``python`` runs and has pypaimon-rust at the pinned version and pyarrow."""
    if not python.exists():
        return False
    probe = ("import importlib.metadata as m, sys; import pyarrow; "
             f"sys.exit(0 if m.version('pypaimon-rust') == '{RUST_VERSION}' else 1)")
    result = subprocess.run([str(python), "-c", probe], capture_output=True)
    return result.returncode == 0


def _install(venv_dir: Path) -> None:
    python = venv_python(venv_dir)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True,
                       capture_output=True)
        # keep the venv out of git without touching the repository's .gitignore
        (venv_dir / ".gitignore").write_text("*\n")
    result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *RUST_REQUIREMENTS],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RustPeerError(f"pip install {' '.join(RUST_REQUIREMENTS)} into {venv_dir} failed:\n"
                            f"{result.stdout}\n{result.stderr}")


def ensure_rust_venv(repo_root: Path) -> Path:
    """The python of ``<repo_root>/.venv-pypaimon-rust``, created with pypaimon-rust 0.4.0 if needed.

    Idempotent; an exclusive lock file (in the temp dir, keyed by the venv path)
    keeps parallel test processes from installing at the same time.
    """
    venv_dir = Path(repo_root) / VENV_DIR_NAME
    python = venv_python(venv_dir)
    if has_pypaimon_rust(python):
        return python
    venv_key = hashlib.sha1(str(venv_dir.resolve()).encode()).hexdigest()[:16]
    lock_path = Path(tempfile.gettempdir()) / f"tarn-venv-pypaimon-rust-{venv_key}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not has_pypaimon_rust(python):
                _install(venv_dir)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if not has_pypaimon_rust(python):
        raise RustPeerError(f"{python} still lacks pypaimon-rust {RUST_VERSION} after installing it")
    return python


@functools.cache
def rust_python() -> Path:
    override = os.environ.get(PYTHON_OVERRIDE_ENV)
    if override:
        return Path(override)
    return ensure_rust_venv(REPO_ROOT)


def run_rust_peer(command: str, spec: dict, timeout: float = 300) -> dict:
    """Run ``rust_peer.py <command>`` under pypaimon-rust's python with ``spec`` as JSON on stdin.

    Returns the peer's JSON answer; raises RustPeerError with its stderr on failure.
    """
    args = [str(rust_python()), str(PEER_SCRIPT), command]
    try:
        result = subprocess.run(args, input=json.dumps(spec), capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise RustPeerError(f"pypaimon-rust peer '{command}' timed out after {timeout}s; "
                            f"stderr:\n{error.stderr}") from error
    if result.returncode != 0:
        raise RustPeerError(f"pypaimon-rust peer '{command}' exited with {result.returncode}; "
                            f"spec: {json.dumps(spec)}\nstderr:\n{result.stderr}")
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as error:
        raise RustPeerError(f"pypaimon-rust peer '{command}' printed no JSON: {result.stdout!r}; "
                            f"stderr:\n{result.stderr}") from error
