"""Dynamic bucket mode (`bucket` = -1 on a primary-key table): which bucket a key goes to, and
the HASH index files that remember it (FORMAT.md section 8).

- `HashIndexFiles` reads and writes `index/index-<uuid>-<n>` HASH files: the int32 hashes of a
  bucket's keys, big endian.
- `HashAssigner` is Paimon's HashBucketAssigner over numpy arrays: per partition it loads the
  HASH files of the snapshot it starts from, then a key hash it knows keeps its bucket, a new
  one goes to the first bucket (lowest id first) holding fewer than
  `dynamic-bucket.target-row-num` keys, else to a new bucket: the smallest unused id this
  assigner owns, up to `dynamic-bucket.max-buckets` (then a bucket it owns, picked by hash).
  Keys are split over `assigners` assigner tasks (`tarn.bucket.assigner_channels`); an
  assigner creates only buckets `b % assigners == id`, so tasks never hand out the same new
  bucket. One process plays every assigner; a Spark task plays one.
- `BucketHashes` is one bucket's index while a writer fills it (Java's
  DynamicBucketIndexMaintainer): the restored file's hashes plus the hash of every row written
  to the bucket (deletes included: a deleted key keeps its bucket). A bucket that gained a hash
  gets a new file at commit, replacing the old one.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from tarn import partition as partitions
from tarn import paths
from tarn.arrays import in_sorted
from tarn.bucket import (MAX_DYNAMIC_BUCKETS, assigner_channels, decode_hash_index, encode_hash_index,
                         owns_bucket, partition_hash, row_hashes)
from tarn.errors import InvalidOption, TarnError
from tarn.fs import FileIO, join
from tarn.meta.manifest import ADD, DELETE, HASH_INDEX, IndexManifestEntry
from tarn.meta.schema import TableSchema
from tarn.options import Options
from tarn.store.deletion_vectors import index_dir_of
from tarn.write.grouping import partition_codes

INDEX_PREFIX = "index-"


class HashIndexFiles:
    """The HASH index files of one table (cheap to create; names unique per instance)."""

    def __init__(self, file_io: FileIO, root: str, schema: TableSchema | None = None):
        self.file_io = file_io
        self.root = root
        self.dir_of = index_dir_of(root, schema)  # index-file-in-data-file-dir: the bucket's directory
        self._namer = paths.FileNamer(INDEX_PREFIX)
        self._naming = threading.Lock()  # buckets are committed from several threads

    def path(self, entry: IndexManifestEntry) -> str:
        if entry.external_path:
            return self.file_io.native(entry.external_path)
        return join(self.dir_of(entry.partition, entry.bucket), entry.file_name)

    def write(self, partition: bytes, bucket: int, hashes: np.ndarray) -> IndexManifestEntry:
        data = encode_hash_index(hashes)
        with self._naming:
            name = self._namer.next()
        self.file_io.write_bytes(join(self.dir_of(partition, bucket), name), data)
        return IndexManifestEntry(kind=ADD, partition=partition, bucket=bucket, index_type=HASH_INDEX,
                                  file_name=name, file_size=len(data), row_count=len(hashes))

    def read(self, entry: IndexManifestEntry) -> np.ndarray:
        if entry.index_type != HASH_INDEX:
            raise TarnError(f"index file {entry.file_name} is a {entry.index_type} index, not {HASH_INDEX}")
        path = self.path(entry)
        return decode_hash_index(self.file_io.read_bytes(path), path)


@dataclass(frozen=True)
class AssignerSpec:
    """How keys are spread over assigner tasks and how buckets fill (decided once per write)."""

    target_rows: int
    max_buckets: int  # -1: unbounded
    channels: int = 1  # assigner tasks the keys are shuffled to
    assigners: int = 1  # of those, how many create buckets (initial buckets of a partition)

    @classmethod
    def of(cls, options: Options, parallelism: int | None = None) -> "AssignerSpec":
        """Paimon's sizing: `parallelism` assigner tasks (`dynamic-bucket.assigner-parallelism`,
        else the job's parallelism; one process counts as `dynamic-bucket.initial-buckets`
        tasks, else one), at most `dynamic-bucket.max-buckets` of them; of those,
        `dynamic-bucket.initial-buckets` create buckets."""
        target = options.int("dynamic-bucket.target-row-num")
        max_buckets = options.int("dynamic-bucket.max-buckets")
        initial = options.int("dynamic-bucket.initial-buckets")
        channels = options.int("dynamic-bucket.assigner-parallelism") or parallelism or initial or 1
        if max_buckets > 0:
            channels = min(channels, max_buckets)
        assigners = min(initial, channels) if initial else channels
        return cls(target, max_buckets, channels, assigners)


def check_dynamic_options(options: Options, identifier: str) -> None:
    max_buckets = options.int("dynamic-bucket.max-buckets")
    if max_buckets == 0 or max_buckets < -1:
        raise InvalidOption(f"table {identifier}: option 'dynamic-bucket.max-buckets' must be -1 (unbounded) "
                            f"or > 0, got {max_buckets}")
    parallelism = options.int("dynamic-bucket.assigner-parallelism")
    if parallelism is not None and parallelism < 1:
        raise InvalidOption(f"table {identifier}: option 'dynamic-bucket.assigner-parallelism' must be > 0, "
                            f"got {parallelism}")


@dataclass
class _Owner:
    """The buckets one assigner task owns in one partition."""

    counts: dict[int, int] = field(default_factory=dict)  # bucket -> keys, for buckets not yet full
    buckets: list[int] = field(default_factory=list)  # every owned bucket, in load/creation order
    taken: set[int] = field(default_factory=set)
    bound_reached: bool = False


ROUTED_ELSEWHERE = ("dynamic bucket assignment: a key reached an assigner task that does not own "
                    "its hash range (rows were shuffled with another assigner layout)")


class PartitionIndex:
    """Key hash -> bucket for one partition, as the assigners of one process know it."""

    def __init__(self, spec: AssignerSpec, ids: tuple[int, ...], partition_hash_value: int):
        self.spec = spec
        self.ids = ids
        self.partition_hash = partition_hash_value
        self.known = np.zeros(0, dtype=np.int64)  # sorted (hash << 32 | bucket), one per hash
        self._one_bucket: tuple[int, np.ndarray] | None = None  # every known hash in one bucket: (it, sorted hashes)
        self.owners = {i: _Owner() for i in ids}
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # known pairs not yet merged
        self.new: list[tuple[np.ndarray, np.ndarray]] = []  # hashes assigned here, with their buckets

    def load(self, files: list[tuple[int, np.ndarray]]) -> None:
        """The partition's HASH files (bucket, hashes), in order: the hashes routed to these
        assigners become known (a hash in two files: the later file wins, as in Java); a file
        counts towards its bucket's fill if one of them owns the bucket."""
        for bucket, hashes in files:
            for i, owner in self.owners.items():
                if owns_bucket(bucket, self.spec.assigners, i):
                    owner.counts[bucket] = owner.counts.get(bucket, 0) + len(hashes)
                    if bucket not in owner.taken:
                        owner.taken.add(bucket)
                        owner.buckets.append(bucket)
        if not files:
            return
        for bucket, hashes in files:
            if len(self.ids) < self.spec.channels:
                hashes = hashes[self._routed_here(hashes)]
            self._remember(hashes, np.full(len(hashes), bucket, dtype=np.int32))

    def _routed_here(self, hashes: np.ndarray) -> np.ndarray:
        channel = assigner_channels(self.partition_hash, hashes, self.spec.channels, self.spec.assigners)
        return np.isin(channel, np.asarray(self.ids, dtype=np.int32))

    def _remember(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Make (hash, bucket) pairs known: merged into the sorted arrays when next needed (one
        flush per commit never pays for the merge)."""
        if len(hashes):
            self._pending.append((hashes, buckets))

    def _known(self) -> np.ndarray:
        """The known pairs as one sorted int64 array of hash << 32 | bucket (a hash in two
        files, which no writer produces: the higher bucket wins)."""
        if self._pending:
            pending, self._pending = self._pending, []
            parts = [self.known] + [(h.astype(np.int64) << 32) | b.astype(np.int64) for h, b in pending]
            known = np.concatenate(parts)
            known.sort()
            last = np.ones(len(known), dtype=bool)
            last[:-1] = (known[1:] >> 32) != (known[:-1] >> 32)
            self.known = known if last.all() else known[last]
            self._one_bucket = _one_bucket(self.known)
        return self.known

    def _all_in_one_bucket(self, hashes: np.ndarray) -> int | None:
        """The bucket of every key when the partition's known keys all sit in one bucket and
        every hash is among them (the common upsert: a partition under
        `dynamic-bucket.target-row-num` keys). Sorting the bare int32 hashes and one sorted
        search is several times cheaper than the general path's positions and scatter."""
        self._known()
        if self._one_bucket is None:
            return None
        bucket, known = self._one_bucket
        sample = hashes[::max(1, len(hashes) // 256)]  # new keys among the rows: mostly seen here at once
        if not in_sorted(np.sort(sample), known).all():
            return None
        return bucket if in_sorted(np.sort(hashes), known).all() else None

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of each key hash, in arrival order (new hashes become known, and are
        recorded in `self.new` as (distinct hashes in arrival order, their buckets))."""
        hashes = np.asarray(hashes, dtype=np.int32)
        if not len(hashes):
            return np.zeros(0, dtype=np.int32)
        bucket = self._all_in_one_bucket(hashes)
        if bucket is not None:
            return np.full(len(hashes), bucket, dtype=np.int32)
        if not len(self.known):  # the partition's first keys here: every hash is new
            return self._assign_new(hashes)
        packed = _packed_sorted(hashes)  # hash << 32 | row: equal hashes adjacent, in arrival order
        order = packed & 0xFFFFFFFF
        packed &= ~0xFFFFFFFF  # hash << 32, as the known pairs are searched
        starts_mask = np.empty(len(packed), dtype=bool)
        starts_mask[0] = True
        np.not_equal(packed[1:], packed[:-1], out=starts_mask[1:])
        repeats = not starts_mask.all()  # a key twice in the rows
        starts = np.flatnonzero(starts_mask) if repeats else None
        probes = packed[starts] if repeats else packed  # sorted, distinct
        distinct = (probes >> 32).astype(np.int32)
        run_bucket = np.empty(len(distinct), dtype=np.int32)
        hit = np.zeros(len(distinct), dtype=bool)
        known = self._known()
        if self._one_bucket is not None:  # membership in the int32 hashes is enough
            bucket, known_hashes = self._one_bucket
            hit = in_sorted(distinct, known_hashes)
            run_bucket[hit] = bucket
        elif len(known):
            pos = np.minimum(np.searchsorted(known, probes), len(known) - 1)
            found = known[pos]
            hit = (found & ~0xFFFFFFFF) == probes
            run_bucket[hit] = found[hit] & 0xFFFFFFFF
        fresh = np.flatnonzero(~hit)
        if len(fresh):
            firsts = order[starts[fresh]] if repeats else order[fresh]  # row of each one's first appearance
            slot = np.full(len(hashes), -1, dtype=np.int64)
            slot[firsts] = fresh
            arrival = slot[slot >= 0]  # new hashes by first appearance (rows are distinct: no sort)
            new = distinct[arrival]
            given = self._new_buckets(new)
            run_bucket[arrival] = given
            self._remember(new, given)
            self.new.append((new, given))
        out = np.empty(len(hashes), dtype=np.int32)
        out[order] = run_bucket[np.cumsum(starts_mask) - 1] if repeats else run_bucket
        return out

    def _assign_new(self, hashes: np.ndarray) -> np.ndarray:
        """`assign` when the partition has no known hash (its first write): the new hashes in
        arrival order are the rows without the repeats of an earlier row's hash, so no row
        order needs sorting (one sort of the bare hashes finds the repeats)."""
        repeats, firsts = _repeats(hashes)
        keep = None
        if len(repeats):
            keep = np.ones(len(hashes), dtype=bool)
            keep[repeats] = False
        new = hashes if keep is None else hashes[keep]
        given = self._new_buckets(new)
        self._remember(new, given)
        self.new.append((new, given))
        if keep is None:
            return given.copy()
        out = np.empty(len(hashes), dtype=np.int32)
        out[keep] = given
        out[repeats] = out[firsts]
        return out

    def _new_buckets(self, new: np.ndarray) -> np.ndarray:
        """Buckets for `new` (distinct hashes not known yet, in arrival order), each from the
        assigner task its hash is routed to; a hash routed to a task this index does not stand
        for is refused (the rows were shuffled with another assigner layout)."""
        if len(self.ids) == 1 and self.spec.channels == 1:
            return self._fill(self.owners[self.ids[0]], self.ids[0], new)
        channels = assigner_channels(self.partition_hash, new, self.spec.channels, self.spec.assigners)
        if len(self.ids) == 1:
            if not (channels == self.ids[0]).all():
                raise TarnError(ROUTED_ELSEWHERE)
            return self._fill(self.owners[self.ids[0]], self.ids[0], new)
        if len(self.ids) < self.spec.channels and not np.isin(channels, np.asarray(self.ids, np.int32)).all():
            raise TarnError(ROUTED_ELSEWHERE)
        given = np.empty(len(new), dtype=np.int32)
        for assigner in self.ids:
            picked = np.flatnonzero(channels == assigner)
            if len(picked):
                given[picked] = self._fill(self.owners[assigner], assigner, new[picked])
        return given

    def _fill(self, owner: _Owner, assigner: int, hashes: np.ndarray) -> np.ndarray:
        """Buckets for `hashes` (distinct, unknown, arrival order) from one assigner's buckets."""
        target = self.spec.target_rows
        out = np.empty(len(hashes), dtype=np.int32)
        done = 0
        for bucket in sorted(owner.counts):  # existing buckets with room, lowest id first
            room = target - owner.counts[bucket]
            if room <= 0:
                del owner.counts[bucket]
                continue
            take = min(room, len(hashes) - done)
            out[done:done + take] = bucket
            owner.counts[bucket] += take
            done += take
            if done == len(hashes):
                return out
        limit = MAX_DYNAMIC_BUCKETS if self.spec.max_buckets == -1 else min(self.spec.max_buckets,
                                                                              MAX_DYNAMIC_BUCKETS)
        candidate = 0
        while done < len(hashes) and not owner.bound_reached:
            while candidate < limit and (not owns_bucket(candidate, self.spec.assigners, assigner)
                                         or candidate in owner.taken):
                candidate += 1
            if candidate >= limit:
                if self.spec.max_buckets == -1:
                    raise TarnError(f"dynamic bucket mode: all {MAX_DYNAMIC_BUCKETS} bucket ids of a partition "
                                    "are used; raise 'dynamic-bucket.target-row-num'")
                owner.bound_reached = True
                break
            take = min(target, len(hashes) - done)
            out[done:done + take] = candidate
            owner.counts[candidate] = take
            owner.taken.add(candidate)
            owner.buckets.append(candidate)
            done += take
        if done < len(hashes):  # past dynamic-bucket.max-buckets: any bucket of this assigner
            choices = np.asarray(owner.buckets, dtype=np.int64)
            rest = np.abs(hashes[done:].astype(np.int64))
            out[done:] = choices[rest % len(choices)]
        return out


class HashAssigner:
    """Buckets for the rows of a dynamic-bucket table, per partition, as assigner tasks `ids`
    of `spec` (every task: one process; one task: a Spark assigner). `entries(partition)`
    gives the partition's HASH index entries in the snapshot the write starts from."""

    def __init__(self, files: HashIndexFiles, spec: AssignerSpec, entries, ids: tuple[int, ...] | None = None):
        self.files = files
        self.spec = spec
        self.entries = entries
        self.ids = tuple(range(spec.channels)) if ids is None else tuple(ids)
        self.partitions: dict[bytes, PartitionIndex] = {}

    def partition(self, partition: bytes) -> PartitionIndex:
        index = self.partitions.get(partition)
        if index is None:
            index = PartitionIndex(self.spec, self.ids, partition_hash(partition))
            entries = sorted(self.entries(partition), key=lambda e: e.bucket)
            index.load([(e.bucket, self.files.read(e)) for e in entries])
            self.partitions[partition] = index
        return index

    def assign(self, partition: bytes, hashes: np.ndarray) -> np.ndarray:
        return self.partition(partition).assign(hashes)

    def new_hashes(self) -> dict[tuple[bytes, int], np.ndarray]:
        """(partition, bucket) -> the hashes this assigner added to the bucket, in arrival order
        (each once: an assigned hash is known from then on)."""
        out: dict[tuple[bytes, int], list[np.ndarray]] = {}
        for part, index in self.partitions.items():
            if not index.new:
                continue
            hashes = np.concatenate([h for h, _ in index.new])
            buckets = np.concatenate([b for _, b in index.new])
            order = np.argsort(buckets, kind="stable")
            hashes, buckets = hashes[order], buckets[order]
            bounds = np.flatnonzero(np.diff(buckets)) + 1
            for chunk_hashes, chunk_buckets in zip(np.split(hashes, bounds), np.split(buckets, bounds)):
                out[(part, int(chunk_buckets[0]))] = chunk_hashes
        return out


def index_fits_routing(files: HashIndexFiles, entries: list[IndexManifestEntry], spec: AssignerSpec,
                       most_hashes: int, most_files: int) -> bool:
    """Can a write whose rows are routed by key hash to `spec.channels` tasks let each task
    assign its own keys against this HASH index (`entries`) and write their buckets? Only if
    every known key sits in a bucket its own task owns (`owns_bucket`): then no bucket gets
    rows from two tasks. Writes that routed keys with this spec leave such an index; one built
    with another channel or initial-bucket count usually does not. False, without reading,
    when the index holds more than `most_hashes` keys or `most_files` files."""
    hashed = [e for e in entries if e.index_type == HASH_INDEX]
    if sum(e.row_count for e in hashed) > most_hashes or len(hashed) > most_files:
        return False

    def fits(entry: IndexManifestEntry) -> bool:
        tasks = assigner_channels(partition_hash(entry.partition), files.read(entry), spec.channels, spec.assigners)
        return bool(owns_bucket(entry.bucket, spec.assigners, tasks).all())

    # on an object store the files are best read at once
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(hashed)))) as pool:
        return all(pool.map(fits, hashed))


