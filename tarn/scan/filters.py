"""A scan's filter from what users pass: a tarn predicate (`col("x") > 1`), a
`pyarrow.compute.Expression` or SQL-like text (`"dt = '2026-11-20' and amount > 10"`).

Every form ends as a tarn Predicate bound to the table (literals in the columns' types), which
prunes partitions, manifests and files by their statistics and filters the rows. A pyarrow
Expression is translated node by node (comparisons, is_in, is_null/is_valid, starts_with,
and/or/not); what has no exact translation stays a row filter applied after the read
(`ScanFilter.row_filter`), while its translatable conjuncts still prune.

pyarrow offers no public walk over an Expression's nodes. Its pickled form is: an Arrow IPC
file whose schema metadata lists the nodes in pre-order (`call` NAME ... `end` NAME,
`field_ref` NAME, `literal` i, `options` i; i indexes a column holding the literal or the
function options as a one-row struct). That is what `expression_tree` reads; anything it does
not recognise falls back to the row filter, so a change of that form costs pruning, never
correctness.
"""

from __future__ import annotations

import re

import ctypes
import struct
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import InvalidFilter, SchemaMismatch
from tarn.scan.predicate import columns_of, And, Compare, In, IsNull, Not, Or, Predicate, StartsWith, bind, to_arrow
from tarn.scan.reader import SplitReader
from tarn.scan.sql_filter import parse_filter
from tarn.types import DataField, arrow_schema, type_traits, unsupported_roots


@dataclass(frozen=True)
class ScanFilter:
    """`predicate`: bound to the table, prunes and filters rows (None: no filter). `row_filter`:
    an Arrow expression applied to the rows after the read (None: the predicate says it all),
    over `row_filter_columns`."""

    predicate: Predicate | None = None
    row_filter: pc.Expression | None = None
    row_filter_columns: tuple[str, ...] = ()


def scan_filter(filter, fields: Sequence[DataField], table_name: str) -> ScanFilter:
    """The ScanFilter of a user's `filter` argument over the table's `fields`; InvalidFilter
    (naming the table and column) for what cannot filter this table."""
    if filter is None:
        return ScanFilter()
    if isinstance(filter, str):
        filter = parse_filter(filter, table_name)
    if isinstance(filter, pc.Expression):
        try:
            found = _from_expression(filter, fields, table_name)
        except InvalidFilter:
            _refuse_variants({f.name for f in fields if re.search(rf"\b{re.escape(f.name)}\b", str(filter))},
                             fields, table_name)
            raise
        _refuse_variants(set(found.row_filter_columns) | _columns(found.predicate), fields, table_name)
        return found
    predicate = bind(filter, fields, table_name)
    _refuse_variants(columns_of(predicate), fields, table_name)
    check_arrow(to_arrow(predicate), fields, table_name)
    return ScanFilter(predicate)


def _columns(predicate) -> set:
    return columns_of(predicate) if predicate is not None else set()


def _refuse_variants(named: set, fields: Sequence[DataField], table_name: str) -> None:
    """Columns of a type filters cannot take (VARIANT; types.TYPE_TRAITS) are refused by name: Paimon
    keeps no statistics for them and filters none; decode the values and filter those."""
    for f in fields:
        if f.name in named and not type_traits(f.type).filterable:
            raise InvalidFilter(f"table {table_name}: column '{f.name}' is a {f.type.root}, which filters cannot "
                                "compare (Paimon keeps no statistics for it); read it and filter the decoded values "
                                "(tarn.variant.to_python)")


def check_arrow(expression: pc.Expression, fields: Sequence[DataField], table_name: str) -> None:
    """Arrow binds `expression` to the table's columns now, not at read time (columns of types
    tarn does not implement have no Arrow form: a filter naming one fails to bind)."""
    readable = [f for f in fields if not any(unsupported_roots(f.type))]
    key = (str(expression), tuple((f.name, repr(f.type)) for f in readable))
    if key in _BOUND:
        return
    try:
        arrow_schema(readable).empty_table().filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InvalidFilter(f"table {table_name}: the filter {expression} does not apply to the table's "
                            f"columns: {reason}") from None
    if len(_BOUND) >= 1024:
        _BOUND.clear()
    _BOUND.add(key)


