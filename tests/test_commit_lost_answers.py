"""A commit whose snapshot file was created must never delete what the snapshot references.

The S3 cases go through tests/fault_proxy.py in front of moto's server with a scripted fate for
each conditional PUT: the PUT reaches the server, then its answer is a 500 or a dropped
connection. Nothing in tarn may send it again behind `put_if_absent`'s back (botocore's own
retries did: the second PUT got 412 and the create read as a lost race, so the committer
deleted the manifest lists of its own landed snapshot). The last case bounds the retries of a
commit whose latest snapshot references a file that is gone.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
from tarn.commit import committer as committer_module
from tarn.errors import CommitConflict, FileMissing, StorageError
from tarn.fs import FileIO, file_io_for
from tarn.store.snapshots import SnapshotStore
from tests.fault_proxy import DROPPED, FAILED, PASSED, FaultProxy

SCHEMA = pa.schema([("k", pa.int64())])


class ScriptedProxy(FaultProxy):
    """Conditional PUTs meet the fates of `script` in order (then pass); everything else passes."""

    def __init__(self, upstream: str):
        super().__init__(upstream)
        self.script: list[str] = []
        self.conditional_puts = 0

    def decide(self, method: str, conditional: bool = False) -> tuple[str, float]:
        with self._lock:
            if not conditional:
                return PASSED, 0.0
            self.conditional_puts += 1
            return (self.script.pop(0) if self.script else PASSED), 0.0


@pytest.fixture
def proxy(s3_server):
    proxy = ScriptedProxy(s3_server.endpoint).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def options(s3_server, proxy):
    return {**s3_server.storage_options, "s3.endpoint": proxy.endpoint}


@pytest.mark.s3
@pytest.mark.parametrize("fate", [FAILED, DROPPED])
def test_a_conditional_put_that_landed_before_its_answer_was_lost_is_sent_once(s3_server, proxy, options, fate):
    io, root = file_io_for(s3_server.new_prefix(), options)
    proxy.script = [fate]
    assert io.write_if_absent(f"{root}/snapshot/snapshot-1", b"mine")
    assert proxy.conditional_puts == 1  # settled by reading back, not by a second PUT answered 412
    assert io.read_bytes(f"{root}/snapshot/snapshot-1") == b"mine"


@pytest.mark.s3
def test_a_landed_commit_whose_answer_and_read_back_failed_keeps_its_manifest_lists(s3_server, proxy, options,
                                                                                    monkeypatch):
    table = tarn.Catalog(s3_server.new_prefix(), options).create_table("db.t", schema=SCHEMA)
    table.write(pa.table({"k": [1]}))
    # the snapshot's conditional PUT lands but answers 500; reading the file back inside
    # SnapshotStore.create then fails once (an outage outlasting pyarrow's retries)
    real_create, real_read = SnapshotStore.create, FileIO.read_bytes
    armed = []

    def create(store, snapshot):
        armed.append(True)
        try:
            return real_create(store, snapshot)
        finally:
            armed.clear()

    def read_bytes(io, path):
        if armed and "/snapshot/snapshot-" in path:
            armed.clear()
            raise StorageError(f"injected outage: {path}")
        return real_read(io, path)

    monkeypatch.setattr(SnapshotStore, "create", create)
    monkeypatch.setattr(FileIO, "read_bytes", read_bytes)
    monkeypatch.setattr(committer_module.time, "sleep", lambda _: None)
    proxy.script = [FAILED]
    table.write(pa.table({"k": [2]}))
    monkeypatch.undo()
    latest = table.snapshot_store.latest()
    assert latest.id == 2
    for name in (latest.base_manifest_list, latest.delta_manifest_list):
        assert table.file_io.exists(table.manifests().path(name)), name
    assert sorted(table.scan().to_arrow().column("k").to_pylist()) == [1, 2]


def test_a_commit_on_a_latest_snapshot_missing_a_file_fails_at_once(catalog, monkeypatch):
    table = catalog.create_table("db.t", schema=SCHEMA, options={"commit.max-retries": "40"})
    table.write(pa.table({"k": [1]}))
    writer = table.new_writer()
    writer.write(pa.table({"k": [2]}))
    messages = writer.prepare_commit()  # written before the damage: the commit finds it
    latest = table.snapshot_store.latest()
    table.file_io.delete(table.manifests().path(latest.base_manifest_list))  # damaged by hand
    attempts = []
    real_try = committer_module.Committer._try_once

    def try_once(self, *args, **kwargs):
        attempts.append(True)
        return real_try(self, *args, **kwargs)

    monkeypatch.setattr(committer_module.Committer, "_try_once", try_once)
    monkeypatch.setattr(committer_module.time, "sleep", lambda _: None)
    with pytest.raises(FileMissing, match=rf"latest snapshot {latest.id} references a file that is missing.*"
                                          f"{latest.base_manifest_list}") as raised:
        table.commit(messages)
    assert not isinstance(raised.value, CommitConflict)
    assert len(attempts) == 2  # one re-read of the latest snapshot, not commit.max-retries of them
    assert table.snapshot_store.latest() == latest
