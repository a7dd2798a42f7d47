"""Avro object-container files (manifests and other metadata), via fastavro.

- `write_avro` / `read_avro` turn a list of record dicts into file bytes and back.
- `write_avro_rolling` splits a long record list into several files the way Java's manifest
  writer rolls: every 1000 records it checks the bytes flushed so far against a target size.
- `avro_codec` maps a Paimon `manifest.compression` value to an Avro codec name.

The `zstandard` codec is served by the `zstandard` package when fastavro has no zstd library of
its own (fastavro >= 1.10 looks for `backports.zstd` / `compression.zstd` only).
"""

from __future__ import annotations

import io
import json

import fastavro
import fastavro.read
import fastavro.write
import zstandard

from tarn.errors import CorruptFile, InvalidOption

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


def _install_zstandard_codec() -> None:
    """Serve Avro's `zstandard` codec with the `zstandard` package if fastavro lacks one.

    The block framing of `zstandard` (long length + payload) is the same as `null`'s, so the
    `null` block functions do the framing and only the payload is (de)compressed here.
    """
    readers = fastavro.read.BLOCK_READERS
    writers = fastavro.write._write.BLOCK_WRITERS
    try:  # a working built-in zstd codec needs nothing from us
        writers["zstandard"](io.BytesIO(), b"", None)
        return
    except ValueError:
        pass
    null_read, null_write = readers["null"], writers["null"]

    def read_block(fo):
        payload = null_read(fo).read()  # fastavro's block readers return a BytesIO
        decompressor = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
        return io.BytesIO(decompressor.decompress(payload))

    def write_block(fo, block_bytes, compression_level):
        level = 3 if compression_level is None else compression_level
        null_write(fo, zstandard.ZstdCompressor(level=level).compress(block_bytes), compression_level)

    readers["zstandard"] = read_block
    writers["zstandard"] = write_block


_install_zstandard_codec()

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
        files.append((out.getvalue(), end - start))
        start = end
    return files


def read_avro(data: bytes, name_for_errors: str, logical_types: bool = True) -> list[dict]:
    """All records of an Avro container file; `CorruptFile` naming the file if unreadable.

    With `logical_types` timestamps come back as aware datetimes (and a timestamp outside
    Python's datetime range makes the file be read again without them); without, every value
    comes back as its plain Avro type (e.g. `timestamp-millis` as the long), which is faster.
    """
    try:
        return _read_records(data, logical_types)
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
    schema = json.loads(head["meta"]["avro.schema"])
    head["meta"]["avro.schema"] = json.dumps(_without_logical_types(schema)).encode()
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.read.HEADER_SCHEMA, head)
    return out.getvalue() + data[fo.tell():]


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

