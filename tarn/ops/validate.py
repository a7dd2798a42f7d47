"""One validation path for a table schema and its options: creation (catalog, Spark) and
`Table.alter` run the same checks, so nothing `alter` accepts can make the next write fail.

Tables written by other engines are not validated when they load: tarn reads whatever a
table carries; only what tarn itself creates or changes goes through here.
"""

from __future__ import annotations

from tarn.bucket import check_bucket_function
from tarn.codec.data_file import FORMATS, shredding_shapes
from tarn.codec.file_index import check_index_types
from tarn.data import clustering
from tarn.data.external_paths import ExternalRoots
from tarn.data.record_expire import check_time_field
from tarn.errors import InvalidOption, TarnError
from tarn.iceberg import check_iceberg
from tarn.lsm.aggregate import validate_aggregation
from tarn.lsm.first_row import validate_first_row
from tarn.lsm.partial_update import validate_partial_update
from tarn.ops.expire import check_retention_options
from tarn.ops.partition_expire import check_expiry_options
from tarn.ops.tags import check_tag_options
from tarn.meta.schema import TableSchema
from tarn.scan.startup import check_start_options
from tarn.types import TYPE_TRAITS, first_root_where, type_traits
from tarn.options import Options, as_options, is_immutable, validate_options
from tarn.write.assign import check_dynamic_options
from tarn.meta.shape import BucketMode, bucket_mode, bucket_problem
from tarn.write.cross_partition import check_cross_partition


def validate_table(schema: TableSchema, identifier: str) -> None:
    """Raise a TarnError naming the table, column and option when tarn cannot create or write
    a table with this schema: unknown or invalid options, engine/type combinations Paimon
    rejects, unwritable formats and bucket modes."""
    problems = table_problems(schema, identifier)
    if problems:
        raise problems[0]


def validate_change(before: TableSchema, after: TableSchema, identifier: str) -> None:
    """The checks of `validate_table` on an altered schema, and no option Paimon treats as
    immutable changed. A problem the table already had (a table another engine made with
    options tarn cannot write) does not block other changes."""
    known = {str(p) for p in table_problems(before, identifier)}
    new = [p for p in table_problems(after, identifier) if str(p) not in known]
    if new:
        raise new[0]
    try:
        _check_bucket_change(before, after, identifier)
    except ValueError:  # an unparsable bucket was reported above, or came with the table
        pass
    _check_immutable_options(before, after, identifier)


def _check_immutable_options(before: TableSchema, after: TableSchema, identifier: str) -> None:
    """Options Paimon refuses to change once the table exists."""
    for key in set(before.options) | set(after.options):
        if before.options.get(key) != after.options.get(key) and is_immutable(key):
            raise InvalidOption(f"table {identifier}: option '{key}' cannot be changed after creation")


def table_problems(schema: TableSchema, identifier: str) -> list[TarnError]:
    """Every problem the checks find, each check run on its own."""
    options = as_options(schema.options)  # raw: the shape presumes options that passed these checks
    checks = [
        lambda: validate_options(dict(schema.options), identifier, schema.field_names),
        lambda: _check_bucket(schema, options, identifier),
        lambda: check_bucket_function(schema, identifier),
        lambda: _check_format(options, identifier),
        lambda: _check_key_types(schema, identifier),
        lambda: check_merge_engine(schema, options, identifier),
        lambda: _check_deletion_vectors(schema, options, identifier),
        lambda: _check_file_indexes(schema, identifier),
        lambda: check_retention_options(schema.options, identifier),
        lambda: check_tag_options(options, identifier),
        lambda: _check_streaming_overwrite(schema, options, identifier),
        lambda: _check_row_tracking(schema, options, identifier),
        lambda: _check_type_formats(schema, options, identifier),
        lambda: check_iceberg(schema, identifier),
        lambda: check_start_options(options, identifier),
        lambda: check_expiry_options(schema, options, identifier),
        lambda: _check_record_expire(schema, options, identifier),
        lambda: ExternalRoots.of(options, identifier),
        lambda: _check_snapshot_ordering(schema, options, identifier),
        lambda: _check_clustering(schema, options, identifier),
    ]
    problems = []
    for check in checks:
        try:
            check()
        except TarnError as problem:
            problems.append(problem)
    return problems


