"""The rule of tarn/features.py: tarn acts on everything in a table that changes what a reader
sees or where a writer puts a row, or refuses it with UnsupportedFeature, never guessing. A
refused write leaves the table's files byte for byte as they were.

Tables another engine made are simulated here by adding a schema file the way any engine's
ALTER does (options or fields tarn's own create/alter would not write); the peers' own tables
are in tests/interop/test_today_tables.py."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil

import pyarrow as pa
import pytest

import tarn
from tarn.meta.manifest import ADD, IndexManifestEntry
from tarn.options import (BOOL, CARRIED, DOUBLE, DURATION, ENUM, FIELD_OPTIONS, INT, LIST, LONG, MAP, MEMORY,
                          OPTIONS, READS, STATS_MODE, STRING, WRITES, Opt)
from tarn.write.message import CommitMessage

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


# ------------------------------------------------------------------ helpers


def files_of(root: str) -> dict[str, bytes]:
    """Every file under the table directory: relative path -> bytes."""
    out = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


def as_other_engine(table: tarn.Table, options: dict | None = None, add_fields: list[dict] = (),
                    drop_options: tuple = ()) -> None:
    """Add schema-(n+1) carrying `options` and `add_fields`, as another engine's ALTER writes it."""
    schema_dir = os.path.join(table.root, "schema")
    latest = max(int(n.split("-")[1]) for n in os.listdir(schema_dir) if n.startswith("schema-"))
    with open(os.path.join(schema_dir, f"schema-{latest}")) as f:
        obj = json.load(f)
    obj["id"] = latest + 1
    obj["options"] = {k: v for k, v in {**obj["options"], **(options or {})}.items() if k not in drop_options}
    for field in add_fields:
        obj["highestFieldId"] += 1
        obj["fields"].append({"id": obj["highestFieldId"], **field})
    with open(os.path.join(schema_dir, f"schema-{latest + 1}"), "w") as f:
        json.dump(obj, f, indent=2)


def refused_write(table: tarn.Table, attempt) -> tarn.UnsupportedFeature:
    """Run a write that must be refused; the table's files must be unchanged afterwards."""
    before = files_of(table.root)
    with pytest.raises(tarn.UnsupportedFeature) as info:
        attempt()
    assert files_of(table.root) == before
    return info.value


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "wh"))


def rows(ids, prefix="v") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{prefix}{i}" for i in ids]}, schema=SCHEMA)


# ------------------------------------------------------------------ options: every READS / WRITES row


def sample_value(opt: Opt) -> str | None:
    """A value of `opt` that tarn does not honour (None when every value is honoured)."""
    honoured = {v.lower() for v in (opt.default, *opt.honoured) if v is not None}
    candidates = {
        BOOL: ["true", "false"],
        ENUM: list(opt.choices),
        INT: ["7", "3"], LONG: ["7", "3"], DOUBLE: ["0.5", "0.25"],
        MEMORY: ["3 mb", "5 mb"], DURATION: ["3 min", "5 min"],
        STRING: ["v", "w"], LIST: ["v", "id"], MAP: ["a:b"], STATS_MODE: ["full", "counts"],
    }[opt.kind]
    return next((c for c in candidates if c.lower() not in honoured), None)


# (key in the table, its row): every table option, and per-column options on column `v`
REFUSED = [(o.name, o) for o in OPTIONS if o.effect in (READS, WRITES)] + \
    [(f"fields.v.{o.name}", o) for o in FIELD_OPTIONS if o.effect in (READS, WRITES)]


