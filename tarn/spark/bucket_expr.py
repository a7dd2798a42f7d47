"""tarn's bucket function as Spark column expressions, for fixed-width bucket keys.

`tarn.bucket.bucket_ids` hashes each row's bucket-key BinaryRow with MurmurHash3_x86_32
(seed 42). For keys of integer, date and boolean columns that BinaryRow is fixed: a header of
null bits, then one 8-byte little-endian slot per field. Spark can compute the same hash in
generated JVM code, so a bucket shuffle need not send the keys through a Python UDF.

Spark 4 runs SQL arithmetic in ANSI mode (overflow raises), so every 32-bit word is held in a
bigint in [0, 2**32) and 32-bit products are formed from 16-bit halves (no product exceeds
2**49). Each intermediate value is its own projected column: a value used twice stays one
attribute instead of a copied subtree.
"""

from __future__ import annotations

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


def supported(key_fields: list[DataField]) -> bool:
    """Can `bucket_column` compute the bucket of these key fields?"""
    return bool(key_fields) and len(key_fields) <= 56 and all(f.type.root in SLOT_BYTES for f in key_fields)


# ---------------------------------------------------------------------------------------------
# 32-bit arithmetic on Python ints (constant folding) and on Spark columns


def _mul32_int(a: int, c: int) -> int:
    return (a * c) & MASK32


def _rotl_int(x: int, r: int) -> int:
    return ((x << r) & MASK32) | (x >> (32 - r))


def _scramble_int(k: int) -> int:
    return _mul32_int(_rotl_int(_mul32_int(k, C1), 15), C2)


def _mix_int(h: int, k: int) -> int:
    return (_mul32_int(_rotl_int(h ^ _scramble_int(k), 13), 5) + 0xE6546B64) & MASK32


class _Steps:
    """Builds a chain of projections over `df`, one new column per intermediate value."""

    def __init__(self, df, prefix: str):
        self.df = df
        self.prefix = prefix
        self.count = 0

    def let(self, expr):
        """Project `expr` as a new column; return a reference to it."""
        from pyspark.sql import functions as F

        name = f"{self.prefix}{self.count}"
        self.count += 1
        self.df = self.df.withColumn(name, expr)
        return F.col(name)

    def mul32(self, a, c: int):
        """(a * c) mod 2**32 for a in [0, 2**32) without a product above 2**49."""
        from pyspark.sql import functions as F

        low = (a.bitwiseAND(F.lit(0xFFFF)) * F.lit(c))
        high = F.shiftleft((F.shiftright(a, 16) * F.lit(c)).bitwiseAND(F.lit(0xFFFF)), 16)
        return self.let((low + high).bitwiseAND(F.lit(MASK32)))

    def rotl(self, x, r: int):
        from pyspark.sql import functions as F

        return self.let(F.shiftleft(x, r).bitwiseAND(F.lit(MASK32)).bitwiseOR(F.shiftright(x, 32 - r)))

    def mix(self, h, k):
        """h' = rotl(h ^ scramble(k), 13) * 5 + 0xe6546b64 (mod 2**32)."""
        from pyspark.sql import functions as F

        k = self.mul32(self.rotl(self.mul32(k, C1), 15), C2)
        x = self.rotl(self.let(h.bitwiseXOR(k)), 13)
        return self.let((x * F.lit(5) + F.lit(0xE6546B64)).bitwiseAND(F.lit(MASK32)))

    def finish(self, h, length: int):
        """fmix32(h ^ length)."""
        from pyspark.sql import functions as F

        h = self.let(h.bitwiseXOR(F.lit(length)))
        h = self.let(h.bitwiseXOR(F.shiftright(h, 16)))
        h = self.mul32(h, F1)
        h = self.let(h.bitwiseXOR(F.shiftright(h, 13)))
        h = self.mul32(h, F2)
        return self.let(h.bitwiseXOR(F.shiftright(h, 16)))


def _slot_words(column, field: DataField):
    """(low word, high word) of a field's 8-byte slot as bigint columns in [0, 2**32); 0 for null."""
    from pyspark.sql import functions as F

    root = field.type.root
    value = column.cast(SPARK_CAST[root])
    if root == "BOOLEAN":
        low = F.when(value, F.lit(1)).otherwise(F.lit(0)).cast("bigint")
        return F.coalesce(low, F.lit(0).cast("bigint")), None
    if root == "DATE":
        value = F.unix_date(value)
    value = value.cast("bigint")
    if root == "BIGINT":
        low = value.bitwiseAND(F.lit(MASK32))
        high = F.shiftrightunsigned(value, 32)
        return F.coalesce(low, F.lit(0).cast("bigint")), F.coalesce(high, F.lit(0).cast("bigint"))
    mask = (1 << (8 * SLOT_BYTES[root])) - 1
    return F.coalesce(value.bitwiseAND(F.lit(mask)), F.lit(0).cast("bigint")), None


def _null_word(columns: list, nullable: list[bool], word: int):
    """Header word `word` (32 bits): the null bits of fields whose bit falls in it; None if 0."""
    from pyspark.sql import functions as F

    terms = [F.when(c.isNull(), F.lit(1 << (i + 8 - 32 * word))).otherwise(F.lit(0)).cast("bigint")
             for i, (c, n) in enumerate(zip(columns, nullable)) if n and (i + 8) // 32 == word]
    if not terms:
        return None
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def with_bucket(df, column_names: list[str], key_fields: list[DataField], num_buckets: int, name: str):
    """`df` with an int column `name`: tarn's bucket (of `num_buckets`) of the key columns
    `column_names` read as the table's `key_fields` types. Check `supported(key_fields)` first."""
    from pyspark.sql import functions as F

    steps = _Steps(df, f"{name}_h")
    columns = [F.col(c) for c in column_names]
    nullable = [df.schema[c].nullable for c in column_names]
    header_words = ((len(key_fields) + 63 + 8) // 64) * 2  # 32-bit words of null bits
    words = [_null_word(columns, nullable, w) for w in range(header_words)]
    for column, field in zip(columns, key_fields):
        words.extend(_slot_words(column, field))
    h = SEED
    constant = True
    for word in words:
        if constant and word is None:
            h = _mix_int(h, 0)
            continue
        if constant:
            h = steps.let(F.lit(h).cast("bigint"))
            constant = False
        h = steps.mix(h, F.lit(0).cast("bigint") if word is None else steps.let(word))
    if constant:  # not reachable for supported keys (every key has a value word)
        h = steps.let(F.lit(h).cast("bigint"))
    h = steps.finish(h, 4 * len(words))
    signed = F.when(h >= F.lit(1 << 31), h - F.lit(1 << 32)).otherwise(h)
    bucket = (F.abs(signed) % F.lit(num_buckets)).cast("int")
    out = steps.df.withColumn(name, bucket)
    return out.drop(*[f"{name}_h{i}" for i in range(steps.count)])
