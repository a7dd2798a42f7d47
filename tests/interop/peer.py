"""pypaimon 2.1 interoperability peer.

Runs under the pypaimon venv (pypaimon 2.1.0, pyarrow 19, stdlib only) as
``python peer.py <command>`` with a JSON spec on stdin; prints one JSON object
on stdout. Rows travel through Arrow IPC files (format v5).

Commands:
  write       create the table if a ``schema`` is given, then one commit per entry
              of ``commits``: ``{"kind": "write" | "delete" | "overwrite", "rows_ipc": path,
              "partition": {...} (overwrite only)}`` or ``{"kind": "tag", "name": str,
              "snapshot_id": int?}``. Deletes need the table option ``rowkind.field``
              (see docs/research/pypaimon-2.1.md); the peer fills that column with
              ``-D`` (``+I`` for writes) when the rows lack it.
  read        read the whole table (optionally at ``snapshot_id`` or ``tag``) into
              ``out_ipc``; prints ``{"rows": n, "schema": [[name, arrow type], ...]}``.
  snapshots   every snapshot as its JSON object, ascending by id.
  list_tags   ``{"tags": {name: snapshot id}}``.
  plan        pypaimon's batch plan (optionally at ``snapshot_id``): ``{"splits": [{"partition",
              "bucket", "raw_convertible", "files": [file, ...]}, ...]}``, each file as pypaimon
              decoded its manifest entry (level, min/max key values, sequence range, source, ...).
  delta       the entries of one snapshot's delta manifest list as pypaimon decodes them:
              ``{"entries": [{"kind", "partition", "bucket", "file": file}, ...]}``.
  batch       ``{"calls": [[command, spec], ...]}`` -> ``{"results": [answer, ...]}``;
              saves the ~1 s pypaimon import per call. With ``"errors": "return"`` a failing
              call answers ``{"error": "<exception class>: <message>"}`` instead of aborting.

Any spec may set ``"java_manifests": true`` to read manifests that Java Paimon 0.9/1.0 wrote:
pypaimon 2.1 fails on them with ``KeyError: '_VALUE_STATS_COLS'`` (a field those versions do not
write); the flag applies the patch of shared/javaref/README.md (a missing field = stats cover all
columns) for the rest of the process.
"""

import contextlib
import json
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

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
    if kind not in ("write", "delete", "overwrite"):
        raise ValueError("unknown commit kind %r" % kind)
    row_kind = DELETE_KIND if kind == "delete" else INSERT_KIND
    rows = load_rows(table, commit["rows_ipc"], row_kind)
    overwrite_partition = commit.get("partition", {}) if kind == "overwrite" else None
    commit_rows(table, rows, overwrite_partition)


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


def cmd_read(spec):
    table = time_travel(open_table(spec), spec)
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    rows = builder.new_read().to_arrow(splits)
    if rows is None:
        rows = table_arrow_schema(table).empty_table()
    with ipc.new_file(spec["out_ipc"], rows.schema) as sink:
        sink.write_table(rows)
    return {"rows": rows.num_rows,
            "schema": [[field.name, str(field.type)] for field in rows.schema]}


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


def run_call(command, call_spec, errors):
    if errors != "return":
        return COMMANDS[command](call_spec)
    try:
        return COMMANDS[command](call_spec)
    except Exception as error:  # reported to the caller, who asserts on it
        return {"error": "%s: %s" % (type(error).__name__, error)}


def cmd_batch(spec):
    errors = spec.get("errors")
    return {"results": [run_call(command, call_spec, errors) for command, call_spec in spec["calls"]]}


COMMANDS = {"write": cmd_write, "read": cmd_read, "snapshots": cmd_snapshots,
            "list_tags": cmd_list_tags, "plan": cmd_plan, "delta": cmd_delta, "batch": cmd_batch}


def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        sys.stderr.write("usage: peer.py {%s} < spec.json\n" % "|".join(COMMANDS))
        return 2
    spec = json.load(sys.stdin)
    # Anything pypaimon prints must not corrupt the JSON answer on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        result = COMMANDS[argv[1]](spec)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
