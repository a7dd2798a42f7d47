"""Commit callbacks: what runs after a commit landed, given what landed.

A callback is registered once per process (`register`) with the table shapes it applies to;
after every landed commit the core runs those that apply to the table's latest schema, in
the order they were registered, with the snapshots the commit made (`Landed`: the snapshot,
its delta and changelog entries, the index files it added and removed), as Java's
`CommitCallback` gets its context. A callback never raises into the commit (it landed): it
returns the failures it logged, which the table keeps in `last_maintenance_errors`.

Post-commit maintenance (tags, consumer and snapshot expiry: tarn/ops/post_commit.py) is one
callback; Iceberg metadata written on commit is meant to be another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tarn.commit.result import Landed
from tarn.meta.shape import TableShape

if TYPE_CHECKING:
    from tarn.store.context import TableContext


@dataclass(frozen=True)
class CommitCallback:
    """`run(context, landed)` after each landed commit of a table whose shape `applies`."""

    name: str
    applies: Callable[[TableShape], bool]
    run: Callable[["TableContext", tuple[Landed, ...]], list[Exception]]


_REGISTERED: dict[str, CommitCallback] = {}


def register(callback: CommitCallback) -> None:
    """Register (or replace, by name) a callback for every table of this process."""
    _REGISTERED[callback.name] = callback


def callbacks_for(shape: TableShape) -> list[CommitCallback]:
    """The registered callbacks that apply to a table of this shape, in registration order."""
    return [c for c in _REGISTERED.values() if c.applies(shape)]
