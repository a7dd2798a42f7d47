"""Table schemas (`schema/schema-N`): the record, its JSON form, creation and ALTER changes."""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence, Union

import pyarrow as pa

from tarn.meta.shape import TableShape, shape_of
from tarn.errors import CorruptFile, InvalidArgument, InvalidOption, SchemaEvolutionError, SchemaMismatch
from tarn.types import (
    DataField,
    DataType,
    arrow_schema,
    field_from_json,
    field_to_json,
    from_arrow_field,
    from_arrow_type,
    is_widening,
    parse_type,
    type_to_sql,
    with_nullable,
)

CURRENT_VERSION = 3
PAIMON_07_VERSION = 1
PAIMON_08_VERSION = 2

BUCKET_KEY_OPTION = "bucket-key"
PRIMARY_KEY_OPTION = "primary-key"
PARTITION_OPTION = "partition"
NULL_TO_NOT_NULL_DISABLED_OPTION = "alter-column-null-to-not-null.disabled"
ADD_COLUMN_BEFORE_PARTITION_OPTION = "add-column-before-partition"


_REPR_COLUMNS, _REPR_OPTIONS = 12, 8  # what a schema's repr lists before "... N more"


def _first(items: list[str], limit: int) -> list[str]:
    """`items`, or its first `limit` and a count of the rest."""
    return items if len(items) <= limit else items[:limit] + [f"... {len(items) - limit} more"]


