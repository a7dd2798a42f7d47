"""Changelog producers: input, full-compaction, lookup (files, snapshots, rows, engines)."""

import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tarn
from tarn.commit.committer import Committer
from tarn.lsm import changelog as lsm_changelog
from tarn.store.snapshots import SnapshotStore
from tests.helpers import rows_by_key

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
PRODUCERS = ("input", "full-compaction", "lookup")


def make(catalog, producer, name="t", **options):
    opts = {"bucket": "1", "changelog-producer": producer, **options}
    return catalog.create_table(f"db.{name}", schema=SCHEMA, primary_key=["id"], options=opts)


def rows(ids, vs=None, ns=None):
    vs = vs if vs is not None else [f"v{i}" for i in ids]
    ns = ns if ns is not None else [0] * len(ids)
    return pa.table({"id": ids, "v": vs, "n": ns}, schema=SCHEMA)


def changes(table, snapshot_id):
    """(kind, id, v, n) tuples of one snapshot's changes."""
    data = table.changes(snapshot_id).to_pylist()
    return [(r["_ROW_KIND"], r["id"], r["v"], r["n"]) for r in data]


def all_changes(table):
    return [c for s in table.snapshots() for c in changes(table, s.id)]


def replay(table, keys=("id",)):
    """Apply every snapshot's changes in order: +I/+U upsert, -U/-D remove."""
    state = {}
    for s in table.snapshots():
        for row in table.changes(s.id).to_pylist():
            kind = row.pop("_ROW_KIND")
            key = tuple(row[k] for k in keys)
            if kind in ("+I", "+U"):
                state[key] = row
            else:
                state.pop(key, None)
    return state


def bucket_files(table, prefix=""):
    return sorted(f for f in os.listdir(os.path.join(table.root, "bucket-0")) if f.startswith(prefix))


def snapshot_json(table, snapshot_id):
    with open(os.path.join(table.root, "snapshot", f"snapshot-{snapshot_id}")) as f:
        return json.load(f)


def changelog_metas(table, snapshot):
    planner = table.planner(table.schema())
    return [e for m in planner.manifests.read_manifest_list(snapshot.changelog_manifest_list)
            for e in planner.manifests.read_manifest(m.file_name)]


# ------------------------------------------------------------------ input


def test_input_keeps_every_row_in_key_then_arrival_order(catalog):
    t = make(catalog, "input")
    t.write(rows([2, 1, 2, 1], ["a", "b", "c", "d"]), row_kind=["+I", "+I", "-U", "+U"])
    snapshot = t.latest_snapshot()
    assert snapshot.commit_kind == "APPEND"
    assert changes(t, snapshot.id) == [("+I", 1, "b", 0), ("+U", 1, "d", 0), ("+I", 2, "a", 0), ("-U", 2, "c", 0)]
    assert t.scan().to_arrow().sort_by("id").to_pydict() == {"id": [1], "v": ["d"], "n": [0]}


def test_input_files_snapshot_and_manifest(catalog):
    t = make(catalog, "input")
    t.write(rows([3, 1, 2, 1]))
    snapshot = t.latest_snapshot()
    raw = snapshot_json(t, snapshot.id)
    assert raw["changelogManifestList"] == snapshot.changelog_manifest_list
    assert raw["changelogManifestList"].startswith("manifest-list-")
    assert raw["changelogManifestListSize"] == os.path.getsize(
        os.path.join(t.root, "manifest", raw["changelogManifestList"]))
    assert raw["changelogRecordCount"] == 4
    assert raw["deltaRecordCount"] == 3
    [entry] = changelog_metas(t, snapshot)
    meta = entry.file
    assert entry.kind == 0 and entry.bucket == 0 and entry.total_buckets == 1
    assert meta.file_name.startswith("changelog-") and meta.file_name.endswith(".parquet")
    assert (meta.level, meta.file_source, meta.row_count) == (0, 0, 4)
    assert bucket_files(t, "changelog-") == [meta.file_name]
    # the file has Paimon's key-value layout; the rows keep their kinds and own sequence numbers
    path = os.path.join(t.root, "bucket-0", meta.file_name)
    data = pq.read_table(path)
    assert data.column_names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "v", "n"]
    assert data.column("_KEY_id").to_pylist() == [1, 1, 2, 3]
    assert data.column("_SEQUENCE_NUMBER").to_pylist() == [0, 1, 2, 3]
    assert (meta.min_sequence_number, meta.max_sequence_number) == (0, 3)
    # batch reads never see changelog files
    split_files = [f.file_name for split in t.scan().plan() for f in split.files]
    assert split_files and all(name.startswith("data-") for name in split_files)


