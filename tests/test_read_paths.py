"""The read path's shortcuts agree with a dict model of the table: small files read together by
one Arrow scan (scan/together.py), the newest-first merge of runs (one sorted key union, older runs read
whole or probed by keys), the decoded-manifest cache."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import tarn
import tarn.codec.data_file as data_file
import tarn.data.reader as data_reader
from tarn.lsm.merge import NewerKeys, keys_in
from tarn.store import manifests

DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


@pytest.fixture
def together(monkeypatch):
    """Counts the scans that read several files at once (so a test can fail if none ran)."""
    calls = []
    real = data_file.read_parquet_files_together

    def counted(file_io, paths, row_counts, fields):
        calls.append(len(paths))
        return real(file_io, paths, row_counts, fields)

    monkeypatch.setattr(data_reader, "read_parquet_files_together", counted)
    return calls


def batch(keys, seed: int, deleted=()) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = np.asarray(keys, dtype=np.int64)
    return pa.table({"day": pa.array(np.array(DAYS)[keys % 3]), "k": pa.array(keys),
                     "v": pa.array(rng.integers(0, 1000, len(keys))),
                     "s": pa.array([f"s{seed}-{k}" for k in keys])})


def apply(model: dict, rows: pa.Table, delete: bool = False) -> None:
    for day, k, v, s in zip(*(rows.column(c).to_pylist() for c in ("day", "k", "v", "s"))):
        if delete:
            model.pop((day, k), None)
        else:
            model[(day, k)] = (v, s)


def upserts_and_deletes(table, seed: int, rounds: int, keys: int, upserted: int, deleted: int) -> dict:
    """3000 rows, then `rounds` of an upsert of `upserted` of `keys` keys and a delete of
    `deleted` of the first 3000; the dict model of the result."""
    rng = np.random.default_rng(seed)
    model: dict = {}
    first = batch(np.arange(3000), 1)
    table.write(first)
    apply(model, first)
    for round_seed in range(2, 2 + rounds):
        upsert = batch(rng.choice(keys, upserted, replace=False), round_seed)
        table.write(upsert)
        apply(model, upsert)
        gone = batch(rng.choice(3000, deleted, replace=False), 100 + round_seed)
        table.delete(gone.select(["day", "k"]))
        apply(model, gone, delete=True)
    return model


def read_model(table, **scan) -> dict:
    got = table.scan(**scan).to_arrow()
    rows = {(d, k): (v, s) for d, k, v, s in zip(*(got.column(c).to_pylist() for c in ("day", "k", "v", "s")))}
    assert len(rows) == got.num_rows, "a key read twice"
    return rows


@pytest.mark.parametrize("options", [{"write-only": "true"}, {"deletion-vectors.enabled": "true"},
                                     {"write-only": "true", "file.format": "orc"}])
def test_many_small_buckets_read_as_the_model(tmp_path, together, options):
    schema = batch([0], 0).schema
    table = tarn.create_table(str(tmp_path / "t"), schema, primary_key=["day", "k"], partition_keys=["day"],
                              options={"bucket": "4", **options})
    model = upserts_and_deletes(table, seed=7, rounds=4, keys=4000, upserted=600, deleted=100)
    assert read_model(table) == model
    if options.get("file.format") != "orc":
        assert together and together[0] >= 8  # read together (orc files are read one by one)
    else:
        assert not together
    day = DAYS[1]
    assert read_model(table, filter=f"day = '{day}' and v < 500") == {
        key: value for key, value in model.items() if key[0] == day and value[0] < 500}


def test_files_of_two_schemas_read_together_by_schema(tmp_path, together):
    table = tarn.create_table(str(tmp_path / "t"), pa.schema([("k", pa.int64()), ("v", pa.string())]),
                              options={"bucket": "2", "bucket-key": "k"})
    for i in range(6):
        table.write(pa.table({"k": [i * 10 + j for j in range(5)], "v": [f"a{i}"] * 5}))
    table.alter(tarn.AddColumn("w", tarn.types.BIGINT()))
    for i in range(6, 12):
        table.write(pa.table({"k": [i * 10 + j for j in range(5)], "v": [f"b{i}"] * 5, "w": [i] * 5}))
    got = table.scan().to_arrow().sort_by("k")
    assert got.column("k").to_pylist() == [i * 10 + j for i in range(12) for j in range(5)]
    assert got.column("w").to_pylist() == [None] * 30 + [i for i in range(6, 12) for _ in range(5)]
    files = sum(len(split.files) for split in table.scan().plan())
    assert len(together) == 2 and sum(together) == files  # one scan per schema, every file


def test_newer_keys_match_keys_in():
    rng = np.random.default_rng(3)
    runs = [np.unique(rng.integers(0, 5000, 2000)) for _ in range(5)]
    newer, seen = NewerKeys(), []
    for run in runs:
        keys = pa.table({"k": run})
        expected = keys_in(keys, seen)
        shadowed = newer.shadowed(keys)
        assert np.array_equal(shadowed, expected)
        newer.add(keys, shadowed)
        seen.append(keys)
    strings = NewerKeys()
    strings.add(pa.table({"k": ["a", "c"]}))
    assert strings.shadowed(pa.table({"k": ["a", "b", "c"]})).tolist() == [True, False, True]
    disjoint = NewerKeys()
    disjoint.add(pa.table({"k": np.arange(10)}))
    assert not disjoint.shadowed(pa.table({"k": np.arange(20, 30)})).any()


def test_decoded_manifests_are_cached_and_stay_correct(tmp_path):
    table = tarn.create_table(str(tmp_path / "t"), pa.schema([("k", pa.int64())]), primary_key=["k"],
                              options={"bucket": "1"})
    table.write(pa.table({"k": [1, 2]}))
    assert table.scan().to_arrow().num_rows == 2
    cached = [key for key in manifests.DECODED._entries if key[0].startswith(str(tmp_path))]
    assert cached  # the manifests of the first scan
    table.write(pa.table({"k": [3]}))
    assert sorted(table.scan().to_arrow().column("k").to_pylist()) == [1, 2, 3]  # new files, new manifests
    reopened = tarn.load_table(str(tmp_path / "t"))
    assert sorted(reopened.scan().to_arrow().column("k").to_pylist()) == [1, 2, 3]


def test_one_sorted_run_of_several_files_reads_without_merging(tmp_path):
    """A fully compacted bucket rolled into several files of one level is one sorted run: read
    file by file (Java's rawConvertible), the keys once each."""
    table = tarn.create_table(str(tmp_path / "t"), pa.schema([("k", pa.int64()), ("s", pa.string())]),
                              primary_key=["k"], options={"bucket": "1", "target-file-size": "64 kb"})
    for seed in range(3):
        keys = np.random.default_rng(seed).choice(20_000, 8_000, replace=False)
        table.write(pa.table({"k": keys, "s": [f"v{seed}-{k}" * 3 for k in keys]}))
    expected = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["k"])
    table.compact(full=True)
    (split,) = table.scan().plan()
    assert len(split.files) > 1 and len({f.level for f in split.files}) == 1 and split.raw_convertible
    assert len(split.by_file()) == len(split.files)
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["k"]) == expected
    assert table.scan().count() == len(expected)


