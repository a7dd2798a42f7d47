"""What a stream reads from one snapshot: the single streaming-scan definition.

Used by `Table.changes` and by the Spark streaming source alike, following Java's stream scan:
- a primary-key table with a `changelog-producer` reads the changelog files the snapshot
  recorded (`changelogManifestList`, any commit kind: input changelog on APPEND, compaction
  changelog on COMPACT; an OVERWRITE records none);
- otherwise an APPEND snapshot yields the data files it added; a COMPACT snapshot nothing; an
  OVERWRITE snapshot nothing, unless `streaming-read-overwrite`: then the rows of the files it
  removed as `-D`, followed by the rows of the files it added;
- the first, full read of a stream (`full_scan_levels`) skips the levels whose changes are
  still to come as changelog: level 0 for `lookup`, all but the top level for
  `full-compaction`.
Rows carry their row kind ('+I', '-U', '+U', '-D'); append tables' rows are all '+I'. Batch
reads (`Table.scan`) never read changelog files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn import features, partition
from tarn.data.reader import FileReader
from tarn.errors import UnsupportedFeature
from tarn.lsm.kv import DELETE as DELETE_KIND
from tarn.lsm.kv import INSERT, ROW_KIND_NAMES, UPDATE_AFTER, VALUE_KIND
from tarn.lsm.policy import num_levels
from tarn.meta import snapshot as snap
from tarn.meta.manifest import ADD, DELETE, DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.options import Options
from tarn.scan.planner import Planner, Split, planner_for
from tarn.types import arrow_schema

ROW_KIND = "_ROW_KIND"
KIND_NAMES = pa.array(sorted(ROW_KIND_NAMES, key=ROW_KIND_NAMES.get))  # index = kind code


@dataclass(frozen=True)
class AddedFile:
    """A data or changelog file a stream reads, and the directory it lives in. `removed`: a file
    an OVERWRITE took away, whose rows the stream retracts (-D)."""

    bucket_path: str
    meta: DataFileMeta
    removed: bool = False
    bucket: int = 0


def stream_files(planner: Planner, root: str, schema: TableSchema, snapshot: Snapshot,
                 read_overwrite: bool | None = None) -> list[AddedFile]:
    """The files whose rows a stream reads from `snapshot` (see the module docstring);
    `read_overwrite` defaults to what the table's options say (`reads_overwrite`)."""
    features.check_stream_read(planner.name, schema)
    options = schema.shape.options
    if read_overwrite is None:
        read_overwrite = reads_overwrite(schema, options)
    if options.changelog_producer != "none" and schema.primary_keys:
        return _files_of(planner, root, schema, snapshot.changelog_manifest_list)
    if snapshot.commit_kind == snap.APPEND:
        return _whole_rows(planner.name, snapshot, _files_of(planner, root, schema, snapshot.delta_manifest_list))
    if snapshot.commit_kind == snap.OVERWRITE and read_overwrite:
        if not schema.primary_keys:  # Java reads an append table's overwrite as its added files
            return _files_of(planner, root, schema, snapshot.delta_manifest_list)
        files = _files_of(planner, root, schema, snapshot.delta_manifest_list, with_removed=True)
        return [f for f in files if f.removed] + [f for f in files if not f.removed]
    return []


def _whole_rows(table_name: str, snapshot: Snapshot, files: list[AddedFile]) -> list[AddedFile]:
    """A data-evolution update (files of some columns of existing rows) is no stream of rows:
    refused by name rather than read as rows missing columns."""
    for f in files:
        if f.meta.write_cols is not None and f.meta.first_row_id is not None:
            raise UnsupportedFeature(
                f"table {table_name}: snapshot {snapshot.id} updates columns {list(f.meta.write_cols)} of existing "
                "rows (data evolution, file " + f.meta.file_name + "); tarn's streaming reads take appended rows "
                "only, so reading this snapshot as a stream is refused (batch reads see the update)")
    return files


def reads_overwrite(schema: TableSchema, options: Options) -> bool:
    """Does a stream read OVERWRITE snapshots? `streaming-read-overwrite` for primary-key
    tables (removed rows as -D, then the added ones), `streaming-read-append-overwrite` for
    append tables (the added rows), as Java's tables decide it."""
    if schema.primary_keys:
        return bool(options.bool("streaming-read-overwrite"))
    return bool(options.bool("streaming-read-append-overwrite"))