def test_input_sequence_numbers_continue_across_commits(catalog):
    t = make(catalog, "input")
    t.write(rows([1, 1, 1]))
    t.write(rows([1, 2]))
    second = changelog_metas(t, t.latest_snapshot())[0].file
    assert (second.min_sequence_number, second.max_sequence_number) == (3, 4)
    data = [e.file for e in t.planner(t.schema()).live_entries(t.latest_snapshot())]
    assert max(f.max_sequence_number for f in data) == 4


def test_input_with_small_buffer_writes_one_changelog_file_per_flush(catalog):
    t = make(catalog, "input", **{"write-buffer-size": "1 b"})
    writer = t.new_writer()
    writer.write(rows([1, 2]))
    writer.write(rows([2, 3]))
    t.commit(writer.prepare_commit())
    assert len(changelog_metas(t, t.latest_snapshot())) == 2
    assert [c[1] for c in all_changes(t)] == [1, 2, 2, 3]


def test_input_reproduces_its_input(catalog):
    rng = random.Random(7)
    t = make(catalog, "input")
    written = []
    for _ in range(5):
        ids = [rng.randrange(6) for _ in range(8)]
        kinds = [rng.choice(["+I", "+U", "-D"]) for _ in ids]
        batch = rows(ids, [f"x{rng.randrange(100)}" for _ in ids])
        t.write(batch, row_kind=kinds)
        order = sorted(range(len(ids)), key=lambda i: (ids[i], i))  # key, then arrival
        written += [(kinds[i], ids[i], batch.column("v")[i].as_py(), 0) for i in order]
    assert all_changes(t) == written
    assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"])


def test_changelog_file_options(catalog):
    t = make(catalog, "input", **{"changelog-file.prefix": "clog-", "changelog-file.format": "avro",
                                  "changelog-file.stats-mode": "none"})
    t.write(rows([1, 2]))
    [entry] = changelog_metas(t, t.latest_snapshot())
    assert entry.file.file_name.startswith("clog-") and entry.file.file_name.endswith(".avro")
    assert entry.file.value_stats_cols == ()  # stats mode none: no value stats kept
    assert bucket_files(t, "data-")[0].endswith(".parquet")
    assert changes(t, t.latest_snapshot().id) == [("+I", 1, "v1", 0), ("+I", 2, "v2", 0)]


