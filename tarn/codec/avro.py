"""Avro object-container files (manifests and other metadata), via fastavro.

- `write_avro` / `read_avro` turn a list of record dicts into file bytes and back.
- `write_avro_rolling` splits a long record list into several files the way Java's manifest
  writer rolls: every 1000 records it checks the bytes flushed so far against a target size.
- `avro_codec` maps a Paimon `manifest.compression` value to an Avro codec name.

The `zstandard` codec (Paimon's default for manifests) is fastavro's own: it needs `compression.zstd`
(Python 3.14) or `backports.zstd`, which the `fastavro[zstandard]` dependency brings; without either,
writing and reading such files raise `MissingDependency`.
"""

from __future__ import annotations

import functools
import io
import json
from contextlib import contextmanager

import fastavro
import fastavro.read
import fastavro.write

from tarn.errors import CorruptFile, InvalidOption, MissingDependency

# Java's DataFileWriter flushes a block once ~64000 uncompressed bytes are buffered.
SYNC_INTERVAL = 64000
# Java's rolling writers check the target size every this many records.
ROLL_CHECK_RECORDS = 1000

_AVRO_CODECS = {"null", "deflate", "snappy", "bzip2", "xz", "zstandard"}
_CODEC_ALIASES = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}


def avro_codec(compression: str) -> str:
    """The Avro codec for a `manifest.compression` value (`zstd` -> `zstandard`, ...)."""
    name = compression.strip().lower()
    name = _CODEC_ALIASES.get(name, name)
    if name not in _AVRO_CODECS:
        raise InvalidOption(
            f"manifest.compression: unsupported Avro codec {compression!r} "
            f"(expected one of zstd, {', '.join(sorted(_AVRO_CODECS))})"
        )
    return name


@contextmanager
def codec_libraries(name_for_errors: str):
    """Turn fastavro's "codec ... you need to install ..." `ValueError` into `MissingDependency`."""
    try:
        yield
    except ValueError as exc:
        if "you need to install" not in str(exc):
            raise
        raise MissingDependency(
            f"Avro file {name_for_errors}: {exc} (pip install 'fastavro[zstandard]' for Paimon's zstd manifests)"
        ) from exc


# Parsed schemas, keyed by the id of the (module-constant) schema dict it came from.
_PARSED: dict[int, tuple[dict, dict]] = {}


def parsed_schema(schema: dict) -> dict:
    """fastavro's parsed form of `schema`, parsed once per schema object."""
    hit = _PARSED.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = (schema, fastavro.parse_schema(schema))
        _PARSED[id(schema)] = hit
    return hit[1]


def write_avro(records: list[dict], schema: dict, codec: str = "zstandard", level: int | None = 1) -> bytes:
    """One Avro container file holding `records`."""
    out = io.BytesIO()
    with codec_libraries("being written"):
        fastavro.writer(
            out,
            parsed_schema(schema),
            records,
            codec=codec,
            codec_compression_level=level,
            sync_interval=SYNC_INTERVAL,
            validator=False,
        )
    return out.getvalue()


def write_avro_rolling(
    records: list[dict], schema: dict, target_size: int, codec: str = "zstandard", level: int | None = 1
) -> list[tuple[bytes, int]]:
    """Files of `records` rolled once a file reaches `target_size`, as (bytes, record count).

    Like Java's rolling writer the size is checked every 1000 records against the bytes already
    flushed; an empty `records` gives no file.
    """
    files: list[tuple[bytes, int]] = []
    start = 0
    while start < len(records):
        with codec_libraries("being written"):
            out, end = _write_rolled_file(records, schema, start, target_size, codec, level)
        files.append((out, end - start))
        start = end
    return files


def _write_rolled_file(records, schema, start, target_size, codec, level) -> tuple[bytes, int]:
    """One rolled file of `records` from `start`: its bytes and the index after its last record."""
    out = io.BytesIO()
    writer = fastavro.write.Writer(
        out,
        parsed_schema(schema),
        codec=codec,
        compression_level=level,
        sync_interval=SYNC_INTERVAL,
        validator=False,
    )
    end = start
    while end < len(records):
        stop = min(end + ROLL_CHECK_RECORDS - (end % ROLL_CHECK_RECORDS), len(records))
        for record in records[end:stop]:
            writer.write(record)
        end = stop
        if end % ROLL_CHECK_RECORDS == 0 and out.tell() >= target_size:
            break
    writer.flush()
    return out.getvalue(), end


def read_avro(data: bytes, name_for_errors: str, logical_types: bool = True) -> list[dict]:
    """All records of an Avro container file; `CorruptFile` naming the file if unreadable.

    With `logical_types` timestamps come back as aware datetimes (and a timestamp outside
    Python's datetime range makes the file be read again without them); without, every value
    comes back as its plain Avro type (e.g. `timestamp-millis` as the long), which is faster.
    """
    try:
        with codec_libraries(name_for_errors):
            return _read_records(data, logical_types)
    except MissingDependency:
        raise
    except (ValueError, OverflowError) as exc:
        if logical_types:
            return read_avro(data, name_for_errors, logical_types=False)
        raise CorruptFile(f"cannot read Avro file {name_for_errors}: {exc}") from exc
    except Exception as exc:  # fastavro raises many kinds (EOFError, KeyError, ...)
        raise CorruptFile(f"cannot read Avro file {name_for_errors}: {exc}") from exc


def _read_records(data: bytes, logical_types: bool) -> list[dict]:
    if not logical_types:
        data = _strip_logical_types(data)
    return list(fastavro.reader(io.BytesIO(data)))


def _strip_logical_types(data: bytes) -> bytes:
    """The same container file with `logicalType` removed from its header schema."""
    fo = io.BytesIO(data)
    head = fastavro.schemaless_reader(fo, fastavro.read.HEADER_SCHEMA)
    head["meta"]["avro.schema"] = _plain_schema(head["meta"]["avro.schema"])
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.read.HEADER_SCHEMA, head)
    return out.getvalue() + data[fo.tell():]


@functools.lru_cache(maxsize=64)
def _plain_schema(schema_json: bytes) -> bytes:
    """The header's schema JSON without `logicalType`s (a table's manifests share a few
    schemas: each is converted once, not once per manifest read)."""
    return json.dumps(_without_logical_types(json.loads(schema_json))).encode()


def _without_logical_types(schema):
    """`schema` with every `logicalType` annotation dropped."""
    if isinstance(schema, list):
        return [_without_logical_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if "fields" in schema:
        out["fields"] = [dict(f, type=_without_logical_types(f["type"])) for f in schema["fields"]]
    return out

