"""Paimon table options: every name with its default, value checks, and typed access.

The tables below are data: one `Opt` per option Paimon knows, with Paimon's name, its default in
Paimon's own string form (None when Paimon has none), the kind of value it takes and the older keys
Paimon still reads in its place. `validate_options` is run when a table is created; `Options`
reads whatever a table carries (tables written by other engines load without checks).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from tarn.errors import InvalidOption


class Kind(StrEnum):
    """How an option's string value is read."""

    INT = "int"  # Java int
    LONG = "long"  # Java long
    BOOL = "bool"  # true / false, any case
    DOUBLE = "double"
    STRING = "string"
    ENUM = "enum"  # one of `choices`, any case
    MEMORY = "memory"  # "256 mb", "8MB", "128 kb", plain bytes
    DURATION = "duration"  # "1 h", "10 min", "30 s", "100 ms", "1d"; plain number = ms
    LIST = "list"  # comma separated
    MAP = "map"  # "k1:v1,k2:v2"
    STATS_MODE = "stats-mode"  # none | counts | full | truncate(N)


INT, LONG, BOOL, DOUBLE, STRING, ENUM = Kind.INT, Kind.LONG, Kind.BOOL, Kind.DOUBLE, Kind.STRING, Kind.ENUM
MEMORY, DURATION, LIST, MAP, STATS_MODE = Kind.MEMORY, Kind.DURATION, Kind.LIST, Kind.MAP, Kind.STATS_MODE


class Effect(StrEnum):
    """What an option does to tarn's reads and writes: the feature table's one column that
    decides whether a table carrying the option is read, written or refused."""

    ACTED = "acted on"  # tarn implements what Paimon does with it
    CARRIED = "no effect"  # changes nothing tarn reads or writes (engine tuning, other engines' jobs): kept untouched
    READS = "changes reads"  # tarn lacks it: reading (and writing) a table carrying it is refused
    WRITES = "changes writes"  # tarn lacks it: writes are refused; reads are what every engine sees


ACTED, CARRIED, READS, WRITES = Effect.ACTED, Effect.CARRIED, Effect.READS, Effect.WRITES


@dataclass(frozen=True)
class Opt:
    """One option: its name, value kind, default (Paimon's string form) and accepted older keys,
    and its row of the feature table: what it does to tarn (`effect`), the Paimon release that
    introduced it (`since`), the values tarn honours although the effect says it lacks the
    option (`honoured`; the default is always honoured) and a note for the options guide."""

    name: str
    kind: Kind
    default: str | None = None
    choices: tuple[str, ...] = ()
    fallback: tuple[str, ...] = ()
    immutable: bool = False  # Paimon refuses to change it after creation
    effect: Effect = Effect.CARRIED
    since: str = ""
    honoured: tuple[str, ...] = ()
    note: str = ""


FILE_FORMATS = ("parquet", "orc", "avro", "csv", "json", "text", "lance", "mosaic", "vortex")

# Field aggregators Paimon ships (FieldAggregatorFactory implementations, by identifier).
AGGREGATE_FUNCTIONS = (
    "sum", "product", "min", "max", "last_value", "last_non_null_value", "first_value",
    "first_non_null_value", "first_not_null_value", "listagg", "bool_and", "bool_or", "collect",
    "merge_map", "merge_map_with_keytime", "nested_update", "nested_partial_update", "rbm32", "rbm64",
    "hll_sketch", "theta_sketch", "primary-key",
    "count", "nested-update",  # documented on the primary-key table page (Paimon <= 0.8 spellings)
)

