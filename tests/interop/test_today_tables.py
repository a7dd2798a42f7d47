"""Tables of today's Paimon features, made by the real peers: tarn reads them as the peers do or
refuses with UnsupportedFeature, and each of its writes (write, delete, update, overwrite,
compact, and the maintenance of expire_snapshots and remove_orphan_files) either works (pypaimon
2.1 and pypaimon-rust then read the oracle's rows; a branch's rows stay) or is refused with the
table's directory byte-for-byte unchanged. ``pytest -rP`` shows which op each test saw refused.

The tables (tests/interop/peer.py ``make``; pypaimon 2.1 builds them in one warehouse):

- ``row_tracking``: ``row-tracking.enabled`` + ``data-evolution.enabled``, two appends, then
  ``update_by_arrow_with_row_id`` of ``score``: files holding only that column;
- ``variant``: a VARIANT column built from Python objects;
- ``postpone``: primary key, ``bucket = -2``, written, never compacted (batch reads show nothing);
- ``branch``: tag ``t1``, branch ``b1`` made from it, a write to each of branch and main;
- ``mod_bucket``: primary key INT, ``bucket = 4``, ``bucket-function.type = mod``, as pypaimon
  2.1 writes it: it ignores the function and routes by the default hash (see
  ``test_pypaimon_21_writes_mod_tables_with_the_default_hash``), so its files are not where a
  mod reader looks; only read here;
- ``rust_mod``: the same table created and written by pypaimon-rust 0.4.0, which routes by
  ``mod``; the one the write tests and the bucket-pruning tests use;
- ``blob``: a BLOB column (row tracking + data evolution, as BLOB requires): a ``.blob`` file.

Peer tables are made once per module; every test that changes a table works on a copy.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import tarn
from tests.helpers import canonical_rows
from tests.interop.pypaimon_env import run_peer
from tests.interop.rust_env import run_rust_peer

pytestmark = pytest.mark.interop

PYPAIMON_KINDS = ["row_tracking", "variant", "postpone", "branch", "mod_bucket", "blob"]
ALL_KINDS = PYPAIMON_KINDS + ["rust_mod"]
# Tables tarn's writes run on (mod_bucket's files break its own bucket function; rust_mod stands in)
WRITE_KINDS = ["row_tracking", "variant", "postpone", "branch", "rust_mod", "blob"]
OPS = ["write", "delete", "update", "overwrite", "compact", "expire", "remove_orphans"]

RUST_MOD_IDS = [i for i in range(20) if i != 5]  # 5 is the key tarn adds
RUST_MOD_DDL = ("CREATE TABLE paimon.db.rust_mod (id INT NOT NULL, v STRING, PRIMARY KEY (id)) "
                "WITH ('bucket' = '4', 'bucket-function.type' = 'mod')")
ROW_TRACKING_COLUMNS = ["id", "name", "score", "_ROW_ID"]


# ------------------------------------------------------------------------------- helpers

def read_ipc(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def write_ipc(path, rows: pa.Table) -> str:
    with ipc.new_file(str(path), rows.schema) as sink:
        sink.write_table(rows)
    return str(path)


def canon(rows) -> list:
    return canonical_rows(rows.to_pylist() if isinstance(rows, pa.Table) else rows)


def dir_state(root: Path) -> dict:
    """Every file (path -> bytes) and directory (path -> None) under ``root``."""
    state = {}
    for path in sorted(Path(root).rglob("*")):
        key = str(path.relative_to(root))
        state[key] = path.read_bytes() if path.is_file() else None
    return state


def assert_unchanged(before: dict, after: dict, refusal: Exception) -> None:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    assert not (added or removed or changed), (
        f"tarn refused ({refusal}) but changed the table directory: added {added}, "
        f"removed {removed}, changed {changed}")


def tarn_read(root, **scan) -> pa.Table | tarn.UnsupportedFeature:
    """tarn's rows of the table at ``root``, or the UnsupportedFeature it raised."""
    try:
        return tarn.load_table(str(root)).scan(**scan).to_arrow()
    except tarn.UnsupportedFeature as refusal:
        return refusal


def assert_rows_or_refused(tarn_rows, expected, what: str) -> None:
    """The rule of reads: tarn's rows equal ``expected``, or tarn raised UnsupportedFeature."""
    if isinstance(tarn_rows, tarn.UnsupportedFeature):
        return
    assert canon(tarn_rows) == canon(expected), f"{what}: tarn's rows differ from the peer's"


