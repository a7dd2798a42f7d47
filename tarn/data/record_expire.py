"""Record-level expiry: `record-level.expire-time` with `record-level.time-field`, as Paimon's
RecordLevelExpire does it on primary-key tables.

Compactions drop the rows whose time is older than the expire time: a row is kept while
`now <= time + expire` (whole seconds; `now` taken once per compaction). The time field is an
INT (seconds), a BIGINT (milliseconds when at least 10^12, else seconds) or a TIMESTAMP /
TIMESTAMP_LTZ (its epoch milliseconds, a TIMESTAMP's wall clock read as UTC); a null time is
never expired. Rows are filtered as the compaction reads them, before they merge (Java wraps
the compaction's file readers), so every merge engine sees only live rows. A file whose
smallest time (its value statistics) is already expired is rewritten rather than moved up a
level, and a full compaction of one max-level run rewrites such files. Reads do not filter:
rows stay visible until a compaction meets them, as in Java.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tarn.errors import InvalidOption
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.options import Options
from tarn.stats import decode_stats

TIME_TYPES = ("INT", "BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ")
MILLIS_FROM = 1_000_000_000_000  # a BIGINT at least this is milliseconds (Java's rule)


@dataclass(frozen=True)
class RecordExpire:
    """The expiry of one compaction: the time column (by field id), its type root, the expire
    time in seconds and the moment the compaction started (epoch seconds)."""

    field_id: int
    field_name: str
    type_root: str
    expire_seconds: int
    now_seconds: int

    @classmethod
    def of(cls, schema: TableSchema, options: Options, identifier: str) -> "RecordExpire | None":
        expire_ms = options.duration_ms("record-level.expire-time")
        if expire_ms is None:
            return None
        field = check_time_field(schema, options, identifier)
        return cls(field.id, field.name, field.type.root, expire_ms // 1000, int(time.time()))

    def seconds(self, column: pa.ChunkedArray | pa.Array) -> pa.Array:
        """The time column as epoch seconds (int64; nulls stay null)."""
        if self.type_root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            millis = pc.cast(pc.cast(column, pa.timestamp("ms", tz=column.type.tz), safe=False), pa.int64())
            return pc.divide(millis, 1000)  # Java's long division truncates toward zero too
        values = pc.cast(column, pa.int64())
        if self.type_root == "INT":
            return values
        return pc.if_else(pc.greater_equal(values, MILLIS_FROM), pc.divide(values, 1000), values)

    def keep(self, rows: pa.Table) -> pa.Array:
        """True for each row still alive (null times included)."""
        alive = pc.less_equal(self.now_seconds, pc.add(self.seconds(rows.column(self.field_name)),
                                                       self.expire_seconds))
        return pc.fill_null(alive, True)

    def expired_file(self, meta: DataFileMeta, file_schema: TableSchema) -> bool:
        """The file's smallest time is expired (Java's isExpireFile); unknown stats: not."""
        low = self._min_seconds(meta, file_schema)
        return low is not None and self.now_seconds - self.expire_seconds > low

    def _min_seconds(self, meta: DataFileMeta, file_schema: TableSchema) -> int | None:
        stats = meta.value_stats
        if stats is None or not stats.min_values or len(stats.min_values) <= 4:
            return None
        by_name = {f.name: f for f in file_schema.fields}
        names = meta.value_stats_cols if meta.value_stats_cols is not None else [f.name for f in file_schema.fields]
        target = next((f for f in file_schema.fields if f.id == self.field_id), None)
        if target is None or target.name not in names or any(n not in by_name for n in names):
            return None
        try:
            mins, _, _ = decode_stats(stats, [by_name[n] for n in names])
        except Exception:  # stats tarn cannot decode are not used
            return None
        low = mins[names.index(target.name)]
        if low is None:
            return None
        if isinstance(low, dt.datetime):
            moment = low if low.tzinfo is not None else low.replace(tzinfo=dt.timezone.utc)
            return int(moment.timestamp() * 1000) // 1000
        low = int(low)
        return low // 1000 if self.type_root == "BIGINT" and low >= MILLIS_FROM else low


def check_time_field(schema: TableSchema, options: Options, identifier: str):
    """The `record-level.time-field` column, which must exist and be INT, BIGINT or TIMESTAMP."""
    name = options.get("record-level.time-field")
    if name is None:
        raise InvalidOption(f"table {identifier}: option 'record-level.expire-time' needs "
                            f"'record-level.time-field' (the column holding each row's time)")
    field = next((f for f in schema.fields if f.name == name), None)
    if field is None:
        raise InvalidOption(f"table {identifier}: option 'record-level.time-field' names column '{name}', "
                            f"which the table does not have")
    if field.type.root not in TIME_TYPES:
        raise InvalidOption(f"table {identifier}: option 'record-level.time-field' column '{name}' is "
                            f"{field.type.root}; it must be one of {', '.join(TIME_TYPES)}")
    return field
