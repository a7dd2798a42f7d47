"""Optimistic, atomic commits (FORMAT.md section 11).

One attempt: read the latest snapshot, turn commit messages into manifest entries, check
conflicts, write delta manifests and manifest lists, then create `snapshot-<id>` only if absent.
A lost race retries on a fresh base; a conflict fails cleanly. Nothing a failed attempt wrote
stays behind, and readers never see it (the snapshot file is the only commit point).

Every commit ends in one of three outcomes (docs/concurrency.md):
- it returns: its snapshot landed on top of the table;
- it raises `OutcomeUnknown`: the store could not tell whether the snapshot file was created
  (or whether one that was created landed on top); `outcome_unknown` is set and no file the
  commit wrote may be deleted;
- it raises anything else: its snapshot did not land (cleaning up its files is safe).
Once the snapshot file exists, nothing but OutcomeUnknown leaves `_publish`: checks that fail
are retried, the LATEST hint and the debug log are best effort.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass, field, replace

from tarn import partition as partitions
from tarn.meta import sequence_init
from tarn.version import WRITER_VERSION
from tarn.fs import join
from tarn.paths import POSTPONE_BUCKET
from tarn.errors import CommitConflict, DynamicBucketConflict, FileMissing, SnapshotNotFound
from tarn.store.commit_point import Publication
from tarn.commit.requirements import Attempt, StrictMode
from tarn.commit.result import Landed
from tarn.meta import snapshot as snap
from tarn.meta.manifest import ADD, DELETE, DELETION_VECTORS_INDEX, HASH_INDEX, ManifestEntry, ManifestFileMeta
from tarn.meta.row_ranges import assign_row_ids
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.store.manifests import ManifestStore
from tarn.store.snapshots import SnapshotStore
from tarn.store.statistics import StatisticsFiles
from tarn.write.message import CommitMessage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Overwrite:
    """What an OVERWRITE replaces: partitions matching `static` (a dict, {} = whole table),
    or, when `dynamic`, just the partitions the new data touches."""

    static: dict = field(default_factory=dict)
    dynamic: bool = False
    # exactly these partitions (partition bytes), whatever the new data touches (a rescale);
    # None: `static` / `dynamic` decide
    partitions: frozenset | None = None
    # postpone-bucket tables: the rows waiting in `bucket-postpone/` stay (a rescale rewrites
    # only the real buckets, as Java's); otherwise an overwrite replaces them too
    keeps_postponed: bool = False


@dataclass(frozen=True)
class CommitRequest:
    """Who commits and how: the same for every attempt and both parts of one commit."""

    commit_user: str
    commit_identifier: int = snap.BATCH_COMMIT_IDENTIFIER
    overwrite: Overwrite | None = None
    watermark: int | None = None
    properties: dict | None = None
    statistics: str | None = None  # an ANALYZE commit: the statistics file it records
    # what must hold of the table for the commit to land (tarn/commit/requirements.py)
    requirements: tuple = ()


@dataclass
class Committer:
    """Commits to the table of `context` (tarn.store.context.TableContext) with `schema`."""

    context: object
    schema: TableSchema

    def __post_init__(self):
        self.table_name = self.context.name
        self.options = self.schema.shape.options
        self.snapshots: SnapshotStore = self.context.snapshot_store
        self.manifests: ManifestStore = self.context.manifests(self.schema)
        self.landed_files: set[str] = set()  # files referenced by snapshots this committer made
        self.outcome_unknown = False  # a snapshot write failed in a way that may have landed
        self.dropped_compaction: BaseException | None = None
        self.made: list[Landed] = []  # the snapshots this committer landed, with their entries
        self.started = time.perf_counter()

    def commit(self, messages: list[CommitMessage], commit_user: str,
               commit_identifier: int = snap.BATCH_COMMIT_IDENTIFIER,
               overwrite: Overwrite | None = None, watermark: int | None = None,
               properties: dict | None = None, requirements: tuple = ()) -> Snapshot | None:
        """Commit the messages: new files as one APPEND (or OVERWRITE) snapshot, then compaction
        changes as one COMPACT snapshot, as Java Paimon does. Returns the last snapshot made;
        None when there is nothing to commit or this streaming (commit_user,
        commit_identifier) has already landed.

        Once the APPEND part has landed the data is committed: a COMPACT part that then fails
        (a concurrent compaction removed an input, retries ran out, an I/O error) is dropped,
        recorded in `dropped_compaction`, and the APPEND snapshot is returned; if whether it
        landed is unknown, its files count as landed. `landed_files` names every file a landed
        (or possibly landed) snapshot of this call references, so a caller cleaning up after a
        failure deletes only files no snapshot references. `requirements`
        (tarn/commit/requirements.py) are checked on every attempt; those not `for_compaction`
        bind the APPEND (or OVERWRITE) part only."""
        messages = [m for m in messages if not m.is_empty]
        if not messages and overwrite is None:
            return None
        if commit_identifier != snap.BATCH_COMMIT_IDENTIFIER:
            latest = self.snapshots.latest()
            own = self.latest_of_user(latest, commit_user) if latest else None
            if own is not None and own.commit_identifier >= commit_identifier:
                return None
        if overwrite is not None:  # Java's overwrite commits no changelog, of either part
            messages = [replace(m, changelog_files=[], compact_changelog_files=[]) for m in messages]
        appends = [m.append_part() for m in messages]
        appends = [m for m in appends if not m.is_empty]
        compactions = [m.compact_part() for m in messages]
        compactions = [m for m in compactions if not m.is_empty]
        safe = self.options.int("commit.strict-mode.last-safe-snapshot")
        if safe is not None:  # Java's StrictModeChecker, on every part of the commit
            requirements = (*requirements, StrictMode(safe))
        request = CommitRequest(commit_user, commit_identifier, overwrite, watermark, properties,
                                requirements=tuple(requirements))
        result = None
        if appends or overwrite is not None:
            result = self._commit_with_retry(appends, request)
            if result is not None:
                self.landed_files |= _added_names(appends)
        if compactions:
            compact_request = replace(request, overwrite=None,
                                      requirements=tuple(r for r in request.requirements if r.for_compaction))
            if not appends and overwrite is None:  # a compaction job: its failure is the caller's
                result = self._commit_with_retry(compactions, compact_request)
                self.landed_files |= _added_names(compactions)
                return result
            try:
                result = self._commit_with_retry(compactions, compact_request) or result
                self.landed_files |= _added_names(compactions)
            except Exception as exc:  # the data stands; only the compaction is given up
                self.dropped_compaction = exc
                if self.outcome_unknown:  # the COMPACT snapshot may exist: keep its files
                    self.landed_files |= _added_names(compactions)
                    self.outcome_unknown = False  # the call's own outcome is known: it landed
                log.warning("table %s: compaction dropped after its data commit landed: %s",
                            self.table_name, exc)
        return result

    def commit_statistics(self, file_name: str, commit_user: str,
                          commit_identifier: int = snap.BATCH_COMMIT_IDENTIFIER) -> Snapshot:
        """Commit an ANALYZE snapshot recording the statistics file `file_name` (already
        written): the latest snapshot's data with an empty delta (Java's commitStatistics)."""
        return self._commit_with_retry([], CommitRequest(commit_user, commit_identifier, statistics=file_name))

    def _commit_with_retry(self, messages, request: "CommitRequest") -> Snapshot | None:
        retries = self.options.int("commit.max-retries")
        missing_under = None  # the latest snapshot under which the previous attempt found a file missing
        for attempt in range(retries + 1):
            latest = self.snapshots.latest()
            try:
                result = self._try_once(latest, messages, request)
            except FileMissing as exc:  # expiry removed what this attempt read: start over
                if latest is not None and latest == missing_under:
                    # expiry never removes what the latest snapshot references: the file is
                    # gone for good, and retrying on the same snapshot cannot succeed
                    raise FileMissing(f"table {self.table_name}: the latest snapshot {latest.id} references a "
                                      f"file that is missing ({exc}); nothing was committed. The table's "
                                      "metadata is damaged: roll back to an earlier snapshot") from exc
                missing_under = latest
                log.info("table %s: commit attempt %d re-reads the latest snapshot (%s)",
                         self.table_name, attempt + 1, exc)
                result = None
            if result is not None:
                return result
            log.debug("table %s: commit attempt %d lost the race on top of snapshot %s; retrying",
                      self.table_name, attempt + 1, latest.id if latest else None)
            time.sleep(min(0.01 * 2 ** attempt, 10) * (1 + random.random() * 0.2))
        raise CommitConflict(f"table {self.table_name}: commit failed after {retries + 1} attempts "
                             "because other writers kept committing first")

    # ------------------------------------------------------------------ one attempt

    def _try_once(self, latest, messages, request: "CommitRequest") -> Snapshot | None:
        delta = self._delta_entries(messages)
        deletes = any(e.kind == DELETE for e in delta)
        if deletes:  # the files the messages remove (an overwrite's own come from live entries)
            self._check_deletes_live(latest, delta)
        kind = snap.COMPACT if self._only_compaction(messages) else snap.APPEND
        if request.overwrite is not None:
            delta = self._overwrite_deletes(latest, delta, request.overwrite) + delta
            kind = snap.OVERWRITE
        elif deletes and kind == snap.APPEND:
            kind = snap.OVERWRITE
        if request.statistics is not None:
            kind = snap.ANALYZE
        next_row_id = (latest.next_row_id or 0) if latest else 0
        attempt = Attempt(self.table_name, latest, delta, kind, request.commit_user, request.overwrite is not None,
                          self.snapshots, self.manifests, self.schema.field_names,
                          frozenset(e.partition for m in messages for e in (*m.new_index_files,
                                                                             *m.deleted_index_files)),
                          self.schema.shape.tracks_rows)
        for requirement in request.requirements:
            requirement.check(attempt)
        if self.schema.shape.tracks_rows:
            delta, next_row_id = assign_row_ids(delta, (latest.id + 1) if latest else 1, next_row_id)
        if kind in (snap.APPEND, snap.OVERWRITE) and self.options.bool("sequence.snapshot-ordering"):
            delta = _stamped(delta, (latest.id + 1) if latest else 1)
        changelog = self._changelog_entries(messages)
        written: list[str] = []
        try:
            index_manifest = self._index_manifest(latest, messages, delta, request.overwrite, written)
            new_snapshot = self._write_snapshot(latest, delta, kind, request, written, changelog, index_manifest,
                                                next_row_id)
            landed = self._publish(new_snapshot, latest, messages, delta)
        except BaseException:
            if not self.outcome_unknown:
                self._delete(written)
            raise
        if landed:
            self.made.append(Landed(new_snapshot, tuple(delta), tuple(changelog),
                                    tuple(e for m in messages for e in m.new_index_files),
                                    tuple(e for m in messages for e in m.deleted_index_files)))
            _log_commit(self.table_name, new_snapshot, delta, changelog, time.perf_counter() - self.started)
            return new_snapshot
        self._delete(written)
        return None

    def _publish(self, snapshot: Snapshot, base: Snapshot | None, messages, delta) -> bool:
        """Hand the snapshot to the table's commit point (tarn/store/commit_point.py): True when it
        landed on top, False on a lost race; OutcomeUnknown (and `outcome_unknown` set) when
        that cannot be told, any other error only when nothing landed."""
        publication = Publication(
            snapshot, base, _added_names(messages), _removed_names(messages, delta), self.manifests,
            missing_files=lambda: self._missing_files(messages), delta=tuple(delta))
        try:
            return self.context.snapshot_commit.publish(publication)
        finally:
            if publication.uncertain:
                self.outcome_unknown = True

    def _missing_files(self, messages) -> list[str]:
        """The files these messages add that are not on storage (expiry may delete what only a
        snapshot created behind referenced: its changelog)."""
        return [m.file_name for msg in messages for m in msg.added_files()
                if not self.context.file_io.exists(
                    join(self.context.bucket_dir(self.schema, msg.partition, msg.bucket), m.file_name))]

    def _delta_entries(self, messages: list[CommitMessage]) -> list[ManifestEntry]:
        entries = []
        for m in messages:
            for f in [*m.deleted_files, *m.compact_before]:
                entries.append(ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f))
            for f in [*m.new_files, *m.compact_after]:
                entries.append(ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f))
        return entries

    @staticmethod
    def _changelog_entries(messages: list[CommitMessage]) -> list[ManifestEntry]:
        """ADD entries of the changelog files: the input changelog of an APPEND commit, the
        compaction changelog of a COMPACT commit (each message part carries one of them)."""
        return [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                for m in messages for f in [*m.changelog_files, *m.compact_changelog_files]]

    @staticmethod
    def _only_compaction(messages: list[CommitMessage]) -> bool:
        """Compaction changes or deletion vectors only (a delete on an append table)."""
        return all(not m.new_files and not m.changelog_files and not m.deleted_files
                   and (m.compact_before or m.compact_after or m.new_index_files or m.deleted_index_files)
                   for m in messages)

    # ------------------------------------------------------------------ index files

    def _index_manifest(self, latest, messages, delta, overwrite: Overwrite | None,
                        written: list[str]) -> str | None:
        """The index manifest of the new snapshot: the latest one's live entries, minus the index
        files the messages replace and those of partitions an overwrite empties, plus the new
        ones; rewritten in full when anything changed (FORMAT.md section 4)."""
        previous = latest.index_manifest if latest else None
        added = [e for m in messages for e in m.new_index_files]
        removed = [e for m in messages for e in m.deleted_index_files]
        replaced = {(e.partition, e.bucket, e.file.file_name) for e in delta if e.kind == DELETE}
        if not (added or removed or overwrite is not None or (replaced and previous)):
            return previous
        live = self.manifests.read_index_manifest(previous) if previous else []
        before = list(live)  # the latest snapshot's entries (`live` is narrowed below)
        if overwrite is None and replaced:
            self._check_vectors_kept(live, removed, replaced)
        if any(e.index_type == HASH_INDEX for e in [*live, *added, *removed]):
            live, added, removed = self._hash_index(live, added, removed, delta, overwrite)
        live_names = {e.file_name for e in live}
        for e in removed:
            if e.file_name not in live_names:
                raise CommitConflict(f"table {self.table_name}: index file {e.file_name} (bucket {e.bucket}) was "
                                     "already replaced by a concurrent commit; this commit cannot be applied")
        gone = {e.file_name for e in removed}
        kept = [e for e in live if e.file_name not in gone]
        if overwrite is not None or added:
            kept = self._check_index_targets(latest, delta, kept, added)
        entries = [replace(e, kind=ADD) for e in kept + added]
        if entries == before:
            return previous
        if not entries:
            return None
        name = self.manifests.write_index_manifest(entries)
        written.append(name)
        return name

    def _hash_index(self, live, added, removed, delta, overwrite: Overwrite | None):
        """Dynamic-bucket HASH index rules; returns (live, added, removed) for the general merge.

        - An overwrite drops the HASH files of the partitions it replaces (their keys are gone).
        - A commit that changes the HASH index of a partition deletes every HASH file of the
          partition it started from, adding unchanged ones again under the same name (the
          writer's view of the whole partition index). Any other live HASH file of the partition
          means a concurrent commit changed its key-to-bucket map: keys could now sit in two
          buckets, so this commit fails (Paimon allows one dynamic-bucket writer per partition).
        - At most one HASH file per (partition, bucket); a bucket's new file supersedes the same
          bucket's file added again unchanged (another task of the same write replaced it)."""
        if overwrite is not None:
            replaced = self._replaced_partitions(live, delta, overwrite)
            live = [e for e in live if e.index_type != HASH_INDEX or e.partition not in replaced]
        hash_removed = {e.file_name: e for e in removed if e.index_type == HASH_INDEX}
        live_names = {e.file_name for e in live}
        stale = [e for e in hash_removed.values() if e.file_name not in live_names]
        if stale:
            raise DynamicBucketConflict(self._index_race(stale[0].partition))
        new = [e for e in added if e.index_type == HASH_INDEX and e.file_name not in hash_removed]
        again = {e.file_name: e for e in added if e.index_type == HASH_INDEX and e.file_name in hash_removed}
        changed = {e.partition for e in [*new, *hash_removed.values()]}
        for e in live:
            if e.index_type == HASH_INDEX and e.partition in changed and e.file_name not in hash_removed:
                raise DynamicBucketConflict(self._index_race(e.partition))
        buckets: dict[tuple, str] = {}
        for e in new:
            if (e.partition, e.bucket) in buckets:
                raise CommitConflict(f"table {self.table_name}: two HASH index files for bucket {e.bucket} of "
                                     f"{self._partition_text(e.partition)} in one commit (two tasks wrote the "
                                     "same dynamic bucket); nothing was committed")
            buckets[(e.partition, e.bucket)] = e.file_name
        again = [e for e in again.values() if (e.partition, e.bucket) not in buckets]
        others = [e for e in added if e.index_type != HASH_INDEX]
        return live, [*others, *again, *new], removed

    def _replaced_partitions(self, live, delta, overwrite: Overwrite) -> set[bytes]:
        if overwrite.partitions is not None:
            return set(overwrite.partitions)
        partitions = {e.partition for e in live}
        if overwrite.dynamic:
            return {e.partition for e in delta}
        if overwrite.static:
            return {p for p in partitions if self._matches_static(p, overwrite.static)}
        return partitions

    def _partition_text(self, partition: bytes) -> str:
        if not self.schema.partition_keys:
            return "the table"
        values = partitions.from_bytes(self.schema, partition)
        return f"partition {dict(zip(self.schema.partition_keys, values))}"

    def _index_race(self, partition: bytes) -> str:
        return (f"table {self.table_name}: a concurrent commit changed the dynamic-bucket index (HASH files) of "
                f"{self._partition_text(partition)} since this write assigned its buckets; dynamic-bucket tables "
                "take one writer per partition at a time (Paimon's single-writer rule); for several concurrent "
                "writers, create the table with a fixed 'bucket'. Nothing of this commit was committed; write "
                "the rows again")

    def _check_vectors_kept(self, live, removed, replaced: set) -> None:
        """A commit replacing data files (a compaction, a copy-on-write delete) read them with
        the vectors it knew and drops those; a deletion vector for one of them that it does not
        replace was committed meanwhile, and its deletes would come back: conflict."""
        gone = {e.file_name for e in removed}
        for entry in live:
            if entry.index_type != DELETION_VECTORS_INDEX or entry.file_name in gone:
                continue
            hit = [r.data_file for r in entry.dv_ranges or ()
                   if (entry.partition, entry.bucket, r.data_file) in replaced]
            if hit:
                raise CommitConflict(f"table {self.table_name}: a concurrent commit marked rows of {hit[:3]} "
                                     f"(bucket {entry.bucket}) deleted while this commit replaced those files; "
                                     "this commit cannot be applied")

    def _check_index_targets(self, latest, delta, kept, added) -> list:
        """Deletion vectors must point at live data files: one a concurrent commit removed makes
        this commit conflict (its vectors were computed against files that are gone); kept
        entries all of whose files are gone (an overwrite) are dropped. A bucket of a
        primary-key table holds one deletion-vector file."""
        live: dict[tuple, set[str]] = {}
        for e in self.manifests.merge_live([*self.manifests.live_entries(latest), *delta]):
            live.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)
        for e in added:
            files = live.get((e.partition, e.bucket), set())
            dead = [r.data_file for r in e.dv_ranges or () if r.data_file not in files]
            if dead:
                raise CommitConflict(f"table {self.table_name}: deletion vectors of data file(s) {dead[:3]} "
                                     f"(bucket {e.bucket}) whose files a concurrent commit removed; "
                                     "this commit cannot be applied")
        kept = [e for e in kept if not e.dv_ranges
                or any(r.data_file in live.get((e.partition, e.bucket), ()) for r in e.dv_ranges)]
        if self.schema.primary_keys:
            seen = set()
            for e in kept + added:
                key = (e.partition, e.bucket, e.index_type)
                if e.index_type == DELETION_VECTORS_INDEX and key in seen:
                    raise CommitConflict(f"table {self.table_name}: a concurrent commit wrote deletion vectors "
                                         f"of bucket {e.bucket} too; this commit cannot be applied")
                seen.add(key)
        return kept

    def _overwrite_deletes(self, latest, delta, overwrite: Overwrite) -> list[ManifestEntry]:
        live = self.manifests.live_entries(latest)
        if overwrite.partitions is not None:
            doomed = [e for e in live if e.partition in overwrite.partitions]
        elif overwrite.dynamic:
            touched = {e.partition for e in delta}
            doomed = [e for e in live if e.partition in touched]
        elif overwrite.static:
            doomed = [e for e in live if self._matches_static(e.partition, overwrite.static)]
        else:
            doomed = live
        if overwrite.keeps_postponed:
            doomed = [e for e in doomed if e.bucket != POSTPONE_BUCKET]
        return [ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file) for e in doomed]

    def _matches_static(self, partition: bytes, static: dict) -> bool:
        values = dict(zip(self.schema.partition_keys, partitions.from_bytes(self.schema, partition)))
        return all(_same_partition_value(values.get(k), v) for k, v in static.items())

    def _check_deletes_live(self, latest, delta: list[ManifestEntry]) -> None:
        live = {e.identifier for e in self.manifests.live_entries(latest)}
        for e in delta:
            if e.kind == DELETE and e.identifier not in live:
                raise CommitConflict(
                    f"table {self.table_name}: file {e.file.file_name} (bucket {e.bucket}) was already "
                    "removed by a concurrent commit; this commit cannot be applied")

    def _write_snapshot(self, latest, delta, kind, request: "CommitRequest", written: list[str],
                        changelog: list[ManifestEntry], index_manifest: str | None,
                        next_row_id: int) -> Snapshot:
        schema_id = self.schema.id
        previous = self.manifests.data_manifests(latest) if latest else []
        base = self.manifests.merge_manifests(previous, schema_id) if previous else []
        old_names = {m.file_name for m in previous}
        written.extend(m.file_name for m in base if m.file_name not in old_names)
        delta_metas: list[ManifestFileMeta] = self.manifests.write_manifests(delta, schema_id) if delta else []
        written.extend(m.file_name for m in delta_metas)
        base_list, base_size = self.manifests.write_manifest_list(base)
        written.append(base_list)
        delta_list, delta_size = self.manifests.write_manifest_list(delta_metas)
        written.append(delta_list)
        changelog_list = changelog_size = changelog_count = None
        if changelog:  # its own manifests and list, holding only this commit's changelog
            changelog_metas = self.manifests.write_manifests(changelog, schema_id)
            written.extend(m.file_name for m in changelog_metas)
            changelog_list, changelog_size = self.manifests.write_manifest_list(changelog_metas)
            written.append(changelog_list)
            changelog_count = sum(e.file.row_count for e in changelog)
        delta_count = sum(e.file.row_count if e.kind == ADD else -e.file.row_count for e in delta)
        previous_total = (latest.total_record_count or 0) if latest else 0
        properties = request.properties or None
        if sequence_init.snapshot_mode(self.options):
            properties = sequence_init.merged_properties(
                properties, self._latest_max_sequence(latest, previous),
                max((e.file.max_sequence_number for e in delta if e.kind == ADD), default=None))
        watermark = request.watermark
        if latest is not None and latest.watermark is not None:
            watermark = latest.watermark if watermark is None else max(watermark, latest.watermark)
        return Snapshot(
            version=3, uuid=str(uuid.uuid4()), id=(latest.id + 1) if latest else 1, schema_id=schema_id,
            base_manifest_list=base_list, base_manifest_list_size=base_size,
            delta_manifest_list=delta_list, delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_list, changelog_manifest_list_size=changelog_size,
            index_manifest=index_manifest,
            commit_user=request.commit_user, commit_identifier=request.commit_identifier, commit_kind=kind,
            time_millis=int(time.time() * 1000), total_record_count=previous_total + delta_count,
            delta_record_count=delta_count, changelog_record_count=changelog_count, watermark=watermark,
            statistics=self._statistics_file(latest, request),
            properties=properties, next_row_id=next_row_id, writer_version=WRITER_VERSION,
        )

    def _latest_max_sequence(self, latest: Snapshot | None, previous: list) -> int | None:
        """`write.sequence-number-init-mode` = snapshot: the maximum the latest snapshot
        records, else the largest of its data manifests' ADD entries."""
        if latest is None:
            return None
        recorded = sequence_init.recorded_max(latest.properties)
        if recorded is not None:
            return recorded
        return max((e.file.max_sequence_number for meta in previous
                    for e in self.manifests.read_manifest(meta.file_name) if e.kind == ADD), default=None)

    def _statistics_file(self, latest: Snapshot | None, request: "CommitRequest") -> str | None:
        """The new snapshot's `statistics`: an ANALYZE commit's own file; otherwise the latest
        snapshot's while the file was gathered with this commit's schema (Java reads the file's
        `schemaId`). A file that cannot be read is not carried on: statistics never fail a commit."""
        if request.statistics is not None:
            return request.statistics
        if latest is None or latest.statistics is None:
            return None
        try:
            stats_schema = StatisticsFiles(self.context.file_io, self.context.root).schema_id_of(latest.statistics)
        except Exception as exc:  # noqa: BLE001 - an I/O error: drop the statistics, keep the commit
            log.warning("table %s: statistics file %s not carried on: %s", self.table_name, latest.statistics, exc)
            return None
        return latest.statistics if stats_schema == self.schema.id else None

    def _delete(self, names: list[str]) -> None:
        """Delete what a failed attempt wrote; best effort (a file left is an orphan, which
        remove_orphan_files frees; the attempt's own error is the one that matters)."""
        for name in names:
            try:
                self.manifests.delete(name)
            except Exception as exc:  # noqa: BLE001
                log.info("table %s: %s of a failed commit attempt left behind: %s", self.table_name, name, exc)

    # ------------------------------------------------------------------ idempotence

    def latest_of_user(self, latest: Snapshot, commit_user: str) -> Snapshot | None:
        earliest = self.snapshots.earliest_id() or 1
        sid = latest.id
        while sid >= earliest:
            try:
                s = latest if sid == latest.id else self.snapshots.get(sid)
            except (FileMissing, SnapshotNotFound):
                break  # expired under us (a store that fails raises: "not landed" is not known then)
            if s.commit_user == commit_user:
                return s
            sid -= 1
        return None