@pytest.mark.parametrize("ahead_rows", [0, 700, 10**9])
def test_batches_read_ahead_keep_the_plan_order(tmp_path, monkeypatch, ahead_rows):
    """to_batches reads small splits ahead in threads and streams larger ones in turn: the
    rows come in the order of a plain read, and a consumer may stop early."""
    import tarn.scan.reader as scan_reader

    monkeypatch.setattr(scan_reader, "READ_AHEAD_ROWS", ahead_rows)
    table = tarn.create_table(str(tmp_path / "t"), batch([0], 0).schema, primary_key=["day", "k"],
                              partition_keys=["day"], options={"bucket": "4"})
    table.write(batch(np.arange(6000), 1))
    table.write(batch(np.arange(0, 6000, 7), 2))
    whole = table.scan().to_arrow()
    streamed = pa.Table.from_batches(list(table.scan().to_batches()), schema=whole.schema)
    assert streamed.equals(whole)
    batches = table.scan().to_batches()
    first = next(batches)
    batches.close()  # stopping early leaves no thread behind
    assert first.num_rows > 0


@pytest.mark.parametrize("primary_key", [["d", "p", "b", "s", "k"], None])
def test_partition_columns_come_from_the_partition_value(tmp_path, primary_key):
    """Partition columns of exactly decoded types are filled from the split's partition value
    (Java's PartitionUtils), not read from the files: values, types, filters and projections
    stay what the files hold."""
    import datetime

    schema = pa.schema([("d", pa.date32()), ("p", pa.int32()), ("b", pa.bool_()), ("s", pa.string()),
                        ("k", pa.int64()), ("v", pa.float64())])
    rows = pa.table({"d": [datetime.date(2026, 1, 1 + i % 2) for i in range(6)], "p": [i % 3 for i in range(6)],
                     "b": [i % 2 == 0 for i in range(6)], "s": ["x" if i < 3 else "é" * 40 for i in range(6)],
                     "k": list(range(6)), "v": [float(i) for i in range(6)]}, schema=schema)
    table = tarn.create_table(str(tmp_path / "t"), schema, primary_key=primary_key, partition_keys=["d", "p", "b", "s"],
                              options={"bucket": "1"} if primary_key else {})
    table.write(rows)
    table.write(rows.slice(0, 2))
    got = table.scan().to_arrow()
    assert got.schema.types == schema.types
    expected = rows.to_pylist() + ([] if primary_key else rows.slice(0, 2).to_pylist())
    assert sorted(got.to_pylist(), key=lambda r: (r["k"], r["v"])) == sorted(expected, key=lambda r: (r["k"], r["v"]))
    assert sorted(table.scan(filter="s = 'x' and p = 1").to_arrow().column("k").to_pylist()) == \
        ([1] if primary_key else [1, 1])
    assert table.scan(columns=["v"]).to_arrow().column_names == ["v"]
    only_partition = table.scan(columns=["s", "d"]).to_arrow()  # the rows still counted
    assert only_partition.num_rows == len(expected)
    assert sorted(only_partition.column("s").to_pylist()) == sorted(r["s"] for r in expected)
    assert sum(b.num_rows for b in table.scan(columns=["d"]).to_batches()) == len(expected)
    assert table.scan(columns=["s", "k"], filter="b = false").to_arrow().column_names == ["s", "k"]


