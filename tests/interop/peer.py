"""pypaimon 2.1 interoperability peer.

Runs under the pypaimon venv (pypaimon 2.1.0, pyarrow 19, stdlib only) as
``python peer.py <command>`` with a JSON spec on stdin; prints one JSON object
on stdout. Rows travel through Arrow IPC files (format v5).

Commands:
  write       create the table if a ``schema`` is given, then one commit per entry
              of ``commits``: ``{"kind": "write" | "delete" | "overwrite", "rows_ipc": path,
              "partition": {...} (overwrite only)}``, ``{"kind": "tag", "name": str,
              "snapshot_id": int?}``, ``{"kind": "branch", "name": str, "tag": str?}`` (a branch,
              empty or from a tag; write to it with ``"table": "db.t$branch_<name>"``) or a data-evolution commit (ROW_ID_COMMITS:
              ``update_by_row_id``, ``delete_by_row_id``, ``upsert_by_key``). Deletes need the table option ``rowkind.field``
              (see docs/research/pypaimon-2.1.md); the peer fills that column with
              ``-D`` (``+I`` for writes) when the rows lack it.
  read        read the whole table (optionally at ``snapshot_id`` or ``tag``, only the
              ``projection`` columns, which may name ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` on
              row-tracking tables) into ``out_ipc``; prints ``{"rows": n, "schema": [[name, arrow
              type], ...]}``. ``"table": "db.t$branch_b1"`` (with ``warehouse``) reads a branch.
  snapshots   every snapshot as its JSON object, ascending by id.
  list_tags   ``{"tags": {name: snapshot id}}``.
  plan        pypaimon's batch plan (optionally at ``snapshot_id``): ``{"splits": [{"partition",
              "bucket", "raw_convertible", "files": [file, ...]}, ...]}``, each file as pypaimon
              decoded its manifest entry (level, min/max key values, sequence range, source, ...).
  delta       the entries of one snapshot's delta manifest list as pypaimon decodes them:
              ``{"entries": [{"kind", "partition", "bucket", "file": file}, ...]}``.
  make        build one table of today's Paimon features in ``warehouse`` (``kind``, below) as
              ``table`` (default ``db.<kind>``), read it back into ``out_ipc`` and print
              ``{"table_path", "rows", "schema", ...}`` plus what the kind adds (see MAKERS):
              ``row_tracking`` (row-tracking + data-evolution append table, two appends, then
              ``update_by_arrow_with_row_id`` of ``score``: files holding only that column;
              ``row_ids_ipc`` gets the rows with ``_ROW_ID``), ``variant`` (VARIANT column from
              Python objects; ``values`` = the decoded objects), ``postpone`` (primary key,
              ``bucket = -2``, written, never compacted), ``branch`` (tag ``t1``, branch ``b1``
              from it, a write to each; ``branch_ipc`` gets the branch's rows), ``mod_bucket``
              (primary key INT, ``bucket = 4``, ``bucket-function.type = mod``; ``bucket_of_id`` =
              where pypaimon put each key), ``blob`` (BLOB column).
  batch       ``{"calls": [[command, spec], ...]}`` -> ``{"results": [answer, ...]}``;
              saves the ~1 s pypaimon import per call. With ``"errors": "return"`` a failing
              call answers ``{"error": "<exception class>: <message>"}`` instead of aborting.

Any spec may set ``"java_manifests": true`` to read manifests that Java Paimon 0.9/1.0 wrote:
pypaimon 2.1 fails on them with ``KeyError: '_VALUE_STATS_COLS'`` (a field those versions do not
write); the flag applies the patch of shared/javaref/README.md (a missing field = stats cover all
columns) for the rest of the process.
"""

import json
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

import bridge

from pypaimon import CatalogFactory, Schema
from pypaimon.common.json_util import JSON
from pypaimon.schema.data_types import DataField, DataTypeParser, PyarrowFieldParser
from pypaimon.table.file_store_table import FileStoreTable

ROWKIND_OPTION = "rowkind.field"
INSERT_KIND = "+I"
DELETE_KIND = "-D"


_JAVA_MANIFEST_PATCH = []


def accept_java_manifests():
    """Let pypaimon read manifest entries without ``_VALUE_STATS_COLS`` (Java 0.9/1.0 omit it)."""
    if _JAVA_MANIFEST_PATCH:
        return
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    original = ManifestFileManager._get_value_stats_fields

    def patched(self, file_dict, file_schema):
        file_dict.setdefault("_VALUE_STATS_COLS", None)  # None = stats cover all columns
        return original(self, file_dict, file_schema)

    ManifestFileManager._get_value_stats_fields = patched
    _JAVA_MANIFEST_PATCH.append(original)