@dataclass(frozen=True)
class TableSchema:
    """One version of a table's schema, as stored in `schema/schema-<id>`."""

    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: dict[str, str]
    comment: str | None
    time_millis: int
    version: int = CURRENT_VERSION
    extra: dict = field(default_factory=dict, compare=False)  # keys tarn does not know, kept verbatim

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "partition_keys", tuple(self.partition_keys))
        object.__setattr__(self, "primary_keys", tuple(self.primary_keys))
        object.__setattr__(self, "options", dict(self.options))
        self.trimmed_primary_keys  # validates like Java's constructor
        self.bucket_keys

    def __getstate__(self) -> dict:
        """Pickled without the cached shape (rebuilt where it is unpickled: Spark tasks)."""
        state = dict(self.__dict__)
        state.pop("shape", None)
        return state

    @functools.cached_property
    def shape(self) -> "TableShape":
        """What this schema decides (bucket mode, row tracking, options, ...), built once
        (tarn/meta/shape.py)."""
        return shape_of(self.options, self.primary_keys, self.partition_keys)

    def __repr__(self) -> str:
        """A few lines: id, keys, the first columns with their types, the first options."""
        columns = _first([f"{f.name} {type_to_sql(f.type)}" for f in self.fields], _REPR_COLUMNS)
        options = _first([f"{k!r}: {v!r}" for k, v in sorted(self.options.items())], _REPR_OPTIONS)
        keys = "".join(f", {name}={list(value)!r}" for name, value in
                       (("primary_keys", self.primary_keys), ("partition_keys", self.partition_keys)) if value)
        return (f"TableSchema(id={self.id}{keys},\n"
                f"  columns=[{', '.join(columns)}],\n"
                f"  options={{{', '.join(options)}}})")

    # --- names ---------------------------------------------------------------------------

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def fields_by_name(self) -> dict[str, DataField]:
        return {f.name: f for f in self.fields}

    def field(self, name: str) -> DataField:
        """The column called `name`; SchemaMismatch if there is none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaMismatch(f"column {name!r} is not in the table schema {self.field_names}")

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """Primary keys minus partition keys, in primary-key order (the LSM key)."""
        if not self.primary_keys:
            return []
        trimmed = [k for k in self.primary_keys if k not in self.partition_keys]
        if not trimmed:
            raise SchemaMismatch(
                f"primary key {list(self.primary_keys)} should not be the same as the partition "
                f"keys {list(self.partition_keys)}: each partition would hold only one record")
        return trimmed

    @property
    def bucket_keys(self) -> list[str]:
        """The `bucket-key` option's columns (in option order), else the trimmed primary keys."""
        raw = self.options.get(BUCKET_KEY_OPTION)
        if raw is None or not raw.strip():
            return self.trimmed_primary_keys
        keys = raw.split(",")
        names = set(self.field_names)
        for k in keys:
            if k not in names:
                raise InvalidOption(f"bucket-key column {k!r} is not in the table columns {self.field_names}")
            if k in self.partition_keys:
                raise InvalidOption(f"bucket-key column {k!r} must not be a partition key")
            if self.primary_keys and k not in self.primary_keys:
                raise InvalidOption(
                    f"bucket-key column {k!r} must be one of the primary keys {list(self.primary_keys)}")
        return keys

    def arrow_schema(self) -> pa.Schema:
        return arrow_schema(self.fields)

    # --- JSON ----------------------------------------------------------------------------

    def to_json(self) -> str:
        """The schema file text (Jackson pretty-printer layout, Java key order)."""
        obj: dict = {
            "version": self.version,
            "id": self.id,
            "fields": [field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            obj["comment"] = self.comment
        obj["timeMillis"] = self.time_millis
        obj.update(self.extra)
        return jackson_json(obj)

    @staticmethod
    def from_json(text: str | bytes, source: str = "schema JSON") -> TableSchema:
        """Parse a schema file; `source` (the file path) names it in errors.

        Applies Java's reader compatibility: version 1 without `bucket` -> bucket=1, version <= 2
        without `file.format` -> orc. A missing `version` means 1; unknown keys are ignored."""
        try:
            obj = json.loads(text)
            version = int(obj.get("version", PAIMON_07_VERSION))
            options = {k: _option_text(v) for k, v in (obj.get("options") or {}).items()}
            if version <= PAIMON_07_VERSION and "bucket" not in options:
                options["bucket"] = "1"
            if version <= PAIMON_08_VERSION and "file.format" not in options:
                options["file.format"] = "orc"
            comment = obj.get("comment")
            return TableSchema(
                id=int(obj["id"]),
                fields=tuple(field_from_json(f) for f in obj["fields"]),
                highest_field_id=int(obj["highestFieldId"]),
                partition_keys=tuple(obj.get("partitionKeys") or ()),
                primary_keys=tuple(obj.get("primaryKeys") or ()),
                options=options,
                comment=None if comment is None else str(comment),
                time_millis=int(obj.get("timeMillis") or 0),
                version=version,
                extra={k: v for k, v in obj.items() if k not in _SCHEMA_KEYS},
            )
        except (ValueError, KeyError, TypeError, AttributeError, SchemaMismatch, InvalidOption) as e:
            raise CorruptFile(f"cannot parse {source}: {e}") from e


_SCHEMA_KEYS = {"version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options", "comment",
                "timeMillis"}


def _option_text(value) -> str:
    """Java reads every option value with asText()."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


# ---------------------------------------------------------------------------------------------
# Jackson default pretty printer


def _json_string(s: str) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            short = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(ch)
            out.append(short or f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jackson_json(value, indent: int = 0) -> str:
    """JSON text laid out like Jackson's DefaultPrettyPrinter (`"k" : v`, `[ a, b ]`, 2 spaces)."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        pad = "  " * (indent + 1)
        items = [f"{pad}{_json_string(str(k))} : {jackson_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_json(v, indent) for v in value) + " ]"
    if isinstance(value, str):
        return _json_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


# ---------------------------------------------------------------------------------------------
# Creating a schema


def assign_field_ids(t: DataType, counter: list[int]) -> DataType:
    """`t` with every nested ROW field renumbered from `counter` (post-order, as Paimon)."""
    if t.root == "ROW":
        new_fields = []
        for f in t.fields:
            sub_type = assign_field_ids(f.type, counter)
            counter[0] += 1
            new_fields.append(replace(f, id=counter[0], type=sub_type))
        return replace(t, fields=tuple(new_fields))
    if t.root in ("ARRAY", "MULTISET"):
        return replace(t, element=assign_field_ids(t.element, counter))
    if t.root == "MAP":
        return replace(t, key=assign_field_ids(t.key, counter), value=assign_field_ids(t.value, counter))
    return t


def _new_field(f: DataField, counter: list[int]) -> DataField:
    """A top-level column takes the next id first, then its nested fields are numbered."""
    counter[0] += 1
    column_id = counter[0]
    return replace(f, id=column_id, type=assign_field_ids(f.type, counter))


def max_field_id(fields: Iterable[DataField]) -> int:
    """The highest id among `fields` and all nested ROW fields (-1 if none)."""
    best = -1
    for f in fields:
        best = max(best, f.id, _max_nested_id(f.type))
    return best


def _max_nested_id(t: DataType) -> int:
    if t.root == "ROW":
        return max_field_id(t.fields)
    if t.root in ("ARRAY", "MULTISET"):
        return _max_nested_id(t.element)
    if t.root == "MAP":
        return max(_max_nested_id(t.key), _max_nested_id(t.value))
    return -1


def _split_keys(text: str) -> list[str]:
    return [k.strip() for k in text.split(",") if k.strip()]


def _check_unique(names: Sequence[str], what: str) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise SchemaMismatch(f"{what} has the column {n!r} twice")
        seen.add(n)


def _with_not_null_keys(fields: Sequence[DataField], primary_keys: Sequence[str],
                        options: dict | None = None) -> tuple[DataField, ...]:
    """Primary-key columns NOT NULL, or nullable with `primary-key.nullable` (Paimon 2.1's
    Schema.normalizeFields: the option decides, whatever the column said)."""
    nullable = str((options or {}).get("primary-key.nullable", "false")).strip().lower() == "true"
    return tuple(replace(f, type=with_nullable(f.type, nullable)) if f.name in primary_keys else f
                 for f in fields)


def new_schema(
    columns: pa.Schema | Sequence[DataField],
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: dict[str, str] | None = None,
    comment: str | None = None,
) -> TableSchema:
    """Schema 0 of a new table: field ids per Paimon, PK columns NOT NULL, keys validated.

    `columns` is an Arrow schema or Paimon fields (their ids are reassigned). The `partition`
    and `primary-key` options are accepted in place of the arguments, as in Java."""
    options = {str(k): str(v) for k, v in (options or {}).items()}
    partition_keys, primary_keys = list(partition_keys), list(primary_keys)
    for option, keys, what in ((PARTITION_OPTION, partition_keys, "partition keys"),
                               (PRIMARY_KEY_OPTION, primary_keys, "primary keys")):
        if option in options:
            if keys:
                raise InvalidOption(f"{what} are given both as arguments and as option {option!r}")
            keys.extend(_split_keys(options.pop(option)))

    if isinstance(columns, pa.Schema):
        given = [from_arrow_field(f, -1) for f in columns]
    else:
        given = list(columns)
    counter = [-1]
    fields = [_new_field(f, counter) for f in given]
    names = [f.name for f in fields]
    _check_unique(names, "the table")
    _check_unique(partition_keys, "the partition keys")
    _check_unique(primary_keys, "the primary keys")
    for key in partition_keys + primary_keys:
        if key not in names:
            raise SchemaMismatch(f"key column {key!r} is not in the table columns {names}")
    return TableSchema(
        id=0,
        fields=_with_not_null_keys(fields, primary_keys, options),
        highest_field_id=max_field_id(fields),
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_keys),
        options=options,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )


# ---------------------------------------------------------------------------------------------
# Schema changes

Path = Union[str, tuple[str, ...]]
Position = Union[str, tuple[str, str], None]  # 'first' | 'last' | ('after'|'before', name) | None


def _path(path: Path) -> tuple[str, ...]:
    return (path,) if isinstance(path, str) else tuple(path)


# Argument checks of the changes: a misuse fails when the change is built, with InvalidArgument
# naming the change, not later inside ALTER with an AttributeError.

def _set(change, name: str, value) -> None:
    object.__setattr__(change, name, value)


def _checked_path(change, path) -> Path:
    if isinstance(path, str) and path:
        return path
    if isinstance(path, (tuple, list)) and path and all(isinstance(p, str) and p for p in path):
        return tuple(path)
    raise InvalidArgument(f"{type(change).__name__}: the column must be a name, or a tuple of names for a field "
                          f"inside a ROW column, got {path!r}")


def _checked_type(change, value, path) -> DataType:
    """A tarn DataType, also from a pyarrow type (pa.int32()) or Paimon's SQL text ('INT')."""
    where = _dotted(_path(path))
    if isinstance(value, DataType):
        return value
    if isinstance(value, pa.DataType):
        return from_arrow_type(value, True, where)
    if isinstance(value, str):
        return parse_type(value)
    raise InvalidArgument(f"{type(change).__name__} of column {where!r}: the type must be a tarn type "
                          f"(tarn.types.INT()), a pyarrow type (pa.int32()) or a type name ('INT'), got {value!r}")


def _checked_text(change, what: str, value, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not optional and not value):
        wanted = "a string or None" if optional else "a non-empty string"
        raise InvalidArgument(f"{type(change).__name__}: {what} must be {wanted}, got {value!r}")
    return value


def _checked_bool(change, what: str, value) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{type(change).__name__}: {what} must be True or False, got {value!r}")
    return value


@dataclass(frozen=True)
class AddColumn:
    """Add a nullable column; a path of length > 1 adds a field inside a ROW column. `type`: a
    tarn type, a pyarrow type or a type name; `position`: 'first', 'last', ('after', name) or
    ('before', name)."""
    path: Path
    type: DataType
    comment: str | None = None
    position: Position = None

    def __post_init__(self):
        _set(self, "path", _checked_path(self, self.path))
        _set(self, "type", _checked_type(self, self.type, self.path))
        _set(self, "comment", _checked_text(self, "comment", self.comment, optional=True))
        position = self.position
        if isinstance(position, list):
            position = tuple(position)
        if not (position in (None, "first", "last") or (
                isinstance(position, tuple) and len(position) == 2 and position[0] in ("after", "before")
                and isinstance(position[1], str))):
            raise InvalidArgument(f"AddColumn of column {_dotted(_path(self.path))!r}: position must be 'first', "
                                  f"'last', ('after', column) or ('before', column), got {self.position!r}")
        _set(self, "position", position)


@dataclass(frozen=True)
class RenameColumn:
    """Rename a column (a path of length > 1 renames a field inside a ROW column); data files
    keep their field ids, so old files read under the new name. Key columns cannot be renamed."""
    path: Path
    new_name: str

    def __post_init__(self):
        _set(self, "path", _checked_path(self, self.path))
        _checked_text(self, "the new name", self.new_name, optional=False)


@dataclass(frozen=True)
class DropColumn:
    """Drop a column or a nested field; partition and primary-key columns and the last column
    cannot be dropped. Old files keep the values, reads no longer return them."""
    path: Path

    def __post_init__(self):
        _set(self, "path", _checked_path(self, self.path))


@dataclass(frozen=True)
class UpdateColumnType:
    """Widen a column's type (a tarn type, a pyarrow type or a type name); with
    keep_nullability the column keeps its nullability."""
    path: Path
    type: DataType
    keep_nullability: bool = False

    def __post_init__(self):
        _set(self, "path", _checked_path(self, self.path))
        _set(self, "type", _checked_type(self, self.type, self.path))
        _checked_bool(self, "keep_nullability", self.keep_nullability)


@dataclass(frozen=True)
class UpdateColumnComment:
    """Set (or with None remove) the comment of a column or nested field."""
    path: Path
    comment: str | None

    def __post_init__(self):
        _set(self, "path", _checked_path(self, self.path))
        _checked_text(self, "comment", self.comment, optional=True)


@dataclass(frozen=True)
class UpdateColumnNullability:
    """Make a column nullable or NOT NULL. NOT NULL needs the table option
    `alter-column-null-to-not-null.disabled` = 'false'; primary-key columns stay NOT NULL."""
    path: Path
    nullable: bool

    def __post_init__(self):
        _set(self, "path", _checked_path(self, self.path))
        _checked_bool(self, "nullable", self.nullable)


@dataclass(frozen=True)
class SetOption:
    """Set a table option; a bool or number value is written as Paimon's text ('true', '4').
    `alter()` validates it as `create_table` does (unknown names, bad values) and refuses
    options Paimon fixes at creation (`merge-engine`, `bucket-key`, `sequence.field`, ...)."""
    key: str
    value: str

    def __post_init__(self):
        _checked_text(self, "the option key", self.key, optional=False)
        value = self.value
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str):
            raise InvalidArgument(f"SetOption {self.key!r}: the value must be a string (or a bool or number), "
                                  f"got {self.value!r}; RemoveOption removes an option")
        _set(self, "value", value)


