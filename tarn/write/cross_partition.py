"""Cross-partition upsert (`bucket` = -1, a primary key without every partition column: Paimon's
KEY_DYNAMIC bucket mode). Which partition and bucket each written row goes to.

Paimon's GlobalIndexAssigner, on Arrow tables:
- A key index (`write/key_index.KeyIndex`, local disk) maps every live primary key to its
  partition and bucket. It is bootstrapped from the writer's snapshot (IndexBootstrap): per
  (partition, bucket) the primary-key columns of its files are read (`bootstrap-parallelism`
  buckets at a time), deletion vectors applied, and a key counts when its newest row is live.
  With `cross-partition-upsert.index-ttl`, buckets whose every file is older than the TTL are
  not read, and entries older than the TTL are forgotten. On Spark the live keys may instead be
  read by other tasks (`live_key_rows`) and given to the assigner (`load_keys`).
- Buckets fill as Paimon's crosspartition.BucketAssigner fills them: per partition a count of
  keys per bucket, a new key goes to the lowest bucket holding fewer than
  `dynamic-bucket.target-row-num` keys, else to the smallest unused id. No HASH index files are
  written (Java writes none in this mode).
- A key found in another partition than the row's (ExistingProcessor):
  deduplicate moves it: a -D of the row with the old partition's values into the old bucket
  (its count decremented), the rows into the new partition; partial-update and aggregation
  write the rows into the old partition and bucket; first-row drops them.
  Retractions (-D, -U) go to where the key lives; those of a key living nowhere are dropped
  (Paimon would place them as a new key: nothing to retract, and no key is made known by them).
- Several rows of one key in one write move as a whole: deduplicate takes the partition of the
  key's last +I/+U row, the others that of its first (the key's partition once that row made
  it known); every kept row of the key is written into that partition. Buckets are handed out
  and freed in the order of the rows that trigger them, as Paimon's row-by-row processing does.
- `KEPT_ASSIGNERS`: after a `Table.write` landed, its assigner is kept for the table's next
  writer in the process, which continues the index when nothing else committed in between.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn import partition as partitions
from tarn.bucket import row_hashes
from tarn.data.lookup import KeyCodec
from tarn.data.reader import FileReader
from tarn.errors import TarnError
from tarn.lsm.merge import DELETE, INSERT, SEQUENCE, UPDATE_AFTER, VALUE_KIND
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.options import Options
from tarn.write.key_index import KeyIndex
from tarn.write.assign import partitions_of

DEDUPLICATE, FIRST_ROW = "deduplicate", "first-row"


def is_cross_partition(schema: TableSchema, bucket: int) -> bool:
    """Paimon's crossPartitionUpdate with bucket = -1: KEY_DYNAMIC bucket mode."""
    return (bucket == -1 and bool(schema.primary_keys) and bool(schema.partition_keys)
            and not set(schema.partition_keys) <= set(schema.primary_keys))


