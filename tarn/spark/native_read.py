"""`tarn.spark.read`: Spark's own parquet reader where a table needs no merge.

A Python data source hands every row from a Python worker to the JVM; for 5M rows that alone
costs about 1.5x Spark's native parquet scan. Many reads need no tarn code per row, though:
append tables, and primary-key tables whose buckets are one compacted file without deletes
(tarn plans those splits as raw-convertible). Their data files are plain parquet holding the
table's columns by name (plus Paimon's system columns, which are dropped), so Spark can scan
them itself, with its vectorised reader, filter pushdown and column pruning.

`read` plans the table on the driver with tarn (time travel options included) and uses the
native scan when every planned split is raw-convertible, every file is parquet written with
the schema being read, and Spark reads the files' columns as the types tarn declares; otherwise
it returns `spark.read.format("tarn")`, which is always correct.
"""

from __future__ import annotations

import os

from tarn.errors import InvalidOption
from tarn.fs import join
from tarn.scan.planner import Split
from tarn.spark.target import READ_OPTIONS, ReadTarget

# read options that need the tarn source itself
PYTHON_ONLY = ("read.changelog",)


def native_paths(target: ReadTarget) -> list[str] | None:
    """The data files a native scan reads for `target`, or None when it cannot."""
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
    paths = []
    for split in splits:
        if not split.raw_convertible or split.deletion_files:
            return None  # deletion vectors: the tarn source drops the deleted rows
        for meta in split.files:
            if meta.schema_id != schema_id or not meta.file_name.endswith(".parquet"):
                return None
            paths.append(meta.external_path or join(split.bucket_path, meta.file_name))
    return paths or None


def _same_types(native, declared) -> bool:
    by_name = {f.name: f.dataType for f in native.fields}
    return all(by_name.get(f.name) == f.dataType for f in declared.fields)


def read(spark, table_path: str, **options):
    """A DataFrame of the table at `table_path` (read options as for `spark.read.format("tarn")`):
    Spark's native parquet scan of the data files when no row needs merging, else the tarn
    source. Both give the same rows and column types."""
    from tarn.spark.session import register

    register(spark)
    text_options = {str(k).lower(): str(v) for k, v in options.items()}
    if "path" in text_options:
        raise InvalidOption("tarn.spark.read takes the table path as its argument, not option 'path'")
    path = table_path if "://" in table_path else os.path.abspath(table_path)
    reader = spark.read.format("tarn")
    for key, value in text_options.items():
        reader = reader.option(key, value)
    target = ReadTarget.of({**text_options, "path": path})
    paths = native_paths(target)
    if paths is None:
        return reader.load(path)
    declared = target.spark_schema()
    native = spark.read.parquet(paths[0]).schema
    if not _same_types(native, declared):
        return reader.load(path)
    frame = spark.read.schema(native).parquet(*paths)
    return frame.select(*[f"`{f.name}`" for f in declared.fields])

