"""Statistics files (`<table>/statistics/stat-<uuid>-<n>`, FORMAT.md section 9): written once
under a fresh name, read by the name a snapshot's `statistics` field gives.

Paimon 1.0 named them `stats-<uuid>-<n>`; readers never build a name, they follow the
snapshot, so both read the same. Files never change once written, so what `schema_id_of` read
is kept, and only their existence is checked again (the committer asks on every commit while a
snapshot carries statistics).
"""

from __future__ import annotations

import uuid

from tarn import paths
from tarn.errors import CorruptFile, FileMissing
from tarn.fs import FileIO, join
from tarn.meta.statistics import Statistics
from tarn.store.cache import ByteCache

STAT_PREFIX = "stat-"
LEGACY_STAT_PREFIX = "stats-"  # Paimon 1.0

_SCHEMA_IDS_LIMIT = 1024
_SCHEMA_IDS = ByteCache(_SCHEMA_IDS_LIMIT)  # (root, file name) -> schemaId, each charged 1


class StatisticsFiles:
    """The statistics files of the table at `root`."""

    def __init__(self, file_io: FileIO, root: str, table_name: str = ""):
        self.file_io = file_io
        self.root = root.rstrip("/")
        self.table_name = table_name or self.root
        self.dir = join(self.root, paths.STATISTICS_DIR)

    def path(self, name: str) -> str:
        return join(self.dir, name)

    @staticmethod
    def new_name() -> str:
        return f"{STAT_PREFIX}{uuid.uuid4()}-0"

    def write(self, stats: Statistics) -> str:
        """Write `stats` under a new name; returns the name (what a snapshot records)."""
        name = self.new_name()
        self.file_io.write_bytes(self.path(name), stats.to_json().encode("utf-8"))
        self._remember(name, stats.schema_id)
        return name

    def read(self, name: str) -> Statistics:
        """The file's statistics (min/max as text); FileMissing or CorruptFile naming the file
        and the table when it is gone or unreadable."""
        path = self.path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileMissing:
            raise FileMissing(f"table {self.table_name}: statistics file {path} does not exist (deleted by "
                              "hand or by another tool); run analyze() again") from None
        try:
            stats = Statistics.from_json(data, path)
        except CorruptFile as exc:
            raise CorruptFile(f"table {self.table_name}: {exc}") from None
        self._remember(name, stats.schema_id)
        return stats

    def schema_id_of(self, name: str) -> int | None:
        """The `schemaId` of a statistics file, None when it cannot be read."""
        key = (self.root, name)
        known = _SCHEMA_IDS.get(key)
        if known is not None and self.file_io.exists(self.path(name)):
            return known
        try:
            return self.read(name).schema_id
        except (FileMissing, CorruptFile):
            return None

    def delete(self, name: str) -> None:
        self.file_io.delete(self.path(name))

    def _remember(self, name: str, schema_id: int) -> None:
        _SCHEMA_IDS.put((self.root, name), schema_id, 1)
