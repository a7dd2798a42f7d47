"""The wire format of Paimon's REST catalog (docs/static/rest-catalog-open-api.yaml in Paimon
2.0), shared by tarn's REST client and `tarn serve`: resource paths, and the JSON bodies as
plain dicts built from and read into tarn's own records. No HTTP library is used here.

Snapshots and data types use tarn's existing codecs (`Snapshot.to_dict`/`from_dict`,
`field_to_json`/`field_from_json`): the REST bodies carry them in the same form as the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote_plus, unquote_plus

from tarn.errors import (
    CommitConflict,
    CorruptFile,
    InvalidArgument,
    InvalidOption,
    SchemaEvolutionError,
    SchemaMismatch,
    SnapshotNotFound,
    StorageError,
    TableAlreadyExists,
    TableNotFound,
    TarnError,
    UnsupportedFeature,
)
from tarn.meta.schema import (
    AddColumn,
    DropColumn,
    RemoveOption,
    RenameColumn,
    SetOption,
    TableSchema,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnType,
    UpdateComment,
    max_field_id,
)
from tarn.meta.snapshot import Snapshot
from tarn.types import DataField, field_from_json, field_to_json, parse_type, type_to_json

# ---------------------------------------------------------------------------------------------
# Names of query parameters, headers and config keys the spec fixes

MAX_RESULTS = "maxResults"
PAGE_TOKEN = "pageToken"
DATABASE_NAME_PATTERN = "databaseNamePattern"
TABLE_NAME_PATTERN = "tableNamePattern"
PARTITION_NAME_PATTERN = "partitionNamePattern"
TAG_NAME_PREFIX = "tagNamePrefix"
WAREHOUSE = "warehouse"
PREFIX = "prefix"  # the config default naming the path segment after /v1/
AUTHORIZATION = "Authorization"
BEARER = "Bearer "

# ErrorResponse.resourceType values
DATABASE, TABLE, PARTITION, COLUMN, SNAPSHOT, BRANCH, TAG = (
    "DATABASE", "TABLE", "PARTITION", "COLUMN", "SNAPSHOT", "BRANCH", "TAG")


def encode_name(name: str) -> str:
    """One path segment, as Java's URLEncoder writes it: spaces as '+', '/' and '~' escaped."""
    return quote_plus(name, safe="*").replace("~", "%7E")


def decode_name(segment: str) -> str:
    """A path segment back to the name it encodes."""
    return unquote_plus(segment)


# ---------------------------------------------------------------------------------------------
# Resource paths


