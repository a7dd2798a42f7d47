"""The command line's filters and values, read by the scan's own code: there is one filter
language in tarn. `--where` text is what `Table.scan(filter=text)` takes (the grammar is in
tarn/scan/sql_filter.py) and its literals are converted to the columns' types as every scan
filter's are (tarn/scan/predicate.py); a value given on the command line (a partition value)
is converted the same way. Mistakes become bad command-line parameters: exit status 2.
"""

from __future__ import annotations

from typing import Sequence

import typer

from tarn.errors import InvalidFilter, SchemaMismatch
from tarn.scan.filters import scan_filter
from tarn.scan.predicate import Predicate, coerce_literal
from tarn.types import DataField


def where_predicate(text: str | None, fields: Sequence[DataField], table_name: str) -> Predicate | None:
    """The predicate of a `--where` text over `fields`, parsed and bound exactly as
    `Table.scan(filter=text)` does (None without a text); a filter that does not parse or
    does not fit the columns is a bad `--where`."""
    if text is None:
        return None
    try:
        return scan_filter(text, fields, table_name).predicate
    except (InvalidFilter, SchemaMismatch) as e:
        raise typer.BadParameter(str(e), param_hint="'--where'") from None


def parse_value(text: str, field: DataField, table_name: str, option: str):
    """A value given on the command line for column `field`, in the column's type (as a filter
    literal is converted); one that does not fit is a bad `option`."""
    try:
        return coerce_literal(text, field, table_name)
    except InvalidFilter as e:
        raise typer.BadParameter(f"{text!r}: {e}", param_hint=option) from None
