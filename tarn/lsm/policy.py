"""Which sorted runs to compact next: Paimon's universal compaction, as pure functions.

`pick` follows Java's `UniversalCompaction` (after RocksDB's universal compaction) step by step:
0. early full compaction (`compaction.optimization-interval`, `compaction.total-size-threshold`,
   `compaction.incremental-size-threshold`);
1. size amplification (`compaction.max-size-amplification-percent`);
2. size ratio (`compaction.size-ratio`, plus `compaction.offpeak-ratio` in off-peak hours);
3. run count (`num-sorted-run.compaction-trigger`);
then, for tables that need lookup (changelog-producer=lookup, deletion vectors, first-row, or
force-lookup) or set `compaction.force-up-level-0`, Java's `ForceUpLevel0Compaction`: when nothing
was picked, level-0 files are pushed up anyway (every time in RADICAL mode, every
`lookup-compact.max-interval`-th time in GENTLE mode).

Java keeps two bits of state between picks; here they travel in `PickState` and `pick` returns the
next state beside the unit.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from tarn.lsm.levels import LevelSortedRun, Levels
from tarn.meta.manifest import DataFileMeta
from tarn.options import Options

LONG_MAX = (1 << 63) - 1  # the commit identifier of a batch (non-streaming) commit


@dataclass(frozen=True)
class CompactUnit:
    """Files to compact together and the level the output goes to.

    `file_rewrite`: rewrite each file on its own (max-level files with deletion vectors / expired
    records) instead of merging them.
    """

    output_level: int
    files: tuple[DataFileMeta, ...]
    file_rewrite: bool = False


@dataclass(frozen=True)
class PickState:
    """What Java's strategy remembers between picks of one bucket writer.

    `last_full_compaction_ms`: epoch millis of the last full compaction picked (None: never); start
    it with `estimate_last_full_compaction`. `lookup_skips`: picks since the last forced level-0
    pick in GENTLE lookup-compact mode.
    """

    last_full_compaction_ms: int | None = None
    lookup_skips: int = 0


class Pick(NamedTuple):
    unit: CompactUnit | None
    state: PickState


# --- options ----------------------------------------------------------------------------------


def compaction_trigger(options: Options) -> int:
    return options.int("num-sorted-run.compaction-trigger")


def num_levels(options: Options) -> int:
    """`num-levels`, by default compaction trigger + 1 so that compaction never outputs level 0."""
    explicit = options.int("num-levels")
    return compaction_trigger(options) + 1 if explicit is None else explicit


def stop_trigger(options: Options) -> int:
    """`num-sorted-run.stop-trigger`, by default compaction trigger + 3, never below the trigger."""
    explicit = options.int("num-sorted-run.stop-trigger")
    trigger = compaction_trigger(options)
    return max(trigger, trigger + 3 if explicit is None else explicit)


def should_stop_writes(runs: Sequence[LevelSortedRun] | int, options: Options) -> bool:
    """Whether writing must wait for compaction: more sorted runs than the stop trigger."""
    count = runs if isinstance(runs, int) else len(runs)
    return count > stop_trigger(options)


def needs_lookup(options: Options) -> bool:
    """Java's LookupStrategy.needLookup: lookup changelog, deletion vectors, first-row or forced."""
    return (options.changelog_producer == "lookup" or options.deletion_vectors_enabled
            or options.merge_engine == "first-row" or bool(options.bool("force-lookup")))


def _lookup_max_interval(options: Options) -> int | None:
    """Picks between forced level-0 pushes: None = every pick (RADICAL, force-up-level-0)."""
    if not needs_lookup(options) or options.enum("lookup-compact") != "GENTLE":
        return None
    trigger = compaction_trigger(options)
    explicit = options.int("lookup-compact.max-interval")
    return max(trigger, trigger * 2 if explicit is None else explicit)


def _forces_level0(options: Options) -> bool:
    return needs_lookup(options) or bool(options.bool("compaction.force-up-level-0"))


def _off_peak_ratio(options: Options, local_hour: int | None) -> int:
    start = options.int("compaction.offpeak.start.hour")
    end = options.int("compaction.offpeak.end.hour")
    if start == -1 or end == -1 or start == end:
        return 0
    hour = dt.datetime.now().hour if local_hour is None else local_hour
    off_peak = start <= hour < end if start <= end else (hour < end or start <= hour)
    return options.int("compaction.offpeak-ratio") if off_peak else 0


# --- universal compaction -----------------------------------------------------------------------


def _unit(output_level: int, runs: Iterable[LevelSortedRun]) -> CompactUnit:
    return CompactUnit(output_level, tuple(f for r in runs for f in r.run.files))


