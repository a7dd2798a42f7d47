"""Branches are live data for every maintenance path: orphan removal, snapshot expiry, tag
deletion and expiry, rollback. A branch is laid out as Java's FileSystemBranchManager does
(`branch/branch-<name>/{snapshot,schema,tag}`, files shared with main); branch-only data is
written through a Table whose stores point at the branch directory, which writes manifests and
data files into the table's shared directories as Java does."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from tarn.errors import FileMissing
from tarn.ops import expire, rollback
from tarn.ops import tags as T
from tarn.ops.orphans import find_orphan_files, remove_orphan_files
from tarn.ops.references import TableFiles
from tarn.store.branches import all_branches, branch_names
from tarn.store.schemas import SchemaStore, branch_root
from tarn.store.snapshots import SnapshotStore
from tarn.store.tags import TagStore
from tarn.table import Table
from tests.maintenance_checks import events, make_events, referenced_paths, rows

FUTURE = int(time.time() * 1000) + 10**9


# ---------------------------------------------------------------------------------------------
# building branches the way Java does


def _copy_schemas(table: Table, name: str, up_to: int) -> None:
    target = os.path.join(branch_root(table.root, name), "schema")
    os.makedirs(target, exist_ok=True)
    for schema_id in table.schema_store.list_ids():
        if schema_id <= up_to:
            shutil.copyfile(table.schema_store.path(schema_id), os.path.join(target, f"schema-{schema_id}"))


def _write_snapshot(table: Table, name: str, snapshot) -> None:
    directory = os.path.join(branch_root(table.root, name), "snapshot")
    os.makedirs(directory, exist_ok=True)
    source = table.snapshot_store.path(snapshot.id)
    target = os.path.join(directory, f"snapshot-{snapshot.id}")
    if os.path.exists(source):
        shutil.copyfile(source, target)
    else:  # expired: written from the tag, as Java does since 2.0
        with open(target, "w") as f:
            f.write(snapshot.to_json())
    for hint in ("LATEST", "EARLIEST"):
        with open(os.path.join(directory, hint), "w") as f:
            f.write(str(snapshot.id))


def branch_from_tag(table: Table, name: str, tag: str) -> None:
    """Java's createBranch(name, tag): the tag file, its snapshot, then the schemas."""
    tag_file = table.tag_store.path(tag)
    snapshot = table.tag_store.get(tag).snapshot
    tag_dir = os.path.join(branch_root(table.root, name), "tag")
    os.makedirs(tag_dir, exist_ok=True)
    shutil.copyfile(tag_file, os.path.join(tag_dir, f"tag-{tag}"))
    _write_snapshot(table, name, snapshot)
    _copy_schemas(table, name, snapshot.schema_id)


def branch_from_snapshot(table: Table, name: str, snapshot_id: int) -> None:
    """A branch whose first snapshot is a copy of main's snapshot `snapshot_id`."""
    snapshot = table.snapshot_store.get(snapshot_id)
    _write_snapshot(table, name, snapshot)
    _copy_schemas(table, name, snapshot.schema_id)


def branch_view(table: Table, name: str) -> Table:
    """A Table reading and writing branch `name`: its snapshot, schema and tag files in the
    branch directory, manifests and data files in the table's shared directories."""
    view = Table(table.file_io, table.root, f"{table.name}$branch_{name}")
    root = branch_root(table.root, name)
    view.schema_store = SchemaStore(table.file_io, table.root, name)
    view.snapshot_store = SnapshotStore(table.file_io, root, view.name)
    view.tag_store = TagStore(table.file_io, root, view.name)
    view._schemas_by_id.clear()
    return view


def branch_paths(table: Table, name: str) -> set[str]:
    """Every file the branch's snapshots and tags reach: data and extra files, manifest lists,
    manifests, index manifests, index files, statistics."""
    view = branch_view(table, name)
    files = TableFiles(view)
    out: set[str] = set()
    store = view.snapshot_store
    for snapshot in [*(store.get(i) for i in store.list_ids()), *view.tag_store.tagged_snapshots()]:
        for entry in files.live_files(snapshot).values():
            out.update(files.data_paths(entry))
        out.update(files.metadata_paths(snapshot, set(files.metadata_names(snapshot, changelog=True))))
    return out


def branch_metadata(table: Table, name: str) -> set[str]:
    root = branch_root(table.root, name)
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}


