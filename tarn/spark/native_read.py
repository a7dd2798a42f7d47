"""`tarn.spark.read`: Spark's own parquet reader where a table needs no merge.

A Python data source hands every row from a Python worker to the JVM; for 5M rows that alone
costs about 1.5x Spark's native parquet scan. Many reads need no tarn code per row, though:
append tables, primary-key tables whose buckets are one compacted file without deletes, and
tables with deletion vectors, whose files above level 0 are read on their own (tarn plans all
these splits as raw-convertible). Their data files are plain parquet holding the table's
columns by name (plus Paimon's system columns, which are not read), so Spark can scan them
itself, with its vectorised reader, filter pushdown and column pruning.

Deletion vectors. The files that have deleted rows are scanned with Spark's hidden
`_metadata.file_size` and `_metadata.row_index` columns and a filter that keeps a row when its
bit in a mask built on the driver is clear: a bit per row, 64 to a long, one ARRAY<BIGINT>
literal built in the JVM around Spark's compact array form (UnsafeArrayData), which plan
strings print as a class name, not as its values (the longs reach the JVM through a temporary
file, not through py4j). A row finds its file's bits by its file's size: `file_size % M`
indexes three small literal arrays (where the file's bits start, its size, its row count), M
chosen on the driver so that the files' sizes fall in distinct slots (files of one size go to
different scans). A row whose file or position the mask does not hold fails the query rather
than being kept or dropped by a mask that does not fit. Files without deleted rows join the
masked scan (empty masks) when they hold no more rows than the masked files: one scan and no
union to plan.

The mask's costs against `spark.read.parquet` and against the alternatives tried and dropped
(a broadcast anti join, SQL literal arrays, a scan per file, ...) are measured in
docs/research/spark-native-read.md.

Building a frame costs tens of milliseconds, so a snapshot's frame is planned once: `read`
keeps it (`keep_frame`) under everything it depends on, and a later read of that snapshot
returns it after resolving the snapshot (about 2 ms).

Spark packs the files of a scan into tasks counting 4 MB per file opened, so a few large files
may share one task; `scan_groups` splits such reads into a few scans whose tasks end sooner, as
Spark would pack them (its model counts bytes, not row groups). One masked scan stays one scan:
an extra one costs more to plan than balanced tasks save (docs/research/spark-native-read.md).

`read` plans the table on the driver with tarn (time travel options included) and uses the
native scan when every planned split is raw-convertible, every file is parquet written with
the schema being read, Spark reads the files' columns as the types tarn declares and the files
with deletion vectors hold at most MAX_MASK_ROWS rows; otherwise it returns
`spark.read.format("tarn")`, which is always correct.
"""

from __future__ import annotations

import heapq
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import reduce
from itertools import groupby

import numpy as np

from tarn.types import first_root_where
from tarn.errors import InvalidOption
from tarn.fs import join
from tarn.scan.planner import Split
from tarn.spark.partition_scans import file_scan
from tarn.spark.ref import CATALOG, CATALOG_PREFIX, resolved, table_location
from tarn.spark.target import READ_OPTIONS, ReadTarget
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.store.cache import ByteCache

# read options that need the tarn source itself
PYTHON_ONLY = ("read.changelog",)
# Rows of the files with deletion vectors a native read masks: the mask takes a bit per row on
# the driver and in every stage's task binary (32 MB at most). Bigger reads go to the tarn source.
MAX_MASK_ROWS = 1 << 28
MASK_GROUP_FILES = 64  # files a filter tells apart (one scan each group)
MAX_SAME_SIZE = 4  # files of one size a read masks (each needs a scan of its own)
MAX_SLOTS = 1 << 16  # the largest modulus a filter finds files by
MAX_SCAN_GROUPS = 4  # scans of one kind (with or without deleted rows) a read balances its tasks over
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
    partition: tuple = ()  # the values of the table's partition keys


