"""Deletion vectors between tarn, Java Paimon 1.0 (javaref) and pypaimon 2.1: the same rows.

1. tarn writes deletion-vector primary-key tables (deduplicate with key and filter deletes,
   partial-update, aggregation(sum), a partitioned table with bucket=2): a big first commit,
   then small overlapping commits, so the old rows of later keys are marked in vectors. Java's
   `read` and pypaimon's read return tarn's rows; Java's `index-files` decodes tarn's index
   files (same ranges, cardinality = the positions tarn wrote); Java's `files` lists tarn's
   files, none at level 0, and rows in files minus vector cardinalities = rows read.
2. `deletion-vectors.bitmap64=true`: neither peer reads 64-bit vectors (Java 1.0-SNAPSHOT
   predates them; pypaimon 2.1 knows only the 32-bit magic). The test asserts how each fails.
3. Java writes deletion-vector primary-key tables (overlapping writes, -D rows via
   --kind-column); tarn reads Java's rows, writes more on top (replacing Java's vectors), and
   Java reads tarn's result; all against a dict oracle.
4. Append tables with deletion vectors: Java `delete`, tarn `delete(filter=...)`, and both in
   turn on the same table; every reader sees the oracle's rows.
5. Java `compact --full` of a tarn deletion-vector table; tarn reads it and keeps writing.
6. Twin tables: Java and tarn apply the same commits (row kinds -D/-U/+U, sequence.field,
   partial-update with remove-record-on-delete, aggregation) and read each other's tables;
   Java then writes on and compacts tarn's table.
7. Big vectors (every roaring container kind, positions past 65535) in both directions.

Every Java command costs a JVM start, so the commands between two tarn steps run in one JVM
(`JavaRef.run_many`), and all pypaimon reads of a step in one peer process.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import tarn
from tarn.scan.planner import planner_for
from tarn.store.deletion_vectors import DeletionVectorFiles, live_index_entries
from tests.helpers import canonical_rows
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)
from tests.interop.pypaimon_env import run_peer

DV = {"deletion-vectors.enabled": "true"}
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("s", pa.string())])
PART_SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                         ("v", pa.int64()), ("s", pa.string())])
JAVA_SCHEMA = json.dumps([{"name": "k", "type": "BIGINT"}, {"name": "v", "type": "BIGINT"},
                          {"name": "s", "type": "STRING"}])
JAVA_PART_SCHEMA = json.dumps([{"name": "dt", "type": "STRING"}, {"name": "k", "type": "BIGINT"},
                               {"name": "v", "type": "BIGINT"}, {"name": "s", "type": "STRING"}])
BASE = range(1000, 4000)  # a big first commit: later small commits stop above it (size ratio),
                          # so their keys' old rows are marked in vectors, not rewritten


# ---------------------------------------------------------------------------- oracles


def fold_dedup(old, row):
    return row


def fold_partial(old, row):
    return dict(row) if old is None else {**old, **{c: x for c, x in row.items() if x is not None}}


def fold_sum(old, row):
    """aggregation: v sum, s last_non_null_value (the default of an unnamed field)."""
    if old is None:
        return dict(row)
    out = dict(old)
    if row["v"] is not None:
        out["v"] = row["v"] if old["v"] is None else old["v"] + row["v"]
    if row["s"] is not None:
        out["s"] = row["s"]
    return out


class Oracle:
    def __init__(self, keys, fold):
        self.keys, self.fold, self.rows = tuple(keys), fold, {}

    def upsert(self, rows):
        for row in rows:
            key = tuple(row[k] for k in self.keys)
            self.rows[key] = self.fold(self.rows.get(key), row)

    def delete(self, keys):
        for key in keys:
            self.rows.pop(tuple(key), None)

    def expected(self):
        return canonical_rows(list(self.rows.values()))


def canon(rows) -> list:
    return canonical_rows(rows)


def tarn_rows(table) -> list:
    return canon(table.scan().to_arrow())


def read_ipc(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def pypaimon_reads(out_dir: Path, roots: dict[str, str | tuple[str, int]],
                   java_manifests: bool = False) -> dict[str, list | str]:
    """{name: canonical rows, or the error text} of one pypaimon process reading each table
    (a root, or (root, snapshot id) for time travel). `java_manifests`: the table holds
    manifests Java 1.0 wrote, which pypaimon 2.1 reads only with the patch of
    shared/javaref/README.md (peer.py applies it)."""
    outs = {name: out_dir / f"pypaimon-{name}.arrow" for name in roots}
    calls = []
    for name, root in roots.items():
        root, snapshot_id = root if isinstance(root, tuple) else (root, None)
        calls.append(["read", {"table_path": root, "out_ipc": str(outs[name]), "snapshot_id": snapshot_id,
                               "java_manifests": java_manifests}])
    answers = run_peer("batch", {"calls": calls, "errors": "return"})["results"]
    return {name: answer["error"] if "error" in answer else canon(read_ipc(outs[name]))
            for name, answer in zip(roots, answers)}


# ---------------------------------------------------------------------------- Java checks


def tarn_vectors(table, snapshot=None) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(index file, data file) -> (offset, length, number of deleted positions) as tarn reads
    them at `snapshot` (default: the latest)."""
    store = DeletionVectorFiles(table.file_io, table.root)
    out = {}
    for entry in live_index_entries(planner_for(table).manifests, snapshot or table.latest_snapshot()):
        vectors = store.read(entry)
        for r in entry.dv_ranges or ():
            out[(entry.file_name, r.data_file)] = (r.offset, r.length, len(vectors[r.data_file]))
    return out


