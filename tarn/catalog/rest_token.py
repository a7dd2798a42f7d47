"""Data tokens: the storage credentials a REST catalog server hands out per table
(`GET .../tables/{table}/token`, with an expiry), when the catalog option
`data-token.enabled` is true. A table opened with one reads and writes through a `TokenFileIO`,
which asks for a new token before the old one expires, as Paimon's RESTTokenFileIO does.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from tarn import s3
from tarn.fs import FileIO, file_io_for

log = logging.getLogger(__name__)

SAFE_MILLIS = 3_600_000  # Paimon refreshes a token with less than an hour left ...
# ... or, for a token that lives shorter than two hours, once half its life is gone
HADOOP_S3 = "fs.s3a."  # Paimon's S3 file system takes its keys in Hadoop's spelling too


@dataclass
class DataToken:
    """One token: storage options (`s3.access-key`, ...) and when they stop working."""

    options: dict[str, str]
    expires_at_millis: int
    fetched_at_millis: int = field(default_factory=lambda: int(time.time() * 1000))

    def needs_refresh(self, now_millis: int) -> bool:
        lifetime = self.expires_at_millis - self.fetched_at_millis
        margin = min(SAFE_MILLIS, max(lifetime, 0) // 2)
        return self.expires_at_millis - now_millis <= margin


def storage_options(token: dict[str, str], catalog_options: dict[str, str]) -> dict[str, str]:
    """The S3 options a FileIO is built with: the catalog's own `s3.*` options with the token's
    laid over them (the token wins, as Paimon merges them); keys of other stores are left out."""
    merged = {}
    for source in (catalog_options, token):
        for key, value in source.items():
            name = _s3_name(str(key))
            if name is not None and value is not None:
                merged[name] = str(value)
    return merged


def _s3_name(key: str) -> str | None:
    lowered = key.lower()
    if lowered.startswith(HADOOP_S3):
        lowered = "s3." + lowered[len(HADOOP_S3):].replace(".", "-")
    lowered = s3.ALIASES.get(lowered, lowered)
    return lowered if lowered in s3.OPTIONS else None


def path_inside(uri: str) -> str:
    """The path a FileIO for `uri` takes (`bucket/key` for `s3://bucket/key`), found without
    credentials."""
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else "file"
    if scheme in s3.SCHEMES:
        return s3.split_uri(uri)
    if scheme == "file":
        return os.path.abspath(uri[len("file://"):] if uri.startswith("file://") else uri)
    return file_io_for(uri)[1]


class TokenFileIO(FileIO):
    """A FileIO for the table at `uri` whose credentials come from `fetch()` (a DataToken),
    fetched on first use and again before they expire. It pickles with its current token
    (an executor does not ask the server again until it expires)."""

    def __init__(self, uri: str, fetch: Callable[[], DataToken], catalog_options: dict[str, str]):
        self.uri = uri
        self.root = path_inside(uri)
        self.fetch = fetch
        self.catalog_options = catalog_options
        self.token: DataToken | None = None
        self._inner: FileIO | None = None
        self._refreshing = threading.Lock()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_refreshing")
        state["_inner"] = None  # built again from the token in the other process
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._refreshing = threading.Lock()

    def __repr__(self) -> str:
        expires = self.token.expires_at_millis if self.token else None
        return f"TokenFileIO({self.root!r}, expires_at_millis={expires})"

    def __eq__(self, other) -> bool:
        return self is other

    __hash__ = object.__hash__

    def current(self) -> FileIO:
        """The FileIO of a token that is still good (a new token is fetched when needed)."""
        now = int(time.time() * 1000)
        if self._inner is None or self.token is None or self.token.needs_refresh(now):
            with self._refreshing:
                if self._inner is None or self.token is None or self.token.needs_refresh(now):
                    self._renew(now)
        return self._inner

    def _renew(self, now: int) -> None:
        if self.token is None or self.token.needs_refresh(now):
            self.token = self.fetch()
            log.info("table at %s: data token fetched, expires at %d", self.root, self.token.expires_at_millis)
        options = storage_options(self.token.options, self.catalog_options)
        self._inner = file_io_for(self.uri, options or None)[0]

    @property
    def fs(self):
        return self.current().fs

    @property
    def conditional(self):
        return self.current().conditional

    @property
    def lock(self):
        return None
