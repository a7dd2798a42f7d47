"""tarn's own error first: what a user sees when the "tarn" source fails inside Spark.

A tarn error raised in Spark's Python workers (planning a read, preparing a write, in a task,
in a streaming batch) reaches the user as a Spark exception whose text is Spark's header, a
Python traceback, tarn's message near the end, and often a JVM stack trace. `install()` hooks
pyspark's conversion of JVM exceptions (classic sessions; Spark Connect is left alone): when
the Spark exception carries a tarn error, it is raised as an exception that is both that tarn
error class (`except tarn.InvalidOption`) and the Spark class (`except AnalysisException`),
whose text is tarn's message, whole, followed by one line of Spark's context. The original
Spark exception stays at `.spark_error`.
"""

from __future__ import annotations

import importlib
import re

from tarn.errors import TarnError

class PythonWorkerTimeout(TarnError):
    """Spark gave up on a Python worker that did not connect back in time."""


# Spark's words when a new Python worker did not connect back within its fixed 10 s
_CONNECT_BACK = re.compile(r"Python worker failed to connect back|waiting for the Python worker to connect back")
WORKER_TIMEOUT_MESSAGE = (
    "Spark's Python worker did not connect back in time: Spark gives a new Python worker a fixed 10 s to start, "
    "and on a busy machine starting Python and importing pyarrow and tarn can take longer. Fix: run fewer Spark "
    "jobs or streaming queries at once (or give them more cores: local[N]), keep spark.python.worker.reuse and "
    "spark.python.use.daemon at their default true so workers start once and are reused, and retry the query.")

# The last line of a Python traceback: `tarn.errors.InvalidOption: <message>`.
_TARN_LINE = re.compile(r"^(tarn(?:\.\w+)*)\.(\w+): ", re.MULTILINE)
_CONTEXT_CHARS = 240
_classes: dict[tuple[type, type], type] = {}


def install() -> None:
    """Hook pyspark's JVM exception conversion once per process (idempotent)."""
    try:
        from pyspark.errors.exceptions import captured
    except ImportError:  # pragma: no cover - pyspark without the classic exception module
        return
    original = captured.convert_exception
    if getattr(original, "_tarn_readable", False):
        return

    def convert_exception(e):
        return readable(original(e))

    convert_exception._tarn_readable = True
    captured.convert_exception = convert_exception


def readable(error: BaseException) -> BaseException:
    """`error` as its tarn error first, if a tarn error is inside it; else `error` unchanged."""
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - a JVM that is gone: keep Spark's exception
        return error
    found = tarn_error_in(text)
    if found is None and _CONNECT_BACK.search(text):
        found = PythonWorkerTimeout, WORKER_TIMEOUT_MESSAGE
    if found is None:
        return error
    cls, message = found
    context = _spark_context(text)
    combined = _combined_class(cls, type(error))
    result = combined.__new__(combined)
    result.__dict__.update(getattr(error, "__dict__", {}))
    result.args = (message,)
    result.tarn_message = message
    result.spark_error = error
    result.spark_context = context
    return result.with_traceback(error.__traceback__)


def tarn_error_in(text: str) -> tuple[type, str] | None:
    """(tarn error class, its whole message) of the last tarn error in a Spark error text."""
    matches = list(_TARN_LINE.finditer(text))
    for match in reversed(matches):
        cls = _error_class(match.group(1), match.group(2))
        if cls is not None:
            return cls, _message_at(text, match.end())
    return None


def _error_class(module: str, name: str) -> type | None:
    try:
        cls = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return cls if isinstance(cls, type) and issubclass(cls, TarnError) else None


def _message_at(text: str, start: int) -> str:
    """The message from `start` to the end of its traceback (a blank line, a JVM frame, the
    SQLSTATE or JVM stack trace Spark appends)."""
    lines = []
    for line in text[start:].split("\n"):
        if not line.strip() or line.startswith(("\tat ", " SQLSTATE:", "JVM stacktrace:")):
            break
        lines.append(line)
    return "\n".join(lines).rstrip()


def _spark_context(text: str) -> str:
    head = text.split("Traceback (most recent call last):", 1)[0].strip().splitlines()
    first = head[0].strip().rstrip(":") if head else ""
    return first if len(first) <= _CONTEXT_CHARS else first[:_CONTEXT_CHARS] + "..."


def _combined_class(tarn_class: type, spark_class: type) -> type:
    key = (tarn_class, spark_class)
    if key not in _classes:
        try:
            _classes[key] = type(tarn_class.__name__, (tarn_class, spark_class),
                                 {"__str__": _text, "__module__": tarn_class.__module__})
        except TypeError:  # incompatible layouts: the tarn class alone
            _classes[key] = type(tarn_class.__name__, (tarn_class,),
                                 {"__str__": _text, "__module__": tarn_class.__module__})
    return _classes[key]


def _text(self) -> str:
    """tarn's message, then one line saying where Spark met it."""
    context = getattr(self, "spark_context", "")
    if isinstance(self, PythonWorkerTimeout):
        return f"{self.tarn_message}\n[Spark: {context}]" if context else self.tarn_message
    where = f" ({context})" if context else ""
    return f"{self.tarn_message}\n[raised by tarn in a Spark Python worker{where}]"