def branch_rows(table: Table, name: str) -> list:
    view = branch_view(table, name)
    return rows(view, view.latest_snapshot())


def branch_tag_rows(table: Table, name: str, tag: str) -> list:
    view = branch_view(table, name)
    return rows(view, view.tag_store.get(tag).snapshot)


class Branches:
    """What each branch holds before maintenance runs; `check()` after every step."""

    def __init__(self, table: Table, tagged: dict[str, str] | None = None):
        self.table = table
        self.tagged = tagged or {}
        self.names = branch_names(table.file_io, table.root)
        self.paths = {n: branch_paths(table, n) for n in self.names}
        self.metadata = {n: branch_metadata(table, n) for n in self.names}
        self.rows = {n: branch_rows(table, n) for n in self.names}
        self.tag_rows = {n: branch_tag_rows(table, n, t) for n, t in self.tagged.items()}

    def only_branches_use(self) -> set[str]:
        """Branch files main no longer refers to (what maintenance would have freed)."""
        everything = set().union(*self.paths.values())
        return everything - referenced_paths(self.table)

    def check(self) -> None:
        for name in self.names:
            missing = sorted(p for p in self.paths[name] | self.metadata[name] if not os.path.exists(p))
            assert not missing, f"branch {name} lost {missing}"
            assert branch_rows(self.table, name) == self.rows[name]
        for name, tag in self.tagged.items():
            assert branch_tag_rows(self.table, name, tag) == self.tag_rows[name]


def plant(path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"junk")
    return path


# ---------------------------------------------------------------------------------------------
# the branch helper


def test_branches_are_listed_from_the_branch_directory(catalog):
    t = make_events(catalog)
    assert branch_names(t.file_io, t.root) == []
    t.write(events("a", [1]))
    t.create_tag("t1")
    branch_from_tag(t, "dev", "t1")
    branch_from_snapshot(t, "feat", 1)
    plant(os.path.join(t.root, "branch", "not-a-branch"))  # a file, and a directory without the prefix
    os.makedirs(os.path.join(t.root, "branch", "other"))
    assert branch_names(t.file_io, t.root) == ["dev", "feat"]
    assert [b.name for b in all_branches(t.file_io, t.root)] == ["main", "dev", "feat"]
    dev = all_branches(t.file_io, t.root)[1]
    assert dev.root == branch_root(t.root, "dev")
    assert dev.snapshots.list_ids() == [1] and dev.tags.names() == ["t1"] and dev.schemas.list_ids() == [0]


# ---------------------------------------------------------------------------------------------
# every path, one after the other


def test_every_maintenance_path_keeps_what_branches_use(catalog):
    t = make_events(catalog, **{"snapshot.num-retained.min": 100})
    t.write(events("a", [1, 2]))                # 1
    t.write(events("b", [3]))                   # 2
    t.create_tag("t1", 2)
    t.write(events("c", [4]))                   # 3
    branch_from_tag(t, "dev", "t1")             # dev: main's snapshot 2 and tag t1
    branch_from_snapshot(t, "old", 1)           # old: main's snapshot 1, no tag
    branch_from_snapshot(t, "feat", 3)          # feat: main's snapshot 3 ...
    feat = branch_view(t, "feat")
    feat.write(events("f", [40, 41]))           # ... plus feat's own snapshot 4 (data only feat has)
    feat.create_tag("ft", 4)
    t.overwrite(events("a", [9]), partition={"p": "a"})  # 4: main drops a's files (dev and feat keep them)
    t.write(events("d", [5]))                   # 5
    branches = Branches(t, {"feat": "ft", "dev": "t1"})
    assert sorted(r["k"] for r in branches.rows["feat"]) == [1, 2, 3, 4, 40, 41]
    assert sorted(r["k"] for r in branches.rows["dev"]) == [1, 2, 3]

    # rollback: main's snapshots 3..5 go; snapshot 3's files are feat's
    rollback.rollback_to(t, 2)
    assert branches.only_branches_use()
    branches.check()

    # expiry down to one snapshot: main's 1 goes, its manifest lists are old's
    t.write(events("e", [6]))                   # 3 (a new one)
    t.overwrite(events("a", [10]), partition={"p": "a"})  # 4
    t.write(events("e", [7]))                   # 5
    assert expire.expire_snapshots(t, retain_min=1, retain_max=1, older_than_ms=FUTURE) == 4
    assert t.snapshot_store.list_ids() == [5]
    assert branches.only_branches_use()
    branches.check()

    # tag deletion: t1 held main's snapshot 2 (expired), dev holds a copy
    T.delete_tag(t, "t1")
    assert not t.tag_store.names()
    branches.check()

    # tag expiry and orphan removal: nothing a branch reaches is an orphan
    t.create_tag("short", time_retained="1 ms")
    time.sleep(0.01)
    assert T.expire_tags(t) == ["short"]
    junk = [plant(os.path.join(t.root, "p=a", "bucket-0", "data-junk-0.parquet")),
            plant(os.path.join(t.root, "manifest", "manifest-junk-0")),
            plant(os.path.join(branch_root(t.root, "dev"), "snapshot", ".snapshot-9.abc.tmp")),
            plant(os.path.join(branch_root(t.root, "feat"), "tag", ".tag-x.abc.tmp"))]
    main_rows = rows(t, t.latest_snapshot())
    removed = remove_orphan_files(t, older_than=FUTURE)
    assert set(junk) <= set(removed)
    assert not any(os.path.exists(p) for p in junk)
    assert not set(removed) & set().union(*branches.paths.values())
    branches.check()
    assert rows(t, t.latest_snapshot()) == main_rows
    assert remove_orphan_files(t, older_than=FUTURE) == []


