"""The columns of a table's data files: primary-key tables add `_KEY_*` copies of the key,
`_SEQUENCE_NUMBER` and `_VALUE_KIND` before the table's columns (Java's KeyValue layout)."""

from __future__ import annotations

from dataclasses import dataclass

from tarn.lsm.kv import KEY_PREFIX, SEQUENCE, VALUE_KIND
from tarn.meta.schema import TableSchema
from tarn.types import DataField, DataType

KEY_FIELD_ID_START = 1073741823  # Integer.MAX_VALUE / 2
SEQUENCE_FIELD = DataField(2147483646, SEQUENCE, DataType("BIGINT", nullable=False))
VALUE_KIND_FIELD = DataField(2147483645, VALUE_KIND, DataType("TINYINT", nullable=False))
SYSTEM_FIELDS = (SEQUENCE_FIELD, VALUE_KIND_FIELD)
# Row tracking (Paimon 1.3): the row id, Java's SpecialFields.ROW_ID (Integer.MAX_VALUE - 5);
# `_SEQUENCE_NUMBER` is SEQUENCE_FIELD. Both are columns of data files only where a file's
# `_WRITE_COLS` names them; otherwise readers derive them from the file's manifest entry.
ROW_ID_FIELD = DataField(2147483642, "_ROW_ID", DataType("BIGINT", nullable=False))
ROW_TRACKING_FIELDS = (ROW_ID_FIELD, SEQUENCE_FIELD)
# as data files store them: a rewritten row's sequence number may be null (the commit's snapshot)
STORED_ROW_TRACKING_FIELDS = (ROW_ID_FIELD, DataField(SEQUENCE_FIELD.id, SEQUENCE, DataType("BIGINT")))


@dataclass(frozen=True)
class FileLayout:
    """The columns of this table's data files."""

    key_fields: tuple[DataField, ...]  # `_KEY_*` columns; empty for append tables
    value_fields: tuple[DataField, ...]  # the table's columns

    @property
    def is_key_value(self) -> bool:
        return bool(self.key_fields)

    @property
    def file_fields(self) -> list[DataField]:
        if not self.key_fields:
            return list(self.value_fields)
        return [*self.key_fields, *SYSTEM_FIELDS, *self.value_fields]

    @property
    def key_names(self) -> list[str]:
        """Table column names of the (trimmed) primary key."""
        return [f.name[len(KEY_PREFIX):] for f in self.key_fields]


def layout_of(schema: TableSchema) -> FileLayout:
    if not schema.primary_keys:
        return FileLayout((), tuple(schema.fields))
    by_name = schema.fields_by_name
    keys = tuple(
        DataField(by_name[k].id + KEY_FIELD_ID_START, KEY_PREFIX + k, by_name[k].type)
        for k in schema.trimmed_primary_keys
    )
    return FileLayout(keys, tuple(schema.fields))