@pytest.mark.parametrize("key,opt", REFUSED, ids=[key for key, _ in REFUSED])
def test_every_refused_option_is_refused(catalog, key, opt):
    """Each READS/WRITES row of the feature table: a table carrying a value tarn does not honour
    loads; reads are refused (READS) or work (WRITES); writes are refused before any file is
    written. The default value is honoured."""
    value = sample_value(opt)
    if value is None:
        pytest.skip(f"every value of {key} is honoured")
    for name in ("db.pk", "db.append"):
        pk = ["id"] if name == "db.pk" else None
        table = catalog.create_table(name, SCHEMA, primary_key=pk, options={"bucket": "1"} if pk else {})
        table.write(rows([1, 2]))
        as_other_engine(table, {key: value})
        table = catalog.load_table(name)  # loads whatever it carries
        if opt.effect is READS:
            with pytest.raises(tarn.UnsupportedFeature, match=f"table {name}: option '{key}'"):
                table.scan().to_arrow()
        else:
            assert table.scan().to_arrow().sort_by("id").to_pylist() == rows([1, 2]).to_pylist()
        error = refused_write(table, lambda: table.write(rows([3])))
        assert key in str(error) and "tarn" in str(error)
        refused_write(table, lambda: table.delete(filter="id = 1"))
        refused_write(table, lambda: table.compact(full=True))
        refused_write(table, lambda: table.overwrite(rows([9])))
        catalog.drop_table(name)


def test_default_of_a_refused_option_is_honoured(catalog):
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    as_other_engine(table, {"data-evolution.enabled": "false", "deletion-vectors.merge-on-read": "FALSE"})
    table = catalog.load_table("db.t")
    table.write(rows([1]))
    assert table.scan().to_arrow().to_pylist() == rows([1]).to_pylist()


def test_issue_options_are_classified():
    """The options the issue found ignored are no longer carried silently."""
    from tarn.options import option
    for name in ("pk-clustering-override", "chain-table.enabled", "primary-key.nullable",
                 "deletion-vectors.merge-on-read", "partition.legacy-name", "data-evolution.enabled",
                 "row-tracking.enabled"):
        assert option(name).effect is not CARRIED, name
        assert option(name).since, name


def test_unknown_option_refuses_writes_not_reads(catalog):
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table.write(rows([1]))
    as_other_engine(table, {"some-future.option": "on"})
    table = catalog.load_table("db.t")
    assert table.scan().to_arrow().to_pylist() == rows([1]).to_pylist()
    error = refused_write(table, lambda: table.write(rows([2])))
    assert "option 'some-future.option'" in str(error) and "db.t" in str(error)


def test_alter_after_refusal_lifts_nothing_by_accident(catalog):
    """A refused table stays refused after reloads; dropping the option (another ALTER) lifts it."""
    table = catalog.create_table("db.t", SCHEMA, options={})
    table.write(rows([1]))
    as_other_engine(table, {"chain-table.enabled": "true"})
    with pytest.raises(tarn.UnsupportedFeature, match="chain-table.enabled"):
        catalog.load_table("db.t").scan().to_arrow()
    as_other_engine(table, drop_options=("chain-table.enabled",))
    table = catalog.load_table("db.t")
    table.write(rows([2]))
    assert table.scan().to_arrow().sort_by("id").to_pylist() == rows([1, 2]).to_pylist()


# ------------------------------------------------------------------ types tarn lacks


@pytest.mark.parametrize("type_json", ["BLOB", {"type": "VECTOR", "element": "FLOAT", "length": 4},
                                       {"type": "ARRAY", "element": "BLOB NOT NULL"}, "HYPERLOGLOG"])
@pytest.mark.parametrize("primary_key", [None, ["id"]])
def test_column_of_unknown_type(catalog, type_json, primary_key):
    """The table loads, columns other than the unknown one read, reading it (or all columns) and
    every write are refused, and the schema keeps the type's JSON verbatim."""
    table = catalog.create_table("db.t", SCHEMA, primary_key=primary_key,
                                 options={"bucket": "1"} if primary_key else {})
    table.write(rows([1, 2]))
    as_other_engine(table, add_fields=[{"name": "payload", "type": type_json}])
    table = catalog.load_table("db.t")
    assert table.scan(columns=["id", "v"]).to_arrow().sort_by("id").to_pylist() == rows([1, 2]).to_pylist()
    assert table.scan(columns=["id"], filter="v = 'v2'").to_arrow().to_pylist() == [{"id": 2}]
    with pytest.raises(tarn.UnsupportedFeature, match="table db.t: column 'payload' has type"):
        table.scan().to_arrow()
    with pytest.raises(tarn.UnsupportedFeature, match="column 'payload'"):
        table.scan(columns=["payload"]).to_arrow()
    refused_write(table, lambda: table.write(rows([3])))
    refused_write(table, lambda: table.delete(filter="id = 1"))
    refused_write(table, lambda: table.compact(full=True))
    schema_json = json.loads(open(os.path.join(table.root, "schema", "schema-1")).read())
    assert schema_json["fields"][-1]["type"] == type_json
    repr(table)


