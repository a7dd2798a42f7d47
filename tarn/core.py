"""TableCore: a table's storage (TableContext) plus the primitives every operation is built of.

The primitives: the scan planner and `scan_snapshot` (a `Scan` of one snapshot), `new_writer`,
`committer`, and `commit`: commit writer messages, delete their files when the commit did not
land (kept when its outcome is unknown), delete the files of a compaction part that was
dropped, then run the commit callbacks (tarn/commit/callbacks.py) with what landed. The core
runs no operation itself: post-commit maintenance (tags, expiry) is a callback tarn/ops/
registers, and the operations (tarn/ops/) take a TableCore or TableContext, never the facade.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Callable

from tarn import features
from tarn.commit.callbacks import callbacks_for
from tarn.commit.committer import Committer, Overwrite
from tarn.commit.requirements import LandsOn, RowIdsReadAt, UntouchedSince
from tarn.commit.result import CommitResult, Landed, result_of
from tarn.errors import SchemaMismatch, UnsupportedFeature
from tarn.fs import FileIO
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from tarn.scan.arguments import limit_argument, names_argument
from tarn.scan.filters import scan_filter
from tarn.scan.planner import Planner, planner_for
from tarn.scan.scan import Scan, scan_fields
from tarn.store.context import TableContext
from tarn.write.message import CommitMessage
from tarn.commit.abort import abort
from tarn.write.writer import TableWriter, restore_from

log = logging.getLogger(__name__)

# run after a commit landed with what it made, never raising into it: returns the failures it logged
PostCommitHook = Callable[["TableCore", tuple[Landed, ...]], list[Exception]]


class TableCore(TableContext):
    """The table at `root` with the primitives operations use (nothing is read until asked for).

    After every commit `commit` lands, the commit callbacks registered for the table's shape
    (tarn/commit/callbacks.py: post-commit maintenance is one) run, then this object's own
    `post_commit_hooks`, each given what landed; `last_maintenance_errors` holds what failed
    after the last landed commit (the commit stands)."""

    def __init__(self, file_io: FileIO, root: str, name: str | None = None, branch: str = "main"):
        super().__init__(file_io, root, name, branch)
        self.last_maintenance_errors: list[Exception] = []
        self.post_commit_hooks: list[PostCommitHook] = []
        # what the running operation committed and counted, per thread (the facade turns them
        # into its CommitResult; tarn/commit/result.py)
        self._running = threading.local()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_running", None)  # per-thread bookkeeping stays with the process
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._running = threading.local()

    @property
    def landed(self) -> list:
        """The snapshots (`Landed`) the running operation committed so far, in this thread."""
        if not hasattr(self._running, "landed"):
            self._running.landed = []
        return self._running.landed

    @property
    def counted(self) -> dict:
        """What the running operation counted (rows written, matched, ...), in this thread."""
        if not hasattr(self._running, "counted"):
            self._running.counted = {}
        return self._running.counted

    def recorded(self, operation: str, run, matched: str | None = None, started: float | None = None,
                 counted: dict | None = None) -> CommitResult | None:
        """Run a committing verb and describe what it committed as a `CommitResult` (None:
        nothing). `matched`: the count the verb's matches are reported as (rows_deleted, ...);
        `started`: when the work began (perf_counter; default now); `counted`: counts the
        caller knows (engines such as tarn.spark)."""
        self.start_operation()
        started = time.perf_counter() if started is None else started
        out = run()
        if out is None:
            return None
        counted = {**dict(self.counted), **(counted or {})}
        if matched is not None and "rows_matched" in counted:  # the verb's matches are its deletes/updates
            counted[matched] = counted.pop("rows_matched")
        if matched == "rows_updated" or (operation not in ("delete", "merge") and not counted.get("rows_deleted")):
            counted.pop("rows_deleted", None)
        landed = list(self.landed) or [Landed(out, ())]
        return result_of(self.name, operation, landed, time.perf_counter() - started, **counted)

    def start_operation(self) -> None:
        """Begin recording what an operation commits and counts (in this thread)."""
        self._running.landed, self._running.counted = [], {}

    # ------------------------------------------------------------------ read

    def planner(self, schema: TableSchema | None = None) -> Planner:
        """The scan planner (snapshot -> manifests -> pruned files -> splits) for `schema`
        (default: the latest); engines such as tarn.spark use it, users call `scan()`."""
        return planner_for(self, schema)

    def scan_snapshot(self, snapshot: Snapshot | None, filter=None, columns: list[str] | str | None = None,
                      schema: TableSchema | None = None, limit: int | None = None) -> Scan:
        """A scan of this exact snapshot (with its own schema unless `schema` is given);
        `filter`, `columns` and `limit` as in `scan`."""
        if schema is None:
            schema = self.schema_by_id(snapshot.schema_id) if snapshot is not None else self.schema()
        fields = scan_fields(schema)
        names = [f.name for f in fields]
        columns = names_argument(columns, self.name, "columns")
        if columns is not None:
            unknown = [c for c in columns if c not in names]
            features.check_system_columns(self.name, unknown)
            if unknown:
                raise SchemaMismatch(f"table {self.name}: unknown column(s) {unknown} (columns: {names})")
        found = scan_filter(filter, fields, self.name)
        return Scan(self, schema, snapshot, found.predicate, columns, limit=limit_argument(limit, self.name),
                    row_filter=found.row_filter, row_filter_columns=found.row_filter_columns)

    def scan_latest(self, filter=None, columns: list[str] | str | None = None, limit: int | None = None) -> Scan:
        """A scan of the latest snapshot that moves to the new latest one when expiry removes
        its files while it reads."""
        scan = self.scan_snapshot(self.latest_snapshot(), filter, columns, self.schema(), limit)
        scan.follows_latest = True
        return scan

    # ------------------------------------------------------------------ write

    def new_writer(self, ignore_previous_files: bool = False, options: dict | None = None,
                   index_snapshot=None) -> TableWriter:
        """A writer for one commit: `write()` any number of batches, then `commit()` its messages.
        `ignore_previous_files` (INSERT OVERWRITE): start every bucket empty, as Java does, so
        the writer never compacts files the overwrite removes, and write no changelog files (an
        overwrite commits none). `options` override table options for this writer only (file
        prefixes, write tuning). `index_snapshot` (dynamic buckets given with the rows): the
        snapshot id, or a function giving it, whose HASH index the buckets were assigned against."""
        schema = self.schema()
        restore = (lambda: {}) if ignore_previous_files else restore_from(self, schema, index_snapshot=index_snapshot)
        return TableWriter(self.file_io, self.root, self.name, schema, schema.shape.options_with(options),
                           restore, self.schema_by_id, produce_changelog=not ignore_previous_files)

    def committer(self, schema: TableSchema | None = None) -> Committer:
        """The committer that turns commit messages into a snapshot (conflict checks, retries
        up to `commit.max-retries`); users call `commit()` or `write()`."""
        return Committer(self, schema or self.schema())

    def commit(self, messages: list[CommitMessage], commit_user: str | None = None,
               commit_identifier: int = BATCH_COMMIT_IDENTIFIER, overwrite: Overwrite | None = None,
               watermark: int | None = None, expected_base: int | None = None, *,
               schema: TableSchema | None = None, untouched_since: UntouchedSince | None = None,
               on_landed: Callable[[], list[Exception]] | None = None,
               row_ids_read_at: int | None = None, requirements: tuple = ()) -> Snapshot | None:
        """Commit writer messages (an APPEND or OVERWRITE snapshot, then a COMPACT one for their
        compaction part). It returns once the snapshot landed; raises `OutcomeUnknown` when the
        store could not tell whether it did (every file is kept); any other error means it did
        not land, and the files no snapshot references are deleted. A compaction part that
        fails after the data landed is dropped and the data commit stands. Work after the
        commit (`on_landed`, a dropped compaction's files, the post-commit hooks) never turns a
        landed commit into an error: its failures are logged and kept in
        `last_maintenance_errors`. `expected_base`: the commit fails (CommitConflict) unless it
        lands directly on that snapshot id (0: an empty table). `schema`: the schema the
        messages were written with (default: the latest); `untouched_since`: an overwrite's
        requirement on the snapshots since it read its data (a rescale); `row_ids_read_at`: the
        snapshot files arriving with their row ids were planned on (row_id_conflicts). The three
        are spellings of the requirements (tarn/commit/requirements.py) `LandsOn`,
        `UntouchedSince` and `RowIdsReadAt`; `requirements` takes any of them."""
        latest = self.schema()
        schema = schema or latest
        try:
            features.check_write(self.name, latest)  # writers checked it before writing; the schema may have moved
        except UnsupportedFeature:
            abort(self.file_io, self.root, schema, messages)
            raise
        committer = self.committer(schema)
        self.last_maintenance_errors = []
        try:
            snapshot = committer.commit(messages, commit_user or str(uuid.uuid4()), commit_identifier, overwrite,
                                        watermark, requirements=_requirements(expected_base, untouched_since,
                                                                              row_ids_read_at, requirements))
        except BaseException:  # not landed (OutcomeUnknown: maybe landed, every file stays)
            if not committer.outcome_unknown:
                best_effort(self, "deleting the files of a failed commit", lambda: abort(
                    self.file_io, self.root, schema, messages, keep=committer.landed_files))
            raise
        self.landed.extend(committer.made)
        # `+=` on the list maintenance steps append to (kept_error): none of their failures is lost
        self.last_maintenance_errors += self._after_landed(committer, schema, messages, on_landed)
        return snapshot

    def _after_landed(self, committer: Committer, schema: TableSchema, messages: list,
                      on_landed: Callable[[], list[Exception]] | None) -> list[Exception]:
        """Everything after a commit landed, never raising (a caller must not retry, and so
        duplicate, a landed commit): the caller's `on_landed` step, deleting the files of a
        compaction part that was dropped, then the post-commit hooks. Returns the failures
        (the dropped compaction among them)."""
        errors: list[Exception] = []
        if on_landed is not None:
            errors += on_landed()
        if committer.dropped_compaction is not None:
            errors.append(committer.dropped_compaction)
            failure = best_effort(self, "deleting the files of the dropped compaction", lambda: abort(
                self.file_io, self.root, schema, [m.compact_part() for m in messages], keep=committer.landed_files))
            errors += [failure] if failure else []
        landed = tuple(committer.made)
        hooks = [c.run for c in callbacks_for(self.schema().shape)] + self.post_commit_hooks
        for hook in hooks:
            try:
                errors += hook(self, landed)
            except Exception as exc:  # noqa: BLE001 - hooks report their own; this is a last guard
                log.warning("table %s: maintenance after commit failed (the commit stands): %s", self.name, exc)
                errors.append(exc)
        return errors


def _requirements(expected_base: int | None, untouched_since: UntouchedSince | None, row_ids_read_at: int | None,
                  given: tuple) -> tuple:
    """The commit's requirements from `TableCore.commit`'s spellings of them, then `given`."""
    spelled = [LandsOn(expected_base) if expected_base is not None else None, untouched_since,
               RowIdsReadAt(row_ids_read_at) if row_ids_read_at is not None else None]
    return (*[r for r in spelled if r is not None], *given)


def best_effort(context: TableContext, what: str, step) -> Exception | None:
    """Run a clean-up step whose failure must not replace the operation's outcome; the failure
    is logged and returned."""
    try:
        step()
    except Exception as exc:  # noqa: BLE001
        log.warning("table %s: %s failed: %s", context.name, what, exc)
        return exc
    return None
