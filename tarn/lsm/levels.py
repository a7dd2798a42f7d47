"""The LSM tree of one bucket: sorted runs grouped by level (FORMAT.md §7).

Level 0 holds freshly flushed files whose key ranges may overlap, so each level-0 file is a sorted
run of its own, newest (largest max sequence number) first. Every level >= 1 is one sorted run:
files ordered by key with no overlapping ranges. Keys are compared as Java's generated key
comparator does, on the decoded primary-key values (see `key_order`).

Pure: `Levels` is immutable and `update` returns a new one; nothing here touches storage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tarn.codec.binary_row import deserialize_row
from tarn.errors import CorruptFile, InvalidOption
from tarn.meta.manifest import DataFileMeta
from tarn.types import DataType

KeyOrder = Callable[[bytes], tuple]  # serialized key row -> a tuple that sorts as Java's keys do


def _value_order(value) -> tuple:
    """Nulls first; floats as Java's Float/Double.compare (-0.0 < 0.0, NaN largest)."""
    if value is None:
        return (0,)
    if isinstance(value, float):
        if math.isnan(value):
            return (1, math.inf, 2.0)
        return (1, value, math.copysign(1.0, value))
    return (1, value)


def key_order(key_types: Sequence[DataType]) -> KeyOrder:
    """A function from a serialized key row (min/max key) to its sort key; memoised per row."""
    types = list(key_types)
    cache: dict[bytes, tuple] = {}

    def order(row: bytes) -> tuple:
        found = cache.get(row)
        if found is None:
            found = tuple(_value_order(v) for v in deserialize_row(row, types))
            cache[row] = found
        return found

    return order


def level0_order(file: DataFileMeta) -> tuple:
    """Java's level-0 order: newest max sequence first, then min sequence, creation time, name."""
    created = -1 if file.creation_time is None else file.creation_time
    return (-file.max_sequence_number, file.min_sequence_number, created, file.file_name)


@dataclass(frozen=True, slots=True)
class SortedRun:
    """Files with non-overlapping key ranges, ordered by key."""

    files: tuple[DataFileMeta, ...] = ()

    @classmethod
    def from_unsorted(cls, files: Iterable[DataFileMeta], order: KeyOrder, level: int | None = None) -> SortedRun:
        """Sort `files` by min key and check that consecutive ranges do not overlap."""
        run = cls(tuple(sorted(files, key=lambda f: order(f.min_key))))
        run.validate(order, level)
        return run

    def validate(self, order: KeyOrder, level: int | None = None) -> None:
        for before, after in zip(self.files, self.files[1:]):
            if not order(after.min_key) > order(before.max_key):
                where = "" if level is None else f" at level {level}"
                raise CorruptFile(
                    f"data files '{before.file_name}' and '{after.file_name}'{where} have overlapping "
                    f"key ranges but must form one sorted run")

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)

    def __bool__(self) -> bool:
        return bool(self.files)

    def __len__(self) -> int:
        return len(self.files)


@dataclass(frozen=True, slots=True)
class LevelSortedRun:
    """A sorted run and the level it lives in."""

    level: int
    run: SortedRun


@dataclass(frozen=True)
class Levels:
    """A bucket's live files as an LSM tree: level 0 (newest first) and one run per level >= 1."""

    key_types: tuple[DataType, ...]
    level0: tuple[DataFileMeta, ...]
    runs: tuple[SortedRun, ...]  # runs[i] is level i + 1

    @classmethod
    def from_files(cls, files: Iterable[DataFileMeta], num_levels: int,
                   key_types: Sequence[DataType]) -> Levels:
        """Restore the tree; it grows past `num_levels` when a file sits at a deeper level."""
        files = list(files)
        num_levels = max([num_levels] + [f.level + 1 for f in files])
        if num_levels < 2:
            raise InvalidOption(f"option 'num-levels' must be at least 2, got {num_levels}")
        empty = cls(tuple(key_types), (), (SortedRun(),) * (num_levels - 1))
        return empty.update([], files)

    @property
    def num_levels(self) -> int:
        return len(self.runs) + 1

    @property
    def max_level(self) -> int:
        return len(self.runs)

    @property
    def number_of_sorted_runs(self) -> int:
        return len(self.level0) + sum(1 for run in self.runs if run)

    @property
    def non_empty_highest_level(self) -> int:
        """The deepest level holding a file; -1 for an empty tree."""
        for level in range(self.max_level, 0, -1):
            if self.runs[level - 1]:
                return level
        return 0 if self.level0 else -1

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.level0) + sum(run.total_size for run in self.runs)

    def run_of_level(self, level: int) -> SortedRun:
        if level < 1:
            raise ValueError("level 0 is not one sorted run")
        return self.runs[level - 1]

    def sorted_runs(self) -> list[LevelSortedRun]:
        """Level-0 files one run each (newest first), then each non-empty level in order."""
        runs = [LevelSortedRun(0, SortedRun((f,))) for f in self.level0]
        runs += [LevelSortedRun(i + 1, run) for i, run in enumerate(self.runs) if run]
        return runs

    def all_files(self) -> list[DataFileMeta]:
        return [f for run in self.sorted_runs() for f in run.run.files]

    def update(self, before: Iterable[DataFileMeta], after: Iterable[DataFileMeta]) -> Levels:
        """A new tree with `before` removed and `after` added, each at its file's level."""
        before, after = list(before), list(after)
        for file in after:
            if not 0 <= file.level <= self.max_level:
                raise CorruptFile(f"data file '{file.file_name}' is at level {file.level}, "
                                  f"outside levels 0..{self.max_level}")
        gone = {level0_order(f) for f in before if f.level == 0}
        level0 = {level0_order(f): f for f in self.level0 if level0_order(f) not in gone}
        level0.update((level0_order(f), f) for f in after if f.level == 0)
        runs = tuple(self._updated_run(level, before, after) for level in range(1, self.num_levels))
        return Levels(self.key_types, tuple(level0[k] for k in sorted(level0)), runs)

    def _updated_run(self, level: int, before: list[DataFileMeta], after: list[DataFileMeta]) -> SortedRun:
        removed = [f for f in before if f.level == level]
        added = [f for f in after if f.level == level]
        run = self.runs[level - 1]
        if not removed and not added:
            return run
        kept = [f for f in run.files if f not in removed]
        return SortedRun.from_unsorted(kept + added, key_order(self.key_types), level)