@dataclass(frozen=True)
class RestPaths:
    """The spec's resource paths under one catalog prefix (the `prefix` config default; empty
    means none). Names are encoded as one path segment each."""

    prefix: str = ""

    @property
    def base(self) -> str:
        return f"/v1/{encode_name(self.prefix)}" if self.prefix else "/v1"

    @staticmethod
    def config() -> str:
        return "/v1/config"

    def databases(self) -> str:
        return f"{self.base}/databases"

    def database(self, database: str) -> str:
        return f"{self.databases()}/{encode_name(database)}"

    def tables(self, database: str) -> str:
        return f"{self.database(database)}/tables"

    def table_details(self, database: str) -> str:
        return f"{self.database(database)}/table-details"

    def table(self, database: str, table: str) -> str:
        return f"{self.tables(database)}/{encode_name(table)}"

    def rename_table(self) -> str:
        return f"{self.base}/tables/rename"

    def commit(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/commit"

    def rollback(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/rollback"

    def snapshot(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/snapshot"

    def token(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/token"

    def partitions(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/partitions"

    def branches(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/branches"

    def branch(self, database: str, table: str, branch: str) -> str:
        return f"{self.branches(database, table)}/{encode_name(branch)}"

    def tags(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/tags"

    def tag(self, database: str, table: str, tag: str) -> str:
        return f"{self.tags(database, table)}/{encode_name(tag)}"


# ---------------------------------------------------------------------------------------------
# Config


def config_body(prefix: str, defaults: dict[str, str] | None = None,
                overrides: dict[str, str] | None = None) -> dict:
    """ConfigResponse: the server's defaults (with `prefix`) and overrides."""
    return {"defaults": {**(defaults or {}), PREFIX: prefix}, "overrides": dict(overrides or {})}


def merged_options(config: dict, client_options: dict[str, str]) -> dict[str, str]:
    """The options a client runs with: the server's defaults, then its own, then the server's
    overrides (Paimon's ConfigResponse.merge); None values dropped."""
    merged = {**(config.get("defaults") or {}), **client_options, **(config.get("overrides") or {})}
    return {k: str(v) for k, v in merged.items() if v is not None}


# ---------------------------------------------------------------------------------------------
# Paging


@dataclass(frozen=True)
class Page:
    """One page of a list: its items and the token of the next page (None after the last)."""

    items: list
    next_page_token: str | None


def page_params(max_results: int | None = None, page_token: str | None = None, **patterns) -> dict[str, str]:
    """Query parameters of a paged list request (empty values left out)."""
    params = {}
    if max_results is not None and max_results > 0:
        params[MAX_RESULTS] = str(max_results)
    if page_token:
        params[PAGE_TOKEN] = page_token
    params.update({k: v for k, v in patterns.items() if v})
    return params


def max_results_param(text: str | None, default: int, bound: int) -> int:
    """The `maxResults` query parameter: absent or 0 -> `default`; at most `bound`;
    InvalidArgument when it is not a positive integer."""
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgument(f"query parameter {MAX_RESULTS}={text!r} is not an integer") from None
    if value < 0:
        raise InvalidArgument(f"query parameter {MAX_RESULTS}={value} must not be negative")
    return min(value or default, bound)


def page_of(names: list[str], max_results: int, page_token: str | None) -> Page:
    """A page of `names` in sorted order after `page_token` (the last name of the previous
    page, as Paimon's reference server pages); the next token is this page's last name when
    the page is full."""
    ordered = sorted(names)
    if page_token:
        ordered = [n for n in ordered if n > page_token]
    items = ordered[:max_results]
    more = len(ordered) > max_results
    return Page(items, items[-1] if more and items else None)


def page_from(body: dict, key: str) -> Page:
    """A list response (`{"databases": [...], "nextPageToken": ...}`) as a Page."""
    return Page(list(body.get(key) or []), body.get("nextPageToken") or None)


def like_prefix(pattern: str | None):
    """A predicate for a SQL LIKE pattern of the spec's only supported kind, a prefix ('ab%',
    or an exact name; '_' is any one character, '\\' escapes); None or '' matches everything.
    InvalidArgument when '%' is followed by anything but '%'."""
    if not pattern:
        return lambda name: True
    regex, escaped, wild = [], False, False
    for c in pattern:
        if escaped:
            regex.append(re.escape(c))
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "%":
            wild = True
            regex.append(".*")
        elif wild:
            raise InvalidArgument(f"name pattern {pattern!r}: only prefix patterns ('abc%') are supported")
        else:
            regex.append("." if c == "_" else re.escape(c))
    compiled = re.compile("".join(regex), re.DOTALL)
    return lambda name: compiled.fullmatch(name) is not None


# ---------------------------------------------------------------------------------------------
# Identifiers and databases


def identifier_body(database: str, table: str) -> dict:
    """Identifier: `{"database": ..., "object": ...}` (a branch rides in the object name,
    `t$branch_dev`)."""
    return {"database": database, "object": table}


def identifier_from(obj) -> tuple[str, str]:
    """(database, object) of an Identifier body; InvalidArgument when it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("database"), str) or not isinstance(obj.get("object"), str):
        raise InvalidArgument(f"identifier must be an object with string 'database' and 'object', got {obj!r}")
    return obj["database"], obj["object"]


def database_body(name: str, location: str, options: dict[str, str] | None = None) -> dict:
    """GetDatabaseResponse."""
    return {"id": name, "name": name, "location": location, "options": dict(options or {})}


# ---------------------------------------------------------------------------------------------
# Schemas and tables


@dataclass(frozen=True)
class RestSchema:
    """The spec's `Schema`: what a table is created with (field ids as the sender numbered them)."""

    fields: list[DataField]
    partition_keys: list[str] = field(default_factory=list)
    primary_keys: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None


def schema_body(schema: TableSchema | RestSchema) -> dict:
    """The REST `Schema` of a tarn TableSchema (or RestSchema)."""
    out = {"fields": [field_to_json(f) for f in schema.fields], "partitionKeys": list(schema.partition_keys),
           "primaryKeys": list(schema.primary_keys), "options": dict(schema.options)}
    if schema.comment is not None:
        out["comment"] = schema.comment
    return out


def schema_from(obj) -> RestSchema:
    """A REST `Schema` body; SchemaMismatch when a field or type cannot be read."""
    if not isinstance(obj, dict) or not isinstance(obj.get("fields"), list):
        raise SchemaMismatch(f"schema must be an object with a 'fields' list, got {_short(obj)}")
    fields = []
    for f in obj["fields"]:
        if not isinstance(f, dict):
            raise SchemaMismatch(f"schema field must be an object, got {_short(f)}")
        fields.append(field_from_json(f))
    options = obj.get("options") or {}
    if not isinstance(options, dict):
        raise SchemaMismatch(f"schema options must be an object of strings, got {_short(options)}")
    comment = obj.get("comment")
    return RestSchema(fields, _names(obj.get("partitionKeys"), "partitionKeys"),
                      _names(obj.get("primaryKeys"), "primaryKeys"),
                      {str(k): _option_text(v) for k, v in options.items()},
                      None if comment is None else str(comment))


def table_schema_of(schema: RestSchema, schema_id: int, time_millis: int = 0) -> TableSchema:
    """A tarn TableSchema of a REST schema loaded with GetTableResponse's `schemaId`."""
    return TableSchema(id=schema_id, fields=tuple(schema.fields), highest_field_id=max_field_id(schema.fields),
                       partition_keys=tuple(schema.partition_keys), primary_keys=tuple(schema.primary_keys),
                       options=dict(schema.options), comment=schema.comment, time_millis=time_millis)


@dataclass(frozen=True)
class TableMetadata:
    """GetTableResponse: who the table is (`id` goes back with every commit), where it lives and
    its latest schema."""

    id: str
    database: str
    name: str
    path: str
    schema_id: int
    schema: RestSchema
    is_external: bool = False


def table_body(meta: TableMetadata) -> dict:
    """GetTableResponse of TableMetadata."""
    return {"id": meta.id, "database": meta.database, "name": meta.name, "path": meta.path,
            "isExternal": meta.is_external, "schemaId": meta.schema_id, "schema": schema_body(meta.schema)}


def table_from(obj: dict) -> TableMetadata:
    """TableMetadata of a GetTableResponse body; InvalidArgument when a key is missing."""
    try:
        return TableMetadata(id=str(obj["id"]), database=str(obj.get("database") or ""), name=str(obj["name"]),
                             path=str(obj["path"]), schema_id=int(obj["schemaId"]),
                             schema=schema_from(obj["schema"]), is_external=bool(obj.get("isExternal", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(f"table response lacks or mangles {exc}: {_short(obj)}") from None


def create_table_body(database: str, table: str, schema: TableSchema | RestSchema) -> dict:
    """CreateTableRequest."""
    return {"identifier": identifier_body(database, table), "schema": schema_body(schema)}


def rename_body(source: tuple[str, str], destination: tuple[str, str]) -> dict:
    """RenameTableRequest."""
    return {"source": identifier_body(*source), "destination": identifier_body(*destination)}


# ---------------------------------------------------------------------------------------------
# Schema changes (AlterTableRequest)

_MOVES = ("FIRST", "LAST", "AFTER", "BEFORE")


def change_body(change) -> dict:
    """One REST SchemaChange of a tarn change (tarn.SetOption, tarn.AddColumn, ...)."""
    kind = type(change)
    if kind is SetOption:
        return {"action": "setOption", "key": change.key, "value": change.value}
    if kind is RemoveOption:
        return {"action": "removeOption", "key": change.key}
    if kind is UpdateComment:
        return {"action": "updateComment", "comment": change.comment}
    path = list(_as_path(change.path))
    if kind is AddColumn:
        out = {"action": "addColumn", "fieldNames": path, "dataType": type_to_json(change.type),
               "comment": change.comment}
        if change.position is not None:
            out["move"] = _move_body(path[-1], change.position)
        return out
    if kind is RenameColumn:
        return {"action": "renameColumn", "fieldNames": path, "newName": change.new_name}
    if kind is DropColumn:
        return {"action": "dropColumn", "fieldNames": path}
    if kind is UpdateColumnComment:
        return {"action": "updateColumnComment", "fieldNames": path, "newComment": change.comment}
    if kind is UpdateColumnType:
        return {"action": "updateColumnType", "fieldNames": path, "newDataType": type_to_json(change.type),
                "keepNullability": change.keep_nullability}
    if kind is UpdateColumnNullability:
        return {"action": "updateColumnNullability", "fieldNames": path, "newNullability": change.nullable}
    raise InvalidArgument(f"schema change {change!r} has no REST form")


def change_from(obj):
    """A tarn change of one REST SchemaChange body. InvalidArgument for a malformed one,
    UnsupportedFeature for an action tarn does not implement (updateColumnPosition,
    updateColumnDefaultValue, dropPrimaryKey)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("action"), str):
        raise InvalidArgument(f"schema change must be an object with an 'action', got {_short(obj)}")
    action = obj["action"]
    try:
        return _CHANGE_READERS[action](obj)
    except KeyError as exc:
        if action not in _CHANGE_READERS:
            if action in ("updateColumnPosition", "updateColumnDefaultValue", "dropPrimaryKey"):
                raise UnsupportedFeature(f"schema change '{action}' is not implemented by tarn") from None
            raise InvalidArgument(f"unknown schema change action {action!r}") from None
        raise InvalidArgument(f"schema change '{action}' lacks {exc}") from None
    except (TypeError, ValueError, SchemaMismatch) as exc:
        raise InvalidArgument(f"schema change '{action}' is malformed: {exc}") from None


def _column_path(obj) -> str | tuple[str, ...]:
    """A column name, or the path of a field inside a ROW column."""
    names = obj["fieldNames"]
    if not isinstance(names, list) or not names:
        raise ValueError(f"fieldNames must be a non-empty list, got {names!r}")
    return names[0] if len(names) == 1 else tuple(names)


def _add_column(obj) -> AddColumn:
    path = _column_path(obj)
    move = obj.get("move")
    return AddColumn(path, parse_type(obj["dataType"]), obj.get("comment"),
                     None if move is None else _position_from(move))


_CHANGE_READERS = {
    "setOption": lambda o: SetOption(o["key"], o["value"]),
    "removeOption": lambda o: RemoveOption(o["key"]),
    "updateComment": lambda o: UpdateComment(o.get("comment")),
    "addColumn": _add_column,
    "renameColumn": lambda o: RenameColumn(_column_path(o), o["newName"]),
    "dropColumn": lambda o: DropColumn(_column_path(o)),
    "updateColumnComment": lambda o: UpdateColumnComment(_column_path(o), o.get("newComment")),
    "updateColumnType": lambda o: UpdateColumnType(_column_path(o), parse_type(o["newDataType"]),
                                                   bool(o.get("keepNullability", False))),
    "updateColumnNullability": lambda o: UpdateColumnNullability(_column_path(o), o["newNullability"]),
}


def _move_body(column: str, position) -> dict:
    if position in ("first", "last"):
        return {"fieldName": column, "referenceFieldName": None, "type": position.upper()}
    return {"fieldName": column, "referenceFieldName": position[1], "type": position[0].upper()}


def _position_from(move):
    if not isinstance(move, dict) or move.get("type") not in _MOVES:
        raise ValueError(f"move must have a type of {_MOVES}, got {move!r}")
    kind = move["type"].lower()
    if kind in ("first", "last"):
        return kind
    return (kind, move["referenceFieldName"])


def alter_body(changes) -> dict:
    """AlterTableRequest."""
    return {"changes": [change_body(c) for c in changes]}


# ---------------------------------------------------------------------------------------------
# Commits and snapshots


@dataclass(frozen=True)
class CommitRequest:
    """CommitTableRequest: the snapshot a client wrote the files of, the table id it loaded and
    the uuid of the snapshot it built on (None: built on no snapshot, or one without a uuid)."""

    table_id: str | None
    snapshot: Snapshot
    base_snapshot_uuid: str | None = None
    statistics: list[dict] = field(default_factory=list)


def commit_body(request: CommitRequest) -> dict:
    """CommitTableRequest body."""
    return {"tableId": request.table_id, "baseSnapshotUuid": request.base_snapshot_uuid,
            "snapshot": request.snapshot.to_dict(), "statistics": list(request.statistics)}


def commit_from(obj) -> CommitRequest:
    """A CommitTableRequest body; InvalidArgument when it has no snapshot object or the snapshot
    lacks required fields."""
    if not isinstance(obj, dict) or not isinstance(obj.get("snapshot"), dict):
        raise InvalidArgument(f"commit request must hold a 'snapshot' object, got {_short(obj)}")
    try:
        snapshot = Snapshot.from_dict(obj["snapshot"], "the commit request's snapshot")
    except CorruptFile as exc:
        raise InvalidArgument(str(exc)) from None
    if not isinstance(snapshot.id, int) or snapshot.id < 1:
        raise InvalidArgument(f"the commit request's snapshot id must be a positive integer, got {snapshot.id!r}")
    statistics = obj.get("statistics") or []
    if not isinstance(statistics, list):
        raise InvalidArgument(f"commit request statistics must be a list, got {_short(statistics)}")
    table_id, base = obj.get("tableId"), obj.get("baseSnapshotUuid")
    return CommitRequest(None if table_id is None else str(table_id), snapshot,
                         None if base is None else str(base), statistics)


def commit_result_body(success: bool) -> dict:
    """CommitTableResponse."""
    return {"success": bool(success)}


@dataclass(frozen=True)
class FileTotals:
    """Record, file and byte counts of a table or a partition (TableSnapshot, Partition)."""

    record_count: int = 0
    file_size_in_bytes: int = 0
    file_count: int = 0
    last_file_creation_time: int = 0

    def body(self) -> dict:
        return {"recordCount": self.record_count, "fileSizeInBytes": self.file_size_in_bytes,
                "fileCount": self.file_count, "lastFileCreationTime": self.last_file_creation_time}

    @staticmethod
    def of(obj: dict) -> "FileTotals":
        return FileTotals(int(obj.get("recordCount") or 0), int(obj.get("fileSizeInBytes") or 0),
                          int(obj.get("fileCount") or 0), int(obj.get("lastFileCreationTime") or 0))


def table_snapshot_body(snapshot: Snapshot, totals: FileTotals) -> dict:
    """GetTableSnapshotResponse."""
    return {"snapshot": {"snapshot": snapshot.to_dict(), **totals.body()}}


def table_snapshot_from(obj: dict) -> tuple[Snapshot, FileTotals]:
    """The snapshot and totals of a GetTableSnapshotResponse body."""
    inner = obj.get("snapshot") if isinstance(obj, dict) else None
    if not isinstance(inner, dict) or not isinstance(inner.get("snapshot"), dict):
        raise InvalidArgument(f"snapshot response must hold snapshot.snapshot, got {_short(obj)}")
    try:
        return Snapshot.from_dict(inner["snapshot"], "the snapshot response"), FileTotals.of(inner)
    except CorruptFile as exc:
        raise InvalidArgument(str(exc)) from None


def partition_body(spec: dict[str, str], totals: FileTotals, total_buckets: int | None = None) -> dict:
    """One Partition of ListPartitionsResponse."""
    out = {"spec": dict(spec), **totals.body(), "done": False}
    if total_buckets is not None:
        out["totalBuckets"] = total_buckets
    return out


def partition_from(obj) -> tuple[dict[str, str], FileTotals]:
    """The spec and totals of one Partition of a ListPartitionsResponse."""
    if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        raise InvalidArgument(f"a partition must hold a spec mapping, got {_short(obj)}")
    return {str(k): ("" if v is None else str(v)) for k, v in obj["spec"].items()}, FileTotals.of(obj)


def token_body(token: dict[str, str], expires_at_millis: int) -> dict:
    """GetTableDataTokenResponse: the file-io options a client reads the table's files with."""
    return {"token": dict(token), "expiresAt": int(expires_at_millis)}


def tag_body(name: str, snapshot: Snapshot, create_time_millis: int | None = None,
             time_retained: str | None = None) -> dict:
    """GetTagResponse."""
    return {"tagName": name, "snapshot": snapshot.to_dict(), "tagCreateTime": create_time_millis,
            "tagTimeRetained": time_retained}


# ---------------------------------------------------------------------------------------------
# Errors


@dataclass(frozen=True)
class ErrorBody:
    """The spec's ErrorResponse: an HTTP status code, a message and, for 404 and 409, the kind
    and name of the resource (`TABLE`, `db.t`)."""

    code: int
    message: str
    resource_type: str | None = None
    resource_name: str | None = None

    def body(self) -> dict:
        return {"message": self.message, "resourceType": self.resource_type,
                "resourceName": self.resource_name, "code": self.code}

    @staticmethod
    def of(obj, status: int) -> "ErrorBody":
        """The ErrorResponse of a response body (anything: a proxy's HTML page too) and status."""
        if not isinstance(obj, dict):
            return ErrorBody(status, _short(obj) if obj else f"HTTP {status} without a body")
        code = obj.get("code")
        return ErrorBody(code if isinstance(code, int) else status, str(obj.get("message") or f"HTTP {status}"),
                         obj.get("resourceType"), obj.get("resourceName"))


# tarn errors a server answers with, most specific first: (class, status)
_STATUS_OF = (
    (TableNotFound, 404),
    (SnapshotNotFound, 404),
    (TableAlreadyExists, 409),
    (UnsupportedFeature, 501),
    (InvalidArgument, 400),
    (InvalidOption, 400),
    (SchemaMismatch, 400),
    (SchemaEvolutionError, 400),
    (CommitConflict, 409),
)


def error_for(exc: TarnError, resource_type: str | None = None, resource_name: str | None = None) -> ErrorBody:
    """The ErrorResponse a server sends for a tarn error about a resource (500 for errors that
    are not the request's fault)."""
    for kind, status in _STATUS_OF:
        if isinstance(exc, kind):
            if isinstance(exc, SnapshotNotFound) and resource_type in (None, TABLE):
                resource_type = SNAPSHOT
            return ErrorBody(status, str(exc), resource_type, resource_name)
    return ErrorBody(500, str(exc), resource_type, resource_name)


def exception_for(error: ErrorBody, catalog: str) -> TarnError:
    """The tarn error a client raises for an ErrorResponse of catalog `catalog`; the message
    names the catalog and the resource."""
    named = error.resource_type and error.resource_name
    what = f" ({error.resource_type.lower()} {error.resource_name})" if named else ""
    message = f"catalog {catalog}: {error.message}{what}"
    code, kind = error.code, error.resource_type
    if code == 404:
        if kind in (SNAPSHOT, TAG):
            return SnapshotNotFound(message)
        if kind in (TABLE, BRANCH, None, ""):
            return TableNotFound(message)
        return TarnError(message)  # a database: tarn's catalogs raise TarnError for those
    if code == 409:
        return TableAlreadyExists(message) if kind == TABLE else (
            TarnError(message) if kind == DATABASE else InvalidArgument(message))
    if code in (400, 413):
        return InvalidArgument(message)
    if code in (401, 403):
        return TarnError(f"catalog {catalog}: not authorized ({code}): {error.message}")
    if code == 501:
        return UnsupportedFeature(message)
    if code >= 500 or code == 429:
        return StorageError(message)
    return TarnError(message)


# ---------------------------------------------------------------------------------------------
# helpers


def _names(value, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaMismatch(f"schema {what} must be a list of column names, got {_short(value)}")
    return list(value)


def _as_path(path) -> tuple[str, ...]:
    return (path,) if isinstance(path, str) else tuple(path)


def _option_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."