def java_vectors(index_files: dict) -> dict[tuple[str, str], tuple[int, int, int]]:
    """The same from Java's `index-files`, which must have read every file."""
    out = {}
    for entry in index_files["index_files"]:
        assert "read_error" not in entry, entry
        assert entry["kind"] == "ADD" and entry["index_type"] == "DELETION_VECTORS" and entry["file_exists"], entry
        assert entry["row_count"] == len(entry["deletion_vectors"])
        for d in entry["deletion_vectors"]:
            out[(entry["file_name"], d["data_file"])] = (d["offset"], d["length"], d["cardinality"])
    return out


def check_java_layout(table, read: dict, index_files: dict, files: dict) -> None:
    """Java's `index-files` and `files` of a tarn-written table agree with tarn's metadata, and
    Java's DV read arithmetic holds: rows in the files minus the deleted rows = rows read."""
    vectors = java_vectors(index_files)
    assert vectors == tarn_vectors(table)
    assert vectors, "no deletion vectors: the test data exercises nothing"
    levels = [f["level"] for f in files["files"]]
    assert levels and min(levels) > 0, f"level-0 files left: {levels}"
    planned = {(m.file_name, m.level) for split in table.scan().plan() for m in split.files}
    assert {(f["file_name"], f["level"]) for f in files["files"]} == planned
    deleted = sum(card for _, _, card in vectors.values())
    assert sum(f["row_count"] for f in files["files"]) - deleted == read["row_count"]


def java_consistent(read: dict, index_files: dict, files: dict, primary_key: bool = True) -> None:
    """Java's own view of a table (written by anyone): vectors readable, no level 0 in a
    primary-key table, rows in the files minus deleted rows = rows read."""
    vectors = java_vectors(index_files)
    if primary_key:
        assert all(f["level"] > 0 for f in files["files"]), files
    names = {f["file_name"] for f in files["files"]}
    assert {data_file for _, data_file in vectors} <= names
    deleted = sum(card for _, _, card in vectors.values())
    assert sum(f["row_count"] for f in files["files"]) - deleted == read["row_count"]


# ---------------------------------------------------------------------------- 1 + 2: tarn writes


def pk_rows(keys, value, tag, null_every=0, dt=None):
    """Rows of keys with v=value(k) and s=f"{tag}{k}"; every `null_every`-th row has nulls in v or s."""
    out = []
    for i, k in enumerate(keys):
        row = {"k": k, "v": value(k) if callable(value) else value, "s": f"{tag}{k}"}
        if null_every and i % null_every == 1:
            row["s"] = None
        if null_every and i % null_every == 2:
            row["v"] = None
        out.append(row if dt is None else {"dt": dt, **row})
    return out


