"""Paimon's system tables (`<table>$snapshots`, `$schemas`, ...) as Arrow tables, with Paimon's
column names, order, types and nullability (table/system/*Table.java).

Timestamps follow Java: TIMESTAMP(3) without zone. Commit and schema times are epoch millis
shown in the local time zone; file creation times are stored as local wall clock already and
are shown unchanged. Text columns render values as Java does: partitions through Paimon's
CAST to STRING (`{v1, v2}` for a partition row), keys and stats through the Java `toString`
of Paimon's internal values (a DATE is its epoch day, a TIMESTAMP `2024-01-01T00:00`).

Deletion vectors: `$table_indexes` lists the index files of the latest snapshot as Java's
TableIndexesTable does (2.0 columns). `$files` has one column Java lacks, appended last:
`deleted_row_count`, the rows of the file its deletion vector marks deleted (the index
manifest's cardinality; the vector is read only if that is missing). It is 0 for a file without
a vector in a deletion-vector table (option `deletion-vectors.enabled`, or a snapshot holding
deletion-vector index files) and null in other tables. `deleteRowCount` stays Java's: the
file's own delete rows (-D/-U records).

`$statistics` is Java's StatisticTable: one row for the statistics the latest snapshot carries
(`colstat` = the per-column records as pretty JSON), none without statistics.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from tarn import partition as partitions
from tarn.codec.binary_row import deserialize_row
from tarn.errors import InvalidArgument
from tarn.ops.analyze import statistics_table
from tarn.ops.branches import list_branches
from tarn.meta.manifest import APPEND_SOURCE, DELETION_VECTORS_INDEX, DataFileMeta
from tarn.meta.snapshot import Snapshot
from tarn.meta.schema import TableSchema
from tarn.stats import decode_stats
from tarn.scan.planner import planner_for
from tarn.scan.planner import stats_fields as stats_fields_of
from tarn.store.deletion_vectors import DeletionVectorFiles, deleted_row_counts, live_index_entries
from tarn.types import DataType, field_to_json

if TYPE_CHECKING:
    from tarn.store.context import TableContext

TS = pa.timestamp("ms")
STR = pa.string()
I64 = pa.int64()
I32 = pa.int32()


def _schema(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
    return pa.schema([pa.field(name, t, nullable=nullable) for name, t, nullable in fields])


SNAPSHOTS_SCHEMA = _schema(
    ("snapshot_id", I64, False), ("schema_id", I64, False), ("commit_user", STR, False),
    ("commit_identifier", I64, False), ("commit_kind", STR, False), ("commit_time", TS, False),
    ("base_manifest_list", STR, False), ("delta_manifest_list", STR, False),
    ("changelog_manifest_list", STR, True), ("total_record_count", I64, True),
    ("delta_record_count", I64, True), ("changelog_record_count", I64, True), ("watermark", I64, True),
    ("next_row_id", I64, True), ("operation", STR, True), ("writer_version", STR, True))
SCHEMAS_SCHEMA = _schema(
    ("schema_id", I64, False), ("fields", STR, False), ("partition_keys", STR, False),
    ("primary_keys", STR, False), ("options", STR, False), ("comment", STR, True), ("update_time", TS, False))
OPTIONS_SCHEMA = _schema(("key", STR, False), ("value", STR, False))
TAGS_SCHEMA = _schema(
    ("tag_name", STR, False), ("snapshot_id", I64, False), ("schema_id", I64, False),
    ("commit_time", TS, False), ("record_count", I64, True), ("create_time", TS, True),
    ("time_retained", STR, True))
FILES_SCHEMA = _schema(
    ("partition", STR, True), ("bucket", I32, False), ("file_path", STR, False), ("file_format", STR, False),
    ("schema_id", I64, False), ("level", I32, False), ("record_count", I64, False),
    ("file_size_in_bytes", I64, False), ("min_key", STR, True), ("max_key", STR, True),
    ("null_value_counts", STR, False), ("min_value_stats", STR, False), ("max_value_stats", STR, False),
    ("min_sequence_number", I64, True), ("max_sequence_number", I64, True), ("creation_time", TS, True),
    ("deleteRowCount", I64, True), ("file_source", STR, True), ("first_row_id", I64, True),
    ("write_cols", pa.list_(STR), True), ("deleted_row_count", I64, True))
MANIFESTS_SCHEMA = _schema(
    ("file_name", STR, False), ("file_size", I64, False), ("num_added_files", I64, False),
    ("num_deleted_files", I64, False), ("schema_id", I64, False), ("min_partition_stats", STR, True),
    ("max_partition_stats", STR, True), ("min_row_id", I64, True), ("max_row_id", I64, True))
PARTITIONS_SCHEMA = _schema(
    ("partition", STR, True), ("record_count", I64, False), ("file_size_in_bytes", I64, False),
    ("file_count", I64, False), ("last_update_time", TS, True), ("created_at", TS, True),
    ("created_by", STR, True), ("updated_by", STR, True), ("options", STR, True),
    ("total_buckets", I32, False), ("done", pa.bool_(), False), ("deleted_record_count", I64, True))
BUCKETS_SCHEMA = _schema(
    ("partition", STR, True), ("bucket", I32, False), ("record_count", I64, False),
    ("file_size_in_bytes", I64, False), ("file_count", I64, False), ("last_update_time", TS, True))
CONSUMERS_SCHEMA = _schema(("consumer_id", STR, False), ("next_snapshot_id", I64, False))
BRANCHES_SCHEMA = _schema(("branch_name", STR, False), ("create_time", TS, False))
DV_RANGE_TYPE = pa.struct([pa.field("f0", STR, nullable=False), pa.field("f1", I32, nullable=False),
                           pa.field("f2", I32, nullable=False), pa.field("_CARDINALITY", I64, nullable=True)])
TABLE_INDEXES_SCHEMA = _schema(
    ("partition", STR, True), ("bucket", I32, False), ("index_type", STR, False), ("file_name", STR, False),
    ("file_size", I64, False), ("row_count", I64, False), ("dv_ranges", pa.list_(DV_RANGE_TYPE), True),
    ("row_range_start", I64, True), ("row_range_end", I64, True), ("index_field_id", I32, True),
    ("index_field_name", STR, True))


def _rows(schema: pa.Schema, rows: list[tuple]) -> pa.Table:
    columns = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.table([pa.array(list(c), type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _local_time(millis: int | None) -> dt.datetime | None:
    """Epoch millis as the local wall clock (Java LocalDateTime.ofInstant(..., systemDefault))."""
    if millis is None:
        return None
    seconds, ms = divmod(millis, 1000)
    return dt.datetime.fromtimestamp(seconds).replace(microsecond=ms * 1000)


def _wall_clock(millis: int | None) -> dt.datetime | None:
    """A stored local wall clock (epoch millis of the wall clock taken as UTC), unchanged."""
    if millis is None:
        return None
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)


def _flat_json(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Java text forms


def java_double_text(value: float, single: bool = False) -> str:
    """Float.toString / Double.toString."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    if single:
        import numpy as np
        shortest = np.format_float_positional(np.float32(value), unique=True)
    else:
        shortest = repr(value)
    sign, digits, exponent = decimal.Decimal(shortest).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + exponent  # decimal exponent of the first digit, plus one
    prefix = "-" if sign else ""
    if -3 < point <= 7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{prefix}{whole}.{frac or '0'}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{point - 1}"


