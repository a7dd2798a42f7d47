"""Iceberg metadata beside a tarn table, so that every Iceberg reader (pyiceberg, polars,
DuckDB, Trino, Spark's Iceberg reader) reads it: what Java Paimon writes when
`metadata.iceberg.storage` is `table-location` or `hadoop-catalog` (paimon-core
org/apache/paimon/iceberg/).

- `config.py`: the `metadata.iceberg.*` options and where the metadata goes;
- `schema.py`: Paimon types as Iceberg types, and the columns that cannot be published;
- `conversions.py`: Iceberg's single-value binary form (bounds) and partition values;
- `manifest.py`: manifests and manifest lists (Avro, the spec's field ids);
- `metadata.py`: `v<N>.metadata.json` and `version-hint.text`;
- `publish.py`: one snapshot's metadata, incrementally or afresh, atomically, with expiry;
- `callback.py`: the commit callback that publishes every landed snapshot (registered on import).

Version N of the metadata is Paimon snapshot N (Iceberg snapshot id and sequence number N).
"""

from tarn.iceberg.callback import check_iceberg, publish_landed
from tarn.iceberg.config import IcebergConfig, config_of, enabled, metadata_dir
from tarn.iceberg.publish import publish

__all__ = ["IcebergConfig", "check_iceberg", "config_of", "enabled", "metadata_dir", "publish", "publish_landed"]