def open_table(spec):
    """The table named by ``table_path`` or by ``warehouse`` + ``table``."""
    if spec.get("java_manifests"):
        accept_java_manifests()
    if spec.get("table_path"):
        return FileStoreTable.from_path(spec["table_path"])
    catalog = CatalogFactory.create({"warehouse": spec["warehouse"]})
    return catalog.get_table(spec["table"])


def schema_fields(columns):
    """DataFields from ``[[name, type], ...]``; type = SQL string or Paimon JSON object."""
    return [DataField(index, name, DataTypeParser.parse_data_type(type_json))
            for index, (name, type_json) in enumerate(columns)]


def create_table(spec):
    catalog = CatalogFactory.create({"warehouse": spec["warehouse"]})
    database = spec["table"].split(".", 1)[0]
    catalog.create_database(database, True)
    schema = Schema(schema_fields(spec["schema"]), spec.get("partition_keys") or [],
                    spec.get("primary_keys") or [], dict(spec.get("options") or {}))
    catalog.create_table(spec["table"], schema, True)


def table_arrow_schema(table):
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def load_rows(table, path, row_kind):
    """Rows of an IPC file, cast to the table's Arrow schema, row-kind column filled in."""
    with pa.memory_map(path) as source:
        rows = ipc.open_file(source).read_all()
    kind_column = table.options.options.to_map().get(ROWKIND_OPTION)
    if kind_column and kind_column not in rows.column_names:
        rows = rows.append_column(kind_column, pa.array([row_kind] * rows.num_rows, pa.string()))
    if row_kind == DELETE_KIND and not kind_column:
        raise ValueError("pypaimon 2.1 writes -D rows only through the '%s' option; "
                         "table %s does not set it" % (ROWKIND_OPTION, table.table_path))
    target = table_arrow_schema(table)
    return rows.select(target.names).cast(target)


def commit_rows(table, rows, overwrite_partition=None):
    builder = table.new_batch_write_builder()
    if overwrite_partition is not None:
        builder.overwrite(overwrite_partition)
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        writer.write_arrow(rows)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


def latest_snapshot_id(table):
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else snapshot.id


def run_commit(table, commit):
    kind = commit["kind"]
    if kind == "tag":
        table.create_tag(commit["name"], commit.get("snapshot_id"))
        return
    if kind == "branch":
        table.branch_manager().create_branch(commit["name"], commit.get("tag"))
        return
    if kind in ROW_ID_COMMITS:
        run_row_id_commit(table, commit)
        return
    if kind not in ("write", "delete", "overwrite"):
        raise ValueError("unknown commit kind %r" % kind)
    row_kind = DELETE_KIND if kind == "delete" else INSERT_KIND
    rows = load_rows(table, commit["rows_ipc"], row_kind)
    overwrite_partition = commit.get("partition", {}) if kind == "overwrite" else None
    commit_rows(table, rows, overwrite_partition)


ROW_ID_COMMITS = ("update_by_row_id", "delete_by_row_id", "upsert_by_key")


def run_row_id_commit(table, commit):
    """Data-evolution commits: ``update_by_row_id`` (``rows_ipc``: ``_ROW_ID`` + the columns to
    set), ``delete_by_row_id`` (``ids``; needs deletion vectors), ``upsert_by_key`` (``rows_ipc``
    of whole rows, ``keys``: the columns matching them to existing rows)."""
    builder = table.new_batch_write_builder()
    update = builder.new_update()
    kind = commit["kind"]
    if kind == "delete_by_row_id":
        messages = update.delete_by_row_id(list(commit["ids"]))
    else:
        with pa.memory_map(commit["rows_ipc"]) as source:
            rows = ipc.open_file(source).read_all()
        if kind == "update_by_row_id":
            target = table_arrow_schema(table)
            names = [n for n in rows.column_names if n != "_ROW_ID"]
            rows = pa.table([rows.column("_ROW_ID").cast(pa.int64())] +
                            [rows.column(n).cast(target.field(n).type) for n in names], names=["_ROW_ID"] + names)
            messages = update.with_update_type(names).update_by_arrow_with_row_id(rows)
        else:
            target = table_arrow_schema(table)
            messages = update.upsert_by_arrow_with_key(rows.select(target.names).cast(target), list(commit["keys"]))
    committer = builder.new_commit()
    try:
        committer.commit(messages)
    finally:
        committer.close()