def native_files(target: ReadTarget) -> list[NativeFile] | None:
    """The data files a native scan reads for `target` and their deleted rows, or None when it
    cannot."""
    if target.system or target.snapshot is None or target.incremental:
        return None
    if any(target.options.get(k, "false").lower() == "true" for k in PYTHON_ONLY):
        return None
    if any(k not in READ_OPTIONS and not k.startswith(("scan.", CATALOG_PREFIX)) and k != CATALOG
           for k in target.options):
        return None  # Paimon read options (e.g. merge overrides) are honoured by the tarn source
    table = target.open()
    if not table.file_io.is_local:
        return None  # Spark's own reader would need its own object-store setup (hadoop-aws)
    schema_id = target.table_schema(table).id
    if any(first_root_where(f.type, lambda t: not t.spark_native) for f in target.table_schema(table).fields):
        return None  # Spark's parquet scan reads a VARIANT only from an annotated group, which Paimon never writes
    splits: list[Split] = target.scan(table).plan()
    files: list[NativeFile] = []
    masked_rows = 0
    for split in splits:
        if not split.raw_convertible or split.row_tracking and _row_tracking_read(target, split) or split.branch:
            return None
        vectors = DeletionVectorFiles(table.file_io, split.table_root or table.root, table.schema())
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
                files.append(NativeFile(path, meta.file_name, meta.row_count, meta.file_size,
                                        partition=split.partition_values))
                continue
            masked_rows += meta.row_count
            if masked_rows > MAX_MASK_ROWS:
                return None
            files.append(NativeFile(path, meta.file_name, meta.row_count, table.file_io.size(table.file_io.native(path)),
                                    deleted, split.partition_values))
    if any(f.deleted is not None for f in files):  # any file may join a masked scan: sizes as Spark sees them
        files = [f if f.deleted is not None else replace(f, size=table.file_io.size(table.file_io.native(f.path)))
                 for f in files]
    return files or None


def _row_tracking_read(target: ReadTarget, split: Split) -> bool:
    """Row tracking needs tarn's reader: `_ROW_ID` / `_SEQUENCE_NUMBER` asked for, or files
    holding some columns (`_WRITE_COLS`)."""
    asks = target.columns is not None and any(c in ("_ROW_ID", "_SEQUENCE_NUMBER") for c in target.columns)
    return asks or any(f.write_cols is not None for f in split.files)


def native_paths(target: ReadTarget) -> list[str] | None:
    """The data files a native scan reads for `target`, or None when it cannot."""
    files = native_files(target)
    return None if files is None else [f.path for f in files]


# Session settings that change how Spark reads parquet types (part of the schema cache key).
PARQUET_TYPE_CONFS = ("spark.sql.parquet.binaryAsString", "spark.sql.parquet.int96AsTimestamp",
                      "spark.sql.parquet.inferTimestampNTZ.enabled", "spark.sql.legacy.parquet.nanosAsLong")
_FILE_SCHEMAS_MAX = 256
_FILE_SCHEMAS = ByteCache(_FILE_SCHEMAS_MAX)  # (path, size, settings) -> the schema Spark reads, each charged 1


def file_schema(spark, file: NativeFile):
    """The schema Spark reads from a parquet data file. Inferring it runs a Spark job (about
    75 ms); data files never change once written, so it is kept per (path, size, the session's
    parquet type settings), for the last _FILE_SCHEMAS_MAX files."""
    key = (file.path, file.size, tuple(spark.conf.get(c, None) for c in PARQUET_TYPE_CONFS))
    schema = _FILE_SCHEMAS.get(key)
    if schema is None:
        schema = spark.read.parquet(file.path).schema
        _FILE_SCHEMAS.put(key, schema, 1)
    return schema


def _same_types(native, declared) -> bool:
    by_name = {f.name: f.dataType for f in native.fields}
    return all(by_name.get(f.name) == f.dataType for f in declared.fields)


def scan_settings(spark) -> tuple[int, int, int, int] | None:
    """What Spark's file scans pack files into tasks by: spark.sql.files.maxPartitionBytes,
    spark.sql.files.openCostInBytes, the partitions wanted (spark.sql.files.minPartitionNum or
    the default parallelism) and the cores (default parallelism). None where the session does
    not tell (Spark Connect)."""
    try:
        conf = spark._jsparkSession.sessionState().conf()
        cores = int(spark.sparkContext.defaultParallelism)
        wanted = conf.filesMinPartitionNum()
        return (int(conf.filesMaxPartitionBytes()), int(conf.filesOpenCostInBytes()),
                int(wanted.get()) if wanted.isDefined() else cores, cores)
    except Exception:  # noqa: BLE001 - no JVM session, or another Spark's internals: no grouping
        return None


