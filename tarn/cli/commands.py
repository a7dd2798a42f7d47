"""The commands of `tarn` (the typer app); tarn/cli/__init__.py holds the entry point.

TABLE is a table directory or URI (`/data/wh/shop.db/orders`, `s3://bucket/wh/shop.db/orders`),
or `db.table` with `--warehouse WH` (or the TARN_WAREHOUSE environment variable). Every command
prints tables for people and, with `--json`, one JSON document on stdout for scripts. Errors go
to stderr with exit status 1 (2 for a bad command line).

typer and rich are core dependencies of tarn-lake: a plain `pip install tarn-lake` gives the
command.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import json
import re
import time
from pathlib import Path
from typing import Annotated, Optional

import importlib.util
import os
import sys

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable
from rich.text import Text

import tarn
from tarn.cli.missing import missing_package_message
from tarn.errors import InvalidArgument, TarnError


def _lazy(name: str):
    """Module `name`, loaded when first used: `tarn --help` imports neither pyarrow nor tarn's
    table layers (it answers in a fraction of a second)."""
    if name in sys.modules:
        if sys.modules[name] is None:  # blocked: as if not installed
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return sys.modules[name]
    spec = importlib.util.find_spec(name)  # a missing package fails here, not at first use
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


pa = _lazy("pyarrow")
lsm_drawing = _lazy("tarn.cli.lsm")
_catalog = _lazy("tarn.catalog")
_where = _lazy("tarn.cli.where")
_fs = _lazy("tarn.fs")
_options = _lazy("tarn.options")
_table = _lazy("tarn.table")
_types = _lazy("tarn.types")

app = typer.Typer(
    name="tarn", no_args_is_help=True, add_completion=False, pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Look at and look after Apache Paimon tables. TABLE is a table directory or URI, or db.table "
         "with --warehouse or of a catalog named by -c (tarn -c NAME info db.t; catalogs in ~/.tarn.yaml).")


# ---------------------------------------------------------------------------------------------
# arguments every command shares

TableArg = Annotated[str, typer.Argument(
    metavar="TABLE", help="table directory or URI, or db.table with --warehouse (or tarn -c CATALOG)",
    show_default=False)]
WarehouseOpt = Annotated[Optional[str], typer.Option(
    "--warehouse", "-w", envvar="TARN_WAREHOUSE", metavar="WH",
    help="warehouse of a db.table identifier (a directory or URI)")]
StorageOpt = Annotated[Optional[list[str]], typer.Option(
    "--storage-option", "-S", metavar="KEY=VALUE", help="storage option (s3.endpoint, s3.access-key, ...); repeatable")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON for scripts instead of tables")]
AtOpt = Annotated[Optional[str], typer.Option(
    "--at", metavar="TAG|SNAPSHOT", help="read a tag, or a snapshot id (a number)")]


def _version(value: bool) -> None:
    if value:  # tarn.__version__ is the one source (the tarn-lake distribution's version reads it)
        typer.echo(f"tarn {tarn.__version__}")
        raise typer.Exit()


# the catalog named by `tarn -c NAME ...` (or TARN_CATALOG): db.table identifiers are its tables
_chosen = {"catalog": None}


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="print the version and exit")] = False,
          catalog: Annotated[Optional[str], typer.Option(
              "--catalog", "-c", envvar="TARN_CATALOG", metavar="NAME",
              help="a catalog of ~/.tarn.yaml (or $TARN_CONFIG): TABLE is then its db.table")] = None) -> None:
    """Look at and look after Apache Paimon tables."""
    from tarn.progress import show_progress

    _chosen["catalog"] = catalog
    show_progress(True)  # bars on a terminal (stderr), for long work: compaction, analyze, expiry


tag_app = typer.Typer(no_args_is_help=True, help="Create and delete tags (`tarn tags` lists them).")
app.add_typer(tag_app, name="tag")
branch_app = typer.Typer(no_args_is_help=True, help="Create, list, delete and fast-forward branches.")
app.add_typer(branch_app, name="branch")


def command(name: str | None = None, group=None, **settings):
    """Register a command (on `app`, or `group`) whose tarn, Arrow and OS errors become
    `error: ...` and exit status 1."""
    def register(function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except (TarnError, OSError, pa.ArrowException) as e:
                fail(str(e) or type(e).__name__)
            except ModuleNotFoundError as e:  # a package a command loads on first use
                message = missing_package_message(e)
                if message is None:
                    raise
                fail(message)
            except KeyboardInterrupt:
                interrupted()

        (group or app).command(name, **settings)(run)
        return function
    return register


def interrupted() -> None:
    """Ctrl-C: one line, then exit at once (status 130). What was written is gone with the
    interrupted call (a commit is atomic: the table holds it whole or not at all); worker
    threads still finishing a file are not waited for (their files, if any, are orphans that
    `tarn orphans` removes)."""
    errors().print(Text("interrupted: ", style="bold red")
                   + Text("stopped; the table holds every commit that finished, and nothing of this one "
                          "unless it said it committed"), soft_wrap=True)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(130)


def fail(message: str, status: int = 1):
    errors().print(Text("error: ", style="bold red") + Text(message), soft_wrap=True)
    raise typer.Exit(status)


def output() -> Console:
    """stdout: rich on a terminal; plain and unwrapped when piped (scripts, files)."""
    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, no_color=True, width=100_000, soft_wrap=True)


def plain_style() -> dict:
    """Table settings: rich's boxes on a terminal; plain columns when piped (no box drawing)."""
    return {} if sys.stdout.isatty() else {"box": None, "show_edge": False, "pad_edge": False}


def errors() -> Console:
    return Console(stderr=True, highlight=False)


def key_values(pairs: list[str] | None, what: str) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint=what)
        out[key.strip()] = value
    return out


def names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def is_identifier(table: str) -> bool:
    """TABLE is `db.table` (or `table`), not a path or URI."""
    return "/" not in table and "\\" not in table and "://" not in table


def catalog_of(warehouse: str | None, storage: list[str] | None, creating: bool = False):
    """The catalog db.table identifiers name: `-c NAME`, else --warehouse (which must exist unless
    `creating`); None without either."""
    if _chosen["catalog"]:
        if storage:
            raise typer.BadParameter("storage options of a named catalog belong in its config entry",
                                     param_hint="'--storage-option'")
        from tarn.catalog.loader import load_catalog

        return load_catalog(_chosen["catalog"])
    if not warehouse:
        return None
    if not creating and "://" not in warehouse and not Path(warehouse).is_dir():
        raise TarnError(f"warehouse {warehouse} does not exist")
    return _catalog.Catalog(warehouse, key_values(storage, "'--storage-option'") or None)


