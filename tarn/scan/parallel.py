"""Work items run in threads (Arrow's readers and kernels release the GIL)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor


def serial_map(read, items) -> list:
    return [read(item) for item in items]


def parallel_map(read, items: list) -> list:
    """`read` of every item, in order; several at once (Arrow's readers and kernels release the
    GIL, so a file's decoding overlaps another's filtering)."""
    if len(items) < 2:
        return [read(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(len(items), os.cpu_count() or 2)) as pool:
        return list(pool.map(read, items))
