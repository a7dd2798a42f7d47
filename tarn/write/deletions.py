"""The deletion vectors of one bucket while a writer changes it (Java's bucketed DV maintainer).

Starts from the bucket's index file in the snapshot the writer restored (read when first
needed); compactions mark rows of upper-level files deleted (`mark`) and drop the vectors of
the files they replace (`drop`). At commit the bucket's vectors are written as one new index
file, replacing the old one (DELETE + ADD), or the old one is just deleted when no vector is
left; an untouched bucket changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from tarn.data.lookup import merge_sorted_unique, sorted_unique
from tarn.meta.manifest import DELETE, IndexManifestEntry
from tarn.store.deletion_vectors import DeletionVectorFiles


@dataclass
class BucketVectors:
    files: DeletionVectorFiles
    partition: bytes
    bucket: int
    entry: IndexManifestEntry | None  # the bucket's index file in the restored snapshot
    bitmap64: bool = False
    changed: bool = False
    _vectors: dict[str, np.ndarray] | None = field(default=None, repr=False)

    @property
    def vectors(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            self._vectors = dict(self.files.read(self.entry)) if self.entry is not None else {}
        return self._vectors

    def of(self, file_name: str) -> np.ndarray | None:
        """The deleted row positions of a data file (sorted), None if it has none."""
        if self._vectors is None and (self.entry is None or not any(
                r.data_file == file_name for r in self.entry.dv_ranges or ())):
            return None
        return self.vectors.get(file_name)

    def mark(self, file_name: str, positions: np.ndarray) -> None:
        if len(positions) == 0:
            return
        old = self.vectors.get(file_name)
        positions = np.asarray(positions, dtype=np.int64)
        self.vectors[file_name] = sorted_unique(positions) if old is None else merge_sorted_unique(old, positions)
        self.changed = True

    def drop(self, file_names: Iterable[str]) -> None:
        for name in file_names:
            if self.of(name) is not None:
                del self.vectors[name]
                self.changed = True

    def deleted_count(self, file_name: str) -> int:
        positions = self.of(file_name)
        return 0 if positions is None else len(positions)

    def commit_changes(self) -> tuple[list[IndexManifestEntry], list[IndexManifestEntry]]:
        """(new index files, index files they replace) for this commit; writes the new file."""
        if not self.changed:
            return [], []
        written = self.files.write(self.partition, self.bucket, self.vectors, self.bitmap64)
        deleted = [replace(self.entry, kind=DELETE)] if self.entry is not None else []
        return ([written] if written is not None else []), deleted