def open_table(table: str, warehouse: str | None, storage: list[str] | None) -> Table:
    """The table named on the command line: an identifier of the chosen catalog (`-c NAME` or
    --warehouse) when TABLE is no path or URI, otherwise the table stored at TABLE."""
    catalog = catalog_of(warehouse, storage) if is_identifier(table) else None
    if catalog is not None:
        return catalog.load_table(table)
    options = key_values(storage, "'--storage-option'") or None
    try:
        return _table.load_table(table, options)
    except TarnError:
        if "/" not in table and "." in table and not Path(table).exists():
            raise TarnError(f"no table at {table!r}: for a db.table identifier give --warehouse WH "
                            "(or set TARN_WAREHOUSE) or a catalog: tarn -c NAME ...") from None
        raise


def travel(at: str | None) -> dict:
    """`--at`: a snapshot id when it is a number, else a tag name."""
    if at is None:
        return {}
    if re.fullmatch(r"\d+", at.strip()):
        return {"snapshot_id": int(at)}
    return {"tag": at}


def moment_ms(text: str, option: str) -> int:
    """`--older-than`: a duration back from now ('1 d', '2h', '30 min', '0 s') or an ISO time
    ('2026-01-31', '2026-01-31T12:00', local unless it names a zone), as epoch millis."""
    try:
        return int(time.time() * 1000) - _options.parse_duration_ms(text)
    except ValueError:
        pass
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(f"{text!r} is neither a duration ('1 d', '2 h', '30 min') nor an ISO time "
                                 "('2026-01-31T12:00')", param_hint=option) from None
    return int(moment.timestamp() * 1000)


def partition_specs(table: Table, specs: list[str] | None) -> list[dict] | None:
    """`--partition k=v,k2=v2` (repeatable) as dicts of typed partition values."""
    if not specs:
        return None
    schema = table.schema()
    out = []
    for spec in specs:
        values = key_values([p for p in spec.split(",") if p.strip()], "'--partition'")
        unknown = [k for k in values if k not in schema.partition_keys]
        if unknown:
            raise typer.BadParameter(f"{unknown} are not partition keys of {table.name} "
                                     f"(partition keys: {list(schema.partition_keys)})", param_hint="'--partition'")
        out.append({k: _where.parse_value(v, schema.field(k), table.name, "'--partition'") for k, v in values.items()})
    return out


# ---------------------------------------------------------------------------------------------
# output


def json_default(value):
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def print_json(data) -> None:
    typer.echo(json.dumps(data, indent=2, default=json_default, ensure_ascii=False))


def cell(value, size: bool = False) -> Text | str:
    if value is None:
        return Text("null", style="dim")
    if size and isinstance(value, int):
        return lsm_drawing.human_size(value)
    if isinstance(value, dt.datetime):
        spec = "seconds" if value.microsecond == 0 else "milliseconds" if value.microsecond % 1000 == 0 else "auto"
        return value.isoformat(sep=" ", timespec=spec)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=json_default, ensure_ascii=False)
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return str(value)


def rows_table(rows: list[dict], columns: list[str], title: str | None = None, sizes: tuple[str, ...] = (),
               headers: dict[str, str] | None = None) -> RichTable:
    table = RichTable(title=title, title_justify="left", header_style="bold", min_width=len(title or ""),
                      **plain_style())
    for name in columns:
        numeric = any(isinstance(r.get(name), (int, float, decimal.Decimal)) and not isinstance(r.get(name), bool)
                      for r in rows)
        table.add_column((headers or {}).get(name, name), justify="right" if numeric else "left",
                         overflow="fold")
    for row in rows:
        table.add_row(*(cell(row.get(name), name in sizes) for name in columns))
    return table


def local_time(millis: int | None) -> dt.datetime | None:
    return None if millis is None else dt.datetime.fromtimestamp(millis / 1000)


def snapshot_json(snapshot) -> dict | None:
    if snapshot is None:
        return None
    return {"snapshot_id": snapshot.id, "schema_id": snapshot.schema_id, "commit_kind": snapshot.commit_kind,
            "commit_time": local_time(snapshot.time_millis), "commit_user": snapshot.commit_user,
            "total_record_count": snapshot.total_record_count, "delta_record_count": snapshot.delta_record_count,
            "watermark": snapshot.watermark}


def fields_json(schema: TableSchema) -> list[dict]:
    return [{"id": f.id, "name": f.name, "type": _types.type_to_sql(f.type), "nullable": f.type.nullable,
             "primary_key": f.name in schema.primary_keys, "partition_key": f.name in schema.partition_keys,
             "description": f.description} for f in schema.fields]


def fields_table(schema: TableSchema) -> RichTable:
    table = RichTable(title="schema", title_justify="left", header_style="bold", **plain_style())
    for column in ("id", "name", "type", "key", "comment"):
        table.add_column(column, justify="right" if column == "id" else "left")
    for f in schema.fields:
        key = " ".join(k for k, on in (("primary", f.name in schema.primary_keys),
                                       ("partition", f.name in schema.partition_keys)) if on)
        table.add_row(str(f.id), f.name, _types.type_to_sql(f.type), key, f.description or "")
    return table


def progress(console: Console) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal)


def working(message: str):
    """A spinner on stderr while one long call runs (nothing when stderr is no terminal)."""
    console = errors()
    if console.is_terminal:
        return console.status(message)
    return _Quiet()


class _Quiet:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------------------------------------
# looking