# ------------------------------------------------------------------ data files tarn cannot read


@pytest.mark.parametrize("fmt", ["lance", "vortex", "mosaic", "blob", "csv"])
def test_data_file_in_foreign_format(catalog, fmt):
    table = catalog.create_table("db.t", SCHEMA, options={})
    table.write(rows([1]))
    writer = table.new_writer()
    writer.write(rows([2]))
    messages = writer.prepare_commit()
    (message,) = messages
    (meta,) = message.new_files
    bucket_dir = table.bucket_dir(table.schema(), message.partition, message.bucket)
    foreign = meta.file_name.rsplit(".", 1)[0] + f".{fmt}"
    shutil.move(os.path.join(bucket_dir, meta.file_name), os.path.join(bucket_dir, foreign))
    table.commit([dataclasses.replace(message, new_files=[dataclasses.replace(meta, file_name=foreign)])])
    with pytest.raises(tarn.UnsupportedFeature, match=f"data file {foreign} is in format '{fmt}'"):
        table.scan().to_arrow()


def test_partial_column_file_is_refused_on_read(catalog):
    table = catalog.create_table("db.t", SCHEMA, options={})
    writer = table.new_writer()
    writer.write(rows([1]))
    (message,) = writer.prepare_commit()
    (meta,) = message.new_files
    table.commit([dataclasses.replace(message, new_files=[dataclasses.replace(meta, write_cols=("v",),
                                                                              first_row_id=0)])])
    with pytest.raises(tarn.UnsupportedFeature, match=r"holds only columns \['v'\].*row-tracking.enabled"):
        table.scan().to_arrow()


# ------------------------------------------------------------------ postpone bucket


def test_postpone_rows_of_another_engine_stay_invisible_until_tarn_compacts(catalog):
    """bucket = -2: files of the postpone bucket are invisible to batch reads until compacted
    (Paimon's rule); tarn's own writes join them and its compaction places them all
    (tests/test_postpone.py covers the mode)."""
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table.write(rows([1, 2]))
    writer = table.new_writer()
    writer.write(rows([2, 3], prefix="late"))
    (message,) = writer.prepare_commit()
    postponed = dataclasses.replace(message, bucket=-2, total_buckets=-2)
    src = table.bucket_dir(table.schema(), message.partition, message.bucket)
    dst = os.path.join(table.root, "bucket-postpone")
    os.makedirs(dst, exist_ok=True)
    for meta in message.new_files:
        shutil.move(os.path.join(src, meta.file_name), os.path.join(dst, meta.file_name))
    as_other_engine(table, {"bucket": "-2"})
    table = catalog.load_table("db.t")
    table.committer().commit([postponed], "postpone-writer")  # as another engine's postpone writer commits it
    assert table.scan().to_arrow().sort_by("id").to_pylist() == rows([1, 2]).to_pylist()
    table.write(rows([4]))
    assert table.scan().to_arrow().sort_by("id").to_pylist() == rows([1, 2]).to_pylist()
    table.compact()
    assert table.scan().to_arrow().sort_by("id").to_pylist() == \
        pa.concat_tables([rows([1]), rows([2, 3], prefix="late"), rows([4])]).to_pylist()


# ------------------------------------------------------------------ index types tarn does not know