def _java_local_datetime(value: dt.datetime) -> str:
    """LocalDateTime.toString: seconds dropped when zero, fraction in 3/6/9 digits."""
    value = value.replace(tzinfo=None) if isinstance(value, dt.datetime) else value
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}"
    nanos = getattr(value, "nanosecond", 0) + value.microsecond * 1000
    if value.second or nanos:
        text += f":{value.second:02d}"
    if nanos:
        frac = f"{nanos:09d}"
        text += "." + (frac[:3] if frac.endswith("000000") else frac[:6] if frac.endswith("000") else frac)
    return text


def internal_text(value, t: DataType) -> str:
    """Java toString of Paimon's internal value (stats maps, key arrays of `$files`)."""
    if value is None:
        return "null"
    root = t.root
    if isinstance(value, bool):
        return "true" if value else "false"
    if root == "DATE":
        return str((value - dt.date(1970, 1, 1)).days)
    if root == "TIME":
        return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _java_local_datetime(value)
    if root in ("FLOAT", "DOUBLE"):
        return java_double_text(value, root == "FLOAT")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    return str(value)


def cast_text(value, t: DataType) -> str:
    """Paimon's CAST(value AS STRING) (partition values)."""
    root = t.root
    if isinstance(value, bool):
        return "true" if value else "false"
    if root == "DATE":
        return value.isoformat()
    if root == "TIME":
        return value.isoformat(timespec="milliseconds" if (t.precision or 0) > 0 else "seconds")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        precision = t.precision if t.precision is not None else 6
        text = value.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S")
        if precision > 0:
            text += "." + f"{value.microsecond:06d}{getattr(value, 'nanosecond', 0):03d}"[:precision]
        return text
    if root in ("FLOAT", "DOUBLE"):
        return java_double_text(value, root == "FLOAT")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _row_text(values: list, types: list[DataType]) -> str:
    """RowToStringCastRule: `{v1, v2}` with `null` for nulls."""
    return "{" + ", ".join("null" if v is None else cast_text(v, t) for v, t in zip(values, types)) + "}"