@command()
def info(table: TableArg, warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
         json_output: JsonOpt = False) -> None:
    """Schema, options, latest snapshot and sizes of a table."""
    t = open_table(table, warehouse, storage_option)
    schema = t.schema()
    options = schema.shape.options
    latest = t.latest_snapshot()
    entries = t.live_entries(latest, schema) if latest is not None else []
    snapshot_ids = t.snapshot_store.list_ids()
    levels: dict[int, int] = {}
    for e in entries:
        levels[e.file.level] = levels.get(e.file.level, 0) + 1
    data = {
        "name": t.name, "path": t.root,
        "kind": "primary-key" if schema.primary_keys else "append",
        "primary_keys": list(schema.primary_keys), "partition_keys": list(schema.partition_keys),
        "bucket": schema.shape.num_buckets,
        "merge_engine": options.get("merge-engine") if schema.primary_keys else None,
        "schema_id": schema.id, "comment": schema.comment,
        "fields": fields_json(schema), "options": dict(sorted(schema.options.items())),
        "snapshot": snapshot_json(latest),
        "snapshots": {"count": len(snapshot_ids), "earliest": snapshot_ids[0] if snapshot_ids else None,
                      "latest": snapshot_ids[-1] if snapshot_ids else None},
        "rows": t.scan().count() if latest is not None else 0,  # live rows (deletes and old versions merged away)
        "tags": [tag.name for tag in t.list_tags()],
        "sizes": {"data_files": len(entries), "data_bytes": sum(e.file.file_size for e in entries),
                  "records_in_files": sum(e.file.row_count for e in entries),
                  "partitions": len({e.partition for e in entries}),
                  "buckets": len({(e.partition, e.bucket) for e in entries}),
                  "files_per_level": {str(k): levels[k] for k in sorted(levels)}},
    }
    if json_output:
        return print_json(data)
    console = output()
    kind = data["kind"]
    if schema.primary_keys:
        kind += f" ({data['merge_engine']}, key {', '.join(schema.primary_keys)})"
    bucket = data["bucket"]
    buckets = {-1: "dynamic", -2: "postpone"}.get(bucket, str(bucket)) if schema.primary_keys or bucket > 0 \
        else "unaware"
    summary = RichTable.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("table", t.name if t.name == t.root else f"{t.name}  ({t.root})")
    summary.add_row("kind", kind)
    summary.add_row("partitioned by", ", ".join(schema.partition_keys) or "-")
    summary.add_row("buckets", buckets)
    summary.add_row("schema", f"id {schema.id}" + (f" · {schema.comment}" if schema.comment else ""))
    if latest is None:
        summary.add_row("snapshot", "none (empty table)")
    else:
        summary.add_row("rows", f"{data['rows']:,}")
        records = f" · totalRecordCount {latest.total_record_count:,} (rows in its files, deletes and older " \
                  "versions of keys included)" if latest.total_record_count is not None else ""
        summary.add_row("snapshot", f"{latest.id} · {latest.commit_kind} · "
                                    f"{local_time(latest.time_millis):%Y-%m-%d %H:%M:%S}{records}")
        summary.add_row("snapshots", f"{len(snapshot_ids)} ({snapshot_ids[0]}..{snapshot_ids[-1]})")
    summary.add_row("tags", ", ".join(data["tags"]) or "-")
    sizes = data["sizes"]
    summary.add_row("data", f"{sizes['data_files']:,} files · {lsm_drawing.human_size(sizes['data_bytes'])} · "
                            f"{sizes['records_in_files']:,} records in files · {sizes['partitions']:,} partitions · "
                            f"{sizes['buckets']:,} buckets")
    if schema.primary_keys and levels:
        summary.add_row("files per level", "  ".join(f"L{k}: {v}" for k, v in sorted(levels.items())))
    console.print(summary)
    console.print(fields_table(schema))
    if schema.options:
        console.print(rows_table([{"option": k, "value": v} for k, v in data["options"].items()],
                                 ["option", "value"], title="options"))


def _system_rows(table: str, warehouse, storage, name: str) -> tuple[Table, list[dict]]:
    t = open_table(table, warehouse, storage)
    return t, t.system_table(name).to_arrow().to_pylist()


@command()
def snapshots(table: TableArg, warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
              json_output: JsonOpt = False) -> None:
    """The table's snapshots (Paimon's $snapshots system table)."""
    t, rows = _system_rows(table, warehouse, storage_option, "snapshots")
    if json_output:
        return print_json(rows)
    output().print(rows_table(rows, ["snapshot_id", "schema_id", "commit_kind", "commit_time", "total_record_count",
                                     "delta_record_count", "changelog_record_count", "watermark"],
                              title=f"snapshots of {t.name}",
                              headers={"snapshot_id": "id", "schema_id": "schema", "commit_kind": "kind",
                                       "total_record_count": "records", "delta_record_count": "delta",
                                       "changelog_record_count": "changelog"}))


command("describe", help="The same as `info` (Spark SQL's DESCRIBE).")(info)
command("history", help="The same as `snapshots` (deltalake's history).")(snapshots)


@command()
def tags(table: TableArg, warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
         json_output: JsonOpt = False) -> None:
    """The table's tags (Paimon's $tags system table)."""
    t, rows = _system_rows(table, warehouse, storage_option, "tags")
    if json_output:
        return print_json(rows)
    output().print(rows_table(rows, ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count",
                                     "create_time", "time_retained"], title=f"tags of {t.name}",
                              headers={"tag_name": "tag", "snapshot_id": "snapshot", "schema_id": "schema",
                                       "record_count": "records", "time_retained": "retained"}))


@command()
def files(table: TableArg, warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
          json_output: JsonOpt = False) -> None:
    """The live data files of the latest snapshot (Paimon's $files system table)."""
    t, rows = _system_rows(table, warehouse, storage_option, "files")
    if json_output:
        return print_json(rows)
    for row in rows:
        row["file"] = row["file_path"].rsplit("/", 1)[-1]
    columns = ["partition", "bucket", "file", "level", "record_count", "file_size_in_bytes", "min_key", "max_key"]
    if not t.schema().partition_keys:
        columns.remove("partition")
    if not t.schema().primary_keys:
        columns = [c for c in columns if c not in ("level", "min_key", "max_key")]
    output().print(rows_table(rows, columns, title=f"files of {t.name}", sizes=("file_size_in_bytes",),
                              headers={"record_count": "records", "file_size_in_bytes": "size"}))


@command()
def partitions(table: TableArg, warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
               json_output: JsonOpt = False) -> None:
    """The partitions of the latest snapshot (Paimon's $partitions system table)."""
    t, rows = _system_rows(table, warehouse, storage_option, "partitions")
    if json_output:
        return print_json(rows)
    output().print(rows_table(rows, ["partition", "record_count", "file_size_in_bytes", "file_count", "total_buckets",
                                     "last_update_time"], title=f"partitions of {t.name}",
                              sizes=("file_size_in_bytes",),
                              headers={"record_count": "records", "file_size_in_bytes": "size",
                                       "file_count": "files", "total_buckets": "buckets"}))


