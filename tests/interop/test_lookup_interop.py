"""Lookup tables between tarn and pypaimon 2.1: an aggregation (sum) table with
changelog-producer=lookup, written and compacted by tarn, read by pypaimon at every snapshot.

tarn keeps Java's lookup layout (every level above 0 holds each key's full merged value) and
reads it as Java's LookupMergeFunction does (level-0 rows + the row at the smallest level above
0). pypaimon 2.1 has no LookupMergeFunction: its merge read folds every level. So:
- where no key has rows on two levels above 0 (level 0 plus one level, or a full compaction),
  pypaimon's sums equal tarn's;
- elsewhere pypaimon double counts: its sums are the sums over every level (asserted, as the
  known difference; Java reads tarn's layout like tarn).
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

import tarn
from tarn.options import Options
from tarn.data.reader import FileReader
from tests.interop.pypaimon_env import run_peer

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.int64())])
OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
           "changelog-producer": "lookup", "num-sorted-run.compaction-trigger": "3"}


def rows_by_level(table, snapshot_id: int) -> list[tuple[int, int, int]]:
    """(level, key, value) of every row of the snapshot's data files."""
    scan = table.scan(snapshot_id=snapshot_id)
    reader = FileReader(table.file_io, scan.schema, table.schema_by_id, Options(scan.schema.options))
    out = []
    for split in scan.plan():
        for meta in split.files:
            data = reader.read(split.bucket_path, meta, list(scan.schema.fields), with_system=False)
            out += [(meta.level, k, v) for k, v in zip(data.column("k").to_pylist(), data.column("v").to_pylist())]
    return out


def pypaimon_reads(table, snapshot_ids: list[int], tmp: Path) -> dict[int, dict]:
    calls = [["read", {"table_path": table.root, "snapshot_id": sid, "out_ipc": str(tmp / f"s{sid}.arrow")}]
             for sid in snapshot_ids]
    answers = run_peer("batch", {"calls": calls})["results"]
    assert all("error" not in a for a in answers), answers
    out = {}
    for sid in snapshot_ids:
        with pa.memory_map(str(tmp / f"s{sid}.arrow")) as source:
            rows = ipc.open_file(source).read_all().to_pylist()
        out[sid] = {r["k"]: r["v"] for r in rows}
    return out


def test_pypaimon_reads_tarn_lookup_aggregation(tmp_path):
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.t", schema=SCHEMA, primary_key=["k"],
                                                            options=OPTIONS)
    rng = random.Random(7)
    for step in range(14):
        keys = rng.sample(range(30), rng.randint(3, 12))
        table.write(pa.table({"k": keys, "v": [rng.randint(1, 9) for _ in keys]}, schema=SCHEMA))
        if step % 5 == 4:
            table.compact()
    table.compact(full=True)
    snapshot_ids = [s.id for s in table.snapshots()]
    theirs = pypaimon_reads(table, snapshot_ids, tmp_path)
    agreeing = differing = 0
    for sid in snapshot_ids:
        ours = {r["k"]: r["v"] for r in table.scan(snapshot_id=sid).to_arrow().to_pylist()}
        layout = rows_by_level(table, sid)
        high_levels: dict = {}
        every_level: dict = {}
        for level, k, v in layout:
            if level > 0:
                high_levels.setdefault(k, set()).add(level)
            every_level[k] = every_level.get(k, 0) + v
        if all(len(levels) == 1 for levels in high_levels.values()):
            assert theirs[sid] == ours, f"snapshot {sid}"
            agreeing += 1
        else:
            assert theirs[sid] == every_level != ours, f"snapshot {sid}"
            differing += 1
    assert agreeing and differing  # both layouts occurred
    assert theirs[snapshot_ids[-1]] == {r["k"]: r["v"] for r in table.scan().to_arrow().to_pylist()}