def scan_tasks(sizes: list[int], settings: tuple[int, int, int, int]) -> list[int]:
    """The bytes of each task Spark's scan of files of these sizes makes, in task order (its
    FilePartition.maxSplitBytes and getFilePartitions: files cut at the split size, pieces
    largest first, each task filled until the next piece would pass the split size, counting
    the open cost per piece)."""
    most, open_cost, wanted, _ = settings
    split = min(most, max(open_cost, sum(size + open_cost for size in sizes) // max(wanted, 1)))
    pieces = sorted((min(split, size - at) for size in sizes for at in range(0, max(size, 1), split)), reverse=True)
    tasks, filled, load, count = [], 0, 0, 0
    for piece in pieces:
        if count and filled + piece > split:
            tasks.append(load)
            filled, load, count = 0, 0, 0
        filled += piece + open_cost
        load += piece
        count += 1
    if count:
        tasks.append(load)
    return tasks


def _finish(tasks: list[int], cores: int) -> int:
    """When the last of `tasks` (bytes each) ends on `cores` cores taking them in order."""
    free = [0] * max(cores, 1)
    for task in tasks:
        heapq.heapreplace(free, free[0] + task)
    return max(free)


def scan_groups(files: list[NativeFile], settings) -> list[list[NativeFile]]:
    """`files` in the groups to scan apart (then unioned). Spark packs the files of one scan
    into about as many tasks as there are cores, counting an open cost (4 MB) per file, so a few
    large files often share a task while others hold little: the two 8 MB files of a 2-bucket
    table make one task of two on local[2]. Up to MAX_SCAN_GROUPS groups balanced by bytes are
    used where their tasks, packed as Spark would pack each group, end sooner on the cores by
    more than an open cost per extra scan."""
    if settings is None or len(files) < 2:
        return [files]
    open_cost, cores = settings[1], settings[3]
    best, best_end = [files], _finish(scan_tasks([f.size for f in files], settings), cores)
    for count in range(2, min(cores, MAX_SCAN_GROUPS, len(files)) + 1):
        groups: list[list[NativeFile]] = [[] for _ in range(count)]
        loads = [0] * count
        for f in sorted(files, key=lambda f: -f.size):
            emptiest = loads.index(min(loads))
            groups[emptiest].append(f)
            loads[emptiest] += f.size
        end = _finish([t for g in groups for t in scan_tasks([f.size for f in g], settings)], cores)
        if end + (count - len(best)) * open_cost < best_end:
            best, best_end = groups, end
    return best


def mask_groups(files: list[NativeFile]) -> list[list[NativeFile]] | None:
    """The files with deleted rows in groups of distinct sizes (a size is all a row's filter
    knows of its file), at most MASK_GROUP_FILES each: the i-th file of every size in group i.
    None when more than MAX_SAME_SIZE files share a size."""
    layers: list[list[NativeFile]] = []
    for _, same in groupby(sorted(files, key=lambda f: f.size), key=lambda f: f.size):
        for i, f in enumerate(same):
            if i == len(layers):
                layers.append([])
            layers[i].append(f)
    if len(layers) > MAX_SAME_SIZE:
        return None
    return [layer[i:i + MASK_GROUP_FILES] for layer in layers for i in range(0, len(layer), MASK_GROUP_FILES)]


def slot_modulus(sizes: np.ndarray) -> int | None:
    """The smallest M (from len(sizes)^2/8 on, where a try succeeds often enough) giving the
    distinct `sizes` distinct remainders: a row's file is then found in one step,
    `file_size % M`. None past MAX_SLOTS."""
    count = len(sizes)
    modulus = max(count, count * count // 8)
    while len(np.unique(sizes % modulus)) < count:
        modulus += 1
        if modulus > MAX_SLOTS:
            return None
    return modulus


@dataclass(frozen=True)
class DeletionTable:
    """What a filter needs to drop the deleted rows of files of distinct sizes. A file's slot is
    `size % modulus`; `starts`, `sizes` and `rows` hold at its slot the word where its mask
    starts, its size and its row count (-1 in empty slots). `words`: the masks, a bit per row,
    set where the row is deleted, 64 to a word (bit j of a word is row j of its 64), each file
    starting on a word of its own."""

    modulus: int
    starts: np.ndarray
    sizes: np.ndarray
    rows: np.ndarray
    words: np.ndarray


def deletion_table(files: list[NativeFile]) -> DeletionTable | None:
    """The DeletionTable of `files` (of distinct sizes), None if no modulus tells them apart."""
    sizes = np.array([f.size for f in files], dtype=np.int64)
    modulus = slot_modulus(sizes)
    if modulus is None:
        return None
    starts = np.cumsum([0] + [(f.rows + 63) // 64 for f in files])
    at = sizes % modulus
    slots = np.full((3, modulus), -1, dtype=np.int64)
    slots[0, at] = starts[:-1]
    slots[1, at] = sizes
    slots[2, at] = [f.rows for f in files]
    words = np.zeros(int(starts[-1]), dtype=np.uint64)
    for f, start in zip(files, starts):
        _set_bits(words[start:], f.deleted)
    return DeletionTable(modulus, slots[0], slots[1], slots[2], words.view(np.int64))


def _set_bits(words: np.ndarray, positions: np.ndarray) -> None:
    """Sets bit `p & 63` of word `p >> 6` of `words` (uint64) for every position `p` (sorted,
    ascending): the bits of each word ORed together at once."""
    if not len(positions):
        return
    at = positions >> 6
    bits = np.left_shift(np.uint64(1), (positions & 63).astype(np.uint64))
    first = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
    words[at[first]] |= np.bitwise_or.reduceat(bits, first)


def _long_array_column(spark, words: np.ndarray):
    """A Column of the value `words` (ARRAY<BIGINT>). In a classic session: a literal built in
    the JVM around Spark's compact array form (UnsafeArrayData), which plan strings (explain, and
    the SQL events every action posts) show as a class name, not as its values; the longs reach
    the JVM through a temporary file that the JVM reads into a long[] (never through py4j, which
    would send them one call each). A Spark without those classes gets a scalar subquery over a
    one-row local relation holding the array instead (about 15 ms more per action on local[2]:
    the subquery is planned and run as a stage of its own)."""
    from pyspark.sql import functions as F
    from py4j.protocol import Py4JError

    if getattr(spark, "_jsparkSession", None) is None:  # Spark Connect: the literal travels in the plan
        return F.lit(words)
    values = _jvm_longs(spark, words)
    try:
        return _unsafe_array_literal(spark, values)
    except (Py4JError, TypeError):  # TypeError: a class this Spark lacks (py4j finds a package)
        return _scalar_subquery(spark, values)


def _jvm_longs(spark, words: np.ndarray):
    """A JVM long[] holding `words`, passed through a temporary file."""
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
    return values


def _unsafe_array_literal(spark, values):
    from pyspark.sql import Column
    from pyspark.sql.types import ArrayType, LongType

    jvm = spark.sparkContext._gateway.jvm
    array = jvm.org.apache.spark.sql.catalyst.expressions.UnsafeArrayData.fromPrimitiveArray(values)
    array_type = spark._jsparkSession.parseDataType(ArrayType(LongType(), False).json())
    literal = jvm.org.apache.spark.sql.catalyst.expressions.Literal(array, array_type)
    return Column(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(literal))


def _scalar_subquery(spark, values):
    from pyspark.sql import DataFrame
    from pyspark.sql.types import ArrayType, LongType, StructField, StructType

    gateway = spark.sparkContext._gateway
    jsession = spark._jsparkSession
    row = gateway.new_array(gateway.jvm.java.lang.Object, 1)
    row[0] = values
    rows = gateway.jvm.java.util.ArrayList()
    rows.add(gateway.jvm.org.apache.spark.sql.RowFactory.create(row))
    schema = jsession.parseDataType(StructType([StructField("mask", ArrayType(LongType(), False), False)]).json())
    return DataFrame(jsession.createDataFrame(rows, schema), spark).scalar()


ROW_BITS = 29  # a slot's packed long: (where its mask starts) << ROW_BITS | its row count (<= MAX_MASK_ROWS)


def _scan(spark, files: list[NativeFile], schema, partition_keys):
    return file_scan(spark, [f.path for f in files], schema, [f.partition for f in files], list(partition_keys))


def _without_deleted(spark, frame, files: list[NativeFile], table: DeletionTable):
    """The rows of `frame`, the scan of `files` (all with deleted rows, of distinct sizes), that
    `table` does not mark deleted. A row of a file the table does not hold, or past its file's row count, fails the
    query: a mask that does not fit the files is never applied. The slots are two small SQL
    literal arrays (sizes; mask start and row count packed in one long) in one parsed
    expression giving the row's mask word; the words, used once, one array value."""
    from pyspark.sql import functions as F

    def listed(values: np.ndarray) -> str:
        return f"array({', '.join(map(str, values.tolist()))})"

    packed = np.where(table.starts >= 0, (table.starts << ROW_BITS) | table.rows, -1)
    slot = f"CAST({METADATA}.file_size % {table.modulus} AS INT)"
    info = f"get({listed(packed)}, {slot})"
    word = F.expr(f"CASE WHEN get({listed(table.sizes)}, {slot}) = {METADATA}.file_size "
                  f"AND {METADATA}.row_index < ({info} & {(1 << ROW_BITS) - 1}) "
                  f"THEN CAST(shiftright({info}, {ROW_BITS}) + shiftright({METADATA}.row_index, 6) AS INT) "
                  "ELSE raise_error('tarn.spark.read: a row outside the planned files and row counts') END")
    bit = F.expr(f"CAST({METADATA}.row_index & 63 AS INT)")
    return frame.filter(F.bit_get(F.get(_long_array_column(spark, table.words), word), bit) == 0)


def read(spark, table_path: str, **options):
    """A DataFrame of the table at `table_path` (read options as for `spark.read.format("tarn")`):
    Spark's native parquet scan of the data files when no row needs merging (deletion vectors
    applied), else the tarn source. Both give the same rows and column types."""
    from pyspark.sql.types import StructType

    text_options = resolved({str(k).lower(): str(v) for k, v in options.items()})
    if "path" in text_options:
        raise InvalidOption("tarn.spark.read takes the table path as its argument, not option 'path'")
    path = table_location(table_path, text_options)

    def tarn_source():
        from tarn.spark.session import register

        register(spark)
        reader = spark.read.format("tarn")
        for key, value in text_options.items():
            reader = reader.option(key, value)
        return reader.load(path)

    target = ReadTarget.of({**text_options, "path": path})
    key = frame_key(spark, target)
    cached = cached_frame(spark, key)
    if cached is not None:
        return cached
    files = None if target.options.get("filter") else native_files(target)  # tarn applies its own filter
    if files is None:
        return tarn_source()
    declared = target.spark_schema()
    native = file_schema(spark, files[0])
    if not _same_types(native, declared):
        return tarn_source()
    if any(f.deleted is not None for f in files) and any(f.name.lower() == METADATA for f in native.fields):
        return tarn_source()  # a column named _metadata hides Spark's
    # Spark reads just these columns, in this order: no projection needed
    by_name = {f.name: f for f in native.fields}
    # a read of one partition has nothing to prune: its scans stay plain (cheaper to build)
    keys = target.table_schema(target.open()).partition_keys if len({f.partition for f in files}) > 1 else ()
    frame = native_frame(spark, files, StructType([by_name[f.name] for f in declared.fields]), keys)
    if frame is None:
        return tarn_source()
    keep_frame(spark, key, frame, sum(f.rows for f in files if f.deleted is not None))
    return frame


# Frames built for a snapshot, kept per session: a snapshot's files and deletion vectors never
# change, so a later read of it needs no planning, no mask and no analysis of the filter again
# (about 70 ms of a 2M-row read's 330 on local[2]). Bounded by count and by the rows their masks
# cover (a bit each, held by the JVM while the frame is kept).
_FRAMES: OrderedDict = OrderedDict()  # key -> (session, frame, masked rows)
_FRAMES_MAX = 32
_FRAMES_MAX_MASKED_ROWS = 1 << 27  # 16 MB of masks
_FRAMES_LOCK = threading.Lock()


def frame_key(spark, target: ReadTarget) -> tuple | None:
    """What a native frame of `target` depends on: the table, the snapshot (its manifest lists
    name it uniquely: a table dropped and made again at the path has other ones), the schema and
    options read, and the session settings the frame was planned with. None: not kept."""
    snapshot = target.snapshot
    if snapshot is None or target.system:
        return None
    confs = tuple(spark.conf.get(c, None) for c in PARQUET_TYPE_CONFS)
    return (id(spark), target.path, tuple(sorted(target.options.items())), target.schema_id, snapshot.id,
            snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.index_manifest, confs,
            scan_settings(spark))


def cached_frame(spark, key):
    if key is None:
        return None
    with _FRAMES_LOCK:
        entry = _FRAMES.get(key)
        if entry is None or entry[0] is not spark:
            return None
        _FRAMES.move_to_end(key)
        return entry[1]


def keep_frame(spark, key, frame, masked_rows: int) -> None:
    if key is None or masked_rows > _FRAMES_MAX_MASKED_ROWS:
        return
    with _FRAMES_LOCK:
        for stale in [k for k, e in _FRAMES.items() if _stopped(e[0])]:
            del _FRAMES[stale]
        _FRAMES[key] = (spark, frame, masked_rows)
        while len(_FRAMES) > _FRAMES_MAX or sum(e[2] for e in _FRAMES.values()) > _FRAMES_MAX_MASKED_ROWS:
            _FRAMES.popitem(last=False)


def _stopped(session) -> bool:
    context = getattr(session, "_sc", None)  # Spark Connect sessions have none
    return context is not None and context._jsc is None


def forget_frames() -> None:
    """Drops every kept frame (the next read of each snapshot plans it again)."""
    with _FRAMES_LOCK:
        _FRAMES.clear()


def masked_together(files: list[NativeFile]) -> list[NativeFile]:
    """`files`, where those without deleted rows join the masked scans (with empty masks) when
    they hold at most as many rows as the masked files and no file size repeats more: Spark
    then plans one scan and no union fewer (about 80 ms of its CPU on local[2], a tenth of
    reading 2M rows) and packs every file into one set of tasks, for the filter's cost on those
    rows."""
    masked = [f for f in files if f.deleted is not None]
    plain = [f for f in files if f.deleted is None]
    rows = sum(f.rows for f in masked)
    if not masked or not plain or sum(f.rows for f in plain) > rows or 2 * rows > MAX_MASK_ROWS:
        return files
    together = masked + [replace(f, deleted=np.zeros(0, dtype=np.int64)) for f in plain]
    groups, apart = mask_groups(together), mask_groups(masked)
    return together if groups is not None and apart is not None and len(groups) <= len(apart) else files


def native_frame(spark, files: list[NativeFile], schema, partition_keys: list[str] = ()):
    """Spark's scans of `files` as columns `schema`, without their deleted rows, partitions by
    `partition_keys` known to Spark (tarn/spark/partition_scans.py); None when the deleted rows
    cannot be told apart (too many files of one size)."""
    settings = scan_settings(spark) if len(files) > 1 else None
    files = masked_together(files)
    masked = []
    for scan in scan_groups([f for f in files if f.deleted is not None], settings):
        groups = mask_groups(scan) if scan else []
        if groups is None:
            return None
        for group in groups:
            table = deletion_table(group)
            if table is None:
                return None
            masked.append((group, table))
    frames = [_scan(spark, scan, schema, partition_keys)
              for scan in scan_groups([f for f in files if f.deleted is None], settings) if scan]
    frames += [_without_deleted(spark, _scan(spark, group, schema, partition_keys), group, table)
               for group, table in masked]
    return reduce(lambda a, b: a.union(b), frames)
