"""Partition expiry: dropping whole partitions once they are older than
`partition.expiration-time`, as Paimon's PartitionExpire does.

- **values-time** (default): a partition's time comes from its values — the first partition
  field, or `partition.timestamp-pattern` with `$key` replaced by each key's value — parsed by
  `partition.timestamp-formatter` (a Java DateTimeFormatter pattern) or, without one, as
  `y-M-d[ H:m:s[.fraction]]`. It is expired when that time is before now (local wall clock)
  minus the expiration time. A value that does not parse, or a null, never expires (logged).
  Values are taken as Java's internal objects print (a DATE partition column is its day count,
  which does not parse: such tables expire by update-time).
- **update-time**: a partition is expired when its newest file was created before now minus
  the expiration time.

The expired partitions, sorted by their values joined with ",", at most
`partition.expiration-max-num` of them, are dropped by OVERWRITE commits of no rows,
`partition.expiration-batch-size` partitions each. Tags and older snapshots keep their files
until snapshot expiry frees them.

After a commit (tarn/ops/post_commit.py) the check runs once per
`partition.expiration-check-interval` per process and table (the first within one interval of
the first commit, as Java spreads it); 0 checks after every commit, and
`end-input.check-partition-expire` checks after every batch commit. `expire_partitions` runs it
now, with Paimon's procedure arguments, and returns the partitions it dropped
(`"dt=2026-01-01, hh=01"`).
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tarn import partition as partitions
from tarn.commit.committer import Overwrite
from tarn.errors import InvalidArgument, InvalidOption
from tarn.meta.manifest import ADD
from tarn.meta.snapshot import BATCH_COMMIT_IDENTIFIER
from tarn.options import Options, parse_duration_ms, parse_int
from tarn.partition_time import internal_text, java_pattern_to_strptime, parse_partition_time, partition_time_text
from tarn.scan.planner import planner_for

if TYPE_CHECKING:
    from tarn.core import TableCore
    from tarn.meta.schema import TableSchema

log = logging.getLogger(__name__)

STRATEGIES = ("values-time", "update-time")
NO_EXPIRED = "No expired partitions."


@dataclass(frozen=True)
class ExpireSettings:
    """One run's settings: the table's options, or a procedure's arguments over them."""

    expiration_ms: int
    strategy: str = "values-time"
    formatter: str | None = None
    pattern: str | None = None
    max_num: int = 100
    batch_size: int | None = None

    @classmethod
    def of(cls, options: Options, identifier: str) -> "ExpireSettings | None":
        """The table's settings; None when it has no `partition.expiration-time`."""
        expiration = options.duration_ms("partition.expiration-time")
        if expiration is None:
            return None
        strategy = (options.get("partition.expiration-strategy") or "values-time").strip().lower()
        if strategy not in STRATEGIES:
            raise InvalidOption(f"table {identifier}: option 'partition.expiration-strategy' = '{strategy}' is "
                                f"not one of {list(STRATEGIES)}")
        formatter = options.get("partition.timestamp-formatter")
        if formatter is not None:
            java_pattern_to_strptime(formatter, identifier)
        return cls(expiration, strategy, formatter, options.get("partition.timestamp-pattern"),
                   options.int("partition.expiration-max-num"),
                   options.int("partition.expiration-batch-size"))


# ---------------------------------------------------------------------------------------------
# finding and dropping expired partitions


@dataclass(frozen=True)
class LivePartition:
    partition: bytes
    values: tuple
    last_file_creation: int  # local wall-clock millis of its newest file


def live_partitions(core: "TableCore") -> list[LivePartition]:
    """Every partition of the latest snapshot holding files, with its newest file's creation
    time (over all entries the manifests list, as Java's PartitionEntry merges them)."""
    snapshot = core.latest_snapshot()
    if snapshot is None:
        return []
    planner = planner_for(core)
    counts: dict[bytes, int] = {}
    newest: dict[bytes, int] = {}
    for meta in planner.manifest_metas(snapshot):
        for entry in planner.manifests.read_manifest(meta.file_name):
            counts[entry.partition] = counts.get(entry.partition, 0) + (1 if entry.kind == ADD else -1)
            created = entry.file.creation_time or 0
            newest[entry.partition] = max(newest.get(entry.partition, created), created)
    schema = core.schema()
    return [LivePartition(p, partitions.from_bytes(schema, p), newest[p]) for p, n in counts.items() if n > 0]


