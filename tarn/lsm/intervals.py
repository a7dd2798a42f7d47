"""Split a bucket's files into sections of overlapping key ranges, each as few sorted runs as possible.

Java's `IntervalPartition`. Sections never overlap one another, so a reader (merge-on-read or
compaction) merges one section at a time, and a section of a single run needs no merge at all.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from tarn.lsm.levels import KeyOrder, SortedRun, key_order
from tarn.meta.manifest import DataFileMeta
from tarn.types import DataType


def partition_sections(files: Iterable[DataFileMeta], key_types: Sequence[DataType]) -> list[list[SortedRun]]:
    """Sections in key order; within a section, runs ordered by the min key of their first file."""
    order = key_order(key_types)
    files = sorted(files, key=lambda f: (order(f.min_key), order(f.max_key)))
    sections: list[list[SortedRun]] = []
    section: list[DataFileMeta] = []
    bound = None  # the largest max key of the current section
    for file in files:
        if section and order(file.min_key) > bound:
            sections.append(_fewest_runs(section, order))
            section, bound = [], None
        section.append(file)
        if bound is None or order(file.max_key) > bound:
            bound = order(file.max_key)
    if section:
        sections.append(_fewest_runs(section, order))
    return sections


def _fewest_runs(files: list[DataFileMeta], order: KeyOrder) -> list[SortedRun]:
    """Greedy: append each file (by min key) to the run that ends first, if it ends before the file
    starts; else open a new run. Optimal for interval graphs."""
    runs: list[list[DataFileMeta]] = [[files[0]]]
    heap = [(order(files[0].max_key), 0)]  # (max key of the run's last file, run index)
    for file in files[1:]:
        end, index = heap[0]
        if order(file.min_key) > end:
            runs[index].append(file)
            heapq.heapreplace(heap, (order(file.max_key), index))
        else:
            runs.append([file])
            heapq.heappush(heap, (order(file.max_key), len(runs) - 1))
    return [SortedRun(tuple(run)) for run in runs]
