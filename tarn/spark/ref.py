"""The one way the Spark connector opens a table, on the driver and in tasks.

`open_table(location, storage_options)` takes what a user or a task was given: a local path
(made absolute: tasks do not share the driver's working directory) or a URI (`s3://...`,
kept whole: a path without its scheme would be opened as a local one), with `$branch_<name>`
for a branch. What tasks receive is a table's `location` (TableContext.location), which keeps
the scheme. Catalog identifiers will open here too.
"""

from __future__ import annotations

import os

import tarn


def table_location(path: str) -> str:
    """`path` as tasks must receive it: absolute, or the URI as given."""
    return path if "://" in path else os.path.abspath(path)


def open_table(location: str, storage_options: dict | None = None) -> "tarn.Table":
    """The table at `location` (a path or URI; see the module docstring)."""
    return tarn.load_table(table_location(location), storage_options)