def test_null_partition_values_fill_as_nulls(tmp_path):
    table = tarn.create_table(str(tmp_path / "t"), pa.schema([("day", pa.string()), ("n", pa.int64())]),
                              partition_keys=["day"])
    table.write(pa.table({"day": ["a", None, None], "n": [1, 2, 3]}))
    got = table.scan().to_arrow().sort_by("n")
    assert got.column("day").to_pylist() == ["a", None, None]
    assert sorted(table.scan(filter="day is null").to_arrow().column("n").to_pylist()) == [2, 3]


def test_repeat_and_filter_rows_match_arrow():
    from tarn.arrays import filter_rows, repeat

    for value in [pa.scalar("ab"), pa.scalar(""), pa.scalar(b"\x00x"), pa.scalar("é", pa.large_string()),
                  pa.scalar(None, pa.string()), pa.scalar(3), pa.scalar(1.5)]:
        for count in (0, 1, 5):
            made = repeat(value, count)
            made.validate(full=True)
            assert made.equals(pa.repeat(value, count))
    data = pa.table({"a": [1, 2, 3, 4], "s": ["w", None, "y", "z"]})
    keep = np.array([True, False, True, False])
    assert filter_rows(data, keep).equals(data.filter(pa.array(keep)))
    assert filter_rows(data, np.ones(4, dtype=bool)) is data


def test_in_sorted_matches_python_membership():
    """Both ways of searching (values in the reference, or the reference's entries in long
    increasing values) against Python's `in`, with duplicates, misses and empty sides."""
    from tarn.arrays import in_sorted

    rng = np.random.default_rng(3)
    for _ in range(200):
        reference = np.sort(rng.integers(0, 60, rng.integers(0, 12)))
        values = rng.integers(-5, 70, rng.integers(0, 80))
        if rng.random() < 0.5:
            values = np.unique(values)  # strictly increasing: the reversed search applies
        wanted = {int(v) for v in reference}
        assert in_sorted(values, reference).tolist() == [int(v) in wanted for v in values]
    keys = np.array([b"a", b"c", b"d"])
    assert in_sorted(np.array([b"b", b"c", b"e"]), keys).tolist() == [False, True, False]