@command()
def show(table: TableArg,
         limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="rows to print (0: all)")] = 20,
         where: Annotated[Optional[str], typer.Option(
             "--where", metavar="FILTER", help="e.g. \"dt = '2026-01-31' and id in (1, 2) or v is null\"")] = None,
         columns: Annotated[Optional[str], typer.Option(
             "--columns", "-c", metavar="A,B", help="columns to read")] = None,
         at: AtOpt = None,
         as_of: Annotated[Optional[str], typer.Option(
             "--as-of", metavar="TIME", help="read the snapshot current at an ISO time")] = None,
         warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Print rows of a table, filtered, projected, or as of a tag or snapshot."""
    t = open_table(table, warehouse, storage_option)
    selector = travel(at)
    if as_of is not None:
        if at is not None:
            raise typer.BadParameter("give --at or --as-of, not both", param_hint="'--as-of'")
        try:
            selector = {"as_of_timestamp_ms": int(dt.datetime.fromisoformat(as_of).timestamp() * 1000)}
        except ValueError:
            raise typer.BadParameter(f"{as_of!r} is not an ISO time", param_hint="'--as-of'") from None
    schema = t.scan(**selector).schema if selector else t.schema()
    predicate = _where.where_predicate(where, schema.fields, t.name)  # the scan's parser: exit status 2 if bad
    wanted = names(columns) or None
    scan = t.scan(filter=predicate, columns=wanted, **selector)
    batches, count = [], 0
    for batch in scan.to_batches():
        if batch.num_rows == 0:
            continue
        batches.append(batch)
        count += batch.num_rows
        if limit and count > limit:
            break
    result = pa.Table.from_batches(batches, schema=scan.arrow_schema) if batches else scan.arrow_schema.empty_table()
    more = bool(limit) and result.num_rows > limit
    if limit:
        result = result.slice(0, limit)
    rows = result.to_pylist()
    if json_output:
        return print_json(rows)
    where_from = (f"tag {selector['tag']}" if "tag" in selector else
                  f"snapshot {selector['snapshot_id']}" if "snapshot_id" in selector else
                  f"as of {as_of}" if as_of else None)
    title = t.name + (f" ({where_from})" if where_from else "")
    console = output()
    console.print(rows_table(rows, result.column_names, title=title))
    console.print(Text(f"{len(rows):,} row{'s' if len(rows) != 1 else ''}"
                       + (f" (first {limit}; more match: raise --limit or use --limit 0)" if more else ""),
                       style="dim"))


# ---------------------------------------------------------------------------------------------
# creating and importing

SCHEMA_KEYS = {"fields", "primaryKeys", "primary_keys", "partitionKeys", "partition_keys", "options", "comment",
               "id", "highestFieldId", "version", "timeMillis"}


def read_schema_file(path: Path) -> dict:
    """A schema file: Paimon's own schema JSON (a `schema/schema-N` file of another table), or
    the same shape without field ids, or `fields` as a {name: type} mapping. Types are Paimon
    SQL types ('BIGINT NOT NULL', 'DECIMAL(10, 2)', 'ARRAY<STRING>') or Paimon's JSON types."""
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise InvalidArgument(f"schema file {path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or "fields" not in doc:
        raise InvalidArgument(f"schema file {path}: expected a JSON object with 'fields'")
    unknown = sorted(set(doc) - SCHEMA_KEYS)
    if unknown:
        raise InvalidArgument(f"schema file {path}: unknown key(s) {unknown} (known: {sorted(SCHEMA_KEYS)})")
    raw = doc["fields"]
    if isinstance(raw, dict):
        raw = [{"name": k, "type": v} for k, v in raw.items()]
    fields = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "name" not in item or "type" not in item:
            raise InvalidArgument(f"schema file {path}: field {i} needs 'name' and 'type'")
        fields.append(_types.DataField(-1, str(item["name"]), _types.parse_type(item["type"]), item.get("description")))
    return {"fields": fields,
            "primary_key": list(doc.get("primaryKeys", doc.get("primary_keys", []))),
            "partition_keys": list(doc.get("partitionKeys", doc.get("partition_keys", []))),
            "options": {str(k): str(v) for k, v in (doc.get("options") or {}).items()},
            "comment": doc.get("comment")}


def data_format(path: Path, given: str | None) -> str:
    if given:
        return given
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".zst", ".lz4"):
        suffixes = suffixes[:-1]
    ending = suffixes[-1] if suffixes else ""
    if ending in (".parquet", ".pq", ".parq"):
        return "parquet"
    if ending in (".csv", ".tsv", ".txt"):
        return "csv"
    raise typer.BadParameter(f"cannot tell the format of {path} from its name: give --format parquet|csv",
                             param_hint="FILES")


def csv_options(path: Path, delimiter: str | None, types: dict[str, pa.DataType] | None = None):
    from pyarrow import csv

    separator = delimiter or ("\t" if ".tsv" in [s.lower() for s in path.suffixes] else ",")
    return (csv.ReadOptions(block_size=1 << 22), csv.ParseOptions(delimiter=separator),
            csv.ConvertOptions(column_types=types or {}, strings_can_be_null=True))


def sample_schema(path: Path, fmt: str, delimiter: str | None) -> pa.Schema:
    """The Arrow schema of a data file: parquet's own, or the types inferred from the first
    block of a CSV file."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path)
    from pyarrow import csv

    read, parse, convert = csv_options(path, delimiter)
    with csv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert) as reader:
        return reader.schema


def read_batches(path: Path, fmt: str, delimiter: str | None, table_types: dict[str, pa.DataType]):
    """(rows if known, iterator of record batches) of a data file; CSV columns are parsed with
    the table's types."""
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            handle = pq.ParquetFile(path)
            return handle.metadata.num_rows, _naming(path, handle.iter_batches(batch_size=1 << 16))
        from pyarrow import csv

        header = sample_schema(path, fmt, delimiter).names
        read, parse, convert = csv_options(path, delimiter, {n: table_types[n] for n in header if n in table_types})
        reader = csv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert)
        return None, _naming(path, iter(reader))
    except (pa.ArrowException, OSError) as exc:
        raise TarnError(f"file {path}: {exc}") from exc


def _naming(path: Path, batches):
    """The batches of a data file; a parse error names the file (a TarnError)."""
    try:
        yield from batches
    except pa.ArrowException as exc:
        raise TarnError(f"file {path}: {exc}") from exc


def import_files(t: Table, paths: list[Path], fmt: str | None, delimiter: str | None) -> dict:
    """Write every row of the files in one commit, with a progress bar per file."""
    types = {f.name: f.type for f in _types.arrow_schema(t.schema().fields)}
    counts: dict[str, int] = {}
    console = errors()

    with progress(console) as bar:
        def batches():
            for path in paths:
                total, reader = read_batches(path, data_format(path, fmt), delimiter, types)
                task = bar.add_task(path.name, total=total)
                counts[str(path)] = 0
                for batch in reader:
                    counts[str(path)] += batch.num_rows
                    bar.advance(task, batch.num_rows)
                    if batch.num_rows:
                        yield batch
                bar.update(task, total=counts[str(path)], completed=counts[str(path)])

        snapshot = t.write(batches())
    return {"table": t.name, "files": [{"path": p, "rows": n} for p, n in counts.items()],
            "rows": sum(counts.values()), "snapshot_id": None if snapshot is None else snapshot.id}


