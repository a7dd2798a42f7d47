"""Make user input fit the table schema, or say exactly why it does not."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec import variant as variant_codec
from tarn.errors import SchemaMismatch, TarnError
from tarn.types import (VARIANT_ARROW, DataField, arrow_schema, from_arrow_type, is_variant_storage, is_widening,
                        to_arrow_type)


def to_arrow_table(data, table_name: str) -> pa.Table:
    """Accept a pa.Table, RecordBatch, RecordBatchReader, iterable of batches, dict or DataFrame."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, dict):
        return pa.table(data)
    if _is_pandas_frame(data):
        return _from_pandas(data, table_name)
    if hasattr(data, "__arrow_c_stream__") and not isinstance(data, (list, tuple)):
        return pa.table(data)
    try:
        batches = list(data)
    except TypeError:
        raise SchemaMismatch(f"table {table_name}: cannot write a {type(data).__name__}; {ACCEPTED}") from None
    if not batches:
        raise SchemaMismatch(f"table {table_name}: no rows to write")
    if all(isinstance(b, dict) for b in batches):  # rows as dicts: pa.Table.from_pylist
        try:
            return pa.Table.from_pylist(batches)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise SchemaMismatch(f"table {table_name}: cannot make Arrow columns of the row dicts: {e}") from None
    if not all(isinstance(b, pa.RecordBatch) for b in batches):
        kinds = sorted({type(b).__name__ for b in batches})
        raise SchemaMismatch(f"table {table_name}: cannot write a sequence of {', '.join(kinds)}; {ACCEPTED}")
    return pa.Table.from_batches(batches)


ACCEPTED = ("write takes a pyarrow Table, RecordBatch, RecordBatchReader or list of RecordBatches, a dict of "
            "columns, a list of row dicts, a pandas or polars DataFrame, or any Arrow PyCapsule stream")


def _is_pandas_frame(data) -> bool:
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas")


def _from_pandas(frame, table_name: str) -> pa.Table:
    """A pandas DataFrame with its index kept as columns (named levels under their names) and
    marked as index columns in the pandas metadata: `conform` keeps an index level only where
    the table has a column of that name, so a filtered frame (index 3, 7, ...) writes as is and
    `df.set_index("id")` still writes `id`."""
    names = [name for name in frame.index.names if name is not None]
    keep = bool(names) and not any(name in frame.columns for name in names)  # unnamed: never a column
    try:
        return pa.Table.from_pandas(frame, preserve_index=keep)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, TypeError) as e:
        raise SchemaMismatch(f"table {table_name}: cannot convert the DataFrame to Arrow: {e}") from e


def pandas_index_columns(data: pa.Table) -> list[str]:
    """The columns pyarrow made of a pandas index (from the schema's pandas metadata)."""
    raw = (data.schema.metadata or {}).get(b"pandas")
    if not raw:
        return []
    try:
        index = json.loads(raw).get("index_columns") or []
    except (ValueError, AttributeError):
        return []
    return [c for c in index if isinstance(c, str)]


def conform(data: pa.Table, fields: list[DataField], table_name: str,
            primary_keys: tuple[str, ...] = ()) -> pa.Table:
    """Columns reordered to `fields`, types cast where lossless, NOT NULL enforced. Columns
    pyarrow made of a pandas index are dropped unless the table has a column of their name."""
    names = [f.name for f in fields]
    index_only = [c for c in pandas_index_columns(data) if c not in names and c in data.column_names]
    if index_only:
        data = data.drop_columns(index_only)
    missing = [n for n in names if n not in data.column_names]
    extra = [n for n in data.column_names if n not in names]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if extra:
            parts.append(f"unknown column(s) {extra}")
        raise SchemaMismatch(f"table {table_name}: input does not match the schema: "
                             + "; ".join(parts) + f" (table columns: {names})")
    columns = [_conform_column(data.column(f.name), f, table_name, primary_keys) for f in fields]
    return pa.Table.from_arrays(columns, schema=arrow_schema(fields))