@dataclass
class Made:
    kind: str
    warehouse: Path
    table: str                   # db.<name>
    root: Path                   # the table directory
    rows: pa.Table               # what pypaimon 2.1 reads
    answer: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # more reads (row ids, the branch's rows)

    @property
    def name(self) -> str:
        return self.table.split(".", 1)[1]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Made]:
    base = tmp_path_factory.mktemp("today")
    warehouse, out = base / "wh", base / "out"
    out.mkdir()
    calls = []
    for kind in PYPAIMON_KINDS:
        spec = {"kind": kind, "warehouse": str(warehouse), "out_ipc": str(out / f"{kind}.arrow")}
        if kind == "row_tracking":
            spec["row_ids_ipc"] = str(out / "row_ids.arrow")
        if kind == "branch":
            spec["branch_ipc"] = str(out / "branch_b1.arrow")
        calls.append(["make", spec])
    answers = run_peer("batch", {"calls": calls})["results"]
    tables = {}
    for kind, answer in zip(PYPAIMON_KINDS, answers):
        tables[kind] = Made(kind, warehouse, answer["table"], Path(answer["table_path"]),
                            read_ipc(out / f"{kind}.arrow"), answer)
    tables["row_tracking"].extra["row_ids"] = read_ipc(out / "row_ids.arrow")
    tables["branch"].extra["branch"] = read_ipc(out / "branch_b1.arrow")

    rust_rows = pa.table({"id": pa.array(RUST_MOD_IDS, pa.int32()), "v": [f"v{i}" for i in RUST_MOD_IDS]})
    run_rust_peer("write", {"warehouse": str(warehouse), "table": "db.rust_mod", "create": RUST_MOD_DDL,
                            "rows_ipc": write_ipc(out / "rust_mod_in.arrow", rust_rows)})
    run_peer("read", {"warehouse": str(warehouse), "table": "db.rust_mod",
                      "out_ipc": str(out / "rust_mod.arrow")})
    tables["rust_mod"] = Made("rust_mod", warehouse, "db.rust_mod", warehouse / "db.db" / "rust_mod",
                              read_ipc(out / "rust_mod.arrow"))
    return tables


def rust_read_call(warehouse, table: str, out: Path, **spec) -> list:
    return ["read", {"warehouse": str(warehouse), "table": table, "out_ipc": str(out), **spec}]


def run_reads(run, calls: dict[str, list]) -> dict[str, pa.Table]:
    """Run named read calls in one peer process; each answer's rows, or an assertion naming the
    peer's error."""
    answers = run("batch", {"calls": list(calls.values()), "errors": "return"})["results"]
    rows = {}
    for (name, call), answer in zip(calls.items(), answers):
        assert "error" not in answer, f"peer read {name} failed: {answer['error']}"
        rows[name] = read_ipc(call[1]["out_ipc"])
    return rows


@pytest.fixture(scope="module")
def rust_reads(made, tmp_path_factory) -> dict[str, pa.Table]:
    """What pypaimon-rust reads of every table (all rows; the branch; row ids; keys of mod tables)."""
    out = tmp_path_factory.mktemp("rust_reads")
    warehouse = made["row_tracking"].warehouse
    calls = {kind: rust_read_call(warehouse, made[kind].table, out / f"{kind}.arrow") for kind in ALL_KINDS}
    calls["branch$b1"] = rust_read_call(warehouse, "db.branch$branch_b1", out / "branch_b1.arrow")
    calls["row_ids"] = rust_read_call(warehouse, "db.row_tracking", out / "row_ids.arrow",
                                      projection=ROW_TRACKING_COLUMNS)
    for kind in ("mod_bucket", "rust_mod"):
        for key in range(20):
            calls[f"{kind}:{key}"] = rust_read_call(
                warehouse, made[kind].table, out / f"{kind}-{key}.arrow",
                predicate={"method": "equal", "field": "id", "literals": [key]})
    return run_reads(run_rust_peer, calls)


# ------------------------------------------------------------------------------- the tables

def test_row_tracking_table_has_column_files(made):
    files = made["row_tracking"].answer["files"]
    assert sorted(f["write_cols"] is None for f in files) == [False, False, True, True]
    assert {tuple(f["write_cols"]) for f in files if f["write_cols"]} == {("score",)}
    row_ids = made["row_tracking"].extra["row_ids"]
    assert canon(row_ids.select(ROW_TRACKING_COLUMNS)) == canon([
        {"id": 1, "name": "a", "score": 1.0, "_ROW_ID": 0}, {"id": 2, "name": "b", "score": 20.0, "_ROW_ID": 1},
        {"id": 3, "name": "c", "score": 3.0, "_ROW_ID": 2}, {"id": 4, "name": "d", "score": 40.0, "_ROW_ID": 3},
        {"id": 5, "name": "e", "score": 5.0, "_ROW_ID": 4}])