@dataclass
class BucketHashes:
    """One bucket's HASH index while a writer adds rows to it."""

    files: HashIndexFiles
    partition: bytes
    bucket: int
    entry: IndexManifestEntry | None  # the bucket's file in the snapshot the writer restored
    _added: list[np.ndarray] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, hashes: np.ndarray) -> None:
        if len(hashes):
            with self._lock:
                self._added.append(np.asarray(hashes, dtype=np.int32))

    def commit_changes(self, fresh: np.ndarray | None = None) -> IndexManifestEntry | None:
        """A new file holding the restored hashes and the new ones (in arrival order), or None
        when no row brought a hash the bucket did not have. `fresh`: the new hashes, distinct
        and known to be absent from the restored file (the writer's own assigner found them),
        instead of the rows' hashes `add` collected."""
        with self._lock:
            added, self._added = self._added, []
        old = self.files.read(self.entry) if self.entry is not None and (added or fresh is not None) else None
        if fresh is None:
            if not added:
                return None
            fresh = _first_occurrences(np.concatenate(added))
            if old is not None and len(old):
                known = np.sort(old)
                pos = np.minimum(np.searchsorted(known, fresh), len(known) - 1)
                fresh = fresh[known[pos] != fresh]
        if not len(fresh):
            return None
        hashes = fresh if old is None else np.concatenate([old, fresh])
        return self.files.write(self.partition, self.bucket, hashes)