def now_millis() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class BucketCounts:
    """Keys per bucket of each partition (Paimon's crosspartition.BucketAssigner)."""

    target: int
    counts: dict[int, dict[int, int]] = field(default_factory=dict)  # partition id -> bucket -> keys
    assigner: int = 0  # this assigner task owns the buckets b with b % assigners == assigner
    assigners: int = 1

    def owns(self, bucket: int) -> bool:
        return bucket % self.assigners == self.assigner

    def add(self, partition_id: int, bucket: int, keys: int) -> None:
        buckets = self.counts.setdefault(partition_id, {})
        buckets[bucket] = buckets.get(bucket, 0) + keys

    def remove(self, partition_ids: np.ndarray, buckets: np.ndarray) -> None:
        self.add_each(partition_ids, buckets, -1)

    def add_each(self, partition_ids: np.ndarray, buckets: np.ndarray, sign: int = 1) -> None:
        """One key more (sign 1) or less (-1) for each (partition id, bucket) pair given."""
        if not len(partition_ids):
            return
        packed = (np.asarray(partition_ids, np.int64) << 16) | np.asarray(buckets, np.int64)
        pairs, counts = np.unique(packed, return_counts=True)
        for pair, n in zip(pairs.tolist(), counts.tolist()):
            self.add(pair >> 16, pair & 0xFFFF, sign * n)

    def order_matters(self, partition_id: int, n: int, leaving: np.ndarray) -> bool:
        """Whether keys leaving buckets `leaving` of the partition could change where `n` new
        keys go: not when its lowest bucket with room takes all of them and none leaves a
        bucket below it."""
        buckets = self.counts.get(partition_id, {})
        open_ = [b for b in sorted(buckets) if buckets[b] < self.target and self.owns(b)]
        if not open_:
            return len(leaving) > 0 and n > 0
        lowest = open_[0]
        return n > self.target - buckets[lowest] or (len(leaving) > 0 and int(leaving.min()) < lowest)

    def assign(self, partition_id: int, n: int) -> np.ndarray:
        """Buckets for `n` new keys: the lowest bucket under the target first, then new ids."""
        buckets = self.counts.setdefault(partition_id, {})
        out = np.empty(n, dtype=np.int32)
        done = 0
        for bucket in sorted(buckets):
            room = self.target - buckets[bucket]
            if room > 0 and done < n and self.owns(bucket):
                take = min(room, n - done)
                out[done:done + take] = bucket
                buckets[bucket] += take
                done += take
        candidate = self.assigner  # the smallest owned id not in use
        while done < n:
            while candidate in buckets:
                candidate += self.assigners
            take = min(self.target, n - done)
            out[done:done + take] = candidate
            buckets[candidate] = take
            done += take
        return out


@dataclass
class PartitionIds:
    """Partition bytes <-> a dense id, with each partition's values."""

    ids: dict[bytes, int] = field(default_factory=dict)
    values: list[tuple] = field(default_factory=list)

    def id_of(self, partition: bytes, values) -> int:
        found = self.ids.get(partition)
        if found is None:
            found = self.ids[partition] = len(self.values)
            self.values.append(tuple(values))
        return found


@dataclass(frozen=True)
class BucketFiles:
    """One bucket of the snapshot the writer starts from."""

    partition: bytes
    bucket: int
    path: str
    files: tuple[DataFileMeta, ...]
    deleted_rows: Callable[[str], np.ndarray | None] | None = None