# ------------------------------------------------------------------ full-compaction and lookup


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_hand_written_updates_inserts_deletes(catalog, producer):
    t = make(catalog, producer)
    t.write(rows([1, 2, 1], ["a", "b", "c"]))
    first = t.latest_snapshot()
    assert first.commit_kind == "COMPACT"
    assert t.snapshot(first.id - 1).changelog_manifest_list is None  # the APPEND part has none
    assert changes(t, first.id) == [("+I", 1, "c", 0), ("+I", 2, "b", 0)]
    t.write(rows([2, 3], ["B", "x"]))
    assert changes(t, t.latest_snapshot().id) == [("-U", 2, "b", 0), ("+U", 2, "B", 0), ("+I", 3, "x", 0)]
    t.delete(pa.table({"id": [1, 9]}))
    assert changes(t, t.latest_snapshot().id) == [("-D", 1, "c", 0)]
    snapshot = t.latest_snapshot()
    [entry] = changelog_metas(t, snapshot)
    output_level = 5 if producer == "full-compaction" else 4  # lookup pushes level 0 under level 5
    assert entry.file.file_source == 0 and entry.file.level == output_level
    assert snapshot.changelog_record_count == 1
    assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"])


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_row_deduplicate(catalog, producer):
    t = make(catalog, producer, **{"changelog-producer.row-deduplicate": "true",
                                   "changelog-producer.row-deduplicate-ignore-fields": "n"})
    t.write(rows([1, 2], ["a", "b"]))
    t.write(rows([1, 2], ["a", "B"], [5, 0]))  # id 1 differs only in the ignored field
    assert changes(t, t.latest_snapshot().id) == [("-U", 2, "b", 0), ("+U", 2, "B", 0)]
    plain = make(catalog, producer, name="plain")
    plain.write(rows([1], ["a"]))
    plain.write(rows([1], ["a"]))
    assert changes(plain, plain.latest_snapshot().id) == [("-U", 1, "a", 0), ("+U", 1, "a", 0)]


def test_lookup_looks_up_values_above_the_output_level(catalog):
    # num-levels 3: the first commit's data lands at level 2; later level-0 pushes go to level 1
    t = make(catalog, "lookup", **{"num-levels": "3"})
    t.write(rows([1, 2, 3], ["a", "b", "c"]))
    t.write(rows([2], ["B"]))
    levels = {e.file.level for e in t.planner(t.schema()).live_entries(t.latest_snapshot())}
    assert levels == {1, 2}
    assert changes(t, t.latest_snapshot().id) == [("-U", 2, "b", 0), ("+U", 2, "B", 0)]
    t.write(rows([2, 4], ["BB", "d"]))
    assert changes(t, t.latest_snapshot().id) == [("-U", 2, "B", 0), ("+U", 2, "BB", 0), ("+I", 4, "d", 0)]
    assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"])


def test_full_compaction_waits_for_full_compactions(catalog):
    t = make(catalog, "full-compaction", **{"full-compaction.delta-commits": "2"})
    for cid, ids in ((1, [1]), (2, [2]), (3, [1])):
        writer = t.new_writer()
        writer.write(rows(ids, [f"c{cid}"] * len(ids)))
        t.commit(writer.prepare_commit(commit_identifier=cid), commit_user="u", commit_identifier=cid)
    with_changelog = [s for s in t.snapshots() if s.changelog_manifest_list]
    assert [s.commit_identifier for s in with_changelog] == [2]
    assert changes(t, with_changelog[0].id) == [("+I", 1, "c1", 0), ("+I", 2, "c2", 0)]


def test_write_only_produces_no_compaction_changelog(catalog):
    t = make(catalog, "lookup", **{"write-only": "true"})
    t.write(rows([1]))
    assert all(s.changelog_manifest_list is None for s in t.snapshots())