def test_blob_table_has_a_blob_file(made):
    files = made["blob"].answer["files"]
    assert sorted(f["file_name"].rsplit(".", 1)[1] for f in files) == ["blob", "parquet"]
    assert made["blob"].rows.column("b").to_pylist()[:3] == [b"hello", bytes(range(256)) * 8, None]


def test_variant_table_holds_the_python_values(made):
    assert made["variant"].answer["values"] == [
        [0, {"a": 1, "b": [1, 2, "x"]}], [1, None], [2, 3.5], [3, "str"], [4, {"nested": {"k": True}}],
        [5, [1, None]]]


def test_postpone_rows_are_invisible_to_both_peers(made, rust_reads):
    postpone = made["postpone"]
    assert postpone.rows.num_rows == 0  # pypaimon 2.1 reads nothing until a compaction
    assert rust_reads["postpone"].num_rows == 0
    assert postpone.answer["snapshot_id"] == 2
    files = [p.name for p in (postpone.root / "bucket-postpone").iterdir()]
    assert len(files) == 2 and all(name.endswith(".avro") for name in files)


def test_branch_table_rows(made, rust_reads):
    branch = made["branch"]
    main_rows = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "main"}]
    branch_rows = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 10, "v": "branch"}]
    assert canon(branch.rows) == canon(main_rows) == canon(rust_reads["branch"])
    assert canon(branch.extra["branch"]) == canon(branch_rows) == canon(rust_reads["branch$b1"])


def test_pypaimon_21_writes_mod_tables_with_the_default_hash(made, rust_reads):
    """pypaimon 2.1 ignores ``bucket-function.type = mod`` when it writes (its reads then skip
    bucket pruning); pypaimon-rust prunes by ``mod``, so a key filter finds a key of pypaimon's
    table only where the hash happened to agree with ``key % 4``."""
    bucket_of_id = {int(k): b for k, b in made["mod_bucket"].answer["bucket_of_id"].items()}
    assert bucket_of_id != {key: key % 4 for key in bucket_of_id}
    for key, bucket in bucket_of_id.items():
        found = rust_reads[f"mod_bucket:{key}"].column("id").to_pylist()
        assert found == ([key] if bucket == key % 4 else []), key
    # pypaimon-rust's own table is routed by mod: each key filter finds exactly its key
    for key in range(20):
        found = rust_reads[f"rust_mod:{key}"].column("id").to_pylist()
        assert found == ([key] if key in RUST_MOD_IDS else []), key


# ------------------------------------------------------------------------------- tarn's reads

@pytest.mark.parametrize("kind", ALL_KINDS)
def test_tarn_reads_like_pypaimon(made, kind):
    assert_rows_or_refused(tarn_read(made[kind].root), made[kind].rows, f"{kind} (pypaimon 2.1)")


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_tarn_reads_like_pypaimon_rust(made, rust_reads, kind):
    assert_rows_or_refused(tarn_read(made[kind].root), rust_reads[kind], f"{kind} (pypaimon-rust)")


def test_tarn_reads_row_ids_like_the_peers(made, rust_reads):
    """``_ROW_ID`` of a row-tracking table: what pypaimon and pypaimon-rust select, or refused."""
    expected = made["row_tracking"].extra["row_ids"].select(ROW_TRACKING_COLUMNS)
    assert canon(rust_reads["row_ids"]) == canon(expected)
    assert_rows_or_refused(tarn_read(made["row_tracking"].root, columns=ROW_TRACKING_COLUMNS), expected,
                           "row_tracking _ROW_ID")


@pytest.mark.parametrize("kind", ["variant", "blob"])
def test_tarn_reads_the_other_columns_of_tables_with_new_types(made, kind):
    assert_rows_or_refused(tarn_read(made[kind].root, columns=["id"]), made[kind].rows.select(["id"]),
                           f"{kind} without its new-type column")


@pytest.mark.parametrize("key", [1, 5, 6, 13])
def test_tarn_key_filter_on_mod_table_like_pypaimon_rust(made, rust_reads, key):
    assert_rows_or_refused(tarn_read(made["rust_mod"].root, filter=f"id = {key}"),
                           rust_reads[f"rust_mod:{key}"], f"rust_mod id = {key}")


# ------------------------------------------------------------------------------- tarn's writes

