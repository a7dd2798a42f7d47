"""Branches: creation (empty, from a tag), names, every verb on a branch table (writes, scans,
time travel, tags, compaction, expiry, rollback, ALTER), `$branches`, fast-forward, deletion,
identifiers and paths, `scan.fallback-branch` / `scan.primary-branch`. Maintenance across
branches: tests/test_branch_maintenance.py; peers: tests/interop/test_postpone_branch_interop.py."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

import tarn

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "wh"))


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(rows("a", [1, 2], "main"))
    return t


def rows(dt, ids, v):
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]})


def read(t, **kw):
    return sorted((r["dt"], r["id"], r["v"]) for r in t.scan(**kw).to_arrow().to_pylist())


def tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_branch_from_a_tag_copies_tag_snapshot_and_schemas(table):
    table.create_tag("t1")
    table.alter(tarn.AddColumn("extra", tarn.types.INT()))
    table.write(pa.table({"dt": ["a"], "id": pa.array([3], pa.int64()), "v": ["main3"], "extra": [1]}))
    dev = table.create_branch("dev", from_tag="t1")
    root = os.path.join(table.root, "branch", "branch-dev")
    assert tree(root) == ["schema/schema-0", "snapshot/snapshot-1", "tag/tag-t1"]  # schemas up to the tag's
    with open(os.path.join(root, "snapshot", "snapshot-1"), "rb") as f, \
            open(os.path.join(table.root, "snapshot", "snapshot-1"), "rb") as g:
        assert f.read() == g.read()
    assert read(dev) == [("a", 1, "main1"), ("a", 2, "main2")]
    assert dev.schema().field_names == ["dt", "id", "v"]
    assert [t.name for t in dev.list_tags()] == ["t1"]
    empty = table.create_branch("empty")
    assert tree(os.path.join(table.root, "branch", "branch-empty")) == ["schema/schema-0", "schema/schema-1"]
    assert empty.latest_snapshot() is None and read(empty) == []
    empty.write(pa.table({"dt": ["z"], "id": pa.array([1], pa.int64()), "v": ["e"], "extra": [5]}))
    assert empty.latest_snapshot().id == 1


def test_every_verb_works_on_a_branch(table):
    table.create_tag("t1")
    dev = table.create_branch("dev", from_tag="t1")
    main_tree = tree(os.path.join(table.root, "snapshot"))
    dev.write(rows("a", [2, 3], "dev"))
    dev.delete(filter="id = 1")
    dev.update(set={"v": "upd"}, filter="id = 3")
    assert read(dev) == [("a", 2, "dev2"), ("a", 3, "upd")]
    assert read(table) == [("a", 1, "main1"), ("a", 2, "main2")]
    assert tree(os.path.join(table.root, "snapshot")) == main_tree  # main untouched
    assert read(dev, snapshot_id=1) == read(table)
    assert read(dev, tag="t1") == read(table)
    dev.create_tag("dev-tag")
    assert "dev-tag" not in [t.name for t in table.list_tags()]
    dev.compact(full=True)
    assert dev.latest_snapshot().commit_kind == "COMPACT"
    dev.alter(tarn.AddColumn("note", tarn.types.STRING()))
    assert "note" in dev.schema().field_names and "note" not in table.schema().field_names
    dev.write(pa.table({"dt": ["b"], "id": pa.array([1], pa.int64()), "v": ["b1"], "note": ["n"]}))
    dev.rollback_to("dev-tag")
    assert read(dev) == [("a", 2, "dev2"), ("a", 3, "upd")]
    for _ in range(3):
        dev.write(rows("a", [9], "x").append_column("note", pa.array([None], pa.string())))
    assert dev.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2 ** 62) > 0
    assert read(dev) == [("a", 2, "dev2"), ("a", 3, "upd"), ("a", 9, "x9")]
    assert read(table) == [("a", 1, "main1"), ("a", 2, "main2")]
    assert read(table, tag="t1") == read(table)
    assert [s["snapshot_id"] for s in dev.system_table("snapshots").to_arrow().to_pylist()] == \
        [s.id for s in dev.snapshots()]


def test_names_are_checked_as_paimon_does(table):
    for bad, match in (("main", "default branch"), ("", "blank"), ("  ", "blank"), ("123", "numeric"),
                       ("a$b", "addressed"), ("a/b", "addressed"), (" x", "addressed"), ("..", "addressed")):
        with pytest.raises(tarn.InvalidArgument, match=match):
            table.create_branch(bad)
    table.create_branch("dev")
    with pytest.raises(tarn.InvalidArgument, match="already exists"):
        table.create_branch("dev")
    assert table.create_branch("dev", ignore_if_exists=True).branch == "dev"
    with pytest.raises(tarn.SnapshotNotFound, match="tag 'nope'"):
        table.create_branch("x", from_tag="nope")
    assert not os.path.exists(os.path.join(table.root, "branch", "branch-x"))


def test_identifiers_paths_and_branches_table(catalog, table):
    table.create_branch("dev")
    assert catalog.load_table("db.t$branch_dev").branch == "dev"
    assert catalog.load_table("db.t$branch_main").branch == "main"
    assert tarn.load_table(table.root + "$branch_dev").branch == "dev"
    assert tarn.load_table(table.root, branch="dev").name.endswith("$branch_dev")
    with pytest.raises(tarn.TableNotFound, match="branch 'nope' does not exist"):
        catalog.load_table("db.t$branch_nope")
    with pytest.raises(tarn.InvalidArgument, match="system table"):
        catalog.load_table("db.t$snapshots")
    with pytest.raises(tarn.InvalidArgument):
        catalog.load_table("db.t$branch_a$b$c")
    with pytest.raises(tarn.InvalidArgument, match="differ"):
        tarn.load_table(table.root + "$branch_dev", branch="other")
    branches = table.system_table("branches").to_arrow()
    assert branches.column_names == ["branch_name", "create_time"]
    assert branches.column("branch_name").to_pylist() == ["dev"]
    assert str(branches.schema.field("create_time").type) == "timestamp[ms]"
    assert table.list_branches() == ["dev"]
    assert "branch='dev'" in repr(table.branch_table("dev"))


def test_fast_forward_replaces_main_from_the_branch_point(table):
    table.create_tag("t1")
    table.write(rows("a", [3], "later"))
    table.create_tag("t2")
    dev = table.create_branch("dev", from_tag="t1")
    dev.alter(tarn.AddColumn("note", tarn.types.STRING()))
    dev.write(pa.table({"dt": ["a"], "id": pa.array([5], pa.int64()), "v": ["dev5"], "note": ["n"]}))
    dev.create_tag("d1")
    done = table.fast_forward("dev")
    assert done.dropped_snapshots == (2,) and done.dropped_tags == ("t2",)
    main = tarn.load_table(table.root)
    assert sorted(r["id"] for r in main.scan().to_arrow().to_pylist()) == [1, 2, 5]
    assert main.schema().field_names == ["dt", "id", "v", "note"]
    assert sorted(t.name for t in main.list_tags()) == ["d1", "t1"]
    assert [s.id for s in main.snapshots()] == [1, 2]
    main.write(rows("a", [6], "after").append_column("note", pa.array([None], pa.string())))  # main goes on
    assert main.latest_snapshot().id == 3
    with pytest.raises(tarn.InvalidArgument):
        table.fast_forward("main")
    with pytest.raises(tarn.TableNotFound):
        table.fast_forward("nope")
    table.create_branch("blank")
    with pytest.raises(tarn.SnapshotNotFound, match="no snapshot"):
        table.fast_forward("blank")


def test_delete_branch(table):
    dev = table.create_branch("dev")
    dev.write(rows("b", [1], "dev"))
    table.delete_branch("dev")
    assert table.list_branches() == []
    assert not os.path.exists(os.path.join(table.root, "branch", "branch-dev"))
    with pytest.raises(tarn.TableNotFound):
        table.delete_branch("dev")
    with pytest.raises(tarn.InvalidArgument):
        table.delete_branch("main")
    orphans = table.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000, dry_run=True)
    assert any("dt=b" in p for p in orphans)  # the branch's data files are left for orphan removal
    assert read(table) == [("a", 1, "main1"), ("a", 2, "main2")]


def test_fallback_branch_fills_missing_partitions(table):
    fb = table.create_branch("fb")
    fb.write(pa.concat_tables([rows("a", [1], "fb"), rows("b", [1, 2], "fb"), rows("c", [7], "fb")]))
    table.alter(tarn.SetOption("scan.fallback-branch", "fb"))
    assert read(table) == [("a", 1, "main1"), ("a", 2, "main2"), ("b", 1, "fb1"), ("b", 2, "fb2"), ("c", 7, "fb7")]
    assert read(table, filter="dt = 'b' and id = 2") == [("b", 2, "fb2")]
    assert table.scan().count() == 5
    assert table.scan(columns=["v"], filter="id = 1").to_arrow().column("v").to_pylist().count("fb1") == 1
    with pytest.raises(tarn.InvalidArgument, match="scan.fallback-branch"):
        table.delete_branch("fb")
    table.write(rows("b", [3], "main"))  # now main holds partition b: b comes from main only
    assert read(table, filter="dt = 'b'") == [("b", 3, "main3")]
    snapshot = table.latest_snapshot().id
    assert read(table, snapshot_id=snapshot - 1)[-2:] == [("b", 2, "fb2"), ("c", 7, "fb7")]
    stream = table.changes(snapshot)  # streams read the table's own branch only
    assert stream.column("dt").to_pylist() == ["b"]


def test_primary_branch_takes_its_partitions_first(table):
    primary = table.create_branch("p")
    primary.write(rows("a", [1], "p"))
    table.write(rows("b", [1], "main"))
    table.alter(tarn.SetOption("scan.primary-branch", "p"))
    assert read(table) == [("a", 1, "p1"), ("b", 1, "main1")]
    with pytest.raises(tarn.InvalidOption, match="both"):
        table.alter(tarn.SetOption("scan.fallback-branch", "p"))
    with pytest.raises(tarn.InvalidOption, match="does not exist"):
        table.alter(tarn.SetOption("scan.primary-branch", "nope"))


def test_fallback_branch_must_have_the_table_columns(table):
    fb = table.create_branch("fb")
    fb.alter(tarn.AddColumn("x", tarn.types.INT()))
    fb.write(pa.table({"dt": ["b"], "id": pa.array([1], pa.int64()), "v": ["fb"], "x": [1]}))
    table.alter(tarn.SetOption("scan.fallback-branch", "fb"))
    with pytest.raises(tarn.InvalidOption, match="columns"):
        table.scan().to_arrow()


def test_branch_option_json_stays_out_of_schema_files(table):
    table.create_branch("dev").write(rows("a", [3], "dev"))
    with open(os.path.join(table.root, "branch", "branch-dev", "schema", "schema-0")) as f:
        assert "branch" not in json.load(f)["options"]


def test_fallback_branch_files_read_with_its_own_schemas_when_many(table):
    """The branches' schema 1 differ under the same id (main adds `x`; the fallback branch adds
    `tmp`, writes, drops it and adds `x`): a scan of many small files (read together) reads
    each branch's files with its own schemas, so `tmp` never shows as `x`."""
    fb = table.create_branch("fb")
    fb.alter(tarn.AddColumn("tmp", tarn.types.STRING()))
    table.alter(tarn.AddColumn("x", tarn.types.STRING()))
    for i in range(6):
        fb.write(pa.table({"dt": [f"f{i % 3}"], "id": pa.array([i], pa.int64()), "v": [f"fb{i}"], "tmp": [f"t{i}"]}))
        table.write(pa.table({"dt": ["a"], "id": pa.array([10 + i], pa.int64()), "v": [f"m{i}"], "x": [f"x{i}"]}))
    fb.alter(tarn.DropColumn("tmp"))
    fb.alter(tarn.AddColumn("x", tarn.types.STRING()))
    table.alter(tarn.SetOption("scan.fallback-branch", "fb"))
    got = {(r["dt"], r["id"]): r["x"] for r in table.scan().to_arrow().to_pylist()}
    assert {k: v for k, v in got.items() if k[0] != "a"} == {(f"f{i % 3}", i): None for i in range(6)}
    assert [got[("a", 10 + i)] for i in range(6)] == [f"x{i}" for i in range(6)]
    assert sum(len(s.files) for s in table.scan().plan()) >= 8