def run_script(table, oracle: Oracle, schema: pa.Schema, partitions=(None,), deletes=True, nulls=0) -> None:
    """Base commit, then overlapping small upserts, key deletes and a filter delete."""
    def upsert(rows):
        table.write(pa.Table.from_pylist(rows, schema=schema))
        oracle.upsert(rows)

    def key_of(dt, k):
        return (k,) if dt is None else (dt, k)

    upsert([r for dt in partitions for r in pk_rows(BASE, lambda k: k, "b", dt=dt)])
    upsert([r for dt in partitions for r in pk_rows(range(990, 1020), 1, "u1-", nulls, dt)])
    upsert([r for dt in partitions for r in pk_rows([*range(1010, 1030), *range(2500, 2505)], 2, "u2-", nulls, dt)])
    if deletes:
        gone = [key_of(dt, k) for dt in partitions for k in (1000, 1015, 2500, 3999)]
        names = list(oracle.keys)
        table.delete(pa.Table.from_pylist([dict(zip(names, key)) for key in gone],
                                          schema=pa.schema([schema.field(n) for n in names])))
        oracle.delete(gone)
    upsert([r for dt in partitions for r in pk_rows([*range(1012, 1017), 3999], 3, "u3-", nulls, dt)])
    if deletes:
        doomed = (tarn.col("k") >= 3990) & (tarn.col("k") < 3995)
        table.delete(filter=doomed)
        oracle.delete([key_of(dt, k) for dt in partitions for k in range(3990, 3995)])
    upsert([r for dt in partitions for r in pk_rows(range(2000, 2010), 4, "u4-", nulls, dt)])


@dataclass
class Written:
    table: object
    oracle: Oracle
    java: dict = field(default_factory=dict)  # Java's read / index-files / files, history, pypaimon


