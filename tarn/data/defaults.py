"""Column default values, applied wherever rows are read: the schema's `defaultValue` (Paimon
>= 1.2, filled in when writing), else the older `fields.<f>.default-value` option (filled in when
reading)."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import InvalidOption
from tarn.options import as_options


def default_values(fields, options) -> dict[str, str]:
    """Each column's default value (string form), for the columns that have one."""
    raw = as_options(options).raw
    found = {}
    for f in fields:
        value = f.default_value if f.default_value is not None else raw.get(f"fields.{f.name}.default-value")
        if value is not None:
            found[f.name] = value
    return found


def fill_default_values(table: pa.Table, defaults: Mapping[str, str]) -> pa.Table:
    """Replace the nulls of the columns named in `defaults` by their (string-form) default."""
    for name, text in defaults.items():
        if name not in table.column_names:
            continue
        index = table.column_names.index(name)
        column = table.column(name)
        if column.null_count == 0:
            continue
        try:
            value = pa.scalar(text).cast(column.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidOption(f"column '{name}': default value '{text}' is not a {column.type}: {e}") from None
        table = table.set_column(index, table.schema.field(index), pc.fill_null(column, value))
    return table