def java_duration_text(value: dt.timedelta) -> str:
    """java.time.Duration.toString for non-negative durations ('PT24H', 'PT1H30M', 'PT0.5S')."""
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    seconds, micro_part = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = "PT"
    if hours:
        text += f"{hours}H"
    if minutes:
        text += f"{minutes}M"
    if secs or micro_part or text == "PT":
        text += str(secs)
        if micro_part:
            text += "." + f"{micro_part:06d}".rstrip("0")
        text += "S"
    return text


# ---------------------------------------------------------------------------------------------
# the tables


def snapshots_table(table: "TableContext") -> pa.Table:
    store = table.snapshot_store
    rows = []
    for snapshot_id in store.list_ids():
        s = store.get(snapshot_id)
        rows.append((s.id, s.schema_id, s.commit_user, s.commit_identifier, s.commit_kind,
                     _local_time(s.time_millis), s.base_manifest_list, s.delta_manifest_list,
                     s.changelog_manifest_list, s.total_record_count, s.delta_record_count,
                     s.changelog_record_count, s.watermark, s.next_row_id, s.operation,
                     s.writer_version))
    return _rows(SNAPSHOTS_SCHEMA, rows)


def schemas_table(table: "TableContext") -> pa.Table:
    rows = []
    for schema_id in table.schema_store.list_ids():
        s = table.schema_by_id(schema_id)
        rows.append((s.id, _flat_json([field_to_json(f) for f in s.fields]), _flat_json(list(s.partition_keys)),
                     _flat_json(list(s.primary_keys)), _flat_json(dict(s.options)), s.comment,
                     _local_time(s.time_millis)))
    return _rows(SCHEMAS_SCHEMA, rows)


def options_table(table: "TableContext") -> pa.Table:
    return _rows(OPTIONS_SCHEMA, [(k, v) for k, v in table.schema().options.items()])


def tags_table(table: "TableContext") -> pa.Table:
    tags = sorted(table.tag_store.tags(), key=lambda t: t.name)
    rows = [(t.name, t.snapshot.id, t.snapshot.schema_id, _local_time(t.snapshot.time_millis),
             t.snapshot.total_record_count, t.create_time,
             None if t.time_retained is None else java_duration_text(t.time_retained)) for t in tags]
    return _rows(TAGS_SCHEMA, rows)