def test_unknown_index_entries_are_carried_and_kept(catalog):
    """An index-manifest entry of a type tarn does not know (a global index) survives every
    later commit untouched, and its file stays while a snapshot or tag references it."""
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"],
                                 options={"bucket": "1", "snapshot.num-retained.min": "1",
                                          "snapshot.num-retained.max": "1"})
    table.write(rows([1, 2]))
    index_dir = os.path.join(table.root, "index")
    os.makedirs(index_dir, exist_ok=True)
    with open(os.path.join(index_dir, "btree-global-0.index"), "wb") as f:
        f.write(b"opaque global index bytes")
    partition = table.live_entries(table.latest_snapshot())[0].partition
    entry = IndexManifestEntry(kind=ADD, partition=partition, bucket=0, index_type="BTREE",
                               file_name="btree-global-0.index", file_size=25, row_count=2)
    table.commit([CommitMessage(partition, 0, 1, new_index_files=[entry])])
    marked = table.latest_snapshot().id
    table.create_tag("with-index", marked)

    def index_entries():
        latest = table.latest_snapshot()
        return [e for e in table.manifests().read_index_manifest(latest.index_manifest)
                if e.index_type == "BTREE"]

    assert index_entries() == [entry]
    table.write(rows([3]))
    table.delete(filter="id = 1")
    table.compact(full=True)
    table.expire_snapshots(retain_min=1, retain_max=1)
    assert index_entries() == [entry]
    table.remove_orphan_files(older_than=2**62)
    assert os.path.exists(os.path.join(index_dir, "btree-global-0.index"))
    assert table.scan().to_arrow().sort_by("id").to_pylist() == rows([2, 3]).to_pylist()


def test_write_on_a_snapshot_with_fields_tarn_does_not_know_is_refused(catalog):
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table.write(rows([1]))
    path = os.path.join(table.root, "snapshot", f"snapshot-{table.latest_snapshot().id}")
    obj = json.load(open(path))
    obj["someFutureField"] = 7
    with open(path, "w") as f:
        json.dump(obj, f)
    assert table.scan().to_arrow().to_pylist() == rows([1]).to_pylist()
    error = refused_write(table, lambda: table.write(rows([2])))
    assert "someFutureField" in str(error)


def test_write_next_to_files_with_row_ids_is_refused(catalog):
    table = catalog.create_table("db.t", SCHEMA, options={})
    writer = table.new_writer()
    writer.write(rows([1]))
    (message,) = writer.prepare_commit()
    (meta,) = message.new_files
    table.commit([dataclasses.replace(message, new_files=[dataclasses.replace(meta, first_row_id=0)])])
    assert table.scan().to_arrow().to_pylist() == rows([1]).to_pylist()
    error = refused_write(table, lambda: table.write(rows([2])))
    assert "_FIRST_ROW_ID" in str(error)


def test_schema_fields_tarn_does_not_know_are_kept_and_refuse_writes(catalog):
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table.write(rows([1]))
    path = os.path.join(table.root, "schema", "schema-0")
    obj = json.load(open(path))
    obj["someFutureKey"] = {"a": 1}
    with open(path, "w") as f:
        json.dump(obj, f)
    table = catalog.load_table("db.t")
    assert table.scan().to_arrow().to_pylist() == rows([1]).to_pylist()
    error = refused_write(table, lambda: table.write(rows([2])))
    assert "someFutureKey" in str(error)
    table.alter(tarn.SetOption("snapshot.num-retained.min", "3"))  # an ALTER keeps what it does not know
    assert json.load(open(os.path.join(table.root, "schema", "schema-1")))["someFutureKey"] == {"a": 1}


def test_a_table_switched_to_another_format_reads_its_files_by_their_own(catalog):
    """`file.format` decides new files only (issue 43 item 5): a table another engine switched to
    lance still reads its parquet files; a lance file, once there, is refused naming it, and
    writes are refused before anything is written."""
    table = catalog.create_table("db.t", SCHEMA, options={})
    table.write(rows([1, 2]))
    path = os.path.join(table.root, "schema", "schema-0")
    switched = json.loads(open(path).read())
    switched["id"], switched["options"]["file.format"] = 1, "lance"
    with open(os.path.join(table.root, "schema", "schema-1"), "w") as out:
        out.write(json.dumps(switched))
    table = catalog.load_table("db.t")
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == [1, 2]
    refused_write(table, lambda: table.write(rows([3])))
    with pytest.raises(tarn.UnsupportedFeature, match="file.format"):
        table.compact(full=True)
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == [1, 2]


