"""Progress bars for long local work (full compaction, ANALYZE, expiry, large writes).

Off by default, as pyarrow and deltalake are quiet: `tarn.show_progress()` turns them on from
Python; the `tarn` command line turns them on. A bar is drawn (with rich, on stderr) only when
stderr is a terminal; otherwise every call here does nothing. Work reports through `task`:

    with progress.task("compacting db.t", total=len(buckets)) as bar:
        ...
        bar.advance()
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

_enabled = False
_lock = threading.Lock()


def show_progress(enabled: bool = True) -> None:
    """Draw progress bars for long operations on a terminal (off by default)."""
    global _enabled
    _enabled = bool(enabled)


class _Quiet:
    def advance(self, amount: int = 1) -> None:
        pass


class _Bar:
    def __init__(self, progress, task_id):
        self._progress, self._task = progress, task_id

    def advance(self, amount: int = 1) -> None:
        with _lock:
            self._progress.advance(self._task, amount)


@contextmanager
def task(description: str, total: int | None = None):
    """A bar for one piece of work of `total` steps (None: unknown); a no-op when progress is
    off or stderr is no terminal."""
    if not _enabled or not sys.stderr.isatty() or (total is not None and total <= 1):
        yield _Quiet()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        yield _Bar(progress, progress.add_task(description, total=total))
