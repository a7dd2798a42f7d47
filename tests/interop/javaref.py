"""Java Apache Paimon as a reference: the javaref CLI of ``shared/javaref`` (see its README).

``shared/javaref/setup.sh`` builds Java Paimon 1.0-SNAPSHOT plus a py4j venv into
``$JAVAREF_HOME`` (default ``/tmp/javaref``); ``paimon_java.py <cmd> ...`` then drives it and
prints one JSON document per command. ``shared`` sits beside the repository (``<repo>/../shared``,
as on CI), with ``/work/shared`` as the fallback.

``JavaRef.run(cmd, *args)`` runs one CLI command (one JVM, about 1 s to start);
``JavaRef.run_many([[cmd, *args], ...])`` runs several in one JVM through the CLI's own
argument parser and command functions, which saves that start-up per command.

The session fixture ``javaref`` builds the reference when it is not ready and FAILS the test
(never skips) when that build fails: CI has Java 17 and PyPI.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FALLBACK_SHARED = Path("/work/shared")
HOME_ENV = "JAVAREF_HOME"
DEFAULT_HOME = Path("/tmp/javaref")


# Java 1.0-SNAPSHOT's scan throws this now and then on a loaded machine (its manifest reads share
# a HashMap across threads); the commands that only read are run again when it happens
JAVA_RACE = "java.util.ConcurrentModificationException"
READ_ONLY = {"read", "stream", "changes", "files", "index-files", "snapshots", "schema", "tags", "statistics"}


class JavaRefError(RuntimeError):
    """A javaref command failed; the message carries its stderr."""


def shared_dir() -> Path:
    """``shared/javaref``: beside the repository, else /work/shared/javaref."""
    for base in (REPO_ROOT.parent / "shared", FALLBACK_SHARED):
        if (base / "javaref" / "setup.sh").is_file():
            return base / "javaref"
    raise JavaRefError(f"no javaref/setup.sh in {REPO_ROOT.parent / 'shared'} or {FALLBACK_SHARED}")


def javaref_home() -> Path:
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME)


def is_ready(home: Path) -> bool:
    """The venv with py4j, the config setup.sh writes last, and the default version's jars."""
    python = home / "venv" / "bin" / "python"
    config = home / "jars" / "javaref.json"
    if not python.exists() or not config.exists():
        return False
    try:
        cfg = json.loads(config.read_text())
        classpath = cfg["versions"][cfg["default"]]["classpath"]
    except (ValueError, KeyError, TypeError):
        return False
    return all(Path(jar).exists() for jar in classpath)


def ensure_built(shared: Path, home: Path) -> None:
    """Run setup.sh unless the reference is ready (under a lock: parallel test processes)."""
    if is_ready(home):
        return
    lock_path = Path(tempfile.gettempdir()) / "tarn-javaref-setup.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not is_ready(home):
                result = subprocess.run(["bash", str(shared / "setup.sh")], capture_output=True, text=True,
                                        env={**os.environ, HOME_ENV: str(home)}, timeout=1800)
                if result.returncode != 0 or not is_ready(home):
                    raise JavaRefError(f"bash {shared / 'setup.sh'} failed (exit {result.returncode}):\n"
                                       f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# Runs under the javaref venv: several CLI commands in one JVM, each parsed by the CLI's parser
# and run by its command function; prints a JSON list of answers ({"error": ...} for a failure).
_MANY_DRIVER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import paimon_java as pj
from py4j.protocol import Py4JJavaError
calls = json.load(sys.stdin)
java = pj.Java()
out = []
try:
    for argv in calls:
        a = pj.build_parser().parse_args(argv)
        if getattr(a, "table_path", None):
            a.table_path = os.path.abspath(a.table_path)
        try:
            out.append(a.fn(java, a))
        except Py4JJavaError as e:
            out.append({"error": pj.java_error_text(e)})
        except (pj.UsageError, OSError, ValueError) as e:
            out.append({"error": "%s: %s" % (type(e).__name__, e)})
finally:
    java.close()
sys.stdout.write(json.dumps(out) + "\n")
"""


class JavaRef:
    def __init__(self, shared: Path, home: Path):
        self.shared = shared
        self.home = home
        self.python = home / "venv" / "bin" / "python"
        self.cli = shared / "paimon_java.py"
        self.env = {**os.environ, HOME_ENV: str(home)}

    def _exec(self, args: list[str], stdin: str | None, timeout: float, what: str) -> str:
        try:
            result = subprocess.run(args, input=stdin, capture_output=True, text=True, env=self.env,
                                    timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise JavaRefError(f"javaref {what} timed out after {timeout}s; stderr:\n{error.stderr}") from error
        if result.returncode != 0:
            raise JavaRefError(f"javaref {what} exited with {result.returncode}:\n{result.stderr.strip()}")
        return result.stdout

    def run(self, cmd: str, *args, input: str | None = None, timeout: float = 300) -> dict:
        """``paimon_java.py cmd args...`` -> its JSON answer; JavaRefError on failure.
        ``input`` is stdin (for ``--rows -``)."""
        argv = [cmd, *map(str, args)]
        out = self._exec([str(self.python), str(self.cli), *argv], input, timeout, " ".join(argv[:2]))
        return json.loads(out)

    def run_many(self, calls, errors: str = "raise", timeout: float = 600) -> list[dict]:
        """Several commands (``[cmd, *args]`` each) in one JVM, in order. A failing command
        answers ``{"error": text}``; with ``errors="raise"`` (default) that raises JavaRefError
        after all ran."""
        argv = [[str(c) for c in call] for call in calls]
        out = self._exec([str(self.python), "-c", _MANY_DRIVER, str(self.shared)], json.dumps(argv),
                         timeout, f"batch of {len(argv)}")
        answers = json.loads(out)
        racy = [i for i, (call, answer) in enumerate(zip(argv, answers))
                if all(later[0] in READ_ONLY for later in argv[i:])  # nothing after it changed the table
                and isinstance(answer, dict) and JAVA_RACE in str(answer.get("error", ""))]
        if racy:  # Java 1.0's parallel manifest reading races under load: a read only, so read again
            again = json.loads(self._exec([str(self.python), "-c", _MANY_DRIVER, str(self.shared)],
                                          json.dumps([argv[i] for i in racy]), timeout, "re-read"))
            for i, answer in zip(racy, again):
                answers[i] = answer
        if errors == "raise":
            failed = [(call[:2], answer["error"]) for call, answer in zip(argv, answers)
                      if isinstance(answer, dict) and "error" in answer and len(answer) == 1]
            if failed:
                raise JavaRefError(f"javaref commands failed: {failed}")
        return answers

    def rows_arg(self, rows: list[dict], directory) -> str:
        """Write ``rows`` to a fresh JSON file in ``directory``; its path (for ``--rows``)."""
        fd, path = tempfile.mkstemp(suffix=".json", dir=str(directory))
        with os.fdopen(fd, "w") as f:
            json.dump(rows, f)
        return path


@pytest.fixture(scope="session")
def javaref() -> JavaRef:
    """The Java reference, built if needed; a failed build fails the test (no skip)."""
    problem = None
    try:
        shared = shared_dir()
        home = javaref_home()
        ensure_built(shared, home)
    except (JavaRefError, OSError, subprocess.TimeoutExpired) as error:
        problem = str(error)
    if problem is not None:
        pytest.fail(f"javaref is not available: {problem}", pytrace=False)
    return JavaRef(shared, home)
