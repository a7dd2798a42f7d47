"""Commit callbacks (tarn/commit/callbacks.py) and the commit point the context carries
(tarn/store/commit_point.py): the seams a catalog that owns commits and Iceberg metadata use."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tarn.commit import callbacks
from tarn.errors import StorageError
from tarn.meta.manifest import ADD

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def recorded(monkeypatch):
    """A callback for primary-key tables that records what it is given."""
    seen = []
    monkeypatch.setattr(callbacks, "_REGISTERED", dict(callbacks._REGISTERED))
    callbacks.register(callbacks.CommitCallback("recorder", lambda shape: shape.key_value,
                                                lambda table, landed: seen.append((table.name, landed)) or []))
    return seen


def test_a_callback_gets_what_landed(catalog, recorded):
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"],
                                 options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table.write(pa.table({"k": [2], "v": ["c"]}, schema=SCHEMA))  # a lookup compaction: vectors or files
    assert [name for name, _ in recorded] == ["db.t", "db.t"]
    first = recorded[0][1]
    assert first[0].snapshot.id == 1 and first[0].snapshot.commit_kind == "APPEND"
    assert [e.kind for e in first[0].delta] == [ADD] and first[0].delta[0].file.row_count == 2
    ids = [landed.snapshot.id for _, made in recorded for landed in made]
    assert ids == [s.id for s in table.snapshots()]  # every snapshot, APPEND and COMPACT, once


def test_callbacks_apply_by_shape_and_failures_are_kept(catalog, recorded, monkeypatch):
    append = catalog.create_table("db.a", SCHEMA)
    append.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    assert recorded == []  # the recorder applies to primary-key tables only
    failure = StorageError("the callback's store failed")
    callbacks.register(callbacks.CommitCallback("failing", lambda shape: True, lambda table, landed: [failure]))
    result = append.write(pa.table({"k": [2], "v": ["b"]}, schema=SCHEMA))
    assert result.snapshot.id == 2 and append.last_maintenance_errors == [failure]  # the commit stands


def test_the_commit_point_is_the_contexts(catalog):
    """A catalog that owns commits replaces `snapshot_commit`: every commit goes through it."""
    table = catalog.create_table("db.t", SCHEMA)
    own, published = table.snapshot_commit, []

    class Recording:
        def publish(self, publication):
            published.append(publication.snapshot.id)
            return own.publish(publication)

    table.snapshot_commit = Recording()
    table.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    table.delete(filter="k = 1")
    assert published == [1, 2] and table.scan().to_arrow().num_rows == 0


def test_a_callback_gets_the_index_files_a_commit_added(catalog, monkeypatch):
    seen = []
    monkeypatch.setattr(callbacks, "_REGISTERED", dict(callbacks._REGISTERED))
    callbacks.register(callbacks.CommitCallback("recorder", lambda shape: shape.deletion_vectors,
                                                lambda table, landed: seen.extend(landed) or []))
    table = catalog.create_table("db.t", SCHEMA, options={"deletion-vectors.enabled": "true"})
    table.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    table.delete(filter="k = 2")
    assert [landed.snapshot.id for landed in seen] == [1, 2]
    assert [e.index_type for e in seen[1].index_added] == ["DELETION_VECTORS"] and not seen[1].delta


def test_requirements_are_objects_with_a_check(catalog):
    """tarn/commit/requirements.py: each attempt is checked against what it builds on; one that
    does not hold raises CommitConflict and nothing lands."""
    from tarn.commit.requirements import LandsOn
    from tarn.errors import CommitConflict

    table = catalog.create_table("db.t", SCHEMA)
    table.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    seen = []

    class OnlyOnEmptyTables:
        for_compaction = False

        def check(self, attempt):
            seen.append((attempt.latest.id, attempt.kind, len(attempt.delta)))
            raise CommitConflict(f"table {attempt.table_name}: not empty")

    writer = table.new_writer()
    writer.write(pa.table({"k": [2], "v": ["b"]}, schema=SCHEMA))
    with pytest.raises(CommitConflict, match="not empty"):
        table.commit(writer.prepare_commit(), requirements=(OnlyOnEmptyTables(),))
    assert seen == [(1, "APPEND", 1)] and [s.id for s in table.snapshots()] == [1]
    writer = table.new_writer()
    writer.write(pa.table({"k": [3], "v": ["c"]}, schema=SCHEMA))
    assert table.commit(writer.prepare_commit(), requirements=(LandsOn(1),)).id == 2
