"""Interval partition: sections of overlapping key ranges, each split into the fewest sorted runs."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tarn.codec.binary_row import deserialize_row
from tarn.lsm.intervals import partition_sections
from tarn.lsm.levels import key_order
from tarn.meta.manifest import DataFileMeta
from tarn.types import INT, STRING
from tests.helpers import data_file_meta

KEY = [INT(False)]


def file(lo, hi, types=KEY) -> DataFileMeta:
    return data_file_meta(lo, hi, key_types=types, file_size=100, row_count=25, max_sequence_number=24)


def ranges(sections, types=KEY) -> list[list[list[tuple]]]:
    """Sections as lists of runs as lists of (min, max) key values."""
    def values(row):
        found = deserialize_row(row, types)
        return found[0] if len(found) == 1 else tuple(found)

    return [[[(values(f.min_key), values(f.max_key)) for f in run.files] for run in section]
            for section in sections]


def as_multisets(sections):
    return [Counter(tuple(run) for run in section) for section in ranges(sections)]


def partition(pairs):
    return partition_sections([file(lo, hi) for lo, hi in pairs], KEY)


def test_same_min_key():
    got = partition([(100, 200), (100, 400), (100, 300), (100, 500)])
    assert ranges(got) == [[[(100, 200)], [(100, 300)], [(100, 400)], [(100, 500)]]]


def test_same_max_key():
    got = partition([(100, 500), (300, 500), (200, 500), (400, 500)])
    assert ranges(got) == [[[(100, 500)], [(200, 500)], [(300, 500)], [(400, 500)]]]


def test_section_partitioning():
    got = partition([(0, 9), (5, 7), (9, 15), (16, 22), (16, 28), (24, 32)])
    assert as_multisets(got) == [
        Counter({((0, 9),): 1, ((5, 7), (9, 15)): 1}),
        Counter({((16, 22), (24, 32)): 1, ((16, 28),): 1}),
    ]


def test_non_overlapping_files_make_one_section_each():
    got = partition([(20, 29), (0, 9), (10, 19)])
    assert ranges(got) == [[[(0, 9)]], [[(10, 19)]], [[(20, 29)]]]


def test_nested_ranges_share_a_section():
    got = partition([(0, 100), (10, 20), (30, 40), (50, 60)])
    assert ranges(got) == [[[(0, 100)], [(10, 20), (30, 40), (50, 60)]]]


def test_touching_ranges_overlap_at_the_shared_key():
    got = partition([(0, 10), (10, 20)])
    assert ranges(got) == [[[(0, 10)], [(10, 20)]]]


def test_empty_input():
    assert partition_sections([], KEY) == []


def test_composite_string_keys():
    types = [STRING(False), INT(False)]
    files = [file(("b", 1), ("b", 9), types), file(("a", 5), ("b", 0), types), file(("c", 0), ("d", 0), types)]
    got = partition_sections(files, types)
    assert ranges(got, types) == [[[(("a", 5), ("b", 0))]], [[(("b", 1), ("b", 9))]], [[(("c", 0), ("d", 0))]]]
    files.append(file(("b", 0), ("b", 1), types))  # bridges the first two
    got = partition_sections(files, types)
    assert ranges(got, types) == [
        [[(("a", 5), ("b", 0)), (("b", 1), ("b", 9))], [(("b", 0), ("b", 1))]],
        [[(("c", 0), ("d", 0))]],
    ]


intervals = st.lists(
    st.tuples(st.integers(-50, 50), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=40)


@settings(max_examples=200, deadline=None)
@given(intervals)
def test_partition_properties(pairs):
    files = [file(lo, hi) for lo, hi in pairs]
    sections = partition_sections(files, KEY)
    order = key_order(KEY)
    seen = [f.file_name for section in sections for run in section for f in run.files]
    assert sorted(seen) == sorted(f.file_name for f in files)  # every file in exactly one run
    bounds = []
    for section in sections:
        assert section and all(run.files for run in section)
        for run in section:
            run.validate(order)  # no overlap inside a run
        section_files = [f for run in section for f in run.files]
        lo = min(order(f.min_key) for f in section_files)
        hi = max(order(f.max_key) for f in section_files)
        bounds.append((lo, hi))
        # fewest runs: as many as the deepest point of overlap inside the section
        depth = max(sum(1 for f in section_files if order(f.min_key) <= order(g.min_key) <= order(f.max_key))
                    for g in section_files)
        assert len(section) == depth
    for (_, hi), (lo, _) in zip(bounds, bounds[1:]):
        assert hi < lo  # sections are disjoint and in key order