def _check_clustering(schema: TableSchema, options: Options, identifier: str) -> None:
    """Java's validateIncrementalClustering, and the clustering columns and strategy the sorters
    take (Java fails on them at the first sort)."""
    if options.bool("pk-clustering-override"):
        _check_pk_clustering(schema, options, identifier)
    if not options.get("clustering.columns") and not options.bool("clustering.incremental"):
        return
    columns, _ = clustering.columns_and_strategy(options, identifier)
    clustering.check_columns(columns, schema.fields, identifier)
    if not options.bool("clustering.incremental"):
        return
    if schema.primary_keys:
        raise InvalidOption(f"table {identifier}: 'clustering.incremental' is for append tables (this one has "
                            f"primary key {list(schema.primary_keys)})")
    if options.int("bucket") not in (None, -1) and (options.bool("bucket-append-ordered")
                                                     or options.bool("deletion-vectors.enabled")):
        raise InvalidOption(f"table {identifier}: 'clustering.incremental' with a fixed 'bucket' needs "
                            "'bucket-append-ordered' = 'false' and no 'deletion-vectors.enabled'")


def _check_pk_clustering(schema: TableSchema, options: Options, identifier: str) -> None:
    """Java's validatePkClusteringOverride."""
    engine = (options.get("merge-engine") or "deduplicate").lower()
    problem = None
    if not options.get("clustering.columns"):
        problem = "needs 'clustering.columns'"
    elif engine not in ("deduplicate", "first-row"):
        problem = f"works with the deduplicate and first-row merge engines only (not '{engine}')"
    elif engine != "first-row" and not options.bool("deletion-vectors.enabled"):
        problem = "needs 'deletion-vectors.enabled' = 'true' (unless the merge engine is first-row)"
    elif options.get("record-level.expire-time"):
        problem = "cannot be used with 'record-level.expire-time'"
    elif options.get("sequence.field"):
        problem = "cannot be used with 'sequence.field'"
    elif (options.get("changelog-producer") or "none").lower() not in ("none", "input"):
        problem = "works with 'changelog-producer' none or input only"
    if problem:
        raise InvalidOption(f"table {identifier}: 'pk-clustering-override' {problem}")


def _check_snapshot_ordering(schema: TableSchema, options: Options, identifier: str) -> None:
    """`sequence.snapshot-ordering` (Java's validateSnapshotSequenceOrdering): a primary-key
    table without `sequence.field`, written `write-only` (compactions run apart)."""
    if not options.bool("sequence.snapshot-ordering"):
        return
    if not schema.primary_keys:
        raise InvalidOption(f"table {identifier}: 'sequence.snapshot-ordering' needs a primary key")
    if options.get("sequence.field"):
        raise InvalidOption(f"table {identifier}: 'sequence.snapshot-ordering' cannot be used with 'sequence.field'")
    if not options.bool("write-only"):
        raise InvalidOption(f"table {identifier}: 'sequence.snapshot-ordering' needs 'write-only' = true "
                            f"(compact the table in a job of its own)")


def _check_record_expire(schema: TableSchema, options: Options, identifier: str) -> None:
    """`record-level.time-field` names an INT, BIGINT or TIMESTAMP column (Java's rule)."""
    if options.get("record-level.expire-time") is not None or options.get("record-level.time-field") is not None:
        check_time_field(schema, options, identifier)


def _check_bucket(schema: TableSchema, options: Options, identifier: str) -> None:
    """Bucket modes tarn writes: fixed (`bucket` > 0), dynamic (-1, primary key holding the
    partition keys) and unaware (-1, append tables); Java's rules on `bucket-key` and the
    dynamic-bucket options."""
    try:
        bucket = options.int("bucket")
    except ValueError as exc:
        raise InvalidOption(f"table {identifier}: option 'bucket': {exc}") from None
    problem = bucket_problem(bucket, bool(schema.primary_keys))
    if problem:
        raise TarnError(f"table {identifier}: {problem}")
    if not schema.primary_keys and bucket > 0 and not options.get("bucket-key"):
        raise TarnError(f"table {identifier}: an append table with bucket={bucket} needs 'bucket-key'")
    if bucket == -1 and options.get("bucket-key"):
        raise InvalidOption(f"table {identifier}: 'bucket-key' needs a fixed 'bucket' > 0 (with bucket=-1 "
                            "there are no hashed buckets to spread keys over)")
    if bucket == -1 and schema.primary_keys:
        check_dynamic_options(options, identifier)
    if bucket_mode(bucket, schema.primary_keys, schema.partition_keys) is BucketMode.CROSS_PARTITION:
        check_cross_partition(schema, options, identifier)