@dataclass(frozen=True)
class RemoveOption:
    """Remove a table option (it falls back to its default); immutable options such as
    `merge-engine` or `bucket-key` cannot be removed."""
    key: str

    def __post_init__(self):
        _checked_text(self, "the option key", self.key, optional=False)


@dataclass(frozen=True)
class UpdateComment:
    """Set (or with None remove) the table's comment."""
    comment: str | None

    def __post_init__(self):
        _checked_text(self, "comment", self.comment, optional=True)


SchemaChange = Union[AddColumn, RenameColumn, DropColumn, UpdateColumnType, UpdateColumnComment,
                     UpdateColumnNullability, SetOption, RemoveOption, UpdateComment]


@dataclass
class _Draft:
    """The mutable state apply_changes works on."""
    fields: list[DataField]
    highest_field_id: int
    options: dict[str, str]
    comment: str | None
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _edit_fields(fields: list[DataField], path: tuple[str, ...], edit, full: tuple[str, ...]) -> list[DataField]:
    """Apply `edit(fields_at_level, last_name) -> new list` to the ROW level that `path` names."""
    if len(path) == 1:
        return edit(list(fields), path[0])
    for i, f in enumerate(fields):
        if f.name == path[0]:
            if f.type.root != "ROW":
                raise SchemaEvolutionError(f"column {_dotted(full)!r}: {f.name!r} is not a ROW column")
            inner = _edit_fields(list(f.type.fields), path[1:], edit, full)
            out = list(fields)
            out[i] = replace(f, type=replace(f.type, fields=tuple(inner)))
            return out
    raise SchemaEvolutionError(f"column {_dotted(full)!r} does not exist: no column {path[0]!r}")