TARN_TABLES = {
    # name: (options, merge fold, partitioned, deletes, nulls)
    "dedup": ({"bucket": "1"}, fold_dedup, False, True, 0),
    "partial": ({"bucket": "1", "merge-engine": "partial-update"}, fold_partial, False, False, 3),
    "partial_rod": ({"bucket": "1", "merge-engine": "partial-update",
                     "partial-update.remove-record-on-delete": "true"}, fold_partial, False, True, 3),
    "aggregation": ({"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
                    fold_sum, False, False, 3),
    "partitioned": ({"bucket": "2"}, fold_dedup, True, True, 0),
    "bitmap64": ({"bucket": "1", "deletion-vectors.bitmap64": "true"}, fold_dedup, False, True, 0),
    "changelog": ({"bucket": "1", "changelog-producer": "lookup"}, fold_dedup, False, True, 0),
}
HISTORY_TABLES = ("dedup", "changelog")  # Java also reads these at every snapshot (changes / time travel)
JAVA_READABLE = [name for name in TARN_TABLES if name != "bitmap64"]


@pytest.fixture(scope="module")
def tarn_written(tmp_path_factory, javaref):  # noqa: F811
    """Every TARN_TABLES table written by tarn; Java's read, index-files and files of each (one
    JVM); pypaimon's read of each (one process)."""
    base = tmp_path_factory.mktemp("dv-tarn")
    catalog = tarn.Catalog(str(base / "wh"))
    written = {}
    for name, (options, fold, partitioned, deletes, nulls) in TARN_TABLES.items():
        schema = PART_SCHEMA if partitioned else SCHEMA
        keys = ("dt", "k") if partitioned else ("k",)
        table = catalog.create_table(f"db.{name}", schema=schema, primary_key=list(keys),
                                     partition_keys=["dt"] if partitioned else None, options={**DV, **options})
        oracle = Oracle(keys, fold)
        run_script(table, oracle, schema, ("a", "b") if partitioned else (None,), deletes, nulls)
        written[name] = Written(table, oracle)
    calls = [[cmd, w.table.root] for w in written.values() for cmd in ("read", "index-files", "files")]
    for name in HISTORY_TABLES:
        root = written[name].table.root
        calls += [[cmd, root, "--snapshot", snap.id] for snap in written[name].table.snapshots()
                  for cmd in ("read", "changes")]
    answers = iter(javaref.run_many(calls, errors="return"))
    for w in written.values():
        w.java = {cmd: next(answers) for cmd in ("read", "index-files", "files")}
    for name in HISTORY_TABLES:
        written[name].java["history"] = {snap.id: (next(answers), next(answers))
                                         for snap in written[name].table.snapshots()}
    peer = pypaimon_reads(base, {name: w.table.root for name, w in written.items()})
    for name, w in written.items():
        w.java["pypaimon"] = peer[name]
    return written


@pytest.mark.parametrize("name", list(TARN_TABLES))
def test_tarn_reads_its_dv_table(tarn_written, name):
    w = tarn_written[name]
    assert tarn_rows(w.table) == w.oracle.expected()
    assert all(m.level > 0 for split in w.table.scan().plan() for m in split.files)


@pytest.mark.parametrize("name", JAVA_READABLE)
def test_java_reads_tarn_dv_table(tarn_written, name):
    w = tarn_written[name]
    read = w.java["read"]
    assert "error" not in read, read
    assert canon(read["rows"]) == w.oracle.expected()
    check_java_layout(w.table, read, w.java["index-files"], w.java["files"])


@pytest.mark.parametrize("name", JAVA_READABLE)
def test_pypaimon_reads_tarn_dv_table(tarn_written, name):
    got = tarn_written[name].java["pypaimon"]
    if name == "partial_rod":  # pypaimon 2.1 refuses the option, whatever the table holds
        assert isinstance(got, str) and "NotImplementedError" in got and "remove-record-on-delete" in got
        return
    assert got == tarn_written[name].oracle.expected()


@pytest.mark.parametrize("name", HISTORY_TABLES)
def test_java_time_travel_and_changes_on_tarn_dv_table(tarn_written, name):
    """At every snapshot Java's read is tarn's: at the APPEND snapshot of a commit (level-0
    files, the vectors not yet written) both DV reads skip level 0 and see the previous
    snapshot's rows. Java's streaming changes of each snapshot (the lookup changelog, or the
    APPEND delta without a producer) are tarn's `changes`."""
    w = tarn_written[name]
    table = w.table
    snapshots = table.snapshots()
    assert [s.commit_kind for s in snapshots] == ["APPEND", "COMPACT"] * (len(snapshots) // 2)
    state = {s.id: canon(table.scan(snapshot_id=s.id).to_arrow()) for s in snapshots}
    for snap in snapshots:
        read, changes = w.java["history"][snap.id]
        java_rows = canon(read["rows"])
        assert java_rows == state[snap.id]
        if snap.commit_kind == "APPEND":
            assert state[snap.id] == state.get(snap.id - 1, [])
        # a stream reads the lookup changelog of COMPACT snapshots, else the delta of APPENDs
        producer = TARN_TABLES[name][0].get("changelog-producer", "none")
        assert changes["stream_reads"] == (snap.commit_kind == ("COMPACT" if producer == "lookup" else "APPEND"))
        assert canon(changes["rows"]) == canon(table.changes(snap.id))


def test_bitmap64_vectors_are_unreadable_by_both_peers(tarn_written):
    """Neither peer has 64-bit vectors. Java 1.0-SNAPSHOT reads the record's int32 length (the
    bitmap data length) and compares it with the range length, which for 64-bit vectors counts
    the length field and the CRC too (8 more bytes); pypaimon 2.1 reads the 64-bit magic
    (little-endian d1d33964) as a wrong 32-bit magic. So tarn's 64-bit encoding is checked by
    tarn alone (FORMAT.md §8 marks it unverified in Java)."""
    w = tarn_written["bitmap64"]
    ranges = tarn_vectors(w.table)
    assert ranges
    java_read = w.java["read"]
    assert set(java_read) == {"error"} and "Size not match" in java_read["error"], java_read
    for entry in w.java["index-files"]["index_files"]:
        assert "Unable to read deletion vectors" in entry["read_error"]
    # Java's files are tarn's, none at level 0: only the vectors are foreign to it
    assert all(f["level"] > 0 for f in w.java["files"]["files"])
    got = w.java["pypaimon"]
    assert isinstance(got, str) and "Invalid magic number: %d" % 0xD1D33964 in got, got


# ---------------------------------------------------------------------------- 3: Java writes


def java_kind_rows(rows, kind="+I"):
    return [{**row, "op": kind} for row in rows]


def test_tarn_reads_and_continues_java_dv_tables(tmp_path, javaref):  # noqa: F811
    """Java writes a partitioned deduplicate table (bucket=2, -D rows) and an aggregation(sum)
    table; tarn reads them, writes upserts and deletes on top; Java reads tarn's result."""
    wh = tmp_path / "wh"
    dedup_path, agg_path = str(wh / "db.db" / "dedup"), str(wh / "db.db" / "agg")
    dedup = Oracle(("dt", "k"), fold_dedup)
    agg = Oracle(("k",), fold_sum)
    calls = [
        ["create", dedup_path, "--schema", JAVA_PART_SCHEMA, "--primary-keys", "dt,k", "--partition-keys", "dt",
         "--options", json.dumps({**DV, "bucket": "2"})],
        ["create", agg_path, "--schema", JAVA_SCHEMA, "--primary-keys", "k",
         "--options", json.dumps({**DV, "bucket": "1", "merge-engine": "aggregation",
                                  "fields.v.aggregate-function": "sum"})],
    ]

    def java_write(path, oracle, rows, kind="+I"):
        calls.append(["write", path, "--rows", javaref.rows_arg(java_kind_rows(rows, kind), tmp_path),
                      "--kind-column", "op"])
        if kind == "-D":
            oracle.delete([tuple(r[k] for k in oracle.keys) for r in rows])
        else:
            oracle.upsert(rows)

    for dt in ("a", "b"):
        java_write(dedup_path, dedup, pk_rows(range(1000, 2500), lambda k: k, "j", dt=dt))
    java_write(dedup_path, dedup, [r for dt in "ab" for r in pk_rows(range(995, 1010), 1, "j1-", dt=dt)])
    java_write(dedup_path, dedup, [r for dt in "ab" for r in pk_rows([1001, 1003, 2400], 0, "", dt=dt)], "-D")
    java_write(dedup_path, dedup, [r for dt in "ab" for r in pk_rows(range(1005, 1012), 2, "j2-", dt=dt)])
    java_write(agg_path, agg, pk_rows(BASE, 1, "j"))
    java_write(agg_path, agg, pk_rows(range(995, 1010), 5, "j1-", null_every=3))
    java_write(agg_path, agg, pk_rows([*range(1005, 1012), 3000], 7, "j2-", null_every=3))
    calls += [[cmd, path] for path in (dedup_path, agg_path) for cmd in ("read", "index-files")]
    answers = javaref.run_many(calls)
    java = {"dedup": answers[-4:-2], "agg": answers[-2:]}
    catalog = tarn.Catalog(str(wh))
    tables = {"dedup": catalog.load_table("db.dedup"), "agg": catalog.load_table("db.agg")}
    oracles = {"dedup": dedup, "agg": agg}
    for name, table in tables.items():
        read, index_files = java[name]
        assert java_vectors(index_files), f"{name}: Java left no vectors to continue"
        assert canon(read["rows"]) == oracles[name].expected()
        assert tarn_rows(table) == oracles[name].expected()

    # tarn keeps writing: its lookups mark Java's files, its index files replace Java's
    def tarn_upsert(name, rows):
        schema = tables[name].scan().arrow_schema
        tables[name].write(pa.Table.from_pylist(rows, schema=schema))
        oracles[name].upsert(rows)

    tarn_upsert("dedup", [r for dt in "ab" for r in pk_rows([*range(1000, 1008), 2000, 2499], 9, "t1-", dt=dt)])
    tables["dedup"].delete(pa.table({"dt": ["a", "b", "a"], "k": pa.array([1006, 1007, 2000], pa.int64())}))
    dedup.delete([("a", 1006), ("b", 1007), ("a", 2000)])
    tables["dedup"].delete(filter=(tarn.col("dt") == "b") & (tarn.col("k") >= 2490))
    dedup.delete([("b", k) for k in range(2490, 2500)])
    tarn_upsert("dedup", pk_rows([1003, 2495], 10, "t2-", dt="b"))
    tarn_upsert("agg", pk_rows([*range(1000, 1010), 3000, 3999], 100, "t1-", null_every=4))
    tarn_upsert("agg", pk_rows(range(1008, 1015), 1000, "t2-"))

    answers = javaref.run_many([[cmd, table.root] for table in tables.values()
                                for cmd in ("read", "index-files", "files")])
    peer = pypaimon_reads(tmp_path, {name: table.root for name, table in tables.items()}, java_manifests=True)
    for i, (name, table) in enumerate(tables.items()):
        read, index_files, files = answers[3 * i:3 * i + 3]
        expected = oracles[name].expected()
        assert tarn_rows(table) == expected
        assert canon(read["rows"]) == expected
        assert peer[name] == expected
        java_consistent(read, index_files, files)
        assert java_vectors(index_files) == tarn_vectors(table)


# ---------------------------------------------------------------------------- 6: twin tables


TWIN_ENGINES = {
    "sequence": {"sequence.field": "v"},
    "partial_rod": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
}


def twin_ops():
    """Commits of rows with a row kind ("op"): a base, overlapping upserts with nulls, -D and
    -U/+U pairs, then upserts that bring deleted keys back."""
    yield [{"k": k, "v": k, "s": f"b{k}", "op": "+I"} for k in BASE]
    yield [{"k": k, "v": 5 if k % 2 else None, "s": None if k % 3 == 0 else f"u{k}", "op": "+I"}
           for k in range(995, 1010)]
    yield [{"k": 1001, "v": 3, "s": "x", "op": "-D"}, {"k": 2000, "v": 2000, "s": "b2000", "op": "-D"},
           {"k": 1002, "v": 5, "s": None, "op": "-U"}, {"k": 1002, "v": 9, "s": "y", "op": "+U"}]
    yield [{"k": k, "v": 7, "s": f"w{k}", "op": "+I"} for k in (1000, 1001, 1003, 2000, 2001, 3999)]
    yield [{"k": k, "v": 4000 + k, "s": None, "op": "+I"} for k in (1001, 1004, 1005, 5000)]


def test_same_operations_same_rows(tmp_path, javaref):  # noqa: F811
    """Java and tarn apply the same commits (with -D, -U/+U and nulls) to twin tables of
    engines whose oracles are subtle (sequence.field, partial-update removing on delete,
    aggregation retracting): each reads the other's table, all four reads agree. Then Java
    writes on tarn's table (continuing tarn's vectors) and compacts it; tarn reads Java's result."""
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    ops = list(twin_ops())
    tables, calls = {}, []
    for name, options in TWIN_ENGINES.items():
        options = {**DV, "bucket": "1", **options}
        table = catalog.create_table(f"db.t_{name}", schema=SCHEMA, primary_key=["k"], options=options)
        for commit in ops[:4]:
            data = pa.Table.from_pylist([{c: r[c] for c in SCHEMA.names} for r in commit], schema=SCHEMA)
            table.write(data, row_kind=pa.array([r["op"] for r in commit]))
        java_path = str(tmp_path / "wh" / "db.db" / f"j_{name}")
        calls.append(["create", java_path, "--schema", JAVA_SCHEMA, "--primary-keys", "k",
                      "--options", json.dumps(options)])
        calls += [["write", java_path, "--rows", javaref.rows_arg(commit, tmp_path), "--kind-column", "op"]
                  for commit in ops[:4]]
        calls += [["read", java_path], ["read", table.root],
                  ["write", table.root, "--rows", javaref.rows_arg(ops[4], tmp_path), "--kind-column", "op"],
                  ["compact", table.root], ["read", table.root], ["index-files", table.root], ["files", table.root]]
        tables[name] = (table, java_path)
    answers = iter(javaref.run_many(calls))
    for name, (table, java_path) in tables.items():
        for _ in range(5):  # create + the writes
            next(answers)
        java_of_java, java_of_tarn = canon(next(answers)["rows"]), canon(next(answers)["rows"])
        next(answers), next(answers)  # Java's write and compaction of tarn's table
        after_read, after_index, after_files = next(answers), next(answers), next(answers)
        tarn_of_java = tarn_rows(catalog.load_table(f"db.j_{name}"))
        assert table.snapshot(8).commit_kind == "COMPACT"  # tarn's 4 commits, before Java's write
        tarn_of_tarn = canon(table.scan(snapshot_id=8).to_arrow())
        assert java_of_java == java_of_tarn == tarn_of_java == tarn_of_tarn, name
        assert len(java_of_java) > 2900
        # Java continued tarn's table: tarn reads what Java reads, and so does a tarn twin
        # that applies the same commit itself
        java_consistent(after_read, after_index, after_files)
        assert tarn_rows(table) == canon(after_read["rows"]), name
        assert java_vectors(after_index) == tarn_vectors(table)
        twin = catalog.load_table(f"db.j_{name}")
        twin.write(pa.Table.from_pylist([{c: r[c] for c in SCHEMA.names} for r in ops[4]], schema=SCHEMA))
        assert tarn_rows(twin) == canon(after_read["rows"]), name


# ---------------------------------------------------------------------------- 4: append tables


APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
JAVA_APPEND_SCHEMA = json.dumps([{"name": "id", "type": "BIGINT"}, {"name": "dt", "type": "STRING"},
                                 {"name": "v", "type": "STRING"}])


def append_rows(ids):
    return [{"id": i, "dt": "a" if i % 3 else "b", "v": f"v{i}"} for i in ids]


def drop(rows, predicate):
    return [r for r in rows if not predicate(r)]


def test_append_java_deletes_then_tarn_then_java(tmp_path, javaref):  # noqa: F811
    """Java writes and deletes (vectors per partition); tarn reads, deletes more (merging Java's
    vectors); Java, pypaimon and tarn read the same; Java deletes again; tarn reads Java's."""
    path = str(tmp_path / "wh" / "db.db" / "events")
    rows = append_rows(range(0, 300)) + append_rows(range(300, 450))
    answers = javaref.run_many([
        ["create", path, "--schema", JAVA_APPEND_SCHEMA, "--partition-keys", "dt",
         "--options", json.dumps({**DV, "bucket": "-1"})],
        ["write", path, "--rows", javaref.rows_arg(append_rows(range(0, 300)), tmp_path)],
        ["write", path, "--rows", javaref.rows_arg(append_rows(range(300, 450)), tmp_path)],
        ["delete", path, "--filter", json.dumps({"op": "lt", "col": "id", "value": 40})],
        ["delete", path, "--filter", json.dumps({"op": "in", "col": "id", "values": [100, 101, 320, 321, 449]})],
        ["read", path],
    ])
    rows = drop(rows, lambda r: r["id"] < 40 or r["id"] in (100, 101, 320, 321, 449))
    assert answers[3]["rows_deleted"] == 40 and answers[4]["rows_deleted"] == 5
    assert canon(answers[-1]["rows"]) == canon(rows)
    table = tarn.Catalog(str(tmp_path / "wh")).load_table("db.events")
    assert tarn_rows(table) == canon(rows)

    table.delete(filter=(tarn.col("id") >= 30) & (tarn.col("id") < 60))  # overlaps Java's deletes
    table.delete(filter=tarn.col("v").isin(["v200", "v310", "v400"]) | (tarn.col("id") == 102))
    rows = drop(rows, lambda r: 30 <= r["id"] < 60 or r["v"] in ("v200", "v310", "v400") or r["id"] == 102)
    assert tarn_rows(table) == canon(rows)
    before_java = table.latest_snapshot()
    answers = javaref.run_many([
        ["read", path], ["index-files", path], ["files", path],
        ["delete", path, "--filter", json.dumps({"op": "and", "children": [
            {"op": "ge", "col": "id", "value": 55}, {"op": "lt", "col": "id", "value": 70}]})],
        ["read", path], ["index-files", path],
    ])
    read, index_files, files = answers[:3]
    assert canon(read["rows"]) == canon(rows)
    java_consistent(read, index_files, files, primary_key=False)
    assert java_vectors(index_files) == tarn_vectors(table, before_java)

    rows = drop(rows, lambda r: 55 <= r["id"] < 70)
    assert answers[3]["rows_deleted"] == 10  # 55..59 were tarn's: Java skips deleted rows
    assert canon(answers[4]["rows"]) == canon(rows)
    java_vectors(answers[5])
    assert tarn_rows(table) == canon(rows)
    assert pypaimon_reads(tmp_path, {"t": table.root}, java_manifests=True)["t"] == canon(rows)


def test_append_tarn_deletes_read_by_java_and_pypaimon(tmp_path, javaref):  # noqa: F811
    """tarn writes an append table (bucketed, partitioned) and deletes twice by filter; Java and
    pypaimon read it; Java deletes on top of tarn's vectors; tarn reads Java's result."""
    table = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.events", schema=APPEND_SCHEMA, partition_keys=["dt"], options={**DV, "bucket": "2", "bucket-key": "id"})
    rows = []
    for ids in (range(0, 200), range(200, 260), range(260, 300)):
        table.write(pa.Table.from_pylist(append_rows(ids), schema=APPEND_SCHEMA))
        rows += append_rows(ids)
    table.delete(filter=tarn.col("id").isin(list(range(0, 300, 7))))
    table.delete(filter=(tarn.col("id") >= 190) & (tarn.col("id") < 215))  # across two files, some again
    rows = drop(rows, lambda r: r["id"] % 7 == 0 or 190 <= r["id"] < 215)
    assert tarn_rows(table) == canon(rows)
    path = table.root
    before_java = table.latest_snapshot()
    answers = javaref.run_many([
        ["read", path], ["index-files", path], ["files", path],
        ["delete", path, "--filter", json.dumps({"op": "or", "children": [
            {"op": "eq", "col": "v", "value": "v1"}, {"op": "ge", "col": "id", "value": 290}]})],
        ["read", path], ["index-files", path],
    ])
    read, index_files, files = answers[:3]
    assert canon(read["rows"]) == canon(rows)
    java_consistent(read, index_files, files, primary_key=False)
    assert java_vectors(index_files) == tarn_vectors(table, before_java)
    rows_after_java = drop(rows, lambda r: r["v"] == "v1" or r["id"] >= 290)
    assert answers[3]["rows_deleted"] == len(rows) - len(rows_after_java)
    assert canon(answers[4]["rows"]) == canon(rows_after_java)
    java_vectors(answers[5])
    peer = pypaimon_reads(tmp_path, {"t": path})
    assert peer["t"] == canon(rows_after_java)
    assert tarn_rows(table) == canon(rows_after_java)
    # and tarn deletes again on top of Java's vectors
    table.delete(filter=tarn.col("id") < 20)
    final = drop(rows_after_java, lambda r: r["id"] < 20)
    assert tarn_rows(table) == canon(final)
    assert canon(javaref.run("read", path)["rows"]) == canon(final)


# ---------------------------------------------------------------------------- 5: Java compaction


def test_java_full_compaction_of_tarn_dv_table(tmp_path, javaref):  # noqa: F811
    table = tarn.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", schema=PART_SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"], options={**DV, "bucket": "2"})
    oracle = Oracle(("dt", "k"), fold_dedup)
    run_script(table, oracle, PART_SCHEMA, ("a", "b"))
    assert tarn_vectors(table)
    answers = javaref.run_many([["compact", table.root, "--full"], ["read", table.root],
                                ["index-files", table.root], ["files", table.root]])
    compacted, read, index_files, files = answers
    assert compacted["commit_kind"] == "COMPACT"
    assert canon(read["rows"]) == oracle.expected()
    assert java_vectors(index_files) == {}  # a full compaction drops every vector
    assert tarn_vectors(table) == {}
    assert tarn_rows(table) == oracle.expected()

    rows = [r for dt in "ab" for r in pk_rows([*range(1000, 1006), 2222, 3998], 7, "t-", dt=dt)]
    table.write(pa.Table.from_pylist(rows, schema=PART_SCHEMA))
    oracle.upsert(rows)
    table.delete(pa.table({"dt": ["a", "b"], "k": pa.array([1001, 3998], pa.int64())}))
    oracle.delete([("a", 1001), ("b", 3998)])
    assert tarn_rows(table) == oracle.expected()
    assert tarn_vectors(table), "tarn's writes after Java's compaction left no vectors"
    read, index_files, files = javaref.run_many([["read", table.root], ["index-files", table.root],
                                                 ["files", table.root]])
    assert canon(read["rows"]) == oracle.expected()
    check_java_layout(table, read, index_files, files)
    assert pypaimon_reads(tmp_path, {"t": table.root}, java_manifests=True)["t"] == oracle.expected()