@pytest.mark.parametrize("min_files", [8, 10**6])  # read together / split by split
def test_retractions_kept_above_level_0_are_honoured(tmp_path, monkeypatch, min_files):
    """A compaction into a level below the highest keeps -D rows: such files are read with
    their row kinds, and the deleted keys stay deleted."""
    import tarn.scan.together as together

    monkeypatch.setattr(together, "MIN_FILES", min_files)
    schema = pa.schema([("p", pa.int32()), ("k", pa.int64()), ("v", pa.string())])
    table = tarn.create_table(str(tmp_path / "t"), schema, primary_key=["p", "k"], partition_keys=["p"],
                              options={"bucket": "1", "num-sorted-run.compaction-trigger": "2", "num-levels": "6",
                                       "compaction.max-size-amplification-percent": "100000"})
    model: dict = {}

    def write(keys, value, delete=False):
        rows = pa.table({"p": pa.array(keys % 10, pa.int32()), "k": keys, "v": [value] * len(keys)}, schema=schema)
        table.delete(rows.select(["p", "k"])) if delete else table.write(rows)
        for p, k in zip((keys % 10).tolist(), keys.tolist()):
            model.pop((p, k), None) if delete else model.__setitem__((p, k), value)

    write(np.arange(20_000), "a")
    table.compact(full=True)
    write(np.arange(0, 20_000, 97), "b")
    write(np.arange(0, 20_000, 89), "", delete=True)
    write(np.arange(0, 20_000, 83), "c")
    levels = {(f.level, f.delete_row_count > 0) for s in table.scan().plan() for f in s.files}
    assert (4, True) in levels  # the case under test: -D rows in a file above level 0
    got = table.scan().to_arrow()
    assert dict(zip(zip(got.column("p").to_pylist(), got.column("k").to_pylist()), got.column("v").to_pylist())) == model
    assert got.num_rows == len(model)


@pytest.mark.parametrize("where", ["k < 700", "k = 42 or k = 1999", "k >= 100 and v < 500", "v < 300"])
def test_key_filters_applied_before_the_newest_wins_merge(tmp_path, monkeypatch, where):
    """A filter's conjuncts on key columns drop rows from every file before the merge; the
    others only after it (an older row matching them must not come back)."""
    import tarn.scan.together as together

    monkeypatch.setattr(together, "MIN_FILES", 10**6)  # split by split
    table = tarn.create_table(str(tmp_path / "t"), batch([0], 0).schema, primary_key=["day", "k"],
                              partition_keys=["day"], options={"bucket": "1"})
    model = upserts_and_deletes(table, seed=11, rounds=3, keys=3000, upserted=800, deleted=200)
    assert all(len(s.files) > 1 for s in table.scan().plan())  # merged on read, split by split

    def matches(key, value) -> bool:
        k, v = key[1], value[0]
        return {"k < 700": k < 700, "k = 42 or k = 1999": k in (42, 1999),
                "k >= 100 and v < 500": k >= 100 and v < 500, "v < 300": v < 300}[where]

    assert read_model(table, filter=where) == {key: value for key, value in model.items() if matches(key, value)}


def test_untranslatable_filters_apply_to_splits_read_together(tmp_path, together):
    """A filter part tarn cannot translate (applied to rows after the read) also applies to the
    rows of splits read together, and only the scan's columns come back."""
    import pyarrow.compute as pc

    table = tarn.create_table(str(tmp_path / "t"), batch([0], 0).schema, primary_key=["day", "k"],
                              partition_keys=["day"], options={"bucket": "4"})
    model = upserts_and_deletes(table, seed=5, rounds=2, keys=3000, upserted=500, deleted=100)
    scan = table.scan(filter=pc.field("v") * 2 > 1000, columns=["k"])
    assert scan.row_filter is not None
    got = scan.to_arrow()
    assert together and got.column_names == ["k"]
    assert sorted(got.column("k").to_pylist()) == sorted(k for (_, k), (v, _) in model.items() if v * 2 > 1000)