def cmd_write(spec):
    if spec.get("schema"):
        create_table(spec)
    table = open_table(spec)
    snapshot_ids = []
    for commit in spec.get("commits", []):
        run_commit(table, commit)
        table = open_table(spec)
        snapshot_ids.append(latest_snapshot_id(table))
    return {"table_path": table.table_path, "snapshot_ids": snapshot_ids}


def time_travel(table, spec):
    if spec.get("snapshot_id") is not None:
        return table.copy({"scan.snapshot-id": str(spec["snapshot_id"])})
    if spec.get("tag"):
        return table.copy({"scan.tag-name": spec["tag"]})
    return table


def read_arrow(table, projection=None):
    """Every row pypaimon reads from ``table`` (only ``projection``'s columns when given)."""
    builder = table.new_read_builder()
    if projection:
        builder = builder.with_projection(list(projection))
    splits = builder.new_scan().plan().splits()
    rows = builder.new_read().to_arrow(splits)
    if rows is None:
        schema = table_arrow_schema(table)
        if projection:
            schema = pa.schema([schema.field(name) for name in projection])
        rows = schema.empty_table()
    return rows


def save_rows(path, rows):
    with ipc.new_file(path, rows.schema) as sink:
        sink.write_table(rows)
    return {"rows": rows.num_rows,
            "schema": [[field.name, str(field.type)] for field in rows.schema]}


def cmd_read(spec):
    table = time_travel(open_table(spec), spec)
    return save_rows(spec["out_ipc"], read_arrow(table, spec.get("projection")))


def cmd_snapshots(spec):
    snapshots = open_table(spec).snapshot_manager().list_snapshots()
    return {"snapshots": [json.loads(JSON.to_json(snapshot)) for snapshot in snapshots]}


def cmd_list_tags(spec):
    table = open_table(spec)
    tags = table.tag_manager()
    return {"tags": {name: tags.get(name).id for name in sorted(table.list_tags())}}


def json_value(value):
    """A decoded key/stat value as JSON: numbers, strings, booleans and None as they are."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def row_values(row):
    return None if row is None else [json_value(row.get_field(i)) for i in range(len(row))]


def file_json(meta):
    stats = meta.key_stats  # batch plans may drop stats
    return {"file_name": meta.file_name, "level": meta.level, "row_count": meta.row_count,
            "min_key": row_values(meta.min_key), "max_key": row_values(meta.max_key),
            "key_min_values": row_values(stats.min_values) if stats else None,
            "key_max_values": row_values(stats.max_values) if stats else None,
            "key_null_counts": stats.null_counts if stats else None,
            "min_sequence_number": meta.min_sequence_number,
            "max_sequence_number": meta.max_sequence_number,
            "schema_id": meta.schema_id, "file_source": meta.file_source,
            "delete_row_count": meta.delete_row_count}


def cmd_plan(spec):
    table = time_travel(open_table(spec), spec)
    splits = table.new_read_builder().new_scan().plan().splits()
    return {"splits": [{"partition": row_values(split.partition), "bucket": split.bucket,
                        "raw_convertible": bool(split.raw_convertible),
                        "files": [file_json(f) for f in split.files]} for split in splits]}


def cmd_delta(spec):
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    table = open_table(spec)
    snapshot = table.snapshot_manager().get_snapshot_by_id(spec["snapshot_id"])
    entries = []
    for manifest in ManifestListManager(table).read_delta(snapshot):
        for entry in ManifestFileManager(table).read(manifest.file_name, drop_stats=False):
            entries.append({"kind": entry.kind, "partition": row_values(entry.partition),
                            "bucket": entry.bucket, "file": file_json(entry.file)})
    return {"entries": entries}


# ---------------------------------------------------------------------------------------------
# Table makers: tables with today's Paimon features (``make``), each built the way pypaimon 2.1
# builds it. Every maker gets the catalog, the identifier and the spec, and returns what it adds
# to the answer; ``cmd_make`` then reads the table back into ``out_ipc``.

ROW_TRACKING_OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def new_table(catalog, identifier, columns, primary_keys=(), options=None, partition_keys=()):
    catalog.create_database(identifier.split(".", 1)[0], True)
    schema = Schema(schema_fields(columns), list(partition_keys), list(primary_keys), dict(options or {}))
    catalog.create_table(identifier, schema, False)
    return catalog.get_table(identifier)


def append_rows(catalog, identifier, columns):
    """One commit of ``columns`` (a dict of Python lists), cast to the table's Arrow schema."""
    table = catalog.get_table(identifier)
    target = table_arrow_schema(table)
    commit_rows(table, pa.table({name: pa.array(values, target.field(name).type)
                                 for name, values in columns.items()}).select(target.names).cast(target))