def committed_files(planner: Planner, root: str, schema: TableSchema, snapshot: Snapshot) -> list[AddedFile]:
    """Every file `snapshot`'s delta or changelog added, whatever a stream would read of it."""
    return (_files_of(planner, root, schema, snapshot.delta_manifest_list)
            + _files_of(planner, root, schema, snapshot.changelog_manifest_list))


def _files_of(planner: Planner, root: str, schema: TableSchema, manifest_list: str | None,
              with_removed: bool = False) -> list[AddedFile]:
    """The ADD entries (and with `with_removed` the DELETE entries, flagged `removed`) of a
    manifest list, with their directories."""
    if not manifest_list:
        return []
    default_name = schema.shape.options.get("partition.default-name")
    files = []
    for meta in planner.manifests.read_manifest_list(manifest_list):
        for entry in planner.manifests.read_manifest(meta.file_name):
            if entry.kind != ADD and not (with_removed and entry.kind == DELETE):
                continue
            values = planner.partition_values(entry.partition)
            files.append(AddedFile(partition.bucket_path(root, schema, default_name, values, entry.bucket),
                                   entry.file, entry.kind == DELETE, entry.bucket))
    return files


def file_rows(reader: FileReader, schema: TableSchema, f: AddedFile, fields) -> tuple[pa.Table, pa.Array]:
    """One file's rows (columns `fields`) and their row-kind codes: stored kinds for primary-key
    files, +I for append files; a removed file's live rows (+I/+U) as -D."""
    key_value = bool(schema.primary_keys)
    data = reader.read(f.bucket_path, f.meta, fields, with_system=key_value)
    if key_value:
        kinds = data.column(VALUE_KIND).combine_chunks().cast(pa.int8())
        data = data.select([x.name for x in fields])
    else:
        kinds = pa.array(np.zeros(data.num_rows, dtype=np.int8))
    if f.removed:
        live = pc.or_(pc.equal(kinds, INSERT), pc.equal(kinds, UPDATE_AFTER))
        data = data.filter(live)
        kinds = pa.array(np.full(data.num_rows, DELETE_KIND, dtype=np.int8))
    return data, kinds


def read_changes(reader: FileReader, schema: TableSchema, files: list[AddedFile]) -> pa.Table:
    """The files' rows with a `_ROW_KIND` column first."""
    fields = list(schema.fields)
    output = pa.schema([pa.field(ROW_KIND, pa.string(), nullable=False), *arrow_schema(fields)])
    parts = []
    for f in files:
        data, kinds = file_rows(reader, schema, f, fields)
        parts.append(data.add_column(0, ROW_KIND, pc.take(KIND_NAMES, kinds.cast(pa.int32()))).cast(output))
    if not parts:
        return output.empty_table()
    return pa.concat_tables(parts)


def snapshot_changes(table, snapshot_id: int) -> pa.Table:
    """`Table.changes`: the rows a stream reads from snapshot `snapshot_id` of `table`."""
    snapshot = table.changes_of(snapshot_id)
    schema = table.schema_by_id(snapshot.schema_id)
    files = stream_files(planner_for(table, schema), table.root, schema, snapshot,
                         reads_overwrite(schema, table.schema().shape.options))
    reader = FileReader(table.file_io, schema, table.schema_by_id, schema.shape.options)
    return read_changes(reader, schema, files)


def full_scan_levels(schema: TableSchema) -> Callable[[int], bool]:
    """Which levels the first, full read of a stream takes (as Java's stream scan): with the
    lookup producer not level 0 (its rows reach the changelog when compacted), with
    full-compaction only the top level; everything otherwise."""
    options = schema.shape.options
    producer = options.changelog_producer if schema.primary_keys else "none"
    if producer == "lookup":
        return lambda level: level > 0
    if producer == "full-compaction":
        top = num_levels(options) - 1
        return lambda level: level == top
    return lambda level: True


def keep_levels(splits: list[Split], wanted: Callable[[int], bool]) -> list[Split]:
    """The splits with only the files of the wanted levels (empty splits dropped)."""
    kept = [replace(s, files=[f for f in s.files if wanted(f.level)]) for s in splits]
    return [s for s in kept if s.files]