# Every option with a fixed name.
OPTIONS: tuple[Opt, ...] = (
    # --- paimon-api org/apache/paimon/CoreOptions.java ---
    Opt(
        "type", ENUM, "table",
        choices=(
            "table", "format-table", "materialized-table", "object-table", "lance-table", "iceberg-table",
        ),
        immutable=True,
        effect=READS, since="1.0",
        note="tarn reads and writes plain tables only (format, object, lance, iceberg, materialized refused)",
    ),
    Opt("bucket", INT, "-1",
        effect=ACTED, since="0.4", note="> 0 fixed, -1 dynamic, -2 postpone (primary keys; tarn/ops/postpone.py)"),
    Opt("bucket-key", LIST, immutable=True, effect=ACTED, since="0.4"),
    Opt("bucket-append-ordered", BOOL, "true",
        effect=CARRIED, since="1.3", note="false only relaxes ordering; tarn writes append buckets in order"),
    Opt("bucket-function.type", ENUM, "default", choices=("default", "mod", "hive"), immutable=True,
        effect=ACTED, since="1.3", note="default, mod and hive bucket functions"),
    Opt("data-file.external-paths", LIST,
        effect=ACTED, since="1.1", note="the external roots (with data-file.external-paths.strategy)"),
    Opt(
        "data-file.external-paths.strategy", ENUM, "none",
        choices=("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin"),
        effect=ACTED, since="1.1",
        note="new data files under the external roots of the table's own store (tarn/data/external_paths.py)",
    ),
    Opt("data-file.external-paths.specific-fs", STRING,
        effect=ACTED, since="1.1", note="the scheme of the roots specific-fs keeps"),
    Opt("data-file.external-paths.weights", STRING,
        effect=ACTED, since="1.4", note="one weight per root for weight-robin"),
    Opt("compaction.force-rewrite-all-files", BOOL, "false", effect=ACTED, since="1.2"),
    Opt("path", STRING, effect=CARRIED, since="0.4", note="set by the catalog when a table loads"),
    Opt("branch", STRING, "main",
        effect=READS, since="0.9",
        note="honoured when it names the branch read (Java keeps it in a branch's schema); a schema naming "
             "another branch is refused"),
    Opt("chain-table.enabled", BOOL, "false",
        effect=READS, since="1.4", note="chain tables read partitions across snapshot and delta branches"),
    Opt("scan.fallback-snapshot-branch", STRING,
        effect=CARRIED, since="1.4", note="chain tables only (chain-table.enabled is refused)"),
    Opt("scan.fallback-delta-branch", STRING,
        effect=CARRIED, since="1.4", note="chain tables only (chain-table.enabled is refused)"),
    Opt("chain-table.chain-partition-keys", LIST,
        effect=CARRIED, since="2.0", note="chain tables only (chain-table.enabled is refused)"),
    Opt("chain-table.streaming.merge-snapshot", BOOL, "false",
        effect=CARRIED, since="2.0", note="chain tables only (chain-table.enabled is refused)"),
    Opt("chain-table.split.key-range-enabled", BOOL, "true",
        effect=CARRIED, since="2.0", note="chain tables only (chain-table.enabled is refused)"),
    Opt("file.format", ENUM, "parquet", choices=FILE_FORMATS,
        effect=WRITES, since="0.4", honoured=("parquet", "orc", "avro"),
        note="it decides the format of new files, and tarn writes only parquet, orc and avro; the table's "
             "files are read by their own format, and a file of another (lance, vortex, csv, ...) is refused "
             "when a read meets it, naming the file"),
    Opt("file.compression.per.level", MAP,
        effect=CARRIED, since="0.4", note="compression is tuning; tarn uses file.compression at every level"),
    Opt("file.format.per.level", MAP,
        effect=CARRIED, since="0.5",
        note="tarn writes file.format at every level and reads each file by its extension"),
    Opt("file.compression", STRING, "zstd",
        effect=ACTED, since="0.4", note="parquet, orc and avro codecs; a codec the format lacks is an InvalidOption"),
    Opt("file.compression.zstd-level", INT, "1", effect=ACTED, since="0.9"),
    Opt("data-file.prefix", STRING, "data-", effect=ACTED, since="1.0"),
    Opt("data-file.path-directory", STRING, immutable=True,
        effect=ACTED, since="1.0", note="partition and bucket directories under this sub-directory"),
    Opt("changelog-file.prefix", STRING, "changelog-", effect=ACTED, since="1.0"),
    Opt("changelog-file.format", ENUM, choices=FILE_FORMATS,
        effect=READS, since="1.1", honoured=("parquet", "orc", "avro"),
        note="changelog files in other formats are neither read nor written"),
    Opt("changelog-file.compression", STRING, effect=ACTED, since="1.1"),
    Opt("changelog-file.stats-mode", STATS_MODE, effect=ACTED, since="1.1"),
    Opt("file.suffix.include.compression", BOOL, "false",
        effect=CARRIED, since="1.0", note="file names only; readers take the format from the extension"),
    Opt("file.block-size", MEMORY, effect=ACTED, since="0.9", note="parquet row-group size"),
    Opt("file-index.in-manifest-threshold", MEMORY, "500 bytes", effect=ACTED, since="0.8"),
    Opt("file-index.read.enabled", BOOL, "true", effect=ACTED, since="0.8"),
    Opt("variant.shreddingSchema", STRING, fallback=("parquet.variant.shreddingSchema",), effect=ACTED, since="1.4",
        note="parquet files store the named VARIANT columns shredded (typed_value) in that shape"),
    Opt("variant.inferShreddingSchema", BOOL, "false", effect=CARRIED, since="1.4",
        note="a file layout only: tarn infers no shape and writes such columns unshredded (same values)"),
    Opt("variant.shredding.inferenceMode", ENUM, "per-file", choices=("per-file", "adaptive"),
        effect=CARRIED, since="2.0", note="shredding inference (not done by tarn; a file layout only)"),
    Opt("variant.shredding.maxSchemaWidth", INT, "300", effect=CARRIED, since="1.4", note="shredding inference (not done by tarn; a file layout only)"),
    Opt("variant.shredding.maxSchemaDepth", INT, "50", effect=CARRIED, since="1.4", note="shredding inference (not done by tarn; a file layout only)"),
    Opt("variant.shredding.minFieldCardinalityRatio", DOUBLE, "0.1",
        effect=CARRIED, since="1.4", note="shredding inference (not done by tarn; a file layout only)"),
    Opt("variant.shredding.maxInferBufferRow", INT, "4096",
        effect=CARRIED, since="1.4", note="shredding inference (not done by tarn; a file layout only)"),
    Opt("variant.shredding.adaptive.maxInferBufferRow", INT, "256",
        effect=CARRIED, since="2.0", note="shredding inference (not done by tarn; a file layout only)"),
    Opt("variant.shredding.adaptive.retentionRatio", DOUBLE, "0.05",
        effect=CARRIED, since="2.0", note="shredding inference (not done by tarn; a file layout only)"),
    Opt("manifest.format", STRING, "avro",
        effect=READS, since="0.4", honoured=("avro",),
        note="tarn reads and writes Avro manifests only (pypaimon too; Paimon 2.1 removed the option: always Avro)"),
    Opt("manifest.compression", STRING, "zstd", effect=ACTED, since="0.9"),
    Opt("manifest.target-file-size", MEMORY, "8 mb", effect=ACTED, since="0.4"),
    Opt("manifest.full-compaction-threshold-size", MEMORY, "16 mb", effect=ACTED, since="0.5"),
    Opt("manifest.merge-min-count", INT, "30", effect=ACTED, since="0.4"),
    Opt("manifest-sort.enabled", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("manifest-sort.partition-field", STRING, effect=CARRIED, since="2.0"),
    Opt("manifest-sort.max-rewrite-size", MEMORY, "256 mb", effect=CARRIED, since="2.0"),
    Opt("manifest.merge-optimize.enabled", BOOL, "true",
        effect=CARRIED, since="2.1", note="Paimon master (2.1-SNAPSHOT)"),
    Opt("upsert-key", LIST,
        effect=ACTED, since="1.3",
        note="batch writes to the append table merge on these columns, as Paimon 2.0's Spark INSERT "
             "(tarn/ops/upsert_key.py); streaming writes append; removed after 2.0"),
    Opt("partition.default-name", STRING, "__DEFAULT_PARTITION__", effect=ACTED, since="0.4"),
    Opt("partition.legacy-name", BOOL, "true",
        effect=ACTED, since="1.0", note="false: partition directories named by CAST to STRING (dates 2026-11-03)"),
    Opt("snapshot.num-retained.min", INT, "10", effect=ACTED, since="0.4"),
    Opt("snapshot.num-retained.max", INT, "2147483647", effect=ACTED, since="0.4"),
    Opt("snapshot.time-retained", DURATION, "1 h", effect=ACTED, since="0.4"),
    Opt("changelog.num-retained.min", INT,
        effect=ACTED, since="0.8",
        note="beyond the snapshot.* value: changelogs outlive their snapshots (tarn/ops/changelog_expire.py)"),
    Opt("changelog.num-retained.max", INT,
        effect=ACTED, since="0.8",
        note="beyond the snapshot.* value: changelogs outlive their snapshots (tarn/ops/changelog_expire.py)"),
    Opt("changelog.time-retained", DURATION,
        effect=ACTED, since="0.8",
        note="beyond the snapshot.* value: changelogs outlive their snapshots (tarn/ops/changelog_expire.py)"),
    Opt("snapshot.expire.execution-mode", ENUM, "sync", choices=("sync", "async"), effect=CARRIED, since="0.6"),
    Opt("snapshot.expire.limit", INT, "50", effect=ACTED, since="0.6"),
    Opt(
        "snapshot.clean-empty-directories", BOOL, "false",
        fallback=("snapshot.expire.clean-empty-directories",),
        effect=ACTED, since="0.9",
    ),
    Opt("continuous.discovery-interval", DURATION, "10 s", effect=CARRIED, since="0.4"),
    Opt("scan.max-splits-per-task", INT, "10", effect=CARRIED, since="0.6"),
    Opt("scan.bucket", INT, effect=ACTED, since="2.0", note="every read of the table reads this bucket only"),
    Opt(
        "merge-engine", ENUM, "deduplicate",
        choices=("deduplicate", "partial-update", "aggregation", "first-row"),
        immutable=True,
        effect=ACTED, since="0.4", note="all four engines; first-row batch reads leave level 0 out, as Java's",
    ),
    Opt(
        "ignore-delete", BOOL, "false",
        fallback=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"),
        effect=ACTED, since="0.8",
    ),
    Opt("ignore-update-before", BOOL, "false",
        effect=ACTED, since="1.3", note="writes drop -U rows (as ignore-delete also does)"),
    Opt("sort-engine", ENUM, "loser-tree", choices=("min-heap", "loser-tree"), effect=CARRIED, since="0.5"),
    Opt("sort-spill-threshold", INT, effect=CARRIED, since="0.5"),
    Opt("sort-spill-buffer-size", MEMORY, "64 mb", effect=CARRIED, since="0.5"),
    Opt("spill-compression", STRING, "zstd", effect=CARRIED, since="0.8"),
    Opt("spill-compression.zstd-level", INT, "1", effect=CARRIED, since="0.9"),
    Opt("write-only", BOOL, "false", fallback=("write.compaction-skip",),
        effect=ACTED, since="0.4", note="no compaction and no expiry after writes"),
    Opt("source.split.target-size", MEMORY, "128 mb", effect=ACTED, since="0.4"),
    Opt("source.split.open-file-cost", MEMORY, "4 mb", effect=ACTED, since="0.4"),
    Opt("write-buffer-size", MEMORY, "256 mb", effect=ACTED, since="0.4"),
    Opt("write-buffer-spill.max-disk-size", MEMORY, "9223372036854775807 bytes", effect=CARRIED, since="0.8"),
    Opt("write-buffer-spillable", BOOL, "true", effect=CARRIED, since="0.4"),
    Opt("write-buffer-for-append", BOOL, "false", effect=CARRIED, since="0.6"),
    Opt("write-max-writers-to-spill", INT, "10", effect=CARRIED, since="0.7"),
    Opt("local-sort.max-num-file-handles", INT, "128", effect=CARRIED, since="0.4"),
    Opt("page-size", MEMORY, "64 kb", effect=CARRIED, since="0.4"),
    Opt("cache-page-size", MEMORY, "64 kb", effect=CARRIED, since="0.7"),
    Opt("target-file-size", MEMORY, effect=ACTED, since="0.4"),
    Opt("target-file-row-num", LONG, "9223372036854775807", effect=CARRIED, since="2.0", note="file sizes are tuning"),
    Opt("compaction.small-file-ratio", DOUBLE, "0.7", effect=ACTED, since="2.0"),
    Opt("blob.target-file-size", MEMORY, effect=CARRIED, since="1.4", note="BLOB columns only (refused)"),
    Opt("blob.split-by-file-size", BOOL, effect=CARRIED, since="1.4", note="BLOB columns only (refused)"),
    Opt("blob.copy-buffer-size", MEMORY, "4 kb", effect=CARRIED, since="2.0", note="BLOB columns only (refused)"),
    Opt("num-sorted-run.compaction-trigger", INT, "5", effect=ACTED, since="0.4"),
    Opt("num-sorted-run.stop-trigger", INT, effect=ACTED, since="0.4"),
    Opt("num-levels", INT, effect=ACTED, since="0.4"),
    Opt("commit.force-compact", BOOL, "false", effect=CARRIED, since="0.4"),
    Opt("write.sequence-number-init-mode", ENUM, "scan", choices=("scan", "snapshot"),
        effect=ACTED, since="2.0",
        note="snapshot: writers start above the table-wide maximum the latest snapshot records"),
    Opt("commit.timeout", DURATION, effect=CARRIED, since="1.0"),
    Opt("commit.max-retries", INT, "10", effect=ACTED, since="1.0"),
    Opt("commit.min-retry-wait", DURATION, "10 ms", effect=CARRIED, since="1.3"),
    Opt("commit.max-retry-wait", DURATION, "10 s", effect=CARRIED, since="1.3"),
    Opt("compaction.max-size-amplification-percent", INT, "200", effect=ACTED, since="0.4"),
    Opt("compaction.force-up-level-0", BOOL, "false", effect=ACTED, since="1.1"),
    Opt("compaction.size-ratio", INT, "1", effect=ACTED, since="0.4"),
    Opt("compaction.offpeak.start.hour", INT, "-1", effect=ACTED, since="1.3"),
    Opt("compaction.offpeak.end.hour", INT, "-1", effect=ACTED, since="1.3"),
    Opt("compaction.offpeak-ratio", INT, "0", effect=ACTED, since="1.3"),
    Opt("compaction.optimization-interval", DURATION, effect=ACTED, since="0.7"),
    Opt("compaction.total-size-threshold", MEMORY, effect=ACTED, since="1.3"),
    Opt("compaction.incremental-size-threshold", MEMORY, effect=ACTED, since="1.4"),
    Opt("compaction.min.file-num", INT, "5", effect=ACTED, since="0.4"),
    Opt("compaction.file-num-limit", INT, "100000", effect=ACTED, since="2.0"),
    Opt("compaction.delete-ratio-threshold", DOUBLE, "0.2", effect=ACTED, since="1.2"),
    Opt("changelog-producer", ENUM, "none", choices=("none", "input", "full-compaction", "lookup"),
        effect=ACTED, since="0.4", note="none, input, full-compaction and lookup"),
    Opt("changelog-producer.row-deduplicate", BOOL, "false", effect=ACTED, since="0.5"),
    Opt("changelog-producer.row-deduplicate-ignore-fields", LIST, effect=ACTED, since="1.0"),
    Opt("table-read.sequence-number.enabled", BOOL, "false",
        effect=CARRIED, since="1.4", note="audit_log and binlog system tables only (tarn has neither)"),
    Opt("key-value.sequence_number.enabled", BOOL, "false", effect=CARRIED, since="1.4"),
    Opt("sequence.field", LIST, effect=ACTED, since="0.4"),
    # Paimon <= 0.9 (the primary-key table page documents it); tarn keeps it working.
    Opt("sequence.auto-padding", LIST,
        effect=ACTED, since="0.5", note="Paimon 0.5-0.7 only (2.0 ignores it); tarn honours row-kind-flag"),
    Opt("sequence.field.sort-order", ENUM, "ascending", choices=("ascending", "descending"), effect=ACTED, since="1.0"),
    Opt("sequence.snapshot-ordering", BOOL, "false", immutable=True,
        effect=ACTED, since="2.0", note="commits stamp files with their snapshot id; merges order by it"),
    Opt("aggregation.remove-record-on-delete", BOOL, "false", immutable=True, effect=ACTED, since="1.1"),
    Opt("partial-update.remove-record-on-delete", BOOL, "false", immutable=True, effect=ACTED, since="0.9"),
    Opt("partial-update.remove-record-on-sequence-group", LIST, immutable=True, effect=ACTED, since="1.0"),
    Opt("rowkind.field", STRING, immutable=True, effect=ACTED, since="0.7"),
    Opt(
        "scan.mode", ENUM, "default",
        choices=(
            "default", "latest-full", "full", "latest", "latest-delta", "compacted-full", "from-timestamp",
            "from-creation-timestamp", "from-file-creation-time", "from-snapshot", "from-snapshot-full",
            "incremental",
        ),
        fallback=("log.scan",),
        effect=ACTED, since="0.4",
        note="stored in the table: where every batch read starts (tarn/scan/startup.py); the incremental "
             "modes (incremental, latest-delta) read changed rows (tarn/ops/incremental.py)",
    ),
    Opt("scan.timestamp", STRING, effect=ACTED, since="0.9",
        note="stored in the table: every read travels to it (a read's own argument wins)"),
    Opt("scan.timestamp-millis", LONG, fallback=("log.scan.timestamp-millis",),
        effect=ACTED, since="0.4", note="stored in the table: every read travels to it (a read's own argument wins)"),
    Opt("scan.watermark", LONG, effect=ACTED, since="0.8",
        note="the first snapshot whose watermark is at or after it"),
    Opt("scan.file-creation-time-millis", LONG,
        effect=ACTED, since="0.7", note="reads the latest snapshot's files created at or after it"),
    Opt("scan.creation-time-millis", LONG, effect=ACTED, since="1.2",
        note="the first snapshot committed at or after it, else the files created since"),
    Opt("scan.snapshot-id", LONG,
        effect=ACTED, since="0.4", note="stored in the table: every read travels to it (a read's own argument wins)"),
    Opt("scan.tag-name", STRING,
        effect=ACTED, since="0.5", note="stored in the table: every read travels to it (a read's own argument wins)"),
    Opt("scan.version", STRING, effect=ACTED, since="0.7",
        note="a tag name, watermark-<n> or a snapshot id, as Java adapts it"),
    Opt("scan.bounded.watermark", LONG, effect=CARRIED, since="0.4"),
    Opt("scan.manifest.parallelism", INT, effect=CARRIED, since="0.5"),
    Opt("format-table.scan.list-parallelism", INT, "64",
        effect=CARRIED, since="2.0", note="format tables only (type = format-table is refused)"),
    Opt("streaming.read.snapshot.delay", DURATION, effect=CARRIED, since="0.9"),
    Opt("scan.ignore-corrupt-files", BOOL, "false",
        effect=CARRIED, since="1.4", note="tarn fails on a corrupt file instead of skipping it"),
    Opt("scan.ignore-lost-files", BOOL, "false",
        effect=CARRIED, since="1.4", note="tarn fails on a missing file instead of skipping it"),
    Opt("auto-create", BOOL, "false", effect=CARRIED, since="0.4"),
    Opt("streaming-read-overwrite", BOOL, "false", effect=ACTED, since="0.4"),
    Opt("streaming-read-append-overwrite", BOOL, "false",
        effect=ACTED, since="1.2", note="streams of append tables read the rows OVERWRITE commits add"),
    Opt("dynamic-partition-overwrite", BOOL, "true", effect=ACTED, since="0.4"),
    Opt("partition.expiration-strategy", STRING, "values-time",
        effect=ACTED, since="0.9", note="values-time or update-time (tarn/ops/partition_expire.py)"),
    Opt("partition.expiration-time", DURATION,
        effect=ACTED, since="0.4", note="commits drop partitions older than this (tarn/ops/partition_expire.py)"),
    Opt("partition.expiration-check-interval", DURATION, "1 h",
        effect=ACTED, since="0.4", note="per process and table, the first check within one interval"),
    Opt("partition.expiration-max-num", INT, "100", effect=ACTED, since="1.0"),
    Opt("partition.expiration-batch-size", INT, effect=ACTED, since="1.2", note="partitions per drop commit"),
    Opt("compaction.skip-expired-partitions", BOOL, "false",
        effect=CARRIED, since="2.0", note="used only with partition.expiration-time"),
    Opt("partition.timestamp-formatter", STRING,
        effect=ACTED, since="0.4", note="partition expiry and strict writes (tarn/partition_time.py)"),
    Opt("partition.timestamp-pattern", STRING,
        effect=ACTED, since="0.4", note="partition expiry and strict writes (tarn/partition_time.py)"),
    Opt("partition.timestamp-format.strict", BOOL, "false",
        effect=ACTED, since="1.4", note="writes into partitions whose values do not parse are refused"),
    Opt("partition.end-input-to-done", BOOL, "false", effect=CARRIED, since="0.9"),
    Opt("scan.plan-sort-partition", BOOL, "false", effect=CARRIED, since="0.4", note="order of splits only"),
    Opt("primary-key", LIST, immutable=True,
        effect=ACTED, since="0.4", note="the primary key given as an option at creation"),
    Opt("primary-key.nullable", BOOL, "false", immutable=True,
        effect=ACTED, since="2.1",
        note="Paimon master (2.1-SNAPSHOT): primary-key columns stored nullable; NULL keys merge null-safely, sort first"),
    Opt("partition", LIST, immutable=True,
        effect=ACTED, since="0.4", note="the partition keys given as an option at creation"),
    Opt("lookup.hash-load-factor", DOUBLE, "0.75", effect=CARRIED, since="0.4"),
    Opt("lookup.cache-rows", LONG, "10000", effect=CARRIED, since="0.4"),
    Opt("lookup.continuous.discovery-interval", DURATION, effect=CARRIED, since="0.6"),
    Opt("lookup.cache-file-retention", DURATION, "1 h", effect=CARRIED, since="0.4"),
    Opt("lookup.cache-max-disk-size", MEMORY, "9223372036854775807 bytes", effect=ACTED, since="0.4"),
    Opt("lookup.cache-spill-compression", STRING, "zstd", effect=CARRIED, since="0.8"),
    Opt("lookup.cache-max-memory-size", MEMORY, "256 mb", effect=ACTED, since="0.4"),
    Opt("lookup.blob-as-descriptor", BOOL, "false", effect=CARRIED, since="2.0", note="BLOB columns only (refused)"),
    Opt("lookup.cache.high-priority-pool-ratio", DOUBLE, "0.25", effect=CARRIED, since="1.0"),
    Opt("lookup.cache.bloom.filter.enabled", BOOL, "true", effect=CARRIED, since="0.7"),
    Opt("lookup.cache.bloom.filter.fpp", DOUBLE, "0.05", effect=CARRIED, since="0.7"),
    Opt("lookup.remote-file.enabled", BOOL, "false", effect=CARRIED, since="1.4"),
    Opt("lookup.remote-file.level-threshold", INT, "-2147483648", effect=CARRIED, since="1.4"),
    Opt("read.batch-size", INT, "1024", effect=CARRIED, since="0.4"),
    Opt("write.batch-size", INT, "1024", fallback=("orc.write.batch-size",), effect=CARRIED, since="1.0"),
    Opt("write.batch-memory", MEMORY, "128 mb", effect=CARRIED, since="1.3"),
    Opt("consumer-id", STRING,
        effect=CARRIED, since="0.4", note="streaming consumers; tarn's Spark stream takes it as a read option"),
    Opt("full-compaction.delta-commits", INT, effect=ACTED, since="0.4"),
    Opt("stream-scan-mode", ENUM, "none", choices=("none", "compact-bucket-table", "file-monitor"),
        effect=CARRIED, since="0.6"),
    Opt("batch-scan-mode", ENUM, "none", choices=("none", "compact"), effect=CARRIED, since="1.3"),
    Opt("consumer.expiration-time", DURATION, effect=ACTED, since="0.5"),
    Opt("consumer.mode", ENUM, "exactly-once", choices=("exactly-once", "at-least-once"), effect=CARRIED, since="0.6"),
    Opt("consumer.ignore-progress", BOOL, "false",
        effect=CARRIED, since="0.7", note="tarn's Spark stream takes it as a read option"),
    Opt("consumer.changelog-only", BOOL, "false", effect=ACTED, since="1.4"),
    Opt("dynamic-bucket.target-row-num", LONG, "2000000", effect=ACTED, since="0.5"),
    Opt("dynamic-bucket.initial-buckets", INT, immutable=True, effect=ACTED, since="0.7"),
    Opt("dynamic-bucket.max-buckets", INT, "-1", effect=ACTED, since="1.1"),
    Opt("dynamic-bucket.assigner-parallelism", INT, effect=ACTED, since="0.5"),
    Opt("incremental-between", STRING,
        effect=ACTED, since="0.5", note="batch reads (Python and Spark) read the changed rows "
        "(tarn/ops/incremental.py)"),
    Opt("incremental-between-scan-mode", ENUM, "auto", choices=("auto", "delta", "changelog", "diff"),
        effect=ACTED, since="0.6", note="with incremental-between(-timestamp)"),
    Opt("incremental-between-timestamp", STRING,
        effect=ACTED, since="0.5", note="batch reads (Python and Spark) read the changed rows "
        "(tarn/ops/incremental.py)"),
    Opt("incremental-to-auto-tag", STRING,
        effect=ACTED, since="1.1", note="batch reads (Python and Spark) read the changed rows "
        "(tarn/ops/incremental.py)"),
    Opt("incremental-between-tag-to-snapshot", BOOL, "false",
        effect=ACTED, since="1.4", note="with incremental-between naming two tags"),
    Opt("end-input.check-partition-expire", BOOL, "false", effect=ACTED, since="0.9",
        note="every batch commit checks partition expiry"),
    Opt("metadata.stats-mode", STATS_MODE, "truncate(16)", effect=ACTED, since="0.5"),
    Opt("metadata.stats-mode.per.level", MAP, effect=ACTED, since="1.1"),
    Opt("metadata.stats-dense-store", BOOL, "true",
        effect=CARRIED, since="1.0",
        note="tarn stores kept stats densely (_VALUE_STATS_COLS); readers take both forms"),
    Opt("metadata.stats-keep-first-n-columns", INT, "-1", effect=ACTED, since="1.2"),
    Opt("commit.callbacks", LIST, "", effect=CARRIED, since="0.5"),
    Opt("tag.callbacks", LIST, "", effect=CARRIED, since="0.6"),
    Opt("partition.mark-done-action", LIST, "success-file", effect=CARRIED, since="0.9"),
    Opt("partition.mark-done-action.custom.class", STRING, effect=CARRIED, since="1.1"),
    Opt("partition.mark-done-action.http.url", STRING, effect=CARRIED, since="1.1"),
    Opt("partition.mark-done-action.http.params", STRING, effect=CARRIED, since="1.1"),
    Opt("partition.sink-strategy", ENUM, "NONE", choices=("NONE", "HASH", "PARTITION_DYNAMIC"),
        effect=CARRIED, since="1.1"),
    Opt("metastore.partitioned-table", BOOL, "false", effect=CARRIED, since="0.5"),
    Opt("metastore.tag-to-partition", STRING, effect=CARRIED, since="0.6"),
    Opt(
        "metastore.tag-to-partition.preview", ENUM, "none",
        choices=("none", "process-time", "watermark", "batch"),
        effect=CARRIED, since="0.6",
    ),
    Opt("tag.automatic-creation", ENUM, "none", choices=("none", "process-time", "watermark", "batch"),
        effect=ACTED, since="0.5"),
    Opt("tag.create-success-file", BOOL, "false", effect=CARRIED, since="1.1"),
    Opt("tag.creation-period", ENUM, "daily", choices=("daily", "hourly", "two-hours"), effect=ACTED, since="0.5"),
    Opt("tag.creation-delay", DURATION, "0 ms", effect=ACTED, since="0.5"),
    Opt(
        "tag.period-formatter", ENUM, "with_dashes",
        choices=("with_dashes", "without_dashes", "without_dashes_and_spaces"),
        effect=ACTED, since="0.7",
    ),
    Opt("tag.creation-period-duration", DURATION, effect=ACTED, since="1.1"),
    Opt("tag.num-retained-max", INT, effect=ACTED, since="0.5"),
    Opt("tag.default-time-retained", DURATION, effect=ACTED, since="0.8"),
    Opt("tag.time-expire-enabled", BOOL, "true", effect=ACTED, since="1.4"),
    Opt("tag.automatic-completion", BOOL, "false", effect=ACTED, since="0.9"),
    Opt("tag.batch.customized-name", STRING, effect=ACTED, since="1.1"),
    Opt("scan.plan-auto-tag-for-read.time-retained", DURATION, effect=CARRIED, since="2.0"),
    Opt("snapshot.watermark-idle-timeout", DURATION, effect=CARRIED, since="0.7"),
    Opt("parquet.enable.dictionary", INT, effect=ACTED, since="0.5"),
    Opt("sink.watermark-time-zone", STRING, "UTC",
        effect=ACTED, since="0.5", note="time zone of automatic tags by watermark"),
    Opt("sink.process-time-zone", STRING,
        effect=ACTED, since="1.3", note="time zone of automatic tags by process time"),
    Opt("local-merge-buffer-size", MEMORY, effect=CARRIED, since="0.5"),
    Opt("cross-partition-upsert.index-ttl", DURATION, effect=ACTED, since="0.6"),
    Opt("cross-partition-upsert.bootstrap-parallelism", INT, "10", effect=ACTED, since="0.6"),
    Opt("zorder.var-length-contribution", INT, "8", effect=ACTED, since="0.6", note="bytes a string or binary gives a z-order key"),
    Opt("file-reader-async-threshold", MEMORY, "10 mb", effect=CARRIED, since="0.6"),
    Opt("commit.force-create-snapshot", BOOL, "false", effect=CARRIED, since="0.8"),
    Opt("deletion-vectors.enabled", BOOL, "false", effect=ACTED, since="0.8"),
    Opt("deletion-vectors.modifiable", BOOL, "false",
        effect=CARRIED, since="1.4", note="an alter rule; tarn lets the mode switch after a full compaction"),
    Opt("deletion-vector.index-file.target-size", MEMORY, "2 mb",
        effect=CARRIED, since="0.9", note="index file sizes are tuning"),
    Opt("deletion-vectors.merge-on-read", BOOL, "false",
        effect=ACTED, since="2.0",
        note="false (default): batch reads of deletion-vector tables leave level-0 files out until compacted"),
    Opt("deletion-vectors.bitmap64", BOOL, "false", effect=ACTED, since="1.2"),
    Opt("delete.force-produce-changelog", BOOL, "false",
        effect=CARRIED, since="0.8", note="tarn's deletes always write the deleted rows (never metadata-only)"),
    Opt("sort-compaction.range-strategy", ENUM, "SIZE", choices=("SIZE", "QUANTITY"), effect=CARRIED, since="0.8"),
    Opt("sort-compaction.local-sample.magnification", INT, "1000", effect=CARRIED, since="0.8"),
    Opt("record-level.expire-time", DURATION, effect=ACTED, since="0.8",
        note="compactions of primary-key tables drop expired rows (tarn/data/record_expire.py)"),
    Opt("record-level.time-field", STRING, effect=ACTED, since="0.8",
        note="INT seconds, BIGINT seconds or millis, TIMESTAMP / TIMESTAMP_LTZ"),
    Opt("fields.default-aggregate-function", ENUM, choices=AGGREGATE_FUNCTIONS,
        effect=ACTED, since="0.9", note="every Paimon aggregate function"),
    Opt("commit.user-prefix", STRING, effect=CARRIED, since="0.9"),
    Opt("force-lookup", BOOL, "false", immutable=True, effect=ACTED, since="0.9"),
    Opt("lookup-wait", BOOL, "true", fallback=("changelog-producer.lookup-wait",),
        effect=ACTED, since="0.9", note="tarn compacts within the commit"),
    Opt("lookup-compact", ENUM, "RADICAL", choices=("RADICAL", "GENTLE"), effect=ACTED, since="1.1"),
    Opt("lookup-compact.max-interval", INT, effect=ACTED, since="1.1"),
    Opt("file-operation.thread-num", INT, fallback=("delete-file.thread-num",), effect=CARRIED, since="1.3"),
    Opt("scan.fallback-branch", STRING,
        effect=ACTED, since="0.9", note="batch reads take partitions the table lacks from that branch "
                                          "(tarn/scan/fallback.py)"),
    Opt("scan.fallback-branch.read-fail-fast", BOOL, "false",
        effect=CARRIED, since="2.0", note="used only with scan.fallback-branch"),
    Opt("scan.primary-branch", STRING,
        effect=ACTED, since="2.0", note="batch reads take that branch's partitions first (tarn/scan/fallback.py)"),
    Opt("async-file-write", BOOL, "true", effect=CARRIED, since="0.9"),
    Opt("manifest.delete-file-drop-stats", BOOL, "false",
        effect=CARRIED, since="1.0", note="stats of DELETE entries; tarn keeps them"),
    Opt("data-file.thin-mode", BOOL, "false",
        effect=CARRIED, since="1.0",
        note="tarn reads thin files; it writes the _KEY_ columns, which every reader reads"),
    Opt("partition.idle-time-to-report-statistic", DURATION, "0 ms", effect=CARRIED, since="1.0"),
    Opt("query-auth.enabled", BOOL, "false",
        effect=CARRIED, since="1.2", note="checked by REST catalogs; no effect on a filesystem warehouse"),
    Opt("materialized-table.definition-query", STRING,
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("materialized-table.interval-freshness", STRING,
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("materialized-table.interval-freshness.time-unit", ENUM, choices=("SECOND", "MINUTE", "HOUR", "DAY"),
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("materialized-table.logical-refresh-mode", ENUM, choices=("CONTINUOUS", "FULL", "AUTOMATIC"),
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("materialized-table.refresh-mode", ENUM, choices=("CONTINUOUS", "FULL", "AUTOMATIC"),
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("materialized-table.refresh-status", ENUM, choices=("INITIALIZING", "ACTIVATED", "SUSPENDED"),
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("materialized-table.refresh-handler-description", STRING,
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("materialized-table.refresh-handler-bytes", STRING,
        effect=CARRIED, since="1.0", note="materialized-table metadata kept for Flink"),
    Opt("alter-column-null-to-not-null.disabled", BOOL, "true", effect=ACTED, since="1.2"),
    Opt("disable-explicit-type-casting", BOOL, "false",
        effect=CARRIED, since="1.2", note="an alter rule; tarn refuses narrowing casts anyway"),
    Opt("add-column-before-partition", BOOL, "false", effect=ACTED, since="1.4"),
    Opt("commit.strict-mode.last-safe-snapshot", LONG,
        effect=ACTED, since="1.2",
        note="commits fail on other users' COMPACT/OVERWRITE of their partitions since it (tarn/commit/requirements.py)"),
    Opt("clustering.columns", LIST, fallback=("sink.clustering.by-columns",), effect=ACTED, since="1.3",
        note="batch writes of bucket-less append tables sort by them; incremental clustering compacts by them "
             "(tarn/data/clustering.py)"),
    Opt("clustering.strategy", STRING, "auto", fallback=("sink.clustering.strategy",), effect=ACTED, since="1.3",
        note="order, zorder, hilbert keys as Java computes them; auto by column count"),
    Opt("clustering.incremental", BOOL, "false", effect=ACTED, since="1.3",
        note="compact() of the append table clusters by levels (COMPACT snapshots)"),
    Opt("clustering.history-partition.limit", INT, "5", effect=ACTED, since="1.3"),
    Opt("clustering.history-partition.idle-to-full-sort", DURATION, effect=ACTED, since="1.3",
        note="compact(partitions=...) also fully clusters idle other partitions"),
    Opt("clustering.incremental.optimize-write", BOOL, "false", effect=ACTED, since="1.4"),
    Opt("clustering.incremental.mode", ENUM, "global-sort", choices=("global-sort", "local-sort"),
        effect=CARRIED, since="1.4", note="tarn sorts each unit whole, as one task of either mode"),
    Opt("local-kv-db.block-size", MEMORY, "4 kb", effect=CARRIED, since="2.0"),
    Opt("row-tracking.enabled", BOOL, "false", immutable=True,
        effect=ACTED, since="1.3", note="row ids assigned at commit; _ROW_ID and _SEQUENCE_NUMBER selectable"),
    Opt("row-tracking.partition-group-on-commit", BOOL, "true", effect=ACTED, since="2.0",
        note="new files of one partition take consecutive row ids (partitions in first-seen order)"),
    Opt("data-evolution.enabled", BOOL, "false", immutable=True,
        effect=ACTED, since="1.3", note="files holding some columns of rows, stitched by row-id range"),
    Opt("data-evolution.reassign.skip-contiguous-row-count", LONG, "1000000000",
        effect=CARRIED, since="2.0", note="data evolution: a tuning knob of other engines' writers"),
    Opt("data-evolution.row-id-conflict-rewrite.max-size", MEMORY, "256 mb",
        effect=CARRIED, since="2.0", note="data evolution: a tuning knob of other engines' writers"),
    Opt("data-evolution.row-sidecar.enabled", BOOL, "false",
        effect=CARRIED, since="2.0", note="data evolution: a tuning knob of other engines' writers"),
    Opt("data-evolution.row-sidecar.max-selected-rows", LONG, "4096",
        effect=CARRIED, since="2.0", note="data evolution: a tuning knob of other engines' writers"),
    Opt("data-evolution.row-sidecar.max-selection-ratio", DOUBLE, "0.05",
        effect=CARRIED, since="2.0", note="data evolution: a tuning knob of other engines' writers"),
    Opt("data-evolution.merge-into.file-pruning", BOOL, "true",
        effect=CARRIED, since="2.0", note="data evolution: a tuning knob of other engines' writers"),
    Opt("data-evolution.merge-into.source-persist", BOOL, "false",
        effect=CARRIED, since="2.0", note="data evolution: a tuning knob of other engines' writers"),
    Opt("data-evolution.compaction.rewrite-row-ids", BOOL, "false", effect=CARRIED, since="2.0",
        note="tarn's compaction always keeps row ids (the option's default)"),
    Opt("blob-compaction.enabled", BOOL, "false", effect=CARRIED, since="2.0", note="BLOB columns only (refused)"),
    Opt("snapshot.ignore-empty-commit", BOOL, effect=CARRIED, since="1.3"),
    Opt("index-file-in-data-file-dir", BOOL, "false", immutable=True,
        effect=ACTED, since="1.3", note="deletion-vector and hash index files in their bucket's directory"),
    Opt("global-index.external-path", STRING, effect=CARRIED, since="1.4", note="entries record their external path"),
    Opt(
        "global-index.column-update-action", ENUM, "THROW_ERROR",
        choices=("THROW_ERROR", "DROP_PARTITION_INDEX", "IGNORE"),
        effect=CARRIED, since="1.4",
    ),
    Opt("lookup.merge-buffer-size", MEMORY, "8 mb", effect=CARRIED, since="1.3"),
    Opt("lookup.merge-records-threshold", INT, "1024", effect=CARRIED, since="1.3"),
    Opt("format-table.implementation", ENUM, "paimon", choices=("paimon", "engine"),
        effect=CARRIED, since="1.4", note="format tables only (type = format-table is refused)"),
    Opt("format-table.partition-path-only-value", BOOL, "false",
        effect=CARRIED, since="1.4", note="format tables only (type = format-table is refused)"),
    Opt("format-table.file.compression", STRING, fallback=("file.compression",),
        effect=CARRIED, since="1.4", note="format tables only (type = format-table is refused)"),
    Opt("format-table.commit-hive-sync-url", STRING,
        effect=CARRIED, since="1.4", note="format tables only (type = format-table is refused)"),
    Opt("blob-field", LIST, immutable=True, effect=READS, since="1.4", note="BLOB columns in .blob files"),
    Opt("blob-descriptor-field", LIST, fallback=("blob.stored-descriptor-fields",), immutable=True,
        effect=READS, since="1.4", note="BLOB columns stored as descriptors"),
    Opt("blob-view-field", LIST, immutable=True,
        effect=READS, since="2.0", note="BLOB columns resolved from other tables"),
    Opt("blob-view.resolve.enabled", BOOL, "true", effect=CARRIED, since="2.0", note="BLOB columns only (refused)"),
    Opt("blob-as-descriptor", BOOL, "false", effect=CARRIED, since="1.4", note="BLOB columns only (refused)"),
    Opt("blob-descriptor.source-table", STRING, effect=CARRIED, since="2.0", note="BLOB columns only (refused)"),
    Opt("blob-write-null-on-missing-file", BOOL, "false",
        effect=CARRIED, since="2.0", note="BLOB columns only (refused)"),
    Opt("blob-write-null-on-fetch-failure", BOOL, "false",
        effect=CARRIED, since="2.0", note="BLOB columns only (refused)"),
    Opt("commit.discard-duplicate-files", BOOL, "false", effect=CARRIED, since="1.4"),
    Opt("postpone.batch-write-fixed-bucket", BOOL, "true",
        effect=CARRIED, since="1.4", note="Java's Flink/Spark SQL batch jobs write fixed buckets directly; tarn's "
                                          "writes postpone, as Java's table API, pypaimon and pypaimon-rust do"),
    Opt("postpone.merge-on-read", BOOL, "false",
        effect=READS, since="2.0", honoured=("true",),
        note="batch reads merge each partition's postponed rows with its buckets (tarn/scan/reader.py)"),
    Opt("postpone.batch-write-fixed-bucket.max-parallelism", INT, "2048",
        effect=CARRIED, since="1.4", note="Java's fixed-bucket batch writes only (see above)"),
    Opt("postpone.batch-write-fixed-bucket.rescale-load-factor", INT, "32",
        effect=CARRIED, since="2.1", note="Paimon master (2.1-SNAPSHOT); postpone bucket tables only (#29)"),
    Opt("postpone.default-bucket-num", INT, effect=ACTED, since="1.1",
        note="when set, the buckets of a partition's first postpone compaction (2.1's rule; 2.0 defaulted it to 1)"),
    Opt("postpone.target-row-num-per-bucket", LONG,
        effect=ACTED, since="2.0", note="else a new partition's buckets: ceil(rows / this)"),
    Opt("postpone.target-size-per-bucket", MEMORY, "1 gb",
        effect=ACTED, since="2.0", note="else a new partition's buckets: ceil(postponed bytes / this) (2.1)"),
    Opt("global-index.row-count-per-shard", LONG, "100000", effect=CARRIED, since="1.4"),
    Opt("global-index.build.max-shard", INT, "32", effect=CARRIED, since="1.4"),
    Opt("global-index.build.max-parallelism", INT, "4096", effect=CARRIED, since="1.4"),
    Opt("global-index.enabled", BOOL, "true", effect=CARRIED, since="1.4"),
    Opt("global-index.search-mode", ENUM, choices=("fast", "full", "detail"), effect=CARRIED, since="2.0"),
    Opt("scalar-index.search-mode", ENUM, "fast", choices=("fast", "full", "detail"), effect=CARRIED, since="2.0"),
    Opt("vector-index.search-mode", ENUM, "fast", choices=("fast", "full", "detail"), effect=CARRIED, since="2.0"),
    Opt("full-text-index.search-mode", ENUM, "fast", choices=("fast", "full", "detail"), effect=CARRIED, since="2.0"),
    Opt("global-index.thread-num", INT, "32", effect=CARRIED, since="1.4"),
    Opt("overwrite-upgrade", BOOL, "true", effect=CARRIED, since="1.4"),
    Opt("visibility-callback.enabled", BOOL, "false", effect=CARRIED, since="1.4"),
    Opt("visibility-callback.timeout", DURATION, "30 min", effect=CARRIED, since="1.4"),
    Opt("visibility-callback.check-interval", DURATION, "10 s", effect=CARRIED, since="1.4"),
    Opt("vector.file.format", ENUM, choices=FILE_FORMATS,
        effect=CARRIED, since="1.4", note="VECTOR columns only (refused)"),
    Opt("vector-field", LIST, effect=READS, since="1.4", note="VECTOR columns in vector-store files"),
    Opt("vector.target-file-size", MEMORY, effect=CARRIED, since="1.4", note="VECTOR columns only (refused)"),
    Opt("vector-search.distribute.enabled", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("vector-search.lateral-join.batch-size", INT, "256", effect=CARRIED, since="2.0"),
    Opt("pk-vector.index.columns", LIST, effect=WRITES, since="2.0", note="tarn does not maintain primary-key indexes"),
    Opt("pk-btree.index.columns", LIST, effect=WRITES, since="2.0", note="tarn does not maintain primary-key indexes"),
    Opt("pk-bitmap.index.columns", LIST, effect=WRITES, since="2.0", note="tarn does not maintain primary-key indexes"),
    Opt("pk-multivalue.index.columns", LIST,
        effect=WRITES, since="2.1", note="Paimon master (2.1-SNAPSHOT); tarn does not maintain primary-key indexes"),
    Opt("pk-full-text.index.columns", LIST,
        effect=WRITES, since="2.0", note="tarn does not maintain primary-key indexes"),
    Opt("pk-clustering-override", BOOL, "false", immutable=True,
        effect=ACTED, since="1.4",
        note="level-1 files sorted by clustering.columns, compacted as Java's ClusteringCompactManager "
             "(tarn/write/cluster_compact.py); reads skip level 0; refused with deletion-vectors.merge-on-read"),

    # --- Flink connector (paimon-flink-common FlinkConnectorOptions.java); kept in table options ---
    Opt("sink.parallelism", INT, effect=CARRIED, since="0.4"),
    Opt("scan.parallelism", INT, effect=CARRIED, since="0.4"),
    Opt("unaware-bucket.compaction.parallelism", INT, effect=CARRIED, since="0.5"),
    Opt("unaware-bucket.no-shuffle", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("compaction.bucket-distribution-strategy", ENUM, "linear", choices=("linear", "size-aware-batch"),
        effect=CARRIED, since="2.0"),
    Opt("scan.infer-parallelism", BOOL, "true", effect=CARRIED, since="0.4"),
    Opt("scan.infer-parallelism.max", INT, "1024", effect=CARRIED, since="0.6"),
    Opt("changelog-producer.compaction-interval", DURATION, "0 ms", effect=CARRIED, since="0.4"),
    Opt("scan.watermark.emit.strategy", ENUM, "on-event", choices=("on-periodic", "on-event"),
        effect=CARRIED, since="0.4"),
    Opt("scan.watermark.alignment.group", STRING, effect=CARRIED, since="0.4"),
    Opt("scan.watermark.idle-timeout", DURATION, effect=CARRIED, since="0.4"),
    Opt("scan.watermark.alignment.max-drift", DURATION, effect=CARRIED, since="0.4"),
    Opt("scan.watermark.alignment.update-interval", DURATION, "1 s", effect=CARRIED, since="0.4"),
    Opt("scan.split-enumerator.batch-size", INT, "10", effect=CARRIED, since="0.4"),
    Opt("scan.max-snapshot.count", INT, "-1", effect=CARRIED, since="1.2"),
    Opt("scan.split-enumerator.mode", ENUM, "fair", choices=("fair", "preemptive"), effect=CARRIED, since="0.5"),
    Opt("sink.use-managed-memory-allocator", BOOL, "false", effect=CARRIED, since="0.5"),
    Opt("scan.remove-normalize", BOOL, "false", fallback=("log.scan.remove-normalize",), effect=CARRIED, since="0.6"),
    Opt(
        "read.shuffle-bucket-with-partition", BOOL, "true",
        fallback=("streaming-read.shuffle-bucket-with-partition",),
        effect=CARRIED, since="1.2",
    ),
    Opt("sink.managed.writer-buffer-memory", MEMORY, "256 mb", effect=CARRIED, since="0.5"),
    Opt("sink.cross-partition.managed-memory", MEMORY, "256 mb", effect=CARRIED, since="0.6"),
    Opt("source.checkpoint-align.enabled", BOOL, "false", effect=CARRIED, since="0.5"),
    Opt("source.checkpoint-align.timeout", DURATION, "30 s", effect=CARRIED, since="0.5"),
    Opt("lookup.async", BOOL, "false", effect=CARRIED, since="0.5"),
    Opt("lookup.bootstrap-parallelism", INT, "4", effect=CARRIED, since="0.7"),
    Opt("lookup.async-thread-number", INT, "16", effect=CARRIED, since="0.5"),
    Opt("lookup.cache", ENUM, "AUTO", choices=("AUTO", "FULL", "MEMORY"), effect=CARRIED, since="0.7"),
    Opt("scan.partitions", LIST, fallback=("lookup.dynamic-partition",),
        effect=CARRIED, since="1.1", note="Flink sources and lookup joins read only these partitions"),
    Opt("lookup.dynamic-partition.refresh-interval", DURATION, "1 h", effect=CARRIED, since="0.8"),
    Opt("lookup.refresh.async", BOOL, "false", effect=CARRIED, since="0.9"),
    Opt("lookup.dynamic-partition.refresh.async", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("lookup.refresh.async.pending-snapshot-count", INT, "5", effect=CARRIED, since="0.9"),
    Opt("lookup.refresh.time-periods-blacklist", STRING, effect=CARRIED, since="1.0"),
    Opt("lookup.refresh.full-load-threshold", INT, effect=CARRIED, since="1.4"),
    Opt("sink.savepoint.auto-tag", BOOL, "false", effect=CARRIED, since="0.5"),
    Opt("sink.writer-cpu", DOUBLE, "1.0", effect=CARRIED, since="1.2"),
    Opt("sink.writer-memory", MEMORY, effect=CARRIED, since="1.2"),
    Opt("sink.committer-cpu", DOUBLE, "1.0", effect=CARRIED, since="0.6"),
    Opt("sink.committer-memory", MEMORY, effect=CARRIED, since="0.6"),
    Opt("sink.committer-operator-chaining", BOOL, "true", effect=CARRIED, since="0.9"),
    Opt("partition.mark-done-action.mode", ENUM, "process-time", choices=("process-time", "watermark"),
        effect=CARRIED, since="1.1"),
    Opt("partition.idle-time-to-done", DURATION, effect=CARRIED, since="0.9"),
    Opt("partition.time-interval", DURATION, effect=CARRIED, since="0.9"),
    Opt("partition.mark-done.recover-from-state", BOOL, "true", effect=CARRIED, since="1.2"),
    Opt("sink.clustering.sort-in-cluster", BOOL, "true", effect=CARRIED, since="0.9"),
    Opt("sink.clustering.sample-factor", INT, "100", effect=CARRIED, since="0.9"),
    Opt("end-input.watermark", LONG, effect=CARRIED, since="0.9"),
    Opt("precommit-compact", BOOL, "false", fallback=("changelog.precommit-compact",), effect=CARRIED, since="1.1"),
    Opt("changelog.precommit-compact.thread-num", INT, effect=CARRIED, since="1.1"),
    Opt("changelog.precommit-compact.buffer-size", MEMORY, "128 mb", effect=CARRIED, since="1.1"),
    Opt("source.operator-uid.suffix", STRING, effect=CARRIED, since="1.0"),
    Opt("sink.operator-uid.suffix", STRING, effect=CARRIED, since="1.0"),
    Opt("scan.bounded", BOOL, effect=CARRIED, since="1.1"),
    Opt("scan.dedicated-split-generation", BOOL, "false", effect=CARRIED, since="1.2"),
    Opt("commit.custom-listeners", LIST, "", effect=CARRIED, since="1.2"),
    Opt("sink.coordinator-commit.enabled", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("sink.writer-coordinator.enabled", BOOL, "false", effect=CARRIED, since="1.3"),
    Opt("sink.key-only-deletes.enabled", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("sink.writer-coordinator.cache-memory", MEMORY, "2 gb", effect=CARRIED, since="1.3"),
    Opt("sink.writer-coordinator.cache-expire-after-access", DURATION, effect=CARRIED, since="2.0"),
    Opt("sink.writer-coordinator.cache-soft-values", BOOL, "true", effect=CARRIED, since="2.0"),
    Opt("sink.writer-coordinator.page-size", MEMORY, "32 kb", effect=CARRIED, since="1.3"),
    Opt("sink.writer-coordinator.prefetch-manifests", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("filesystem.job-level-settings.enabled", BOOL, "true", effect=CARRIED, since="1.3"),
    Opt("sink.writer-refresh-detectors", LIST, effect=CARRIED, since="1.3"),

    # --- Spark connector (paimon-spark-common SparkConnectorOptions.java) ---
    Opt("requiredSparkConfsCheck.enabled", BOOL, "true", effect=CARRIED, since="1.1"),
    Opt("legacy-timestamp-mapping.enabled", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("vector-search.lateral-join.parallelism", INT, "16", effect=CARRIED, since="2.0"),
    Opt("write.merge-schema", BOOL, "false", effect=CARRIED, since="0.5"),
    Opt("write.merge-schema.type-widening", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("write.merge-schema.explicit-cast", BOOL, "false", effect=CARRIED, since="0.5"),
    Opt("write.use-v2-write", BOOL, "false", effect=CARRIED, since="1.2"),
    Opt("write.hive-style-dynamic-partition.enabled", BOOL, "false",
        effect=CARRIED, since="2.1", note="Paimon master (2.1-SNAPSHOT)"),
    Opt("write.data-evolution.update-conflict-retry.max-attempts", INT, "20", effect=ACTED, since="2.0",
        note="data-evolution updates plan again after a row-id conflict, up to this many attempts"),
    Opt("write.data-evolution.update-conflict-retry.wait-ms", LONG, "10", effect=ACTED, since="2.0",
        note="the wait before another attempt (times the attempt number)"),
    Opt("read.stream.maxFilesPerTrigger", INT, effect=CARRIED, since="0.6"),
    Opt("read.stream.maxBytesPerTrigger", LONG, effect=CARRIED, since="0.6"),
    Opt("read.stream.maxRowsPerTrigger", LONG, effect=CARRIED, since="0.6"),
    Opt("read.stream.minRowsPerTrigger", LONG, effect=CARRIED, since="0.6"),
    Opt("read.stream.maxTriggerDelayMs", LONG, effect=CARRIED, since="0.6"),
    Opt("read.changelog", BOOL, "false",
        effect=CARRIED, since="0.6", note="tarn's Spark source takes it as a read option"),
    Opt("read.allow.fullScan", BOOL, "true", effect=CARRIED, since="1.4"),
    Opt("format-table.repair.collect-statistics", BOOL, "false",
        effect=CARRIED, since="2.1",
        note="Paimon master (2.1-SNAPSHOT); format tables only (type = format-table is refused)"),
    Opt("format-table.statistics.parallelism", INT, "8",
        effect=CARRIED, since="2.1",
        note="Paimon master (2.1-SNAPSHOT); format tables only (type = format-table is refused)"),
    Opt("source.split.target-size-with-column-pruning", BOOL, "false", effect=CARRIED, since="1.4"),

    # --- Iceberg compatibility metadata (paimon-core iceberg/IcebergOptions.java; tarn/iceberg/) ---
    Opt(
        "metadata.iceberg.storage", ENUM, "disabled",
        choices=("disabled", "table-location", "hadoop-catalog", "hive-catalog", "rest-catalog"),
        effect=WRITES, since="1.0", honoured=("table-location", "hadoop-catalog"),
        note="tarn writes Iceberg metadata beside the table (table-location) or under "
             "<warehouse>/iceberg/<db>/<table> (hadoop-catalog); it cannot publish to a Hive "
             "metastore or an Iceberg REST catalog",
    ),
    Opt("metadata.iceberg.storage-location", ENUM, choices=("table-location", "catalog-location"),
        effect=ACTED, since="1.2",
        note="where the Iceberg metadata goes (default: per storage)"),
    Opt("metadata.iceberg.format-version", INT, "2", effect=ACTED, since="1.2",
        note="Iceberg format version 2 or 3 (3 publishes 64-bit deletion vectors)"),
    Opt("metadata.iceberg.compaction.min.file-num", INT, "10", effect=ACTED, since="0.9"),
    Opt("metadata.iceberg.compaction.max.file-num", INT, "50", effect=ACTED, since="0.9"),
    Opt("metadata.iceberg.delete-after-commit.enabled", BOOL, "true", effect=ACTED, since="1.1"),
    Opt("metadata.iceberg.previous-versions-max", INT, "0", effect=ACTED, since="1.1"),
    Opt("metadata.iceberg.manifest-compression", STRING, "snappy", effect=ACTED, since="1.0",
        note="Avro codec of Iceberg manifests and manifest lists"),
    Opt("metadata.iceberg.manifest-legacy-version", BOOL, "false", effect=ACTED, since="1.0",
        note="manifest lists with Iceberg 1.4's field names"),
    Opt("metadata.iceberg.uri", STRING,
        effect=CARRIED, since="1.0", note="Hive / REST catalog storage only (refused by tarn)"),
    Opt("metadata.iceberg.hive-conf-dir", STRING,
        effect=CARRIED, since="1.0", note="Hive catalog storage only (refused by tarn)"),
    Opt("metadata.iceberg.hadoop-conf-dir", STRING,
        effect=CARRIED, since="1.0", note="Hive catalog storage only (refused by tarn)"),
    Opt("metadata.iceberg.hive-client-class", STRING, "org.apache.hadoop.hive.metastore.HiveMetaStoreClient",
        effect=CARRIED, since="1.0", note="Hive catalog storage only (refused by tarn)"),
    Opt("metadata.iceberg.database", STRING,
        effect=CARRIED, since="1.1", note="Hive / REST catalog storage only (refused by tarn)"),
    Opt("metadata.iceberg.table", STRING,
        effect=CARRIED, since="1.1", note="Hive / REST catalog storage only (refused by tarn)"),
    Opt("metadata.iceberg.glue.skip-archive", BOOL, "false",
        effect=CARRIED, since="1.1", note="Hive catalog storage only (refused by tarn)"),
    Opt("metadata.iceberg.hive-skip-update-stats", BOOL, "false",
        effect=CARRIED, since="1.2", note="Hive catalog storage only (refused by tarn)"),

    # --- format options (paimon-format csv/json/text/OrcOptions, avro, mosaic) ---
    Opt("csv.field-delimiter", STRING, ",", fallback=("field-delimiter", "seq", "delimiter"),
        effect=CARRIED, since="0.9", note="CSV files and format tables (refused)"),
    Opt("csv.line-delimiter", STRING, "\n", fallback=("lineSep",),
        effect=CARRIED, since="1.3", note="CSV files and format tables (refused)"),
    Opt("csv.quote-character", STRING, "\"", fallback=("quote",),
        effect=CARRIED, since="1.3", note="CSV files and format tables (refused)"),
    Opt("csv.escape-character", STRING, "\\", fallback=("escape",),
        effect=CARRIED, since="1.3", note="CSV files and format tables (refused)"),
    Opt("csv.include-header", BOOL, "false", fallback=("header",),
        effect=CARRIED, since="1.3", note="CSV files and format tables (refused)"),
    Opt("csv.null-literal", STRING, "", fallback=("nullvalue",),
        effect=CARRIED, since="1.3", note="CSV files and format tables (refused)"),
    Opt(
        "csv.mode", ENUM, "permissive",
        choices=("permissive", "dropmalformed", "failfast"),
        fallback=("mode",),
        effect=CARRIED, since="1.4", note="CSV files and format tables (refused)",
    ),
    Opt("json.ignore-parse-errors", BOOL, "false",
        effect=CARRIED, since="1.3", note="JSON files and format tables (refused)"),
    Opt("json.map-null-key-mode", ENUM, "fail", choices=("fail", "drop", "literal"),
        effect=CARRIED, since="1.3", note="JSON files and format tables (refused)"),
    Opt("json.map-null-key-literal", STRING, "null",
        effect=CARRIED, since="1.3", note="JSON files and format tables (refused)"),
    Opt("json.line-delimiter", STRING, "\n",
        effect=CARRIED, since="1.3", note="JSON files and format tables (refused)"),
    Opt("text.line-delimiter", STRING, "\n", fallback=("lineSep",),
        effect=CARRIED, since="1.4", note="text files and format tables (refused)"),
    # declared intType in Paimon, but the value is a comma list of column names
    Opt("orc.column.encoding.direct", LIST, effect=CARRIED, since="0.5"),
    Opt("orc.dictionary.key.threshold", DOUBLE, "0.8", effect=CARRIED, since="0.5"),
    Opt("orc.timestamp-ltz.legacy.type", BOOL, "true",
        effect=ACTED, since="1.1",
        note="TIMESTAMP_LTZ is an ORC timestamp-instant either way; false stores the exact instant, as tarn "
             "always does, true the value shifted by the writing JVM's zone (none in UTC, where tarn's files match)"),
    Opt("avro.codec", STRING, "snappy", effect=CARRIED, since="1.0", note="compression only"),
    Opt("avro.row-name-mapping", MAP, effect=CARRIED, since="1.0", note="Avro record names only"),
    Opt("mosaic.stats-columns", LIST, "", effect=CARRIED, since="2.0", note="mosaic files (refused)"),
    Opt("mosaic.num-buckets", INT, effect=CARRIED, since="2.0", note="mosaic files (refused)"),

    # --- global index options (paimon-common globalindex/*, paimon-lumina) ---
    Opt("btree-index.compression", STRING, "none", effect=CARRIED, since="1.4"),
    Opt("btree-index.compression-level", INT, "1", effect=CARRIED, since="1.4"),
    Opt("btree-index.block-size", MEMORY, "64 kb", effect=CARRIED, since="1.4"),
    Opt("btree-index.cache-size", MEMORY, "128 mb", effect=CARRIED, since="1.4"),
    Opt("btree-index.high-priority-pool-ratio", DOUBLE, "0.1", effect=CARRIED, since="1.4"),
    Opt("btree-index.fallback-scan-max-size", MEMORY, "256 mb", effect=CARRIED, since="2.0"),
    Opt("btree-index.records-per-range", LONG, "10000000", effect=CARRIED, since="1.4"),
    Opt("btree-index.build.max-parallelism", INT, "4096", effect=CARRIED, since="1.4"),
    Opt("bitmap-index.dictionary-block-size", MEMORY, "16 kb", effect=CARRIED, since="2.0"),
    Opt("bitmap-index.compression", STRING, "none", effect=CARRIED, since="2.0"),
    Opt("bitmap-index.compression-level", INT, "1", effect=CARRIED, since="2.0"),
    Opt("bitmap-index.fallback-scan-max-size", MEMORY, "256 mb", effect=CARRIED, since="2.0"),
    Opt("multivalue-index.dictionary-block-size", MEMORY, "16 kb",
        effect=CARRIED, since="2.1", note="Paimon master (2.1-SNAPSHOT)"),
    Opt("multivalue-index.compression", STRING, "none",
        effect=CARRIED, since="2.1", note="Paimon master (2.1-SNAPSHOT)"),
    Opt("multivalue-index.compression-level", INT, "1",
        effect=CARRIED, since="2.1", note="Paimon master (2.1-SNAPSHOT)"),
    Opt("sorted-index.records-per-range", LONG, "10000000", fallback=("btree-index.records-per-range",),
        effect=CARRIED, since="2.0"),
    Opt("sorted-index.build.max-parallelism", INT, "4096", fallback=("btree-index.build.max-parallelism",),
        effect=CARRIED, since="2.0"),
    Opt("lumina.index.dimension", INT, "128", effect=CARRIED, since="1.4"),
    Opt("lumina.index.type", STRING, "diskann", effect=CARRIED, since="1.4"),
    Opt("lumina.distance.metric", STRING, "inner_product", effect=CARRIED, since="1.4"),
    Opt("lumina.encoding.type", STRING, "pq", effect=CARRIED, since="1.4"),
    Opt("lumina.pretrain.sample_ratio", DOUBLE, "0.2", effect=CARRIED, since="1.4"),
    Opt("lumina.diskann.build.ef_construction", INT, "1024", effect=CARRIED, since="1.4"),
    Opt("lumina.diskann.build.neighbor_count", INT, "64", effect=CARRIED, since="1.4"),
    Opt("lumina.diskann.build.thread_count", INT, "32", effect=CARRIED, since="1.4"),
    Opt("lumina.diskann.search.list_size", INT, effect=CARRIED, since="1.4"),
    Opt("lumina.diskann.search.beam_width", INT, "4", effect=CARRIED, since="1.4"),
    Opt("lumina.encoding.pq.m", INT, "64", effect=CARRIED, since="1.4"),
    Opt("lumina.search.parallel_number", INT, "5", effect=CARRIED, since="1.4"),

    # --- Hive connector (paimon-hive-connector-common HiveConnectorOptions.java) ---
    Opt("paimon.respect.minmaxsplitsize.enabled", BOOL, "false", effect=CARRIED, since="1.3"),
    Opt("paimon.split.openfilecost", LONG, effect=CARRIED, since="1.3"),

    # --- pypaimon 2.1 (Python Paimon) table options Java does not declare ---
    Opt("read.parallelism", INT, effect=CARRIED, since="pypaimon 2.0"),
    Opt("read.native.enabled", BOOL, "false", effect=CARRIED, since="pypaimon 2.1"),
    Opt("write.native.enabled", BOOL, "false", effect=CARRIED, since="pypaimon 2.1"),
    Opt("commit.native.enabled", BOOL, "false", effect=CARRIED, since="pypaimon 2.1"),
    Opt("scan.native-plan.enabled", BOOL, "false", effect=CARRIED, since="pypaimon 2.0"),
    Opt("manifest.sidecar.enabled", BOOL, effect=CARRIED, since="pypaimon 2.1"),
    Opt("data-evolution.write-cols-optimization.enabled", BOOL, "false",
        effect=CARRIED, since="pypaimon 2.1", note="data evolution: a tuning knob of other engines' writers"),
    Opt("global-index.build.parallelism", INT, "1", effect=CARRIED, since="pypaimon 2.1"),
    Opt("global-index.filter.refine-from-data", BOOL, "false", effect=CARRIED, since="pypaimon 2.1"),
    Opt("btree-index.bloom-filter.enabled", BOOL, "false", effect=CARRIED, since="pypaimon 2.1"),
    Opt("sorted-index.records-per-file", LONG, "25000000", effect=CARRIED, since="pypaimon 2.1"),
    Opt("video-frame-field", LIST, effect=READS, since="pypaimon 2.1", note="BLOB columns packed into .video files"),
    Opt("local-cache.enabled", BOOL, "false", effect=CARRIED, since="2.0"),
    Opt("local-cache.dir", STRING, effect=CARRIED, since="2.0"),
    Opt("local-cache.max-size", MEMORY, effect=CARRIED, since="2.0"),
    Opt("local-cache.block-size", MEMORY, "1 mb", effect=CARRIED, since="2.0"),
    Opt("local-cache.whitelist", LIST, "meta,global-index", effect=CARRIED, since="2.0"),
)

# `fields.<column>.<suffix>`: per-column options. `<column>` may be a comma list of columns
# (Paimon splits it on ','), as in `fields.a,b.sequence-group`.
FIELD_OPTIONS: tuple[Opt, ...] = (
    Opt("aggregate-function", ENUM, choices=AGGREGATE_FUNCTIONS,
        effect=ACTED, since="0.4", note="every Paimon function; partial-update groups refuse merge_map_with_keytime"),
    Opt("ignore-retract", BOOL, "false", effect=ACTED, since="0.4"),
    Opt("sequence-group", LIST, effect=ACTED, since="0.5"),
    Opt("default-value", STRING,
        effect=ACTED, since="0.5", note="Paimon 0.5-1.2; newer Paimon keeps defaults in the schema"),
    Opt("list-agg-delimiter", STRING, ",", effect=ACTED, since="0.9"),
    Opt("distinct", BOOL, "false", effect=ACTED, since="0.7"),
    Opt("nested-key", LIST, effect=ACTED, since="0.7"),
    Opt("nested-key-null-strategy", ENUM, "merge", choices=("merge", "ignore", "error"), effect=ACTED, since="2.0"),
    Opt("nested-sequence-field", LIST, effect=ACTED, since="2.0"),
    Opt("count-limit", INT, "2147483647", effect=ACTED, since="1.3"),
    Opt("stats-mode", STATS_MODE, effect=ACTED, since="0.5"),
    Opt("ts-field", STRING, effect=ACTED, since="1.4"),
    Opt("map.storage-layout", ENUM, "default", choices=("default", "shared-shredding"),
        effect=READS, since="2.0", note="shared-shredding stores MAP columns shredded"),
    Opt("map.shared-shredding.max-columns", INT, "256",
        effect=CARRIED, since="2.0", note="used only with map.storage-layout"),
    Opt("map.shared-shredding.column-placement-policy", ENUM, "lru", choices=("plain", "sequential", "lru"),
        effect=CARRIED, since="2.0", note="used only with map.storage-layout"),
    Opt("pk-vector.index.type", STRING, effect=CARRIED, since="2.0", note="used only with pk-vector.index.columns"),
    Opt("pk-vector.index.options", STRING, effect=CARRIED, since="2.0", note="used only with pk-vector.index.columns"),
    Opt("pk-vector.distance.metric", STRING,
        effect=CARRIED, since="2.0", note="used only with pk-vector.index.columns"),
    Opt("pk-btree.index.options", STRING, effect=CARRIED, since="2.0", note="used only with pk-btree.index.columns"),
    Opt("pk-bitmap.index.options", STRING, effect=CARRIED, since="2.0", note="used only with pk-bitmap.index.columns"),
    Opt("pk-multivalue.index.options", STRING,
        effect=CARRIED, since="2.1", note="used only with pk-multivalue.index.columns"),
    Opt("pk-full-text.index.options", STRING,
        effect=CARRIED, since="2.0", note="used only with pk-full-text.index.columns"),
)

# `fields.<vector column>.<suffix>`: per-column overrides handed to the vector index builders.
VECTOR_FIELD_SUFFIXES = (
    "index-type", "train.sample-ratio", "refine_factor", "refine-factor", "rerank_factor", "rerank-factor",
    "index.dimension", "dimension", "distance.metric", "metric", "nlist", "expected-vector-count", "pq.m",
    "pq.code-ratio", "pq.bits", "rq.bits", "target-recall", "max-bytes-per-vector", "deployment-profile",
    "pq.use-opq", "use-opq", "build-preset", "diskann.build-preset", "max-degree", "diskann.max-degree",
    "build-search-list-size", "diskann.build-search-list-size", "alpha", "diskann.alpha", "seed",
    "diskann.seed", "memory-budget-bytes", "diskann.memory-budget-bytes", "storage-layout",
    "diskann.storage-layout", "raw-vector-encoding", "diskann.raw-vector-encoding", "build-distance",
    "diskann.build-distance", "index.type", "encoding.type", "pretrain.sample_ratio",
    "diskann.build.ef_construction", "diskann.build.neighbor_count", "diskann.build.thread_count",
    "diskann.search.list_size", "diskann.search.beam_width", "encoding.pq.m", "search.parallel_number",
)

# `file-index.<type>.columns` declares the indexed columns (comma list; `map[key]` for a map entry);
# `file-index.<type>.<column>.<param>` tunes one declared column.
FILE_INDEX_TYPES: Mapping[str, tuple[Opt, ...]] = MappingProxyType({
    "bloom-filter": (
        Opt("items", INT, "1000000", effect=ACTED, since="0.8"),
        Opt("fpp", DOUBLE, "0.1", effect=ACTED, since="0.8"),
    ),
    "bitmap": (
        Opt("version", INT, "2", effect=ACTED, since="1.1"),
        Opt("index-block-size", MEMORY, "16 kb", effect=ACTED, since="1.1"),
    ),
    "bsi": (),
    "range-bitmap": (
        Opt("chunk-size", MEMORY, "16 kb", effect=CARRIED, since="1.3",
            note="tarn writes no range-bitmap index; files without one are read in full"),
    ),
})

# `<prefix><anything>`: options Paimon hands on unread to a file format, a file system, an index
# library or the Iceberg catalog. Any key under these prefixes is accepted as a string.
FREE_PREFIXES = (
    "parquet.", "orc.", "avro.", "csv.", "json.", "text.", "lance.", "mosaic.", "vortex.",
    "fs.", "hadoop.", "s3.", "s3a.", "oss.", "gs.", "azure.",
    "full-text.", "lumina.", "lumina-vector-ann.", "diskann.", "ivf.", "ivf-flat.", "ivf-pq.", "ivf-rq.",
    "ivf-sq.", "es-index.",
    "metadata.iceberg.rest.", "metadata.iceberg.table-properties.",
)

# Algorithm prefixes also allowed per column: `fields.<column>.<algorithm>.<anything>`.
VECTOR_FIELD_PREFIXES = ("lumina.", "diskann.", "ivf.", "ivf-flat.", "ivf-pq.", "ivf-rq.", "ivf-sq.", "full-text.")

# `commit.callback.<class>.param` / `tag.callback.<class>.param`: the argument of one callback class.
CALLBACK_PARAM = re.compile(r"(commit|tag)\.callback\.[^.].*\.param")


# ---------------------------------------------------------------------------------------------
# lookup

BY_NAME: Mapping[str, Opt] = MappingProxyType({o.name: o for o in OPTIONS})
_PRIMARY_OF_FALLBACK = {old: o.name for o in OPTIONS for old in o.fallback}
_FIELD_SUFFIXES = {o.name: o for o in FIELD_OPTIONS}
# longest first, so "map.shared-shredding.max-columns" wins over shorter suffixes it ends with
_FIELD_SUFFIX_ORDER = sorted(
    [*_FIELD_SUFFIXES, *VECTOR_FIELD_SUFFIXES], key=len, reverse=True)
_FREE_STRING = Opt("", STRING)


@dataclass(frozen=True)
class _Match:
    """What a key resolves to: its Opt, and the columns a per-column key names."""

    opt: Opt
    columns: tuple[str, ...] = ()
    index_type: str | None = None  # file-index.<type>.<column>.<param>


def _match(key: str) -> _Match | None:
    opt = BY_NAME.get(key) or BY_NAME.get(_PRIMARY_OF_FALLBACK.get(key, ""))
    if opt is not None:
        return _Match(opt)
    if key.startswith("fields."):
        return _match_field(key)
    if key.startswith("file-index."):
        return _match_file_index(key)
    if CALLBACK_PARAM.fullmatch(key) or key.startswith(FREE_PREFIXES):
        return _Match(_FREE_STRING)
    return None


def _match_field(key: str) -> _Match | None:
    rest = key[len("fields."):]
    for suffix in _FIELD_SUFFIX_ORDER:
        if rest.endswith("." + suffix) and len(rest) > len(suffix) + 1:
            columns = rest[: -len(suffix) - 1]
            return _Match(_FIELD_SUFFIXES.get(suffix, _FREE_STRING), tuple(columns.split(",")))
    column, _, option = rest.partition(".")
    if column and option.startswith(VECTOR_FIELD_PREFIXES):
        return _Match(_FREE_STRING, (column,))
    return None


def _match_file_index(key: str) -> _Match | None:
    parts = key.split(".")
    index_type = parts[1] if len(parts) > 1 else ""
    if index_type not in FILE_INDEX_TYPES:
        return None
    if len(parts) == 3 and parts[2] == "columns":
        return _Match(Opt(key, LIST))
    if len(parts) == 4:
        for opt in FILE_INDEX_TYPES[index_type]:
            if opt.name == parts[3]:
                return _Match(opt, (parts[2],), index_type)
    return None


def match_key(key: str) -> Opt | None:
    """The Opt a table's key resolves to (fixed name, older name, per-column or per-index
    pattern, or a free prefix), None for a key Paimon does not know."""
    found = _match(key)
    return None if found is None else found.opt


@functools.lru_cache(maxsize=4096)  # keys resolve the same way for the process's life
def option(name: str) -> Opt:
    """The Opt a key resolves to (fixed name, older name, or a per-column / per-index pattern).

    Raises KeyError for a name Paimon does not know."""
    found = _match(name)
    if found is None:
        raise KeyError(f"unknown Paimon option '{name}'")
    return found.opt


def closest_option(key: str) -> str:
    """The known option name most like `key` (patterns filled in with the key's own column)."""
    candidates = list(BY_NAME)
    parts = key.split(".")
    if key.startswith("fields.") and len(parts) > 2:
        candidates += [f"fields.{parts[1]}.{suffix}" for suffix in _FIELD_SUFFIXES]
    if key.startswith("file-index."):
        for index_type, params in FILE_INDEX_TYPES.items():
            candidates.append(f"file-index.{index_type}.columns")
            if len(parts) >= 4:
                candidates += [f"file-index.{index_type}.{parts[2]}.{p.name}" for p in params]
    return difflib.get_close_matches(key, candidates, n=1, cutoff=0.0)[0]


# ---------------------------------------------------------------------------------------------
# parsing values the way Paimon does

_INT_RANGE = {INT: 31, LONG: 63}
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)")
_MEMORY_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}
_NANOS_PER = {"ns": 1, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000,
              "h": 3_600_000_000_000, "d": 86_400_000_000_000}
_DURATION_UNITS = {
    "": _NANOS_PER["ms"],
    **dict.fromkeys(("d", "day", "days"), _NANOS_PER["d"]),
    **dict.fromkeys(("h", "hour", "hours"), _NANOS_PER["h"]),
    **dict.fromkeys(("min", "m", "minute", "minutes"), _NANOS_PER["min"]),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), _NANOS_PER["s"]),
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), _NANOS_PER["ms"]),
    **dict.fromkeys(("µs", "micro", "micros", "microsecond", "microseconds"), _NANOS_PER["µs"]),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), _NANOS_PER["ns"]),
}
_NUMBER_AND_UNIT = re.compile(r"\s*([0-9]+)\s*(.*?)\s*")
_STATS_MODE = re.compile(r"none|counts|full|truncate\(\d+\)", re.IGNORECASE)


def _number_and_unit(text: str, units: Mapping[str, int], what: str) -> int:
    found = _NUMBER_AND_UNIT.fullmatch(text)
    if found is None:
        raise ValueError(f"expected a {what} such as {'256 mb' if what == 'memory size' else '10 min'}")
    unit = found.group(2).lower()
    if unit not in units:
        raise ValueError(f"unknown {what} unit '{found.group(2)}' (known: {', '.join(u for u in units if u)})")
    value = int(found.group(1)) * units[unit]
    if value >= 1 << 63:
        raise ValueError(f"{what} does not fit in 64 bits")
    return value


def parse_memory_size(text: str) -> int:
    """Bytes of a Paimon MemorySize string: "256 mb", "8MB", "128 kb", "1g", "500" (bytes)."""
    return _number_and_unit(text, _MEMORY_UNITS, "memory size")


def parse_duration_ms(text: str) -> int:
    """Milliseconds of a Paimon duration string: "1 h", "10 min", "30 s", "100 ms", "1d", "500" (ms)."""
    return _number_and_unit(text, _DURATION_UNITS, "duration") // _NANOS_PER["ms"]


def parse_bool(text: str) -> bool:
    """Paimon's boolean: "true" or "false" in any case."""
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def parse_int(text: str, bits: int = 31) -> int:
    """A Java int (bits=31) or long (bits=63): optional sign and decimal digits, in range."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError("expected an integer")
    value = int(text)
    if not -(1 << bits) <= value < 1 << bits:
        raise ValueError(f"out of range for a {'long' if bits == 63 else 'int'}")
    return value


def parse_double(text: str) -> float:
    """A Java double literal ("0.5", "1e-3", "2d", "NaN")."""
    if not _JAVA_DOUBLE.fullmatch(text.strip()):
        raise ValueError("expected a number")
    return float(text.strip().rstrip("fFdD").replace("Infinity", "inf"))


def parse_enum(text: str, choices: tuple[str, ...]) -> str:
    """The choice `text` names, compared case-insensitively as Paimon does."""
    for choice in choices:
        if choice.upper() == text.upper():
            return choice
    raise ValueError(f"expected one of: {', '.join(choices)}")


def parse_list(text: str) -> list[str]:
    """Comma-separated items, stripped; empty items dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_map(text: str) -> dict[str, str]:
    """Paimon's map form "k1:v1,k2:v2"."""
    pairs = {}
    for item in parse_list(text):
        key, sep, value = item.partition(":")
        if not sep or ":" in value:
            raise ValueError(f"expected key:value pairs separated by ',' (bad item '{item}')")
        pairs[key.strip()] = value.strip()
    return pairs


def check_value(opt: Opt, value: str) -> None:
    """Raise ValueError (with the allowed form) if `value` is not a valid value of `opt`."""
    if opt.kind in _INT_RANGE:
        parse_int(value, _INT_RANGE[opt.kind])
    elif opt.kind is BOOL:
        parse_bool(value)
    elif opt.kind is DOUBLE:
        parse_double(value)
    elif opt.kind is ENUM:
        parse_enum(value, opt.choices)
    elif opt.kind is MEMORY:
        parse_memory_size(value)
    elif opt.kind is DURATION:
        parse_duration_ms(value)
    elif opt.kind is MAP:
        parse_map(value)
    elif opt.kind is STATS_MODE and not _STATS_MODE.fullmatch(value):
        raise ValueError("expected none, counts, full or truncate(N)")


# ---------------------------------------------------------------------------------------------
# validation at table creation


# Value ranges (inclusive) of numeric and size options where another value is nonsense: a
# negative retry count fails every write, a zero target file size writes a file per row.
RANGES: Mapping[str, tuple[int | None, int | None]] = MappingProxyType({
    "commit.max-retries": (0, None),
    "target-file-size": (1, None),
    "target-file-row-num": (1, None),
    "write-buffer-size": (1, None),
    "page-size": (1, None),
    "file.block-size": (1, None),
    "file.compression.zstd-level": (-131072, 22),
    "manifest.target-file-size": (1, None),
    "manifest.merge-min-count": (1, None),
    "manifest.full-compaction-threshold-size": (0, None),
    "num-sorted-run.compaction-trigger": (1, None),
    "num-sorted-run.stop-trigger": (1, None),
    "num-levels": (2, None),
    "compaction.max-size-amplification-percent": (0, None),
    "compaction.size-ratio": (0, None),
    "compaction.min.file-num": (1, None),
    "compaction.offpeak.start.hour": (-1, 23),
    "compaction.offpeak.end.hour": (-1, 23),
    "full-compaction.delta-commits": (1, None),
    "changelog.num-retained.min": (1, None),
    "changelog.num-retained.max": (1, None),
    "tag.num-retained-max": (1, None),
    "read.batch-size": (1, None),
    "write.batch-size": (1, None),
    "source.split.target-size": (1, None),
    "source.split.open-file-cost": (0, None),
    "scan.max-splits-per-task": (1, None),
    "sort-spill-threshold": (2, None),
    "local-sort.max-num-file-handles": (2, None),
    "lookup.cache-max-memory-size": (0, None),
    "lookup.cache-max-disk-size": (0, None),
    "dynamic-bucket.target-row-num": (1, None),
    "dynamic-bucket.initial-buckets": (1, None),
    "cross-partition-upsert.bootstrap-parallelism": (1, None),
})


def _check_range(key: str, opt: Opt, value: str) -> None:
    """Raise ValueError when a numeric or size option lies outside RANGES."""
    if key not in RANGES:
        return
    number = parse_memory_size(value) if opt.kind is MEMORY else int(value.strip())
    low, high = RANGES[key]
    if low is not None and number < low:
        raise ValueError(f"must be at least {low}" + (" byte(s)" if opt.kind is MEMORY else ""))
    if high is not None and number > high:
        raise ValueError(f"must be at most {high}")


def validate_options(options: Mapping[str, str], table_name: str, field_names: Iterable[str] = ()) -> None:
    """Raise InvalidOption for an unknown key, a value Paimon would not parse, or a per-column key
    naming a column the table does not have (checked only when `field_names` is given)."""
    columns = set(field_names)
    for key, value in options.items():
        found = _match(key)
        if found is None:
            raise InvalidOption(
                f"table '{table_name}': unknown option '{key}'; did you mean '{closest_option(key)}'?")
        _check_one(found, key, value, options, table_name, columns)


def _check_one(found: _Match, key: str, value: str, options: Mapping[str, str], table_name: str,
               columns: set[str]) -> None:
    if not isinstance(value, str):
        raise InvalidOption(f"table '{table_name}': option '{key}' must be a string, got {type(value).__name__}")
    try:
        check_value(found.opt, value)
        _check_range(key, found.opt, value)
    except ValueError as e:
        raise InvalidOption(f"table '{table_name}': option '{key}' has invalid value '{value}': {e}") from None
    if key == "bucket" and not (int(value) in (-1, -2) or int(value) > 0):
        raise InvalidOption(f"table '{table_name}': option 'bucket' has invalid value '{value}': must be -1, -2 or > 0")
    if found.index_type is not None:
        declared = f"file-index.{found.index_type}.columns"
        if found.columns[0] not in parse_list(options.get(declared, "")):
            raise InvalidOption(
                f"table '{table_name}': option '{key}' tunes column '{found.columns[0]}', "
                f"which '{declared}' does not list")
    elif columns:
        for column in _columns_named(found, key, value):
            if column not in columns:
                raise InvalidOption(
                    f"table '{table_name}': option '{key}' names column '{column}', which does not exist "
                    f"(columns: {', '.join(sorted(columns))})")


def _columns_named(found: _Match, key: str, value: str) -> list[str]:
    """The table columns a key (and, for sequence groups and file indexes, its value) refers to."""
    if key.startswith("fields.") and key.endswith(".sequence-group"):
        return [*found.columns, *parse_list(value)]
    if key.startswith("file-index.") and key.endswith(".columns"):
        return [c.split("[", 1)[0].strip() for c in parse_list(value)]
    return list(found.columns)


# ---------------------------------------------------------------------------------------------
# typed read access


@dataclass(frozen=True, eq=False)
class Options:
    """A read-only view of a table's options. It does not validate: a table written by another
    engine loads whatever it carries. Accessors take Paimon option names (unknown ones are a
    programming error: KeyError) and fall back to Paimon's older keys, then to its default."""

    raw: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", MappingProxyType(dict(self.raw)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Options) and dict(self.raw) == dict(other.raw)

    def __hash__(self) -> int:
        return hash(frozenset(self.raw.items()))

    def updated(self, changes: Mapping[str, str] | None) -> "Options":
        """These options with `changes` set on top (None or empty: these)."""
        return Options({**self.raw, **changes}) if changes else self

    def get(self, name: str) -> str | None:
        """The value set for `name` (or an older key Paimon reads for it), else Paimon's default."""
        opt = option(name)
        if name in self.raw:
            return self.raw[name]
        for old in opt.fallback if opt.name == name else ():
            if old in self.raw:
                return self.raw[old]
        return opt.default

    def _parsed(self, name: str, parse):
        value = self.get(name)
        if value is None:
            return None
        try:
            return parse(value.strip())
        except ValueError as e:
            raise InvalidOption(f"option '{name}' has invalid value '{value}': {e}") from None

    def int(self, name: str) -> int | None:
        return self._parsed(name, lambda v: parse_int(v, 63))

    def bool(self, name: str) -> bool | None:
        return self._parsed(name, parse_bool)

    def float(self, name: str) -> float | None:
        return self._parsed(name, parse_double)

    def memory_bytes(self, name: str) -> int | None:
        return self._parsed(name, parse_memory_size)

    def duration_ms(self, name: str) -> int | None:
        return self._parsed(name, parse_duration_ms)

    def enum(self, name: str) -> str | None:
        """The choice as Paimon spells it (e.g. "deduplicate"), matched case-insensitively."""
        choices = option(name).choices
        if not choices:
            raise KeyError(f"option '{name}' is not an enum")
        return self._parsed(name, lambda v: parse_enum(v, choices))

    def list(self, name: str) -> list[str]:
        value = self.get(name)
        return [] if value is None else parse_list(value)

    # -- the options the rest of tarn reads most ------------------------------------------------

    @property
    def bucket(self) -> int:
        return self.int("bucket")

    @property
    def file_format(self) -> str:
        return self.get("file.format").lower()

    @property
    def merge_engine(self) -> str:
        return self.enum("merge-engine")

    @property
    def changelog_producer(self) -> str:
        return self.enum("changelog-producer")

    @property
    def sequence_fields(self) -> list[str]:
        return self.list("sequence.field")

    @property
    def partition_default_name(self) -> str:
        return self.get("partition.default-name")

    def target_file_size(self, has_primary_key: bool) -> int:
        """`target-file-size` in bytes; unset, Paimon uses 128 mb for primary-key tables, else 256 mb."""
        explicit = self.memory_bytes("target-file-size")
        if explicit is not None:
            return explicit
        return (128 if has_primary_key else 256) << 20

    @property
    def write_buffer_size(self) -> int:
        return self.memory_bytes("write-buffer-size")

    @property
    def manifest_merge_min_count(self) -> int:
        return self.int("manifest.merge-min-count")

    @property
    def manifest_target_file_size(self) -> int:
        return self.memory_bytes("manifest.target-file-size")

    @property
    def manifest_full_compaction_threshold_size(self) -> int:
        return self.memory_bytes("manifest.full-compaction-threshold-size")

    @property
    def manifest_compression(self) -> str:
        return self.get("manifest.compression")

    @property
    def file_compression(self) -> str:
        return self.get("file.compression")

    @property
    def file_compression_zstd_level(self) -> int:
        return self.int("file.compression.zstd-level")

    def stats_mode(self, column: str) -> str:
        """`fields.<column>.stats-mode` if set, else `metadata.stats-mode` (default truncate(16))."""
        return self.raw.get(f"fields.{column}.stats-mode") or self.get("metadata.stats-mode")

    @property
    def ignore_delete(self) -> bool:
        return self.bool("ignore-delete")

    @property
    def rowkind_field(self) -> str | None:
        return self.get("rowkind.field")

    @property
    def commit_max_retries(self) -> int:
        return self.int("commit.max-retries")

    @property
    def snapshot_num_retained_min(self) -> int:
        return self.int("snapshot.num-retained.min")

    @property
    def snapshot_num_retained_max(self) -> int:
        return self.int("snapshot.num-retained.max")

    @property
    def snapshot_time_retained_ms(self) -> int:
        return self.duration_ms("snapshot.time-retained")

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.bool("deletion-vectors.enabled")

    @property
    def write_only(self) -> bool:
        return self.bool("write-only")

    @property
    def dynamic_partition_overwrite(self) -> bool:
        return self.bool("dynamic-partition-overwrite")


def as_options(options: "Options | Mapping[str, str] | None") -> Options:
    """An Options view of a table's options given as Options, a plain mapping or None."""
    if isinstance(options, Options):
        return options
    return Options(dict(options or {}))


def is_immutable(key: str) -> bool:
    """Paimon refuses to change this option once the table exists."""
    option = BY_NAME.get(key)
    return option is not None and option.immutable
