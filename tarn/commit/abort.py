"""Aborting a commit: deleting the files of commit messages that no snapshot references, after
a write or a commit failed (`abort`), or around a block that writes them (`aborting`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tarn.fs import FileIO
from tarn.meta.schema import TableSchema
from tarn.write.message import CommitMessage


def abort(file_io: FileIO, root: str, schema: TableSchema, messages: list[CommitMessage],
          keep: set[str] = frozenset()) -> None:
    """Delete the files the messages added that no snapshot references
    (`CommitMessage.unreferenced_paths`), never a name in `keep` (files of a part of the commit
    that did land)."""
    for message in messages:
        for path in message.unreferenced_paths(root, schema, keep):
            file_io.delete(file_io.native(path))  # an external data file is recorded as a URI


@contextmanager
def aborting(file_io: FileIO, root: str, schema: TableSchema,
             messages: "list[CommitMessage] | Callable[[], list[CommitMessage]]") -> Iterator[None]:
    """Write files in the block; when it raises (any BaseException), abort `messages` (a list
    the block fills, or a function giving them, such as `writer.messages`) and re-raise."""
    try:
        yield
    except BaseException:
        abort(file_io, root, schema, messages() if callable(messages) else messages)
        raise