def _check_type_formats(schema: TableSchema, options: Options, identifier: str) -> None:
    """Columns of a type Paimon stores in some file formats only (VARIANT: parquet; its ORC and
    Avro writers have none; types.TYPE_TRAITS `formats`)."""
    shredding_shapes(dict(schema.options))  # a shredding schema that is not a shreddable ROW fails here
    fmt = (options.get("file.format") or "parquet").lower()
    for f in schema.fields:
        root = first_root_where(f.type, lambda t: fmt not in t.formats)
        if root is not None:
            stored = ", ".join(type_traits(root).formats)
            raise InvalidOption(f"table {identifier}: column '{f.name}' is a {root}, which Paimon stores in "
                                f"{stored} files only; 'file.format' is '{fmt}'")


def _check_row_tracking(schema: TableSchema, options: Options, identifier: str) -> None:
    """Java's SchemaValidation.validateRowTracking: row ids on append tables of bucket = -1;
    data evolution only with row tracking (and without incremental clustering)."""
    tracking = options.bool("row-tracking.enabled")
    if tracking and schema.primary_keys:
        raise InvalidOption(f"table {identifier}: 'row-tracking.enabled' is for append tables; a table with a "
                            "primary key cannot track row ids (Paimon refuses it too)")
    if tracking and options.int("bucket") != -1:
        raise InvalidOption(f"table {identifier}: 'row-tracking.enabled' needs 'bucket' = -1, not "
                            f"{options.get('bucket')}")
    taken = [n for n in ("_ROW_ID", "_SEQUENCE_NUMBER") if n in schema.field_names]
    if tracking and taken:
        raise InvalidOption(f"table {identifier}: column {taken[0]!r} is the name of a row-tracking system "
                            "column; rename it or leave 'row-tracking.enabled' off")
    if options.bool("data-evolution.enabled"):
        if not tracking:
            raise InvalidOption(f"table {identifier}: 'data-evolution.enabled' needs 'row-tracking.enabled' = "
                                "'true' (rows are lined up by their row ids)")
        if options.bool("clustering.incremental"):
            raise InvalidOption(f"table {identifier}: 'data-evolution.enabled' does not work with "
                                "'clustering.incremental'")


def _check_bucket_change(before: TableSchema, after: TableSchema, identifier: str) -> None:
    """Java's alter rules: a table leaves or enters bucket=-1 (dynamic or unaware) only by being
    created again; other bucket counts change freely (then rescale)."""
    old, new = as_options(before.options).int("bucket"), as_options(after.options).int("bucket")
    if old == new:
        return
    if old == -1:
        raise InvalidOption(f"table {identifier}: 'bucket' cannot change when it is -1")
    if new == -1:
        raise InvalidOption(f"table {identifier}: 'bucket' cannot change to -1")


def _check_deletion_vectors(schema: TableSchema, options: Options, identifier: str) -> None:
    """The PIP's limits of deletion-vector mode (first-row is refused by its engine check)."""
    if not options.bool("deletion-vectors.enabled") or not schema.primary_keys:
        return
    producer = options.changelog_producer
    if producer not in ("none", "lookup"):
        raise InvalidOption(f"table {identifier}: 'deletion-vectors.enabled' works with 'changelog-producer' "
                            f"none or lookup only, not '{producer}'")
    if options.bool("lookup-wait") is False:
        raise InvalidOption(f"table {identifier}: 'deletion-vectors.enabled' needs "
                            "'lookup-wait' = true")


def _check_file_indexes(schema: TableSchema, identifier: str) -> None:
    """Index types Paimon cannot build for a column's type (bloom on BOOLEAN, bitmap on DECIMAL, ...)."""
    try:
        check_index_types(dict(schema.options), {f.name: f.type for f in schema.fields})
    except InvalidOption as exc:
        raise InvalidOption(f"table {identifier}: {exc}") from None