def plan_files(table):
    """Each data file of pypaimon's plan: name, bucket, row count, first row id, write columns."""
    files = []
    for split in table.new_read_builder().new_scan().plan().splits():
        for meta in split.files:
            files.append({"file_name": meta.file_name, "bucket": split.bucket,
                          "row_count": meta.row_count, "first_row_id": meta.first_row_id,
                          "write_cols": list(meta.write_cols) if meta.write_cols is not None else None})
    return files


def make_row_tracking(catalog, identifier, spec):
    new_table(catalog, identifier, [["id", "INT"], ["name", "STRING"], ["score", "DOUBLE"]],
              options=ROW_TRACKING_OPTIONS)
    append_rows(catalog, identifier, {"id": [1, 2, 3], "name": ["a", "b", "c"], "score": [1.0, 2.0, 3.0]})
    append_rows(catalog, identifier, {"id": [4, 5], "name": ["d", "e"], "score": [4.0, 5.0]})
    table = catalog.get_table(identifier)
    builder = table.new_batch_write_builder()
    update = builder.new_update().with_update_type(["score"])
    # row ids 1 and 3 are the rows of id 2 (first commit) and id 4 (second commit)
    messages = update.update_by_arrow_with_row_id(pa.table({
        "_ROW_ID": pa.array([1, 3], pa.int64()), "score": pa.array([20.0, 40.0], pa.float64())}))
    committer = builder.new_commit()
    try:
        committer.commit(messages)
    finally:
        committer.close()
    table = catalog.get_table(identifier)
    answer = {"files": plan_files(table)}
    if spec.get("row_ids_ipc"):
        names = [f.name for f in table.table_schema.fields] + ["_ROW_ID", "_SEQUENCE_NUMBER"]
        answer["row_ids"] = save_rows(spec["row_ids_ipc"], read_arrow(table, names))
    return answer


VARIANT_VALUES = [{"a": 1, "b": [1, 2, "x"]}, None, 3.5, "str", {"nested": {"k": True}}, [1, None]]


def make_variant(catalog, identifier, spec):
    from pypaimon.data.generic_variant import GenericVariant

    table = new_table(catalog, identifier, [["id", "INT"], ["v", "VARIANT"]])
    variants = GenericVariant.to_arrow_array(
        [None if value is None else GenericVariant.from_python(value) for value in VARIANT_VALUES])
    ids = pa.array(range(len(VARIANT_VALUES)), pa.int32())
    commit_rows(table, pa.table({"id": ids, "v": variants}))
    read = read_arrow(catalog.get_table(identifier))
    decoded = [None if cell is None else GenericVariant.from_arrow_struct(cell).to_python()
               for cell in read.column("v").to_pylist()]
    return {"values": [[key, json_value_deep(value)]
                       for key, value in zip(read.column("id").to_pylist(), decoded)]}