# ------------------------------------------------------------------ merge engines


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_partial_update_changelog_of_merged_value(catalog, producer):
    t = make(catalog, producer, **{"merge-engine": "partial-update"})
    t.write(pa.table({"id": [1], "v": ["a"], "n": [None]}, schema=SCHEMA))
    t.write(pa.table({"id": [1], "v": [None], "n": [7]}, schema=SCHEMA))
    assert changes(t, t.latest_snapshot().id) == [("-U", 1, "a", None), ("+U", 1, "a", 7)]
    assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"])


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_aggregation_changelog_of_merged_value(catalog, producer):
    t = make(catalog, producer, **{"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                                   "fields.v.aggregate-function": "last_non_null_value"})
    t.write(rows([1, 2], ["a", "b"], [1, 2]))
    t.write(rows([1, 1], ["a", "a"], [10, 100]))
    assert changes(t, t.latest_snapshot().id) == [("-U", 1, "a", 1), ("+U", 1, "a", 111)]
    t.write(rows([1], ["a"], [5]))
    assert changes(t, t.latest_snapshot().id) == [("-U", 1, "a", 111), ("+U", 1, "a", 116)]
    assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"])


def test_first_row_lookup_emits_inserts_of_new_keys_only(catalog):
    t = make(catalog, "lookup", **{"merge-engine": "first-row"})
    t.write(rows([1, 2, 1], ["a", "b", "c"]))
    assert changes(t, t.latest_snapshot().id) == [("+I", 1, "a", 0), ("+I", 2, "b", 0)]
    t.write(rows([2, 3], ["B", "x"]))
    assert changes(t, t.latest_snapshot().id) == [("+I", 3, "x", 0)]
    t.write(rows([1, 3]))
    assert all_changes(t) == [("+I", 1, "a", 0), ("+I", 2, "b", 0), ("+I", 3, "x", 0)]
    assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"])


# ------------------------------------------------------------------ oracle


def random_commits(seed, engine):
    rng = random.Random(seed)
    commits = []
    for _ in range(5):
        ids = [rng.randrange(8) for _ in range(rng.randrange(1, 7))]
        values = [f"v{rng.randrange(4)}" for _ in ids]
        numbers = [rng.randrange(5) for _ in ids]
        delete = engine == "deduplicate" and rng.random() < 0.3
        commits.append((ids, values, numbers, delete))
    return commits


ENGINE_OPTIONS = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
}


@pytest.mark.parametrize("engine", list(ENGINE_OPTIONS))
@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_replaying_the_changelog_gives_the_table(catalog, producer, engine):
    for seed in range(3):
        t = make(catalog, producer, name=f"t{seed}", **ENGINE_OPTIONS[engine], **{"num-levels": "3"})
        for ids, values, numbers, delete in random_commits(seed, engine):
            if delete:
                t.delete(pa.table({"id": ids}))
            else:
                t.write(rows(ids, values, numbers))
        t.compact(full=True)
        assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"]), (producer, engine, seed)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=5), st.booleans()),
                    min_size=1, max_size=4),
       producer=st.sampled_from(["full-compaction", "lookup"]))
def test_replay_property(tmp_path_factory, ops, producer):
    catalog = tarn.Catalog(str(tmp_path_factory.mktemp("wh")))
    t = make(catalog, producer)
    for i, (ids, delete) in enumerate(ops):
        if delete:
            t.delete(pa.table({"id": ids}))
        else:
            t.write(rows(ids, [f"{i}-{k}" for k in ids]))
    assert replay(t) == rows_by_key(t.scan().to_arrow(), ["id"])


# ------------------------------------------------------------------ commits, expiry, failures


def test_no_producer_changes_are_the_delta_files(catalog):
    t = catalog.create_table("db.plain", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows([2, 1]))
    t.delete(pa.table({"id": [2]}))
    assert changes(t, 1) == [("+I", 1, "v1", 0), ("+I", 2, "v2", 0)]
    assert changes(t, 2) == [("-D", 2, None, None)]
    assert all(s.changelog_manifest_list is None for s in t.snapshots())
    t.compact(full=True)
    assert changes(t, t.latest_snapshot().id) == []  # COMPACT snapshots add no rows
    append = catalog.create_table("db.log", schema=SCHEMA)
    append.write(rows([5]))
    assert changes(append, 1) == [("+I", 5, "v5", 0)]


def test_overwrite_commits_no_changelog(catalog):
    t = make(catalog, "input")
    t.write(rows([1]))
    t.overwrite(rows([2]))
    snapshot = t.latest_snapshot()
    assert snapshot.commit_kind == "OVERWRITE" and snapshot.changelog_manifest_list is None
    assert changes(t, snapshot.id) == []


