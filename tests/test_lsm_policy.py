"""Universal compaction picking, with the vectors of Java's UniversalCompactionTest (sizes only)."""

import datetime as dt

import pytest

from tarn.lsm.levels import LevelSortedRun, Levels, SortedRun
from tarn.lsm.policy import (
    LONG_MAX, CompactUnit, PickState, create_unit, drops_deletes, estimate_last_full_compaction,
    force_pick_level0, full_compaction_delta_commits, full_compaction_due, full_compaction_unit,
    num_levels, pick, should_stop_writes, stop_trigger,
)
from tarn.meta.manifest import DataFileMeta
from tarn.options import Options
from tarn.types import INT
from tests.helpers import data_file_meta

KEY = [INT(False)]


def file(size: int, level: int = 0, lo: int = 0, hi: int = 0, created: int | None = None) -> DataFileMeta:
    return data_file_meta(lo, hi, file_size=size, level=level, creation_time=created)


def level(lv: int, size: int) -> LevelSortedRun:
    return LevelSortedRun(lv, SortedRun((file(size, lv),)))


def level0(*sizes: int) -> list[LevelSortedRun]:
    return [level(0, s) for s in sizes]


def opts(max_amp=25, ratio=1, trigger=3, **extra) -> Options:
    raw = {"compaction.max-size-amplification-percent": str(max_amp), "compaction.size-ratio": str(ratio),
           "num-sorted-run.compaction-trigger": str(trigger)}
    raw.update({k.replace("_", "-"): v for k, v in extra.items()})
    return Options(raw)


def sizes(unit: CompactUnit | None) -> list[int] | None:
    return None if unit is None else [f.file_size for f in unit.files]


def picked(num_levels_, runs, options, state=PickState(), **kw):
    return pick(num_levels_, runs, options, state, now_ms=0, **kw).unit


# --- output level -------------------------------------------------------------------------------

@pytest.mark.parametrize("run_count, expected", [(1, 1), (2, 1), (3, 2), (4, 3), (5, 5)])
def test_output_level(run_count, expected):
    runs = [level(lv, 1) for lv in (0, 0, 1, 3, 4)]
    assert create_unit(runs, 5, run_count).output_level == expected


def test_output_level_never_zero_takes_in_the_next_leveled_run():
    runs = [level(lv, 1) for lv in (0, 0, 0, 2)]
    unit = create_unit(runs, 4, 1)
    assert (unit.output_level, len(unit.files)) == (4, 4)  # swallowed everything -> max level
    runs = [level(lv, 1) for lv in (0, 0, 2, 3)]
    unit = create_unit(runs, 4, 1)
    assert (unit.output_level, len(unit.files)) == (2, 3)  # swallowed up to the level-2 run


# --- pick ---------------------------------------------------------------------------------------

def test_pick_by_size_amplification_ratio_and_run_count():
    o = opts(25, 1, 3)
    assert sizes(picked(3, level0(1, 2, 3, 3), o)) == [1, 2, 3, 3]
    assert sizes(picked(4, [level(0, 1), level(1, 1), level(2, 1), level(3, 50)], o)) == [1, 1, 1]
    # by file num; 3 joins by size ratio once the pick has been triggered
    assert sizes(picked(4, [level(0, 1), level(1, 2), level(2, 3), level(3, 50)], o)) == [1, 2, 3]


def test_no_output_level0():
    o = opts(25, 1, 3)
    unit = picked(3, [level(0, 1), level(0, 1), level(1, 1), level(2, 50)], o)
    assert sizes(unit) == [1, 1, 1] and unit.output_level == 1
    assert sizes(picked(3, [level(0, 1), level(0, 2), level(1, 3), level(2, 50)], o)) == [1, 2, 3]


def test_file_num_compaction_considers_level2():
    unit = picked(3, [level(0, 10), level(0, 20), level(1, 97), level(2, 100)], opts(200, 1, 3))
    assert len(unit.files) == 4 and unit.output_level == 2


def test_extreme_case_no_output_level0():
    runs = level0(1, 1, 1, 1024, 1024 * 1024)
    unit = picked(6, runs, opts(200, 1, 5))
    assert sizes(unit) == [1, 1, 1, 1024, 1024 * 1024] and unit.output_level == 5


def test_nothing_below_trigger():
    assert picked(6, level0(1, 10), opts(200, 1, 5)) is None
    assert picked(6, [], opts()) is None


def test_write_only_never_compacts():
    assert picked(3, level0(1, 2, 3, 3), opts(**{"write-only": "true"})) is None


def test_lone_file_staying_at_its_level_is_dropped():
    # interval full compaction of a single max-level run would keep the file where it is
    o = opts(**{"compaction.optimization-interval": "1 s"})
    assert picked(3, [level(2, 5)], o) is None


