"""Dynamic bucket mode (`bucket` = -1 on a primary-key table, Paimon's default).

The invariant every test checks (`check_index`): inside a partition each key lives in exactly
one bucket, and that bucket's HASH index file holds the key's hash (no other bucket's file does),
so a writer loading the index (tarn's, Java's HashBucketAssigner, pypaimon's) sends the key
back to the same bucket.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tarn
from tarn.bucket import assigner_channels, decode_hash_index, encode_hash_index, partition_hash, row_hashes
from tarn.errors import CommitConflict, InvalidOption, SchemaMismatch, TarnError
from tarn.meta.manifest import HASH_INDEX
from tarn.meta.schema import SetOption
from tarn.store.deletion_vectors import live_index_entries
from tarn.write.assign import AssignerSpec, HashAssigner, HashIndexFiles, pack_bucket, unpack_buckets

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
PART_SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                         ("v", pa.int64())])
FAST = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def dyn_table(catalog, name="t", partitioned=False, **options):
    if partitioned:
        return catalog.create_table(name, schema=PART_SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"],
                                    options=options)
    return catalog.create_table(name, schema=SCHEMA, primary_key=["k"], options=options)


def rows(keys, values=None, dt=None):
    values = list(keys) if values is None else values
    data = {"k": pa.array(keys, pa.int64()), "v": pa.array(values, pa.int64())}
    if dt is not None:
        return pa.table({"dt": [dt] * len(keys), **data}, schema=PART_SCHEMA)
    return pa.table(data, schema=SCHEMA)


def hash_entries(table, snapshot=None):
    snapshot = snapshot or table.latest_snapshot()
    return [e for e in live_index_entries(table.manifests(), snapshot) if e.index_type == HASH_INDEX]


def buckets_of(table) -> dict:
    """(partition values, key) -> bucket, from the live files (a key in two buckets fails)."""
    found = {}
    for split in table.scan().plan():
        data = table.scan().reader().read(split)
        for key in data.column("k").to_pylist():
            where = (split.partition_values, key)
            assert where not in found, f"key {where} in buckets {found[where]} and {split.bucket}"
            found[where] = split.bucket
    return found


def check_index(table) -> None:
    """Each live key's hash is in its own bucket's HASH file and in no other of the partition."""
    files = HashIndexFiles(table.file_io, table.root)
    by_bucket = {(e.partition, e.bucket): set(files.read(e).tolist()) for e in hash_entries(table)}
    schema = table.schema()
    key_field = [schema.field(k) for k in schema.trimmed_primary_keys]
    for split in table.scan().plan():
        keys = table.scan().reader().read(split).select(schema.trimmed_primary_keys)
        if not keys.num_rows:
            continue
        hashes = set(row_hashes(keys, key_field).tolist())
        own = by_bucket.get((split.partition, split.bucket), set())
        assert hashes <= own, f"bucket {split.bucket}: hashes missing from its HASH file"
        for (part, bucket), others in by_bucket.items():
            if part == split.partition and bucket != split.bucket:
                assert not hashes & others, f"bucket {split.bucket}'s keys also in bucket {bucket}'s HASH file"


def as_dict(table) -> dict:
    data = table.scan().to_arrow()
    keys = [c for c in ("dt", "k") if c in data.column_names]
    return {tuple(r[c] for c in keys): r["v"] for r in data.to_pylist()}


# ---------------------------------------------------------------------------- format


def test_hash_index_bytes_match_the_format_vectors(catalog):
    """FORMAT.md section 8: keys id=1,2 -> int32 BE 5759f99e, 4fe4bbf0 (in arrival order)."""
    t = dyn_table(catalog)
    t.write(rows([1, 2]))
    (entry,) = hash_entries(t)
    assert (entry.bucket, entry.row_count, entry.file_size) == (0, 2, 8)
    assert entry.dv_ranges is None and entry.file_name.startswith("index-")
    data = open(os.path.join(t.root, "index", entry.file_name), "rb").read()
    assert data == bytes.fromhex("5759f99e4fe4bbf0")
    assert decode_hash_index(data).tolist() == [1465514398, 1340390384]
    assert encode_hash_index(np.array([1465514398, 1340390384], np.int32)) == data
    t.write(rows([3, 1]))  # a new key: the file is rewritten with the old hashes first
    (entry,) = hash_entries(t)
    data = open(os.path.join(t.root, "index", entry.file_name), "rb").read()
    assert data == bytes.fromhex("5759f99e4fe4bbf0") + (-771300025).to_bytes(4, "big", signed=True)
    with pytest.raises(tarn.CorruptFile):
        decode_hash_index(b"\x00\x01\x02")


def test_the_default_primary_key_table_is_dynamic(catalog):
    """The first table of Paimon's docs: a primary key and no 'bucket' option."""
    t = dyn_table(catalog)
    assert t.options.get("bucket") == "-1"
    t.write(rows([1, 2, 3], [10, 20, 30]))
    t.write(rows([2], [200]))
    t.delete(rows([3]))
    assert as_dict(t) == {(1,): 10, (2,): 200}
    assert all(e.total_buckets == -1 for e in t.live_entries(t.latest_snapshot()))
    check_index(t)