@dataclass(frozen=True)
class KeyGroups:
    """The rows of a write grouped by key: one sort, then per-key reductions over row numbers."""

    order: np.ndarray  # rows sorted by key, arrival order within a key
    starts: np.ndarray  # where each key's rows begin in `order`
    distinct: np.ndarray  # the keys, sorted
    inverse: np.ndarray  # each row's key number

    @classmethod
    def of(cls, keys: np.ndarray) -> "KeyGroups":
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        new = np.ones(len(keys), dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        inverse = np.empty(len(keys), dtype=np.int64)
        inverse[order] = np.cumsum(new) - 1
        return cls(order, starts, ordered[starts], inverse)

    def first(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Per key: its first row (among `mask`; the row count where none)."""
        rows = self.order if mask is None else np.where(mask[self.order], self.order, len(self.order))
        return np.minimum.reduceat(rows, self.starts)

    def last(self, mask: np.ndarray) -> np.ndarray:
        """Per key: its last row among `mask` (-1 where none)."""
        return np.maximum.reduceat(np.where(mask[self.order], self.order, -1), self.starts)

    def any(self, mask: np.ndarray) -> np.ndarray:
        return np.logical_or.reduceat(mask[self.order], self.starts)


class CrossPartitionAssigner:
    """Routes the rows of a cross-partition table (module docstring). `buckets()` lists the
    buckets of the snapshot the writer starts from; it is read on the first `route`."""

    def __init__(self, schema: TableSchema, options: Options, reader: FileReader,
                 buckets: Callable[[], Iterable[BucketFiles]], clock: Callable[[], int] = now_millis,
                 channel: tuple[int, int] = (0, 1)):
        self.schema = schema
        self.engine = options.get("merge-engine") or DEDUPLICATE
        self.ignore_delete = bool(options.bool("ignore-delete"))
        self.remove_on_delete = bool(options.bool("aggregation.remove-record-on-delete")
                                     or options.bool("partial-update.remove-record-on-delete"))
        self.codec = KeyCodec(tuple(schema.primary_keys), tuple(schema.field(k) for k in schema.primary_keys))
        self.reader = reader
        self.buckets = buckets
        self.clock = clock
        self.ttl_ms = options.duration_ms("cross-partition-upsert.index-ttl")
        self.parallelism = options.int("cross-partition-upsert.bootstrap-parallelism") or 1
        self.index = KeyIndex(options.memory_bytes("lookup.cache-max-memory-size"), self.ttl_ms)
        # one of several assigner tasks (Spark): it holds the keys of its hash range (`key_channels`)
        # and creates buckets b with b % tasks == its id, as Paimon's assigners do
        self.channel = channel
        self.counts = BucketCounts(options.int("dynamic-bucket.target-row-num"), assigner=channel[0],
                                   assigners=channel[1])
        self.partitions = PartitionIds()
        self._bootstrapped = False

    # ------------------------------------------------------------------ bootstrap

    def bootstrap(self) -> None:
        """Load the live keys of the starting snapshot into the index (once)."""
        if self._bootstrapped:
            return
        self._bootstrapped = True
        now = self.clock()
        wanted = [b for b in self.buckets() if within_ttl(b, self.ttl_ms, now)]
        with ThreadPoolExecutor(max_workers=max(1, min(self.parallelism, len(wanted) or 1))) as pool:
            for bucket, keys in zip(wanted, pool.map(self._live_keys, wanted)):
                if not len(keys):
                    continue
                part = self.partitions.id_of(bucket.partition, partitions.from_bytes(self.schema, bucket.partition))
                self.counts.add(part, bucket.bucket, len(keys))
                self.index.put(keys, np.full(len(keys), part, np.int32),
                               np.full(len(keys), bucket.bucket, np.int32), now)

    def load_keys(self, keys: pa.Table, partition_bytes: pa.Array, buckets: np.ndarray) -> None:
        """Bootstrap from given live keys instead of from files (keys read by other tasks, Spark):
        `keys` holds the conformed key columns, each key with its partition (BinaryRow bytes)
        and bucket; they join the index and the bucket counts as `bootstrap` adds its own."""
        if not keys.num_rows:
            return
        self._bootstrapped = True
        coded = pc.dictionary_encode(partition_bytes)
        ids = np.array([self.partitions.id_of(p, partitions.from_bytes(self.schema, p))
                        for p in coded.dictionary.to_pylist()], dtype=np.int32)
        part_ids = ids[coded.indices.to_numpy(zero_copy_only=False)]
        buckets = np.asarray(buckets, dtype=np.int32)
        self.counts.add_each(part_ids, buckets)
        self.index.put(self.codec.encode(keys), part_ids, buckets, self.clock())

    def _live_keys(self, bucket: BucketFiles) -> np.ndarray:
        """The encoded primary keys whose merged row in this bucket is live (this task's range)."""
        _, keys, live = self._read_keys(bucket)
        return keys[live]

    def live_key_rows(self, bucket: BucketFiles) -> pa.Table:
        """The key columns of the keys whose merged row in this bucket is live (of this task's
        hash range), one row per key. Deletion vectors applied."""
        rows, _, live = self._read_keys(bucket)
        return rows.select(list(self.codec.names)).take(pa.array(live))

    def _read_keys(self, bucket: BucketFiles) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """The bucket's key rows of this task's range (with their system columns), the keys
        encoded, and the row numbers of one live row per key."""
        fields = list(self.codec.fields)
        reader = self.reader.with_deletions(bucket.deleted_rows)
        rows = pa.concat_tables([reader.read(bucket.path, m, fields, with_system=True) for m in bucket.files])
        _log_reads(bucket)
        if self.channel[1] > 1 and rows.num_rows:
            rows = rows.filter(pa.array(key_channels(rows, self.schema, self.channel[1]) == self.channel[0]))
        keys = self.codec.encode(rows) if rows.num_rows else np.zeros(0, dtype=np.int64)
        return rows, keys, self._live_rows(rows, keys)

    def _live_rows(self, rows: pa.Table, keys: np.ndarray) -> np.ndarray:
        """Row numbers of one row per key whose merged row is live."""
        if not len(keys):
            return np.zeros(0, dtype=np.int64)
        kinds = rows.column(VALUE_KIND).to_numpy()
        adds = (kinds == INSERT) | (kinds == UPDATE_AFTER)
        if self.engine == FIRST_ROW or self.ignore_delete:  # retractions never remove a key
            added = np.flatnonzero(adds)
            return added[np.unique(keys[added], return_index=True)[1]]
        if self.engine == "aggregation" and not self.remove_on_delete:  # they retract values; the row stays
            return np.unique(keys, return_index=True)[1]
        sequence = rows.column(SEQUENCE).to_numpy()
        order = _key_sequence_order(keys, sequence)
        ordered = keys[order]
        last = np.ones(len(keys), dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=last[:-1])
        return order[last & adds[order]]

    # ------------------------------------------------------------------ routing

    def route(self, data: pa.Table) -> tuple[pa.Table, np.ndarray]:
        """The rows to write (partition columns set to where each key lives; -D rows added for
        moved keys; rows first-row ignores dropped) and the bucket of each. `data`: conformed
        rows with their `_VALUE_KIND` column, in arrival order."""
        self.bootstrap()
        n = data.num_rows
        if n == 0:
            return data, np.zeros(0, dtype=np.int32)
        now = self.clock()
        row_part = self._row_partitions(data)
        keys = self.codec.encode(data)
        groups = KeyGroups.of(keys)
        distinct, inverse = groups.distinct, groups.inverse
        kinds = data.column(VALUE_KIND).to_numpy()
        adds = (kinds == INSERT) | (kinds == UPDATE_AFTER)
        first_row = np.where(groups.any(adds), groups.first(adds), groups.first())  # first +I/+U row
        last_add = groups.last(adds)
        found, old_part, old_bucket = self.index.get(distinct, now)
        away = groups.first(adds & (row_part != old_part[inverse]))  # the row that moves a key, for Paimon
        trigger = np.where(found & (away < n), away, first_row)
        target, bucket, moved = self._targets(row_part, first_row, last_add, trigger, found, old_part, old_bucket)
        unknown = ~found & (last_add < 0)  # only retractions of a key living nowhere: nothing to do
        placed = (~found & ~unknown) | moved  # new keys and moved keys: where they live from now on
        self.index.put(distinct[placed], target[placed], bucket[placed], now)
        keep = ~unknown[inverse]
        if self.engine == FIRST_ROW:  # rows of a key in another partition than where it lives
            keep &= ~adds | (row_part == target[inverse])
        retract = self._retractions(data, last_add, moved, old_part, old_bucket)
        rows = self._in_partitions(data, row_part, target[inverse])
        buckets = bucket[inverse]
        if not keep.all():
            rows, buckets = rows.filter(pa.array(keep)), buckets[keep]
        if retract is not None:
            rows = pa.concat_tables([retract[0], rows])
            buckets = np.concatenate([retract[1], buckets])
        return rows, buckets

    def _row_partitions(self, data: pa.Table) -> np.ndarray:
        out = np.empty(data.num_rows, dtype=np.int32)
        for part, values, rows in partitions_of(data, self.schema):
            pid = self.partitions.id_of(part, values)
            if rows is None:
                out[:] = pid
            else:
                out[rows] = pid
        return out

    def _targets(self, row_part, first_row, last_add, trigger, found, old_part, old_bucket):
        """Per distinct key: target partition id, bucket, and whether it moves (deduplicate)."""
        has_add = last_add >= 0
        if self.engine == DEDUPLICATE:
            wanted = row_part[np.maximum(last_add, 0)]
            moved = found & has_add & (wanted != old_part)
            stays = found & ~moved
        else:
            wanted = row_part[first_row]
            moved = np.zeros(len(found), dtype=bool)
            stays = found
        target = np.where(stays, old_part, wanted).astype(np.int32)
        bucket = np.where(stays, old_bucket, 0).astype(np.int32)
        fresh = np.flatnonzero(~stays & has_add)  # new and moved keys: a bucket in their target partition
        self._fill(target, bucket, fresh, np.flatnonzero(moved), old_part, old_bucket, trigger)
        return target, bucket, moved

    def _fill(self, target, bucket, fresh, moved, old_part, old_bucket, trigger) -> None:
        """Buckets for the `fresh` keys, counts decremented for the `moved` ones, partition by
        partition, as if in the order of the rows that triggered each (Paimon handles rows one
        by one: a key moving out frees room for the keys after it). When the order cannot
        change the outcome (the lowest open bucket takes every new key and no key leaves a
        lower bucket) a partition is filled at once; otherwise runs of one kind at a time."""
        if not len(fresh):
            return
        fresh = _by_row(fresh, trigger[fresh])  # new keys take buckets in arrival order
        leaving, arriving = old_part[moved], target[fresh]
        for part in np.unique(np.concatenate([leaving, arriving])).tolist():
            out, into = moved[leaving == part], fresh[arriving == part]
            if len(into) and not self.counts.order_matters(part, len(into), old_bucket[out]):
                bucket[into] = self.counts.assign(part, len(into))
                self.counts.remove(old_part[out], old_bucket[out])
            else:
                self._fill_in_order(target, bucket, into, out, old_part, old_bucket, trigger)

    def _fill_in_order(self, target, bucket, fresh, moved, old_part, old_bucket, trigger) -> None:
        """One partition's events in trigger order, runs of one kind at once."""
        times = np.concatenate([trigger[moved], trigger[fresh]])
        kinds = np.concatenate([np.zeros(len(moved), np.int8), np.ones(len(fresh), np.int8)])
        keys = np.concatenate([moved, fresh])
        order = np.lexsort((kinds, times))
        kinds, keys = kinds[order], keys[order]
        bounds = np.concatenate(([0], np.flatnonzero(kinds[1:] != kinds[:-1]) + 1, [len(kinds)]))
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            run = keys[lo:hi]
            if kinds[lo] == 0:
                self.counts.remove(old_part[run], old_bucket[run])
            else:
                bucket[run] = self.counts.assign(int(target[run[0]]), len(run))

    def _retractions(self, data, last_add, moved, old_part, old_bucket):
        """Deduplicate moves: the key's last +I/+U row as -D with the old partition's values."""
        if not moved.any():
            return None
        keys = np.flatnonzero(moved)
        rows = data.take(pa.array(last_add[keys]))
        rows = self._with_partition_columns(rows, old_part[keys])
        rows = rows.set_column(rows.schema.get_field_index(VALUE_KIND), VALUE_KIND,
                               pa.array(np.full(rows.num_rows, DELETE, dtype=np.int8)))
        return rows, old_bucket[keys]

    def _in_partitions(self, data: pa.Table, row_part: np.ndarray, target_part: np.ndarray) -> pa.Table:
        if (row_part == target_part).all():
            return data
        return self._with_partition_columns(data, target_part)

    def _with_partition_columns(self, rows: pa.Table, part_ids: np.ndarray) -> pa.Table:
        """The rows with their partition columns set to the values of partitions `part_ids`."""
        indices = pa.array(np.asarray(part_ids, dtype=np.int32))
        for i, name in enumerate(self.schema.partition_keys):
            at = rows.schema.get_field_index(name)
            values = pa.array([v[i] for v in self.partitions.values], type=rows.schema.field(at).type)
            rows = rows.set_column(at, rows.schema.field(at), values.take(indices))
        return rows

    def close(self) -> None:
        self.index.close()


def within_ttl(bucket: BucketFiles, ttl_ms: int | None, now: int) -> bool:
    """IndexBootstrap.filterSplit: a bucket is read when one of its files is within the TTL."""
    if ttl_ms is None:
        return True
    return any(m.creation_time is None or now <= m.creation_time + ttl_ms for m in bucket.files)


READ_LOG_ENV = "TARN_KEY_BOOTSTRAP_LOG"  # a file path: each data file read for a key index appends its name


def _log_reads(bucket: BucketFiles) -> None:
    """Tests count bootstrap reads across Spark's Python workers through this file."""
    log = os.environ.get(READ_LOG_ENV)
    if log:
        with open(log, "a") as out:
            out.write("".join(f"{m.file_name}\n" for m in bucket.files))


def key_channels(rows: pa.Table, schema: TableSchema, channels: int) -> np.ndarray:
    """The assigner task of each row's primary key (a hash of the key's BinaryRow)."""
    hashes = row_hashes(rows, [schema.field(k) for k in schema.primary_keys]).astype(np.int64)
    return np.abs(hashes) % channels


def _by_row(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`keys` ordered by their (distinct) row numbers, without a sort."""
    slots = np.full(int(rows.max()) + 1, -1, dtype=np.int64)
    slots[rows] = keys
    return slots[slots >= 0]


def _key_sequence_order(keys: np.ndarray, sequence: np.ndarray) -> np.ndarray:
    """Rows ordered by key, then sequence (bytes keys)."""
    by_sequence = np.argsort(sequence, kind="stable")
    return by_sequence[np.argsort(keys[by_sequence], kind="stable")]


def ignored_move_problem(options: Options) -> str | None:
    if (options.get("merge-engine") or DEDUPLICATE) == DEDUPLICATE and options.bool("ignore-delete"):
        return ("'ignore-delete' cannot be used with the deduplicate engine on a cross-partition upsert table "
                "(primary key without every partition key): a key moving to another partition leaves its "
                "old row through a -D row, which ignore-delete would drop (two rows for one key)")
    return None


class KeptAssigners:
    """Process-wide: assigners whose writer's commit landed, each with the snapshot its index
    matches, so the next writer of that table continues the index instead of reading the table
    again. A writer takes an assigner only when the table is still at that snapshot (no other
    commit since) with the same schema and options; at most `limit` tables are kept."""

    def __init__(self, limit: int = 4):
        self.limit = limit
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[tuple, CrossPartitionAssigner]] = OrderedDict()

    def put(self, root: str, state: tuple, assigner: CrossPartitionAssigner) -> None:
        with self._lock:
            old = self._kept.pop(root, None)
            self._kept[root] = (state, assigner)
            evicted = [old[1]] if old is not None and old[1] is not assigner else []
            while len(self._kept) > self.limit:
                evicted.append(self._kept.popitem(last=False)[1][1])
        for gone in evicted:
            gone.close()

    def take(self, root: str, state: tuple) -> CrossPartitionAssigner | None:
        """The kept assigner of the table if it matches `state` (snapshot id, schema id, options)."""
        with self._lock:
            found = self._kept.pop(root, None)
        if found is None:
            return None
        if found[0] != state:
            found[1].close()
            return None
        return found[1]

    def clear(self) -> None:
        with self._lock:
            kept, self._kept = list(self._kept.values()), OrderedDict()
        for _, assigner in kept:
            assigner.close()


KEPT_ASSIGNERS = KeptAssigners()


def check_cross_partition(schema: TableSchema, options: Options, identifier: str) -> None:
    """Paimon's rules for KEY_DYNAMIC tables (SchemaValidation): no `sequence.field`; and no
    `ignore-delete` with deduplicate (the -D that removes a moved key's old row would be
    dropped: Paimon then keeps the key in both partitions)."""
    problem = ignored_move_problem(options)
    if problem:
        raise TarnError(f"table {identifier}: {problem}")
    if options.list("sequence.field"):
        raise TarnError(f"table {identifier}: 'sequence.field' cannot be used with a cross-partition upsert "
                        f"table (primary key {list(schema.primary_keys)} does not hold every partition key "
                        f"{list(schema.partition_keys)})")