def _index(fields: list[DataField], name: str, full: tuple[str, ...]) -> int:
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    raise SchemaEvolutionError(f"column {_dotted(full)!r} does not exist")


def _update_field(draft: _Draft, path: tuple[str, ...], update) -> None:
    """Replace the field at `path` with `update(field)`."""
    def edit(level: list[DataField], name: str) -> list[DataField]:
        i = _index(level, name, path)
        level[i] = update(level[i])
        return level
    draft.fields = _edit_fields(draft.fields, path, edit, path)


def _is_key(path: tuple[str, ...], keys: Sequence[str]) -> bool:
    return len(path) == 1 and path[0] in keys


def _forbid_keys(draft: _Draft, path: tuple[str, ...], operation: str) -> None:
    if _is_key(path, draft.partition_keys):
        raise SchemaEvolutionError(f"cannot {operation} partition column {path[0]!r}")
    if _is_key(path, draft.primary_keys):
        raise SchemaEvolutionError(f"cannot {operation} primary key column {path[0]!r}")


def _insert_at(level: list[DataField], new: DataField, position: Position, draft: _Draft,
               top_level: bool, path: tuple[str, ...]) -> list[DataField]:
    if position is None or position == "last":
        if (position is None and top_level and draft.partition_keys
                and draft.options.get(ADD_COLUMN_BEFORE_PARTITION_OPTION, "false").lower() == "true"):
            first_partition = next((i for i, f in enumerate(level) if f.name in draft.partition_keys),
                                   len(level))
            level.insert(first_partition, new)
        else:
            level.append(new)
        return level
    if position == "first":
        level.insert(0, new)
        return level
    if isinstance(position, tuple) and len(position) == 2 and position[0] in ("after", "before"):
        ref = next((i for i, f in enumerate(level) if f.name == position[1]), None)
        if ref is None:
            raise SchemaEvolutionError(
                f"cannot add column {_dotted(path)!r} {position[0]} {position[1]!r}: no such column")
        level.insert(ref + 1 if position[0] == "after" else ref, new)
        return level
    raise SchemaEvolutionError(f"invalid position {position!r} for column {_dotted(path)!r}")