def test_a_branch_schema_naming_its_own_branch_reads_and_writes(table):
    """Java keeps `branch` = <name> in the schemas it writes on a branch: that table works; a
    schema naming another branch than the one read is refused."""
    table.create_tag("t1")
    table.create_branch("b1", from_tag="t1")
    schema_dir = os.path.join(table.root, "branch", "branch-b1", "schema")
    last = max(int(n.split("-")[1]) for n in os.listdir(schema_dir))
    with open(os.path.join(schema_dir, f"schema-{last}")) as f:
        schema = json.load(f)
    schema["options"]["branch"] = "b1"
    schema["id"] = last + 1
    with open(os.path.join(schema_dir, f"schema-{last + 1}"), "w") as f:
        json.dump(schema, f)
    b1 = tarn.load_table(table.root, branch="b1")
    b1.write(rows("a", [3], "b"))
    assert read(b1) == [("a", 1, "main1"), ("a", 2, "main2"), ("a", 3, "b3")]
    schema["id"] = table.schema_store.list_ids()[-1] + 1
    with open(os.path.join(table.root, "schema", f"schema-{schema['id']}"), "w") as f:
        json.dump(schema, f)  # main's schema naming branch b1
    with pytest.raises(tarn.UnsupportedFeature, match="'branch' = 'b1'"):
        tarn.load_table(table.root).scan().to_arrow()