def print_import(result: dict) -> None:
    snapshot = result["snapshot_id"]
    output().print(f"imported {result['rows']:,} rows from {len(result['files'])} file"
                   f"{'s' if len(result['files']) != 1 else ''} into {result['table']}"
                   + (f" (snapshot {snapshot})" if snapshot is not None else " (nothing to commit)"))


FormatOpt = Annotated[Optional[str], typer.Option(
    "--format", "-f", help="parquet or csv (default: from the file name)", case_sensitive=False)]
DelimiterOpt = Annotated[Optional[str], typer.Option(
    "--delimiter", help="CSV field separator (default: ',' or a tab for .tsv)")]


@command()
def create(table: TableArg,
           schema_file: Annotated[Optional[Path], typer.Option(
               "--schema", exists=True, dir_okay=False, metavar="FILE",
               help="JSON schema file (Paimon's schema JSON, or {\"fields\": {\"name\": \"TYPE\"}, ...})")] = None,
           sample: Annotated[Optional[Path], typer.Option(
               "--from", exists=True, dir_okay=False, metavar="DATA_FILE",
               help="take the columns from a parquet or CSV file")] = None,
           primary_key: Annotated[Optional[str], typer.Option(
               "--primary-key", "-k", metavar="A,B", help="primary-key columns, comma-separated")] = None,
           partition_keys: Annotated[Optional[str], typer.Option(
               "--partition-keys", "-p", metavar="A,B", help="partition columns, comma-separated")] = None,
           option: Annotated[Optional[list[str]], typer.Option(
               "--option", "-o", metavar="KEY=VALUE", help="table option, e.g. bucket=4; repeatable")] = None,
           comment: Annotated[Optional[str], typer.Option("--comment", help="the table's comment")] = None,
           import_sample: Annotated[bool, typer.Option(
               "--import", help="also import the rows of the --from file")] = False,
           fmt: FormatOpt = None, delimiter: DelimiterOpt = None,
           warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Create a table from a schema file or from the columns of a parquet/CSV file."""
    if (schema_file is None) == (sample is None):
        raise typer.BadParameter("give exactly one of --schema FILE and --from DATA_FILE", param_hint="'--schema'")
    if import_sample and sample is None:
        raise typer.BadParameter("--import imports the --from file", param_hint="'--import'")
    if schema_file is not None:
        spec = read_schema_file(schema_file)
    else:
        spec = {"fields": sample_schema(sample, data_format(sample, fmt), delimiter), "primary_key": [],
                "partition_keys": [], "options": {}, "comment": None}
    primary = names(primary_key) or spec["primary_key"]
    partitioned = names(partition_keys) or spec["partition_keys"]
    options = {**spec["options"], **key_values(option, "'--option'")}
    text = comment if comment is not None else spec["comment"]
    catalog = catalog_of(warehouse, storage_option, creating=True) if is_identifier(table) else None
    if catalog is not None:
        created = catalog.create_table(table, spec["fields"], primary, partitioned, options, text)
    else:
        file_io, root = _fs.file_io_for(table, key_values(storage_option, "'--storage-option'") or None)
        created = _catalog.create_table_at(file_io, root, root, spec["fields"], primary, partitioned, options, text)
    result = {"table": created.name, "path": created.root, "fields": fields_json(created.schema()),
              "primary_keys": primary, "partition_keys": partitioned, "options": created.schema().options}
    try:
        imported = import_files(created, [sample], fmt, delimiter) if import_sample else None
    except BaseException:  # a failed create-and-import leaves nothing behind (the table is new and empty)
        if created.latest_snapshot() is None:
            created.file_io.delete_dir(created.root)
        raise
    if json_output:
        return print_json({**result, "import": imported})
    console = output()
    console.print(f"created {created.name}" + ("" if created.name == created.root else f" at {created.root}"))
    console.print(fields_table(created.schema()))
    if imported is not None:
        print_import(imported)


@command("import")
def import_(table: TableArg,
            paths: Annotated[list[Path], typer.Argument(
                metavar="FILES...", exists=True, dir_okay=False, help="parquet or CSV files", show_default=False)],
            fmt: FormatOpt = None, delimiter: DelimiterOpt = None,
            warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Write the rows of parquet or CSV files into a table, all in one commit."""
    t = open_table(table, warehouse, storage_option)
    result = import_files(t, paths, fmt.lower() if fmt else None, delimiter)
    if json_output:
        return print_json(result)
    print_import(result)


# ---------------------------------------------------------------------------------------------
# maintenance


@command()
def compact(table: TableArg,
            full: Annotated[bool, typer.Option("--full", help="rewrite each bucket into one sorted run")] = False,
            partition: Annotated[Optional[list[str]], typer.Option(
                "--partition", metavar="K=V[,K=V]", help="only this partition; repeatable")] = None,
            warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Compact the table (universal compaction, or --full) in one COMPACT snapshot."""
    t = open_table(table, warehouse, storage_option)
    before = t.latest_snapshot()
    files_before = len(t.live_entries(before)) if before is not None else 0
    with working(f"compacting {t.name}"):
        snapshot = t.compact(full=full, partitions=partition_specs(t, partition))
    latest = t.latest_snapshot()
    files_after = len(t.live_entries(latest)) if latest is not None else 0
    result = {"table": t.name, "snapshot_id": None if snapshot is None else snapshot.id,
              "files_before": files_before, "files_after": files_after}
    if json_output:
        return print_json(result)
    if snapshot is None:
        output().print(f"nothing to compact in {t.name}")
    else:
        output().print(f"compacted {t.name}: snapshot {snapshot.id}, {files_before:,} -> {files_after:,} data files")


@command(name="expire-partitions")
def expire_partitions(table: TableArg,
                      expiration_time: Annotated[Optional[str], typer.Option(
                          "--expiration-time", metavar="AGE",
                          help="drop partitions older than this ('7 d'); default: the table's "
                               "partition.expiration-time")] = None,
                      timestamp_formatter: Annotated[Optional[str], typer.Option(
                          "--timestamp-formatter", help="Java date pattern of the values ('yyyyMMdd')")] = None,
                      timestamp_pattern: Annotated[Optional[str], typer.Option(
                          "--timestamp-pattern", help="how values form a time ('$dt $hour:00:00')")] = None,
                      expire_strategy: Annotated[Optional[str], typer.Option(
                          "--expire-strategy", help="values-time (default) or update-time")] = None,
                      max_expires: Annotated[Optional[int], typer.Option(
                          "--max-expires", min=1, help="drop at most this many")] = None,
                      warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
                      json_output: JsonOpt = False) -> None:
    """Drop expired partitions now (Paimon's expire_partitions procedure)."""
    t = open_table(table, warehouse, storage_option)
    with working(f"expiring partitions of {t.name}"):
        dropped = t.expire_partitions(expiration_time, timestamp_formatter, timestamp_pattern, expire_strategy,
                                      max_expires)
    if json_output:
        return print_json({"table": t.name, "expired_partitions": dropped})
    if not dropped:
        output().print(f"no expired partitions in {t.name}")
        return
    output().print(f"dropped {len(dropped)} partition{'s' if len(dropped) != 1 else ''} of {t.name}:")
    for spec in dropped:
        output().print(f"  {spec}")


@command()
def expire(table: TableArg,
           retain_min: Annotated[Optional[int], typer.Option(
               "--retain-min", min=1, help="keep at least this many")] = None,
           retain_max: Annotated[Optional[int], typer.Option(
               "--retain-max", min=1, help="keep at most this many")] = None,
           older_than: Annotated[Optional[str], typer.Option(
               "--older-than", metavar="AGE|TIME",
               help="expire snapshots older than this ('1 d', '2 h', or an ISO time); default: the table's "
                    "snapshot.time-retained")] = None,
           max_deletes: Annotated[Optional[int], typer.Option("--max-deletes", min=1,
                                                              help="expire at most this many")] = None,
           warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Expire old snapshots (the table's retention options, or these overrides)."""
    t = open_table(table, warehouse, storage_option)
    cutoff = moment_ms(older_than, "'--older-than'") if older_than is not None else None
    with working(f"expiring snapshots of {t.name}"):
        expired = t.expire_snapshots(retain_min, retain_max, cutoff, max_deletes)
    ids = t.snapshot_store.list_ids()
    result = {"table": t.name, "expired": expired, "earliest": ids[0] if ids else None,
              "latest": ids[-1] if ids else None, "snapshots": len(ids)}
    if json_output:
        return print_json(result)
    output().print(f"expired {expired} snapshot{'s' if expired != 1 else ''} of {t.name}; "
                   + (f"{len(ids)} left ({ids[0]}..{ids[-1]})" if ids else "none left"))


@command()
def rollback(table: TableArg,
             target: Annotated[str, typer.Argument(metavar="TAG|SNAPSHOT", help="a tag, or a snapshot id",
                                                   show_default=False)],
             yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
             warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Make the table hold exactly a snapshot or tag again (later snapshots are deleted)."""
    t = open_table(table, warehouse, storage_option)
    goal = int(target) if re.fullmatch(r"\d+", target.strip()) else target
    what = f"snapshot {goal}" if isinstance(goal, int) else f"tag {goal}"
    if not yes:
        typer.confirm(f"roll {t.name} back to {what}, deleting every later snapshot?", abort=True, err=True)
    snapshot = t.rollback_to(goal)
    result = {"table": t.name, "target": goal, "snapshot_id": snapshot.id}
    if json_output:
        return print_json(result)
    output().print(f"rolled {t.name} back to {what}: latest snapshot is {snapshot.id}")


@command()
def orphans(table: TableArg,
            older_than: Annotated[Optional[str], typer.Option(
                "--older-than", metavar="AGE|TIME",
                help="only files older than this ('1 d', '2 h', or an ISO time); default one day")] = None,
            dry_run: Annotated[bool, typer.Option("--dry-run", help="list the files, delete nothing")] = False,
            warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Delete (or list with --dry-run) files under the table that nothing references."""
    t = open_table(table, warehouse, storage_option)
    cutoff = moment_ms(older_than, "'--older-than'") if older_than is not None else None
    with working(f"looking for orphan files of {t.name}"):
        found = t.remove_orphan_files(older_than=cutoff, dry_run=dry_run)
    result = {"table": t.name, "dry_run": dry_run, "files": sorted(found)}
    if json_output:
        return print_json(result)
    console = output()
    verb = "would delete" if dry_run else "deleted"
    console.print(f"{verb} {len(found)} orphan file{'s' if len(found) != 1 else ''} of {t.name}")
    for path in sorted(found):
        console.print(f"  {path}", soft_wrap=True)


@command()
def analyze(table: TableArg,
            columns: Annotated[Optional[str], typer.Option("--columns", "-c", metavar="A,B",
                                                           help="columns to analyze (default: all)")] = None,
            warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Collect table statistics (Table.analyze): row count, size and per-column distinct
    counts, min/max and nulls, committed as one ANALYZE snapshot."""
    t = open_table(table, warehouse, storage_option)
    with working(f"analyzing {t.name}"):
        result = t.analyze(columns=names(columns) or None)
    stats = t.statistics(result.id) if result is not None else None
    rows = [] if stats is None else [
        {"column": name, "distinct": c.distinct_count, "nulls": c.null_count, "min": c.min, "max": c.max,
         "avg_len": c.avg_len, "max_len": c.max_len} for name, c in stats.col_stats.items()]
    if json_output:
        return print_json({"table": t.name, "snapshot_id": None if result is None else result.id,
                           "rows": None if stats is None else stats.merged_record_count,
                           "size": None if stats is None else stats.merged_record_size, "columns": rows})
    console = output()
    if stats is None:
        console.print(f"{t.name} has no snapshot to analyze")
        return
    console.print(f"analyzed {t.name} (snapshot {result.id}): {stats.merged_record_count:,} rows, "
                  f"{lsm_drawing.human_size(stats.merged_record_size or 0)}")
    console.print(rows_table(rows, ["column", "distinct", "nulls", "min", "max", "avg_len", "max_len"],
                             title="column statistics"))


def plain(value):
    """A result of unknown shape as JSON-ready data (Arrow tables, dataclasses, snapshots)."""
    import dataclasses

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, pa.Table):
        return value.to_pylist()
    if hasattr(value, "to_arrow"):
        return value.to_arrow().to_pylist()
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    return json_default(value)


# ---------------------------------------------------------------------------------------------
# the LSM tree


@command()
def lsm(table: TableArg,
        partition: Annotated[Optional[list[str]], typer.Option(
            "--partition", metavar="K=V[,K=V]", help="only this partition; repeatable")] = None,
        bucket: Annotated[Optional[int], typer.Option("--bucket", "-b", help="only this bucket")] = None,
        at: AtOpt = None,
        svg: Annotated[Optional[Path], typer.Option("--svg", metavar="PATH", dir_okay=False,
                                                    help="also write the drawing as an SVG file")] = None,
        list_files: Annotated[bool, typer.Option("--files", help="list every file under each drawing")] = False,
        width: Annotated[int, typer.Option("--width", min=8, max=400, help="width of the key-space bars")] = 40,
        warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Draw each bucket's LSM levels: files, sizes and key ranges."""
    t = open_table(table, warehouse, storage_option)
    specs = partition_specs(t, partition)

    def wanted(values: dict) -> bool:
        return specs is None or any(all(values.get(k) == v for k, v in spec.items()) for spec in specs)
    with working(f"planning {t.name}"):
        scan = t.scan(**travel(at))
        trees = lsm_drawing.collect(t, scan.plan(), wanted, bucket)
    snapshot = scan.snapshot
    title = f"{t.name} · snapshot {snapshot.id}" if snapshot is not None else f"{t.name} · no snapshot"
    if svg is not None:
        svg.write_text(lsm_drawing.svg(trees, title))
    if json_output:
        return print_json({"table": t.name, "snapshot_id": None if snapshot is None else snapshot.id,
                           "key_columns": list(t.schema().trimmed_primary_keys),
                           "buckets": [b.to_json() for b in trees],
                           "svg": None if svg is None else str(svg)})
    console = output()
    console.print(Text(title, style="bold"))
    if not t.schema().primary_keys:
        console.print(Text("append table: no LSM tree, every file is at level 0 and holds no key range",
                           style="dim"))
    if not trees:
        console.print("no data files" + (" match" if specs is not None or bucket is not None else ""))
    for tree in trees:
        console.print(lsm_drawing.render_tree(tree, width, list_files))
    if svg is not None:
        console.print(Text(f"wrote {svg}", style="dim"))


# ---------------------------------------------------------------------------------------------
# changing tables: tags, delete, update, alter, drop; listing a warehouse


def print_result(result, json_output: bool, what: str) -> None:
    """A verb's CommitResult: its metrics as JSON, or one line (nothing committed: say so)."""
    if json_output:
        return print_json(result.metrics() if result is not None else {"operation": what, "snapshot_ids": []})
    if result is None:
        output().print(f"{what}: nothing to commit")
        return
    counted = [f"{word} {value:,}" for word, value in (
        ("inserted", result.rows_inserted), ("updated", result.rows_updated), ("deleted", result.rows_deleted))
        if value is not None]
    made = ", ".join(f"{s.id} ({s.commit_kind})" for s in result.snapshots)
    output().print(f"{what} {result.table}: {'; '.join(counted) + '; ' if counted else ''}"
                   f"snapshot{'s' if len(result.snapshots) > 1 else ''} {made}; {result.files_added} files "
                   f"added, {result.files_removed} removed; {result.seconds:.2f}s")


@command("create", group=tag_app)
def tag_create(table: TableArg, name: Annotated[str, typer.Argument(help="the tag's name")],
               snapshot: Annotated[Optional[int], typer.Option("--snapshot", help="snapshot id (default: latest)")] = None,
               retain: Annotated[Optional[str], typer.Option("--retain", metavar="DURATION",
                                                             help="time retained, e.g. '7 d'")] = None,
               warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Tag a snapshot (default: the latest)."""
    t = open_table(table, warehouse, storage_option)
    tag = t.create_tag(name, snapshot_id=snapshot, time_retained=retain)
    if json_output:
        return print_json({"table": t.name, "tag": name, "snapshot_id": tag.snapshot.id})
    output().print(f"tagged snapshot {tag.snapshot.id} of {t.name} as {name!r}")


@command("delete", group=tag_app)
def tag_delete(table: TableArg, name: Annotated[str, typer.Argument(help="the tag's name")],
               warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Delete a tag (and the files only it kept)."""
    t = open_table(table, warehouse, storage_option)
    t.delete_tag(name)
    if json_output:
        return print_json({"table": t.name, "deleted_tag": name})
    output().print(f"deleted tag {name!r} of {t.name}")


@command("create", group=branch_app)
def branch_create(table: TableArg, name: Annotated[str, typer.Argument(help="the branch's name")],
                  from_tag: Annotated[Optional[str], typer.Option("--from-tag", help="start from this tag "
                                                                  "(default: an empty branch)")] = None,
                  warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
                  json_output: JsonOpt = False) -> None:
    """Create a branch (empty, or from a tag's snapshot)."""
    t = open_table(table, warehouse, storage_option)
    t.create_branch(name, from_tag=from_tag)
    if json_output:
        return print_json({"table": t.name, "branch": name, "from_tag": from_tag})
    output().print(f"created branch {name!r} of {t.name}" + (f" from tag {from_tag!r}" if from_tag else ""))


@command("list", group=branch_app)
def branch_list(table: TableArg, warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
                json_output: JsonOpt = False) -> None:
    """The table's branches (Paimon's $branches system table)."""
    t, rows = _system_rows(table, warehouse, storage_option, "branches")
    if json_output:
        return print_json(rows)
    output().print(rows_table(rows, list(rows[0]) if rows else ["branch_name"], title=f"branches of {t.name}"))


@command("delete", group=branch_app)
def branch_delete(table: TableArg, name: Annotated[str, typer.Argument(help="the branch's name")],
                  warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
                  json_output: JsonOpt = False) -> None:
    """Delete a branch with its snapshots, tags and schemas."""
    t = open_table(table, warehouse, storage_option)
    t.delete_branch(name)
    if json_output:
        return print_json({"table": t.name, "deleted_branch": name})
    output().print(f"deleted branch {name!r} of {t.name}")


@command("fast-forward", group=branch_app)
def branch_fast_forward(table: TableArg, name: Annotated[str, typer.Argument(help="the branch's name")],
                        warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
                        json_output: JsonOpt = False) -> None:
    """Make main hold the branch's history (Paimon's fast_forward)."""
    t = open_table(table, warehouse, storage_option)
    t.fast_forward(name)
    if json_output:
        return print_json({"table": t.name, "fast_forwarded_to": name})
    output().print(f"main of {t.name} now holds branch {name!r}")


def _bound(text: str | None):
    """A --from/--to value: a snapshot id, an ISO time, or a tag name."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return text


@command()
def changes(table: TableArg,
            start: Annotated[str, typer.Option("--from", metavar="SNAPSHOT|TAG|TIME",
                                               help="after this snapshot id, tag or ISO time (exclusive)")],
            end: Annotated[Optional[str], typer.Option("--to", metavar="SNAPSHOT|TAG|TIME",
                                                       help="up to this one (default: the latest)")] = None,
            mode: Annotated[str, typer.Option("--mode", help="auto, delta, changelog or diff")] = "auto",
            limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="rows to print (0: all)")] = 20,
            warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """The rows that changed between two snapshots, tags or times, with their row kind
    (Table.changes(start=, end=)): Paimon's incremental read."""
    t = open_table(table, warehouse, storage_option)
    result = t.changes(start=_bound(start), end=_bound(end), mode=mode)
    rows = (result.slice(0, limit) if limit else result).to_pylist()
    if json_output:
        return print_json(rows)
    console = output()
    console.print(rows_table(rows, result.column_names, title=f"changes of {t.name} after {start}"
                             + (f" up to {end}" if end else "")))
    more = bool(limit) and result.num_rows > limit
    console.print(Text(f"{result.num_rows:,} row{'s' if result.num_rows != 1 else ''}"
                       + (f" (first {limit} shown: raise --limit or use --limit 0)" if more else ""), style="dim"))


WhereOpt = Annotated[Optional[str], typer.Option(
    "--where", metavar="FILTER", help="rows to change, e.g. \"dt = '2026-01-31' and id in (1, 2)\"")]


@command("delete")
def delete_rows(table: TableArg, where: WhereOpt = None,
                warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Delete the rows matching --where, in one commit."""
    if not where:
        raise typer.BadParameter("give --where FILTER (the rows to delete)", param_hint="'--where'")
    t = open_table(table, warehouse, storage_option)
    predicate = _where.where_predicate(where, t.schema().fields, t.name)
    with working(f"deleting from {t.name}"):
        result = t.delete(filter=predicate)
    print_result(result, json_output, "delete")


@command("update")
def update_rows(table: TableArg,
                set_: Annotated[list[str], typer.Option("--set", metavar="COLUMN=VALUE",
                                                        help="a column and its new value; repeatable")],
                where: WhereOpt = None,
                warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Set columns of the rows matching --where (all rows without it), in one commit. Values
    are converted with the column's type ('NULL' sets NULL)."""
    t = open_table(table, warehouse, storage_option)
    values = {k: (None if v.strip().upper() == "NULL" else v) for k, v in key_values(set_, "'--set'").items()}
    predicate = _where.where_predicate(where, t.schema().fields, t.name) if where else None
    with working(f"updating {t.name}"):
        result = t.update(values, filter=predicate)
    print_result(result, json_output, "update")


@command("alter")
def alter(table: TableArg,
          add_column: Annotated[Optional[list[str]], typer.Option(
              "--add-column", metavar="'NAME TYPE'", help="add a column, e.g. 'note STRING'; repeatable")] = None,
          set_option: Annotated[Optional[list[str]], typer.Option(
              "--set-option", metavar="KEY=VALUE", help="set a table option; repeatable")] = None,
          remove_option: Annotated[Optional[list[str]], typer.Option(
              "--remove-option", metavar="KEY", help="remove a table option; repeatable")] = None,
          warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Evolve the schema: add columns, set or remove options (one new schema)."""
    changes = []
    for item in add_column or []:
        name, _, type_text = item.strip().partition(" ")
        if not name or not type_text.strip():
            raise typer.BadParameter(f"{item!r} is not 'NAME TYPE'", param_hint="'--add-column'")
        changes.append(tarn.AddColumn(name, _types.parse_type(type_text.strip())))
    changes += [tarn.SetOption(k, v) for k, v in key_values(set_option, "'--set-option'").items()]
    changes += [tarn.RemoveOption(k) for k in remove_option or []]
    if not changes:
        raise typer.BadParameter("give --add-column, --set-option or --remove-option", param_hint="'--add-column'")
    t = open_table(table, warehouse, storage_option)
    schema = t.alter(*changes)
    if json_output:
        return print_json({"table": t.name, "schema_id": schema.id, "fields": fields_json(schema),
                           "options": schema.options})
    console = output()
    console.print(f"altered {t.name}: schema {schema.id}")
    console.print(fields_table(schema))


@command("drop")
def drop(table: TableArg,
         yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask before deleting")] = False,
         warehouse: WarehouseOpt = None, storage_option: StorageOpt = None, json_output: JsonOpt = False) -> None:
    """Delete a table: its directory with every file, snapshot and tag (and its catalog entry)."""
    catalog = catalog_of(warehouse, storage_option) if is_identifier(table) else None
    t = catalog.load_table(table) if catalog is not None else open_table(table, warehouse, storage_option)
    if not yes and not typer.confirm(f"delete table {t.name} and every file under {t.root}?"):
        raise typer.Exit(1)
    if catalog is not None:
        catalog.drop_table(table)
    else:
        t.file_io.delete_dir(t.root)
    if json_output:
        return print_json({"dropped": t.name, "path": t.root})
    output().print(f"dropped {t.name} ({t.root})")


@app.command("serve", context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                                        "help_option_names": []}, add_help_option=False)
def serve(ctx: typer.Context) -> None:
    """Serve a catalog as a Paimon REST catalog: tarn serve (--warehouse WH | -c NAME) --token-file F
    [--host H] [--port P] ... (tarn serve --help lists every option; docs/guide-catalogs.md)."""
    from tarn.server.__main__ import main as serve_main

    argv = list(ctx.args)
    if _chosen["catalog"] and "-c" not in argv and "--catalog" not in argv and "--warehouse" not in argv:
        argv = ["-c", _chosen["catalog"], *argv]
    raise typer.Exit(serve_main(argv))


@command("ls")
def list_tables(database: Annotated[Optional[str], typer.Argument(help="one database (default: all)")] = None,
                warehouse: WarehouseOpt = None, storage_option: StorageOpt = None,
                json_output: JsonOpt = False) -> None:
    """The tables of a catalog (`tarn -c NAME ls`) or a warehouse (--warehouse or TARN_WAREHOUSE),
    by database."""
    catalog = catalog_of(warehouse, storage_option)
    if catalog is None:
        raise typer.BadParameter("give --warehouse WH (or set TARN_WAREHOUSE), or a catalog: tarn -c NAME ls",
                                 param_hint="'--warehouse'")
    databases = [database] if database else catalog.list_databases()
    found = [{"database": d, "table": n} for d in databases for n in catalog.list_tables(d)]
    if json_output:
        return print_json(found)
    output().print(rows_table(found, ["database", "table"], title=f"tables of {_chosen['catalog'] or warehouse}"))