def _conform_column(column: pa.ChunkedArray, f: DataField, table_name: str, primary_keys) -> pa.ChunkedArray:
    target = to_arrow_type(f.type)
    if f.type.root == "VARIANT" and column.type != target:
        column = variant_column(column, f.name, table_name)
    if column.type != target:
        column = _cast(column, f, target, table_name)
    if not f.type.nullable and column.null_count:
        what = "primary key column" if f.name in primary_keys else "NOT NULL column"
        raise SchemaMismatch(f"table {table_name}: {what} '{f.name}' has {column.null_count} null value(s)")
    return column


def variant_column(column: pa.ChunkedArray, name: str, table_name: str) -> pa.ChunkedArray:
    """A column written to a VARIANT column: the encoded struct as it is (any field order or
    binary kind), JSON text parsed, anything else (dicts pandas turned into structs, lists,
    numbers) encoded from its Python values (tarn/codec/variant.py)."""
    try:
        if is_variant_storage(column.type):
            storage = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
            value = storage.field("value").cast(pa.binary())
            metadata = storage.field("metadata").cast(pa.binary())
            return pa.chunked_array([pa.StructArray.from_arrays([value, metadata], fields=list(VARIANT_ARROW),
                                                                 mask=storage.is_null())])
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            return pa.chunked_array([variant_codec.json_column(column.to_pylist())])
        return pa.chunked_array([variant_codec.python_column(column.to_pylist())])
    except TarnError as e:
        raise SchemaMismatch(f"table {table_name}: column '{name}' (VARIANT): {e}") from None


def _cast(column: pa.ChunkedArray, f: DataField, target: pa.DataType, table_name: str):
    source_type = column.type
    if pa.types.is_dictionary(source_type):
        column = column.cast(source_type.value_type)
        source_type = column.type
    if source_type == target:
        return column
    if not _castable(source_type, f):
        raise SchemaMismatch(f"table {table_name}: column '{f.name}' has type {source_type}, "
                             f"the table declares {f.type} ({target}){_hint(source_type, f)}")
    try:
        return column.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatch(f"table {table_name}: column '{f.name}' of type {source_type} "
                             f"cannot be cast to {f.type}: {exc}") from exc


def _hint(source_type: pa.DataType, f: DataField) -> str:
    """What to do about the common mismatches: times or text written to a DATE column."""
    if f.type.root == "DATE" and pa.types.is_timestamp(source_type):
        return (f"; write dates, e.g. df['{f.name}'] = df['{f.name}'].dt.date (pandas) or "
                f"pc.cast(column, pa.date32()) after checking no time of day is lost")
    if f.type.root == "DATE" and (pa.types.is_string(source_type) or pa.types.is_large_string(source_type)):
        return (f"; parse the text first, e.g. pd.to_datetime(df['{f.name}']).dt.date, or "
                f"pc.strptime(column, '%Y-%m-%d', 'us').cast(pa.date32())")
    return ""


def _castable(source_type: pa.DataType, f: DataField) -> bool:
    if pa.types.is_null(source_type):
        return True
    try:
        source = from_arrow_type(source_type)
    except SchemaMismatch:
        return False
    target = f.type
    if source.root == target.root:
        return True
    # Integers of any width convert when every value fits (the cast is checked), so plain
    # Python ints (int64 in Arrow) can be written to INT/SMALLINT/TINYINT columns.
    families = [("CHAR", "VARCHAR"), ("BINARY", "VARBINARY"), ("TIMESTAMP",), ("TIMESTAMP_LTZ",),
                ("TINYINT", "SMALLINT", "INT", "BIGINT")]
    if any(source.root in fam and target.root in fam for fam in families):
        return True
    return is_widening(source, target)


def check_static_partition(rows: pa.Table, partition: dict, table_name: str) -> None:
    """Rows written by a static-partition overwrite must all lie in that partition."""
    for key, value in partition.items():
        if key not in rows.column_names or rows.num_rows == 0:
            continue
        column = rows.column(key)
        same = pc.is_null(column) if value is None else pc.equal(column, pa.scalar(value).cast(column.type))
        if not pc.all(pc.fill_null(same, False)).as_py():
            raise SchemaMismatch(f"table {table_name}: rows outside the static partition {key}={value!r}")