def _add_column(draft: _Draft, change: AddColumn) -> None:
    path = _path(change.path)
    if not change.type.nullable:
        raise SchemaEvolutionError(f"added column {_dotted(path)!r} cannot be NOT NULL")
    counter = [draft.highest_field_id + 1]
    new = DataField(counter[0], path[-1], assign_field_ids(change.type, counter), change.comment)
    draft.highest_field_id = counter[0]

    def edit(level: list[DataField], name: str) -> list[DataField]:
        if any(f.name == name for f in level):
            raise SchemaEvolutionError(f"column {_dotted(path)!r} already exists")
        return _insert_at(level, new, change.position, draft, len(path) == 1, path)
    draft.fields = _edit_fields(draft.fields, path, edit, path)


def _rename_column(draft: _Draft, change: RenameColumn) -> None:
    path = _path(change.path)
    _forbid_keys(draft, path, "rename")

    def edit(level: list[DataField], name: str) -> list[DataField]:
        i = _index(level, name, path)
        if any(f.name == change.new_name for f in level):
            raise SchemaEvolutionError(
                f"cannot rename column {_dotted(path)!r} to {change.new_name!r}: that name exists")
        level[i] = replace(level[i], name=change.new_name)
        return level
    draft.fields = _edit_fields(draft.fields, path, edit, path)


