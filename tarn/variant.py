"""VARIANT values from and to Python (Paimon 1.1's VARIANT, Spark 4's VariantType).

In Arrow a VARIANT column is `struct<value: binary, metadata: binary>` (the Parquet variant
encoding; pypaimon and Spark use the same struct). Writing to a VARIANT column also takes JSON
text and plain Python values directly (`table.write({"v": [{"a": 1}, None]})`); these helpers
convert explicitly:

- `from_python(values)`: Python objects -> a VARIANT column (`None` is a null);
- `from_json(texts)`: JSON texts -> a VARIANT column;
- `to_python(column)`: a VARIANT column (Arrow array, chunked array or a scan's column) -> list;
- `to_json(column)`: a VARIANT column -> Arrow strings;
- `encode(value)` / `decode(value_bytes, metadata_bytes)`: one value.

The codec (tarn/codec/variant.py) works value by value; bench/bench_variant.py measures it.
"""

from __future__ import annotations

import pyarrow as pa

from tarn.codec.variant import (column_to_json, column_to_python, decode, encode, json_column,
                                python_column)
from tarn.types import VARIANT_ARROW

ARROW_TYPE = VARIANT_ARROW


def from_python(values) -> pa.StructArray:
    return python_column(list(values))


def from_json(texts) -> pa.StructArray:
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        texts = texts.to_pylist()
    return json_column(list(texts))


def to_python(column) -> list:
    return column_to_python(column)


def to_json(column) -> pa.StringArray:
    return column_to_json(column)


__all__ = ["ARROW_TYPE", "from_python", "from_json", "to_python", "to_json", "encode", "decode"]