def _one_bucket(known: np.ndarray) -> tuple[int, np.ndarray] | None:
    """(the bucket, the sorted int32 hashes) when every known (hash << 32 | bucket) pair
    names the same bucket, else None."""
    if not len(known):
        return None
    buckets = known & 0xFFFFFFFF
    if not (buckets == buckets[0]).all():
        return None
    return int(buckets[0]), (known >> 32).astype(np.int32)


def _packed_sorted(values: np.ndarray) -> np.ndarray:
    """Each int32 value with its position, `value << 32 | position`, sorted (int64)."""
    packed = np.asarray(values, dtype=np.int32).astype(np.int64) << 32
    packed |= np.arange(len(values), dtype=np.int64)
    packed.sort()
    return packed


def stable_order(values: np.ndarray) -> np.ndarray:
    """`np.argsort(values, kind="stable")` for int32 values, several times faster: each value
    with its position packed into one int64, sorted."""
    return _packed_sorted(values) & 0xFFFFFFFF


REPEAT_BITS = 20  # low hash bits of the candidate table `_repeats` filters rows with (1 MB)


def _repeats(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the rows whose value an earlier row holds, the first row holding each one's value),
    pairwise. One sort of the values finds the repeated ones; a table on their
    low bits picks the rows that may hold them, checked exactly (few rows, when few repeat)."""
    ordered = np.sort(values)
    twice = ordered[1:] == ordered[:-1]
    if not twice.any():
        none = np.zeros(0, dtype=np.int64)
        return none, none
    repeated = np.unique(ordered[1:][twice])
    table = np.zeros(1 << REPEAT_BITS, dtype=bool)
    low = (1 << REPEAT_BITS) - 1
    table[repeated & low] = True
    rows = np.flatnonzero(table[values & low])
    rows = rows[in_sorted(values[rows], repeated)]  # ascending: every row of a repeated value
    held = values[rows]
    order = np.argsort(held, kind="stable")  # rows of one value adjacent, earliest first
    grouped = held[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = grouped[1:] != grouped[:-1]
    group_first = rows[order[np.flatnonzero(first)]][np.cumsum(first) - 1]  # per grouped row: its value's first row
    later = ~first
    return rows[order[later]], group_first[later]


def _first_occurrences(values: np.ndarray) -> np.ndarray:
    """The distinct values in the order they first appear (sort-based)."""
    order = stable_order(values)
    ordered = values[order]
    first = np.ones(len(values), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return values[np.sort(order[first])]


def as_delete(entry: IndexManifestEntry) -> IndexManifestEntry:
    return replace(entry, kind=DELETE)


# ---------------------------------------------------------------------------------------------
# rows of an Arrow table (conformed to the table's types)


def key_hashes(data: pa.Table, schema: TableSchema) -> np.ndarray:
    """The hash of each row's trimmed primary key (the dynamic-bucket key)."""
    return row_hashes(data, [schema.field(k) for k in schema.trimmed_primary_keys])


def partitions_of(data: pa.Table, schema: TableSchema) -> list[tuple[bytes, list, np.ndarray | None]]:
    """(partition bytes, values, row indices in arrival order; None = every row) per partition."""
    keys = list(schema.partition_keys)
    if not keys:
        return [(partitions.to_bytes(schema, []), [], None)]
    codes = partition_codes(data, keys)
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    bounds = np.concatenate(([0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1, [len(codes)]))
    groups = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        rows = order[lo:hi]
        values = [data.column(k)[int(rows[0])].as_py() for k in keys]
        groups.append((partitions.to_bytes(schema, values), values, rows))
    return groups


def assign_rows(assigner: HashAssigner, data: pa.Table, schema: TableSchema, hashes: np.ndarray | None = None,
                check=None) -> np.ndarray:
    """The dynamic bucket of each row of `data`, partition by partition, in arrival order.
    `check(partition bytes, values)` runs before a partition is assigned."""
    hashes = key_hashes(data, schema) if hashes is None else hashes
    buckets = np.empty(data.num_rows, dtype=np.int32)
    for part, values, rows in partitions_of(data, schema):
        if check is not None:
            check(part, values)
        if rows is None:
            buckets[:] = assigner.assign(part, hashes)
        else:
            buckets[rows] = assigner.assign(part, hashes[rows])
    return buckets


def channels_of_rows(data: pa.Table, schema: TableSchema, spec: AssignerSpec) -> np.ndarray:
    """The assigner task of each row (`assigner_channels` with each row's partition hash)."""
    hashes = key_hashes(data, schema)
    part_hashes = np.empty(data.num_rows, dtype=np.int64)
    for part, _, rows in partitions_of(data, schema):
        if rows is None:
            part_hashes[:] = partition_hash(part)
        else:
            part_hashes[rows] = partition_hash(part)
    return assigner_channels(part_hashes, hashes, spec.channels, spec.assigners)


# ---------------------------------------------------------------------------------------------
# a bucket handed from an assigner task to a writer task, with the snapshot it was assigned on

BUCKET_SPAN = 32768  # > every bucket id (MAX_DYNAMIC_BUCKETS)


def pack_bucket(snapshot_id: int, buckets: np.ndarray) -> np.ndarray:
    """`snapshot_id * 32768 + bucket` as int64 (snapshot 0: none)."""
    return np.int64(snapshot_id) * BUCKET_SPAN + np.asarray(buckets, dtype=np.int64)


ROUTE_SPAN = 1 << 20  # > every assigner channel


def route_base(channels: int) -> int:
    """The bucket-column value of a row routed to assigner task 0 of `channels`: rows of an
    empty table's first write carry `route_base(channels) - channel` (always < 0) instead of
    an assigned bucket, and the writer task assigns them itself (`unpack_route`)."""
    return -1 - channels * ROUTE_SPAN


def unpack_route(packed: np.ndarray) -> tuple[int, int] | None:
    """(assigner task, channels) when every row was routed to one assigner task for it to
    assign (negative values, `route_base`); None when the rows carry assigned buckets."""
    packed = np.asarray(packed, dtype=np.int64)
    if not len(packed) or packed[0] >= 0:
        return None
    first = int(packed[0])
    if (packed != first).any():
        raise TarnError("dynamic bucket assignment: a task received rows routed to different assigner tasks "
                        "(or mixed with assigned buckets); write again")
    code = -1 - first
    return code % ROUTE_SPAN, code // ROUTE_SPAN


def unpack_buckets(packed: np.ndarray) -> tuple[int | None, np.ndarray]:
    """(the one snapshot id of the rows, their buckets); raises if the rows were assigned
    against different snapshots (a commit landed while the assigner tasks ran)."""
    packed = np.asarray(packed, dtype=np.int64)
    if not len(packed):
        return None, np.zeros(0, dtype=np.int32)
    snapshots = packed // BUCKET_SPAN
    first = int(snapshots[0])
    if (snapshots != first).any():
        raise TarnError("dynamic bucket assignment: rows were assigned against different snapshots (another "
                        "writer committed while the assigner tasks ran); nothing was committed, write again")
    return first, (packed % BUCKET_SPAN).astype(np.int32)
