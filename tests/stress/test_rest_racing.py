"""Writer processes racing through one REST server (`tarn.server` over a directory catalog):
8 processes each commit appends through tarn's REST client at once. Every acknowledged commit
is in the table exactly once, nothing else is, and no snapshot id was told to two commits: the
server's commit endpoint is the one commit point, and every lost race (`success=false`) was
rebuilt and retried by its writer."""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from collections import Counter

import pyarrow as pa
import pytest

from tarn.catalog.filesystem import FileSystemCatalog
from tarn.server.run import ServerThread

pytestmark = pytest.mark.stress

TOKEN = "racing-token"
WRITERS, COMMITS, ROWS = 8, 8, 5
SCHEMA = pa.schema([("w", pa.int32()), ("c", pa.int32()), ("id", pa.int64())])


class CountedCommit:
    """The REST commit point, reporting each answer (landed or a lost race) to the test."""

    def __init__(self, inner, out, writer: int):
        self.inner, self.out, self.writer = inner, out, writer
        self.owner = inner.owner

    def publish(self, publication) -> bool:
        landed = self.inner.publish(publication)
        self.out.put(("answer", self.writer, -1, landed))
        return landed


def writer_main(url: str, writer: int, out, start) -> None:
    """Commit COMMITS appends of ROWS rows through the REST client; report each outcome."""
    from tarn.catalog.rest import RestCatalog
    from tarn.errors import OutcomeUnknown

    try:
        table = RestCatalog({"uri": url, "token.provider": "bear", "token": TOKEN}, f"racer{writer}").load_table(
            "db.t")
        table.core.snapshot_commit = CountedCommit(table.core.snapshot_commit, out, writer)
        start.wait(60)
        for commit in range(COMMITS):
            ids = [writer * 1_000_000 + commit * 1_000 + j for j in range(ROWS)]
            batch = pa.table({"w": [writer] * ROWS, "c": [commit] * ROWS, "id": ids}, schema=SCHEMA)
            try:
                result = table.write(batch)
                out.put(("acked", writer, commit, result.snapshot_ids))
            except OutcomeUnknown as exc:
                out.put(("unknown", writer, commit, str(exc)))
    except Exception:  # noqa: BLE001 - reported to the test
        out.put(("error", writer, -1, traceback.format_exc()))
    out.put(("done", writer, -1, None))


def test_writer_processes_racing_through_one_server(tmp_path):
    started = time.monotonic()
    catalog = FileSystemCatalog(str(tmp_path / "warehouse"))
    catalog.create_table("db.t", SCHEMA, options={"commit.max-retries": "100"})
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["tarn.catalog.rest", "pyarrow"])
    with ServerThread(catalog, [TOKEN], max_concurrency=64) as server:
        out, start = ctx.Queue(), ctx.Event()
        procs = [ctx.Process(target=writer_main, args=(server.url, w, out, start), daemon=True)
                 for w in range(WRITERS)]
        [p.start() for p in procs]
        start.set()
        reports, done = [], 0
        while done < WRITERS:
            kind, writer, commit, detail = out.get(timeout=120)
            done += kind == "done"
            reports.append((kind, writer, commit, detail))
        [p.join(30) for p in procs]

    errors = [r[3] for r in reports if r[0] in ("error", "unknown")]
    assert errors == [], errors[0]
    acked = {(w, c): ids for kind, w, c, ids in reports if kind == "acked"}
    answers = Counter(detail for kind, _, _, detail in reports if kind == "answer")
    assert answers[True] == WRITERS * COMMITS  # one landed answer per commit; the rest were lost races
    print(f"{answers[False]} lost races rebuilt and retried")
    assert len(acked) == WRITERS * COMMITS
    told = Counter(i for ids in acked.values() for i in ids)
    assert [i for i, n in told.items() if n > 1] == []  # no snapshot id told to two commits

    table = catalog.load_table("db.t")
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, WRITERS * COMMITS + 1)) == sorted(told)
    assert len({s.uuid for s in snapshots}) == len(snapshots)
    data = table.scan().to_arrow()
    found = Counter(zip(data.column("w").to_pylist(), data.column("c").to_pylist()))
    assert found == Counter({key: ROWS for key in acked})  # every acknowledged commit once, nothing else
    assert data.num_rows == len(set(data.column("id").to_pylist()))
    # each acknowledged commit is the snapshot it was told
    by_id = {s.id: s for s in snapshots}
    for (w, c), ids in acked.items():
        assert by_id[ids[-1]].delta_record_count == ROWS
    assert time.monotonic() - started < 60
