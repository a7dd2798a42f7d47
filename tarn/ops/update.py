"""Updating the rows that match a predicate (`Table.update(set=..., filter=...)`), in one commit.

`set` maps column names to new values. A value is either a literal, converted with the
column's type as scan filters convert theirs ('2026-11-20' into a DATE column, '12.50' into a
DECIMAL; None sets NULL), or a `pyarrow.compute.Expression` over the row's columns
(`pc.field("amount") * 2`, `pc.utf8_upper(pc.field("name"))`), evaluated on the matched rows
as they were before the update (so `{"a": pc.field("b"), "b": pc.field("a")}` swaps) and cast
losslessly to the column's type. Expressions run through Arrow's projection (vectorised).

- Primary-key tables: the matching rows are read, the assignments applied, and the rows
  written back as one upsert of +U rows (what a changelog shows). Primary-key and partition columns cannot be set: a row with
  another key (or partition) is another row, so the old one would stay (delete it and write
  the new row instead). Merge engines: `deduplicate` and `partial-update` (where NULL cannot be
  set: partial-update keeps the previous value for a NULL); `aggregation` and `first-row`
  are refused, since writing a row back would aggregate it again or be ignored.
  The read and the write are not isolated: a commit that changes a matched row in between is
  overwritten by the update (last writer wins, as for any upsert).
- Append tables without deletion vectors: copy-on-write, as `delete(filter=...)` does: each
  file holding a match is rewritten with the updated rows in place (same order, same sequence
  numbers) and replaced in one OVERWRITE snapshot; a concurrent commit replacing the same
  files makes it fail with CommitConflict (nothing committed). Partition columns cannot be
  set (the rewritten file stays in its partition directory).
- Append tables with deletion vectors are refused: marking the old rows and adding the new
  ones would take two snapshots (an APPEND and a COMPACT), and a reader in between would see
  both. Use `delete(filter=...)` and `write(...)`, or disable deletion vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.arrays import repeat
from tarn import features
from tarn.meta.row_ranges import SEQUENCE_NUMBER
from tarn.ops import row_updates
from tarn.ops.delete import rewrite_matching
from tarn.errors import InvalidArgument, InvalidFilter, SchemaMismatch
from tarn.meta.schema import TableSchema
from tarn.scan.predicate import coerce_literal
from tarn.types import DataField, arrow_schema, type_to_sql
from tarn.commit.abort import aborting

if TYPE_CHECKING:
    from tarn.meta.snapshot import Snapshot
    from tarn.core import TableCore

_ATOMIC_EXCLUDED = ("ARRAY", "MAP", "MULTISET", "ROW")
_REFUSED_ENGINES = {
    "aggregation": "writing a matched row back would aggregate it into itself a second time",
    "first-row": "the first row of a key is kept and later writes are ignored",
}


@dataclass(frozen=True)
class Assignments:
    """What `set=` asks for, checked against the table: `literals` as one-element Arrow
    arrays of the column's type, `expressions` as Arrow expressions over the row."""

    literals: dict[str, pa.Array]
    expressions: dict[str, pc.Expression]
    fields: tuple[DataField, ...]  # every column of the table
    table_name: str = "?"

    def apply(self, rows: pa.Table) -> pa.Table:
        """`rows` with the assignments applied to every row (vectorised)."""
        computed = _evaluate(rows, self.expressions, self.table_name) if self.expressions else None
        columns = {}
        for f, arrow_field in zip(self.fields, arrow_schema(self.fields)):
            if f.name in self.literals:
                value = self.literals[f.name]
                columns[f.name] = repeat(value[0], rows.num_rows) if rows.num_rows else value[:0]
            elif f.name in self.expressions:
                columns[f.name] = _cast(computed.column(f.name), f, arrow_field.type, self.table_name)
            else:
                columns[f.name] = rows.column(f.name)
        return pa.table(columns, schema=arrow_schema(self.fields))


