"""GEOMETRY and GEOGRAPHY columns in parquet (Paimon 2.1): WKB bytes in parquet's GEOMETRY /
GEOGRAPHY logical types, as Java's ParquetSchemaConverter writes them.

pyarrow writes those logical types for columns of the `geoarrow.wkb` extension type (its
metadata gives the CRS and, for geographies, the edges), so a file's geo columns are handed to
the parquet writer as that type: tarn registers a minimal `geoarrow.wkb` type unless another
library (geoarrow-pyarrow) already did, and uses whichever is registered. Everywhere else a
geo column is plain Arrow binary. pyarrow's writer takes spherical edges only.
"""

from __future__ import annotations

import json
import threading

import pyarrow as pa

from tarn.errors import UnsupportedFeature
from tarn.types import DEFAULT_CRS, DataType

EXTENSION = "geoarrow.wkb"
_LOCK = threading.Lock()
_REGISTERED = False


class _Wkb(pa.ExtensionType):
    """geoarrow.wkb: binary WKB with JSON metadata (crs, edges)."""

    def __init__(self, metadata: bytes = b"{}"):
        self._metadata = metadata
        super().__init__(pa.binary(), EXTENSION)

    def __arrow_ext_serialize__(self) -> bytes:
        return self._metadata

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(serialized)


def _ensure_registered() -> None:
    global _REGISTERED
    with _LOCK:
        if _REGISTERED:
            return
        try:
            pa.register_extension_type(_Wkb())
        except pa.ArrowKeyError:
            pass  # another library's geoarrow.wkb is registered: it is used
        _REGISTERED = True


def wkb_type(t: DataType, column: str) -> pa.DataType:
    """The registered `geoarrow.wkb` type for a GEOMETRY / GEOGRAPHY column."""
    if t.root == "GEOGRAPHY" and t.edges != "spherical":
        raise UnsupportedFeature(f"column '{column}': GEOGRAPHY with '{t.edges}' edges cannot be written by tarn "
                                 "(pyarrow's parquet writer takes spherical edges only); reading works")
    _ensure_registered()
    meta = {"crs": t.crs or DEFAULT_CRS}
    if t.root == "GEOGRAPHY":
        meta = {"edges": t.edges, **meta}
    field = pa.field("g", pa.binary(), metadata={b"ARROW:extension:name": EXTENSION.encode(),
                                                 b"ARROW:extension:metadata": json.dumps(meta).encode()})
    # whichever class is registered builds the type from its IPC form
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, pa.schema([field])):
        pass
    return pa.ipc.open_stream(sink.getvalue()).schema.field(0).type


def as_wkb(column, ext_type: pa.DataType):
    """A binary column as `ext_type` (its storage unchanged)."""
    if not isinstance(ext_type, pa.ExtensionType):
        return column
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    storage = [c.storage if isinstance(c.type, pa.ExtensionType) else c.cast(pa.binary()) for c in chunks]
    return pa.chunked_array([pa.ExtensionArray.from_storage(ext_type, s) for s in storage], ext_type)


__all__ = ["wkb_type", "as_wkb", "EXTENSION"]