def json_value_deep(value):
    if isinstance(value, dict):
        return {str(k): json_value_deep(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value_deep(v) for v in value]
    return json_value(value)


def make_postpone(catalog, identifier, spec):
    new_table(catalog, identifier, [["id", "BIGINT NOT NULL"], ["v", "STRING"]], primary_keys=["id"],
              options={"bucket": "-2"})
    append_rows(catalog, identifier, {"id": [1, 2, 3], "v": ["a", "b", "c"]})
    append_rows(catalog, identifier, {"id": [2, 4], "v": ["B", "d"]})
    table = catalog.get_table(identifier)
    # The rows sit in bucket-postpone files, which batch reads skip until a compaction
    # (Java's) moves them into real buckets.
    return {"written": [[1, "a"], [2, "B"], [3, "c"], [4, "d"]],
            "snapshot_id": latest_snapshot_id(table)}


def make_branch(catalog, identifier, spec):
    new_table(catalog, identifier, [["id", "BIGINT"], ["v", "STRING"]])
    append_rows(catalog, identifier, {"id": [1, 2], "v": ["a", "b"]})
    catalog.get_table(identifier).create_tag("t1")
    catalog.create_branch(identifier, "b1", "t1")
    branch = identifier + "$branch_b1"
    append_rows(catalog, branch, {"id": [10], "v": ["branch"]})
    append_rows(catalog, identifier, {"id": [3], "v": ["main"]})
    answer = {"branch": "b1", "branch_table": branch}
    if spec.get("branch_ipc"):
        answer["branch_rows"] = save_rows(spec["branch_ipc"], read_arrow(catalog.get_table(branch)))
    return answer


def make_mod_bucket(catalog, identifier, spec):
    ids = spec.get("ids", list(range(10)))
    table = new_table(catalog, identifier, [["id", "INT NOT NULL"], ["v", "STRING"]], primary_keys=["id"],
                      options={"bucket": "4", "bucket-function.type": "mod"})
    append_rows(catalog, identifier, {"id": ids, "v": ["v%d" % i for i in ids]})
    table = catalog.get_table(identifier)
    builder = table.new_read_builder()
    bucket_of_id = {}
    for split in builder.new_scan().plan().splits():
        for key in builder.new_read().to_arrow([split]).column("id").to_pylist():
            bucket_of_id[str(key)] = split.bucket
    return {"bucket_of_id": bucket_of_id}


BLOB_VALUES = [b"hello", bytes(range(256)) * 8, None, b""]


def make_blob(catalog, identifier, spec):
    new_table(catalog, identifier, [["id", "INT"], ["b", "BLOB"]], options=ROW_TRACKING_OPTIONS)
    append_rows(catalog, identifier, {"id": list(range(len(BLOB_VALUES))), "b": BLOB_VALUES})
    return {"files": plan_files(catalog.get_table(identifier))}


MAKERS = {"row_tracking": make_row_tracking, "variant": make_variant, "postpone": make_postpone,
          "branch": make_branch, "mod_bucket": make_mod_bucket, "blob": make_blob}


def cmd_make(spec):
    kind = spec["kind"]
    identifier = spec.get("table") or "db." + kind
    catalog = CatalogFactory.create({"warehouse": spec["warehouse"]})
    answer = MAKERS[kind](catalog, identifier, spec)
    table = catalog.get_table(identifier)
    answer.update(save_rows(spec["out_ipc"], read_arrow(table)))
    answer.update({"kind": kind, "table": identifier, "table_path": table.table_path})
    return answer



def cmd_variant_write(spec):
    """Create ``table`` (``id INT, v VARIANT``, table ``options``; e.g. a shredding schema) in
    ``warehouse`` if absent and write the Python values pickled in ``values_pickle`` (ids 0..n-1)
    through GenericVariant.from_python (None: a null)."""
    import pickle

    from pypaimon.data.generic_variant import GenericVariant

    catalog = CatalogFactory.create({"warehouse": spec["warehouse"]})
    identifier = spec["table"]
    try:
        table = catalog.get_table(identifier)
    except Exception:  # noqa: BLE001 - absent: create it
        table = new_table(catalog, identifier, [["id", "INT"], ["v", "VARIANT"]], options=spec.get("options"))
    with open(spec["values_pickle"], "rb") as f:
        values = pickle.load(f)
    variants = GenericVariant.to_arrow_array([None if v is None else GenericVariant.from_python(v) for v in values])
    first = spec.get("first_id", 0)
    commit_rows(table, pa.table({"id": pa.array(range(first, first + len(values)), pa.int32()), "v": variants}))
    return {"table_path": table.table_path}


def cmd_variant_read(spec):
    """Decode every ``v`` of ``table`` (GenericVariant.to_python) into ``out_pickle`` as {id: value}."""
    import pickle

    from pypaimon.data.generic_variant import GenericVariant

    rows = read_arrow(open_table(spec))
    ids = rows.column("id").to_pylist()
    column = rows.column("v").combine_chunks()
    out = {}
    for i, struct in zip(ids, column.to_pylist()):
        out[i] = None if struct is None else GenericVariant(struct["value"], struct["metadata"]).to_python()
    with open(spec["out_pickle"], "wb") as f:
        pickle.dump(out, f)
    return {"rows": len(out)}


COMMANDS = {"write": cmd_write, "read": cmd_read, "snapshots": cmd_snapshots,
            "list_tags": cmd_list_tags, "plan": cmd_plan, "delta": cmd_delta, "make": cmd_make,
            "variant_write": cmd_variant_write, "variant_read": cmd_variant_read}


if __name__ == "__main__":
    sys.exit(bridge.run(COMMANDS, sys.argv))
