"""DeletionVectorFiles: index files written and read back on a local directory, the cache, and
the helpers over a snapshot's index manifest."""

import os
import shutil
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from tarn.codec.deletion_vector import decode_vector
from tarn.errors import CorruptFile, FileMissing
from tarn.fs import local_file_io
from tarn.meta.manifest import (
    ADD,
    DELETE,
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    DeletionVectorRange,
    IndexManifestEntry,
)
from tarn.store import deletion_vectors as dv
from tarn.store.deletion_vectors import (
    DeletionVectorFiles,
    deleted_row_counts,
    deletion_vectors_by_file,
    live_index_entries,
)
from tarn.store.manifests import ManifestStore

PARTITION = b"\x00\x00\x00\x00" + b"\x00" * 8  # an arity-0 BinaryRow is enough here


@pytest.fixture(autouse=True)
def fresh_cache():
    dv.clear_cache()
    yield
    dv.set_cache_capacity(dv.DEFAULT_CACHE_BYTES)
    dv.clear_cache()


@pytest.fixture
def files(tmp_path):
    return DeletionVectorFiles(local_file_io(), str(tmp_path / "t"))


def test_write_and_read_back(files, tmp_path):
    vectors = {"data-a-0.parquet": np.array([0, 5, 6]), "data-a-1.parquet": np.array([], dtype=np.int64),
               "data-a-2.parquet": np.arange(10_000, 30_000)}
    entry = files.write(PARTITION, 3, vectors, bitmap64=False)
    assert entry.kind == ADD and entry.index_type == DELETION_VECTORS_INDEX
    assert (entry.partition, entry.bucket) == (PARTITION, 3)
    assert entry.file_name.startswith("index-") and entry.file_name.endswith("-0")
    path = tmp_path / "t" / "index" / entry.file_name
    assert os.listdir(tmp_path / "t" / "index") == [entry.file_name]  # no temp file left
    assert entry.file_size == path.stat().st_size
    assert entry.row_count == 2
    assert [(r.data_file, r.cardinality) for r in entry.dv_ranges] == [("data-a-0.parquet", 3),
                                                                       ("data-a-2.parquet", 20_000)]
    assert entry.dv_ranges[0].offset == 1
    data = path.read_bytes()
    for r in entry.dv_ranges:  # the ranges point at the records
        np.testing.assert_array_equal(decode_vector(data, r.offset, r.length, "i", r.data_file),
                                      np.asarray(vectors[r.data_file]))
    read = files.read(entry)
    assert list(read) == ["data-a-0.parquet", "data-a-2.parquet"]
    assert read["data-a-0.parquet"].tolist() == [0, 5, 6]
    np.testing.assert_array_equal(read["data-a-2.parquet"], np.arange(10_000, 30_000))
    assert files.read_one(entry, "data-a-0.parquet").tolist() == [0, 5, 6]
    assert files.read_one(entry, "data-a-1.parquet") is None
    assert files.read_one(entry, "other.parquet") is None
    second = files.write(PARTITION, 3, {"x": np.array([1])})
    assert second.file_name.endswith("-1") and second.file_name[:-1] == entry.file_name[:-1]


def test_concurrent_writes_get_distinct_files(files):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        entries = list(pool.map(lambda i: files.write(PARTITION, i, {"f": np.array([i])}), range(64)))
    assert len({e.file_name for e in entries}) == 64
    assert [files.read_one(e, "f").tolist() for e in entries] == [[i] for i in range(64)]


def test_bitmap64_files(files):
    entry = files.write(PARTITION, 0, {"big.parquet": np.array([3, 2**33 + 1])}, bitmap64=True)
    assert entry.dv_ranges[0].length == entry.file_size - 1  # the whole record
    assert files.read_one(entry, "big.parquet").tolist() == [3, 2**33 + 1]


def test_nothing_written_when_every_vector_is_empty(files, tmp_path):
    assert files.write(PARTITION, 0, {"a": np.array([], dtype=np.int64)}, bitmap64=False) is None
    assert files.write(PARTITION, 0, {}, bitmap64=True) is None
    assert not (tmp_path / "t" / "index").exists()


def test_results_cannot_change_the_cache(files):
    entry = files.write(PARTITION, 0, {"a": np.array([1, 2])})
    first = files.read(entry)
    with pytest.raises(ValueError):
        first["a"][0] = 7
    first["a"] = np.array([9])
    del first["a"]
    assert files.read(entry)["a"].tolist() == [1, 2]
    assert files.read_one(entry, "a").tolist() == [1, 2]


def test_cache_serves_immutable_files_without_reading_them_again(files, tmp_path):
    entry = files.write(PARTITION, 0, {"a": np.array([1, 2])})
    assert files.read(entry)["a"].tolist() == [1, 2]
    os.remove(tmp_path / "t" / "index" / entry.file_name)
    assert files.read_one(entry, "a").tolist() == [1, 2]
    dv.clear_cache()
    with pytest.raises(FileMissing, match=entry.file_name):
        files.read(entry)


