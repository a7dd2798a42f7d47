"""The `tarn` command: look at and look after Paimon tables from a shell (docs/guide-cli.md).

TABLE is a table directory or URI (`/data/wh/shop.db/orders`, `s3://bucket/wh/shop.db/orders`),
or `db.table` with `--warehouse WH` (or the TARN_WAREHOUSE environment variable). Every command
prints tables for people and, with `--json`, one JSON document on stdout for scripts. Errors go
to stderr with exit status 1 (2 for a bad command line).

A plain `pip install tarn-lake` installs the command (typer and rich are core dependencies).
This module imports nothing beyond the standard library, so that the console script can say
which package is missing, in one line, when an installation lacks one; the commands live in
tarn.cli.commands (`tarn.cli.app` is its typer app, loaded on first use).
"""

from __future__ import annotations

import sys

from tarn.cli.missing import missing_package_message

_SUBMODULES = {"commands", "lsm", "missing", "where"}


def main() -> None:
    """The console script `tarn`."""
    try:
        from tarn.cli.commands import app

        app(prog_name="tarn")
    except ModuleNotFoundError as error:
        message = missing_package_message(error)
        if message is None:
            raise
        sys.stderr.write(f"error: {message}\n")
        raise SystemExit(1) from None


def __getattr__(name: str):
    """`tarn.cli.app` and the other names of tarn.cli.commands, loaded on first use."""
    if name.startswith("__") or name in _SUBMODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from tarn.cli import commands

    try:
        return getattr(commands, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