def _size(runs: Iterable[LevelSortedRun]) -> int:
    return sum(r.run.total_size for r in runs)


@dataclass(frozen=True)
class _Universal:
    """The options of one universal-compaction pick, read once."""

    max_size_amp: int
    size_ratio: int  # includes the off-peak ratio in off-peak hours
    trigger: int
    interval_ms: int | None
    total_size_threshold: int | None
    incremental_size_threshold: int | None

    @classmethod
    def of(cls, options: Options, local_hour: int | None) -> _Universal:
        return cls(
            options.int("compaction.max-size-amplification-percent"),
            options.int("compaction.size-ratio") + _off_peak_ratio(options, local_hour),
            compaction_trigger(options),
            options.duration_ms("compaction.optimization-interval"),
            options.memory_bytes("compaction.total-size-threshold"),
            options.memory_bytes("compaction.incremental-size-threshold"),
        )

    def early_full(self, runs: list[LevelSortedRun], max_level: int, now_ms: int,
                   last_ms: int | None) -> CompactUnit | None:
        """Step 0 (Java EarlyFullCompaction.tryFullCompact)."""
        if len(runs) == 1:
            return None
        if self.interval_ms is not None and (last_ms is None or now_ms - last_ms > self.interval_ms):
            return _unit(max_level, runs)
        if self.total_size_threshold is not None and _size(runs) < self.total_size_threshold:
            return _unit(max_level, runs)
        if self.incremental_size_threshold is not None:
            incremental = _size(r for r in runs if r.level != max_level)
            if incremental > self.incremental_size_threshold:
                return _unit(max_level, runs)
        return None

    def for_size_amp(self, runs: list[LevelSortedRun], max_level: int) -> CompactUnit | None:
        """Step 1: all runs when the newer runs outweigh the oldest by more than max-size-amp %."""
        if not runs or len(runs) < self.trigger:
            return None
        newer, oldest = _size(runs[:-1]), runs[-1].run.total_size
        return _unit(max_level, runs) if newer * 100 > self.max_size_amp * oldest else None

    def for_size_ratio(self, runs: list[LevelSortedRun], max_level: int, candidates: int = 1,
                       force: bool = False) -> CompactUnit | None:
        """Steps 2/3: grow the first `candidates` runs while the next is not much bigger."""
        size = _size(runs[:candidates])
        triggered = force or candidates > 1
        for next_run in runs[candidates:]:
            if size * (100.0 + self.size_ratio) / 100.0 < next_run.run.total_size:
                if not triggered or next_run.level > 1:
                    break
            size += next_run.run.total_size
            candidates += 1
            triggered = True
        return create_unit(runs, max_level, candidates) if triggered else None

    def pick(self, runs: list[LevelSortedRun], max_level: int, now_ms: int,
             last_ms: int | None) -> CompactUnit | None:
        unit = self.early_full(runs, max_level, now_ms, last_ms)
        unit = unit or self.for_size_amp(runs, max_level)
        if unit is None and len(runs) >= self.trigger:
            unit = self.for_size_ratio(runs, max_level)
        if unit is None and len(runs) > self.trigger:
            unit = self.for_size_ratio(runs, max_level, len(runs) - self.trigger + 1)
        return unit


def create_unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int) -> CompactUnit:
    """The first `run_count` runs, written to the level before the next run (never level 0).

    All runs -> max level. Otherwise the next run's level - 1; when that is 0, the unit takes in
    runs up to and including the first run at level >= 1 and outputs to that run's level.
    """
    if run_count == len(runs):
        output_level = max_level
    else:
        output_level = max(0, runs[run_count].level - 1)
    if output_level == 0:
        for next_run in runs[run_count:]:
            run_count += 1
            if next_run.level != 0:
                output_level = next_run.level
                break
    if run_count == len(runs):
        output_level = max_level
    return _unit(output_level, runs[:run_count])


def force_pick_level0(num_levels: int, runs: Sequence[LevelSortedRun], options: Options,
                      *, local_hour: int | None = None) -> CompactUnit | None:
    """All level-0 runs (plus whatever the size ratio adds) pushed to a level >= 1."""
    runs = list(runs)
    level0_count = next((i for i, r in enumerate(runs) if r.level > 0), len(runs))
    if level0_count == 0:
        return None
    universal = _Universal.of(options, local_hour)
    return universal.for_size_ratio(runs, num_levels - 1, level0_count, force=True)


def _worth_running(unit: CompactUnit | None) -> bool:
    """Java's manager drops empty units and a lone file that would stay at its level."""
    return unit is not None and bool(unit.files) and (
        len(unit.files) > 1 or unit.files[0].level != unit.output_level)


