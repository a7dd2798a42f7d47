"""A peer engine in a venv of its own, driven through a bridge script.

Each peer (pypaimon 2.1: pypaimon_env.py; pypaimon-rust 0.4: rust_env.py) pins packages that
cannot live beside tarn's, so it gets ``<repo>/<venv dir>``, created on first use under an
exclusive lock (parallel test processes never install at once) and checked by a probe of the
pinned version. Tests run ``<bridge script> <command>`` under its python with a JSON spec on
stdin and read a JSON answer on stdout (rows travel as Arrow IPC files).
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
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def venv_python(venv_dir: Path) -> Path:
    if os.name == "nt":
        return venv_dir / "Scripts" / "python.exe"
    return venv_dir / "bin" / "python"


@dataclass(frozen=True)
class PeerVenv:
    """One peer: what to install, how to recognise it, its bridge script and its error class."""

    label: str  # "pypaimon", "pypaimon-rust": names the peer in errors
    dir_name: str  # the venv directory under the repository root
    requirements: tuple[str, ...]
    distribution: str  # the pinned distribution the probe checks ...
    version: str  # ... at this version
    python_override_env: str  # an environment variable naming an interpreter to use instead
    script: Path
    error: type[Exception]
    probe_imports: str = ""  # extra imports the probe needs to succeed ("import pyarrow; ")

    def has_peer(self, python: Path) -> bool:
        """True when ``python`` runs and imports the peer at the pinned version."""
        if not python.exists():
            return False
        probe = (f"import importlib.metadata as m, sys; {self.probe_imports}"
                 f"sys.exit(0 if m.version('{self.distribution}') == '{self.version}' else 1)")
        return subprocess.run([str(python), "-c", probe], capture_output=True).returncode == 0

    def _install(self, venv_dir: Path) -> None:
        python = venv_python(venv_dir)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True, capture_output=True)
            (venv_dir / ".gitignore").write_text("*\n")  # the venv stays out of git
        result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *self.requirements],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise self.error(f"pip install {' '.join(self.requirements)} into {venv_dir} failed:\n"
                             f"{result.stdout}\n{result.stderr}")

    def ensure(self, repo_root: Path = REPO_ROOT) -> Path:
        """The python of the peer's venv under ``repo_root``, created if needed (idempotent)."""
        venv_dir = Path(repo_root) / self.dir_name
        python = venv_python(venv_dir)
        if self.has_peer(python):
            return python
        venv_key = hashlib.sha1(str(venv_dir.resolve()).encode()).hexdigest()[:16]
        lock_path = Path(tempfile.gettempdir()) / f"tarn-{self.dir_name.lstrip('.')}-{venv_key}.lock"
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not self.has_peer(python):
                    self._install(venv_dir)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        if not self.has_peer(python):
            raise self.error(f"{python} still lacks {self.distribution} {self.version} after installing it")
        return python

    @functools.cached_property
    def python(self) -> Path:
        override = os.environ.get(self.python_override_env)
        return Path(override) if override else self.ensure()

    def run(self, command: str, spec: dict, timeout: float = 300) -> dict:
        """Run ``<script> <command>`` under the peer's python with ``spec`` as JSON on stdin;
        its JSON answer, or the peer's error class carrying its stderr."""
        args = [str(self.python), str(self.script), command]
        try:
            result = subprocess.run(args, input=json.dumps(spec), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise self.error(f"{self.label} peer '{command}' timed out after {timeout}s; "
                             f"stderr:\n{error.stderr}") from error
        if result.returncode != 0:
            raise self.error(f"{self.label} peer '{command}' exited with {result.returncode}; "
                             f"spec: {json.dumps(spec)}\nstderr:\n{result.stderr}")
        try:
            return json.loads(result.stdout)
        except json.JSONDecodeError as error:
            raise self.error(f"{self.label} peer '{command}' printed no JSON: {result.stdout!r}; "
                             f"stderr:\n{result.stderr}") from error