def test_orphan_removal_keeps_branch_files_and_metadata(catalog):
    t = make_events(catalog)
    t.write(events("a", [1, 2]))
    t.create_tag("t1")
    branch_from_tag(t, "dev", "t1")
    branch_view(t, "dev").write(events("z", [7]))  # a partition only the branch has
    T.delete_tag(t, "t1")
    t.overwrite(events("a", [3]), partition={"p": "a"})
    expire.expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    branches = Branches(t)
    only_dev = branches.only_branches_use()
    assert any("/p=z/" in p for p in only_dev) and any("/p=a/" in p for p in only_dev)
    dead = plant(os.path.join(t.root, "p=z", "bucket-0", "data-dead-0.parquet"))

    listed = find_orphan_files(t, FUTURE)
    assert dead in listed and not set(listed) & (only_dev | branches.metadata["dev"])
    # control: without the branch directory those files would be orphans
    hidden = t.root + "-hidden-branch"
    shutil.move(os.path.join(t.root, "branch"), hidden)
    try:
        assert only_dev <= set(find_orphan_files(t, FUTURE))
    finally:
        shutil.move(hidden, os.path.join(t.root, "branch"))
    assert remove_orphan_files(t, older_than=FUTURE) == listed
    assert not os.path.exists(dead)
    branches.check()


def test_orphan_removal_stops_on_a_branch_without_schema(catalog):
    t = make_events(catalog)
    t.write(events("a", [1]))
    t.create_tag("t1")
    branch_from_tag(t, "dev", "t1")
    shutil.rmtree(os.path.join(branch_root(t.root, "dev"), "schema"))
    dead = plant(os.path.join(t.root, "manifest", "manifest-dead-0"))
    with pytest.raises(FileMissing, match=r"branch 'dev'.*no schema file"):
        remove_orphan_files(t, older_than=FUTURE)
    assert os.path.exists(dead)


def test_expiry_of_main_keeps_a_branch_copied_from_a_snapshot(catalog):
    """No tag at all: the branch's copy of snapshot 1 is the only thing keeping its files."""
    t = make_events(catalog)
    t.write(events("a", [1, 2]))
    branch_from_snapshot(t, "b1", 1)
    t.overwrite(events("a", [3]), partition={"p": "a"})
    t.write(events("b", [4]))
    branches = Branches(t)
    plan = expire.plan_expire(t, retain_min=1, older_than_ms=FUTURE)
    assert plan.snapshot_ids == (1, 2) and plan.branches == ("b1",)
    assert not set(plan.data_paths + plan.metadata_paths + plan.index_paths) & branches.paths["b1"]
    assert plan.metadata_paths  # main's own manifests of snapshot 2 still go
    expire.execute_expire(t, plan)
    assert branches.only_branches_use()
    branches.check()


