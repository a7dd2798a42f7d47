"""Every field of Paimon's metadata files, and what each does to tarn: the metadata half of the
feature table (the option half is `Opt.effect` in tarn/options.py).

One `FileField` per field of the schema JSON, the snapshot JSON (and the two keys a tag file
adds), the Avro records of manifests (ManifestEntry, its DataFileMeta and SimpleStats), of
manifest lists (ManifestFileMeta) and of index manifests (IndexManifestEntry with its
deletion-vector ranges and global-index meta), as Java Paimon 2.0 writes them, plus the index
type strings Paimon 2.0 writes into `_INDEX_TYPE`. `effect`:

- ACTED: tarn reads and writes the field as Paimon does;
- CARRIED: no effect on what tarn reads or writes; tarn keeps it (or leaves it out when Paimon
  may too);
- READS / WRITES: a non-null (or non-default) value means semantics tarn lacks; the note says
  which values.

`since` is the first Paimon release whose sources write the field ("2.1": Paimon master only).
Data only: tarn/features.py and the options guide read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tarn.options import ACTED, CARRIED, READS, WRITES, Effect  # noqa: F401  (a field may take any effect)


@dataclass(frozen=True)
class FileField:
    """One field of one metadata file (`file`: a key of FILES)."""

    file: str
    name: str
    effect: Effect
    since: str
    note: str = ""


# The files (and nested records), in the guide's order, with what each is.
FILES: dict[str, str] = {
    "schema": "schema JSON (`schema/schema-<id>`, TableSchema)",
    "schema field": "one entry of the schema's `fields` (DataField)",
    "snapshot": "snapshot JSON (`snapshot/snapshot-<id>`; a tag file holds the same)",
    "tag": "keys a tag file (`tag/tag-<name>`) adds to its snapshot",
    "manifest entry": "manifest file record (ManifestEntry, Avro)",
    "data file": "`_FILE` of a manifest entry (DataFileMeta)",
    "stats": "`_KEY_STATS`, `_VALUE_STATS` and `_PARTITION_STATS` (SimpleStats)",
    "manifest list": "manifest list record (ManifestFileMeta, Avro)",
    "index manifest entry": "index manifest record (IndexManifestEntry, Avro)",
    "deletion vector range": "one item of `_DELETIONS_VECTORS_RANGES` (DeletionVectorMeta)",
    "global index": "`_GLOBAL_INDEX` of an index manifest entry (GlobalIndexMeta)",
    "index type": "`_INDEX_TYPE` values Paimon 2.0 writes",
}

_GLOBAL = "a global or primary-key index: kept untouched, not used (tables that maintain one refuse tarn's writes)"

FILE_FIELDS: tuple[FileField, ...] = (
    # --- schema JSON (SchemaSerializer)
    FileField("schema", "version", ACTED, "0.8", "1 to 3 read (Java's defaults for old versions); tarn writes 3"),
    FileField("schema", "id", ACTED, "0.4"),
    FileField("schema", "fields", ACTED, "0.4", "types tarn lacks load verbatim and are refused per column"),
    FileField("schema", "highestFieldId", ACTED, "0.4"),
    FileField("schema", "partitionKeys", ACTED, "0.4"),
    FileField("schema", "primaryKeys", ACTED, "0.4"),
    FileField("schema", "options", ACTED, "0.4", "each key per the options table"),
    FileField("schema", "comment", ACTED, "0.4"),
    FileField("schema", "timeMillis", ACTED, "0.5"),
    FileField("schema field", "id", ACTED, "0.4"),
    FileField("schema field", "name", ACTED, "0.4"),
    FileField("schema field", "type", ACTED, "0.4"),
    FileField("schema field", "description", ACTED, "0.4"),
    FileField("schema field", "defaultValue", ACTED, "1.2", "fills nulls of the column as Paimon does"),
    # --- snapshot JSON (Snapshot)
    FileField("snapshot", "version", ACTED, "0.4", "tarn writes 3"),
    FileField("snapshot", "uuid", ACTED, "2.0", "a fresh one per commit; tells a retried commit its own snapshot"),
    FileField("snapshot", "id", ACTED, "0.4"),
    FileField("snapshot", "schemaId", ACTED, "0.4"),
    FileField("snapshot", "baseManifestList", ACTED, "0.4"),
    FileField("snapshot", "baseManifestListSize", ACTED, "1.1"),
    FileField("snapshot", "deltaManifestList", ACTED, "0.4"),
    FileField("snapshot", "deltaManifestListSize", ACTED, "1.1"),
    FileField("snapshot", "changelogManifestList", ACTED, "0.4"),
    FileField("snapshot", "changelogManifestListSize", ACTED, "1.1"),
    FileField("snapshot", "indexManifest", ACTED, "0.5"),
    FileField("snapshot", "commitUser", ACTED, "0.4"),
    FileField("snapshot", "commitIdentifier", ACTED, "0.4"),
    FileField("snapshot", "commitKind", ACTED, "0.4", "APPEND, COMPACT, OVERWRITE, ANALYZE"),
    FileField("snapshot", "timeMillis", ACTED, "0.4"),
    FileField("snapshot", "logOffsets", CARRIED, "0.4", "log-system offsets, gone since 1.4; Paimon 2.0 ignores them"),
    FileField("snapshot", "totalRecordCount", ACTED, "0.4"),
    FileField("snapshot", "deltaRecordCount", ACTED, "0.4"),
    FileField("snapshot", "changelogRecordCount", ACTED, "0.4"),
    FileField("snapshot", "watermark", ACTED, "0.5", "the latest watermark, carried to each new snapshot"),
    FileField("snapshot", "statistics", ACTED, "0.7", "carried while the schema is the one analyzed"),
    FileField("snapshot", "properties", CARRIED, "1.2",
              "per commit, not inherited; tarn writes only its own commit's"),
    FileField("snapshot", "nextRowId", ACTED, "1.3",
              "row-tracking tables: advanced by the row ids a commit assigns; others: carried on"),
    FileField("snapshot", "operation", CARRIED, "2.0", "SQL operation of the commit (TRUNCATE, ...); tarn writes none"),
    FileField("snapshot", "writerVersion", ACTED, "2.1",
              "who wrote the snapshot (pypaimon writes python-<version>); tarn writes python-tarn-<version>"),
    FileField("tag", "tagCreateTime", ACTED, "0.8"),
    FileField("tag", "tagTimeRetained", ACTED, "0.8"),
    # --- manifest entry (ManifestEntry)
    FileField("manifest entry", "_VERSION", ACTED, "0.4", "2"),
    FileField("manifest entry", "_KIND", ACTED, "0.4", "ADD or DELETE"),
    FileField("manifest entry", "_PARTITION", ACTED, "0.4"),
    FileField("manifest entry", "_BUCKET", ACTED, "0.4", "-2: postponed files, skipped by batch reads until the postpone compaction places them (merged on read with postpone.merge-on-read)"),
    FileField("manifest entry", "_TOTAL_BUCKETS", ACTED, "0.4"),
    FileField("manifest entry", "_FILE", ACTED, "0.4"),
    # --- data file (DataFileMeta)
    FileField("data file", "_FILE_NAME", ACTED, "0.4",
              "the format is the extension's; files tarn cannot read are refused"),
    FileField("data file", "_FILE_SIZE", ACTED, "0.4"),
    FileField("data file", "_ROW_COUNT", ACTED, "0.4"),
    FileField("data file", "_MIN_KEY", ACTED, "0.4"),
    FileField("data file", "_MAX_KEY", ACTED, "0.4"),
    FileField("data file", "_KEY_STATS", ACTED, "0.4"),
    FileField("data file", "_VALUE_STATS", ACTED, "0.4"),
    FileField("data file", "_MIN_SEQUENCE_NUMBER", ACTED, "0.4"),
    FileField("data file", "_MAX_SEQUENCE_NUMBER", ACTED, "0.4"),
    FileField("data file", "_SCHEMA_ID", ACTED, "0.4"),
    FileField("data file", "_LEVEL", ACTED, "0.4"),
    FileField("data file", "_EXTRA_FILES", ACTED, "0.4", "file-index files beside the data file"),
    FileField("data file", "_CREATION_TIME", ACTED, "0.4"),
    FileField("data file", "_DELETE_ROW_COUNT", ACTED, "0.8"),
    FileField("data file", "_EMBEDDED_FILE_INDEX", ACTED, "0.8"),
    FileField("data file", "_FILE_SOURCE", ACTED, "0.9", "APPEND or COMPACT"),
    FileField("data file", "_VALUE_STATS_COLS", ACTED, "1.0"),
    FileField("data file", "_EXTERNAL_PATH", ACTED, "1.0",
              "read from there and kept on copies; tarn's own files have none"),
    FileField("data file", "_FIRST_ROW_ID", ACTED, "1.3",
              "row ids of the file's rows (row-tracking tables; elsewhere writes are refused)"),
    FileField("data file", "_WRITE_COLS", ACTED, "1.3",
              "the columns a file holds; stitched by row-id range on row-tracking tables"),
    FileField("data file", "_WRITE_COLS_SEQUENCES", CARRIED, "2.1",
              "Paimon master: the highest sequence per written column, read only by Java's global-index "
              "refresh planning; kept on every copy of the entry; tarn's new files write null (every "
              "column at the file's max sequence)"),
    FileField("stats", "_MIN_VALUES", ACTED, "0.4"),
    FileField("stats", "_MAX_VALUES", ACTED, "0.4"),
    FileField("stats", "_NULL_COUNTS", ACTED, "0.4"),
    # --- manifest list (ManifestFileMeta)
    FileField("manifest list", "_VERSION", ACTED, "0.4", "2"),
    FileField("manifest list", "_FILE_NAME", ACTED, "0.4"),
    FileField("manifest list", "_FILE_SIZE", ACTED, "0.4"),
    FileField("manifest list", "_NUM_ADDED_FILES", ACTED, "0.4"),
    FileField("manifest list", "_NUM_DELETED_FILES", ACTED, "0.4"),
    FileField("manifest list", "_PARTITION_STATS", ACTED, "0.4"),
    FileField("manifest list", "_SCHEMA_ID", ACTED, "0.4"),
    FileField("manifest list", "_MIN_BUCKET", ACTED, "1.1"),
    FileField("manifest list", "_MAX_BUCKET", ACTED, "1.1"),
    FileField("manifest list", "_MIN_LEVEL", ACTED, "1.1"),
    FileField("manifest list", "_MAX_LEVEL", ACTED, "1.1"),
    FileField("manifest list", "_MIN_ROW_ID", ACTED, "1.4", "computed from the entries' _FIRST_ROW_ID"),
    FileField("manifest list", "_MAX_ROW_ID", ACTED, "1.4", "computed from the entries' _FIRST_ROW_ID"),
    # --- index manifest entry (IndexManifestEntry)
    FileField("index manifest entry", "_VERSION", ACTED, "0.5", "1"),
    FileField("index manifest entry", "_KIND", ACTED, "0.5"),
    FileField("index manifest entry", "_PARTITION", ACTED, "0.5"),
    FileField("index manifest entry", "_BUCKET", ACTED, "0.5"),
    FileField("index manifest entry", "_INDEX_TYPE", ACTED, "0.5", "see the index types; unknown types are carried"),
    FileField("index manifest entry", "_FILE_NAME", ACTED, "0.5"),
    FileField("index manifest entry", "_FILE_SIZE", ACTED, "0.5"),
    FileField("index manifest entry", "_ROW_COUNT", ACTED, "0.5"),
    FileField("index manifest entry", "_DELETIONS_VECTORS_RANGES", ACTED, "0.8"),
    FileField("index manifest entry", "_EXTERNAL_PATH", ACTED, "1.3", "index files read from there"),
    FileField("index manifest entry", "_GLOBAL_INDEX", CARRIED, "1.4", "kept as read"),
    FileField("deletion vector range", "f0", ACTED, "0.8", "the data file"),
    FileField("deletion vector range", "f1", ACTED, "0.8", "offset in the index file"),
    FileField("deletion vector range", "f2", ACTED, "0.8", "length"),
    FileField("deletion vector range", "_CARDINALITY", ACTED, "1.0"),
    FileField("global index", "_ROW_RANGE_START", CARRIED, "1.4"),
    FileField("global index", "_ROW_RANGE_END", CARRIED, "1.4"),
    FileField("global index", "_INDEX_FIELD_ID", CARRIED, "1.4"),
    FileField("global index", "_EXTRA_FIELD_IDS", CARRIED, "1.4"),
    FileField("global index", "_INDEX_META", CARRIED, "1.4"),
    FileField("global index", "_SOURCE_META", CARRIED, "2.0"),
    # --- index types (`_INDEX_TYPE`)
    FileField("index type", "HASH", ACTED, "0.5", "dynamic-bucket key index"),
    FileField("index type", "DELETION_VECTORS", ACTED, "0.8", "deletion vectors (32- and 64-bit bitmaps)"),
    FileField("index type", "btree", CARRIED, "1.4", _GLOBAL),
    FileField("index type", "bitmap", CARRIED, "1.4", _GLOBAL),
    FileField("index type", "lumina-vector-ann", CARRIED, "1.4", _GLOBAL),
    FileField("index type", "lumina", CARRIED, "2.0", _GLOBAL),
    FileField("index type", "diskann", CARRIED, "2.0", _GLOBAL),
    FileField("index type", "ivf-flat", CARRIED, "2.0", _GLOBAL),
    FileField("index type", "ivf-pq", CARRIED, "2.0", _GLOBAL),
    FileField("index type", "ivf-rq", CARRIED, "2.0", _GLOBAL),
    FileField("index type", "ivf-sq", CARRIED, "2.0", _GLOBAL),
    FileField("index type", "full-text", CARRIED, "2.0", _GLOBAL),
    FileField("index type", "es-index", CARRIED, "2.0", _GLOBAL),
)

# The `_INDEX_TYPE` strings Paimon 2.0 writes.
INDEX_TYPES: tuple[str, ...] = tuple(f.name for f in FILE_FIELDS if f.file == "index type")
