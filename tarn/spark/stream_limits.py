"""How much one micro-batch of the streaming source reads (Paimon's Spark read limits).

Options (as Paimon's Spark connector names them):
- `read.stream.maxFilesPerTrigger`, `read.stream.maxBytesPerTrigger`,
  `read.stream.maxRowsPerTrigger`: a batch takes snapshots in order while the files, bytes
  and rows they add stay within every limit given; a batch always takes at least one
  snapshot, and never part of one (a snapshot is one atomic change of the table);
- `read.stream.minRowsPerTrigger` with `read.stream.maxTriggerDelayMs` (both or neither): no
  batch starts until that many rows are waiting, unless the delay since the last batch passed.

Spark may ask for everything available regardless (`ReadAllAvailable`); the limits then do
not apply. Under `Trigger.AvailableNow` the minimum is ignored (the run must end).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxFiles,
                                              ReadMaxRows, ReadMinRows)

from tarn.errors import InvalidOption

OPTION_NAMES = {
    "max_files": "read.stream.maxFilesPerTrigger",
    "max_bytes": "read.stream.maxBytesPerTrigger",
    "max_rows": "read.stream.maxRowsPerTrigger",
    "min_rows": "read.stream.minRowsPerTrigger",
    "max_delay_ms": "read.stream.maxTriggerDelayMs",
}


@dataclass(frozen=True)
class Cost:
    """What one snapshot adds to a streaming read."""

    files: int = 0
    bytes: int = 0
    rows: int = 0

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.files + other.files, self.bytes + other.bytes, self.rows + other.rows)


@dataclass(frozen=True)
class StreamLimits:
    max_files: int | None = None
    max_bytes: int | None = None
    max_rows: int | None = None
    min_rows: int | None = None
    max_delay_ms: int | None = None

    @classmethod
    def of(cls, options: dict[str, str], what: str) -> "StreamLimits":
        """Parse the limits from Spark's (lower-cased) options."""
        values = {}
        for attr, name in OPTION_NAMES.items():
            text = options.get(name.lower())
            if text is None:
                continue
            try:
                value = int(text)
            except ValueError:
                value = 0
            if value <= 0:
                raise InvalidOption(f"{what}: option '{name}'='{text}' must be a positive integer")
            values[attr] = value
        if ("min_rows" in values) != ("max_delay_ms" in values):
            raise InvalidOption(f"{what}: options '{OPTION_NAMES['min_rows']}' and "
                                f"'{OPTION_NAMES['max_delay_ms']}' go together: set both or neither")
        return cls(**values)

    @property
    def bounded(self) -> bool:
        return any(v is not None for v in (self.max_files, self.max_bytes, self.max_rows, self.min_rows))

    def default_read_limit(self) -> ReadLimit:
        """The one ReadLimit Spark hands back to `latestOffset` (all set limits apply then)."""
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        if self.max_files is not None:
            return ReadMaxFiles(self.max_files)
        if self.max_bytes is not None:
            return ReadMaxBytes(self.max_bytes)
        if self.min_rows is not None:
            return ReadMinRows(self.min_rows)
        return ReadAllAvailable()

    def fits(self, total: Cost) -> bool:
        return ((self.max_files is None or total.files <= self.max_files)
                and (self.max_bytes is None or total.bytes <= self.max_bytes)
                and (self.max_rows is None or total.rows <= self.max_rows))

    def take(self, costs: list[Cost]) -> int:
        """How many of the next snapshots (with these costs, in order) one batch reads: at
        least one, then while the running total fits every maximum."""
        total = Cost()
        for taken, cost in enumerate(costs):
            if taken and not self.fits(total + cost):
                return taken
            total = total + cost
        return len(costs)

    def waits(self, waiting: Cost, millis_since_last_batch: float) -> bool:
        """Should the next batch wait for more rows (`minRowsPerTrigger`)?"""
        return (self.min_rows is not None and waiting.rows < self.min_rows
                and millis_since_last_batch < self.max_delay_ms)


def applies(limit: ReadLimit) -> bool:
    """False when Spark asks for everything available."""
    return not isinstance(limit, ReadAllAvailable)
