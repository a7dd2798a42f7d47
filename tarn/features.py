"""What tarn refuses: the feature table applied to one table, its columns and its files.

tarn acts on everything in a table that changes what a reader sees or where a writer puts a
row, or refuses it with `UnsupportedFeature`; it never guesses. The feature table is data
(`Opt.effect` in tarn/options.py, tarn/file_fields.py); these checks apply it:

- `check_read`: before a scan plans anything. Options whose effect is READS with a value tarn
  does not honour.
- `check_write`: before any file of a write, delete, update, overwrite, compaction or rescale is
  written. Everything `check_read` refuses, options whose effect is WRITES, options tarn does not
  know at all (a newer Paimon's, or a misspelling another engine let through), columns of types
  tarn cannot write.
- `check_columns`: before reading columns; a column of a type tarn does not know (BLOB,
  VECTOR, ...) is refused, other columns of the table read as usual.
- `check_file`: per data file a scan would read: formats tarn cannot read (the error names the
  file and its format) and files that hold only some columns of their rows (data evolution).

Index-manifest entries of types tarn does not know are not refused: they are carried over
untouched by every commit (the committer keeps every entry it does not replace) and kept by
maintenance while anything references them.
"""

from __future__ import annotations

from collections.abc import Iterable

from tarn.codec.data_file import FORMATS
from tarn.errors import UnsupportedFeature
from tarn.file_fields import FILE_FIELDS
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.options import (BOOL, CARRIED, ENUM, FILE_FORMATS, READS, WRITES, Opt, match_key, parse_bool,
                          parse_enum)
from tarn.types import DataField, type_traits, unsupported_roots

READABLE_FORMATS = FORMATS  # what tarn/codec/data_file.py reads and writes
# Formats whose files tarn may meet in a table (by file-name extension) but cannot read.
FOREIGN_FORMATS = tuple(f for f in (*FILE_FORMATS, "blob") if f not in READABLE_FORMATS)

TYPE_ISSUE: dict[str, str] = {}


def _refused(table_name: str, what: str, since: str, why: str) -> UnsupportedFeature:
    version = f" (Paimon {since})" if since else ""
    return UnsupportedFeature(f"table {table_name}: {what}{version} {why}")


def _honoured(opt: Opt, value: str) -> bool:
    """Is the table's `value` of `opt` one tarn implements (its default, or listed in `honoured`)?"""
    accepted = [v for v in (opt.default, *opt.honoured) if v is not None]
    if opt.kind is BOOL:
        try:
            return parse_bool(value) in {parse_bool(v) for v in accepted}
        except ValueError:
            return False
    if opt.kind is ENUM and opt.choices:
        try:
            return parse_enum(value, opt.choices) in {parse_enum(v, opt.choices) for v in accepted}
        except ValueError:
            return False
    return value.strip() in {v.strip() for v in accepted}


def _option_refusals(table_name: str, options: dict, effects: tuple,
                     unknown_refused: bool) -> Iterable[UnsupportedFeature]:
    for key, value in sorted(options.items()):
        opt = match_key(key)
        if opt is None:
            if unknown_refused:
                yield _refused(table_name, f"option '{key}'", "", "is unknown to tarn; a writer cannot honour it")
            continue
        if opt.name == "branch" and str(value).strip() == _branch_of(table_name):
            continue  # a branch's schema names its own branch (Java's switchToBranch keeps it)
        if opt.effect in effects and not _honoured(opt, str(value)):
            verb = "reading" if opt.effect is READS else "writing"
            note = f": {opt.note}" if opt.note else ""
            yield _refused(table_name, f"option '{key}' = '{value}'", opt.since,
                           f"changes {'what readers see' if opt.effect is READS else 'what writers write'}; "
                           f"tarn does not implement it, so {verb} this table is refused{note}")


def _branch_of(table_name: str) -> str:
    """The branch a table name (`<table>$branch_<name>` for branches) is of."""
    return table_name.rsplit("$branch_", 1)[1] if "$branch_" in table_name else "main"


def check_read(table_name: str, schema: TableSchema) -> None:
    """Raise UnsupportedFeature when reading the table needs semantics tarn lacks."""
    for error in _option_refusals(table_name, dict(schema.options), (READS,), unknown_refused=False):
        raise error
    options = schema.shape.options
    if options.bool("pk-clustering-override") and options.bool("deletion-vectors.merge-on-read"):
        raise _refused(table_name, "option 'pk-clustering-override' with 'deletion-vectors.merge-on-read'", "1.4",
                       "would merge files sorted by the clustering columns as if sorted by the key; reading this "
                       "table is refused")


def check_write(table_name: str, schema: TableSchema) -> None:
    """Raise UnsupportedFeature when writing the table (any commit that adds or rewrites data)
    needs semantics tarn lacks. Called before any file is written."""
    for error in _option_refusals(table_name, dict(schema.options), (READS, WRITES), unknown_refused=True):
        raise error
    unknown = sorted(k for k in schema.extra if k not in _CARRIED_SCHEMA_KEYS)
    if unknown:
        raise _refused(table_name, f"schema {schema.id} has field(s) {unknown}", "",
                       "unknown to tarn; they may change where rows go, so writing is refused")
    _check_types(table_name, schema.fields, "writing")