def test_ignore_update_before_drops_update_before_rows(tmp_path):
    """Java's RowKindFilter: with `ignore-update-before` (or `ignore-delete`) -U rows never
    reach the table; +U rows still update, -D still deletes (without ignore-delete)."""
    catalog = tarn.Catalog(str(tmp_path))
    t = catalog.create_table("db.u", SCHEMA, primary_key="id",
                             options={"bucket": "1", "ignore-update-before": "true",
                                      "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.write(pa.table({"id": [1, 1, 2], "v": ["a", "a2", "b"]}, schema=SCHEMA), row_kind=["-U", "+U", "-D"])
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a2"}, {"id": 3, "v": "c"}]
    kinds = t.changes(2).column("_ROW_KIND").to_pylist()
    assert kinds == ["+U", "-D"]  # the -U row is gone from the input changelog too
    append = catalog.create_table("db.a", SCHEMA, options={"ignore-update-before": "true"})
    append.write(pa.table({"id": [1, 2], "v": ["x", "y"]}, schema=SCHEMA), row_kind=["+I", "-U"])
    assert append.scan().to_arrow().column("id").to_pylist() == [1]


@pytest.mark.parametrize("mode", ["scan", "snapshot"])
def test_sequence_number_init_mode(tmp_path, mode):
    """`write.sequence-number-init-mode` = snapshot: every commit records the table-wide maximum
    sequence number in its properties and writers start above it in every bucket (Java 2.0's
    SequenceSnapshotProperties); scan: each bucket starts above its own files."""
    t = tarn.Catalog(str(tmp_path)).create_table("db.s", SCHEMA, primary_key="id",
                                                 options={"bucket": "2", "write.sequence-number-init-mode": mode,
                                                          "write-only": "true"})
    t.write(pa.table({"id": list(range(20)), "v": ["a"] * 20}, schema=SCHEMA))
    bucket_of = {}
    for key in range(20):
        bucket_of.setdefault(t.scan(filter=f"id = {key}").plan()[0].bucket, []).append(key)
    busy, quiet = bucket_of[1], bucket_of[0]
    for _ in range(3):  # bucket 1's sequence numbers run far ahead of bucket 0's
        t.write(pa.table({"id": busy, "v": ["b"] * len(busy)}, schema=SCHEMA))
    table_max = max(e.file.max_sequence_number for e in t.live_entries(t.latest_snapshot()))
    quiet_max = max(e.file.max_sequence_number for e in t.live_entries(t.latest_snapshot()) if e.bucket == 0)
    assert quiet_max < table_max
    t.write(pa.table({"id": [quiet[0]], "v": ["c"]}, schema=SCHEMA))
    newest = max((e.file for e in t.live_entries(t.latest_snapshot()) if e.bucket == 0),
                 key=lambda f: f.max_sequence_number)
    props = t.latest_snapshot().properties or {}
    if mode == "snapshot":
        assert newest.min_sequence_number == table_max + 1
        assert int(props["sequence.generation.max-sequence-number"]) == table_max + 1
    else:
        assert newest.min_sequence_number == quiet_max + 1
        assert "sequence.generation.max-sequence-number" not in props


def test_data_file_path_directory(tmp_path):
    """`data-file.path-directory`: partition and bucket directories under that sub-directory;
    reads, compaction, expiry and orphan removal all find the files there."""
    import time

    t = tarn.Catalog(str(tmp_path)).create_table(
        "db.d", pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.string())]), primary_key=["p", "id"],
        partition_keys="p", options={"bucket": "1", "data-file.path-directory": "data/files"})
    for i in range(3):
        t.write(pa.table({"p": ["a", "b"], "id": [1, 2], "v": [f"x{i}", "y"]}))
    t.compact(full=True)
    assert sorted(os.listdir(os.path.join(t.root, "data", "files"))) == ["p=a", "p=b"]
    assert not [n for n in os.listdir(t.root) if n.startswith("p=")]
    stray = os.path.join(t.root, "data", "files", "p=a", "bucket-0", "data-stray.parquet")
    open(stray, "wb").close()
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000) == [stray]
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    assert sorted(r["v"] for r in t.scan().to_arrow().to_pylist()) == ["x2", "y"]
    live = {e.file.file_name for e in t.live_entries(t.latest_snapshot())}
    on_disk = {n for d, _, names in os.walk(os.path.join(t.root, "data")) for n in names}
    assert on_disk == live


