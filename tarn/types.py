"""Paimon data types: the dataclasses, their JSON form (schema files) and their Arrow form."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

import pyarrow as pa

from tarn.errors import SchemaMismatch, UnsupportedFeature

MAX_LENGTH = 2147483647  # VARCHAR / VARBINARY length meaning "unbounded" (STRING / BYTES)

ATOMIC_ROOTS = (
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL",
    "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ",
)
NESTED_ROOTS = ("ARRAY", "MAP", "MULTISET", "ROW")
INTEGER_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
NUMERIC_ROOTS = INTEGER_ROOTS + ("FLOAT", "DOUBLE", "DECIMAL")

FIELD_ID_KEY = b"PARQUET:field_id"
PAIMON_TYPE_KEY = b"paimon.type"  # an Arrow field's Paimon type where Arrow's own cannot say it (GEOMETRY, ...)

ALL_FORMATS = ("parquet", "orc", "avro")


@dataclass(frozen=True)
class TypeTraits:
    """What one type root allows, asked wherever a rule depends on the type (refusals,
    statistics, keys, filters, Spark's native scan). One row per root in TYPE_TRAITS."""

    root: str
    orderable: bool = True  # compared and sorted (filters, min/max, sort keys)
    key: bool = True  # may be a primary, partition or bucket key
    stats: bool = True  # files keep its min/max (Java keeps none for nested types and VARIANT)
    filterable: bool = True  # a filter may name it (null tests on nested columns included)
    formats: tuple[str, ...] = ALL_FORMATS  # file formats Paimon stores it in
    mod_key: bool = False  # `bucket-function.type` = mod hashes it (Java's ModBucketFunction)
    hive_key: bool = True  # `bucket-function.type` = hive hashes it (Java's HiveBucketFunction)
    spark_native: bool = True  # Spark's own parquet scan reads Paimon's files of it
    since: str = "0.4"  # the Paimon release that introduced it
    implemented: bool = True  # tarn reads and writes it


def _nested(root: str) -> TypeTraits:
    return TypeTraits(root, orderable=False, key=False, stats=False, hive_key=False)


TYPE_TRAITS: dict[str, TypeTraits] = {t.root: t for t in (
    TypeTraits("BOOLEAN"), TypeTraits("TINYINT"), TypeTraits("SMALLINT"),
    TypeTraits("INT", mod_key=True), TypeTraits("BIGINT", mod_key=True),
    TypeTraits("FLOAT"), TypeTraits("DOUBLE"), TypeTraits("DECIMAL"),
    TypeTraits("CHAR"), TypeTraits("VARCHAR"), TypeTraits("BINARY"), TypeTraits("VARBINARY"),
    TypeTraits("DATE"), TypeTraits("TIME"),
    TypeTraits("TIMESTAMP", hive_key=False), TypeTraits("TIMESTAMP_LTZ", hive_key=False),
    _nested("ARRAY"), _nested("MAP"), _nested("MULTISET"), _nested("ROW"),
    TypeTraits("VARIANT", orderable=False, key=False, stats=False, filterable=False, formats=("parquet",),
               hive_key=False, spark_native=False, since="1.1"),
    # Paimon 2.1 (master): WKB values in parquet's GEOMETRY / GEOGRAPHY logical types
    TypeTraits("GEOMETRY", orderable=False, key=False, stats=False, filterable=False, formats=("parquet",),
               hive_key=False, spark_native=False, since="2.1"),
    TypeTraits("GEOGRAPHY", orderable=False, key=False, stats=False, filterable=False, formats=("parquet",),
               hive_key=False, spark_native=False, since="2.1"),
    # Paimon 1.4+ types tarn does not implement yet (a column of them is refused, naming it)
    TypeTraits("BLOB", orderable=False, key=False, stats=False, filterable=False, hive_key=False,
               spark_native=False, since="1.4", implemented=False),
    TypeTraits("VECTOR", orderable=False, key=False, stats=False, filterable=False, hive_key=False,
               spark_native=False, since="1.4", implemented=False),
)}
UNKNOWN_TRAITS = TypeTraits("UNKNOWN", orderable=False, key=False, stats=False, filterable=False,
                            hive_key=False, spark_native=False, since="", implemented=False)


def type_traits(t: "DataType | str") -> TypeTraits:
    """The traits of a type (or type root); a root tarn does not know gets UNKNOWN_TRAITS."""
    root = t if isinstance(t, str) else t.root
    return TYPE_TRAITS.get(root, UNKNOWN_TRAITS)


def nested_roots(t: "DataType"):
    """The roots of `t` and of every type nested in it."""
    yield t.root
    for inner in (t.element, t.key, t.value):
        if inner is not None:
            yield from nested_roots(inner)
    for f in t.fields or ():
        yield from nested_roots(f.type)


def first_root_where(t: "DataType", wanted) -> str | None:
    """The first root in `t` (itself or nested) whose traits satisfy `wanted`, or None."""
    return next((root for root in nested_roots(t) if wanted(type_traits(root))), None)


@dataclass(frozen=True)
class DataType:
    """One Paimon type; only the attributes its `root` uses are set."""

    root: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    fields: tuple[DataField, ...] | None = None
    raw: str | None = None  # a type tarn does not implement: its schema-file JSON, kept verbatim
    crs: str | None = None  # GEOMETRY / GEOGRAPHY: the coordinate reference system
    edges: str | None = None  # GEOGRAPHY: the edge interpolation algorithm (lower case)

    def __str__(self) -> str:
        return type_to_sql(self)

    def __repr__(self) -> str:
        return f"DataType({type_to_sql(self)})"


@dataclass(frozen=True)
class DataField:
    """A named column (or ROW field) with its Paimon field id."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None

    def __repr__(self) -> str:
        extras = "".join(f", {k}={v!r}" for k, v in (("description", self.description),
                                                     ("default_value", self.default_value)) if v is not None)
        return f"DataField({self.id}, {self.name!r}, {type_to_sql(self.type)}{extras})"


# ---------------------------------------------------------------------------------------------
# Constructors (defaults follow Paimon's parser: CHAR/VARCHAR/BINARY/VARBINARY length 1,
# DECIMAL(10, 0), TIME(0), TIMESTAMP(6)).


def BOOLEAN(nullable: bool = True) -> DataType:
    return DataType("BOOLEAN", nullable)


def TINYINT(nullable: bool = True) -> DataType:
    return DataType("TINYINT", nullable)


def SMALLINT(nullable: bool = True) -> DataType:
    return DataType("SMALLINT", nullable)


def INT(nullable: bool = True) -> DataType:
    return DataType("INT", nullable)


def BIGINT(nullable: bool = True) -> DataType:
    return DataType("BIGINT", nullable)


def FLOAT(nullable: bool = True) -> DataType:
    return DataType("FLOAT", nullable)


def DOUBLE(nullable: bool = True) -> DataType:
    return DataType("DOUBLE", nullable)


def DECIMAL(precision: int = 10, scale: int = 0, nullable: bool = True) -> DataType:
    return DataType("DECIMAL", nullable, precision=precision, scale=scale)


def CHAR(length: int = 1, nullable: bool = True) -> DataType:
    return DataType("CHAR", nullable, length=length)


def VARCHAR(length: int = 1, nullable: bool = True) -> DataType:
    return DataType("VARCHAR", nullable, length=length)


def STRING(nullable: bool = True) -> DataType:
    return DataType("VARCHAR", nullable, length=MAX_LENGTH)


def BINARY(length: int = 1, nullable: bool = True) -> DataType:
    return DataType("BINARY", nullable, length=length)


def VARBINARY(length: int = 1, nullable: bool = True) -> DataType:
    return DataType("VARBINARY", nullable, length=length)


def BYTES(nullable: bool = True) -> DataType:
    return DataType("VARBINARY", nullable, length=MAX_LENGTH)


def VARIANT(nullable: bool = True) -> DataType:
    """Paimon 1.1's semi-structured type (tarn/codec/variant.py holds the encoding)."""
    return DataType("VARIANT", nullable)


# A VARIANT in Arrow, as pypaimon and Spark hand it over: the encoded value and its key dictionary
# (`variant: true` on `metadata` is Spark's mark; it lets an Arrow schema declare a VARIANT column).
VARIANT_ARROW = pa.struct([pa.field("value", pa.binary(), False),
                           pa.field("metadata", pa.binary(), False, metadata={b"variant": b"true"})])


def is_variant_storage(t: pa.DataType) -> bool:
    """An Arrow struct of exactly `value` and `metadata` binaries (any order, any binary kind)."""
    if not pa.types.is_struct(t) or t.num_fields != 2 or {t.field(i).name for i in range(2)} != {"value", "metadata"}:
        return False
    return all(pa.types.is_binary(t.field(i).type) or pa.types.is_large_binary(t.field(i).type)
               or pa.types.is_binary_view(t.field(i).type) for i in range(2))


def _marked_variant(t: pa.DataType) -> bool:
    """Spark's Arrow form of VariantType: the storage struct, `variant: true` on `metadata`."""
    return is_variant_storage(t) and any((t.field(i).metadata or {}).get(b"variant") == b"true" for i in range(2))


def DATE(nullable: bool = True) -> DataType:
    return DataType("DATE", nullable)


def TIME(precision: int = 0, nullable: bool = True) -> DataType:
    return DataType("TIME", nullable, precision=precision)


def TIMESTAMP(precision: int = 6, nullable: bool = True) -> DataType:
    return DataType("TIMESTAMP", nullable, precision=precision)


def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> DataType:
    return DataType("TIMESTAMP_LTZ", nullable, precision=precision)


def ARRAY(element: DataType, nullable: bool = True) -> DataType:
    return DataType("ARRAY", nullable, element=element)


def MAP(key: DataType, value: DataType, nullable: bool = True) -> DataType:
    return DataType("MAP", nullable, key=key, value=value)


def MULTISET(element: DataType, nullable: bool = True) -> DataType:
    return DataType("MULTISET", nullable, element=element)


def ROW(fields: list[DataField] | tuple[DataField, ...], nullable: bool = True) -> DataType:
    return DataType("ROW", nullable, fields=tuple(fields))


def with_nullable(t: DataType, nullable: bool) -> DataType:
    """`t` with its top-level nullability replaced."""
    return t if t.nullable == nullable else replace(t, nullable=nullable)


# ---------------------------------------------------------------------------------------------
# JSON form


def type_to_sql(t: DataType) -> str:
    """Paimon's SQL string of a type (nested types included, for messages)."""
    suffix = "" if t.nullable else " NOT NULL"
    root = t.root
    if t.raw is not None:
        return root + suffix
    if root == "DECIMAL":
        return f"DECIMAL({t.precision}, {t.scale}){suffix}"
    if root == "VARCHAR" and t.length == MAX_LENGTH:
        return "STRING" + suffix
    if root == "VARBINARY" and t.length == MAX_LENGTH:
        return "BYTES" + suffix
    if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return f"{root}({t.length}){suffix}"
    if root in ("TIME", "TIMESTAMP"):
        return f"{root}({t.precision}){suffix}"
    if root == "TIMESTAMP_LTZ":
        return f"TIMESTAMP({t.precision}) WITH LOCAL TIME ZONE{suffix}"
    if root in ("ARRAY", "MULTISET"):
        return f"{root}<{type_to_sql(t.element)}>{suffix}"
    if root == "MAP":
        return f"MAP<{type_to_sql(t.key)}, {type_to_sql(t.value)}>{suffix}"
    if root == "ROW":
        inner = ", ".join(f"`{f.name}` {type_to_sql(f.type)}" for f in t.fields)
        return f"ROW<{inner}>{suffix}"
    if root == "GEOMETRY":
        return f"GEOMETRY({_crs_sql(t.crs)}){suffix}"
    if root == "GEOGRAPHY":
        return f"GEOGRAPHY({_crs_sql(t.crs)}, {t.edges}){suffix}"
    return root + suffix


DEFAULT_CRS = "OGC:CRS84"
EDGE_ALGORITHMS = ("spherical", "vincenty", "thomas", "andoyer", "karney")
_GEO = re.compile(r"\s*(GEOMETRY|GEOGRAPHY)\b\s*(\((.*)\))?\s*(NOT\s+NULL|NULL)?\s*$", re.IGNORECASE | re.DOTALL)


def GEOMETRY(crs: str = DEFAULT_CRS, nullable: bool = True) -> DataType:
    """OGC WKB geometries in a coordinate reference system (Paimon 2.1)."""
    return DataType("GEOMETRY", nullable, crs=_checked_crs(crs))


def GEOGRAPHY(crs: str = DEFAULT_CRS, edges: str = "spherical", nullable: bool = True) -> DataType:
    """OGC WKB geographies: a CRS and an edge interpolation algorithm (Paimon 2.1)."""
    algorithm = str(edges).lower()
    if algorithm not in EDGE_ALGORITHMS:
        raise SchemaMismatch(f"invalid edge interpolation algorithm: {edges} (one of {', '.join(EDGE_ALGORITHMS)})")
    return DataType("GEOGRAPHY", nullable, crs=_checked_crs(crs), edges=algorithm)


def _checked_crs(crs: str) -> str:
    if not crs or not str(crs).strip():
        raise SchemaMismatch(f"invalid CRS: {crs!r}")
    return str(crs)


def _crs_sql(crs: str) -> str:
    """A CRS as Paimon writes it: bare, or single-quoted (quotes doubled) when it starts with a
    digit or holds whitespace or one of < > ( ) , . ' `."""
    if crs[0].isdigit() or re.search(r"[\s<>(),.'`]", crs):
        return "'" + crs.replace("'", "''") + "'"
    return crs


def _parse_geo(found: re.Match, text: str) -> DataType:
    word, params, nullable = found.group(1).upper(), found.group(3), not (found.group(4) or "").upper().startswith("NOT")
    crs, rest = DEFAULT_CRS, ""
    if params is not None:
        params = params.strip()
        if params.startswith("'"):
            end, value = 1, []
            while end < len(params):
                if params[end] == "'" and params[end + 1:end + 2] == "'":
                    value.append("'")
                    end += 2
                elif params[end] == "'":
                    break
                else:
                    value.append(params[end])
                    end += 1
            else:
                raise SchemaMismatch(f"cannot parse Paimon type {text!r}: unclosed quote")
            crs, rest = "".join(value), params[end + 1:].strip()
        else:
            crs, _, tail = params.partition(",")
            crs, rest = crs.strip(), ("," + tail).strip() if tail or params.endswith(",") else ""
    edges = "spherical"
    if rest:
        if not rest.startswith(",") or word != "GEOGRAPHY":
            raise SchemaMismatch(f"cannot parse Paimon type {text!r}")
        edges = rest[1:].strip()
    if word == "GEOMETRY":
        return GEOMETRY(crs, nullable)
    return GEOGRAPHY(crs, edges, nullable)


def type_to_json(t: DataType) -> str | dict:
    """The schema-file JSON value of a type: a string for atomic types, an object for nested."""
    if t.raw is not None:
        return json.loads(t.raw)
    if t.root not in NESTED_ROOTS:
        return type_to_sql(t)
    head = t.root if t.nullable else t.root + " NOT NULL"
    if t.root in ("ARRAY", "MULTISET"):
        return {"type": head, "element": type_to_json(t.element)}
    if t.root == "MAP":
        return {"type": head, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    return {"type": head, "fields": [field_to_json(f) for f in t.fields]}


def field_to_json(f: DataField) -> dict:
    """A DataField as JSON: id, name, type, then description/defaultValue when set."""
    out: dict = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


def field_from_json(obj: dict) -> DataField:
    """Parse one DataField JSON object."""
    try:
        return DataField(
            id=int(obj["id"]),
            name=str(obj["name"]),
            type=parse_type(obj["type"]),
            description=obj.get("description"),
            default_value=obj.get("defaultValue"),
        )
    except KeyError as e:
        raise SchemaMismatch(f"data field {obj!r} lacks the key {e.args[0]!r}") from None


def parse_type(json_value: str | dict) -> DataType:
    """Parse a type from its schema-file JSON value (string for atomic, object for nested)."""
    if isinstance(json_value, str):
        return _parse_sql_type(json_value)
    if isinstance(json_value, dict) and isinstance(json_value.get("type"), str):
        head = json_value["type"]
        nullable = "NOT NULL" not in head
        try:
            if head.startswith("ARRAY"):
                return ARRAY(parse_type(json_value["element"]), nullable)
            if head.startswith("MULTISET"):
                return MULTISET(parse_type(json_value["element"]), nullable)
            if head.startswith("MAP"):
                return MAP(parse_type(json_value["key"]), parse_type(json_value["value"]), nullable)
            if head.startswith("ROW"):
                return ROW([field_from_json(f) for f in json_value["fields"]], nullable)
        except KeyError as e:
            raise SchemaMismatch(f"type {json_value!r} lacks the key {e.args[0]!r}") from None
        return _foreign(head.split()[0] if head.split() else head, nullable, json_value)
    raise SchemaMismatch(f"cannot parse Paimon type {json_value!r}")


def _foreign(word: str, nullable: bool, json_value: str | dict) -> DataType:
    """A type tarn does not implement (VARIANT, BLOB, VECTOR, a newer Paimon's): kept verbatim so
    the schema loads and round-trips; reading or writing such a column is refused."""
    root = re.match(r"[A-Za-z_]*", word).group(0).upper() or word
    return DataType(root, nullable, raw=json.dumps(json_value, sort_keys=False))


def unsupported_roots(t: DataType):
    """The roots of the types tarn does not implement inside `t` (itself or nested)."""
    if t.raw is not None:
        yield t.root
        return
    for inner in (t.element, t.key, t.value):
        if inner is not None:
            yield from unsupported_roots(inner)
    for f in t.fields or ():
        yield from unsupported_roots(f.type)


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|([(),]))")


def _tokenize(text: str) -> list[str]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SchemaMismatch(f"cannot parse Paimon type {text!r} at position {pos}")
        tokens.append(m.group(1) or (m.group(2).upper() if m.group(2) else m.group(3)))
        pos = m.end()
    return tokens


class _Tokens:
    """A cursor over the tokens of an atomic type string."""

    def __init__(self, text: str):
        self.text = text
        self.items = _tokenize(text)
        self.pos = 0

    def peek(self, *expected: str) -> bool:
        window = self.items[self.pos:self.pos + len(expected)]
        return window == list(expected)

    def take(self, *expected: str) -> None:
        if not self.peek(*expected):
            raise SchemaMismatch(f"cannot parse Paimon type {self.text!r}: expected {' '.join(expected)}")
        self.pos += len(expected)

    def next(self) -> str:
        if self.pos >= len(self.items):
            raise SchemaMismatch(f"cannot parse Paimon type {self.text!r}: unexpected end")
        self.pos += 1
        return self.items[self.pos - 1]

    def int_param(self) -> int:
        token = self.next()
        if not token.isdigit():
            raise SchemaMismatch(f"cannot parse Paimon type {self.text!r}: {token!r} is not an integer")
        return int(token)

    def optional_params(self) -> list[int]:
        if not self.peek("("):
            return []
        self.take("(")
        params = [self.int_param()]
        while self.peek(","):
            self.take(",")
            params.append(self.int_param())
        self.take(")")
        return params


_KNOWN_WORDS = {"VARIANT", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DATE", "STRING",
                "BYTES", "DOUBLE", "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DECIMAL", "NUMERIC", "DEC",
                "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"}


def _parse_sql_type(text: str) -> DataType:
    geo = _GEO.match(text)
    if geo:
        return _parse_geo(geo, text)
    word = re.match(r"\s*([A-Za-z_][A-Za-z_0-9]*)", text)
    if word and word.group(1).upper() not in _KNOWN_WORDS and word.group(1).upper() not in NESTED_ROOTS:
        return _foreign(word.group(1), not re.search(r"NOT\s+NULL\s*$", text, re.IGNORECASE), text)
    tokens = _Tokens(text)
    t = _parse_atomic(tokens)
    if tokens.peek("NOT", "NULL"):
        tokens.take("NOT", "NULL")
        t = with_nullable(t, False)
    elif tokens.peek("NULL"):
        tokens.take("NULL")
    if tokens.pos != len(tokens.items):
        raise SchemaMismatch(f"cannot parse Paimon type {text!r}: unexpected {tokens.items[tokens.pos]!r}")
    return t


def _parse_atomic(tokens: _Tokens) -> DataType:
    word = tokens.next()
    simple = {"BOOLEAN": BOOLEAN, "TINYINT": TINYINT, "SMALLINT": SMALLINT, "INT": INT,
              "INTEGER": INT, "BIGINT": BIGINT, "FLOAT": FLOAT, "DATE": DATE,
              "STRING": STRING, "BYTES": BYTES}
    if word in simple:
        return simple[word]()
    if word == "DOUBLE":
        if tokens.peek("PRECISION"):
            tokens.take("PRECISION")
        return DOUBLE()
    if word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        params = tokens.optional_params()
        return DataType(word, length=params[0] if params else 1)
    if word in ("DECIMAL", "NUMERIC", "DEC"):
        params = tokens.optional_params() + [None, None]
        precision = 10 if params[0] is None else params[0]
        return DECIMAL(precision, params[1] or 0)
    if word == "TIME":
        params = tokens.optional_params()
        if tokens.peek("WITHOUT"):
            tokens.take("WITHOUT", "TIME", "ZONE")
        return TIME(params[0] if params else 0)
    if word == "TIMESTAMP":
        params = tokens.optional_params()
        precision = params[0] if params else 6
        if tokens.peek("WITHOUT"):
            tokens.take("WITHOUT", "TIME", "ZONE")
        elif tokens.peek("WITH"):
            tokens.take("WITH", "LOCAL", "TIME", "ZONE")
            return TIMESTAMP_LTZ(precision)
        return TIMESTAMP(precision)
    if word == "TIMESTAMP_LTZ":
        params = tokens.optional_params()
        return TIMESTAMP_LTZ(params[0] if params else 6)
    if word == "VARIANT":
        return VARIANT()
    raise SchemaMismatch(f"unsupported Paimon type {tokens.text!r}")


# ---------------------------------------------------------------------------------------------
# Arrow form


def to_arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type that holds values of `t` (nested ROW fields carry their field ids)."""
    root = t.root
    simple = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(),
              "INT": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
              "DOUBLE": pa.float64(), "CHAR": pa.string(), "VARCHAR": pa.string(),
              "BINARY": pa.binary(), "VARBINARY": pa.binary(), "DATE": pa.date32()}
    if root in simple:
        return simple[root]
    if root == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    if root == "TIME":
        return pa.time32("ms") if t.precision <= 3 else pa.time64("us")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = "ms" if t.precision <= 3 else "us" if t.precision <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None)
    if root == "ARRAY":
        return pa.list_(pa.field("element", to_arrow_type(t.element), t.element.nullable))
    if root == "MAP":
        return pa.map_(pa.field("key", to_arrow_type(t.key), False),
                       pa.field("value", to_arrow_type(t.value), t.value.nullable))
    if root == "MULTISET":
        return pa.map_(pa.field("key", to_arrow_type(t.element), False),
                       pa.field("value", pa.int32(), False))
    if root == "ROW":
        return pa.struct([arrow_field(f) for f in t.fields])
    if root == "VARIANT":
        return VARIANT_ARROW
    if root in ("GEOMETRY", "GEOGRAPHY"):
        return pa.binary()  # WKB; the field's metadata names the type (arrow_field)
    if t.raw is not None:
        raise UnsupportedFeature(f"Paimon type {root} is not implemented by tarn")
    raise SchemaMismatch(f"Paimon type {t} has no Arrow mapping")


def arrow_field(f: DataField) -> pa.Field:
    """The Arrow field of a column: name, nullability and `PARQUET:field_id` metadata."""
    try:
        arrow_type = to_arrow_type(f.type)
    except UnsupportedFeature as e:
        raise UnsupportedFeature(f"column '{f.name}': {e}") from None
    metadata = {FIELD_ID_KEY: str(f.id).encode()}
    if f.type.root in ("GEOMETRY", "GEOGRAPHY"):
        metadata[PAIMON_TYPE_KEY] = type_to_sql(with_nullable(f.type, True)).encode()
    return pa.field(f.name, arrow_type, f.type.nullable, metadata=metadata)


def arrow_schema(fields) -> pa.Schema:
    """The Arrow schema of a list of columns."""
    return pa.schema([arrow_field(f) for f in fields])


_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def from_arrow_type(pa_type: pa.DataType, nullable: bool = True, name: str | None = None) -> DataType:
    """The Paimon type of an Arrow type; `name` (the column) is used in error messages.

    Nested ROW fields keep the id in their `PARQUET:field_id` metadata, else get -1
    (new_schema assigns real ids)."""
    t = pa_type
    simple = [(pa.types.is_boolean, BOOLEAN), (pa.types.is_int8, TINYINT),
              (pa.types.is_int16, SMALLINT), (pa.types.is_int32, INT),
              (pa.types.is_int64, BIGINT), (pa.types.is_float32, FLOAT),
              (pa.types.is_float64, DOUBLE), (pa.types.is_date, DATE)]
    for check, make in simple:
        if check(t):
            return make(nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING(nullable)
    if pa.types.is_fixed_size_binary(t):
        return BINARY(t.byte_width, nullable)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return BYTES(nullable)
    if pa.types.is_decimal(t) and t.precision <= 38:
        return DECIMAL(t.precision, t.scale, nullable)
    if pa.types.is_time(t):
        return TIME(_UNIT_PRECISION[t.unit], nullable)
    if pa.types.is_timestamp(t):
        make = TIMESTAMP if t.tz is None else TIMESTAMP_LTZ
        return make(_UNIT_PRECISION[t.unit], nullable)
    if pa.types.is_map(t):
        return MAP(from_arrow_type(t.key_type, t.key_field.nullable, name),
                   from_arrow_type(t.item_type, t.item_field.nullable, name), nullable)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) \
            or pa.types.is_large_list_view(t):
        return ARRAY(from_arrow_type(t.value_type, t.value_field.nullable, name), nullable)
    if _marked_variant(t):
        return VARIANT(nullable)
    if pa.types.is_struct(t):
        return ROW([from_arrow_field(t.field(i), _arrow_field_id(t.field(i)), name)
                    for i in range(t.num_fields)], nullable)
    where = f"column {name!r}" if name else "a column"
    raise SchemaMismatch(f"{where} has Arrow type {t} which has no Paimon equivalent")


def _arrow_field_id(f: pa.Field) -> int:
    raw = (f.metadata or {}).get(FIELD_ID_KEY)
    return int(raw) if raw is not None else -1


def from_arrow_field(f: pa.Field, id: int | None = None, parent: str | None = None) -> DataField:
    """A DataField from an Arrow field; id from the argument, else the field metadata, else -1."""
    path = f"{parent}.{f.name}" if parent else f.name
    field_id = _arrow_field_id(f) if id is None else id
    if (f.metadata or {}).get(b"ARROW:extension:name") == b"arrow.parquet.variant" and is_variant_storage(f.type):
        return DataField(field_id, f.name, VARIANT(f.nullable))  # Arrow's canonical Parquet-variant type
    declared = (f.metadata or {}).get(PAIMON_TYPE_KEY)
    if declared is not None and pa.types.is_binary(f.type):  # GEOMETRY / GEOGRAPHY (arrow_field)
        return DataField(field_id, f.name, with_nullable(parse_type(declared.decode()), f.nullable))
    geo = _geoarrow_type(f)
    if geo is not None:
        return DataField(field_id, f.name, geo)
    return DataField(field_id, f.name, from_arrow_type(f.type, f.nullable, path))


def _geoarrow_type(f: pa.Field) -> DataType | None:
    """A `geoarrow.wkb` column (an extension type, or its field metadata) as GEOMETRY, or as
    GEOGRAPHY when it names spherical edges."""
    kind = f.type
    if isinstance(kind, pa.ExtensionType) and kind.extension_name == "geoarrow.wkb":
        text = kind.__arrow_ext_serialize__()
    elif (f.metadata or {}).get(b"ARROW:extension:name") == b"geoarrow.wkb" and pa.types.is_binary(kind):
        text = f.metadata.get(b"ARROW:extension:metadata", b"{}")
    else:
        return None
    meta = json.loads(text or b"{}")
    crs = meta.get("crs") if isinstance(meta.get("crs"), str) else DEFAULT_CRS
    if meta.get("edges"):
        return GEOGRAPHY(crs or DEFAULT_CRS, meta["edges"], f.nullable)
    return GEOMETRY(crs or DEFAULT_CRS, f.nullable)


# ---------------------------------------------------------------------------------------------
# Type changes


def _root_widens(old: str, new: str) -> bool:
    """Paimon's implicit-cast table (DataTypeCasts) restricted to atomic roots."""
    if old == new:
        return True
    implicit_from = {
        "VARCHAR": ("CHAR",),
        "VARBINARY": ("BINARY",),
        "SMALLINT": ("TINYINT",),
        "INT": ("TINYINT", "SMALLINT"),
        "BIGINT": ("TINYINT", "SMALLINT", "INT"),
        "FLOAT": ("TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL"),
        "DOUBLE": NUMERIC_ROOTS,
        "DECIMAL": NUMERIC_ROOTS,
        "TIMESTAMP": ("TIMESTAMP_LTZ",),
        "TIMESTAMP_LTZ": ("TIMESTAMP",),
    }
    return old in implicit_from.get(new, ())


def is_widening(old: DataType, new: DataType) -> bool:
    """Whether ALTER may change a column from `old` to `new` without losing information.

    Roots follow Paimon's implicit casts; on top, lengths, precisions and scales may only grow
    (Paimon's root-level table alone would also let VARCHAR(10) -> VARCHAR(5) through), a
    nullable type cannot become NOT NULL, and nested types must be equal apart from nullability."""
    if old.nullable and not new.nullable:
        return False
    if old.root in NESTED_ROOTS or new.root in NESTED_ROOTS:
        return with_nullable(old, True) == with_nullable(new, True)
    if not _root_widens(old.root, new.root):
        return False
    if new.root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return new.length >= old.length
    if new.root == "DECIMAL":
        if old.root == "DECIMAL":
            return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
        digits = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}.get(old.root)
        return digits is not None and new.precision - new.scale >= digits
    if new.root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return new.precision >= old.precision
    return True
