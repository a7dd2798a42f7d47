"""`scan.fallback-branch` and `scan.primary-branch`: a batch read that takes whole partitions
from a second branch, as Java's FallbackReadFileStoreTable reads them.

- fallback: partitions with live files in the scanned snapshot of the table's own branch are
  read from it; every other partition the fallback branch holds is read from the fallback;
- primary: the same with the roles swapped (the primary branch's partitions first, the table's
  own branch fills in the others).

Partitions are taken whole (no row of one branch is merged with the other's). The second
branch is read at its latest snapshot for a read of the latest one, else at its snapshot
current at the first one's commit time (its first snapshot when it has none that early). Its
columns must be the table's (names and types, nullability aside): Java checks the types.
Streaming reads and writes use the table's own branch only, as in Java.
"""

from __future__ import annotations

import logging

from tarn.errors import InvalidOption
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.scan.planner import Split, planner_for
from tarn.scan.predicate import Predicate
from tarn.store.context import TableContext
from tarn.types import type_to_sql

log = logging.getLogger(__name__)

FALLBACK = "scan.fallback-branch"
PRIMARY = "scan.primary-branch"


def second_branch(options: dict, own_branch: str) -> tuple[str, bool] | None:
    """(the other branch, whether the table's own branch comes first), None without one.
    `options`: the table's latest (time travel reads with them too, as Java's table does)."""
    fallback, primary = options.get(FALLBACK), options.get(PRIMARY)
    if fallback and primary:
        raise InvalidOption(f"cannot set both '{FALLBACK}' and '{PRIMARY}'")
    name = fallback or primary
    if not name or name == own_branch:
        return None
    return name, bool(fallback)


def check_options(context: TableContext, options: dict) -> None:
    """At ALTER: both options set, or a branch that does not exist, are refused (Java's
    SchemaValidation.validateFallbackBranch)."""
    fallback, primary = options.get(FALLBACK), options.get(PRIMARY)
    if fallback and primary:
        raise InvalidOption(f"table {context.name}: cannot set both '{FALLBACK}' and '{PRIMARY}'")
    for key, name in ((FALLBACK, fallback), (PRIMARY, primary)):
        if name and name != "main" and not TableContext(context.file_io, context.root, branch=name).schema_store.list_ids():
            raise InvalidOption(f"table {context.name}: cannot set '{key}' = '{name}': branch '{name}' does not exist")


def branch_context(context: TableContext, name: str) -> TableContext | None:
    other = TableContext(context.file_io, context.root, f"{context.name.split('$')[0]}$branch_{name}", branch=name)
    if other.schema() is None:
        log.error("table %s: branch '%s' named by %s/%s has no schema; reading the table's own branch only",
                  context.name, name, FALLBACK, PRIMARY)
        return None
    return other


def check_same_columns(context: TableContext, schema: TableSchema, other: TableContext) -> TableSchema:
    theirs = other.schema()
    ours_cols = [(f.name, type_to_sql(f.type).replace(" NOT NULL", "")) for f in schema.fields]
    their_cols = [(f.name, type_to_sql(f.type).replace(" NOT NULL", "")) for f in theirs.fields]
    if ours_cols != their_cols:
        raise InvalidOption(f"table {context.name}: branch '{other.branch}' ({FALLBACK} / {PRIMARY}) does not have "
                            f"the table's columns: {their_cols} vs {ours_cols}")
    return theirs


def combine(context: TableContext, schema: TableSchema, snapshot: Snapshot | None, predicate: Predicate | None,
            own: list[Split], latest: bool) -> list[Split]:
    """The splits of a read with a second branch: own splits and the other branch's, whole
    partitions from each (see the module docstring)."""
    found = second_branch(context.schema().options, context.branch)
    if found is None:
        return own
    name, own_first = found
    other = branch_context(context, name)
    if other is None:
        return own
    other_schema = check_same_columns(context, schema, other)
    other_snapshot = other.latest_snapshot() if latest or snapshot is None else _at_time(other, snapshot)
    theirs = [_tagged(s, name) for s in planner_for(other, other_schema).plan(other_snapshot, predicate)]
    if own_first:
        first = _partitions(context, schema, snapshot, predicate)
        return own + [s for s in theirs if s.partition not in first]
    first = _partitions(other, other_schema, other_snapshot, predicate)
    return theirs + [s for s in own if s.partition not in first]


def _partitions(context: TableContext, schema: TableSchema, snapshot: Snapshot | None,
                predicate: Predicate | None) -> set[bytes]:
    """Partitions with live files in `snapshot` (only the partition part of `predicate` applies)."""
    planner = planner_for(context, schema)
    return {e.partition for e in planner.live_entries(snapshot, predicate)}


def _at_time(other: TableContext, snapshot: Snapshot) -> Snapshot | None:
    found = other.snapshot_store.at_or_before(snapshot.time_millis)
    if found is not None:
        return found
    earliest = other.snapshot_store.earliest_id()
    return other.snapshot(earliest) if earliest is not None else None


def _tagged(split: Split, branch: str) -> Split:
    split.branch = branch
    return split


class BranchReader:
    """Reads each split with the reader of the branch it came from (`Split.branch`; empty:
    the table's own). The other branch's reader reads its files with its own schemas."""

    def __init__(self, own, make_other):
        self.own = own
        self._make_other = make_other
        self._other = None

    def _for(self, split: Split):
        if not split.branch:
            return self.own
        if self._other is None:
            self._other = self._make_other(split.branch)
        return self._other

    def read(self, split: Split):
        return self._for(split).read(split)

    def read_chunks(self, split: Split):
        return self._for(split).read_chunks(split)

    def read_all(self, splits: list[Split]) -> list:
        """Every split's rows, each branch's splits read by its reader."""
        own = [s for s in splits if not s.branch]
        other = [s for s in splits if s.branch]
        return self.own.read_all(own) + (self._for(other[0]).read_all(other) if other else [])

    def read_batches(self, splits: list[Split]):
        for split in splits:
            for table in self.read_chunks(split):
                yield from table.to_batches()

    def __getattr__(self, name):
        return getattr(self.own, name)