def _check_format(options: Options, identifier: str) -> None:
    file_format = (options.get("file.format") or "parquet").lower()
    if file_format not in FORMATS:
        raise InvalidOption(f"table {identifier}: option 'file.format'='{file_format}' is a Paimon format "
                            "tarn cannot write yet (use parquet, orc or avro)")


def _check_streaming_overwrite(schema: TableSchema, options: Options, identifier: str) -> None:
    """Java's SchemaValidation: append tables take `streaming-read-append-overwrite` instead."""
    if not schema.primary_keys and options.bool("streaming-read-overwrite"):
        raise InvalidOption(f"table {identifier}: option 'streaming-read-overwrite' applies to primary-key tables; "
                            "append tables stream their overwrite commits with 'streaming-read-append-overwrite'")


def _check_key_types(schema: TableSchema, identifier: str) -> None:
    """Keys are compared and hashed: Paimon refuses types without an order or a hash there
    (ARRAY, MAP, MULTISET, ROW, VARIANT; types.TYPE_TRAITS `key`)."""
    try:
        bucket_keys = list(schema.bucket_keys)
    except Exception:  # noqa: BLE001 - a bad bucket-key is reported by its own check
        bucket_keys = []
    refused = ", ".join(root for root, t in TYPE_TRAITS.items() if not t.key and t.implemented)
    upsert_keys = as_options(schema.options).list("upsert-key")
    if as_options(schema.options).bool("primary-key.nullable") and not schema.primary_keys:
        raise InvalidOption(f"table {identifier}: option 'primary-key.nullable' can only be enabled for a table "
                            "with primary keys")
    if upsert_keys and schema.primary_keys:
        raise InvalidOption(f"table {identifier}: cannot define 'upsert-key' {upsert_keys} with primary key "
                            f"{list(schema.primary_keys)}")
    for kind, keys in (("primary key", schema.primary_keys), ("partition key", schema.partition_keys),
                       ("bucket key", bucket_keys), ("upsert key", upsert_keys)):
        for key in keys:
            if key not in schema.field_names:
                raise InvalidOption(f"table {identifier}: the {kind} names unknown column '{key}' "
                                    f"(columns: {schema.field_names})")
            root = schema.field(key).type.root
            if not type_traits(root).key:
                raise InvalidOption(f"table {identifier}: column '{key}' has type {root} and cannot be a {kind}: "
                                    f"keys are compared and hashed, and Paimon refuses {refused} there")


def check_merge_engine(schema, options: Options, identifier: str) -> None:
    """Engine/option combinations Paimon rejects, named by field and option."""
    engine = options.get("merge-engine") or "deduplicate"
    for name in options.list("sequence.field"):
        if name not in schema.field_names:
            raise InvalidOption(f"table {identifier}: option 'sequence.field' names unknown column '{name}'")
        if schema.field(name).type.root in ("GEOMETRY", "GEOGRAPHY"):
            raise InvalidOption(f"table {identifier}: geometry and geography columns cannot be sequence fields "
                                f"('{name}')")
    if not schema.primary_keys:
        if engine != "deduplicate":
            raise InvalidOption(f"table {identifier}: 'merge-engine' needs a primary key")
        return
    padding = [p.strip().lower() for p in options.list("sequence.auto-padding")]
    unknown = [p for p in padding if p not in ("row-kind-flag", "second-to-micro", "millis-to-micro")]
    if unknown:
        raise InvalidOption(f"table {identifier}: option 'sequence.auto-padding' has unknown mode(s) {unknown} "
                            "(row-kind-flag, second-to-micro, millis-to-micro)")
    if padding and not options.list("sequence.field"):
        raise InvalidOption(f"table {identifier}: option 'sequence.auto-padding' needs 'sequence.field'")
    fields, keys = list(schema.fields), list(schema.primary_keys)
    if engine == "aggregation":
        validate_aggregation(fields, keys, options, identifier)
    elif engine == "partial-update":
        validate_partial_update(fields, keys, options, identifier)
    elif engine == "first-row":
        validate_first_row(fields, keys, options, identifier)