# ---------------------------------------------------------------------------- assignment


def test_buckets_fill_to_the_target_then_new_buckets_open(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.target-row-num": "3"})
    t.write(rows([1, 2, 3, 4, 5, 6, 7, 8]))
    assert [buckets_of(t)[((), k)] for k in range(1, 9)] == [0, 0, 0, 1, 1, 1, 2, 2]
    t.write(rows([9, 1, 10, 11]))  # 9 fills bucket 2, 1 stays in 0, then bucket 3 opens
    got = buckets_of(t)
    assert [got[((), k)] for k in (9, 1, 10, 11)] == [2, 0, 3, 3]
    assert sorted((e.bucket, e.row_count) for e in hash_entries(t)) == [(0, 3), (1, 3), (2, 3), (3, 2)]
    check_index(t)


def test_partitions_have_their_own_buckets(catalog):
    t = dyn_table(catalog, partitioned=True, **{"dynamic-bucket.target-row-num": "2"})
    t.write(pa.concat_tables([rows([1, 2, 3], dt="a"), rows([1], dt="b")]))
    got = buckets_of(t)
    assert got[(("a",), 3)] == 1 and got[(("b",), 1)] == 0
    assert sorted((e.partition, e.bucket) for e in hash_entries(t))[0][1] == 0
    check_index(t)


def test_known_keys_keep_their_bucket_and_unchanged_buckets_keep_their_file(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.target-row-num": "2"})
    t.write(rows([1, 2, 3]))
    before = t.latest_snapshot().index_manifest
    t.write(rows([3, 1], [30, 10]))
    assert t.latest_snapshot().index_manifest == before  # no key was new: no index change
    t.delete(rows([2]))
    t.write(rows([2], [22]))  # a deleted key keeps its hash, so its bucket
    assert buckets_of(t)[((), 2)] == 0 and t.latest_snapshot().index_manifest == before
    assert as_dict(t) == {(1,): 10, (2,): 22, (3,): 30}


def test_max_buckets_bounds_the_bucket_ids(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.target-row-num": "2", "dynamic-bucket.max-buckets": "2"})
    t.write(rows(list(range(10))))
    t.write(rows(list(range(5, 15))))
    assert set(buckets_of(t).values()) == {0, 1}
    assert as_dict(t) == {(k,): k for k in range(15)}
    check_index(t)


def test_initial_buckets_spread_new_keys_over_assigner_ranges(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.initial-buckets": "3", "dynamic-bucket.target-row-num": "2"})
    keys = list(range(12))
    t.write(rows(keys))
    got = buckets_of(t)
    hashes = row_hashes(rows(keys).select(["k"]), [t.schema().field("k")])
    channels = assigner_channels(partition_hash(bytes(12)), hashes, 3, 3)
    for key, channel in zip(keys, channels):
        assert got[((), key)] % 3 == channel  # assigner i creates buckets i, i+3, ...
    assert {0, 1, 2} <= set(got.values())
    check_index(t)


def test_distributed_assigners_match_one_process():
    """Two assigner tasks, each fed only the keys routed to it, give the buckets one process
    playing both gives."""
    spec = AssignerSpec(target_rows=3, max_buckets=-1, channels=2, assigners=2)
    hashes = np.arange(-40, 40, 3, dtype=np.int32) * 7919
    part = bytes(12)
    together = HashAssigner(None, spec, lambda p: []).assign(part, hashes)
    routed = assigner_channels(partition_hash(part), hashes, 2, 2)
    apart = np.empty_like(together)
    for task in (0, 1):
        mine = routed == task
        apart[mine] = HashAssigner(None, spec, lambda p: [], ids=(task,)).assign(part, hashes[mine])
        assert (apart[mine] % 2 == task).all()
    assert (apart == together).all()
    with pytest.raises(TarnError, match="assigner"):
        HashAssigner(None, spec, lambda p: [], ids=(0,)).assign(part, hashes)


def replayed_buckets(batches: list[list[int]], target: int) -> list[list[int]]:
    """Paimon's rule row by row (SimpleHashBucketAssigner, one assigner): a known hash keeps
    its bucket; a new one goes to the lowest bucket under `target` keys, else a new bucket."""
    known: dict[int, int] = {}
    counts: dict[int, int] = {}
    out = []
    for batch in batches:
        got = []
        for h in batch:
            if h not in known:
                room = [b for b in sorted(counts) if counts[b] < target]
                bucket = room[0] if room else next(b for b in range(len(counts) + 1) if b not in counts)
                counts[bucket] = counts.get(bucket, 0) + 1
                known[h] = bucket
            got.append(known[h])
        out.append(got)
    return out


HASHES = st.one_of(st.integers(-3, 3), st.integers(-2**31, 2**31 - 1),
                   st.sampled_from([5, 5 + (1 << 20), 5 - (1 << 20), -(1 << 31)]))  # equal low bits


@settings(max_examples=80, deadline=None)
@given(batches=st.lists(st.lists(HASHES, max_size=60), min_size=1, max_size=4), target=st.integers(1, 7))
@example(batches=[[9, 7, 9, 8, 7, 6, 9]], target=2)
@example(batches=[[5, 5 + (1 << 20), 3, 5, 5 + (1 << 20)], [3, 4, 4]], target=1)
def test_assignment_replays_paimons_rule_row_by_row(batches, target):
    """Batches with repeated hashes (and hashes alike in their low bits): the first batch of a
    partition takes the no-index path, later ones the general one; both give Paimon's buckets."""
    spec = AssignerSpec(target_rows=target, max_buckets=-1)
    assigner = HashAssigner(None, spec, lambda p: [])
    got = [assigner.assign(bytes(12), np.array(b, dtype=np.int32)).tolist() for b in batches]
    assert got == replayed_buckets(batches, target)
    new = assigner.new_hashes()
    seen = [h for b in batches for h in b]
    assert sorted(h for hashes in new.values() for h in hashes.tolist()) == sorted(set(seen))


def test_packed_buckets_round_trip():
    packed = pack_bucket(7, np.array([0, 5, 32766]))
    assert unpack_buckets(packed)[0] == 7 and unpack_buckets(packed)[1].tolist() == [0, 5, 32766]
    with pytest.raises(TarnError, match="different snapshots"):
        unpack_buckets(np.concatenate([pack_bucket(1, [0]), pack_bucket(2, [0])]))


def test_write_with_given_buckets(catalog):
    t = dyn_table(catalog)
    w = t.new_writer()
    w.write(rows([1, 2, 3]), buckets=[4, 4, 7])
    t.commit(w.prepare_commit())
    assert buckets_of(t) == {((), 1): 4, ((), 2): 4, ((), 3): 7}
    assert sorted((e.bucket, e.row_count) for e in hash_entries(t)) == [(4, 2), (7, 1)]
    check_index(t)
    t.write(rows([1, 9], [10, 90]))  # the writer's own assigner knows the given buckets
    assert buckets_of(t)[((), 1)] == 4
    w = t.new_writer()
    with pytest.raises(SchemaMismatch, match="non-null integers"):
        w.write(rows([1, 2]), buckets=[1])
    with pytest.raises(SchemaMismatch, match="bucket ids"):
        w.write(rows([1]), buckets=[40000])
    w.write(rows([1]), buckets=[4])
    with pytest.raises(SchemaMismatch, match="every write or with none"):
        w.write(rows([2]))
    fixed = catalog.create_table("fixed", schema=SCHEMA, primary_key=["k"], options={"bucket": "2"})
    with pytest.raises(SchemaMismatch, match="only to dynamic-bucket tables"):
        fixed.new_writer().write(rows([1]), buckets=[0])


# ---------------------------------------------------------------------------- with other features


def test_deletion_vectors_with_dynamic_buckets(catalog):
    t = dyn_table(catalog, **{"deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "2000"})
    base = list(range(1000, 4000))  # a big first commit: later small ones mark its rows in vectors
    t.write(rows(base))
    oracle = {(k,): k for k in base}
    for step in range(4):
        keys = list(range(990 + step * 30, 990 + step * 30 + 80))
        t.write(rows(keys, [k + step for k in keys]))
        oracle.update({(k,): k + step for k in keys})
        t.delete(rows(keys[:5]))
        for k in keys[:5]:
            oracle.pop((k,), None)
        assert as_dict(t) == oracle
    held = live_index_entries(t.manifests(), t.latest_snapshot())
    assert {e.index_type for e in held} == {HASH_INDEX, "DELETION_VECTORS"}
    assert all(m.level > 0 for split in t.scan().plan() for m in split.files)
    check_index(t)


def test_overwrite_replaces_the_index_of_the_partitions_it_replaces(catalog):
    t = dyn_table(catalog, partitioned=True, **{"dynamic-bucket.target-row-num": "2"})
    t.write(pa.concat_tables([rows([1, 2, 3, 4, 5], dt="a"), rows([1, 2, 3], dt="b")]))
    b_files = {e.file_name for e in hash_entries(t) if e.partition.endswith(b"b\x00\x00\x00\x00\x00\x00\x81")}
    t.overwrite(rows([7], dt="a"), dynamic=True)
    held = hash_entries(t)
    assert {e.file_name for e in held} >= b_files and len(held) == len(b_files) + 1
    assert as_dict(t) == {("a", 7): 7, ("b", 1): 1, ("b", 2): 2, ("b", 3): 3}
    t.write(rows([8, 9], dt="a"))
    assert buckets_of(t)[(("a",), 7)] == 0 and buckets_of(t)[(("a",), 9)] == 1
    t.overwrite(rows([1], dt="c"), dynamic=False)  # the whole table
    assert [(e.bucket, e.row_count) for e in hash_entries(t)] == [(0, 1)]
    check_index(t)


def test_compaction_keeps_the_index(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.target-row-num": "10"})
    for i in range(4):
        t.write(rows(list(range(i * 5, i * 5 + 25))))
    before = {e.file_name for e in hash_entries(t)}
    t.compact(full=True)
    assert {e.file_name for e in hash_entries(t)} == before
    check_index(t)


# ---------------------------------------------------------------------------- one writer per partition


def test_two_writers_adding_keys_to_one_partition_conflict(catalog):
    t = dyn_table(catalog, partitioned=True, **{"dynamic-bucket.target-row-num": "2"})
    t.write(rows([1, 2, 3], dt="a"))
    first, second = t.new_writer(), t.new_writer()
    first.write(rows([10, 11], dt="a"))
    second.write(rows([10, 12], dt="a"))
    second.flush()  # buckets assigned before the first commit lands
    landed = t.commit(first.prepare_commit())
    late = second.prepare_commit()
    with pytest.raises(CommitConflict, match="one writer per partition"):
        t.commit(late)
    assert t.latest_snapshot().id == landed.id
    assert as_dict(t) == {("a", k): k for k in (1, 2, 3, 10, 11)}
    check_index(t)
    referenced = {e.file_name for e in hash_entries(t)} | {e.file_name for s in t.snapshots() for e in hash_entries(t, s)}
    assert set(os.listdir(os.path.join(t.root, "index"))) == referenced  # the late commit left nothing
    names = {m.file_name for m in late for m in m.new_files}
    assert not any(n in names for _, _, files in os.walk(t.root) for n in files)
    t.write(rows([10, 12], [100, 120], dt="a"))  # written again, it lands
    assert as_dict(t)[("a", 10)] == 100 and ("a", 12) in as_dict(t)


def test_write_starts_over_when_another_writer_took_the_partition_index(catalog, monkeypatch):
    """Issue 44 item 5: `write()` of rows it can read again retries a lost single-writer race
    (nothing of the first attempt landed) and says what to do when it gives up."""
    t = dyn_table(catalog, partitioned=True, **{"dynamic-bucket.target-row-num": "2"})
    t.write(rows([1, 2, 3], dt="a"))
    other = tarn.load_table(t.root)
    original = type(t.core).commit
    raced = []

    def commit_after_a_rival(self, messages, *args, **kwargs):
        if not raced:  # another process adds keys to the partition between assignment and commit
            raced.append(True)
            other.write(rows([20, 21], dt="a"))
        return original(self, messages, *args, **kwargs)

    monkeypatch.setattr(type(t.core), "commit", commit_after_a_rival)
    t.write(rows([10, 11], dt="a"))
    monkeypatch.setattr(type(t.core), "commit", original)
    assert as_dict(t) == {("a", k): k for k in (1, 2, 3, 10, 11, 20, 21)}
    check_index(t)
    t2 = dyn_table(catalog, name="u", partitioned=True, **{"dynamic-bucket.target-row-num": "2"})
    t2.write(rows([1], dt="a"))
    rival = tarn.load_table(t2.root)
    counter = iter(range(100, 200))

    def always_a_rival(self, messages, *args, **kwargs):
        if self.root == t2.root and not getattr(always_a_rival, "inside", False):
            always_a_rival.inside = True
            try:
                rival.write(rows([next(counter)], dt="a"))
            finally:
                always_a_rival.inside = False
        return original(self, messages, *args, **kwargs)

    monkeypatch.setattr(type(t2.core), "commit", always_a_rival)
    with pytest.raises(CommitConflict, match="create the table with a fixed 'bucket'"):
        t2.write(rows([5, 6], dt="a"))


def test_writers_of_different_partitions_or_known_keys_do_not_conflict(catalog):
    t = dyn_table(catalog, partitioned=True)
    t.write(pa.concat_tables([rows([1, 2], dt="a"), rows([1], dt="b")]))
    w1, w2, w3 = t.new_writer(), t.new_writer(), t.new_writer()
    w1.write(rows([3], dt="a"))
    w2.write(rows([4], dt="b"))
    w3.write(rows([1], [100], dt="a"))  # a known key: its bucket cannot change
    for w in (w1, w2, w3):
        w.flush()
    for w in (w1, w2, w3):
        t.commit(w.prepare_commit())
    assert as_dict(t) == {("a", 1): 100, ("a", 2): 2, ("a", 3): 3, ("b", 1): 1, ("b", 4): 4}
    check_index(t)


def test_two_writers_opening_one_new_partition_conflict(catalog):
    t = dyn_table(catalog, partitioned=True)
    t.write(rows([1], dt="a"))
    w1, w2 = t.new_writer(), t.new_writer()
    w1.write(rows([5], dt="new"))
    w2.write(rows([6], dt="new"))
    w2.flush()
    t.commit(w1.prepare_commit())
    with pytest.raises(CommitConflict, match="partition {'dt': 'new'}"):
        t.commit(w2.prepare_commit())


def test_concurrent_overwrite_of_the_partition_conflicts(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.target-row-num": "1"})
    t.write(rows([1, 2]))
    w = t.new_writer()
    w.write(rows([3]))
    w.flush()
    t.overwrite(rows([2, 1]))
    with pytest.raises(CommitConflict):
        t.commit(w.prepare_commit())
    assert as_dict(t) == {(1,): 1, (2,): 2}
    check_index(t)


# ---------------------------------------------------------------------------- cleanup


def index_dir_files(t) -> set:
    return set(os.listdir(os.path.join(t.root, "index")))


def test_expire_rollback_tags_and_orphans_clean_hash_files(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.target-row-num": "4"})
    for i in range(5):
        t.write(rows(list(range(i * 3, i * 3 + 3))))
    t.create_tag("second", 2)
    tagged = {e.file_name for e in hash_entries(t, t.snapshot_store.get(2))}
    live = {e.file_name for e in hash_entries(t)}
    assert len(index_dir_files(t)) > len(live | tagged)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert index_dir_files(t) == live | tagged
    t.delete_tag("second")
    assert index_dir_files(t) == live
    t.write(rows([100, 101, 102, 103, 104]))
    after = index_dir_files(t)
    assert after != live
    t.rollback_to(t.snapshot_store.list_ids()[0])
    assert index_dir_files(t) == live
    assert as_dict(t) == {(k,): k for k in range(15)}
    stray = os.path.join(t.root, "index", "index-00000000-0000-0000-0000-000000000000-0")
    open(stray, "wb").write(b"\x00\x00\x00\x01")
    old = time.time() - 3 * 86400
    os.utime(stray, (old, old))
    removed = t.remove_orphan_files()
    assert any(p.endswith(os.path.basename(stray)) for p in removed)
    assert index_dir_files(t) == live
    check_index(t)


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("options, match", [
    ({"bucket": "0"}, "'bucket'.* '0'"),
    ({"bucket": "-3"}, "'bucket'.* '-3'"),
    ({"bucket-key": "k"}, "'bucket-key' needs a fixed 'bucket'"),
    ({"dynamic-bucket.max-buckets": "0"}, "max-buckets"),
])
def test_bad_bucket_options_are_refused_at_creation(catalog, options, match):
    with pytest.raises(TarnError, match=match):
        dyn_table(catalog, **options)


def test_append_tables_keep_their_bucket_rules(catalog):
    with pytest.raises(TarnError, match="'bucket'.* '0'"):
        catalog.create_table("a0", schema=SCHEMA, options={"bucket": "0"})
    with pytest.raises(TarnError, match="postpone"):
        catalog.create_table("a2", schema=SCHEMA, options={"bucket": "-2"})
    catalog.create_table("a1", schema=SCHEMA).write(rows([1]))


def test_cross_partition_tables_refuse_a_sequence_field(catalog):
    # a primary key without the partition keys is cross-partition upsert (tests/test_cross_partition.py)
    with pytest.raises(TarnError, match="cross-partition"):
        catalog.create_table("x", schema=PART_SCHEMA, primary_key=["k"], partition_keys=["dt"],
                             options={"sequence.field": "k"})


def test_bucket_cannot_leave_or_enter_minus_one(catalog):
    t = dyn_table(catalog)
    with pytest.raises(InvalidOption, match="cannot change when it is -1"):
        t.alter(SetOption("bucket", "4"))
    f = catalog.create_table("f", schema=SCHEMA, primary_key=["k"], options={"bucket": "2"})
    with pytest.raises(InvalidOption, match="cannot change to -1"):
        f.alter(SetOption("bucket", "-1"))
    f.alter(SetOption("bucket", "3"))


def test_too_many_buckets_is_an_error(catalog):
    t = dyn_table(catalog, **{"dynamic-bucket.target-row-num": "1", "dynamic-bucket.max-buckets": "3"})
    t.write(rows(list(range(6))))  # bounded: keys share the three buckets
    assert set(buckets_of(t).values()) == {0, 1, 2}
    spec = AssignerSpec(target_rows=1, max_buckets=-1)
    with pytest.raises(TarnError, match="raise 'dynamic-bucket.target-row-num'"):
        HashAssigner(None, spec, lambda p: []).assign(bytes(12), np.arange(40000, dtype=np.int32))


# ---------------------------------------------------------------------------- model


@st.composite
def scenarios(draw):
    config = {
        "partitioned": draw(st.booleans()),
        "target": draw(st.sampled_from([1, 2, 3, 7, 1000])),
        "dv": draw(st.booleans()),
        "initial": draw(st.sampled_from([None, 2, 3])),
        "max": draw(st.sampled_from([-1, 2, 4])),
    }
    ops = draw(st.lists(st.tuples(st.sampled_from(["upsert", "upsert", "delete", "compact"]),
                                  st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 25),
                                                     st.integers(0, 99)), min_size=1, max_size=20)),
                        min_size=1, max_size=6))
    return config, ops


@FAST
@given(scenario=scenarios())
def test_model_random_upserts_and_deletes_match_a_dict(catalog, scenario):
    config, ops = scenario
    options = {"dynamic-bucket.target-row-num": str(config["target"]),
               "dynamic-bucket.max-buckets": str(config["max"])}
    if config["dv"]:
        options["deletion-vectors.enabled"] = "true"
    if config["initial"]:
        options["dynamic-bucket.initial-buckets"] = str(config["initial"])
    name = f"m{time.time_ns()}"
    t = dyn_table(catalog, name=name, partitioned=config["partitioned"], **options)
    oracle: dict = {}
    for kind, batch in ops:
        if kind == "compact":
            t.compact(full=True)
            continue
        if not config["partitioned"]:
            batch = [("a", k, v) for _, k, v in batch]
        data = pa.table({"dt": [d for d, _, _ in batch], "k": pa.array([k for _, k, _ in batch], pa.int64()),
                         "v": pa.array([v for _, _, v in batch], pa.int64())}, schema=PART_SCHEMA)
        if not config["partitioned"]:
            data = data.drop_columns(["dt"])
        keyed = [((d, k) if config["partitioned"] else (k,), v) for d, k, v in batch]
        if kind == "upsert":
            t.write(data)
            for key, v in keyed:
                oracle[key] = v
        else:
            t.delete(data)
            for key, _ in keyed:
                oracle.pop(key, None)
        assert as_dict(t) == oracle
    check_index(t)
    if config["max"] > 0:
        assert all(b < config["max"] for b in buckets_of(t).values())
