"""Spark's own partition pruning for the scans `tarn.spark.read` makes.

A native read names the snapshot's data files one by one (a directory of a Paimon table also
holds files of older snapshots), and Spark infers no partitions from paths like
`day=3/bucket-0/data-...parquet`. So Spark would open every file of a filtered read. Instead,
each scan is a file relation whose index carries the partitions explicitly: Spark's
InMemoryFileIndex over exactly those files, with a partition spec that gives each bucket
directory its partition values (tarn plans them from the manifests). The partition columns keep
their place in the schema and their values come from the spec, so a query's filter on them
(`tarn.spark.read(...).filter("day = '3'")`, a WHERE over an attached view, a join's dynamic
partition pruning) is a partition filter that Spark applies before listing a task: the files of
the other partitions are never opened. Column selection and the other filters reach the parquet
scan as before.

Built through the session's JVM (Spark's internal classes, stable since 3.0); a Spark Connect
session, a Spark without them, partition columns not read, or an index whose partitions do not
hold exactly the planned files, fall back to a plain scan of the files (correct, unpruned).
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)
# partition column types whose Spark literal is exactly the stored value (a timestamp's would
# pass through the session's time zone: such tables are read unpruned)
_LITERAL_TYPES = ("StringType", "VarcharType", "CharType", "ByteType", "ShortType", "IntegerType", "LongType",
                  "BooleanType", "DateType", "DecimalType", "FloatType", "DoubleType", "BinaryType")


def file_scan(spark, paths: list[str], schema, partitions: list[tuple] | None, partition_keys: list[str]):
    """A DataFrame of the parquet files `paths` as columns `schema`; `partitions[i]` holds the
    values (in the order of `partition_keys`) of the partition of `paths[i]`, or is None."""
    by_name = {f.name: f for f in schema.fields}
    shown = [k for k in partition_keys if k in by_name] if partitions else []
    if any(type(by_name[k].dataType).__name__ not in _LITERAL_TYPES for k in shown):
        shown = []
    if shown and getattr(spark, "_jsparkSession", None) is not None:
        try:
            frame = _partitioned(spark, paths, schema, partitions, partition_keys, shown)
            if frame is not None:
                return frame
        except Exception as exc:  # noqa: BLE001 - another Spark's internals: the plain scan is correct
            log.info("tarn.spark.read: partitioned scan not available (%s); reading the files unpruned", exc)
    return spark.read.schema(schema).parquet(*paths)


def _partitioned(spark, paths, schema, partitions, partition_keys, shown):
    """The partition-aware scan, or None when its index does not hold exactly `paths`. Every
    JVM call is a round trip through py4j (about 0.3 ms): classes are looked up once, and all
    partitions' values come from one folded expression."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    jvm, session = spark._jvm, spark._jsparkSession
    datasources = jvm.org.apache.spark.sql.execution.datasources
    path_class, option = jvm.org.apache.hadoop.fs.Path, jvm.scala.Option
    by_name = {f.name: f for f in schema.fields}
    partition_schema = session.parseDataType(StructType([by_name[k] for k in shown]).json())
    positions = [partition_keys.index(k) for k in shown]
    chosen = [tuple(values[i] for i in positions) for values in partitions]
    distinct = list(dict.fromkeys(chosen))
    directories: dict[str, tuple] = {}
    for path, values in zip(paths, chosen):
        if directories.setdefault(os.path.dirname(path), values) != values:
            return None  # one directory, two partitions: not a Paimon layout
    rows = dict(zip(distinct, _partition_rows(session, [[(k, v) for k, v in zip(shown, values)]
                                                            for values in distinct], by_name)))
    spec_paths = [datasources.PartitionPath.apply(rows[values], path_class(_uri(d)))
                  for d, values in directories.items()]
    spec = datasources.PartitionSpec.apply(partition_schema, _seq(jvm, spec_paths))
    no_options = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(jvm.java.util.HashMap())
    index = datasources.InMemoryFileIndex(
        session, _seq(jvm, [path_class(_uri(p)) for p in paths]), no_options, option.apply(None),
        datasources.FileStatusCache.getOrCreate(session), option.apply(spec), option.apply(None))
    first = next(iter(directories))
    if not _lists_files(jvm, index, sum(os.path.dirname(p) == first for p in paths)):
        return None
    relation = datasources.HadoopFsRelation(index, partition_schema, session.parseDataType(schema.json()),
                                            option.apply(None), datasources.parquet.ParquetFileFormat(), no_options,
                                            session)
    return DataFrame(session.baseRelationToDataFrame(relation), spark)


def _partition_rows(session, partitions: list[list[tuple]], by_name) -> list:
    """A Catalyst row of each partition's values ([(column, value), ...] each), from one query
    `SELECT array(named_struct(...), ...)` that Spark's optimizer folds to a literal (analysed
    and folded on the driver; nothing runs)."""
    structs = ", ".join("named_struct(" + ", ".join(f"'c{i}', {literal_sql(v, by_name[k].dataType)}"
                                                    for i, (k, v) in enumerate(values)) + ")"
                        for values in partitions)
    folded = session.sql(f"SELECT array({structs}) AS partitions").queryExecution().optimizedPlan()
    array = folded.projectList().apply(0).child().value()  # not folded: an error, and the plain scan
    width = len(partitions[0])
    return [array.getStruct(i, width) for i in range(len(partitions))]


def _uri(path: str) -> str:
    """A local path as Hadoop qualifies it (the index's listing names files so)."""
    return "file:" + path if path.startswith("/") else path


def literal_sql(value, data_type) -> str:
    """A Spark SQL expression of exactly `value` as `data_type` (strings and binaries by their
    bytes in hex: no quoting to get wrong)."""
    type_text = data_type.simpleString()
    if value is None:
        return f"CAST(NULL AS {type_text})"
    name = type(data_type).__name__
    if name in ("StringType", "VarcharType", "CharType"):
        return f"CAST(X'{str(value).encode('utf-8').hex()}' AS STRING)"
    if name == "BinaryType":
        return f"X'{bytes(value).hex()}'"
    if name == "BooleanType":
        return "true" if value else "false"
    if name == "DateType":
        return f"DATE'{value.isoformat()}'"
    if name in ("FloatType", "DoubleType"):
        return f"CAST('{float(value)!r}' AS {type_text})".replace("'nan'", "'NaN'").replace(
            "'inf'", "'Infinity'").replace("'-inf'", "'-Infinity'")
    return f"CAST('{value}' AS {type_text})"  # integers and decimals: their digits


def _lists_files(jvm, index, directory_files: int) -> bool:
    """Does the index find the planned files of the first partition directory? Every
    directory is named the same way, so one found names them all right; one not found would
    read as an empty partition, so the plain scan is used instead."""
    empty = jvm.org.apache.spark.api.python.PythonUtils.toSeq(jvm.java.util.ArrayList())
    listed = index.listFiles(empty, empty)
    return listed.length() > 0 and listed.apply(0).files().length() == directory_files


def _seq(jvm, items: list):
    values = jvm.java.util.ArrayList()
    for item in items:
        values.add(item)
    return jvm.org.apache.spark.api.python.PythonUtils.toSeq(values)
