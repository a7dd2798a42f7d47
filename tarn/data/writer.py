"""Writing data files: rows of one (partition, bucket) rolled into files at `target-file-size`,
each described by a DataFileMeta with vectorised stats."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from tarn import paths
from tarn.codec.binary_row import EMPTY_ROW, serialize_row
from tarn.codec.data_file import write_data_file
from tarn.codec.file_index import INDEX_SUFFIX, build_file_index, cached_specs
from tarn.data.layout import ROW_TRACKING_FIELDS, STORED_ROW_TRACKING_FIELDS, FileLayout, layout_of
from tarn.fs import FileIO, join
from tarn.lsm.kv import DELETE, SEQUENCE, UPDATE_BEFORE, VALUE_KIND
from tarn.meta.manifest import APPEND_SOURCE, EMPTY_STATS, DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.options import Options, parse_memory_size
from tarn.stats import collect_stats, stats_modes

SYSTEM_STATS_MODE = "truncate(128)"
PARALLEL_STATS_ROWS = 200_000  # files from this many rows collect their stats while they are encoded


def changelog_options(raw) -> dict[str, str]:
    """The options changelog files are written with: `changelog-file.format`,
    `changelog-file.compression` and `changelog-file.stats-mode` replace the data-file settings
    when set (Java's KeyValueFileWriterFactory for changelog writers)."""
    options = dict(raw)
    for changelog_key, data_key in (("changelog-file.format", "file.format"),
                                    ("changelog-file.compression", "file.compression")):
        if options.get(changelog_key):
            options[data_key] = options[changelog_key]
    if options.get("changelog-file.stats-mode"):
        options["metadata.stats-mode"] = options["changelog-file.stats-mode"]
        options.pop("metadata.stats-mode.per.level", None)
    return options


def local_millis_now() -> int:
    """Paimon's creation time: the local wall clock read as if it were UTC."""
    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


class FileWriter:
    """Writes the files of one (partition, bucket) directory with one name uuid."""

    def __init__(self, file_io: FileIO, bucket_path: str, schema: TableSchema, options: Options,
                 prefix: str | None = None, changelog: bool = False, columns: list[str] | None = None,
                 row_ids: bool = False):
        """Row-tracking tables: `columns` (data evolution) writes files holding only those
        columns of their rows; `row_ids` writes the rows' `_ROW_ID` and `_SEQUENCE_NUMBER`
        columns (the rows carry them) into the files. Both record `_WRITE_COLS`."""
        self.file_io = file_io
        self.bucket_path = bucket_path
        self.schema = schema
        self.options = options
        self.layout = layout_of(schema)
        if columns is not None:
            self.layout = FileLayout((), tuple(schema.field(n) for n in columns))
        self.row_ids = row_ids
        self.write_cols = None
        if columns is not None or row_ids:
            self.write_cols = tuple(f.name for f in self.layout.value_fields) + \
                (tuple(f.name for f in ROW_TRACKING_FIELDS) if row_ids else ())
        self.raw_options = changelog_options(options.raw) if changelog else dict(options.raw)
        self.file_format = (self.raw_options.get("file.format") or "parquet").lower()
        if changelog:
            prefix = prefix or options.get("changelog-file.prefix") or "changelog-"
        prefix = prefix or options.get("data-file.prefix") or "data-"  # Paimon's data-file.prefix
        self.namer = paths.FileNamer(prefix, "." + self.file_format)
        # file indexes (`file-index.<type>.columns`): data files only, as Java's writers do
        self.index_specs = () if changelog else cached_specs(tuple(options.raw.items()))
        self.index_threshold = parse_memory_size(options.get("file-index.in-manifest-threshold") or "500 bytes")

    def write(self, rows: pa.Table, level: int = 0, file_source: int = APPEND_SOURCE,
              first_sequence: int | None = 0) -> list[DataFileMeta]:
        """Write already-ordered rows into files rolled at `target-file-size`.

        Key-value tables: `rows` holds the table columns plus `_SEQUENCE_NUMBER`/`_VALUE_KIND`.
        Append tables: just the table columns, numbered from `first_sequence` in order (None:
        each file from 0, which a row-tracking commit stamps with its snapshot id)."""
        metas = []
        for start, chunk in self._chunks(rows):
            first = 0 if first_sequence is None else first_sequence + start
            metas.append(self._write_one(chunk, level, file_source, first))
        return metas

    def write_one(self, rows: pa.Table, file_source: int = APPEND_SOURCE) -> DataFileMeta:
        """All `rows` in one file, however large (a file covering one row-id range), numbered
        from 0 (a row-tracking commit stamps the snapshot id)."""
        return self._write_one(rows, 0, file_source, 0)

    def write_stream(self, chunks, level: int, file_source: int) -> list[DataFileMeta]:
        """Write a stream of key-ordered key-value tables (sequence numbers kept), rolling a new
        file whenever the buffered rows reach `target-file-size` in memory."""
        target = self._target_size()
        metas, pending, pending_bytes = [], [], 0
        for chunk in chunks:
            pending.append(chunk)
            pending_bytes += chunk.nbytes
            if pending_bytes >= target:
                metas.extend(self.write(pa.concat_tables(pending), level, file_source))
                pending, pending_bytes = [], 0
        if pending:
            metas.extend(self.write(pa.concat_tables(pending), level, file_source))
        return metas

    def _target_size(self) -> int:
        return self.options.target_file_size(has_primary_key=self.layout.is_key_value)

    def _chunks(self, rows: pa.Table):
        target = self._target_size()
        bytes_per_row = max(rows.nbytes / max(rows.num_rows, 1), 1.0)
        # Files compress well below their Arrow size; 3x is a conservative estimate.
        rows_per_file = max(int(target * 3 / bytes_per_row), 1)
        for start in range(0, rows.num_rows, rows_per_file):
            yield start, rows.slice(start, rows_per_file)

    def _write_one(self, rows: pa.Table, level: int, file_source: int, first_sequence: int) -> DataFileMeta:
        name = self.namer.next()
        path = join(self.bucket_path, name)
        file_table = self._file_table(rows)
        describe = partial(self._meta, name, 0, rows, file_table, level, file_source, first_sequence)
        # a large file's stats are collected in a thread while the file is encoded (both release the GIL)
        pool = ThreadPoolExecutor(max_workers=1) if rows.num_rows >= PARALLEL_STATS_ROWS else None
        described = pool.submit(describe) if pool is not None else None
        try:
            size = write_data_file(self.file_io, path, file_table, self._file_fields(),
                                   self.file_format, self.raw_options)
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        written = [path]
        try:
            embedded, extra = self._file_index(name, rows, written)
            meta = described.result() if described is not None else describe()
            return replace(meta, file_size=size, embedded_index=embedded, extra_files=extra)
        except Exception:
            for p in written:
                self.file_io.delete(p)
            raise

    def _file_index(self, name: str, rows: pa.Table, written: list[str]) -> tuple[bytes | None, tuple[str, ...]]:
        """The data file's index: embedded in the manifest entry up to
        `file-index.in-manifest-threshold` bytes, else written beside it as `<name>.index`."""
        if not self.index_specs:
            return None, ()
        types = {f.name: f.type for f in self.layout.value_fields}
        index = build_file_index(rows, types, list(self.index_specs))
        if index is None:
            return None, ()
        if len(index) <= self.index_threshold:
            return index, ()
        index_name = name + INDEX_SUFFIX
        path = join(self.bucket_path, index_name)
        written.append(path)
        self.file_io.write_bytes(path, index)
        return None, (index_name,)

    def _file_fields(self) -> list:
        return self.layout.file_fields + (list(STORED_ROW_TRACKING_FIELDS) if self.row_ids else [])

    def _file_table(self, rows: pa.Table) -> pa.Table:
        if not self.layout.is_key_value:
            return rows.select([f.name for f in self._file_fields()])
        columns = [rows.column(k) for k in self.layout.key_names]
        columns += [rows.column(SEQUENCE), rows.column(VALUE_KIND)]
        columns += [rows.column(f.name) for f in self.layout.value_fields]
        names = [f.name for f in self.layout.file_fields]
        return pa.Table.from_arrays(columns, names=names)

    def _meta(self, name, size, rows, file_table, level, file_source, first_sequence) -> DataFileMeta:
        value_fields = list(self.layout.value_fields)
        modes = stats_modes(value_fields, self.raw_options)
        kept = [(f, m) for f, m in zip(value_fields, modes) if m != "none"]
        value_stats = collect_stats(rows.select([f.name for f, _ in kept]), [f for f, _ in kept],
                                    [m for _, m in kept])
        value_stats_cols = None if len(kept) == len(value_fields) else tuple(f.name for f, _ in kept)
        if self.write_cols is not None:  # stats of some columns: say which
            value_stats_cols = tuple(f.name for f, _ in kept)
        seq = rows.column(SEQUENCE) if SEQUENCE in rows.column_names else None
        if self.layout.is_key_value:
            key_fields = list(self.layout.key_fields)
            key_table = file_table.select([f.name for f in key_fields])
            key_types = [f.type for f in key_fields]
            min_key = serialize_row([c[0].as_py() for c in key_table.columns], key_types)
            max_key = serialize_row([c[-1].as_py() for c in key_table.columns], key_types)
            key_stats = collect_stats(key_table, key_fields, [SYSTEM_STATS_MODE] * len(key_fields))
            kinds = rows.column(VALUE_KIND)
            deletes = pc.sum(pc.or_(pc.equal(kinds, UPDATE_BEFORE), pc.equal(kinds, DELETE))).as_py() or 0
        else:
            min_key = max_key = EMPTY_ROW
            key_stats = EMPTY_STATS
            deletes = 0
        if seq is None:
            min_seq, max_seq = first_sequence, first_sequence + rows.num_rows - 1
        elif self.row_ids:  # Java's RowDataFileSequenceNumberTracker: nulls leave 0s the commit stamps
            min_seq, max_seq = _min_max(seq.drop_null())
            min_seq = 0 if seq.null_count == len(seq) else min_seq
            max_seq = 0 if seq.null_count else max_seq
        else:
            min_seq, max_seq = _min_max(seq)
        return DataFileMeta(
            file_name=name, file_size=size, row_count=rows.num_rows,
            min_key=min_key, max_key=max_key, key_stats=key_stats, value_stats=value_stats,
            min_sequence_number=min_seq, max_sequence_number=max_seq,
            schema_id=self.schema.id, level=level, extra_files=(),
            creation_time=local_millis_now(), delete_row_count=deletes,
            embedded_index=None, file_source=file_source, value_stats_cols=value_stats_cols,
            external_path=None, first_row_id=None, write_cols=self.write_cols,
        )


def _min_max(seq) -> tuple[int, int]:
    if seq is None or len(seq) == 0:
        return 0, 0
    result = pc.min_max(seq)
    return result["min"].as_py(), result["max"].as_py()
