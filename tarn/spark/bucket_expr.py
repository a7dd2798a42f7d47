"""tarn's bucket function as Spark SQL expressions, for fixed-width bucket keys.

`tarn.bucket.bucket_ids` hashes each row's bucket-key BinaryRow with MurmurHash3_x86_32
(seed 42). For keys of integer, date and boolean columns that BinaryRow is fixed: a header of
null bits, then one 8-byte little-endian slot per field. Spark can compute the same hash in
generated JVM code, so a bucket shuffle need not send the keys through a Python UDF.

Spark 4 runs SQL arithmetic in ANSI mode (overflow raises). An arithmetic expression keeps
the mode the session had when it was parsed, so in a classic session the hash's own arithmetic
is parsed with `spark.sql.ansi.enabled=false` for those few milliseconds: plain 32-bit int
products and sums that wrap, as Java's do (5M rows: 0.28 s of Spark time where the ANSI-safe
form takes 0.43 s and Spark's own `hash` 0.20 s). The key values themselves are read before,
under the session's own setting. (Another thread analysing a query of the same session in
those milliseconds would see ANSI mode off too; a streaming query runs on a session of its
own.) Where the mode cannot be set so (Spark Connect parses on the
server later), every 32-bit word is held in a bigint in [0, 2**32) and 32-bit products are formed
from 16-bit halves (no product exceeds 2**49). Each intermediate value is a column of its own
nested projection, so a value used twice stays one attribute instead of a copied subtree.

The other bucket functions (`bucket-function.type`, `tarn.bucket`) are plain SQL: `mod` is
`pmod(key, N)` (Spark's pmod is Java's floorMod for N > 0; a null key as 0); `hive` folds
h = (31 * h + hash(field)) mod 2**32 over the fields in bigints that never overflow (ANSI mode
or not), an integer or date field hashing to its own 32 bits, a boolean to 1/0, a bigint v to
v ^ (v >>> 32), a null to 0, and the bucket is (h & 0x7fffffff) % N.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from tarn.bucket import MOD_KEY_TYPES
from tarn.types import DataField

SEED = 42
MASK32 = 0xFFFFFFFF
C1, C2 = 0xCC9E2D51, 0x1B873593
F1, F2 = 0x85EBCA6B, 0xC2B2AE35
# Paimon type -> bytes its slot uses (the rest of the 8-byte slot is zero)
SLOT_BYTES = {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INT": 4, "DATE": 4, "BIGINT": 8}
# the Spark SQL type each supported key is cast to before its bytes are taken
SPARK_CAST = {"BOOLEAN": "boolean", "TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int",
              "DATE": "date", "BIGINT": "bigint"}


MOD_TYPES = MOD_KEY_TYPES  # the keys `mod` takes (types.TYPE_TRAITS)
HIVE_TYPES = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "DATE", "BIGINT")  # hive keys hashed as SQL here


def supported(key_fields: list[DataField], function: str = "default") -> bool:
    """Can `with_bucket` compute the bucket of these key fields by bucket function `function`
    (default, mod or hive)? Other keys go through an Arrow UDF (`tarn.bucket.bucket_ids`)."""
    function = function.lower()
    if function == "mod":
        return len(key_fields) == 1 and key_fields[0].type.root in MOD_TYPES
    if function == "hive":
        return bool(key_fields) and all(f.type.root in HIVE_TYPES for f in key_fields)
    return bool(key_fields) and len(key_fields) <= 56 and all(f.type.root in SLOT_BYTES for f in key_fields)


def _lit(value: int) -> str:
    return f"{value}L"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# ---------------------------------------------------------------------------------------------
# 32-bit arithmetic on Python ints (constant folding)


def _mul32_int(a: int, c: int) -> int:
    return (a * c) & MASK32


def _rotl_int(x: int, r: int) -> int:
    return ((x << r) & MASK32) | (x >> (32 - r))


def _mix_int(h: int, k: int) -> int:
    k = _mul32_int(_rotl_int(_mul32_int(k, C1), 15), C2)
    return (_mul32_int(_rotl_int(h ^ k, 13), 5) + 0xE6546B64) & MASK32


# ---------------------------------------------------------------------------------------------
# the same arithmetic as SQL, in layers of projections


def _mul32(a: str, c: int) -> str:
    """SQL of (a * c) mod 2**32 for an attribute a in [0, 2**32), no product above 2**49."""
    low = f"(({a} & {_lit(0xFFFF)}) * {_lit(c)})"
    high = f"shiftleft((shiftright({a}, 16) * {_lit(c)}) & {_lit(0xFFFF)}, 16)"
    return f"(({low} + {high}) & {_lit(MASK32)})"


def _rotl(x: str, r: int) -> str:
    return f"((shiftleft({x}, {r}) & {_lit(MASK32)}) | shiftright({x}, {32 - r}))"


def _mixed(x: str) -> str:
    """SQL of the hash after mixing, given x = h ^ scramble(word): rotl(x, 13) * 5 + c."""
    return f"(({_rotl(x, 13)} * 5L + {_lit(0xE6546B64)}) & {_lit(MASK32)})"


def _int(value: int) -> str:
    """SQL int literal of a 32-bit pattern (as Java's int holds it)."""
    return str(value - (1 << 32) if value >= 1 << 31 else value)


def _int_rotl(x: str, r: int) -> str:
    return f"(shiftleft({x}, {r}) | shiftrightunsigned({x}, {32 - r}))"


@dataclass(frozen=True)
class _Arithmetic:
    """32-bit hash arithmetic as SQL: `word` makes a word (a bigint in [0, 2**32)) an operand;
    `signed` turns the final hash into a bigint holding the signed int32."""

    word: Callable[[str], str]
    mul32: Callable[[str, int], str]
    rotl: Callable[[str, int], str]
    mixed: Callable[[str], str]
    lit: Callable[[int], str]
    shifted: Callable[[str, int], str]  # logical shift right
    signed: Callable[[str], str]


# ints whose products and sums wrap as Java's do (parsed with ANSI mode off)
WRAPPING = _Arithmetic(
    word=lambda w: f"CAST({w} AS INT)", mul32=lambda a, c: f"({a} * {_int(c)})", rotl=_int_rotl,
    mixed=lambda x: f"({_int_rotl(x, 13)} * 5 + {_int(0xE6546B64)})", lit=_int,
    shifted=lambda x, r: f"shiftrightunsigned({x}, {r})", signed=lambda h: f"CAST({h} AS BIGINT)")
# bigints in [0, 2**32) that never overflow (ANSI mode)
CHECKED = _Arithmetic(
    word=lambda w: w, mul32=_mul32, rotl=_rotl, mixed=_mixed, lit=_lit,
    shifted=lambda x, r: f"shiftright({x}, {r})",
    signed=lambda h: f"CASE WHEN {h} >= {_lit(1 << 31)} THEN {h} - {_lit(1 << 32)} ELSE {h} END")


ANSI = "spark.sql.ansi.enabled"


@contextmanager
def _arithmetic(spark):
    """The arithmetic to hash with (WRAPPING where the session parses eagerly and lets this
    thread switch ANSI mode off meanwhile, else CHECKED); the session's setting is restored."""
    if getattr(spark, "_jsparkSession", None) is None:
        yield CHECKED
        return
    before = spark.conf.get(ANSI, None)
    try:
        spark.conf.set(ANSI, "false")
    except Exception:  # noqa: BLE001 - a session that refuses the setting hashes ANSI-safe
        yield CHECKED
        return
    try:
        yield WRAPPING
    finally:
        if before is None:
            spark.conf.unset(ANSI)
        else:
            spark.conf.set(ANSI, before)


class _Layers:
    """Projections added to a DataFrame one layer at a time; a layer's expressions may use
    the columns of earlier layers (each a plain attribute, however often it is used)."""

    def __init__(self, df, prefix: str):
        self.df = df
        self.prefix = prefix
        self.names: list[str] = []

    def add(self, exprs: list[str]) -> list[str]:
        names = [f"{self.prefix}{len(self.names) + i}" for i in range(len(exprs))]
        self.names += names
        self.df = self.df.selectExpr("*", *[f"{e} AS {_quote(n)}" for e, n in zip(exprs, names)])
        return [_quote(n) for n in names]

    def one(self, expr: str) -> str:
        return self.add([expr])[0]


def _slot_words(column: str, field: DataField) -> tuple[str, str | None]:
    """SQL of the (low, high) 32-bit words of a field's 8-byte slot, bigints in [0, 2**32),
    0 for null; high is None when it is always 0."""
    root = field.type.root
    value = f"CAST({column} AS {SPARK_CAST[root]})"
    if root == "BOOLEAN":
        return f"coalesce(CASE WHEN {value} THEN 1L ELSE 0L END, 0L)", None
    if root == "DATE":
        value = f"unix_date({value})"
    value = f"CAST({value} AS bigint)"
    if root == "BIGINT":
        return (f"coalesce({value} & {_lit(MASK32)}, 0L)", f"coalesce(shiftrightunsigned({value}, 32), 0L)")
    mask = (1 << (8 * SLOT_BYTES[root])) - 1
    return f"coalesce({value} & {_lit(mask)}, 0L)", None


def _null_word(columns: list[str], nullable: list[bool], word: int) -> str | None:
    """SQL of 32-bit header word `word`: the null bits of fields whose bit falls in it; None
    when no such field can be null."""
    terms = [f"CASE WHEN {c} IS NULL THEN {_lit(1 << (i + 8 - 32 * word))} ELSE 0L END"
             for i, (c, n) in enumerate(zip(columns, nullable)) if n and (i + 8) // 32 == word]
    return " + ".join(terms) if terms else None


def with_bucket(df, column_names: list[str], key_fields: list[DataField], num_buckets: int, name: str,
                function: str = "default"):
    """`df` with an int column `name`: tarn's bucket (of `num_buckets`, by bucket function
    `function`) of the key columns `column_names` read as the table's `key_fields` types. Check
    `supported(key_fields, function)` first."""
    function = function.lower()
    if function in ("mod", "hive"):
        columns = [_quote(c) for c in column_names]
        make = _mod_bucket if function == "mod" else _hive_bucket
        return df.selectExpr(*[_quote(c) for c in df.columns],
                             f"{make(columns, key_fields, num_buckets)} AS {_quote(name)}")
    hashed, signed = _hashed(df, column_names, key_fields, name)
    return hashed.selectExpr(*[_quote(c) for c in df.columns],
                             f"CAST(abs({signed}) % {_lit(num_buckets)} AS int) AS {_quote(name)}")


def _mod_bucket(columns: list[str], key_fields: list[DataField], num_buckets: int) -> str:
    """SQL of Java's ModBucketFunction: floorMod(key, N) of one INT or BIGINT key, a null as 0."""
    value = f"CAST(CAST({columns[0]} AS {SPARK_CAST[key_fields[0].type.root]}) AS bigint)"
    return f"CAST(pmod(coalesce({value}, 0L), {_lit(num_buckets)}) AS int)"


def _hive_word(column: str, field: DataField) -> str:
    """SQL of Hive's hash of one field as a bigint in [0, 2**32), 0 for null."""
    root = field.type.root
    value = f"CAST({column} AS {SPARK_CAST[root]})"
    if root == "BOOLEAN":
        return f"CASE WHEN {value} THEN 1L ELSE 0L END"
    if root == "DATE":
        value = f"unix_date({value})"
    value = f"CAST({value} AS bigint)"
    if root == "BIGINT":
        value = f"({value} ^ shiftrightunsigned({value}, 32))"
    return f"coalesce({value} & {_lit(MASK32)}, 0L)"


def _hive_bucket(columns: list[str], key_fields: list[DataField], num_buckets: int) -> str:
    """SQL of Java's HiveBucketFunction: h = 31 * h + hash(field) from 0, mod 2**32 in bigints
    (31 * h + word < 2**37), then (h & 0x7fffffff) % N."""
    h = "0L"
    for column, field in zip(columns, key_fields):
        h = f"((31L * {h} + {_hive_word(column, field)}) & {_lit(MASK32)})"
    return f"CAST(({h} & {_lit(0x7FFFFFFF)}) % {_lit(num_buckets)} AS int)"


def with_hash(df, column_names: list[str], key_fields: list[DataField], name: str):
    """`df` with a bigint column `name`: the signed Murmur3 hash (an int32 value) of the
    BinaryRow of the columns `column_names` read as `key_fields` types (`tarn.bucket.row_hashes`).
    Check `supported(key_fields)` first."""
    hashed, signed = _hashed(df, column_names, key_fields, name)
    return hashed.selectExpr(*[_quote(c) for c in df.columns], f"{signed} AS {_quote(name)}")


def _hashed(df, column_names: list[str], key_fields: list[DataField], name: str):
    """(`df` with the hash's intermediate columns, the SQL of the signed hash over them)."""
    columns = [_quote(c) for c in column_names]
    nullable = [df.schema[c].nullable for c in column_names]
    header_words = ((len(key_fields) + 63 + 8) // 64) * 2  # 32-bit words of null bits
    words = [_null_word(columns, nullable, w) for w in range(header_words)]
    for column, field in zip(columns, key_fields):
        words.extend(_slot_words(column, field))
    seed = SEED
    while words[0] is None:  # leading zero words (no nulls possible): fold into the seed
        seed = _mix_int(seed, 0)
        words.pop(0)
    length = 4 * (header_words + 2 * len(key_fields))

    layers = _Layers(df, f"{name}_h")
    live = [i for i, w in enumerate(words) if w is not None]  # zero words scramble to zero
    values = layers.add([words[i] for i in live])  # the key's values, read as the session reads them
    with _arithmetic(df.sparkSession) as op:
        values = layers.add([op.mul32(op.word(v), C1) for v in values])  # scramble every word at once
        values = layers.add([op.rotl(v, 15) for v in values])
        scrambled = dict(zip(live, layers.add([op.mul32(v, C2) for v in values])))
        x = layers.one(f"{op.lit(seed)} ^ {scrambled[0]}")  # x = h ^ scramble(word), word by word
        for i in range(1, len(words)):
            x = layers.one(f"{op.mixed(x)} ^ {scrambled[i]}" if i in scrambled else op.mixed(x))
        h = layers.one(f"{op.mixed(x)} ^ {op.lit(length)}")  # fmix32(h ^ length)
        h = layers.one(f"{h} ^ {op.shifted(h, 16)}")
        h = layers.one(op.mul32(h, F1))
        h = layers.one(f"{h} ^ {op.shifted(h, 13)}")
        h = layers.one(op.mul32(h, F2))
        h = layers.one(f"{h} ^ {op.shifted(h, 16)}")
        return layers.df, op.signed(h)