# (filter, columns) pairs Arrow has bound: a repeated scan does not plan a filter again to check it
_BOUND: set = set()


def _from_expression(expression: pc.Expression, fields: Sequence[DataField], table_name: str) -> ScanFilter:
    names = [f.name for f in fields]
    tree = expression_tree(expression)
    if tree is None:  # not decodable: filter rows after reading every column
        check_arrow(expression, fields, table_name)
        return ScanFilter(None, expression, tuple(names))
    referenced = sorted(_fields_of(tree))
    unknown = [n for n in referenced if n not in names]
    if unknown:
        raise SchemaMismatch(f"table {table_name}: filter names unknown column(s) {unknown}")
    try:
        predicate = bind(_convert(tree), fields, table_name)
    except _Untranslatable:
        pass
    else:
        check_arrow(to_arrow(predicate), fields, table_name)
        return ScanFilter(predicate)
    parts = []
    for conjunct in _conjuncts(tree):
        try:
            parts.append(bind(_convert(conjunct), fields, table_name))
        except (_Untranslatable, InvalidFilter):
            continue  # left to the row filter
    check_arrow(expression, fields, table_name)
    predicate = None if not parts else parts[0] if len(parts) == 1 else And(tuple(parts))
    ordered = tuple(n for n in names if n in set(referenced))
    return ScanFilter(predicate, expression, ordered)


# ---------------------------------------------------------------- reading with a row filter

class RowFilterReader(SplitReader):
    """A SplitReader that also reads the row filter's columns, applies the filter to the rows
    and returns the scan's columns (`output_fields`)."""

    def __init__(self, file_io, schema, schemas, options, output_fields: list[DataField],
                 predicate: Predicate | None, merge_spec, row_filter: pc.Expression,
                 row_filter_columns: Sequence[str]):
        wanted = {f.name for f in output_fields}
        extra = [schema.field(n) for n in row_filter_columns if n not in wanted]
        super().__init__(file_io, schema, schemas, options, list(output_fields) + extra, predicate, merge_spec)
        self.row_filter = row_filter
        self.output_names = [f.name for f in output_fields]
        self.final_schema = arrow_schema(output_fields)

    def read(self, split) -> pa.Table:
        tables = list(self.read_chunks(split))
        if not tables:
            return self.final_schema.empty_table()
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def finish(self, data: pa.Table) -> pa.Table:
        return super().finish(data).filter(self.row_filter).select(self.output_names)


# ---------------------------------------------------------------- Arrow expressions

@dataclass(frozen=True)
class Node:
    """One node of a decoded Expression: a `call` (name, args, options), a `field` (name)
    or a `literal` (value: a pyarrow Scalar)."""

    kind: str
    name: str = ""
    args: tuple = ()
    options: dict | None = None
    value: object = None