@pytest.mark.parametrize("ordering", [True, False])
def test_sequence_snapshot_ordering(tmp_path, ordering):
    """`sequence.snapshot-ordering`: the later commit wins whatever sequence numbers its writer
    gave the rows (Java stamps APPEND files with the snapshot id and reads their rows with it);
    without it, the larger sequence number wins."""
    options = {"bucket": "1", "write-only": "true"}
    if ordering:
        options["sequence.snapshot-ordering"] = "true"
    t = tarn.Catalog(str(tmp_path)).create_table("db.o", SCHEMA, primary_key="id", options=options)
    early = t.core.new_writer()
    early.write(pa.table({"id": [99], "v": ["x"]}, schema=SCHEMA))
    early.flush()  # its bucket restored from the empty table: sequence numbers from 0
    t.write(pa.table({"id": [1, 2, 3, 4, 5], "v": ["a"] * 5}, schema=SCHEMA))  # snapshot 1
    t.write(pa.table({"id": [1], "v": ["B"]}, schema=SCHEMA))  # snapshot 2: sequence 5
    early.write(pa.table({"id": [1], "v": ["A"]}, schema=SCHEMA))  # sequence 1, committed last
    t.commit(early.prepare_commit())  # snapshot 3
    files = [e.file for e in t.live_entries(t.latest_snapshot())]
    if ordering:
        assert sorted((f.min_sequence_number, f.max_sequence_number) for f in files) == [(1, 1), (2, 2), (3, 3), (3, 3)]
    value = {r["id"]: r["v"] for r in t.scan().to_arrow().to_pylist()}[1]
    assert value == ("A" if ordering else "B")
    t.compact(full=True)  # the compaction keeps the order it read
    assert {r["id"]: r["v"] for r in t.scan().to_arrow().to_pylist()}[1] == value


def test_sequence_snapshot_ordering_rules(tmp_path):
    catalog = tarn.Catalog(str(tmp_path))
    for options, message in (({"sequence.snapshot-ordering": "true", "bucket": "1"}, "write-only"),
                             ({"sequence.snapshot-ordering": "true", "write-only": "true", "bucket": "1",
                               "sequence.field": "v"}, "sequence.field")):
        with pytest.raises(tarn.InvalidOption, match=message):
            catalog.create_table("db.bad", SCHEMA, primary_key="id", options=options)
    with pytest.raises(tarn.InvalidOption, match="primary key"):
        catalog.create_table("db.bad", SCHEMA, options={"sequence.snapshot-ordering": "true", "write-only": "true"})


def test_index_file_in_data_file_dir_for_hash_and_vectors(tmp_path):
    """`index-file-in-data-file-dir`: a dynamic-bucket table's HASH index and a primary-key
    table's deletion vectors live in their bucket directories; the next writer reads them
    there (keys stay in their buckets), expiry and orphan removal keep the live ones."""
    import time

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = tarn.Catalog(str(tmp_path)).create_table("db.h", schema, primary_key="id", options={
        "bucket": "-1", "index-file-in-data-file-dir": "true", "dynamic-bucket.target-row-num": "4"})
    t.write(pa.table({"id": list(range(10)), "v": ["a"] * 10}, schema=schema))
    t.write(pa.table({"id": list(range(5, 15)), "v": ["b"] * 10}, schema=schema))
    rows = {r["id"]: r["v"] for r in t.scan().to_arrow().to_pylist()}
    assert rows == {**{i: "a" for i in range(5)}, **{i: "b" for i in range(5, 15)}}
    assert t.scan().count() == 15  # one row per key: the index placed old keys where they were
    assert not os.path.exists(os.path.join(t.root, "index"))
    in_buckets = [n for d, _, names in os.walk(t.root) if os.path.basename(d).startswith("bucket-")
                  for n in names if n.startswith("index-")]
    assert in_buckets
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000) == []  # all in use
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    t.write(pa.table({"id": [0, 14], "v": ["c", "c"]}, schema=schema))
    assert t.scan().count() == 15
    assert {r["id"]: r["v"] for r in t.scan().to_arrow().to_pylist()} == {**rows, 0: "c", 14: "c"}
