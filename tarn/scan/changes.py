"""The rows one snapshot added, with their row kind: an embedded incremental read.

A table with a `changelog-producer` reads the changelog files the snapshot recorded
(`changelogManifestList`, for any commit kind: input changelog on APPEND, compaction changelog on
COMPACT); a table without one reads the data files APPEND and OVERWRITE snapshots added (its
delta manifest list). The result has a string column `_ROW_KIND` ('+I', '-U', '+U', '-D') before
the table's columns, in the snapshot's schema. Batch reads (`Table.scan`) never read changelog
files.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tarn import partition
from tarn.lsm.kv import ROW_KIND_NAMES, VALUE_KIND
from tarn.meta import snapshot as snap
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.options import Options
from tarn.scan.planner import Planner
from tarn.scan.reader import FileReader
from tarn.types import arrow_schema

ROW_KIND = "_ROW_KIND"
KIND_NAMES = pa.array(sorted(ROW_KIND_NAMES, key=ROW_KIND_NAMES.get))  # index = kind code
ADD = 0


@dataclass(frozen=True)
class AddedFile:
    """A data or changelog file a snapshot added, and the directory it lives in."""

    bucket_path: str
    meta: DataFileMeta


def added_files(planner: Planner, root: str, schema: TableSchema, snapshot: Snapshot) -> list[AddedFile]:
    """The files whose rows make up the changes of `snapshot`."""
    options = Options(schema.options)
    if options.changelog_producer != "none" and schema.primary_keys:
        manifest_list = snapshot.changelog_manifest_list
    elif snapshot.commit_kind in (snap.APPEND, snap.OVERWRITE):
        manifest_list = snapshot.delta_manifest_list
    else:
        manifest_list = None
    if not manifest_list:
        return []
    default_name = options.get("partition.default-name")
    files = []
    for meta in planner.manifests.read_manifest_list(manifest_list):
        for entry in planner.manifests.read_manifest(meta.file_name):
            if entry.kind != ADD:
                continue
            values = planner.partition_values(entry.partition)
            files.append(AddedFile(partition.bucket_path(root, schema, default_name, values, entry.bucket),
                                   entry.file))
    return files


def read_changes(reader: FileReader, schema: TableSchema, files: list[AddedFile]) -> pa.Table:
    """The files' rows with a `_ROW_KIND` column first (all '+I' for append tables)."""
    fields = list(schema.fields)
    key_value = bool(schema.primary_keys)
    output = pa.schema([pa.field(ROW_KIND, pa.string(), nullable=False), *arrow_schema(fields)])
    parts = []
    for f in files:
        data = reader.read(f.bucket_path, f.meta, fields, with_system=key_value)
        if key_value:
            kinds = pc.take(KIND_NAMES, data.column(VALUE_KIND).cast(pa.int32()))
            data = data.select([x.name for x in fields])
        else:
            kinds = pa.repeat(pa.scalar("+I"), data.num_rows)
        parts.append(data.add_column(0, ROW_KIND, kinds).cast(output))
    if not parts:
        return output.empty_table()
    return pa.concat_tables(parts)


def snapshot_changes(table, snapshot_id: int) -> pa.Table:
    """`Table.changes`: the rows snapshot `snapshot_id` of `table` added."""
    snapshot = table.snapshot(snapshot_id)
    schema = table.schema_by_id(snapshot.schema_id)
    files = added_files(table._planner(schema), table.root, schema, snapshot)
    reader = FileReader(table.file_io, schema, table.schema_by_id, Options(schema.options))
    return read_changes(reader, schema, files)