def is_expired(name: str, schema: "TableSchema", part: LivePartition, settings: ExpireSettings,
               now: dt.datetime) -> bool:
    cutoff = now - dt.timedelta(milliseconds=settings.expiration_ms)
    if settings.strategy == "update-time":
        cutoff_ms = int(cutoff.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
        return cutoff_ms > part.last_file_creation
    keys = list(schema.partition_keys)
    texts = [internal_text(v) for v in part.values]
    try:
        moment = parse_partition_time(partition_time_text(keys, texts, settings.pattern), settings.formatter)
    except (ValueError, OverflowError):
        log.warning("table %s: partition %s: cannot extract a date-time from its values; it does not expire "
                    "by values-time (use 'partition.expiration-strategy' = 'update-time' or drop it)",
                    name, _spec_text(keys, texts))
        return False
    except TypeError:
        log.warning("table %s: partition %s holds a null value and does not expire by values-time", name,
                    _spec_text(keys, texts))
        return False
    return cutoff > moment


def _spec_text(keys: list[str], texts: list[str | None]) -> str:
    return ", ".join(f"{k}={t}" for k, t in zip(keys, texts))


def expired(core: "TableCore", settings: ExpireSettings, now: dt.datetime | None = None) -> list[LivePartition]:
    """The partitions to drop now: sorted by their values, at most `max_num`."""
    schema = core.schema()
    now = now or dt.datetime.now()
    default_name = core.options.get("partition.default-name")
    found = [p for p in live_partitions(core) if is_expired(core.name, schema, p, settings, now)]
    found.sort(key=lambda p: ",".join(default_name if t is None else t for t in map(internal_text, p.values)))
    return found[:max(settings.max_num, 0)]


def drop(core: "TableCore", parts: list[LivePartition], settings: ExpireSettings, commit_user: str | None = None,
         commit_identifier: int = BATCH_COMMIT_IDENTIFIER) -> list[str]:
    """Drop `parts` in OVERWRITE commits of `batch_size` partitions; their specs as text."""
    if not parts:
        return []
    size = settings.batch_size if settings.batch_size and 0 < settings.batch_size < len(parts) else len(parts)
    schema = core.schema()
    default_name = core.options.get("partition.default-name")
    for start in range(0, len(parts), size):
        chunk = parts[start:start + size]
        core.commit([], commit_user, commit_identifier,
                    overwrite=Overwrite(partitions=frozenset(p.partition for p in chunk)))
    return [", ".join(f"{k}={default_name if t is None else t}"
                      for k, t in zip(schema.partition_keys, map(internal_text, p.values))) for p in parts]


def expire_partitions(core: "TableCore", expiration_time=None, timestamp_formatter: str | None = None,
                      timestamp_pattern: str | None = None, expire_strategy: str | None = None,
                      max_expires: int | None = None, options: dict | str | None = None) -> list[str]:
    """Paimon's `expire_partitions` procedure: `options` (a dict or `k=v,k2=v2`) first, then the
    named arguments over the table's own options; returns the dropped partitions' specs."""
    name = core.name
    if not core.schema().partition_keys:
        raise InvalidArgument(f"table {name}: expire_partitions needs a partitioned table")
    given = _option_text(options, name)
    named = {"partition.expiration-time": _duration_text(expiration_time, name),
             "partition.timestamp-formatter": timestamp_formatter, "partition.timestamp-pattern": timestamp_pattern,
             "partition.expiration-strategy": expire_strategy,
             "partition.expiration-max-num": None if max_expires is None else str(_count(max_expires, name))}
    given.update({k: v for k, v in named.items() if v is not None and str(v).strip()})
    settings = ExpireSettings.of(core.options.updated(given), name)
    if settings is None:
        raise InvalidArgument(f"table {name}: expire_partitions needs an expiration time (argument "
                              f"expiration_time, or the table's 'partition.expiration-time')")
    return drop(core, expired(core, settings), settings)


def _option_text(options, name: str) -> dict[str, str]:
    if options is None:
        return {}
    if isinstance(options, dict):
        return {str(k): str(v) for k, v in options.items()}
    pairs = {}
    for part in str(options).split(","):
        if part.strip():
            key, sep, value = part.partition("=")
            if not sep:
                raise InvalidArgument(f"table {name}: expire_partitions options must be 'k=v,k2=v2', got {part!r}")
            pairs[key.strip()] = value.strip()
    return pairs


def _duration_text(value, name: str) -> str | None:
    if value is None or isinstance(value, str):
        if value is not None:
            try:
                parse_duration_ms(value)
            except ValueError:
                raise InvalidArgument(f"table {name}: expiration_time {value!r} is not a duration "
                                      f"('1 d', '12 h')") from None
        return value
    if isinstance(value, dt.timedelta):
        return f"{int(value.total_seconds() * 1000)} ms"
    raise InvalidArgument(f"table {name}: expiration_time must be a duration text ('7 d') or a timedelta, "
                          f"got {value!r}")


def _count(value, name: str) -> int:
    try:
        return parse_int(str(value), 31)
    except ValueError:
        raise InvalidArgument(f"table {name}: max_expires must be an int, got {value!r}") from None


# ---------------------------------------------------------------------------------------------
# after each commit


_LAST_CHECK: dict[str, float] = {}  # table root -> monotonic time of the last check, this process
_RUNNING: set[str] = set()  # tables whose drop commits are running in this process
_LOCK = threading.Lock()


def after_commit(core: "TableCore") -> list[str] | None:
    """The post-commit check: None when it was not due (or the table does not expire)."""
    options = core.options
    settings = ExpireSettings.of(options, core.name)
    if settings is None or not core.schema().partition_keys:
        return None
    interval = (options.duration_ms("partition.expiration-check-interval") or 0) / 1000
    latest = core.latest_snapshot()
    end_input = (options.bool("end-input.check-partition-expire") and latest is not None
                 and latest.commit_identifier == BATCH_COMMIT_IDENTIFIER)
    now = time.monotonic()
    key = core.root.rstrip("/")
    with _LOCK:
        last = _LAST_CHECK.setdefault(key, now - random.uniform(0, interval))
        if key in _RUNNING or not (interval == 0 or now > last + interval or end_input):
            return None  # not due, or this is the commit of a drop itself
        _LAST_CHECK[key] = now
        _RUNNING.add(key)
    try:
        return drop(core, expired(core, settings), settings,
                    latest.commit_user if latest else None,
                    latest.commit_identifier if latest else BATCH_COMMIT_IDENTIFIER)
    finally:
        with _LOCK:
            _RUNNING.discard(key)


def check_expiry_options(schema: "TableSchema", options: Options, identifier: str) -> None:
    """What tarn creates or alters: a known strategy and a formatter tarn parses (on a table
    without partitions the options do nothing, as in Java)."""
    ExpireSettings.of(options, identifier)
    formatter = options.get("partition.timestamp-formatter")
    if formatter is not None:
        java_pattern_to_strptime(formatter, identifier)
