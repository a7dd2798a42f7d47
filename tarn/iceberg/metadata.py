"""The Iceberg table metadata file `v<N>.metadata.json` and `version-hint.text`, as Java's
IcebergMetadata writes them (keys in its order), kept as the JSON dict it is.

Keys: `format-version`, `table-uuid`, `location`, `last-sequence-number` (the Paimon snapshot
id), `last-updated-ms`, `last-column-id`, `schemas` (one per Paimon schema id), `current-schema-id`,
`partition-specs` (one spec, id 0, identity fields 1000, 1001, ...), `default-spec-id`,
`last-partition-id` (999 when unpartitioned), `sort-orders` (one empty order, id 0),
`default-sort-order-id`, `snapshots`, `current-snapshot-id`, `properties` ({}), `refs` (Paimon
tags on retained snapshots, as Iceberg tags). An Iceberg snapshot's id and sequence number are
the Paimon snapshot id; its parent is the previous id.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict

from tarn.errors import CorruptFile
from tarn.fs import FileIO, join

VERSION_HINT = "version-hint.text"
_VERSION_FILE = re.compile(r"v(\d+)\.metadata\.json")
_MAX_LONG = 2**63 - 1


def version_path(directory: str, version: int) -> str:
    return join(directory, f"v{version}.metadata.json")


def versions(file_io: FileIO, directory: str) -> list[int]:
    """The versions of the metadata files in `directory`, ascending."""
    found = (_VERSION_FILE.fullmatch(name) for name in file_io.list_dir(directory))
    return sorted(int(m.group(1)) for m in found if m)


# A metadata file lists every retained snapshot, so it grows with the table's recent history:
# the last files this process read or wrote are kept parsed (returned again only for the very
# same bytes; callers never change what they get), and the JSON text of the last snapshot lists
# it wrote, so the next version splices its list out of its base's text instead of encoding
# every snapshot again.
_PARSED: OrderedDict[str, tuple[bytes, dict]] = OrderedDict()
_LISTINGS: OrderedDict[int, tuple[list, bytes, list[int]]] = OrderedDict()  # id(list): (list, text, starts)
_PARSED_KEPT, _LISTINGS_KEPT = 16, 16
_cache_guard = threading.Lock()


def read_metadata(file_io: FileIO, path: str) -> dict:
    """The metadata file at `path`, parsed (not to be changed by the caller)."""
    data = file_io.read_bytes(path)
    with _cache_guard:
        kept = _PARSED.get(path)
    if kept is not None and kept[0] == data:
        return kept[1]
    try:
        metadata = json.loads(data)
    except ValueError as exc:
        raise CorruptFile(f"Iceberg metadata {path} is not JSON: {exc}") from None
    remember(path, data, metadata)
    return metadata


def remember(path: str, data: bytes, metadata: dict) -> None:
    """Keep a metadata file's bytes with what they parse to."""
    with _cache_guard:
        _PARSED[path] = (data, metadata)
        _PARSED.move_to_end(path)
        while len(_PARSED) > _PARSED_KEPT:
            _PARSED.popitem(last=False)


def read_hint(file_io: FileIO, directory: str) -> int | None:
    """The version `version-hint.text` names (None: no hint, or not a number)."""
    path = join(directory, VERSION_HINT)
    if not file_io.exists(path):
        return None
    try:
        return int(file_io.read_bytes(path).decode().strip())
    except (ValueError, UnicodeDecodeError):
        return None


def partition_spec(fields: list[dict]) -> dict:
    """Spec 0 of identity fields over the partition columns (Iceberg schema fields)."""
    return {"spec-id": 0, "fields": [{"name": f["name"], "transform": "identity", "source-id": f["id"],
                                      "field-id": 1000 + i} for i, f in enumerate(fields)]}


def snapshot_json(snapshot_id: int, summary: dict, manifest_list: str, schema_id: int) -> dict:
    out = {"sequence-number": snapshot_id, "snapshot-id": snapshot_id}
    if snapshot_id > 1:
        out["parent-snapshot-id"] = snapshot_id - 1
    out.update({"timestamp-ms": int(time.time() * 1000), "summary": summary, "manifest-list": manifest_list,
                "schema-id": schema_id})
    return out