def branches_table(table: "TableContext") -> pa.Table:
    """Paimon's `$branches`: every branch but main (whichever branch it is asked on)."""
    return _rows(BRANCHES_SCHEMA, [(b.name, b.create_time) for b in list_branches(table)])


def consumers_table(table: "TableContext") -> pa.Table:
    consumers = table.consumer_store.consumers()
    return _rows(CONSUMERS_SCHEMA, sorted(consumers.items()))


def manifests_table(table: "TableContext", snapshot: Snapshot | None = None) -> pa.Table:
    snapshot = snapshot or table.latest_snapshot()
    if snapshot is None:
        return _rows(MANIFESTS_SCHEMA, [])
    schema = table.schema()
    types = [schema.field(k).type for k in schema.partition_keys]
    rows = []
    for m in planner_for(table, schema).manifest_metas(snapshot):
        rows.append((m.file_name, m.file_size, m.num_added_files, m.num_deleted_files, m.schema_id,
                     _stats_row_text(m.partition_stats.min_values, types),
                     _stats_row_text(m.partition_stats.max_values, types), m.min_row_id, m.max_row_id))
    return _rows(MANIFESTS_SCHEMA, rows)


def _stats_row_text(data: bytes, types: list[DataType]) -> str:
    if int.from_bytes(data[:4], "big") != len(types):
        return _row_text([None] * len(types), types)
    return _row_text(deserialize_row(data, types), types)


def files_table(table: "TableContext", snapshot: Snapshot | None = None) -> pa.Table:
    """Every live data file (all levels), by partition, bucket and sequence."""
    snapshot = snapshot or table.latest_snapshot()
    if snapshot is None:
        return _rows(FILES_SCHEMA, [])
    schema = table.schema()
    types = [schema.field(k).type for k in schema.partition_keys]
    planner = planner_for(table, schema)
    default_name = table.options.get("partition.default-name")
    entries = sorted(planner.live_entries(snapshot),
                     key=lambda e: (e.partition, e.bucket, e.file.min_sequence_number, e.file.file_name))
    deleted = _deleted_rows_by_file(table, planner, snapshot)
    rows = []
    for e in entries:
        values = planner.partition_values(e.partition)
        bucket_path = partitions.bucket_path(table.root, schema, default_name, values, e.bucket)
        row = _file_row(table, schema, _row_text(list(values), types), e.bucket, bucket_path, e.file)
        count = None if deleted is None else deleted.get((e.partition, e.bucket, e.file.file_name), 0)
        rows.append(row + (count,))
    return _rows(FILES_SCHEMA, rows)


def _deleted_rows_by_file(table: "TableContext", planner, snapshot: Snapshot) -> dict | None:
    """(partition, bucket, file name) -> rows its deletion vector deletes; None: no DV table."""
    index_entries = live_index_entries(planner.manifests, snapshot)
    holds_vectors = any(e.index_type == DELETION_VECTORS_INDEX for e in index_entries)
    if not holds_vectors and not table.schema().shape.deletion_vectors:
        return None
    return deleted_row_counts(DeletionVectorFiles(table.file_io, table.root, table.schema()), index_entries)


def _file_row(table: "TableContext", schema: TableSchema, partition: str, bucket: int, bucket_path: str,
              f: DataFileMeta) -> tuple:
    file_schema = table.schema_by_id(f.schema_id)
    nulls, mins, maxs = _stats_maps(schema, file_schema, f)
    return (partition, bucket, f.external_path or f"{bucket_path}/{f.file_name}",
            f.file_name.rsplit(".", 1)[-1] if "." in f.file_name else "", f.schema_id, f.level,
            f.row_count, f.file_size, _key_text(f.min_key, file_schema), _key_text(f.max_key, file_schema),
            nulls, mins, maxs, f.min_sequence_number, f.max_sequence_number, _wall_clock(f.creation_time),
            f.delete_row_count, None if f.file_source is None else
            ("APPEND" if f.file_source == APPEND_SOURCE else "COMPACT"),
            f.first_row_id, None if f.write_cols is None else list(f.write_cols))