_CARRIED_SNAPSHOT_KEYS = {f.name for f in FILE_FIELDS if f.file == "snapshot" and f.effect is CARRIED}
_CARRIED_SCHEMA_KEYS = {f.name for f in FILE_FIELDS if f.file == "schema" and f.effect is CARRIED}


def check_write_base(table_name: str, snapshot, entries, row_tracking: bool = False) -> None:
    """What a write builds on: a snapshot carrying fields tarn does not know (a newer Paimon's;
    tarn's commit would not carry them on) or, on a table without 'row-tracking.enabled', data
    files with row ids (files tarn adds would have none) refuse the write."""
    unknown = sorted(k for k in getattr(snapshot, "extra", None) or () if k not in _CARRIED_SNAPSHOT_KEYS)
    if unknown:
        raise _refused(table_name, f"snapshot {snapshot.id} has field(s) {unknown}", "",
                       "unknown to tarn; a commit by tarn would drop them, so writing is refused")
    if row_tracking:
        for entry in entries:
            meta = entry.file
            if meta.first_row_id is None and not (meta.write_cols and "_ROW_ID" in meta.write_cols):
                raise _refused(table_name, f"data file {meta.file_name} has no row ids although the table "
                               "enables 'row-tracking.enabled'", "1.3",
                               "(the option was switched on after the file was written, which Paimon forbids); "
                               "new rows' ids could not be told apart from its rows, so writing is refused")
    for entry in () if row_tracking else entries:
        if entry.file.first_row_id is not None:
            raise _refused(table_name, f"data file {entry.file.file_name} carries row ids (_FIRST_ROW_ID)", "1.3",
                           "(row tracking), but the table does not enable 'row-tracking.enabled'; files tarn "
                           "writes would have none, so writing is refused")


def check_stream_read(table_name: str, schema: TableSchema) -> None:
    """A streaming read: `check_read`. (Postpone-bucket tables stream as Java's do: without a
    changelog producer the postponed files' rows as written, with one the changelog the
    postpone compaction produces; tarn/scan/changes.py.)"""
    check_read(table_name, schema)


def check_columns(table_name: str, fields: Iterable[DataField]) -> None:
    """Raise UnsupportedFeature when one of `fields` (columns about to be read) has a type
    tarn cannot read; a projection without those columns reads."""
    _check_types(table_name, fields, "reading")


SYSTEM_COLUMNS = {"_ROW_ID": "1.3", "_SEQUENCE_NUMBER": "1.3"}


def check_system_columns(table_name: str, names: Iterable[str]) -> None:
    """Paimon's row-tracking system columns asked of a table without row tracking: named as
    such (not 'unknown column')."""
    for name in names:
        if name in SYSTEM_COLUMNS:
            raise UnsupportedFeature(
                f"table {table_name}: system column '{name}' exists only on row-tracking tables (Paimon "
                f"{SYSTEM_COLUMNS[name]}: 'row-tracking.enabled' = 'true', set when the table is created)")


def _check_types(table_name: str, fields: Iterable[DataField], verb: str) -> None:
    for f in fields:
        for root in unsupported_roots(f.type):
            issue = TYPE_ISSUE.get(root)
            later = f" (a later tarn release: {issue})" if issue else ""
            raise _refused(table_name, f"column '{f.name}' has type {root}", type_traits(root).since,
                           f"which tarn does not implement; {verb} it is refused{later}. Columns of other "
                           "types read when a scan's columns= leaves it out")


def format_of_file(file_name: str, table_format: str) -> str:
    """A data file's format: its extension when it names a format, else the table's."""
    ext = file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""
    return ext if ext in READABLE_FORMATS or ext in FOREIGN_FORMATS else table_format.lower()


def check_file(table_name: str, meta: DataFileMeta, table_format: str, field_count: int | None = None,
               stitched: bool = False) -> None:
    """Raise UnsupportedFeature for a data file a scan cannot read: a format tarn does not read,
    or, unless the read stitches row-id groups (`stitched`: row-tracking tables), a file holding
    only some columns of its rows (`_WRITE_COLS`)."""
    fmt = format_of_file(meta.file_name, table_format)
    if fmt not in READABLE_FORMATS:
        raise _refused(table_name, f"data file {meta.file_name} is in format '{fmt}'", "",
                       f"which tarn cannot read (tarn reads {', '.join(READABLE_FORMATS)})")
    if not stitched and meta.write_cols is not None and (field_count is None or len(meta.write_cols) < field_count):
        raise _refused(table_name, f"data file {meta.file_name} holds only columns {list(meta.write_cols)}",
                       "1.3", "of its rows (data evolution), but the table does not enable "
                       "'row-tracking.enabled', so no row ids line its rows up with the others")