def _drop_column(draft: _Draft, change: DropColumn) -> None:
    path = _path(change.path)
    _forbid_keys(draft, path, "drop")

    def edit(level: list[DataField], name: str) -> list[DataField]:
        del level[_index(level, name, path)]
        if not level:
            raise SchemaEvolutionError(f"cannot drop column {_dotted(path)!r}: it is the last one")
        return level
    draft.fields = _edit_fields(draft.fields, path, edit, path)


def _null_to_not_null_disabled(draft: _Draft) -> bool:
    return draft.options.get(NULL_TO_NOT_NULL_DISABLED_OPTION, "true").lower() == "true"


def _check_nullability_change(draft: _Draft, path: tuple[str, ...], old: bool, new: bool) -> None:
    if old and not new and _null_to_not_null_disabled(draft):
        raise SchemaEvolutionError(
            f"cannot make column {_dotted(path)!r} NOT NULL (set option "
            f"{NULL_TO_NOT_NULL_DISABLED_OPTION!r} = 'false' to allow it)")


def _update_column_type(draft: _Draft, change: UpdateColumnType) -> None:
    path = _path(change.path)
    _forbid_keys(draft, path, "change the type of")

    def update(f: DataField) -> DataField:
        target = change.type
        if change.keep_nullability:
            target = with_nullable(target, f.type.nullable)
        else:
            _check_nullability_change(draft, path, f.type.nullable, target.nullable)
        if not is_widening(with_nullable(f.type, target.nullable), target):
            raise SchemaEvolutionError(
                f"column {_dotted(path)!r} of type {type_to_sql(f.type)} cannot be changed to "
                f"{type_to_sql(target)} without losing information")
        return replace(f, type=target)
    _update_field(draft, path, update)


def _update_column_nullability(draft: _Draft, change: UpdateColumnNullability) -> None:
    path = _path(change.path)
    if change.nullable and _is_key(path, draft.primary_keys):
        raise SchemaEvolutionError(f"cannot make primary key column {path[0]!r} nullable")

    def update(f: DataField) -> DataField:
        _check_nullability_change(draft, path, f.type.nullable, change.nullable)
        return replace(f, type=with_nullable(f.type, change.nullable))
    _update_field(draft, path, update)


def _apply_one(draft: _Draft, change) -> None:
    if isinstance(change, SetOption):
        draft.options[change.key] = change.value
    elif isinstance(change, RemoveOption):
        draft.options.pop(change.key, None)
    elif isinstance(change, UpdateComment):
        draft.comment = change.comment
    elif isinstance(change, AddColumn):
        _add_column(draft, change)
    elif isinstance(change, RenameColumn):
        _rename_column(draft, change)
    elif isinstance(change, DropColumn):
        _drop_column(draft, change)
    elif isinstance(change, UpdateColumnType):
        _update_column_type(draft, change)
    elif isinstance(change, UpdateColumnComment):
        _update_field(draft, _path(change.path), lambda f: replace(f, description=change.comment))
    elif isinstance(change, UpdateColumnNullability):
        _update_column_nullability(draft, change)
    else:
        raise SchemaEvolutionError(f"unsupported schema change {change!r}")


def apply_changes(schema: TableSchema, changes: Iterable[SchemaChange],
                  time_millis: int | None = None) -> TableSchema:
    """The schema after `changes` (in order); id + 1, version 3. `schema` is not modified."""
    draft = _Draft(list(schema.fields), schema.highest_field_id, dict(schema.options),
                   schema.comment, schema.partition_keys, schema.primary_keys)
    for change in changes:
        _apply_one(draft, change)
    try:
        return TableSchema(
            id=schema.id + 1,
            fields=_with_not_null_keys(draft.fields, schema.primary_keys, draft.options),
            highest_field_id=draft.highest_field_id,
            partition_keys=schema.partition_keys,
            primary_keys=schema.primary_keys,
            options=draft.options,
            comment=draft.comment,
            time_millis=int(time.time() * 1000) if time_millis is None else time_millis,
            extra=dict(schema.extra),
        )
    except (SchemaMismatch, InvalidOption) as e:
        raise SchemaEvolutionError(str(e)) from e