# --- size amplification / ratio sequences (UniversalCompactionTest) ----------------------------

def _universal_size_amp(o, size_list):
    from tarn.lsm.policy import _Universal
    return _Universal.of(o, 0).for_size_amp(level0(*size_list), 3)


def test_size_amplification_sequence():
    o = opts(25, 0, 1)
    current = [1]
    expected = [[2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11], [1, 1, 11],
                [14], [1, 14], [1, 1, 14], [1, 1, 1, 14], [18]]
    for want in expected:
        current = [1] + current
        unit = _universal_size_amp(o, current)
        if unit is not None:
            current = [sum(sizes(unit))]
        assert current == want


def _append_and_pick_ratio(o, current):
    from tarn.lsm.policy import _Universal
    runs = [level(i, s) for i, s in enumerate(current)]
    unit = _Universal.of(o, 0).for_size_ratio(runs, len(current)) if len(runs) >= o.int(
        "num-sorted-run.compaction-trigger") else None
    if unit is None:
        return current
    rest = list(current)
    for s in sizes(unit):
        rest.remove(s)
    return [sum(sizes(unit))] + rest


def test_size_ratio_sequence():
    o = opts(25, 1, 5)
    current = [1, 1, 1, 1]
    expected = [[5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5],
                [1, 3, 4, 5], [2, 3, 4, 5], [1, 2, 3, 4, 5], [16], [1, 16], [1, 1, 16], [1, 1, 1, 16],
                [4, 16], [1, 4, 16], [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16], [2, 3, 4, 16],
                [1, 2, 3, 4, 16], [11, 16]]
    for want in expected:
        current = _append_and_pick_ratio(o, [1] + current)
        assert current == want


def test_size_ratio_threshold():
    assert _append_and_pick_ratio(opts(25, 10, 2), [8, 9, 10]) == [8, 9, 10]
    assert _append_and_pick_ratio(opts(25, 20, 2), [8, 9, 10]) == [27]


def test_off_peak_ratio_applies_only_in_off_peak_hours():
    o = opts(1000, 10, 3, **{"compaction.offpeak.start.hour": "22", "compaction.offpeak.end.hour": "6",
                           "compaction.offpeak-ratio": "10"})
    runs = [level(0, 8), level(1, 9), level(2, 10)]
    assert picked(3, runs, o, local_hour=12) is None
    assert sizes(picked(3, runs, o, local_hour=23)) == [8, 9, 10]
    assert sizes(picked(3, runs, o, local_hour=3)) == [8, 9, 10]


# --- early full compaction ------------------------------------------------------------------------

def test_optimization_interval():
    o = opts(100, 1, 3, **{"compaction.optimization-interval": "1 s"})
    runs = [level(0, 1), level(1, 3), level(2, 5)]
    state = PickState()
    unit, state = pick(3, runs, o, state, now_ms=0)  # never compacted: full now
    assert sizes(unit) == [1, 3, 5] and state.last_full_compaction_ms == 0
    unit, state = pick(3, runs, o, state, now_ms=1001)
    assert sizes(unit) == [1, 3, 5] and state.last_full_compaction_ms == 1001
    unit, state = pick(3, runs, o, state, now_ms=1001)
    assert unit is None
    unit, state = pick(3, [level(0, 3), level(1, 3), level(2, 5)], o, state, now_ms=1500)
    assert sizes(unit) == [3, 3, 5] and state.last_full_compaction_ms == 1500  # size amp restarts it
    unit, state = pick(3, runs, o, state, now_ms=2001)
    assert unit is None


def test_total_and_incremental_size_thresholds():
    o = opts(100, 1, 3, **{"compaction.total-size-threshold": "10 b"})
    assert sizes(picked(3, [level(0, 1), level(1, 3), level(2, 5)], o)) == [1, 3, 5]
    assert picked(3, [level(0, 2), level(1, 6), level(2, 10)], o) is None
    assert picked(3, [level(2, 5)], o) is None
    o = opts(100, 1, 3, **{"compaction.incremental-size-threshold": "7 b"})
    assert picked(3, [level(0, 2), level(1, 6), level(2, 100)], o).output_level == 2
    assert picked(3, [level(0, 2), level(1, 5), level(2, 100)], o) is None


def test_estimate_last_full_compaction_reads_max_level_creation_times():
    created = 1_700_000_000_000
    files = [file(1, 2, created=created), file(1, 2, created=created - 5), file(1, 1, created=created + 9)]
    local = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=created)
    assert estimate_last_full_compaction(files, 3) == int(local.timestamp() * 1000)
    assert estimate_last_full_compaction(files[2:], 3) is None


# --- force up level 0 (lookup) ------------------------------------------------------------------

