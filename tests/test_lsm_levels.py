"""Levels: restoring a bucket's LSM tree, level-0 order, sorted runs and immutable updates."""

import math

import pytest

from tarn.codec.binary_row import serialize_row
from tarn.errors import CorruptFile, InvalidOption
from tarn.lsm.levels import LevelSortedRun, Levels, SortedRun, key_order
from tarn.meta.manifest import DataFileMeta
from tarn.types import BYTES, DOUBLE, INT, STRING
from tests.helpers import data_file_meta

KEY = [INT(False)]


def file(level: int, lo: int = 0, hi: int = 0, seq: tuple[int, int] = (0, 1), size: int = 1,
         name: str | None = None, created: int | None = None) -> DataFileMeta:
    return data_file_meta(lo, hi, file_name=name, file_size=size, min_sequence_number=seq[0],
                          max_sequence_number=seq[1], level=level, creation_time=created)


def names(files) -> list[str]:
    return [f.file_name for f in files]


def test_non_empty_highest_level():
    assert Levels.from_files([], 3, KEY).non_empty_highest_level == -1
    assert Levels.from_files([file(0), file(0)], 3, KEY).non_empty_highest_level == 0
    assert Levels.from_files([file(0), file(1)], 3, KEY).non_empty_highest_level == 1
    assert Levels.from_files([file(0), file(1), file(2)], 3, KEY).non_empty_highest_level == 2


def test_level0_files_with_same_sequence_numbers_are_all_kept():
    assert len(Levels.from_files([file(0), file(0)], 3, KEY).all_files()) == 2


def test_level0_order_newest_first_then_min_seq_creation_time_name():
    a = file(0, seq=(0, 5), name="a")
    b = file(0, seq=(3, 9), name="b")
    c = file(0, seq=(1, 5), name="c")
    d = file(0, seq=(1, 5), name="d", created=10)
    e = file(0, seq=(1, 5), name="e", created=5)
    levels = Levels.from_files([a, b, c, d, e], 3, KEY)
    assert names(levels.level0) == ["b", "a", "c", "e", "d"]


def test_sorted_runs_level0_first_then_each_non_empty_level():
    l0_old, l0_new = file(0, seq=(0, 1)), file(0, seq=(2, 3))
    l2 = [file(2, 10, 19), file(2, 0, 9)]
    l4 = [file(4, 0, 100)]
    levels = Levels.from_files([l0_old, *l2, l0_new, *l4], 5, KEY)
    runs = levels.sorted_runs()
    assert [r.level for r in runs] == [0, 0, 2, 4]
    assert runs[0].run.files == (l0_new,) and runs[1].run.files == (l0_old,)
    assert runs[2].run.files == (l2[1], l2[0])  # ordered by min key
    assert levels.number_of_sorted_runs == 4
    assert (levels.num_levels, levels.max_level) == (5, 4)
    assert levels.total_size == 5
    assert levels.run_of_level(3) == SortedRun()
    assert isinstance(runs[0], LevelSortedRun)


def test_num_levels_grows_to_fit_restored_files():
    levels = Levels.from_files([file(7)], 3, KEY)
    assert levels.num_levels == 8 and levels.max_level == 7
    with pytest.raises(InvalidOption, match="num-levels"):
        Levels.from_files([], 1, KEY)


def test_overlapping_files_in_a_level_are_rejected():
    with pytest.raises(CorruptFile, match="level 1"):
        Levels.from_files([file(1, 0, 10), file(1, 10, 20)], 3, KEY)
    with pytest.raises(CorruptFile):
        SortedRun.from_unsorted([file(1, 0, 10), file(1, 5, 6)], key_order(KEY))


def test_update_returns_a_new_tree():
    l0 = [file(0, 0, 50, seq=(i, i)) for i in range(3)]
    l1 = [file(1, 0, 9), file(1, 20, 29)]
    levels = Levels.from_files(l0 + l1, 3, KEY)
    compacted = [file(1, 0, 14), file(1, 15, 19)]
    after = levels.update(l0[:2] + l1[:1], compacted)
    assert names(levels.all_files()) == names([l0[2], l0[1], l0[0]] + l1)  # unchanged
    assert names(after.level0) == names(l0[2:])
    assert names(after.run_of_level(1).files) == names(compacted + l1[1:])  # in key order
    with pytest.raises(CorruptFile, match="level 1"):  # 15..50 would overlap the kept 20..29
        levels.update(l1[:1], [file(1, 0, 14), file(1, 15, 50)])
    ok = levels.update(l0 + l1, [file(2, 0, 50)])
    assert ok.number_of_sorted_runs == 1 and ok.non_empty_highest_level == 2


def test_update_upgrades_a_file_to_a_higher_level():
    f = file(0, 1, 2)
    levels = Levels.from_files([f], 3, KEY)
    upgraded = DataFileMeta(**{**{s: getattr(f, s) for s in DataFileMeta.__slots__}, "level": 2})
    after = levels.update([f], [upgraded])
    assert after.level0 == () and after.run_of_level(2).files == (upgraded,)


def test_update_rejects_levels_beyond_the_tree():
    with pytest.raises(CorruptFile, match="level 3"):
        Levels.from_files([], 3, KEY).update([], [file(3)])


def test_key_order_matches_java_comparators():
    doubles = [DOUBLE(False)]
    order = key_order(doubles)
    values = [math.nan, 1.5, -0.0, 0.0, -math.inf, math.inf, -2.0]
    ranked = sorted(values, key=lambda v: order(serialize_row([v], doubles)))
    assert [repr(v) for v in ranked] == ["-inf", "-2.0", "-0.0", "0.0", "1.5", "inf", "nan"]
    strings = [STRING(False)]
    order = key_order(strings)
    words = ["b", "a", "ab", "é", "z"]
    assert sorted(words, key=lambda w: order(serialize_row([w], strings))) == sorted(
        words, key=lambda w: w.encode())
    binary = [BYTES(False)]
    order = key_order(binary)
    assert order(serialize_row([b"\x80"], binary)) > order(serialize_row([b"\x7f\xff"], binary))
    composite = [INT(False), STRING(False)]
    order = key_order(composite)
    assert order(serialize_row([1, "z"], composite)) < order(serialize_row([2, "a"], composite))
    nullable = [INT()]
    order = key_order(nullable)
    assert order(serialize_row([None], nullable)) < order(serialize_row([-(2**31)], nullable))
