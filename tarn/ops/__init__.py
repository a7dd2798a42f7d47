"""The operations on a table, one module each, built on the kernel (tarn/core.py).

Each takes a TableCore (when it scans, writes or commits) or a TableContext (when it reads or
changes metadata only), never the `Table` facade, and imports nothing above this package:
write (write, overwrite), delete, update, compact and append_compaction, rescale, alter and
validate, analyze, tags, expire, rollback, orphans, references (the files snapshots, tags and
branches hold), time_travel, system_tables, post_commit (the maintenance after each commit: a commit callback,
registered when this package is imported).
"""

from tarn.ops import post_commit  # noqa: F401 - registers post-commit maintenance (tarn/commit/callbacks.py)
