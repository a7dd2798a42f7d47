"""`tarn.spark.read`: Spark's own parquet reader where a table needs no merge.

A Python data source hands every row from a Python worker to the JVM; for 5M rows that alone
costs about 1.5x Spark's native parquet scan. Many reads need no tarn code per row, though:
append tables, primary-key tables whose buckets are one compacted file without deletes, and
tables with deletion vectors whose planned files are read on their own (tarn plans those
splits as raw-convertible). Their data files are plain parquet holding the table's columns by
name (plus Paimon's system columns, which are dropped), so Spark can scan them itself, with its
vectorised reader, filter pushdown and column pruning.

Deletion vectors: the deleted positions of every file that has some are laid out on the driver
as one byte mask (a byte per row of those files, 1 = deleted; each file a stretch of it), handed
to the plan as a scalar subquery over a one-row local relation. The files with vectors are
scanned with Spark's hidden `_metadata.file_size` and `_metadata.row_index` columns and a filter
keeps a row when its byte is 0: the file's stretch is found by a binary search over the files'
sizes (longs, so no string work per row; files of equal size are told apart by name). The other
files are scanned without it. (Measured against a broadcast left-anti join of (file name, row
index) pairs, which costs about twice as much: bench numbers in docs/guide-spark.md.)

`read` plans the table on the driver with tarn (time travel options included) and uses the
native scan when every planned split is raw-convertible, every file is parquet written with
the schema being read, Spark reads the files' columns as the types tarn declares and the files
with deletion vectors hold at most MAX_MASK_ROWS rows; otherwise it returns
`spark.read.format("tarn")`, which is always correct.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from itertools import groupby

import numpy as np

from tarn.errors import InvalidOption
from tarn.fs import join
from tarn.scan.planner import Split
from tarn.spark.target import READ_OPTIONS, ReadTarget
from tarn.store.deletion_vectors import DeletionVectorFiles

# read options that need the tarn source itself
PYTHON_ONLY = ("read.changelog",)
# Rows of the files with deletion vectors a native read masks: the mask takes a bit per row on
# the driver and in every stage's task binary (32 MB at most). Bigger reads go to the tarn source.
MAX_MASK_ROWS = 1 << 28
METADATA = "_metadata"  # Spark's hidden column of file metadata (a table column of that name hides it)


@dataclass(frozen=True)
class NativeFile:
    """A data file Spark scans itself: `size` in bytes (for a file with deleted rows as its file
    system reports it, which Spark shows as `_metadata.file_size`); `deleted`: its deleted row
    positions (sorted, within 0..rows-1), None when its deletion vector is absent or empty."""

    path: str
    name: str
    rows: int
    size: int
    deleted: np.ndarray | None = None


def native_files(target: ReadTarget) -> list[NativeFile] | None:
    """The data files a native scan reads for `target` and their deleted rows, or None when it
    cannot."""
    if target.system or target.snapshot is None:
        return None
    if any(target.options.get(k, "false").lower() == "true" for k in PYTHON_ONLY):
        return None
    if any(k not in READ_OPTIONS and not k.startswith("scan.") for k in target.options):
        return None  # Paimon read options (e.g. merge overrides) are honoured by the tarn source
    table = target.open()
    if not table.file_io.is_local:
        return None  # Spark's own reader would need its own object-store setup (hadoop-aws)
    schema_id = target.table_schema(table).id
    splits: list[Split] = target.scan(table).plan()
    files: list[NativeFile] = []
    masked_rows = 0
    for split in splits:
        if not split.raw_convertible:
            return None
        vectors = DeletionVectorFiles(table.file_io, split.table_root or table.root)
        for meta in split.files:
            if meta.schema_id != schema_id or not meta.file_name.endswith(".parquet"):
                return None
            path = meta.external_path or join(split.bucket_path, meta.file_name)
            entry = split.deletion_files.get(meta.file_name)
            deleted = vectors.read_one(entry, meta.file_name) if entry is not None else None
            if deleted is not None:
                # the tarn source ignores positions outside the file; so does the mask
                deleted = deleted[(deleted >= 0) & (deleted < meta.row_count)]
            if deleted is None or not len(deleted):
                files.append(NativeFile(path, meta.file_name, meta.row_count, meta.file_size))
                continue
            masked_rows += meta.row_count
            if masked_rows > MAX_MASK_ROWS:
                return None
            files.append(NativeFile(path, meta.file_name, meta.row_count, table.file_io.size(path), deleted))
    return files or None


def native_paths(target: ReadTarget) -> list[str] | None:
    """The data files a native scan reads for `target`, or None when it cannot."""
    files = native_files(target)
    return None if files is None else [f.path for f in files]


# Session settings that change how Spark reads parquet types (part of the schema cache key).
PARQUET_TYPE_CONFS = ("spark.sql.parquet.binaryAsString", "spark.sql.parquet.int96AsTimestamp",
                      "spark.sql.parquet.inferTimestampNTZ.enabled", "spark.sql.legacy.parquet.nanosAsLong")
_FILE_SCHEMAS: OrderedDict = OrderedDict()  # (path, size, settings) -> the schema Spark reads
_FILE_SCHEMAS_MAX = 256
_FILE_SCHEMAS_LOCK = threading.Lock()


def file_schema(spark, file: NativeFile):
    """The schema Spark reads from a parquet data file. Inferring it runs a Spark job (about
    75 ms); data files never change once written, so it is kept per (path, size, the session's
    parquet type settings), for the last _FILE_SCHEMAS_MAX files."""
    key = (file.path, file.size, tuple(spark.conf.get(c, None) for c in PARQUET_TYPE_CONFS))
    with _FILE_SCHEMAS_LOCK:
        schema = _FILE_SCHEMAS.get(key)
        if schema is not None:
            _FILE_SCHEMAS.move_to_end(key)
            return schema
    schema = spark.read.parquet(file.path).schema
    with _FILE_SCHEMAS_LOCK:
        _FILE_SCHEMAS[key] = schema
        while len(_FILE_SCHEMAS) > _FILE_SCHEMAS_MAX:
            _FILE_SCHEMAS.popitem(last=False)
    return schema


def _same_types(native, declared) -> bool:
    by_name = {f.name: f.dataType for f in native.fields}
    return all(by_name.get(f.name) == f.dataType for f in declared.fields)


def _sql_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def deletion_words(files: list[NativeFile]) -> tuple[np.ndarray, list[int]]:
    """The deletion mask of `files`: a bit per row, set where the row is deleted, 64 to a word
    (bit i of a word is row i of its 64; each file starts on a word of its own); and the word
    where each file starts."""
    starts = np.cumsum([0] + [(f.rows + 63) // 64 for f in files])
    words = np.zeros(int(starts[-1]), dtype=np.uint64)
    for f, start in zip(files, starts):
        np.bitwise_or.at(words, start + (f.deleted >> 6), np.left_shift(np.uint64(1), (f.deleted & 63).astype(np.uint64)))
    return words.view(np.int64), [int(s) for s in starts[:-1]]


def start_sql(files: list[NativeFile], starts: list[int]) -> str:
    """SQL: the word where the mask of the row's file starts. A binary search over the files'
    sizes; files of the same size are told apart by name. A row of no listed file, or past its
    file's row count, fails the query (a mask that does not fit the files is never applied)."""
    entries = sorted(zip((f.size for f in files), (f.name for f in files), (f.rows for f in files), starts))
    groups = [list(group) for _, group in groupby(entries, key=lambda e: e[0])]
    missing = "raise_error('tarn.spark.read: a row outside the planned files and row counts')"

    def leaf(group) -> str:
        whens = []
        for size, name, rows, start in group:
            same = f"_metadata.file_size = {size}"
            if len(group) > 1:
                same += f" AND _metadata.file_name = {_sql_text(name)}"
            whens.append(f"WHEN {same} AND _metadata.row_index < {rows} THEN {start}")
        return f"CASE {' '.join(whens)} ELSE {missing} END"

    def search(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return leaf(groups[lo])
        mid = (lo + hi) // 2
        return (f"CASE WHEN _metadata.file_size < {groups[mid][0][0]} THEN {search(lo, mid)} "
                f"ELSE {search(mid, hi)} END")

    return search(0, len(groups))


def _long_array_scalar(spark, words: np.ndarray):
    """A Column of the value `words` (ARRAY<BIGINT>). In a classic session: a scalar subquery
    over a one-row local relation, whose value plan strings (explain, and the SQL events every
    action posts) leave out; the longs reach the JVM through a temporary file that the JVM reads
    into a long[] (never through py4j, which would send them one call each)."""
    from pyspark.sql import DataFrame, functions as F
    from pyspark.sql.types import ArrayType, LongType, StructField, StructType

    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:  # Spark Connect: the literal travels in the plan
        return F.lit(words)
    gateway = spark.sparkContext._gateway
    jvm = gateway.jvm
    values = gateway.new_array(jvm.long, len(words))
    fd, name = tempfile.mkstemp(prefix="tarn-deletions-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(words.astype(">i8").tobytes())
        file = jvm.java.io.RandomAccessFile(name, "r")
        try:
            buffer = jvm.java.nio.ByteBuffer.allocate(len(words) * 8)
            channel = file.getChannel()
            while buffer.hasRemaining() and channel.read(buffer) >= 0:
                pass
            buffer.flip()
            buffer.asLongBuffer().get(values)
        finally:
            file.close()
    finally:
        os.unlink(name)
    row = gateway.new_array(jvm.java.lang.Object, 1)
    row[0] = values
    rows = jvm.java.util.ArrayList()
    rows.add(jvm.org.apache.spark.sql.RowFactory.create(row))
    schema = jsession.parseDataType(StructType([StructField("mask", ArrayType(LongType(), False), False)]).json())
    return DataFrame(jsession.createDataFrame(rows, schema), spark).scalar()


def _without_deleted(spark, schema, files: list[NativeFile]):
    """The rows of `files` (all with deleted rows) that are not deleted."""
    from pyspark.sql import functions as F

    words, starts = deletion_words(files)
    frame = spark.read.schema(schema).parquet(*[f.path for f in files])
    word = F.expr(f"CAST({start_sql(files, starts)} + shiftright(_metadata.row_index, 6) AS INT)")
    bit = F.expr("CAST(_metadata.row_index & 63 AS INT)")
    return frame.filter(F.bit_get(F.get(_long_array_scalar(spark, words), word), bit) == 0)


def read(spark, table_path: str, **options):
    """A DataFrame of the table at `table_path` (read options as for `spark.read.format("tarn")`):
    Spark's native parquet scan of the data files when no row needs merging (deletion vectors
    applied), else the tarn source. Both give the same rows and column types."""
    from pyspark.sql.types import StructType

    text_options = {str(k).lower(): str(v) for k, v in options.items()}
    if "path" in text_options:
        raise InvalidOption("tarn.spark.read takes the table path as its argument, not option 'path'")
    path = table_path if "://" in table_path else os.path.abspath(table_path)

    def tarn_source():
        from tarn.spark.session import register

        register(spark)
        reader = spark.read.format("tarn")
        for key, value in text_options.items():
            reader = reader.option(key, value)
        return reader.load(path)

    target = ReadTarget.of({**text_options, "path": path})
    files = native_files(target)
    if files is None:
        return tarn_source()
    declared = target.spark_schema()
    native = file_schema(spark, files[0])
    if not _same_types(native, declared):
        return tarn_source()
    masked = [f for f in files if f.deleted is not None]
    if masked and any(f.name.lower() == METADATA for f in native.fields):
        return tarn_source()  # a column named _metadata hides Spark's
    # Spark reads just these columns, in this order: no projection needed
    by_name = {f.name: f for f in native.fields}
    schema = StructType([by_name[f.name] for f in declared.fields])
    plain = [f.path for f in files if f.deleted is None]
    frames = []
    if plain:
        frames.append(spark.read.schema(schema).parquet(*plain))
    if masked:
        frames.append(_without_deleted(spark, schema, masked))
    return frames[0] if len(frames) == 1 else frames[0].union(frames[1])