def test_lookup_radical_forces_level0_up():
    o = opts(25, 1, 3, **{"changelog-producer": "lookup"})
    unit = picked(3, level0(1, 2, 2, 2), o)
    assert sizes(unit) == [1, 2, 2, 2] and unit.output_level == 2
    unit = picked(3, [level(0, 1), level(1, 2), level(2, 2)], o)
    assert sizes(unit) == [1, 2, 2] and unit.output_level == 2
    unit = picked(3, [level(0, 1), level(2, 2)], o)
    assert sizes(unit) == [1] and unit.output_level == 1
    assert picked(3, [level(1, 1), level(2, 2)], o) is None  # no level-0 file


def test_force_up_level0_option_and_deletion_vectors_force_too():
    runs = [level(0, 1), level(2, 2)]
    assert picked(3, runs, opts()) is None
    assert sizes(picked(3, runs, opts(**{"compaction.force-up-level-0": "true"}))) == [1]
    assert sizes(picked(3, runs, opts(**{"deletion-vectors.enabled": "true"}))) == [1]
    assert sizes(picked(3, runs, opts(**{"merge-engine": "first-row"}))) == [1]


def test_lookup_gentle_forces_every_max_interval_picks():
    o = opts(25, 1, 5, **{"changelog-producer": "lookup", "lookup-compact": "GENTLE",
                          "lookup-compact.max-interval": "5"})
    for runs, want, out in [(level0(1, 2, 2, 2), [1, 2, 2, 2], 2),
                            ([level(0, 2), level(1, 2), level(2, 2)], [2, 2, 2], 2),
                            ([level(0, 1), level(2, 2)], [1], 1)]:
        state = PickState()
        for i in range(1, 6):
            unit, state = pick(3, runs, o, state, now_ms=0)
            if i < 5:
                assert unit is None and state.lookup_skips == i
            else:
                assert sizes(unit) == want and unit.output_level == out and state.lookup_skips == 0


def test_force_pick_level0_without_level0_files():
    assert force_pick_level0(3, [level(1, 1)], opts()) is None


# --- full compaction, stop trigger, defaults --------------------------------------------------

def test_full_compaction_unit():
    runs = [level(0, 1), level(1, 2)]
    unit = full_compaction_unit(runs, 3)
    assert sizes(unit) == [1, 2] and unit.output_level == 2 and not unit.file_rewrite
    assert full_compaction_unit([], 3) is None
    top = LevelSortedRun(2, SortedRun((file(5, 2, 0, 1), file(6, 2, 2, 3))))
    assert full_compaction_unit([top], 3) is None
    unit = full_compaction_unit([top], 3, files_to_rewrite={top.run.files[1].file_name})
    assert sizes(unit) == [6] and unit.file_rewrite and unit.output_level == 2
    assert sizes(full_compaction_unit([top], 3, force_rewrite_all_files=True)) == [5, 6]


def test_full_compaction_delta_commits():
    assert full_compaction_delta_commits(Options({})) is None
    assert full_compaction_delta_commits(Options({"full-compaction.delta-commits": "3"})) == 3
    assert full_compaction_delta_commits(Options({"full-compaction.delta-commits": "0"})) == 1
    assert full_compaction_delta_commits(Options({"changelog-producer": "full-compaction"})) == 1
    assert [i for i in range(1, 10) if full_compaction_due(i, 3)] == [3, 6, 9]
    assert full_compaction_due(LONG_MAX, 7)


def test_stop_trigger_and_num_levels_defaults():
    assert stop_trigger(Options({})) == 8 and num_levels(Options({})) == 6
    o = Options({"num-sorted-run.compaction-trigger": "10", "num-sorted-run.stop-trigger": "4",
                 "num-levels": "3"})
    assert stop_trigger(o) == 10 and num_levels(o) == 3
    assert not should_stop_writes(level0(*[1] * 8), Options({}))
    assert should_stop_writes(level0(*[1] * 9), Options({}))
    assert should_stop_writes(9, Options({}))


def test_drops_deletes():
    levels = Levels.from_files([file(1, 0), file(1, 3, 0, 1)], 6, KEY)
    assert not drops_deletes(CompactUnit(0, ()), levels, True)
    assert not drops_deletes(CompactUnit(2, ()), levels, False)
    assert drops_deletes(CompactUnit(2, ()), levels, True)
    assert drops_deletes(CompactUnit(3, ()), levels, False)


def test_pick_on_real_levels_compacts_to_max_level():
    files = [file(10, 0, i, i + 5) for i in range(5)]
    levels = Levels.from_files(files, 6, KEY)
    unit = picked(levels.num_levels, levels.sorted_runs(), Options({}))
    assert unit.output_level == 5 and list(unit.files) == levels.all_files()