@dataclass(frozen=True)
class WriteCase:
    new_rows: object            # Made -> pa.Table: the rows tarn writes (and overwrites with)
    delete_id: int              # tarn deletes WHERE id = delete_id
    update_set: dict            # tarn updates SET update_set WHERE id = update_id
    update_id: int
    primary_key: bool = False


WRITE_CASES = {
    "row_tracking": WriteCase(lambda m: pa.table({"id": pa.array([6, 7], pa.int32()), "name": ["f", "g"],
                                                  "score": [6.0, 7.0]}), delete_id=3,
                              update_set={"score": 0.5}, update_id=1),
    "variant": WriteCase(lambda m: pa.table({"id": pa.array([100], pa.int32()),
                                             "v": m.rows.sort_by("id").column("v").slice(0, 1)}), delete_id=2,
                         update_set={"id": 99}, update_id=3),
    "postpone": WriteCase(lambda m: pa.table({"id": pa.array([5, 2], pa.int64()), "v": ["e", "BB"]}),
                          delete_id=2, update_set={"v": "upd"}, update_id=1, primary_key=True),
    "branch": WriteCase(lambda m: pa.table({"id": pa.array([4], pa.int64()), "v": ["tarn"]}), delete_id=2,
                        update_set={"v": "upd"}, update_id=1),
    "rust_mod": WriteCase(lambda m: pa.table({"id": pa.array([5, 6], pa.int32()), "v": ["tarn5", "tarn6"]}),
                          delete_id=6, update_set={"v": "upd"}, update_id=1, primary_key=True),
    "blob": WriteCase(lambda m: pa.table({"id": pa.array([10], pa.int32()),
                                          "b": pa.array([b"tarn-blob"], pa.large_binary())}), delete_id=1,
                      update_set={"id": 99}, update_id=0),
}


def rows_before(made_table: Made) -> list[dict]:
    """The rows a reader sees before tarn acts (with _ROW_ID on the row-tracking table)."""
    if made_table.kind == "row_tracking":
        return made_table.extra["row_ids"].select(ROW_TRACKING_COLUMNS).to_pylist()
    return made_table.rows.to_pylist()


def oracle(made_table: Made, op: str) -> list[dict]:
    """The rows a reader sees after ``op`` done right (Paimon's semantics)."""
    case = WRITE_CASES[made_table.kind]
    before = rows_before(made_table)
    if made_table.kind == "postpone":
        # rows of a postpone-bucket table show once a compaction moves them into real buckets
        written = {key: {"id": key, "v": value} for key, value in made_table.answer["written"]}
        return list(written.values()) if op == "compact" else []
    if op in ("write", "overwrite"):
        new = case.new_rows(made_table).to_pylist()
        if made_table.kind == "row_tracking":  # new rows take the next row ids
            next_id = max(row["_ROW_ID"] for row in before) + 1
            new = [{**row, "_ROW_ID": next_id + i} for i, row in enumerate(new)]
        if op == "overwrite":
            return new
        if case.primary_key:
            merged = {row["id"]: row for row in before}
            merged.update({row["id"]: row for row in new})
            return list(merged.values())
        return before + new
    if op == "delete":
        return [row for row in before if row["id"] != case.delete_id]
    if op == "update":  # row ids stay with their rows
        return [{**row, **case.update_set} if row["id"] == case.update_id else row for row in before]
    return before  # compact, expire, remove_orphans change no row


def run_op(table, op: str, made_table: Made) -> None:
    case = WRITE_CASES[made_table.kind]
    if op == "write":
        table.write(case.new_rows(made_table))
    elif op == "delete":
        table.delete(filter=f"id = {case.delete_id}")
    elif op == "update":
        table.update(set=case.update_set, filter=f"id = {case.update_id}")
    elif op == "overwrite":
        table.overwrite(case.new_rows(made_table))
    elif op == "compact":
        table.compact(full=True)
    elif op == "expire":
        table.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    elif op == "remove_orphans":
        table.remove_orphan_files(older_than=dt.datetime.now())  # every file the peer wrote is older
    else:
        raise ValueError(op)


def copy_table(made_table: Made, tmp_path: Path) -> tuple[Path, Path]:
    warehouse = tmp_path / "wh"
    root = warehouse / "db.db" / made_table.name
    shutil.copytree(made_table.root, root)  # copy2: the files keep their times
    return warehouse, root


