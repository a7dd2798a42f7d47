"""Model test: random sequences of writes, overwrites, tags, tag deletes, expirations, rollbacks
and orphan removals. After every step each retained snapshot and each tag reads exactly the rows
it read when it was made, no file they refer to is missing, and after orphan removal no file
outside them is left.

`TARN_HYPOTHESIS_PROFILE=long` runs many more sequences."""

from __future__ import annotations

import os
import tempfile
import time

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tarn
from tarn.ops import tags as T
from tarn.ops.expire import expire_snapshots
from tarn.ops.orphans import remove_orphan_files
from tarn.ops.rollback import rollback_to
from tarn.ops.time_travel import snapshot_by_tag
from tests.maintenance_checks import missing_files, rows, unreferenced_files

LONG = os.environ.get("TARN_HYPOTHESIS_PROFILE", "ci") == "long"
PROFILE = settings(max_examples=300 if LONG else 30, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MAX_OPS = 20 if LONG else 12
FUTURE = int(time.time() * 1000) + 10**9
SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.int64())])

keys = st.lists(st.integers(0, 6), min_size=1, max_size=4)
WRITE = st.tuples(st.just("write"), st.sampled_from("ab"), keys)
OVERWRITE = st.tuples(st.just("overwrite"), st.sampled_from("ab"), st.lists(st.integers(0, 6), max_size=3))
TAG = st.tuples(st.just("tag"), st.integers(0, 30))
EXPIRE = st.tuples(st.just("expire"), st.integers(1, 3), st.integers(1, 8))
# writes, overwrites (which delete files), tags and expirations are what interact: weight them
OPS = st.one_of(
    WRITE, WRITE, OVERWRITE, OVERWRITE, TAG, TAG, EXPIRE, EXPIRE,
    st.tuples(st.just("delete_tag"), st.integers(0, 30)),
    st.tuples(st.just("rollback"), st.integers(0, 30), st.booleans()),
    st.tuples(st.just("orphans")),
)

class Run:
    """The table under test and what every snapshot and tag read when made."""

    def __init__(self, root: str, primary_key: bool):
        catalog = tarn.Catalog(root)
        options = {"bucket": "1"} if primary_key else {}
        self.table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["p"],
                                          primary_key=["p", "k"] if primary_key else None, options=options)
        self.snapshot_rows: dict[int, list] = {}
        self.tag_rows: dict[str, list] = {}
        self.tag_ids: dict[str, int] = {}
        self.counter = 0

    def batch(self, p: str, ks: list[int]) -> pa.Table:
        self.counter += 1
        return pa.table({"p": [p] * len(ks), "k": ks, "v": [self.counter] * len(ks)}, schema=SCHEMA)

    def apply(self, op) -> None:
        t = self.table
        kind = op[0]
        if kind == "write":
            t.write(self.batch(op[1], op[2]))
        elif kind == "overwrite":
            t.overwrite(self.batch(op[1], op[2]), partition={"p": op[1]})
        elif kind == "tag":
            ids = t.snapshot_store.list_ids()
            if ids:
                self.counter += 1
                name = f"t{self.counter}"
                tag = T.create_tag(t, name, ids[op[1] % len(ids)])
                self.tag_rows[name] = self.snapshot_rows[tag.snapshot_id]
                self.tag_ids[name] = tag.snapshot_id
        elif kind == "delete_tag":
            names = sorted(self.tag_rows)
            if names:
                name = names[op[1] % len(names)]
                T.delete_tag(t, name)
                del self.tag_rows[name]
        elif kind == "expire":
            expire_snapshots(t, retain_min=op[1], older_than_ms=FUTURE, max_deletes=op[2])
        elif kind == "rollback":
            self.rollback(op[1], op[2])
        elif kind == "orphans":
            remove_orphan_files(t, older_than=FUTURE)
            assert not unreferenced_files(t)
        self.record()

    def rollback(self, pick: int, to_tag: bool) -> None:
        t = self.table
        if to_tag and self.tag_rows:
            name = sorted(self.tag_rows)[pick % len(self.tag_rows)]
            target = self.tag_ids[name]
            rollback_to(t, name)
        else:
            ids = t.snapshot_store.list_ids()
            if not ids:
                return
            target = ids[pick % len(ids)]
            rollback_to(t, target)
        # rollback drops exactly the tags after the target (check() compares the tag names)
        self.tag_rows = {n: r for n, r in self.tag_rows.items() if self.tag_ids[n] <= target}
        self.snapshot_rows = {i: r for i, r in self.snapshot_rows.items() if i <= target}

    def record(self) -> None:
        for snapshot_id in self.table.snapshot_store.list_ids():
            if snapshot_id not in self.snapshot_rows:
                self.snapshot_rows[snapshot_id] = rows(self.table, self.table.snapshot(snapshot_id))

    def check(self) -> None:
        t = self.table
        for snapshot_id in t.snapshot_store.list_ids():
            assert rows(t, t.snapshot(snapshot_id)) == self.snapshot_rows[snapshot_id], snapshot_id
            # the lead's time travel reads the same
            assert sorted(t.scan(snapshot_id=snapshot_id).to_arrow().to_pylist(),
                          key=lambda r: (r["p"], r["k"], r["v"])) == sorted(
                self.snapshot_rows[snapshot_id], key=lambda r: (r["p"], r["k"], r["v"]))
        assert sorted(x.name for x in T.list_tags(t)) == sorted(self.tag_rows)
        for name, want in self.tag_rows.items():
            assert rows(t, snapshot_by_tag(t, name)) == want, name
        assert not missing_files(t)


@PROFILE
@given(primary_key=st.booleans(), ops=st.lists(OPS, min_size=3, max_size=MAX_OPS))
# the interactions that matter, always run: a tag keeps files an overwrite removed past expiry;
# deleting that tag frees them; rolling back to an expired tag
@example(primary_key=False, ops=[("write", "a", [1]), ("tag", 0), ("overwrite", "a", [2]),
                                 ("write", "b", [3]), ("expire", 1, 8), ("orphans",)])
@example(primary_key=True, ops=[("write", "a", [1, 2]), ("write", "a", [2, 3]), ("tag", 1),
                                ("overwrite", "a", [4]), ("expire", 1, 8), ("delete_tag", 0), ("orphans",)])
@example(primary_key=False, ops=[("write", "a", [1]), ("write", "b", [2]), ("tag", 1), ("overwrite", "a", [5]),
                                 ("tag", 2), ("expire", 1, 8), ("delete_tag", 1), ("rollback", 0, True),
                                 ("write", "a", [6]), ("orphans",)])
def test_snapshots_and_tags_keep_their_rows(primary_key, ops):
    with tempfile.TemporaryDirectory() as root:
        run = Run(root, primary_key)
        for op in ops:
            run.apply(op)
            run.check()
        remove_orphan_files(run.table, older_than=FUTURE)
        assert not unreferenced_files(run.table)
        run.check()
