"""Shared checks for the maintenance tests (tags, expiration, rollback, orphans)."""

from __future__ import annotations

import os

import pyarrow as pa

from tarn.ops.orphans import candidate_files
from tarn.ops.references import TableFiles
from tarn.ops.time_travel import scan_at
from tarn.store.tags import TagStore

EVENTS = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])


def events(p, ks, tag="x") -> pa.Table:
    return pa.table({"p": [p] * len(ks), "k": list(ks), "v": [f"{tag}{k}" for k in ks]}, schema=EVENTS)


def make_events(catalog, name="db.events", **options):
    """A small partitioned append table."""
    return catalog.create_table(name, schema=EVENTS, partition_keys=["p"],
                                options={k: str(v) for k, v in options.items()})


def rows(table, snapshot) -> list:
    """Sorted rows of a snapshot (or tag snapshot)."""
    got = scan_at(table, snapshot).to_arrow().to_pylist()
    return sorted(got, key=lambda r: tuple((v is None, str(v)) for v in r.values()))


def tree(root: str) -> dict:
    """{relative path: (size, mtime_ns)} of every file under root (detects any change)."""
    out = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            st = os.stat(path)
            out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


def retained(table) -> list:
    """Every snapshot and tag snapshot."""
    store = table.snapshot_store
    snaps = [store.get(i) for i in store.list_ids()]
    return snaps + TagStore(table.file_io, table.root).tagged_snapshots()


def referenced_paths(table) -> set[str]:
    """Paths of the data and metadata files some snapshot or tag refers to."""
    files = TableFiles(table)
    out: set[str] = set()
    for snapshot in retained(table):
        for entry in files.live_files(snapshot).values():
            out.update(files.data_paths(entry))
        names = set(files.metadata_names(snapshot))
        out.update(files.metadata_paths(snapshot, names))
    return out


def missing_files(table) -> set[str]:
    return {p for p in referenced_paths(table) if not os.path.exists(p)}


def unreferenced_files(table) -> set[str]:
    """Files in the data and manifest directories that nothing retained refers to (changelog
    manifests of snapshots, and the changelog files they name, count as referenced)."""
    referenced = referenced_paths(table)
    files = TableFiles(table)
    for snapshot in retained(table):
        changelog = snapshot.changelog_manifest_list
        if changelog:
            referenced.add(files.manifests.path(changelog))
            referenced.update(files.manifests.path(m.file_name) for m in files.manifest_list(changelog, True))
            referenced.update(p for e in files.changelog_files(snapshot) for p in files.data_paths(e))
    candidates = {i.path for i in candidate_files(table, len(table.schema().partition_keys))}
    return candidates - referenced


def set_options_on_disk(table, options: dict) -> None:
    """Write a new schema file with changed options, as another engine's ALTER would (bypasses
    tarn's own option validation; schema files themselves never change once written)."""
    import json

    schema_id = table.schema_store.list_ids()[-1]
    with open(os.path.join(table.root, "schema", f"schema-{schema_id}")) as f:
        schema = json.load(f)
    schema["options"].update(options)
    schema["id"] = schema_id + 1
    with open(os.path.join(table.root, "schema", f"schema-{schema_id + 1}"), "w") as f:
        json.dump(schema, f)