def peer_reads_after(made_table: Made, warehouse: Path, out: Path) -> dict[str, pa.Table]:
    table = made_table.table
    projection = {"projection": ROW_TRACKING_COLUMNS} if made_table.kind == "row_tracking" else {}
    pypaimon_calls = {"pypaimon": ["read", {"warehouse": str(warehouse), "table": table,
                                            "out_ipc": str(out / "pypaimon.arrow"), **projection}]}
    rust_calls = {"rust": rust_read_call(warehouse, table, out / "rust.arrow", **projection)}
    if made_table.kind == "branch":
        pypaimon_calls["pypaimon branch"] = ["read", {"warehouse": str(warehouse), "table": table + "$branch_b1",
                                                      "out_ipc": str(out / "pypaimon_b1.arrow")}]
        rust_calls["rust branch"] = rust_read_call(warehouse, table + "$branch_b1", out / "rust_b1.arrow")
    return {**run_reads(run_peer, pypaimon_calls), **run_reads(run_rust_peer, rust_calls)}


# ops Paimon itself refuses on a table (tarn raises the error a user gets for bad input)
PAIMON_RULES = {("row_tracking", "delete"): (tarn.InvalidArgument,)}  # data evolution without deletion vectors


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", WRITE_KINDS)
def test_tarn_op_works_or_is_refused_untouched(made, kind, op, tmp_path):
    """Either tarn's op works and pypaimon 2.1, pypaimon-rust (and tarn, unless it refuses to
    read) read the oracle's rows (the branch's rows unchanged), or it raises UnsupportedFeature
    and the table's directory is byte-for-byte what it was."""
    made_table = made[kind]
    warehouse, root = copy_table(made_table, tmp_path)
    before = dir_state(root)
    refused = (tarn.UnsupportedFeature, *PAIMON_RULES.get((kind, op), ()))
    try:
        run_op(tarn.load_table(str(root)), op, made_table)
    except refused as refusal:
        print(f"{kind} {op}: refused: {refusal}")  # shown with -rP
        assert_unchanged(before, dir_state(root), refusal)
        return
    print(f"{kind} {op}: done")
    expected = canon(oracle(made_table, op))
    reads = peer_reads_after(made_table, warehouse, tmp_path)
    assert canon(reads["pypaimon"]) == expected, f"pypaimon 2.1 reads other rows after tarn's {op}"
    assert canon(reads["rust"]) == expected, f"pypaimon-rust reads other rows after tarn's {op}"
    if kind == "branch":
        branch_rows = canon(made_table.extra["branch"])
        assert canon(reads["pypaimon branch"]) == branch_rows, f"branch b1 changed for pypaimon after tarn's {op}"
        assert canon(reads["rust branch"]) == branch_rows, f"branch b1 changed for pypaimon-rust after tarn's {op}"
    # tarn's own read of the result (_ROW_ID aside: test_tarn_reads_row_ids_like_the_peers)
    visible = [{k: v for k, v in row.items() if k != "_ROW_ID"} for row in expected]
    assert_rows_or_refused(tarn_read(root), visible, f"{kind} after tarn's {op}")


def test_pypaimon_rust_finds_the_key_tarn_wrote_to_a_mod_table(made, tmp_path):
    """tarn routes a new key of a ``bucket-function.type = mod`` table to ``key % 4``, where
    pypaimon-rust's pruned scan looks for it."""
    warehouse, root = copy_table(made["rust_mod"], tmp_path)
    try:
        tarn.load_table(str(root)).write(pa.table({"id": pa.array([5], pa.int32()), "v": ["tarn5"]}))
    except tarn.UnsupportedFeature as refusal:
        pytest.fail(f"tarn refused the write: {refusal}")
    calls = {"predicate": rust_read_call(warehouse, "db.rust_mod", tmp_path / "p.arrow",
                                         predicate={"method": "equal", "field": "id", "literals": [5]}),
             "where": rust_read_call(warehouse, "db.rust_mod", tmp_path / "w.arrow", where="id = 5"),
             "all": rust_read_call(warehouse, "db.rust_mod", tmp_path / "a.arrow")}
    reads = run_reads(run_rust_peer, calls)
    row = [{"id": 5, "v": "tarn5"}]
    assert canon(reads["all"]) == canon(made["rust_mod"].rows.to_pylist() + row)
    assert reads["predicate"].to_pylist() == row, "pypaimon-rust's key filter misses tarn's row"
    assert reads["where"].to_pylist() == row, "pypaimon-rust's WHERE id = 5 misses tarn's row"
    files = sorted(p.parent.name for p in root.glob("bucket-*/*.parquet"))
    assert files.count("bucket-1") == 2, f"tarn's file is not in bucket 1 (5 % 4): {files}"
