"""A data file's DataFileMeta gathered from its rows as they are written: value and key
statistics, first and last key, sequence number range and retraction count, chunk by chunk
(a file written a row group at a time is described as it grows)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import EMPTY_ROW, serialize_row
from tarn.data.layout import FileLayout
from tarn.lsm.kv import DELETE, SEQUENCE, UPDATE_BEFORE, VALUE_KIND
from tarn.meta.manifest import EMPTY_STATS, DataFileMeta
from tarn.stats import SYSTEM_STATS_MODE, RunningStats, stats_modes


def local_millis_now() -> int:
    """Paimon's creation time: the local wall clock read as if it were UTC."""
    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


class Description:
    """What a data file's manifest entry says about its rows, built from the rows added so far.

    `rows` are the rows as the writer got them (table columns, plus `_SEQUENCE_NUMBER` and
    `_VALUE_KIND` for key-value files); `file_table` the columns the file stores (`_KEY_*`
    first for key-value files). Row-tracking files (`row_ids`) take their sequence range as
    Java's RowDataFileSequenceNumberTracker does: nulls leave 0s the commit stamps."""

    def __init__(self, layout: FileLayout, raw_options: dict[str, str], schema_id: int,
                 write_cols: tuple[str, ...] | None, row_ids: bool):
        value_fields = list(layout.value_fields)
        modes = stats_modes(value_fields, raw_options)
        kept = [(f, m) for f, m in zip(value_fields, modes) if m != "none"]
        self.value_names = [f.name for f, _ in kept]
        self.value_stats = RunningStats([f for f, _ in kept], [m for _, m in kept])
        self.value_stats_cols = None if len(kept) == len(value_fields) else tuple(self.value_names)
        if write_cols is not None:  # stats of some columns: say which
            self.value_stats_cols = tuple(self.value_names)
        self.key_value = layout.is_key_value
        self.key_fields = list(layout.key_fields) if self.key_value else []
        self.key_stats = RunningStats(self.key_fields, [SYSTEM_STATS_MODE] * len(self.key_fields))
        self.schema_id, self.write_cols, self.row_ids = schema_id, write_cols, row_ids
        self.row_count = 0
        self.first_key: list | None = None
        self.last_key: list | None = None
        self.deletes = 0
        self.has_sequence = False
        self.sequence_nulls = 0
        self.sequence_low: int | None = None
        self.sequence_high: int | None = None

    def add(self, rows: pa.Table, file_table: pa.Table) -> None:
        self.value_stats.add(rows.select(self.value_names))
        if self.key_value and rows.num_rows:
            key_table = file_table.select([f.name for f in self.key_fields])
            if self.first_key is None:
                self.first_key = [c[0].as_py() for c in key_table.columns]
            self.last_key = [c[-1].as_py() for c in key_table.columns]
            self.key_stats.add(key_table)
            kinds = rows.column(VALUE_KIND)
            self.deletes += pc.sum(pc.or_(pc.equal(kinds, UPDATE_BEFORE), pc.equal(kinds, DELETE))).as_py() or 0
        if SEQUENCE in rows.column_names:
            self.has_sequence = True
            self._add_sequence(rows.column(SEQUENCE))
        self.row_count += rows.num_rows

    def _add_sequence(self, sequence) -> None:
        self.sequence_nulls += sequence.null_count
        if len(sequence) == sequence.null_count:
            return
        result = pc.min_max(sequence)
        low, high = result["min"].as_py(), result["max"].as_py()
        self.sequence_low = low if self.sequence_low is None else min(low, self.sequence_low)
        self.sequence_high = high if self.sequence_high is None else max(high, self.sequence_high)

    def meta(self, name: str, size: int, level: int, file_source: int, first_sequence: int) -> DataFileMeta:
        """The entry of file `name` of `size` bytes; `first_sequence` numbers the rows of a file
        that stores no sequence numbers."""
        if self.key_value:
            key_types = [f.type for f in self.key_fields]
            min_key = serialize_row(self.first_key, key_types)
            max_key = serialize_row(self.last_key, key_types)
            key_stats = self.key_stats.result()
        else:
            min_key = max_key = EMPTY_ROW
            key_stats = EMPTY_STATS
        if not self.has_sequence:
            min_seq, max_seq = first_sequence, first_sequence + self.row_count - 1
        elif self.row_ids:
            min_seq = 0 if self.sequence_nulls == self.row_count else self.sequence_low
            max_seq = 0 if self.sequence_nulls or self.sequence_high is None else self.sequence_high
        elif self.row_count == 0:
            min_seq, max_seq = 0, 0
        else:
            min_seq, max_seq = self.sequence_low, self.sequence_high
        return DataFileMeta(
            file_name=name, file_size=size, row_count=self.row_count,
            min_key=min_key, max_key=max_key, key_stats=key_stats, value_stats=self.value_stats.result(),
            min_sequence_number=min_seq, max_sequence_number=max_seq,
            schema_id=self.schema_id, level=level, extra_files=(),
            creation_time=local_millis_now(), delete_row_count=self.deletes,
            embedded_index=None, file_source=file_source, value_stats_cols=self.value_stats_cols,
            external_path=None, first_row_id=None, write_cols=self.write_cols,
        )