def table_metadata(format_version: int, table_uuid: str, location: str, snapshot_id: int, last_column_id: int,
                   schemas: list[dict], schema_id: int, specs: list[dict], last_partition_id: int,
                   snapshots: list[dict], refs: dict) -> dict:
    return {"format-version": format_version, "table-uuid": table_uuid, "location": location,
            "last-sequence-number": snapshot_id, "last-updated-ms": int(time.time() * 1000),
            "last-column-id": last_column_id, "schemas": schemas, "current-schema-id": schema_id,
            "partition-specs": specs, "default-spec-id": 0, "last-partition-id": last_partition_id,
            "sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0,
            "snapshots": snapshots, "current-snapshot-id": snapshot_id, "properties": {}, "refs": refs}


def tag_ref(snapshot_id: int) -> dict:
    """An Iceberg tag ref (Paimon expires tags itself: no age limit)."""
    return {"snapshot-id": snapshot_id, "type": "tag", "max-ref-age-ms": _MAX_LONG}


def current_snapshot(metadata: dict) -> dict:
    wanted = metadata.get("current-snapshot-id")
    for snapshot in reversed(metadata.get("snapshots") or ()):  # the current one is the last, as written
        if snapshot["snapshot-id"] == wanted:
            return snapshot
    raise CorruptFile(f"Iceberg metadata has no snapshot {wanted} (its current-snapshot-id)")


def to_json(metadata: dict, base: dict | None = None) -> bytes:
    """The metadata as compact JSON, keys in their order. When its snapshots are the tail of
    `base`'s (the version it follows) plus new ones, the text of the kept ones is reused."""
    snapshots = metadata["snapshots"]
    listing = _spliced(snapshots, base) or _listed(snapshots)
    with _cache_guard:
        _LISTINGS[id(snapshots)] = (snapshots, *listing)
        while len(_LISTINGS) > _LISTINGS_KEPT:
            _LISTINGS.popitem(last=False)
    head = json.dumps(dict(metadata, snapshots=[]), separators=(",", ":")).encode()
    # quotes inside JSON strings are escaped, so the key appears once, as the key itself
    before, after = head.split(b'"snapshots":[]', 1)
    return b"".join((before, b'"snapshots":[', listing[0], b"]", after))


def _listed(snapshots: list[dict]) -> tuple[bytes, list[int]]:
    """The snapshots' JSON texts joined by commas, and where each one starts."""
    texts = [_text(s) for s in snapshots]
    starts, at = [], 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    return b",".join(texts), starts


def _spliced(snapshots: list[dict], base: dict | None) -> tuple[bytes, list[int]] | None:
    """The listing of `snapshots` cut from the kept listing of `base`'s snapshots, when they
    are a tail of those (the very same dicts) followed by new ones; else None."""
    if base is None:
        return None
    with _cache_guard:
        kept = _LISTINGS.get(id(base["snapshots"]))
    if kept is None or kept[0] is not base["snapshots"]:
        return None
    old, text, starts = kept
    # the kept ones end with base's last snapshot: look for it from the end
    tail = next((i + 1 for i in range(len(snapshots) - 1, -1, -1) if old and snapshots[i] is old[-1]), 0)
    first = len(old) - tail
    if first < 0 or not all(a is b for a, b in zip(snapshots[:tail], old[first:])):
        return None
    offset = starts[first] if first < len(old) else len(text)
    pieces, new_starts, at = [text[offset:]], [s - offset for s in starts[first:]], len(text) - offset
    for snapshot in snapshots[tail:]:
        if at:
            pieces.append(b",")
            at += 1
        new_starts.append(at)
        pieces.append(_text(snapshot))
        at += len(pieces[-1])
    return b"".join(pieces), new_starts


def _text(snapshot: dict) -> bytes:
    return json.dumps(snapshot, separators=(",", ":")).encode()
