"""Schemas between tarn (Paimon types, Arrow) and Spark.

Paimon -> Spark goes through Arrow: CHAR/VARCHAR/STRING become StringType, TIMESTAMP(p)
TimestampNTZType, TIMESTAMP_LTZ(p) TimestampType, MULTISET a map to INT; nullability is kept.
Spark -> Paimon (creating a table from a DataFrame) goes the other way: StringType is STRING,
TimestampNTZType TIMESTAMP(6), TimestampType TIMESTAMP_LTZ(6).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from tarn.errors import SchemaMismatch
from tarn.types import DataField, arrow_schema


def _plain(schema: pa.Schema) -> pa.Schema:
    """The schema without field metadata (tarn's field ids mean nothing to Spark)."""
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in schema])


def spark_schema_of(arrow: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema (metadata dropped, nullability kept)."""
    try:
        return from_arrow_schema(_plain(arrow))
    except Exception as exc:  # pyspark raises its own error classes for unsupported types
        raise SchemaMismatch(f"cannot show Arrow schema {arrow} to Spark: {exc}") from None


def spark_schema(fields: list[DataField]) -> StructType:
    """The Spark schema of tarn columns."""
    return spark_schema_of(arrow_schema(fields))


def arrow_target(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects for batches of `schema` (nullability included)."""
    converted = to_arrow_schema(schema, timezone="UTC")
    return pa.schema([pa.field(f.name, f.type, s.nullable) for f, s in zip(converted, schema.fields)])


arrow_of = arrow_target  # the Arrow schema of a DataFrame's rows (what write tasks receive)


def fit_batch(table: pa.Table, target: pa.Schema) -> pa.Table:
    """`table` cast to `target` column by column (timestamps to microseconds, metadata dropped).
    Nullability is taken from `target`."""
    if table.schema.equals(target, check_metadata=False) and \
            all(a.nullable == b.nullable for a, b in zip(table.schema, target)):
        return pa.Table.from_arrays(table.columns, schema=target)
    columns = []
    for f in target:
        column = table.column(f.name)
        if column.type != f.type:  # checked casts, except timestamps truncated to Spark's micros
            column = column.cast(f.type, safe=not pa.types.is_timestamp(f.type))
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)
