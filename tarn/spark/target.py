"""What a Spark read or write of "tarn" targets: its options, the table (or system table) a
path names, the snapshot a time-travel option selects.

Spark hands a Python data source its options in a case-insensitive map (keys lower-cased).
Every option is checked on the driver before any task runs: connector options (below) and
Paimon table options are accepted, anything else fails naming the closest known option.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from pyspark.sql.types import StringType, StructField, StructType

import tarn
from tarn.spark.ref import CATALOG, CATALOG_PREFIX, for_tasks, open_table
from tarn.store.branches import split_object_name
from tarn.table import split_branch_path
from tarn.scan.scan import scan_fields
from tarn.scan.sql_filter import parse_filter
from tarn import s3
from tarn.errors import InvalidOption, TableNotFound, TarnError
from tarn.meta.snapshot import Snapshot
from tarn.options import Options, closest_option, validate_options
from tarn.spark.types import spark_schema, spark_schema_of

FORMAT = "tarn"
# Storage options (docs/object-stores.md) ride along with the data source options to every
# executor, which opens the table with them; they are never table options.
# The catalog of a `db.table` path (`catalog`, `catalog.<key>`: tarn/spark/ref.py) rides along too.
STORAGE_OPTIONS = frozenset(s3.OPTIONS) | {CATALOG}
ROW_KIND_COLUMN = "rowkind"  # the column `read.changelog` adds (as Paimon's Spark connector)

# Options of the connector itself (lower-case, as Spark passes them).
READ_OPTIONS = {
    "path", "branch", "columns", "filter", "versionasof", "timestampasof", "read.changelog",
    # streaming read limits (Paimon's Spark connector options)
    "read.stream.maxfilespertrigger", "read.stream.maxbytespertrigger", "read.stream.maxrowspertrigger",
    "read.stream.minrowspertrigger", "read.stream.maxtriggerdelayms",
} | STORAGE_OPTIONS
WRITE_OPTIONS = {
    "path", "branch", "primary-key", "partition", "partitionoverwritemode", "overwrite-partition",
    "commit-user", "checkpointlocation", "write.bucket-owned", "like",
} | STORAGE_OPTIONS
TRAVEL_OPTIONS = ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis", "versionasof", "timestampasof")


def plain_options(options) -> dict[str, str]:
    """Spark's case-insensitive option map as a plain dict of lower-case keys."""
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def check_options(options: dict[str, str], connector: set[str], what: str) -> dict[str, str]:
    """The Paimon table options among `options`, validated; unknown keys fail."""
    table_options = {k: v for k, v in options.items() if k not in connector and not k.startswith(CATALOG_PREFIX)}
    try:
        validate_options(table_options, what)
    except InvalidOption as exc:
        key = next((k for k in table_options if str(exc).find(f"'{k}'") >= 0), None)
        if key is not None and "unknown option" in str(exc):
            known = sorted(connector - {"write.bucket-owned"})
            raise InvalidOption(f"{what}: unknown option '{key}' (not a tarn connector option "
                                f"{known} nor a Paimon option; closest Paimon option: "
                                f"'{closest_option(key)}')") from None
        raise
    return table_options


def table_path(options: dict[str, str]) -> str:
    """The table path; option `branch` (Paimon's) makes it that branch's (`<path>$branch_<name>`)."""
    path = options.get("path")
    if not path:
        raise TarnError("format 'tarn' needs a table path: .load(path) / .save(path) or option('path', ...), "
                        "or a db.table identifier with option('catalog', NAME)")
    branch = options.get("branch")
    if branch and branch != "main":
        base, system = split_system_table(path)
        named = split_branch_path(base)[1]
        if named is not None and named != branch:
            raise InvalidOption(f"table {path}: option 'branch'='{branch}' differs from the path's branch '{named}'")
        if named is None:
            path = f"{base.rstrip('/')}$branch_{branch}" + (f"${system}" if system else "")
    return path


def split_system_table(path: str) -> tuple[str, str | None]:
    """`/wh/db.db/t$snapshots` -> (`/wh/db.db/t`, 'snapshots'); `t$branch_dev$snapshots` ->
    (`t$branch_dev`, 'snapshots'); a branch path has no system table."""
    head, _, tail = path.rstrip("/").rpartition("/")
    if "$" not in tail:
        return path, None
    try:
        name, branch, system = split_object_name(tail)
    except ValueError as exc:
        raise InvalidOption(f"table path {path}: {exc}") from None
    if branch != "main":
        name = f"{name}$branch_{branch}"
    return (f"{head}/{name}" if head else name), system