def _log_commit(table_name: str, snapshot: Snapshot, delta: list[ManifestEntry], changelog: list,
                seconds: float) -> None:
    """One INFO line per landed commit (table, kind, snapshot, rows, files, seconds); DEBUG adds
    the files' names."""
    try:
        _log_details(table_name, snapshot, delta, changelog, seconds)
    except Exception:  # noqa: BLE001 - a log line never fails a landed commit
        pass


def _log_details(table_name: str, snapshot: Snapshot, delta: list[ManifestEntry], changelog: list,
                 seconds: float) -> None:
    if not log.isEnabledFor(logging.INFO):
        return
    added = [e for e in delta if e.kind != DELETE]
    removed = [e for e in delta if e.kind == DELETE]
    log.info("table %s: %s snapshot %d: +%d/-%d rows, +%d/-%d files, %d changelog files, %.2fs", table_name,
             snapshot.commit_kind, snapshot.id, sum(e.file.row_count for e in added),
             sum(e.file.row_count for e in removed), len(added), len(removed), len(changelog), seconds)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("table %s: committed snapshot %d (%s): %d files added, %d deleted, %d changelog files, "
                  "%s records", table_name, snapshot.id, snapshot.commit_kind, len(added), len(removed),
                  len(changelog), snapshot.delta_record_count)


def _added_names(messages: list[CommitMessage]) -> set[str]:
    """Names of the files these messages add (data, compaction outputs, changelog)."""
    return {m.file_name for msg in messages for m in msg.added_files()} | \
        {e.file_name for msg in messages for e in msg.new_index_files}


def _removed_names(messages: list[CommitMessage], delta: list[ManifestEntry]) -> set[str]:
    """Names of the data files the delta removes (an overwrite's included) and of the index
    files the messages remove."""
    return {e.file.file_name for e in delta if e.kind == DELETE} | \
        {e.file_name for msg in messages for e in msg.deleted_index_files}


def _same_partition_value(actual, wanted) -> bool:
    if actual == wanted:
        return True
    return actual is not None and str(actual) == str(wanted)


def _stamped(delta: list[ManifestEntry], snapshot_id: int) -> list[ManifestEntry]:
    """`sequence.snapshot-ordering`: the files an APPEND or OVERWRITE commit adds take its
    snapshot id as their sequence range (Java's stampSequenceWithSnapshotId)."""
    return [replace(e, file=replace(e.file, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id))
            if e.kind == ADD else e for e in delta]