def update_where(table: "TableCore", assignments: dict, filter) -> "Snapshot | None":
    """Set the columns `assignments` names on every row matching `filter` (anything
    `Table.scan` takes; None: every row), in one commit; None when no row matches. See the
    module docstring for what each kind of table does."""
    schema = table.schema()
    features.check_write(table.name, schema)
    parsed = parse_assignments(assignments, schema, table.name)
    if schema.primary_keys:
        return _upsert(table, parsed, filter)
    if schema.shape.evolves:  # files of the set columns only (tarn/ops/row_updates.py)
        return row_updates.update_where(table, parsed, filter)
    if schema.shape.deletion_vectors:
        raise InvalidArgument(f"table {table.name}: update of an append table with deletion vectors is not "
                              "supported (the old rows would be marked in one snapshot and the new ones added "
                              "in another); use delete(filter=...) then write(...), or disable deletion vectors")
    scan = table.scan_latest(filter=filter)
    return rewrite_matching(table, scan, lambda rows, matched: _updated(parsed, rows, matched))


def _upsert(table: "TableCore", parsed: Assignments, filter) -> "Snapshot | None":
    """The matched rows read split by split, updated and buffered by one writer (memory bounded
    by its buffer, not by the number of matches), committed once."""
    writer = table.new_writer()
    matched = 0
    with aborting(table.file_io, table.root, writer.schema, writer.messages):
        for batch in table.scan_latest(filter=filter).to_batches():
            if batch.num_rows:
                matched += batch.num_rows
                writer.write(parsed.apply(pa.Table.from_batches([batch])), row_kind="+U")
        messages = writer.prepare_commit()
    table.counted["rows_matched"] = matched
    return table.commit(messages) if matched else None


def _updated(parsed: Assignments, rows: pa.Table, matched: pa.Array) -> pa.Table:
    """All of a file's rows in their order, those `matched` marks updated (the assignments
    see only the matched rows: a value unmatched rows would not fit cannot fail the update)."""
    mask = matched.to_numpy(zero_copy_only=False)
    chosen = rows.filter(matched)
    new = parsed.apply(chosen)
    for name in rows.column_names:  # row-tracking columns: the id travels with its row; a null
        if name not in new.column_names:  # sequence number takes the commit's snapshot (Java's rule)
            kept = pa.nulls(chosen.num_rows, pa.int64()) if name == SEQUENCE_NUMBER else chosen.column(name)
            new = new.append_column(rows.schema.field(name), kept)
    new = new.select(rows.column_names).cast(rows.schema)
    order = np.arange(rows.num_rows, dtype=np.int64)
    order[mask] = rows.num_rows + np.arange(new.num_rows, dtype=np.int64)
    return pa.concat_tables([rows, new]).take(pa.array(order))


# ---------------------------------------------------------------------------------------------
# checking set=


def parse_assignments(assignments, schema: TableSchema, table_name: str) -> Assignments:
    """The checked Assignments of a `set=` argument; InvalidArgument or SchemaMismatch naming
    the table and column for anything that cannot be applied."""
    if not isinstance(assignments, dict) or not assignments:
        raise InvalidArgument(f"table {table_name}: update needs set={{column: value, ...}} with at least one "
                              f"column, got {assignments!r}")
    check_settable(assignments, schema, table_name)
    literals, expressions = {}, {}
    for name, value in assignments.items():
        f = schema.field(name)
        if isinstance(value, pc.Expression):
            expressions[name] = value
        else:
            literals[name] = literal_array(value, f, table_name)
    parsed = Assignments(literals, expressions, tuple(schema.fields), table_name)
    _check_expressions(parsed, table_name)
    return parsed


def check_settable(assignments: dict, schema: TableSchema, table_name: str) -> None:
    """Can an update set these columns (known, neither key nor partition columns) on this
    table's merge engine? (The values are checked separately.)"""
    _check_columns(list(assignments), schema, table_name)
    _check_engine(schema, assignments, table_name)


