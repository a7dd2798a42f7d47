"""The write path's shortcuts agree with the plain computations they replace: packed stable key
order vs numpy's stable argsort, column-parallel take vs Arrow's take, the one-bucket dynamic
assignment vs the general assignment."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from tarn.write.assign import AssignerSpec, PartitionIndex
from tarn.write.grouping import PARALLEL_TAKE_ROWS, key_order, stable_numeric_order, take_rows


@pytest.mark.parametrize("low, span", [(0, 1000), (-(1 << 62), 1 << 30), (5, 1 << 40), (-(1 << 63), 1 << 63)])
def test_stable_numeric_order_is_a_stable_argsort(low, span):
    rng = np.random.default_rng(span % 1000)
    keys = (low + rng.integers(0, span, 50_000, dtype=np.int64)).astype(np.int64)
    keys[::7] = keys[3]  # many repeats: ties must keep arrival order
    assert np.array_equal(stable_numeric_order(keys), np.argsort(keys, kind="stable"))


def test_stable_numeric_order_small_and_narrow_types():
    assert stable_numeric_order(np.zeros(0, np.int64)).tolist() == []
    assert stable_numeric_order(np.array([7], np.int32)).tolist() == [0]
    keys = np.array([3, -1, 3, 2, -1], dtype=np.int8)
    assert stable_numeric_order(keys).tolist() == [1, 4, 3, 0, 2]


def test_key_order_on_timestamps_and_strings():
    stamps = pa.array(np.array([5, 1, 5, 3], dtype="datetime64[us]"))
    assert key_order(pa.table({"t": stamps}), ["t"]).tolist() == [1, 3, 0, 2]
    words = pa.table({"s": ["b", "a", "b", "c"], "n": [2, 9, 1, 0]})
    assert key_order(words, ["s"]).tolist() == [1, 0, 2, 3]
    assert key_order(words, ["s", "n"]).tolist() == [1, 2, 0, 3]


def test_take_rows_matches_arrow_take():
    n = PARALLEL_TAKE_ROWS + 123
    rng = np.random.default_rng(3)
    table = pa.table({"k": np.arange(n), "s": pa.array([f"s{i}" for i in range(n)]),
                      "f": pa.array(rng.random(n)).cast(pa.float32())})
    indices = rng.permutation(n)
    taken = take_rows(table, indices)
    assert taken.schema == table.schema
    assert taken.equals(table.take(pa.array(indices)))
    assert take_rows(table.slice(0, 10), np.array([9, 0])).to_pydict() == table.take([9, 0]).to_pydict()


def _index(target: int, files) -> PartitionIndex:
    index = PartitionIndex(AssignerSpec(target, -1), (0,), 0)
    index.load(files)
    return index


def test_one_bucket_assignment_matches_the_general_path():
    rng = np.random.default_rng(5)
    hashes = np.unique(rng.integers(-(1 << 31), 1 << 31, 20_000).astype(np.int32))
    rows = rng.permutation(np.concatenate([hashes, hashes[:500]]))  # repeats too
    fast = _index(1_000_000, [(3, hashes)])
    assert fast.assign(rows).tolist() == [3] * len(rows)
    assert fast.new == []
    # a hash outside the index: the general path assigns it (to the one bucket, which has room)
    fresh = np.concatenate([rows, np.array([hashes.max() + 1], np.int32)])
    general = _index(1_000_000, [(3, hashes)])
    assert general.assign(fresh).tolist() == [3] * len(fresh)
    assert [h.tolist() for h, _ in general.new] == [[int(hashes.max()) + 1]]


def test_two_known_buckets_take_the_general_path():
    rng = np.random.default_rng(6)
    hashes = np.unique(rng.integers(-(1 << 31), 1 << 31, 10_000).astype(np.int32))
    first, second = hashes[: len(hashes) // 2], hashes[len(hashes) // 2:]
    index = _index(len(first), [(0, first), (1, second)])
    rows = rng.permutation(hashes)
    expected = np.where(np.isin(rows, first), 0, 1)
    assert index.assign(rows).tolist() == expected.tolist()


def _written_meta(tmp_path, name: str, rows: pa.Table):
    import tarn

    table = tarn.Catalog(str(tmp_path)).create_table(f"db.{name}", schema=rows.schema, primary_key=["k"],
                                                     options={"bucket": "1"})
    table.write(rows)
    (split,) = table.scan().plan()
    (meta,) = split.files
    return meta


def test_stats_collected_beside_the_encoding_equal_sequential_ones(tmp_path, monkeypatch):
    import tarn.data.writer as data_writer

    n = data_writer.PARALLEL_STATS_ROWS + 1000
    rng = np.random.default_rng(8)
    rows = pa.table({"k": rng.permutation(n), "s": pa.array([f"v{i % 977}" for i in range(n)]),
                     "d": pa.array(rng.random(n))})
    parallel = _written_meta(tmp_path, "parallel", rows)
    monkeypatch.setattr(data_writer, "PARALLEL_STATS_ROWS", 1 << 40)
    sequential = _written_meta(tmp_path, "sequential", rows)
    keep = ("file_size", "row_count", "min_key", "max_key", "key_stats", "value_stats", "min_sequence_number",
            "max_sequence_number", "delete_row_count")
    assert parallel.file_size > 0 and parallel.row_count == n
    assert {k: getattr(parallel, k) for k in keep} == {k: getattr(sequential, k) for k in keep}
