"""Paimon schemas as Iceberg schemas (Java's IcebergSchema / IcebergDataField), and the
columns Java cannot publish.

Types map as Java maps them: TINYINT, SMALLINT and INT -> `int`; BIGINT -> `long`; CHAR and
VARCHAR -> `string`; BINARY and VARBINARY -> `binary`; DECIMAL(p, s) -> `decimal(p, s)`;
TIMESTAMP(3..6) -> `timestamp`, (7..9) -> `timestamp_ns`, and TIMESTAMP_LTZ likewise `timestamptz`
/ `timestamptz_ns`; TIME(0..3) -> `time`; ARRAY -> `list`, MAP -> `map`, MULTISET -> `map` to a
required `int`, ROW -> `struct`. Nested element, key and value ids are Paimon's structured-type ids
(SpecialFields: base 2^29 - 1, 1024 per field, one per depth). Refused, naming the column: VARIANT
(Iceberg v3 needs row lineage for it), BLOB, VECTOR, TIMESTAMP of precision below 3, TIME above 3,
and TIMESTAMP of precision 7..9 (Java's statistics conversion takes micros only, so its commit
would fail on the first bound).
"""

from __future__ import annotations

from tarn.meta.schema import TableSchema
from tarn.types import DataField, DataType

_STRUCTURED_BASE = (2**31 - 1) // 4
_DEPTH_LIMIT = 1 << 10
_SIMPLE = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
           "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "CHAR": "string", "VARCHAR": "string",
           "BINARY": "binary", "VARBINARY": "binary"}


def element_id(field_id: int, depth: int) -> int:
    return _STRUCTURED_BASE + field_id * _DEPTH_LIMIT + depth


def key_id(field_id: int, depth: int) -> int:
    return _STRUCTURED_BASE - field_id * _DEPTH_LIMIT - depth


def iceberg_type(t: DataType, field_id: int, depth: int = 0):
    """The Iceberg type (a string, or a dict for nested types) of a Paimon type; ValueError
    with the reason for a type Java does not publish."""
    root = t.root
    if root in _SIMPLE:
        return _SIMPLE[root]
    if root == "DECIMAL":
        return f"decimal({t.precision}, {t.scale})"
    if root == "TIME":
        if not 0 <= (t.precision or 0) <= 3:
            raise ValueError(f"TIME({t.precision}): Iceberg compatibility takes TIME of precision 0 to 3")
        return "time"
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if not 3 <= t.precision <= 9:
            raise ValueError(f"{root}({t.precision}): Iceberg compatibility takes timestamps of precision 3 to 9")
        name = "timestamp" if root == "TIMESTAMP" else "timestamptz"
        return name + "_ns" if t.precision > 6 else name
    if root == "ARRAY":
        return {"type": "list", "element-id": element_id(field_id, depth + 1),
                "element-required": not t.element.nullable,
                "element": iceberg_type(t.element, field_id, depth + 1)}
    if root in ("MAP", "MULTISET"):
        key = t.key if root == "MAP" else t.element
        value = iceberg_type(t.value, field_id, depth + 1) if root == "MAP" else "int"
        return {"type": "map", "key-id": key_id(field_id, depth + 1), "key": iceberg_type(key, field_id, depth + 1),
                "value-id": element_id(field_id, depth + 1),
                "value-required": (not t.value.nullable) if root == "MAP" else True, "value": value}
    if root == "ROW":
        return {"type": "struct", "fields": [iceberg_field(f) for f in t.fields]}
    if root == "VARIANT":
        raise ValueError("VARIANT: an Iceberg format-version-3 type that needs row lineage, which Paimon's "
                         "Iceberg compatibility cannot publish")
    raise ValueError(f"{root}: Iceberg has no type for it")


def iceberg_field(f: DataField) -> dict:
    """One column as an Iceberg schema field (Java's key order: id, name, required, type, doc)."""
    out = {"id": f.id, "name": f.name, "required": not f.type.nullable, "type": iceberg_type(f.type, f.id)}
    if f.description is not None:
        out["doc"] = f.description
    return out


def iceberg_schema(schema: TableSchema) -> dict:
    """The Iceberg schema of one Paimon schema version (same id)."""
    return {"type": "struct", "schema-id": schema.id, "fields": [iceberg_field(f) for f in schema.fields]}


def highest_field_id(iceberg: dict) -> int:
    """Java's `last-column-id`: the highest top-level field id (0 without fields)."""
    return max((f["id"] for f in iceberg["fields"]), default=0)


def unpublishable_columns(schema: TableSchema) -> list[tuple[str, str]]:
    """(column, why) for every column Iceberg compatibility cannot publish."""
    found = []
    for f in schema.fields:
        try:
            iceberg_type(f.type, f.id)
            _check_bounds(f.type)
        except ValueError as exc:
            found.append((f.name, str(exc)))
    return found


def _check_bounds(t: DataType) -> None:
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 6:
        raise ValueError(f"{t.root}({t.precision}): Iceberg compatibility writes timestamp bounds in micros only")