def _check_columns(names: list, schema: TableSchema, table_name: str) -> None:
    known = schema.field_names
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise InvalidArgument(f"table {table_name}: update set= takes column names as keys, got {bad!r}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SchemaMismatch(f"table {table_name}: update sets unknown column(s) {unknown} (columns: {known})")
    keys = [n for n in names if n in schema.primary_keys]
    if keys:
        raise InvalidArgument(f"table {table_name}: update cannot set primary-key column(s) {keys}: a row with "
                              "another key is another row and the old one would stay; delete the row and "
                              "write the new one instead")
    partitions = [n for n in names if n in schema.partition_keys]
    if partitions:
        raise InvalidArgument(f"table {table_name}: update cannot set partition column(s) {partitions}: the row "
                              "would have to move to another partition and the old one would stay there; delete "
                              "the rows and write them again instead")


def _check_engine(schema: TableSchema, assignments: dict, table_name: str) -> None:
    if not schema.primary_keys:
        return
    engine = schema.shape.options.get("merge-engine") or "deduplicate"
    if engine in _REFUSED_ENGINES:
        raise InvalidArgument(f"table {table_name}: update is not supported with merge-engine '{engine}': "
                              f"{_REFUSED_ENGINES[engine]}")
    nulls = [n for n, v in assignments.items() if v is None]
    if engine == "partial-update" and nulls:
        raise InvalidArgument(f"table {table_name}: update cannot set {nulls} to NULL with merge-engine "
                              "'partial-update' (a NULL keeps the previous value)")


def check_unambiguous(value, column: str, table_name: str) -> None:
    """A string in `set=` is a literal value, locally and on Spark; one quoted like a SQL
    literal ('paid') is refused with the two ways to say what was meant."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == "'":
        raise InvalidArgument(
            f"table {table_name}: update set {column}={value!r}: a string in set= is the value itself, so the "
            f"quotes would be stored; write {value[1:-1]!r} for that text, or an expression "
            "(pyarrow.compute.field/Expression locally, a Column such as F.expr(...) on Spark) for SQL")


def literal_array(value, f: DataField, table_name: str) -> pa.Array:
    """`value` as a one-element Arrow array of `f`'s type, converted as filter literals are."""
    check_unambiguous(value, f.name, table_name)
    arrow_type = arrow_schema([f]).field(0).type
    if value is None:
        if not f.type.nullable:
            raise InvalidArgument(f"table {table_name}: update cannot set column '{f.name}' to NULL: it is "
                                  f"{type_to_sql(f.type)}")
        return pa.nulls(1, arrow_type)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    try:
        if f.type.root not in _ATOMIC_EXCLUDED:
            value = coerce_literal(value, f, table_name)
        return pa.array([value], arrow_type)
    except InvalidFilter as e:
        reason = str(e).rsplit(": ", 1)[-1]
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
    raise InvalidArgument(f"table {table_name}: update cannot set column '{f.name}' ({type_to_sql(f.type)}) "
                          f"to {value!r}: {reason}")


def _check_expressions(parsed: Assignments, table_name: str) -> None:
    """Bind and type-check the expressions on zero rows now, before anything is read."""
    if not parsed.expressions:
        return
    empty = arrow_schema(parsed.fields).empty_table()
    computed = _evaluate(empty, parsed.expressions, table_name)
    for f, arrow_field in zip(parsed.fields, arrow_schema(parsed.fields)):
        if f.name not in parsed.expressions:
            continue
        got = computed.schema.field(f.name).type
        if not _castable(got, arrow_field.type):
            raise InvalidArgument(f"table {table_name}: update sets column '{f.name}' ({type_to_sql(f.type)}) to "
                                  f"{parsed.expressions[f.name]}, which is of type {got}")


def _kind(t: pa.DataType) -> str:
    """Families within which a value casts by value (overflow and precision checked per row)."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return str(t)


def _castable(got: pa.DataType, wanted: pa.DataType) -> bool:
    return got == wanted or pa.types.is_null(got) or _kind(got) == _kind(wanted)


def _cast(values, f: DataField, arrow_type: pa.DataType, table_name: str):
    try:
        return values.cast(arrow_type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgument(f"table {table_name}: update: a value computed for column '{f.name}' "
                              f"({type_to_sql(f.type)}) does not fit it: {str(e).splitlines()[0]}") from None


def _evaluate(rows: pa.Table, expressions: dict[str, pc.Expression], table_name: str = "?") -> pa.Table:
    """The expressions evaluated over `rows` (Arrow's projection), one column each."""
    import pyarrow.dataset as ds  # here, not at the top: it imports pandas (~0.5 s) when installed

    try:
        return ds.dataset(rows).to_table(columns=dict(expressions))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgument(f"table {table_name}: update set= expression cannot be evaluated over the table's "
                              f"columns: {str(e).splitlines()[0]}") from None
