"""The commit point of a table a REST catalog owns: the committer writes the data files,
manifests and manifest lists as always, then hands the snapshot to the server
(`POST .../tables/{table}/commit`, CommitTableRequest), which makes it the latest or answers
`success=false` (another commit took the id: rebuild and retry). The client never writes a
snapshot file, a LATEST hint or any other metadata of the table itself.

Outcomes, as tarn/store/commit_point.py states them: a request that never reached the server
(or that the server refused with a 4xx answer) landed nothing; one it may have received but did
not answer, or answered with a server error, raises OutcomeUnknown with the publication marked
uncertain (no file of the commit may be deleted).
"""

from __future__ import annotations

from dataclasses import dataclass

from tarn import paths
from tarn.catalog.rest_http import RestSession, Unanswered, unknown_outcome
from tarn.catalog.rest_wire import CommitRequest, RestPaths, commit_body
from tarn.errors import CommitConflict, OutcomeUnknown
from tarn.meta.manifest import ADD
from tarn.meta.schema import TableSchema
from tarn.partition import from_bytes
from tarn.store.commit_point import Publication


@dataclass
class RestCommit:
    """Commits of table `database`.`table` (`t$branch_x` for a branch) through the REST server
    of `session`; `table_id` is the id the server gave when the table was loaded (sent back so
    that a table dropped and created again under the same name is not committed to)."""

    session: RestSession
    paths: RestPaths
    database: str
    table: str
    table_id: str | None
    schemas: object  # the table's context: partition values are named with its schemas

    @property
    def owner(self) -> str:
        """Who owns this table's metadata (tarn/store/commit_point.py check_writes_metadata)."""
        return f"REST catalog {self.session.catalog} ({self.session.uri})"

    @property
    def about(self) -> str:
        return f"table {self.database}.{self.table}"

    def publish(self, publication: Publication) -> bool:
        """POST the snapshot; True when the server made it the latest, False on a lost race."""
        snapshot = publication.snapshot
        request = CommitRequest(self.table_id, snapshot, publication.base.uuid if publication.base else None,
                                self._statistics(publication))
        about = f"{self.about}: commit of snapshot {snapshot.id}"
        try:
            answer = self.session.send("POST", self.paths.commit(self.database, self.table), about,
                                       body=commit_body(request))
        except Unanswered as exc:
            publication.uncertain = True
            raise unknown_outcome(exc, f"snapshot {snapshot.id}") from exc
        except BaseException as exc:
            if not isinstance(exc, Exception):  # interrupted while the request may be on its way
                publication.uncertain = True
            raise
        if answer.status >= 500:  # the server failed somewhere: perhaps after the snapshot landed
            publication.uncertain = True
            cause = self.session.error_of(answer, about)
            raise OutcomeUnknown(f"{cause}; snapshot {snapshot.id} may or may not have landed") from cause
        if answer.status == 409:  # the server found the commit in conflict with the table: nothing landed
            raise CommitConflict(str(self.session.error_of(answer, about)))
        if answer.status >= 400:
            raise self.session.error_of(answer, about)
        return bool((answer.body or {}).get("success"))

    def _statistics(self, publication: Publication) -> list[dict]:
        """PartitionStatistics of the commit's delta: per partition the records, bytes and files
        it adds (negative for those it removes), as Paimon's committer sends them."""
        if not publication.delta:
            return []
        schema = self.schemas.schema_by_id(publication.snapshot.schema_id)
        totals: dict[bytes, dict] = {}
        for entry in publication.delta:
            sign = 1 if entry.kind == ADD else -1
            stats = totals.setdefault(entry.partition, {
                "spec": _spec(schema, entry.partition), "recordCount": 0, "fileSizeInBytes": 0, "fileCount": 0,
                "lastFileCreationTime": 0, "totalBuckets": entry.total_buckets})
            stats["recordCount"] += sign * entry.file.row_count
            stats["fileSizeInBytes"] += sign * entry.file.file_size
            stats["fileCount"] += sign
            stats["lastFileCreationTime"] = max(stats["lastFileCreationTime"], entry.file.creation_time or 0)
            stats["totalBuckets"] = entry.total_buckets
        return list(totals.values())


def _spec(schema: TableSchema, partition: bytes) -> dict[str, str]:
    """A partition's values as Paimon's partition computer writes them ({} when unpartitioned)."""
    if not schema.partition_keys:
        return {}
    default = schema.options.get("partition.default-name") or paths.DEFAULT_PARTITION_NAME
    legacy = str(schema.options.get("partition.legacy-name", "true")).strip().lower() != "false"
    spec = {}
    for key, value in zip(schema.partition_keys, from_bytes(schema, partition)):
        data_type = schema.field(key).type
        spec[key] = paths.partition_value_text(value, data_type.root, data_type.precision, default, legacy)
    return spec