def test_expiry_removes_changelog_files_of_expired_snapshots(catalog):
    t = make(catalog, "input")
    for i in range(4):
        t.write(rows([i]))
    assert len(bucket_files(t, "changelog-")) == 4
    kept = changelog_metas(t, t.latest_snapshot())[0].file.file_name
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert bucket_files(t, "changelog-") == [kept]
    assert changes(t, t.latest_snapshot().id) == [("+I", 3, "v3", 0)]


def test_failed_commit_leaves_no_changelog_file(catalog, monkeypatch):
    t = make(catalog, "lookup")
    t.write(rows([1]))
    before = bucket_files(t)

    def refuse(self, snapshot):
        raise OSError("storage unavailable")

    monkeypatch.setattr(SnapshotStore, "create", refuse)
    with pytest.raises(OSError):
        t.write(rows([1, 2]))
    assert bucket_files(t) == before
    manifests = os.listdir(os.path.join(t.root, "manifest"))
    monkeypatch.undo()
    t.write(rows([3]))
    assert len(os.listdir(os.path.join(t.root, "manifest"))) > len(manifests)


def test_failed_changelog_compaction_deletes_what_it_wrote(catalog, monkeypatch):
    t = make(catalog, "full-compaction")
    t.write(rows([1, 2]))
    before = bucket_files(t)

    def broken(*args, **kwargs):
        raise RuntimeError("diff failed")

    monkeypatch.setattr(lsm_changelog, "full_compaction_changelog", broken)
    monkeypatch.setattr("tarn.write.compact.full_compaction_changelog", broken)
    with pytest.raises(RuntimeError):
        t.write(rows([2, 3]))
    assert bucket_files(t) == before


def test_failed_input_commit_deletes_changelog(catalog, monkeypatch):
    t = make(catalog, "input")

    def conflict(self, *args, **kwargs):
        raise tarn.errors.CommitConflict("simulated")

    monkeypatch.setattr(Committer, "commit", conflict)
    with pytest.raises(tarn.errors.CommitConflict):
        t.write(rows([1, 2]))
    assert bucket_files(t) == []


def test_rollback_and_orphan_cleanup_handle_changelog_files(catalog):
    t = make(catalog, "lookup")
    for i in range(3):
        t.write(rows([i, 10]))
    target = t.snapshots()[1].id  # the first commit's COMPACT snapshot, with its changelog
    kept = changelog_metas(t, t.snapshot(target))[0].file.file_name
    t.rollback_to(target)
    assert bucket_files(t, "changelog-") == [kept]
    stray = os.path.join(t.root, "bucket-0", "changelog-stray-0.parquet")
    with open(stray, "wb") as f:
        f.write(b"x")
    removed = t.remove_orphan_files(older_than=2 ** 62)
    assert [os.path.basename(p) for p in removed] == ["changelog-stray-0.parquet"]
    assert bucket_files(t, "changelog-") == [kept]
    assert changes(t, target) == [("+I", 0, "v0", 0), ("+I", 10, "v10", 0)]


def test_overwrite_with_lookup_commits_no_compaction_changelog(catalog):
    t = make(catalog, "lookup")
    t.write(rows([1]))
    t.overwrite(rows([2]))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds[-2:] == ["OVERWRITE", "COMPACT"]
    assert all(s.changelog_manifest_list is None for s in t.snapshots()[2:])


def test_rollback_to_a_tag_whose_changelog_expired(catalog):
    t = make(catalog, "input")
    for i in range(3):
        t.write(rows([i]))
    t.create_tag("one", 1)
    t.expire_snapshots(retain_min=1, retain_max=1)  # deletes snapshot 1's changelog; the tag stays
    assert not os.path.exists(os.path.join(t.root, "manifest", t.list_tags()[0].snapshot.changelog_manifest_list))
    t.rollback_to("one")
    assert t.snapshot_store.list_ids() == [1]
    assert t.scan().to_arrow().to_pylist() == [{"id": 0, "v": "v0", "n": 0}]
    assert bucket_files(t, "changelog-") == []
