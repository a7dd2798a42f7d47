"""Writing data files: rows of one (partition, bucket) rolled into files at `target-file-size`,
each described by a DataFileMeta with vectorised stats."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pyarrow as pa

from tarn import paths
from tarn.codec.data_file import ParquetStream, write_data_file
from tarn.codec.file_index import INDEX_SUFFIX, build_file_index, cached_specs
from tarn.data.describe import Description
from tarn.data.external_paths import ExternalRoots
from tarn.data.layout import ROW_TRACKING_FIELDS, STORED_ROW_TRACKING_FIELDS, FileLayout, layout_of
from tarn.fs import FileIO, join, parent
from tarn.lsm.kv import SEQUENCE, VALUE_KIND
from tarn.meta.manifest import APPEND_SOURCE, DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.options import Options, parse_memory_size

PARALLEL_STATS_ROWS = 200_000  # files from this many rows collect their stats while they are encoded
# a streamed file (compaction output) is written in row groups of about this many rows / bytes
ROW_GROUP_ROWS, ROW_GROUP_BYTES = 262_144, 64 << 20


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
        # data-file.external-paths: where each new file goes (tarn/data/external_paths.py)
        roots = ExternalRoots.of(options, bucket_path)
        if roots is not None:
            roots.check_store(bucket_path, file_io.is_local, file_io.is_s3)
        self.external = roots.picker(relative_bucket(bucket_path, schema)) if roots is not None else None

    def new_location(self) -> tuple[str, str, str | None]:
        """(name, path on the file system, external URI or None) of the next file."""
        name = self.namer.next()
        if self.external is None:
            return name, join(self.bucket_path, name), None
        uri = self.external.location(name)
        return name, self.file_io.native(uri), uri

    def path_of(self, meta: DataFileMeta) -> str:
        """Where a file this writer wrote lives."""
        return self.file_io.native(meta.external_path) if meta.external_path else join(self.bucket_path, meta.file_name)

    def write(self, rows: pa.Table, level: int = 0, file_source: int = APPEND_SOURCE,
              first_sequence: int | None = 0) -> list[DataFileMeta]:
        """Write already-ordered rows into files rolled at `target-file-size`.

        Key-value tables: `rows` holds the table columns plus `_SEQUENCE_NUMBER`/`_VALUE_KIND`.
        Append tables: just the table columns, numbered from `first_sequence` in order (None:
        each file from 0, which a row-tracking commit stamps with its snapshot id)."""
        if self._streams():
            return self._roll([rows], level, file_source, first_sequence)
        metas = []
        for start, chunk in self._chunks(rows):
            first = 0 if first_sequence is None else first_sequence + start
            metas.append(self._write_one(chunk, level, file_source, first))
        return metas

    def _streams(self) -> bool:
        """True if files are written a row group at a time and rolled on their size on disk
        (parquet without a file index, which is built from all of a file's rows)."""
        return self.file_format == "parquet" and not self.index_specs and self.write_cols is None

    def write_one(self, rows: pa.Table, file_source: int = APPEND_SOURCE) -> DataFileMeta:
        """All `rows` in one file, however large (a file covering one row-id range), numbered
        from 0 (a row-tracking commit stamps the snapshot id)."""
        return self._write_one(rows, 0, file_source, 0)

    def write_stream(self, chunks, level: int, file_source: int) -> list[DataFileMeta]:
        """Write a stream of key-ordered key-value tables (sequence numbers kept), rolling a new
        file once the current one reaches `target-file-size` on disk, as Java's rolling writer
        does: parquet files are written a row group at a time, their stats gathered as they
        grow. Other formats, and files with a file index (built from all their rows), roll
        when the buffered rows reach `target-file-size` in memory. On failure the files of
        this stream are deleted."""
        if not self._streams():
            return self._write_buffered_stream(chunks, level, file_source)
        return self._roll(chunks, level, file_source, 0)

    def _roll(self, chunks, level: int, file_source: int, first_sequence: int | None) -> list[DataFileMeta]:
        """The chunks' rows into parquet files written a row group at a time, each closed once
        it holds `target-file-size` bytes on disk. Files without sequence numbers in their
        rows are numbered on from `first_sequence` (None: each from 0). On failure the files
        of this call are deleted."""
        target = self._target_size()
        metas, current, pending, written = [], None, _Pending(chunks), 0
        try:
            while True:
                # a row group fills what is left of the file, at the file's compression so far
                budget = target if current is None else current.room(target)
                group = pending.take(ROW_GROUP_ROWS, min(budget, ROW_GROUP_BYTES))
                if group is None:
                    break
                if current is None:
                    first = 0 if first_sequence is None else first_sequence + written
                    current = _StreamedFile(self, level, file_source, first)
                current.write(group)
                written += group.num_rows
                if current.size >= target:
                    metas.append(current.close())
                    current = None
            if current is not None:
                metas.append(current.close())
                current = None
        except BaseException:
            if current is not None:
                current.abort()
            for meta in metas:
                self.file_io.delete(self.path_of(meta))
            raise
        return metas

    def _write_buffered_stream(self, chunks, level: int, file_source: int) -> list[DataFileMeta]:
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
        name, path, uri = self.new_location()
        file_table = self.file_table(rows)

        def describe() -> DataFileMeta:
            description = self.description()
            description.add(rows, file_table)
            return description.meta(name, 0, level, file_source, first_sequence)

        # a large file's stats are collected in a thread while the file is encoded (both release the GIL)
        pool = ThreadPoolExecutor(max_workers=1) if rows.num_rows >= PARALLEL_STATS_ROWS else None
        described = pool.submit(describe) if pool is not None else None
        try:
            size = write_data_file(self.file_io, path, file_table, self.file_fields(),
                                   self.file_format, self.raw_options)
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        written = [path]
        try:
            embedded, extra = self._file_index(name, rows, written, parent(path))
            meta = described.result() if described is not None else describe()
            return replace(meta, file_size=size, embedded_index=embedded, extra_files=extra, external_path=uri)
        except Exception:
            for p in written:
                self.file_io.delete(p)
            raise

    def _file_index(self, name: str, rows: pa.Table, written: list[str],
                    directory: str) -> tuple[bytes | None, tuple[str, ...]]:
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
        path = join(directory, index_name)  # beside its data file (an external one too)
        written.append(path)
        self.file_io.write_bytes(path, index)
        return None, (index_name,)

    def file_fields(self) -> list:
        """The columns a data file holds: the layout's, and stored row-tracking columns."""
        return self.layout.file_fields + (list(STORED_ROW_TRACKING_FIELDS) if self.row_ids else [])

    def file_table(self, rows: pa.Table) -> pa.Table:
        """`rows` laid out as a data file holds them (key copies first on primary-key tables)."""
        if not self.layout.is_key_value:
            return rows.select([f.name for f in self.file_fields()])
        columns = [rows.column(k) for k in self.layout.key_names]
        columns += [rows.column(SEQUENCE), rows.column(VALUE_KIND)]
        columns += [rows.column(f.name) for f in self.layout.value_fields]
        names = [f.name for f in self.layout.file_fields]
        return pa.Table.from_arrays(columns, names=names)

    def description(self) -> Description:
        """An empty description of one of this writer's files."""
        return Description(self.layout, self.raw_options, self.schema.id, self.write_cols, self.row_ids)


class _Pending:
    """The stream's rows not yet written, handed out in tables of bounded rows and bytes."""

    def __init__(self, chunks):
        self.chunks = iter(chunks)
        self.held: list[pa.Table] = []
        self.rows = self.bytes = 0

    def take(self, max_rows: int, max_bytes: int) -> pa.Table | None:
        """The next rows: at most `max_rows`, about `max_bytes` in memory (one row at least);
        None when the stream is done."""
        while self.rows < max_rows and self.bytes < max_bytes:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            if chunk.num_rows:
                self.held.append(chunk)
                self.rows, self.bytes = self.rows + chunk.num_rows, self.bytes + chunk.nbytes
        if not self.rows:
            return None
        table = pa.concat_tables(self.held) if len(self.held) > 1 else self.held[0]
        per_row = max(self.bytes / self.rows, 1.0)
        count = max(1, min(max_rows, int(max_bytes / per_row), self.rows))
        rest = table.slice(count)
        self.held = [rest] if rest.num_rows else []
        self.rows, self.bytes = rest.num_rows, int(per_row * rest.num_rows)
        return table.slice(0, count) if count < table.num_rows else table


class _StreamedFile:
    """A parquet data file of a stream, open while its row groups are written and described."""

    def __init__(self, writer: FileWriter, level: int, file_source: int, first_sequence: int):
        self.writer, self.level, self.file_source = writer, level, file_source
        self.first_sequence = first_sequence  # of its first row, if the rows carry no sequence numbers
        self.name, self.path, self.uri = writer.new_location()
        self.description = writer.description()
        self._stream = writer.file_io.open_output_stream(self.path)
        self.out = self._stream.__enter__()
        self.parquet = ParquetStream(self.out, writer.file_fields(), writer.raw_options)
        self.memory = 0  # in-memory bytes of the rows written

    @property
    def size(self) -> int:
        """Bytes written so far (whole row groups)."""
        return self.out.tell()

    def room(self, target: int) -> int:
        """In-memory bytes of rows that would about fill the file to `target` bytes, at the
        compression of its rows so far (none yet: one byte on disk per byte in memory)."""
        ratio = self.size / self.memory if self.memory else 1.0
        return max(1, int((target - self.size) / max(ratio, 1e-6)))

    def write(self, rows: pa.Table) -> None:
        self.memory += rows.nbytes
        file_table = self.writer.file_table(rows)
        if rows.num_rows < PARALLEL_STATS_ROWS:
            self.parquet.write(file_table)
            self.description.add(rows, file_table)
            return
        with ThreadPoolExecutor(max_workers=1) as pool:  # stats while the row group is encoded
            described = pool.submit(self.description.add, rows, file_table)
            self.parquet.write(file_table)
            described.result()

    def close(self) -> DataFileMeta:
        try:
            self.parquet.close()
            size = self.out.tell()
        except BaseException as exc:
            self._stream.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._stream.__exit__(None, None, None)
        meta = self.description.meta(self.name, size, self.level, self.file_source, self.first_sequence)
        return replace(meta, external_path=self.uri) if self.uri is not None else meta

    def abort(self) -> None:
        """Close and delete the partial file (its own error is the one to report)."""
        self.parquet.abort()
        try:
            self._stream.__exit__(None, None, None)
        except Exception:  # noqa: BLE001
            pass
        self.writer.file_io.delete(self.path)


def relative_bucket(bucket_path: str, schema: TableSchema) -> str:
    """A bucket directory relative to the table (`[<data dir>/]<partition>/bucket-<n>`), as
    external paths repeat it under their roots."""
    directory = (schema.options.get("data-file.path-directory") or "").strip("/")
    depth = len(schema.partition_keys) + 1 + (len(directory.split("/")) if directory else 0)
    return "/".join(bucket_path.rstrip("/").split("/")[-depth:])


def file_paths(file_io: FileIO, bucket_path: str, meta: DataFileMeta) -> list[str]:
    """Where a data file and its extra files live: its bucket directory, or beside its
    `_EXTERNAL_PATH`."""
    main = file_io.native(meta.external_path) if meta.external_path else join(bucket_path, meta.file_name)
    return [main, *(join(parent(main), extra) for extra in meta.extra_files)]
