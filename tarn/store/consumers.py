"""Consumer files `<table>/consumer/consumer-<id>` (FORMAT.md section 10).

A consumer is `{"nextSnapshot" : <long>}`, written by plain overwrite: the first snapshot a
streaming reader with that id has not consumed yet. Snapshot expiration keeps every snapshot
from the smallest `nextSnapshot` on.
"""

from __future__ import annotations

import json

from tarn import paths
from tarn.errors import CorruptFile, FileMissing
from tarn.fs import FileIO, join


class ConsumerStore:
    def __init__(self, file_io: FileIO, root: str):
        self.file_io = file_io
        self.root = root
        self.dir = join(root, paths.CONSUMER_DIR)

    def path(self, consumer_id: str) -> str:
        return paths.consumer_path(self.root, consumer_id)

    def ids(self) -> list[str]:
        prefix = paths.CONSUMER_PREFIX
        return sorted(n[len(prefix):] for n in self.file_io.list_dir(self.dir)
                      if n.startswith(prefix) and len(n) > len(prefix))

    def next_snapshot(self, consumer_id: str) -> int | None:
        """The consumer's next snapshot id; None if it does not exist (or is being rewritten)."""
        path = self.path(consumer_id)
        try:
            obj = json.loads(self.file_io.read_bytes(path))
        except (CorruptFile, FileMissing):
            return None
        except (ValueError, UnicodeDecodeError):
            return None  # half-written by a concurrent overwrite; Java retries and skips
        value = obj.get("nextSnapshot") if isinstance(obj, dict) else None
        return int(value) if isinstance(value, int) else None

    def consumers(self) -> dict[str, int]:
        """{consumer id: next snapshot id}."""
        found = {cid: self.next_snapshot(cid) for cid in self.ids()}
        return {cid: n for cid, n in found.items() if n is not None}

    def min_next_snapshot(self) -> int | None:
        return min(self.consumers().values(), default=None)

    def write(self, consumer_id: str, next_snapshot: int) -> None:
        text = json.dumps({"nextSnapshot": int(next_snapshot)}, indent=2, separators=(",", " : "))
        self.file_io.write_bytes(self.path(consumer_id), text.encode())

    def delete(self, consumer_id: str) -> None:
        self.file_io.delete(self.path(consumer_id))

    def expire(self, older_than_ms: int) -> list[str]:
        """Delete consumers whose file was last written before `older_than_ms` (epoch millis)."""
        expired = []
        for info in self.file_io.list_files(self.dir, recursive=False):
            name = info.path.rsplit("/", 1)[-1]
            if not name.startswith(paths.CONSUMER_PREFIX) or info.mtime_ns is None:
                continue
            if info.mtime_ns // 1_000_000 < older_than_ms:
                self.file_io.delete(info.path)
                expired.append(name[len(paths.CONSUMER_PREFIX):])
        return sorted(expired)