def _key_text(key: bytes, file_schema: TableSchema) -> str | None:
    if len(key) < 4 or int.from_bytes(key[:4], "big") == 0:
        return None
    types = [file_schema.field(k).type for k in file_schema.trimmed_primary_keys]
    values = deserialize_row(key, types)
    return "[" + ", ".join(internal_text(v, t) for v, t in zip(values, types)) + "]"


def _stats_maps(schema: TableSchema, file_schema: TableSchema, f: DataFileMeta) -> tuple[str, str, str]:
    """`{col=value, ...}` maps (sorted by column) of null counts, minima and maxima, mapped to
    the current columns by field id; columns the file lacks count every row as null."""
    stats_fields = stats_fields_of(f, file_schema) or []
    try:
        mins, maxs, nulls = decode_stats(f.value_stats, stats_fields)
    except Exception:
        mins = maxs = nulls = [None] * len(stats_fields)
    by_id = {field.id: i for i, field in enumerate(stats_fields)}
    null_map, min_map, max_map = {}, {}, {}
    for field in schema.fields:
        i = by_id.get(field.id)
        if i is None:
            null_map[field.name], min_map[field.name], max_map[field.name] = str(f.row_count), "null", "null"
            continue
        null_map[field.name] = "null" if nulls[i] is None else str(nulls[i])
        min_map[field.name] = internal_text(mins[i], field.type)
        max_map[field.name] = internal_text(maxs[i], field.type)
    return tuple("{" + ", ".join(f"{k}={m[k]}" for k in sorted(m)) + "}" for m in (null_map, min_map, max_map))


def _live_by_bucket(table: "TableContext", snapshot: Snapshot | None):
    schema = table.schema()
    if snapshot is None:
        return schema, []
    planner = planner_for(table, schema)
    return schema, [(e, planner.partition_values(e.partition)) for e in planner.live_entries(snapshot)]


def partitions_table(table: "TableContext", snapshot: Snapshot | None = None) -> pa.Table:
    snapshot = snapshot or table.latest_snapshot()
    schema, entries = _live_by_bucket(table, snapshot)
    default_name = table.options.get("partition.default-name")
    deleted = _deleted_rows_by_partition(table, schema, snapshot)
    groups: dict[bytes, list] = {}
    for entry, values in entries:
        g = groups.setdefault(entry.partition, [values, 0, 0, 0, None, entry.total_buckets])
        g[1] += entry.file.row_count
        g[2] += entry.file.file_size
        g[3] += 1
        if entry.file.creation_time is not None:
            g[4] = entry.file.creation_time if g[4] is None else max(g[4], entry.file.creation_time)
    rows = []
    for partition, (values, records, size, count, created, total_buckets) in groups.items():
        text = "/".join(f"{k}={default_name if v is None else cast_text(v, schema.field(k).type)}"
                        for k, v in zip(schema.partition_keys, values))
        rows.append((text, records, size, count, _wall_clock(created), None, None, None, None,
                     total_buckets, False, deleted.get(partition, 0)))
    rows.sort(key=lambda r: r[0])
    return _rows(PARTITIONS_SCHEMA, rows)


def _deleted_rows_by_partition(table: "TableContext", schema: TableSchema, snapshot: Snapshot | None) -> dict:
    if snapshot is None or snapshot.index_manifest is None or not table.schema().shape.deletion_vectors:
        return {}
    deleted: dict[bytes, int] = {}
    entries = live_index_entries(planner_for(table, schema).manifests, snapshot)
    for (partition, _, _), count in deleted_row_counts(DeletionVectorFiles(table.file_io, table.root, table.schema()),
                                                       entries).items():
        deleted[partition] = deleted.get(partition, 0) + count
    return deleted