# ---------------------------------------------------------------------------- 7: big vectors


def test_vectors_of_every_container_kind(tmp_path, javaref):  # noqa: F811
    """One 140,000-row append file: tarn deletes sparse rows (array containers), a range
    crossing the 65,536 boundary (run containers) and every third row of a stretch (bitmap
    containers); Java and pypaimon read tarn's vector; Java adds its own (run-optimized)
    deletions; tarn and pypaimon read Java's vector."""
    n = 140_000
    schema = pa.schema([("id", pa.int64()), ("g", pa.int64())])
    table = tarn.Catalog(str(tmp_path / "wh")).create_table("db.big", schema=schema, options=DV)
    table.write(pa.table({"id": pa.array(range(n), pa.int64()),
                          "g": pa.array([i % 1000 for i in range(n)], pa.int64())}))
    table.delete(filter=tarn.col("g") == 7)
    table.delete(filter=(tarn.col("id") >= 50_000) & (tarn.col("id") < 80_000))
    dense = range(100_000, 130_000, 3)
    table.delete(filter=tarn.col("id").isin(list(dense)))
    gone = {i for i in range(n) if i % 1000 == 7} | set(range(50_000, 80_000)) | set(dense)
    alive = [i for i in range(n) if i not in gone]
    alive_set = set(alive)

    def ids(rows):
        return sorted(r["id"] for r in rows)

    assert ids(table.scan(columns=["id"]).to_arrow().to_pylist()) == alive
    before_java = table.latest_snapshot()
    answers = javaref.run_many([
        ["read", table.root, "--columns", "id"], ["index-files", table.root],
        ["delete", table.root, "--filter", json.dumps({"op": "or", "children": [
            {"op": "lt", "col": "id", "value": 20_000}, {"op": "eq", "col": "g", "value": 11}]})],
        ["read", table.root, "--columns", "id"], ["index-files", table.root],
    ])
    assert ids(answers[0]["rows"]) == alive
    assert java_vectors(answers[1]) == tarn_vectors(table, before_java)
    alive = [i for i in alive if not (i < 20_000 or i % 1000 == 11)]
    assert answers[2]["rows_deleted"] == len(alive_set) - len(alive)
    assert ids(answers[3]["rows"]) == alive
    assert ids(table.scan(columns=["id"]).to_arrow().to_pylist()) == alive
    assert java_vectors(answers[4]) == tarn_vectors(table)
    peer = pypaimon_reads(tmp_path, {"tarn": (table.root, before_java.id), "java": table.root}, java_manifests=True)
    assert ids(peer["tarn"]) == sorted(alive_set)
    assert ids(peer["java"]) == alive
