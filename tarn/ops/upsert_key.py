"""Writes to an append table with `upsert-key`: the rows are merged in, not appended.

Paimon 2.0's Spark turns `INSERT INTO` such a table into a MERGE (its RewriteUpsertTable rule);
tarn's batch writes (`Table.write`, `tarn.spark.write`, batch `df.write`, SQL `INSERT INTO`)
do the same, as one commit:

- with `sequence.field`, the source keeps one row per key, the one with the greatest sequence
  values (NULLs lowest; of equal ones the last given);
- source and table rows match when every upsert-key column is equal or both NULL (`<=>`);
- a matched table row takes every column of its source row, when the table row's sequence
  values are at most the source's (each compared; without `sequence.field`, always); a table
  row matched by two source rows is an error, as Spark's MERGE makes it;
- source rows matching no table row are inserted.

Streaming writes append, as Paimon's streaming sinks do (Spark's and Flink's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.ops.merge import SOURCE, TARGET, Actions, merge
from tarn.write.conform import conform, to_arrow_table

if TYPE_CHECKING:
    from tarn.core import TableCore


def upsert_keys(schema) -> list[str]:
    """The table's upsert key (empty: writes append); never set on primary-key tables."""
    return [] if schema.primary_keys else schema.shape.options.list("upsert-key")


def write(core: "TableCore", data):
    """Merge `data` into `core` on its upsert key (the module docstring); the snapshot or None."""
    schema = core.schema()
    keys = upsert_keys(schema)
    sequence = schema.shape.options.list("sequence.field")
    rows = conform(to_arrow_table(data, core.name), list(schema.fields), core.name)
    if sequence:
        rows = latest_per_key(rows, keys, sequence)
    condition = None
    for name in sequence:
        term = pc.field(TARGET + name) <= pc.field(SOURCE + name)
        condition = term if condition is None else condition & term
    actions = Actions(matched_update="*", matched_update_if=condition, insert="*")
    core.counted.update(rows_written=rows.num_rows)
    return merge(core, rows, keys, actions, null_safe=True)


def latest_per_key(rows: pa.Table, keys: list[str], sequence: list[str]) -> pa.Table:
    """One row per key (NULL keys equal): the greatest `sequence` values, NULLs lowest, the last
    given of equal ones; in the order the kept rows were given."""
    if rows.num_rows < 2:
        return rows
    position = "__tarn_position"
    numbered = rows.select(keys + sequence).append_column(position, pa.array(np.arange(rows.num_rows)))
    order = ([(k, "ascending", "at_end") for k in keys] + [(s, "descending", "at_end") for s in sequence]
             + [(position, "descending", "at_end")])
    ordered = numbered.take(pc.sort_indices(numbered, sort_keys=order))
    first = np.ones(rows.num_rows, dtype=bool)
    same = np.ones(rows.num_rows - 1, dtype=bool)
    for key in keys:
        column = ordered.column(key)
        before, after = column.slice(0, rows.num_rows - 1), column.slice(1)
        both_null = pc.and_(before.is_null(), after.is_null())
        equal = pc.fill_null(pc.equal(before, after), False)
        same &= pc.or_(equal, both_null).to_numpy(zero_copy_only=False)
    first[1:] = ~same
    kept = np.sort(ordered.column(position).to_numpy()[first])
    return rows.take(pa.array(kept))


__all__ = ["upsert_keys", "write", "latest_per_key"]