def test_cache_never_answers_for_another_file(files, tmp_path):
    """Same data file names, other index files (another table, a rewritten bucket): each read
    gets its own file's vectors."""
    one = files.write(PARTITION, 0, {"a": np.array([1]), "b": np.array([2])})
    two = files.write(PARTITION, 0, {"a": np.array([3, 4])})
    other_table = DeletionVectorFiles(local_file_io(), str(tmp_path / "u"))
    three = other_table.write(PARTITION, 0, {"a": np.array([5, 6, 7])})
    assert files.read_one(one, "a").tolist() == [1]
    assert files.read_one(two, "a").tolist() == [3, 4]
    assert other_table.read_one(three, "a").tolist() == [5, 6, 7]
    assert files.read_one(one, "a").tolist() == [1]
    # the same name under another root is another file (a copied table, an external path)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copy(tmp_path / "u" / "index" / three.file_name, moved / one.file_name)
    external = replace(three, file_name=one.file_name, external_path=str(moved / one.file_name))
    assert files.read_one(external, "a").tolist() == [5, 6, 7]
    assert files.read_one(one, "a").tolist() == [1]


def test_cache_is_bounded_in_bytes(files):
    dv.set_cache_capacity(200_000)
    big = [files.write(PARTITION, 0, {"a": np.arange(0, 20_000, 2)}) for _ in range(3)]  # 80 kB each
    for entry in big:
        files.read(entry)
    assert len(dv._CACHE) == 2 and dv._CACHE.used <= 200_000
    dv.set_cache_capacity(50_000)  # smaller than one file: nothing kept
    assert len(dv._CACHE) == 0
    files.read(big[0])
    assert len(dv._CACHE) == 0
    dv.set_cache_capacity(0)
    assert files.read(big[1])["a"].size == 10_000


def test_damaged_file_raises_corrupt_file_naming_both_files(files, tmp_path):
    entry = files.write(PARTITION, 0, {"a": np.array([1]), "data-b.parquet": np.arange(50)})
    path = tmp_path / "t" / "index" / entry.file_name
    data = path.read_bytes()
    path.write_bytes(data[:-2] + bytes([data[-2] ^ 1]) + data[-1:])
    with pytest.raises(CorruptFile, match=rf"{entry.file_name}.*data-b\.parquet.*CRC32"):
        files.read_one(entry, "data-b.parquet")
    with pytest.raises(CorruptFile, match=entry.file_name):
        files.read(replace(entry, index_type=HASH_INDEX))


def index_entry(name, bucket, ranges, kind=ADD, index_type=DELETION_VECTORS_INDEX):
    return IndexManifestEntry(kind, PARTITION, bucket, index_type, name, 100, len(ranges),
                              tuple(DeletionVectorRange(f, 1, 10, c) for f, c in ranges))


def test_live_index_entries_of_a_snapshot(tmp_path):
    manifests = ManifestStore(local_file_io(), str(tmp_path / "t" / "manifest"), [])
    live = index_entry("index-1", 0, [("a", 2)])
    gone = index_entry("index-0", 0, [("a", 1)], kind=DELETE)
    name = manifests.write_index_manifest([live, gone])
    assert live_index_entries(manifests, SimpleNamespace(index_manifest=name)) == [live]
    assert live_index_entries(manifests, SimpleNamespace(index_manifest=None)) == []
    assert live_index_entries(manifests, None) == []
    with pytest.raises(FileMissing):
        live_index_entries(manifests, SimpleNamespace(index_manifest="index-manifest-gone-0"))


def test_deletion_vectors_by_file():
    first = index_entry("index-1", 0, [("a", 2), ("b", 1)])
    second = index_entry("index-2", 1, [("c", 5)])
    hash_index = index_entry("index-3", 0, [], index_type=HASH_INDEX)
    deleted = index_entry("index-4", 0, [("z", 1)], kind=DELETE)
    found = deletion_vectors_by_file([first, second, hash_index, deleted])
    assert found == {(PARTITION, 0): {"a": first, "b": first}, (PARTITION, 1): {"c": second}}
    with pytest.raises(CorruptFile, match="data file b.*index-1.*index-5"):
        deletion_vectors_by_file([first, index_entry("index-5", 0, [("b", 1)])])


def test_deleted_row_counts_use_cardinality_or_read_the_vector(files):
    written = files.write(PARTITION, 2, {"a": np.array([1, 2, 3]), "b": np.array([9])})
    without = replace(written, dv_ranges=tuple(replace(r, cardinality=None) for r in written.dv_ranges))
    made_up = index_entry("index-not-on-disk", 4, [("c", 11)])  # cardinality known: not read
    assert deleted_row_counts(files, [without, made_up]) == {
        (PARTITION, 2, "a"): 3, (PARTITION, 2, "b"): 1, (PARTITION, 4, "c"): 11}