class _Untranslatable(Exception):
    pass


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ArrowSchema (its layout is a stable ABI)."""

    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
                ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """A schema's key-value metadata in order, repeated keys included (`Schema.metadata` is a
    dict and keeps one value per key)."""
    capsule = schema.__arrow_c_schema__()
    c_schema = _ArrowSchema.from_address(_capsule_pointer(capsule, b"arrow_schema"))
    if not c_schema.metadata:
        return []
    address = c_schema.metadata

    def int32(at: int) -> int:
        return struct.unpack("=i", ctypes.string_at(address + at, 4))[0]

    pairs, at = [], 4
    for _ in range(int32(0)):
        key = ctypes.string_at(address + at + 4, int32(at))
        at += 4 + len(key)
        value = ctypes.string_at(address + at + 4, int32(at))
        at += 4 + len(value)
        pairs.append((key.decode(), value.decode()))
    return pairs


def expression_tree(expression: pc.Expression) -> Node | None:
    """The node tree of `expression`, or None when it cannot be decoded."""
    try:
        _, (buffer,) = expression.__reduce__()
        reader = pa.ipc.open_file(pa.py_buffer(buffer))
        batch = reader.get_batch(0)
        pairs = metadata_pairs(reader.schema)
        node, end = _node(pairs, 0, batch)
        return node if end == len(pairs) else None
    except Exception:  # any surprise in pyarrow's private form: no translation, row filter only
        return None


def _node(pairs, i: int, batch: pa.RecordBatch) -> tuple[Node, int]:
    key, value = pairs[i]
    if key == "literal":
        return Node("literal", value=batch.column(int(value))[0]), i + 1
    if key == "field_ref":
        return Node("field", name=value), i + 1
    if key != "call":
        raise ValueError(f"unexpected {key}")
    args, options, i = [], None, i + 1
    while pairs[i][0] != "end":
        if pairs[i][0] == "options":
            options = batch.column(int(pairs[i][1]))[0].as_py()
            i += 1
            continue
        arg, i = _node(pairs, i, batch)
        args.append(arg)
    if pairs[i][1] != value:
        raise ValueError("unbalanced call")
    return Node("call", name=value, args=tuple(args), options=options), i + 1


def _fields_of(node: Node) -> set[str]:
    if node.kind == "field":
        return {node.name}
    return set().union(*(_fields_of(a) for a in node.args)) if node.args else set()


def _conjuncts(node: Node) -> list[Node]:
    if node.kind == "call" and node.name == "and_kleene":
        return [c for a in node.args for c in _conjuncts(a)]
    return [node]


_COMPARISONS = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
                "greater_equal": ">="}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_MATCH, _SKIP = 0, 1  # SetLookupOptions.null_matching_behavior


def _convert(node: Node) -> Predicate:
    """The tarn predicate with exactly the meaning of `node` (three-valued logic included)."""
    if node.kind != "call":
        raise _Untranslatable
    name, args, options = node.name, node.args, node.options or {}
    if name in ("and_kleene", "or_kleene"):
        children = tuple(_convert(a) for a in args)
        return And(children) if name == "and_kleene" else Or(children)
    if name == "invert" and len(args) == 1:
        return Not(_convert(args[0]))
    if name in _COMPARISONS and len(args) == 2:
        left, right = args
        if left.kind == "field" and right.kind == "literal":
            return Compare(left.name, _COMPARISONS[name], right.value.as_py())
        if left.kind == "literal" and right.kind == "field":
            return Compare(right.name, _FLIPPED[_COMPARISONS[name]], left.value.as_py())
        raise _Untranslatable
    column = _single_field(args)
    if name == "is_null" and not options.get("nan_is_null"):
        return IsNull(column)
    if name == "is_valid":
        return IsNull(column, negated=True)
    if name == "starts_with" and not options.get("ignore_case") and isinstance(options.get("pattern"), str):
        return StartsWith(column, options["pattern"])
    if name == "is_in":
        return _is_in(column, options)
    raise _Untranslatable


def _single_field(args) -> str:
    if len(args) != 1 or args[0].kind != "field":
        raise _Untranslatable
    return args[0].name


def _is_in(column: str, options: dict) -> Predicate:
    """Arrow's is_in is never null: a null row matches only a null in the set (MATCH) or
    nothing (SKIP); tarn's In is unknown there, so the null case is spelled out."""
    values = options.get("value_set")
    behaviour = options.get("null_matching_behavior", _MATCH)
    if options.get("skip_nulls"):
        behaviour = _SKIP
    if values is None or behaviour not in (_MATCH, _SKIP):
        raise _Untranslatable
    present = tuple(v for v in values if v is not None)
    if behaviour == _MATCH and len(present) < len(values):
        return Or((IsNull(column), In(column, present))) if present else IsNull(column)
    return And((IsNull(column, negated=True), In(column, present)))