def table_indexes_table(table: "TableContext", snapshot: Snapshot | None = None) -> pa.Table:
    """The index files (deletion vectors, dynamic-bucket hashes, global indexes) of a snapshot,
    in index manifest order (Java's TableIndexesTable)."""
    snapshot = snapshot or table.latest_snapshot()
    if snapshot is None:
        return _rows(TABLE_INDEXES_SCHEMA, [])
    schema = table.schema()
    types = [schema.field(k).type for k in schema.partition_keys]
    planner = planner_for(table, schema)
    names = {f.id: f.name for f in schema.fields}
    rows = []
    for e in live_index_entries(planner.manifests, snapshot):
        ranges = None if e.dv_ranges is None else [
            {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
            for r in e.dv_ranges]
        g = e.global_index
        field_name = None
        if g is not None:
            ids = [g["_INDEX_FIELD_ID"], *(g.get("_EXTRA_FIELD_IDS") or [])]
            if all(i in names for i in ids):  # Java leaves it null when a column was dropped
                field_name = ",".join(names[i] for i in ids)
        rows.append((_row_text(list(planner.partition_values(e.partition)), types), e.bucket, e.index_type,
                     e.file_name, e.file_size, e.row_count, ranges,
                     None if g is None else g["_ROW_RANGE_START"], None if g is None else g["_ROW_RANGE_END"],
                     None if g is None else g["_INDEX_FIELD_ID"], field_name))
    return _rows(TABLE_INDEXES_SCHEMA, rows)


def buckets_table(table: "TableContext", snapshot: Snapshot | None = None) -> pa.Table:
    snapshot = snapshot or table.latest_snapshot()
    schema, entries = _live_by_bucket(table, snapshot)
    types = [schema.field(k).type for k in schema.partition_keys]
    groups: dict[tuple, list] = {}
    for entry, values in entries:
        g = groups.setdefault((entry.partition, entry.bucket), [_row_text(list(values), types), 0, 0, 0, None])
        g[1] += entry.file.row_count
        g[2] += entry.file.file_size
        g[3] += 1
        if entry.file.creation_time is not None:
            g[4] = entry.file.creation_time if g[4] is None else max(g[4], entry.file.creation_time)
    rows = [(text, bucket, records, size, count, _wall_clock(created))
            for (_, bucket), (text, records, size, count, created) in groups.items()]
    rows.sort(key=lambda r: (r[0], r[1]))
    return _rows(BUCKETS_SCHEMA, rows)


def row_tracking_table(table: "TableContext", snapshot: Snapshot | None = None) -> pa.Table:
    """Paimon's `$row_tracking`: every column of a row-tracking table, then `_ROW_ID` and
    `_SEQUENCE_NUMBER` (RowTrackingTable)."""
    from tarn.scan.scan import Scan

    schema = table.schema()
    if not schema.shape.tracks_rows:
        raise InvalidArgument(f"table {table.name}: $row_tracking exists only on tables with "
                              "'row-tracking.enabled' = 'true'")
    snapshot = snapshot or table.latest_snapshot()
    return Scan(table, schema, snapshot, columns=[*schema.field_names, "_ROW_ID", "_SEQUENCE_NUMBER"]).to_arrow()


SYSTEM_TABLES: dict[str, Callable[["TableContext"], pa.Table]] = {
    "row_tracking": row_tracking_table,
    "snapshots": snapshots_table,
    "schemas": schemas_table,
    "options": options_table,
    "tags": tags_table,
    "files": files_table,
    "manifests": manifests_table,
    "partitions": partitions_table,
    "buckets": buckets_table,
    "consumers": consumers_table,
    "branches": branches_table,
    "table_indexes": table_indexes_table,
    "statistics": statistics_table,
}


def system_table(table: "TableContext", name: str) -> pa.Table:
    """The system table `name` ('tags' or '$tags', ...) of `table` as an Arrow table."""
    key = name[1:] if isinstance(name, str) and name.startswith("$") else name
    builder = SYSTEM_TABLES.get(key.lower() if isinstance(key, str) else key)
    if builder is None:
        raise InvalidArgument(f"table {table.name}: unknown system table {name!r} "
                              f"(known: {', '.join('$' + n for n in SYSTEM_TABLES)})")
    return builder(table)
