"""One byte-bounded cache for what tarn reads from immutable files (LevelDB's shared table
cache is the model): decoded deletion-vector index files, opened data-file index heads, the
sorted keys lookup compaction probes. Each is an LRU map whose values are charged the bytes
they hold; past its capacity the least recently used values go (to `on_evict`, which may keep
them elsewhere, such as on local disk)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

Evicted = Callable[[Hashable, Any, int], None]  # (key, value, its size)


class ByteCache:
    """A thread-safe LRU map bounded by the bytes its values are charged (`put(key, value,
    size)`). A value larger than the whole capacity is not kept (it goes to `on_evict` at
    once, the others stay). `on_evict` runs under the cache's lock: it must not call back
    into this cache."""

    def __init__(self, capacity: int, on_evict: Evicted | None = None):
        self.capacity = capacity
        self.used = 0
        self.on_evict = on_evict
        self._entries: OrderedDict[Hashable, list] = OrderedDict()  # key -> [value, size]
        self._lock = threading.Lock()

    def get(self, key: Hashable, default=None):
        """The value (now the most recently used), or `default`."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return default
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value, size: int) -> None:
        """Keep `value` charged `size` bytes (replacing the key's value), then evict the least
        recently used values until the cache fits its capacity again."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.used -= old[1]
            if size > self.capacity:
                self._evicted(key, value, size)
                return
            self._entries[key] = [value, size]
            self.used += size
            self._fit()

    def setdefault(self, key: Hashable, value, size: int):
        """The key's value if it has one, else `put` this one; returns the value kept."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                return found[0]
        self.put(key, value, size)
        return value

    def charge(self, key: Hashable, extra: int) -> None:
        """The key's value now holds `extra` more bytes (read lazily after `put`); the cache
        fits itself to its capacity at the next `put` or `resize`."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                found[1] += extra
                self.used += extra

    def pop(self, key: Hashable, default=None):
        with self._lock:
            found = self._entries.pop(key, None)
            if found is None:
                return default
            self.used -= found[1]
            return found[0]

    def resize(self, capacity: int) -> None:
        with self._lock:
            self.capacity = capacity
            self._fit()

    def clear(self) -> None:
        """Drop every value (without `on_evict`)."""
        with self._lock:
            self._entries.clear()
            self.used = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def _fit(self) -> None:
        while self.used > self.capacity and self._entries:
            key, (value, size) = self._entries.popitem(last=False)
            self.used -= size
            self._evicted(key, value, size)

    def _evicted(self, key, value, size: int) -> None:
        if self.on_evict is not None:
            self.on_evict(key, value, size)