def test_a_branch_created_after_planning_keeps_the_files(catalog):
    """A branch created between planning and deleting (Java's createBranch racing maintenance):
    the snapshot and tag files go as planned, the data and metadata files stay for orphan
    removal to judge later."""
    t = make_events(catalog)
    t.write(events("a", [1, 2]))
    t.overwrite(events("a", [3]), partition={"p": "a"})
    expire_plan = expire.plan_expire(t, retain_min=1, older_than_ms=FUTURE)
    assert expire_plan.snapshot_ids == (1,) and expire_plan.data_paths and expire_plan.metadata_paths
    branch_from_snapshot(t, "late", 1)
    branches = Branches(t)
    expire.execute_expire(t, expire_plan)
    assert t.snapshot_store.list_ids() == [2]
    branches.check()

    t.write(events("b", [4]))
    t.create_tag("t2", 2)
    t.overwrite(events("a", [5]), partition={"p": "a"})
    expire.expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    assert t.snapshot_store.list_ids() == [4]
    delete_plan = T.plan_delete_tag(t, "t2")
    assert delete_plan.data_paths and delete_plan.branches == ("late",)
    branch_from_tag(t, "later", "t2")
    branches = Branches(t, {"later": "t2"})
    T.execute_delete_tags(t, delete_plan)
    assert not t.tag_store.names()
    branches.check()
    assert not set(find_orphan_files(t, FUTURE)) & set().union(*branches.paths.values())


def test_rollback_keeps_a_branch_of_a_removed_snapshot(catalog):
    t = make_events(catalog)
    t.write(events("a", [1]))
    t.write(events("b", [2]))
    t.create_tag("t2")
    t.write(events("c", [3]))
    branch_from_snapshot(t, "x", 3)
    branch_from_tag(t, "y", "t2")
    branches = Branches(t, {"y": "t2"})
    plan = rollback.plan_rollback(t, 1)
    assert plan.removed_ids == (3, 2) and plan.removed_tags == ("t2",)
    assert not set(plan.data_paths + plan.metadata_paths) & (branches.paths["x"] | branches.paths["y"])
    rollback.execute_rollback(t, plan)
    assert rows(t, t.latest_snapshot()) == rows(t, t.snapshot(1))
    assert branches.only_branches_use()
    branches.check()


def test_maintenance_on_a_branch_keeps_main(catalog):
    """The rule is symmetric: expiring a branch (here through the branch view) keeps main's files."""
    t = make_events(catalog)
    t.write(events("a", [1, 2]))
    branch_from_snapshot(t, "dev", 1)
    dev = branch_view(t, "dev")
    dev.overwrite(events("a", [5]), partition={"p": "a"})
    dev.write(events("b", [6]))
    main_paths = referenced_paths(t)
    main_rows = rows(t, t.latest_snapshot())
    assert expire.expire_snapshots(dev, retain_min=1, older_than_ms=FUTURE) == 2
    assert all(os.path.exists(p) for p in main_paths)
    assert rows(t, t.latest_snapshot()) == main_rows
    assert sorted(r["k"] for r in branch_rows(t, "dev")) == [5, 6]


def test_drop_table_removes_its_branches(catalog):
    """As in Java, dropping a table deletes its directory, branches included."""
    t = make_events(catalog)
    t.write(events("a", [1]))
    branch_from_snapshot(t, "dev", 1)
    catalog.drop_table("db.events")
    assert not os.path.exists(t.root)


@pytest.mark.s3
def test_branches_on_s3(s3_server):
    """On S3 a branch directory is only a key prefix: it is still found and kept."""
    import tarn

    catalog = tarn.Catalog(s3_server.new_prefix(), s3_server.storage_options)
    t = make_events(catalog)
    io = t.file_io
    t.write(events("a", [1, 2]))
    root = branch_root(t.root, "dev")
    snapshot = t.snapshot_store.get(1)
    io.write_bytes(f"{root}/snapshot/snapshot-1", io.read_bytes(t.snapshot_store.path(1)))
    io.write_bytes(f"{root}/schema/schema-0", io.read_bytes(t.schema_store.path(0)))
    assert branch_names(io, t.root) == ["dev"]
    t.overwrite(events("a", [3]), partition={"p": "a"})
    files = TableFiles(t)
    kept = [p for e in files.live_files(snapshot).values() for p in files.data_paths(e)]
    kept += files.metadata_paths(snapshot, set(files.metadata_names(snapshot)))
    assert expire.expire_snapshots(t, retain_min=1, older_than_ms=FUTURE) == 1
    assert remove_orphan_files(t, older_than=FUTURE) == []
    assert all(io.exists(p) for p in kept)
    assert sorted(r["k"] for r in branch_rows(t, "dev")) == [1, 2]