def storage_of(options: dict[str, str]) -> dict[str, str] | None:
    """The storage options (`s3.endpoint`, ...) and the catalog options (as tasks receive them:
    tarn/spark/ref.py) among data source options, if any; a misspelt `s3.` key fails."""
    among = {k: v for k, v in options.items() if k.startswith(("s3.", CATALOG_PREFIX)) or k == CATALOG}
    return for_tasks(among)


def load(path: str, storage: dict[str, str] | None = None) -> tarn.Table:
    try:
        return open_table(path, storage)
    except TableNotFound as exc:
        raise TableNotFound(f"{exc}; create it first, or write a DataFrame to it "
                            "(df.write.format('tarn') creates missing tables)") from None


# ---------------------------------------------------------------------------------------------
# time travel


def _timestamp_millis(text: str) -> int:
    """`timestampAsOf`: unix seconds (an integer, as in SQL `TIMESTAMP AS OF 1700000000`) or a
    local date-time such as '2026-11-20 10:00:00[.123]'."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text) * 1000
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidOption(f"option 'timestampAsOf'='{text}' is neither unix seconds nor a "
                            "date-time like '2026-11-20 10:00:00'") from None
    return int(moment.timestamp() * 1000)


def _long(options: dict, key: str) -> int:
    try:
        return int(options[key])
    except ValueError:
        raise InvalidOption(f"option '{key}'='{options[key]}' is not an integer") from None


def travel_selector(options: dict[str, str]) -> tuple[str, object] | None:
    """The one time-travel selector given: ('snapshot', id), ('tag', name) or ('time', ms)."""
    given = [k for k in TRAVEL_OPTIONS if options.get(k) not in (None, "")]
    if len(given) > 1:
        raise InvalidOption(f"time travel takes one of {list(TRAVEL_OPTIONS)}, got {given}")
    if not given:
        return None
    key = given[0]
    value = options[key]
    if key == "scan.snapshot-id":
        return "snapshot", _long(options, key)
    if key == "scan.tag-name":
        return "tag", value
    if key == "scan.timestamp-millis":
        return "time", _long(options, key)
    if key == "versionasof":
        return ("snapshot", int(value)) if value.strip().isdigit() else ("tag", value)
    return "time", _timestamp_millis(value)


def resolve_snapshot(table: tarn.Table, selector: tuple[str, object] | None) -> Snapshot | None:
    """The snapshot a batch read sees: the latest, or the one time travel names."""
    if selector is None:
        return table.latest_snapshot()
    kind, value = selector
    from tarn.ops import time_travel

    return time_travel.resolve(table, snapshot_id=value if kind == "snapshot" else None,
                               tag=value if kind == "tag" else None, timestamp_ms=value if kind == "time" else None)


INCREMENTAL = "incremental"  # stored_start's answer for an incremental read (tarn/ops/incremental.py)


def start_options(table: tarn.Table, options: dict[str, str]):
    """The table's options with a read's start options laid over them."""
    from tarn.scan import startup

    given = {k: v for k, v in options.items() if k in startup.START_KEYS or k == "scan.bucket"
             or k.startswith("incremental-between")}
    return table.schema().shape.options.updated(given)


def stored_start(table: tarn.Table, options: dict[str, str], travelled: bool):
    """Where a batch read starts by the table's `scan.*` options with the read's laid over
    them (tarn/scan/startup.py); None when neither sets any."""
    from tarn.scan import startup

    merged = start_options(table, options)
    if not startup.has_start(merged):
        return None
    if not travelled and startup.is_incremental(merged):
        return INCREMENTAL
    start = startup.batch_start(table, merged, travelled)
    if start.snapshot is not None and start.pinned:
        from tarn.ops import time_travel

        time_travel.check_read_mode(table, start.snapshot)
    return start


# ---------------------------------------------------------------------------------------------
# what a read is about


@dataclass(frozen=True)
class ReadTarget:
    """Everything a batch read needs, resolved on the driver: table path, snapshot, columns."""

    path: str
    system: str | None
    snapshot: Snapshot | None
    columns: tuple[str, ...] | None
    options: dict
    schema_id: int | None = None  # the snapshot's schema with time travel, else the table's current one
    bucket: int | None = None  # `scan.bucket`
    files_from_ms: int | None = None  # `scan.file-creation-time-millis` (tarn/scan/startup.py)
    incremental: bool = False  # the table's (or the read's) incremental options: changed rows

    @classmethod
    def of(cls, raw_options, for_stream: bool = False) -> "ReadTarget":
        options = plain_options(raw_options)
        path, system = split_system_table(table_path(options))
        check_options(options, READ_OPTIONS, f"table {path}")
        table = load(path, storage_of(options))
        columns = None
        if options.get("columns"):
            columns = tuple(c.strip() for c in options["columns"].split(",") if c.strip())
        selector = travel_selector(options)
        start = None if (system or for_stream) else stored_start(table, options, selector is not None)
        incremental = start == INCREMENTAL
        start = None if incremental else start
        pinned = selector is not None or (start is not None and start.pinned)
        if system or for_stream:
            snapshot = None
        elif start is not None and start.pinned and selector is None:
            snapshot = start.snapshot
        else:
            snapshot = resolve_snapshot(table, selector)
        schema_id = snapshot.schema_id if (snapshot is not None and pinned) else table.schema().id
        target = cls(path, system, snapshot, columns, options, schema_id,
                     start.bucket if start else None, start.files_from_ms if start else None, incremental)
        target.check_columns(table)
        if options.get("filter"):  # a bad filter fails on the driver, before any task runs
            table.scan_snapshot(snapshot, target.filter_predicate(), None, target.table_schema(table))
        return target

    @property
    def storage(self) -> dict[str, str] | None:
        return storage_of(self.options)

    def open(self) -> tarn.Table:
        return load(self.path, self.storage)

    def table_schema(self, table: tarn.Table):
        return table.schema_by_id(self.schema_id) if self.schema_id is not None else table.schema()

    def scan(self, table: tarn.Table, predicate=None, columns: list[str] | None = None):
        """The tarn Scan of the snapshot read, with the schema read (option
        `postpone.merge-on-read` given to the read overrides the table's)."""
        schema = self.table_schema(table)
        merge = self.options.get("postpone.merge-on-read")
        if merge is not None:
            schema = replace(schema, options={**schema.options, "postpone.merge-on-read": merge})
        given = self.filter_predicate()
        if given is not None:
            predicate = given if predicate is None else predicate & given
        scan = table.scan_snapshot(self.snapshot, predicate, columns, schema)
        scan.bucket, scan.files_from_ms = self.bucket, self.files_from_ms
        return scan

    def changed_rows(self, table: tarn.Table, predicate=None, columns: list[str] | None = None,
                     with_kinds: bool = False):
        """An incremental read's rows (tarn/ops/incremental.py): +I/+U rows, or with `with_kinds`
        every row with its kind in a first `rowkind` column."""
        from tarn.ops import incremental

        span = incremental.from_options(table.core, start_options(table, self.options))
        given = self.filter_predicate()
        if given is not None:
            predicate = given if predicate is None else predicate & given
        if not with_kinds:
            return incremental.IncrementalScan(table.core, span, predicate, columns).to_arrow()
        rows = incremental.read(table.core, span)
        rows = incremental.IncrementalScan.filtered(rows, table.core, span, predicate)
        return rows.select([rows.column_names[0], *(columns or rows.column_names[1:])])

    def filter_predicate(self):
        """Option `filter`: tarn's SQL-like filter text, applied by tarn (partitions, buckets and
        files pruned, rows filtered) whether or not Spark pushes its own filters down."""
        text = self.options.get("filter")
        return parse_filter(text, self.path) if text else None

    def check_columns(self, table: tarn.Table) -> None:
        if self.columns is None or self.system:
            return
        names = [f.name for f in scan_fields(self.table_schema(table))]  # `_ROW_ID` on row-tracking tables
        unknown = [c for c in self.columns if c not in names]
        if unknown:
            raise tarn.SchemaMismatch(f"table {self.path}: option 'columns' names unknown column(s) "
                                      f"{unknown} (columns: {names})")

    def spark_schema(self) -> StructType:
        table = self.open()
        if self.system:
            from tarn.ops.system_tables import system_table
            return spark_schema_of(system_table(table, self.system).schema)
        schema = self.table_schema(table)
        names = self.columns if self.columns is not None else schema.field_names
        by_name = {f.name: f for f in scan_fields(schema)}
        result = spark_schema([by_name[n] for n in names])
        if self.options.get("read.changelog", "false").lower() == "true":
            result = StructType([StructField(ROW_KIND_COLUMN, StringType(), False), *result.fields])
        return result

    def table_options(self) -> Options:
        """The table's options with the read's Paimon options laid over them."""
        table = self.open()
        overrides = {k: v for k, v in self.options.items() if k not in READ_OPTIONS}
        return self.table_schema(table).shape.options_with(overrides)
