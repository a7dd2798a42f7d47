"""Option names, Paimon defaults, validation at creation and lenient typed reads."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tarn.errors import InvalidOption
from tarn.options import (
    BY_NAME, FIELD_OPTIONS, OPTIONS, Kind, Options, check_value, closest_option, option,
    parse_duration_ms, parse_memory_size, validate_options,
)

MB = 1 << 20


def invalid(options, fields=("k", "v")) -> str:
    with pytest.raises(InvalidOption) as caught:
        validate_options(options, "db.t", fields)
    assert "db.t" in str(caught.value)
    return str(caught.value)


# --- the table itself ------------------------------------------------------------------------

def test_table_is_large_unique_and_self_consistent():
    assert len(OPTIONS) > 450
    assert len(BY_NAME) == len(OPTIONS)
    for opt in OPTIONS:
        if opt.default is not None:
            check_value(opt, opt.default)  # every default parses as its own kind
        if opt.kind is Kind.ENUM:
            assert opt.choices
            assert opt.default is None or opt.default in opt.choices
    for old in (old for opt in OPTIONS for old in opt.fallback):
        option(old)  # older keys are known too
    for opt in FIELD_OPTIONS:
        if opt.default is not None:
            check_value(opt, opt.default)


@pytest.mark.parametrize("name, default", [
    ("bucket", "-1"),
    ("file.format", "parquet"),
    ("merge-engine", "deduplicate"),
    ("changelog-producer", "none"),
    ("sequence.field", None),
    ("deletion-vectors.enabled", "false"),
    ("partition.default-name", "__DEFAULT_PARTITION__"),
    ("target-file-size", None),
    ("write-buffer-size", "256 mb"),
    ("manifest.merge-min-count", "30"),
    ("manifest.target-file-size", "8 mb"),
    ("manifest.full-compaction-threshold-size", "16 mb"),
    ("manifest.compression", "zstd"),
    ("file.compression", "zstd"),
    ("file.compression.zstd-level", "1"),
    ("metadata.stats-mode", "truncate(16)"),
    ("ignore-delete", "false"),
    ("rowkind.field", None),
    ("commit.max-retries", "10"),
    ("snapshot.num-retained.min", "10"),
    ("snapshot.num-retained.max", "2147483647"),
    ("snapshot.time-retained", "1 h"),
    ("write-only", "false"),
    ("dynamic-partition-overwrite", "true"),
    ("data-file.prefix", "data-"),
    ("changelog-file.prefix", "changelog-"),
    ("partition.legacy-name", "true"),
    ("file-index.in-manifest-threshold", "500 bytes"),
    ("num-sorted-run.compaction-trigger", "5"),
    ("commit.min-retry-wait", "10 ms"),
    ("write-buffer-spill.max-disk-size", "9223372036854775807 bytes"),
])
def test_paimon_defaults(name, default):
    assert option(name).default == default
    assert Options({}).get(name) == default


def test_hot_properties_defaults():
    o = Options({})
    assert o.bucket == -1
    assert o.file_format == "parquet"
    assert o.merge_engine == "deduplicate"
    assert o.changelog_producer == "none"
    assert o.sequence_fields == []
    assert o.partition_default_name == "__DEFAULT_PARTITION__"
    assert o.target_file_size(has_primary_key=True) == 128 * MB
    assert o.target_file_size(has_primary_key=False) == 256 * MB
    assert o.write_buffer_size == 256 * MB
    assert o.manifest_merge_min_count == 30
    assert o.manifest_target_file_size == 8 * MB
    assert o.manifest_full_compaction_threshold_size == 16 * MB
    assert o.manifest_compression == "zstd"
    assert o.file_compression == "zstd"
    assert o.file_compression_zstd_level == 1
    assert o.stats_mode("v") == "truncate(16)"
    assert o.ignore_delete is False
    assert o.rowkind_field is None
    assert o.commit_max_retries == 10
    assert o.snapshot_num_retained_min == 10
    assert o.snapshot_num_retained_max == 2**31 - 1
    assert o.snapshot_time_retained_ms == 3_600_000
    assert o.deletion_vectors_enabled is False
    assert o.write_only is False
    assert o.dynamic_partition_overwrite is True


def test_hot_properties_set():
    o = Options({
        "bucket": "4", "file.format": "ORC", "merge-engine": "Partial-Update", "changelog-producer": "lookup",
        "sequence.field": "ts, seq", "target-file-size": "64mb", "fields.v.stats-mode": "full",
        "metadata.stats-mode": "none", "snapshot.time-retained": "30 min", "deletion-vectors.enabled": "TRUE",
    })
    assert o.bucket == 4
    assert o.file_format == "orc"
    assert o.merge_engine == "partial-update"
    assert o.changelog_producer == "lookup"
    assert o.sequence_fields == ["ts", "seq"]
    assert o.target_file_size(has_primary_key=True) == 64 * MB
    assert o.stats_mode("v") == "full"
    assert o.stats_mode("k") == "none"
    assert o.snapshot_time_retained_ms == 1_800_000
    assert o.deletion_vectors_enabled is True


def test_fallback_keys_are_read():
    assert Options({"write.compaction-skip": "true"}).write_only is True
    assert Options({"partial-update.ignore-delete": "true"}).ignore_delete is True
    assert Options({"ignore-delete": "false", "first-row.ignore-delete": "true"}).ignore_delete is False
    assert Options({"log.scan": "latest"}).enum("scan.mode") == "latest"


def test_per_column_and_index_accessors():
    o = Options({"fields.v.aggregate-function": "SUM", "file-index.bloom-filter.v.fpp": "0.01"})
    assert o.enum("fields.v.aggregate-function") == "sum"
    assert o.get("fields.k.ignore-retract") == "false"
    assert o.get("fields.v.list-agg-delimiter") == ","
    assert o.float("file-index.bloom-filter.v.fpp") == 0.01
    assert o.get("file-index.bloom-filter.k.items") == "1000000"


# --- validation ------------------------------------------------------------------------------

@pytest.mark.parametrize("key, closest", [
    ("bukcet", "bucket"),
    ("merge-engin", "merge-engine"),
    ("fields.v.agregate-function", "fields.v.aggregate-function"),
    ("fields.v.ignore-retracts", "fields.v.ignore-retract"),
    ("fields.default-aggregate-functon", "fields.default-aggregate-function"),
    ("changelog-produser", "changelog-producer"),
    ("deletion-vector.enabled", "deletion-vectors.enabled"),
    ("file-index.bloom-filter.column", "file-index.bloom-filter.columns"),
    ("file-index.bloom-filtr.columns", "file-index.bloom-filter.columns"),
    ("sequence.fields", "sequence.field"),
])
def test_typo_names_closest(key, closest):
    message = invalid({key: "1"})
    assert f"'{key}'" in message
    assert f"did you mean '{closest}'?" in message
    assert closest_option(key) == closest


@pytest.mark.parametrize("key, value, expected", [
    ("bucket", "two", "expected an integer"),
    ("bucket", "99999999999", "out of range"),
    ("bucket", "0", "-1, -2 or > 0"),
    ("deletion-vectors.enabled", "yes", "true or false"),
    ("merge-engine", "dedup", "deduplicate, partial-update, aggregation, first-row"),
    ("changelog-producer", "always", "none, input, full-compaction, lookup"),
    ("write-buffer-size", "12 qb", "unknown memory size unit"),
    ("write-buffer-size", "-1 mb", "memory size"),
    ("snapshot.time-retained", "1 fortnight", "unknown duration unit"),
    ("snapshot.time-retained", "1.5 h", "duration"),
    ("metadata.stats-mode", "truncate", "truncate(N)"),
    ("fields.v.stats-mode", "some", "truncate(N)"),
    ("fields.v.aggregate-function", "summ", "last_non_null_value"),
    ("file.format", "parqet", "parquet, orc, avro"),
    ("lookup.cache.bloom.filter.fpp", "low", "expected a number"),
    ("file.compression.per.level", "0-none", "key:value"),
    ("target-file-row-num", "9223372036854775808", "out of range"),
])
def test_invalid_values(key, value, expected):
    message = invalid({key: value})
    assert f"'{key}'" in message and f"'{value}'" in message
    assert expected in message


def test_per_column_keys_name_existing_columns():
    message = invalid({"fields.nope.aggregate-function": "sum"})
    assert "'nope'" in message and "does not exist" in message
    assert "'zz'" in invalid({"fields.k,zz.sequence-group": "v"})
    assert "'w'" in invalid({"fields.k.sequence-group": "v,w"})
    assert "'x'" in invalid({"file-index.bloom-filter.columns": "x"})
    # without field names only the key's form is checked
    validate_options({"fields.nope.aggregate-function": "sum"}, "db.t")


def test_file_index_param_needs_declared_column():
    message = invalid({"file-index.bloom-filter.v.fpp": "0.01"})
    assert "file-index.bloom-filter.columns" in message
    validate_options({"file-index.bloom-filter.columns": "v, m[a]", "file-index.bloom-filter.v.fpp": "0.01",
                      "file-index.bitmap.columns": "k", "file-index.bitmap.k.index-block-size": "32kb"},
                     "db.t", ["k", "v", "m"])


def test_valid_options_pass():
    validate_options({
        "bucket": "4", "bucket-key": "k", "merge-engine": "AGGREGATION", "changelog-producer": "input",
        "sequence.field": "v", "deletion-vectors.enabled": "true", "write-buffer-size": "64 mb",
        "target-file-size": "134217728", "snapshot.time-retained": "2d", "commit.timeout": "30 s",
        "fields.v.aggregate-function": "sum", "fields.v.ignore-retract": "true",
        "fields.default-aggregate-function": "last_non_null_value", "fields.k,v.sequence-group": "v",
        "fields.v.stats-mode": "truncate(32)", "metadata.stats-mode": "FULL",
        "file.compression.per.level": "0:lz4,1:zstd", "write.compaction-skip": "true",
        "parquet.block.size": "1048576", "orc.bloom.filter.columns": "k", "fs.s3.endpoint": "x",
        "commit.callback.com.example.Hook.param": "x", "sink.parallelism": "2",
        "metadata.iceberg.storage": "table-location", "csv.field-delimiter": ";", "path": "/tmp/t",
        "lumina.index.dimension": "64", "fields.v.lumina.custom": "1", "fields.v.distance.metric": "l2",
        "lookup.cache.bloom.filter.fpp": "5e-2", "read.parallelism": "4",
    }, "db.t", ["k", "v"])


def test_options_view_does_not_validate():
    weird = {"bukcet": "x", "merge-engine": "something-new", "fields.gone.aggregate-function": "?"}
    o = Options(weird)
    assert dict(o.raw) == weird
    assert o.get("bucket") == "-1"
    with pytest.raises(InvalidOption, match="merge-engine"):
        o.merge_engine  # only reading a value it cannot parse fails, and names the option
    with pytest.raises(TypeError):
        o.raw["bucket"] = "1"  # read-only


def test_unknown_accessor_name_is_a_programming_error():
    with pytest.raises(KeyError):
        Options({}).get("bukcet")
    with pytest.raises(KeyError):
        Options({}).int("no-such-option")
    with pytest.raises(KeyError):
        Options({}).enum("bucket")  # not an enum option


def test_list_accessor():
    o = Options({"sequence.field": "", "bucket-key": " a ,b,, c "})
    assert o.list("sequence.field") == []
    assert o.list("bucket-key") == ["a", "b", "c"]
    assert o.list("primary-key") == []


# --- memory sizes and durations --------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("256 mb", 256 * MB), ("8MB", 8 * MB), ("128 kb", 128 << 10), ("1g", 1 << 30), ("1 gb", 1 << 30),
    ("2 t", 2 << 40), ("500", 500), ("500 b", 500), ("7 bytes", 7), ("3 mebibytes", 3 * MB),
    ("  16  k  ", 16 << 10), ("0", 0), ("9223372036854775807 bytes", 2**63 - 1),
])
def test_parse_memory_size(text, expected):
    assert parse_memory_size(text) == expected


@pytest.mark.parametrize("text", ["", "mb", "1.5 mb", "-1", "1 pb", "9223372036854775808", "8 mib"])
def test_parse_memory_size_rejects(text):
    with pytest.raises(ValueError):
        parse_memory_size(text)


@pytest.mark.parametrize("text, expected", [
    ("1 h", 3_600_000), ("10 min", 600_000), ("10 m", 600_000), ("30 s", 30_000), ("100 ms", 100),
    ("1d", 86_400_000), ("2 days", 172_800_000), ("5 hours", 18_000_000), ("3 seconds", 3000),
    ("250", 250), ("1500 µs", 1), ("999 micro", 0), ("2000000 ns", 2), ("1 MIN", 60_000),
])
def test_parse_duration(text, expected):
    assert parse_duration_ms(text) == expected


@pytest.mark.parametrize("text", ["", "h", "1.5 h", "-5 s", "1 fortnight", "1 hr"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        parse_duration_ms(text)


@given(st.integers(min_value=0, max_value=2**32), st.sampled_from(["b", "kb", "mb", "gb"]))
def test_memory_size_units(n, unit):
    scale = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30}[unit]
    assert parse_memory_size(f"{n} {unit}") == n * scale
    assert parse_memory_size(f"{n}{unit.upper()}") == n * scale