def _covers_all(unit: CompactUnit | None, runs: Sequence[LevelSortedRun]) -> bool:
    return unit is not None and len(unit.files) == sum(len(r.run) for r in runs)


def pick(num_levels: int, runs: Sequence[LevelSortedRun], options: Options,
         state: PickState = PickState(), *, now_ms: int | None = None,
         local_hour: int | None = None) -> Pick:
    """The next compaction of one bucket (None: nothing to do) and the strategy's next state.

    `runs` as `Levels.sorted_runs()` gives them (newest first). `now_ms` (epoch millis) and
    `local_hour` default to the clock. `write-only` tables never compact.
    """
    runs = list(runs)
    if options.write_only:
        return Pick(None, state)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    max_level = num_levels - 1
    unit = _Universal.of(options, local_hour).pick(runs, max_level, now_ms, state.last_full_compaction_ms)
    if unit is None and _forces_level0(options):
        unit, state = _force_level0(num_levels, runs, options, state, local_hour)
    if _covers_all(unit, runs):  # Java restarts the full-compaction clock
        state = replace(state, last_full_compaction_ms=now_ms)
    return Pick(unit if _worth_running(unit) else None, state)


def minor_pick(runs: Sequence[LevelSortedRun], max_level: int, options: Options) -> CompactUnit | None:
    """Plain universal compaction (size amplification, size ratio, run count; no early full
    compaction, no off-peak ratio), as Java's IncrementalClusterStrategy picks; None when
    nothing is worth running."""
    universal = _Universal(options.int("compaction.max-size-amplification-percent"),
                           options.int("compaction.size-ratio"), compaction_trigger(options), None, None, None)
    unit = universal.pick(list(runs), max_level, 0, None)
    return unit if _worth_running(unit) else None


def _force_level0(num_levels: int, runs: list[LevelSortedRun], options: Options, state: PickState,
                  local_hour: int | None) -> tuple[CompactUnit | None, PickState]:
    max_interval = _lookup_max_interval(options)
    if max_interval is not None:
        skips = state.lookup_skips + 1
        if skips != max_interval:
            return None, replace(state, lookup_skips=skips)
        state = replace(state, lookup_skips=0)
    return force_pick_level0(num_levels, runs, options, local_hour=local_hour), state


# --- full compaction ----------------------------------------------------------------------------


def full_compaction_unit(runs: Sequence[LevelSortedRun], num_levels: int, *,
                         force_rewrite_all_files: bool = False,
                         files_to_rewrite: Collection[str] = ()) -> CompactUnit | None:
    """An explicit full compaction: every run to the max level.

    When everything already is one max-level run, only its files named in `files_to_rewrite`
    (deletion vectors, expired records) are rewritten, or all of them with
    `force_rewrite_all_files` (`compaction.force-rewrite-all-files`); None when there are none.
    """
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        files = tuple(f for f in runs[0].run.files
                      if force_rewrite_all_files or f.file_name in files_to_rewrite)
        return CompactUnit(max_level, files, file_rewrite=True) if files else None
    return _unit(max_level, runs)


def full_compaction_delta_commits(options: Options) -> int | None:
    """Commits between full compactions: `full-compaction.delta-commits` (at least 1), 1 for the
    full-compaction changelog producer, None when full compaction is not scheduled."""
    delta = options.int("full-compaction.delta-commits")
    if delta is None and options.changelog_producer != "full-compaction":
        return None
    return max(delta if delta is not None else -1, 1)


def full_compaction_due(commit_identifier: int, delta_commits: int) -> bool:
    """Whether the commit with this identifier must fully compact the buckets it wrote.

    Every `delta_commits`-th identifier, and every batch commit (identifier = Long.MAX_VALUE).
    """
    return commit_identifier % delta_commits == 0 or commit_identifier == LONG_MAX


def drops_deletes(unit: CompactUnit, levels: Levels, deletion_vectors: bool) -> bool:
    """Whether compaction output may drop -D/-U rows: nothing older can remain below it."""
    if unit.output_level == 0:
        return False
    return unit.output_level >= levels.non_empty_highest_level or deletion_vectors


def estimate_last_full_compaction(files: Iterable[DataFileMeta], num_levels: int) -> int | None:
    """Epoch millis of the newest max-level file: Java's restored full-compaction clock."""
    max_level = num_levels - 1
    times = [f.creation_time for f in files if f.level == max_level and f.creation_time is not None]
    if not times:
        return None
    newest = max(times)  # the local wall clock read as UTC; Java re-reads it in the local zone
    local = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=newest)
    return int(local.timestamp() * 1000)
