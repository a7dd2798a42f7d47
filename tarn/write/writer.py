"""TableWriter: buffer batches, then cut them into sorted, merged data files per bucket."""

from __future__ import annotations

import functools
import logging
import os
import random
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn import features, partition, progress
from tarn.meta import sequence_init
from tarn.partition_time import check_strict
from tarn.bucket import MAX_DYNAMIC_BUCKETS, bucket_function, bucket_ids, check_bucket_function, row_hashes
from tarn.data.layout import layout_of
from tarn.data.reader import FileReader
from tarn.errors import FileMissing, SchemaMismatch, SnapshotNotFound, TarnError
from tarn.fs import FileIO
from tarn.lsm.kv import UPDATE_BEFORE
from tarn.lsm.merge import INSERT, ROW_KIND_NAMES, SEQUENCE, VALUE_KIND, check_retracts, merge_spec_of
from tarn.lsm.policy import (PickState, estimate_last_full_compaction, full_compaction_delta_commits,
                             full_compaction_due, num_levels)
from tarn.meta.manifest import ADD, DELETION_VECTORS_INDEX, HASH_INDEX, IndexManifestEntry
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.write.deletions import BucketVectors
from tarn.meta.schema import TableSchema
from tarn.meta.shape import BucketMode, shape_with
from tarn.meta.snapshot import BATCH_COMMIT_IDENTIFIER
from tarn.options import Options
from tarn.write.assign import AssignerSpec, BucketHashes, HashAssigner, HashIndexFiles, as_delete, assign_rows
from tarn.write.bucket_writer import BucketState, BucketWriter
from tarn.write.conform import conform, to_arrow_table
from tarn.write.cross_partition import KEPT_ASSIGNERS, BucketFiles, CrossPartitionAssigner, ignored_move_problem
from tarn.write.grouping import Group, group_rows, key_order
from tarn.write.message import CommitMessage
from tarn.data.writer import FileWriter

from tarn.paths import POSTPONE_BUCKET



@dataclass
class Restored:
    """What a writer starts from: the live files per (partition, bucket) of the latest
    snapshot, the `totalBuckets` those files were written with, per partition, and its index
    files (deletion vectors; the HASH index of dynamic buckets, which may come from an earlier
    snapshot: the one a distributed write assigned its buckets against)."""

    files: dict = field(default_factory=dict)  # (partition bytes, bucket) -> [DataFileMeta]
    total_buckets: dict = field(default_factory=dict)  # partition bytes -> {totalBuckets}
    vectors: dict = field(default_factory=dict)  # (partition bytes, bucket) -> DV IndexManifestEntry
    hash_index: dict = field(default_factory=dict)  # (partition bytes, bucket) -> HASH IndexManifestEntry
    snapshot_id: int = 0  # the snapshot the files are from (0: none)
    recorded_max_sequence: int | None = None  # its `sequence.generation.max-sequence-number`
    _by_partition: dict | None = field(default=None, repr=False)

    def hash_entries(self, partition_bytes: bytes) -> list[IndexManifestEntry]:
        """The HASH index entries of one partition."""
        if self._by_partition is None:
            self._by_partition = {}
            for (part, _), entry in self.hash_index.items():
                self._by_partition.setdefault(part, []).append(entry)
        return self._by_partition.get(partition_bytes, [])


log = logging.getLogger(__name__)

Restore = Callable[[], "Restored | dict"]  # a bare dict: files only


def restore_from(context, schema: TableSchema, attempts: int = 5, index_snapshot=None,
                 snapshot_id: int | None = None) -> Restore:
    """A restore reading the live files of the context's latest snapshot when first needed;
    when expiry removes that snapshot's manifests meanwhile, it reads the new latest one.
    `index_snapshot` (an id, or a function giving it when the restore runs): take the HASH
    index (dynamic buckets) from that snapshot instead, 0 for none (the snapshot a distributed
    write assigned its buckets against). `snapshot_id`: restore that snapshot, not the latest."""
    def restore() -> Restored:
        pinned_id = index_snapshot() if callable(index_snapshot) else index_snapshot
        for attempt in range(attempts):
            try:
                snapshot = context.snapshot(snapshot_id) if snapshot_id else context.latest_snapshot()
                entries = context.live_entries(snapshot, schema)
                features.check_write_base(context.name, snapshot, entries,  # before the first file
                                          schema.shape.tracks_rows)
                restored = _restored_of(entries)
                restored.snapshot_id = snapshot.id if snapshot is not None else 0
                restored.recorded_max_sequence = sequence_init.recorded_max(snapshot.properties if snapshot else None)
                manifests = context.manifests(schema)
                if snapshot is not None and snapshot.index_manifest:
                    for entry in manifests.read_index_manifest(snapshot.index_manifest):
                        if entry.index_type == DELETION_VECTORS_INDEX:
                            restored.vectors[(entry.partition, entry.bucket)] = entry
                        elif entry.index_type == HASH_INDEX and pinned_id is None:
                            restored.hash_index[(entry.partition, entry.bucket)] = entry
                if pinned_id:
                    pinned = context.snapshot(pinned_id)
                    if pinned.index_manifest:
                        for entry in manifests.read_index_manifest(pinned.index_manifest):
                            if entry.index_type == HASH_INDEX:
                                restored.hash_index[(entry.partition, entry.bucket)] = entry
                return restored
            except (FileMissing, SnapshotNotFound):
                if attempt == attempts - 1:
                    raise

    return restore


def _restored_of(entries) -> Restored:
    restored = Restored()
    for e in entries:
        restored.files.setdefault((e.partition, e.bucket), []).append(e.file)
        restored.total_buckets.setdefault(e.partition, set()).add(e.total_buckets)
    return restored


class TableWriter:
    """Collects writes for one commit. Rows are buffered up to `write-buffer-size`, then flushed
    as sorted level-0 runs; buckets are compacted (universal compaction) after flushes unless
    `write-only`. `prepare_commit()` flushes the rest and returns the commit messages."""

    def __init__(self, file_io: FileIO, root: str, name: str, schema: TableSchema, options: Options,
                 restore: Restore, schemas=None, produce_changelog: bool = True):
        features.check_write(name, schema)  # before any file is written
        self.file_io = file_io
        # False for INSERT OVERWRITE writers: an overwrite commits no changelog (Java drops it
        # at commit, pypaimon never writes it), so none is written that would stay behind.
        self.produce_changelog = produce_changelog
        self.root = root
        self.name = name
        self.schema = schema
        self.options = options
        self.restore = restore
        self.schemas = schemas or (lambda schema_id: schema)
        self.layout = layout_of(schema)
        self.shape = shape_with(schema, options)  # the options may set another bucket count (a rescale)
        self.num_buckets = self.shape.num_buckets
        self.buffered: list[pa.Table] = []
        self.buffered_bytes = 0
        self.kind_counts = np.zeros(4, dtype=np.int64)  # rows given per row kind: +I, -U, +U, -D
        self.buffer_limit = options.memory_bytes("write-buffer-size")
        self.states: dict[tuple[bytes, int], BucketState] = {}
        self._restored: Restored | None = None
        # postpone bucket mode (bucket = -2): rows land unsorted in `bucket-postpone/` files,
        # read by nobody until the postpone compaction (tarn/ops/postpone.py) places them
        self.postpone = self.shape.postpone
        self.deletion_vectors = self.layout.is_key_value and self.shape.deletion_vectors and not self.postpone
        self._check_writable()
        # dynamic bucket mode: buckets from the HASH index (assigned here, or given by the caller)
        # cross-partition upsert (KEY_DYNAMIC): partition and bucket from the key index, no HASH files
        self.cross = self.shape.cross_partition
        self._router: CrossPartitionAssigner | None = None
        self.dynamic = self.shape.bucket_mode is BucketMode.DYNAMIC
        self.assigner_spec = AssignerSpec.of(options) if self.dynamic else None
        self._assigner: HashAssigner | None = None
        self._assigner_ids: tuple[int, ...] | None = None  # None: every assigner task (one process)
        self._given_buckets: bool | None = None  # write(buckets=...) or not: one way per writer
        self._hash_committed = False
        self.buckets = BucketWriter(file_io, name, schema, options, self.schemas, self.layout,
                                    merge_spec_of(schema, options) if self.layout.is_key_value else None,
                                    self.producer)

    @functools.cached_property
    def vector_files(self) -> DeletionVectorFiles:
        """Deletion-vector index files (built only by writers that use them)."""
        return DeletionVectorFiles(self.file_io, self.root, self.schema)

    @functools.cached_property
    def hash_files(self) -> HashIndexFiles:
        """Dynamic-bucket HASH index files (built only by writers that use them)."""
        return HashIndexFiles(self.file_io, self.root, self.schema)

    @property
    def producer(self) -> str:
        """`changelog-producer`: none, input, full-compaction or lookup (none when this writer
        produces no changelog)."""
        if not self.layout.is_key_value or not self.produce_changelog:
            return "none"
        return self.options.changelog_producer

    def _check_writable(self) -> None:
        check_bucket_function(self.schema, self.name, self.options)  # mod/hive keys, as Java's writers check
        problem = self.shape.bucket_problem
        if problem is None and self.shape.cross_partition:
            problem = ignored_move_problem(self.options)
        if problem:
            raise TarnError(f"table {self.name}: {problem}")

    @property
    def compacts(self) -> bool:
        return self.layout.is_key_value and not self.options.bool("write-only") and not self.postpone

    # ------------------------------------------------------------------ buffering

    def write(self, data, row_kind=None, buckets=None) -> None:
        """Buffer rows (a table, batch, or iterable of batches); flushes when the buffer is full.
        `row_kind`: one kind for all rows ("+I", "-U", "+U", "-D"), or one per row (tables only).
        `buckets` (dynamic-bucket tables, tables only): the bucket of each row, as assigner
        tasks of a distributed write gave them (`tarn.write.assign`); otherwise this writer
        assigns them."""
        if _is_batch_stream(data):
            if row_kind is not None and not isinstance(row_kind, str):
                raise SchemaMismatch(f"table {self.name}: a stream of batches takes one row kind for all "
                                     "rows (a string), or use the 'rowkind.field' option")
            if buckets is not None:
                raise SchemaMismatch(f"table {self.name}: buckets are given with a table, not a stream of batches")
            for batch in data:
                self.write(batch, row_kind=row_kind)
            return
        table = to_arrow_table(data, self.name)
        rowkind_field = self.options.get("rowkind.field")
        conformed = conform(table, list(self.schema.fields), self.name, self.schema.primary_keys)
        kinds = self._row_kinds(conformed, row_kind, rowkind_field)
        if self.drops_update_before:  # Java's RowKindFilter: -U rows never reach the table
            keep = pc.not_equal(kinds, UPDATE_BEFORE)
            if not pc.all(keep).as_py():
                conformed, kinds = conformed.filter(keep), kinds.filter(keep)
        self.kind_counts += np.bincount(np.asarray(kinds), minlength=4)[:4]
        if self.layout.is_key_value:
            conformed = conformed.append_column(VALUE_KIND, kinds)
            if self.postpone:  # nothing merges these rows before the compaction: refuse now
                check_retracts(conformed, self.buckets.spec)
        elif kinds is not None and pc.any(pc.not_equal(kinds, INSERT)).as_py():
            raise SchemaMismatch(f"table {self.name}: append tables accept only +I rows; "
                                 "updates and deletes need a primary-key table")
        given = self._given_bucket_column(buckets, conformed.num_rows)
        if self.cross and given is None:  # else placed by assigner tasks (tarn/spark/cross_partition.py)
            conformed, routed = self._route(conformed)
            given = pa.array(routed)
        if given is not None:
            conformed = conformed.append_column(GIVEN_BUCKET, given.cast(pa.int32()))
        if conformed.num_rows:
            self.buffered.append(conformed)
            self.buffered_bytes += conformed.nbytes
        if self.buffered_bytes >= self.buffer_limit:
            self.flush()

    def _route(self, rows: pa.Table) -> tuple[pa.Table, np.ndarray]:
        """Cross-partition upsert: the rows placed where their keys live (write/cross_partition.py)."""
        if not self.produce_changelog:
            raise TarnError(f"table {self.name}: INSERT OVERWRITE of a cross-partition upsert table (primary key "
                            "without every partition key) is not supported: keys in other partitions would stay")
        if self._router is None:
            self._router = KEPT_ASSIGNERS.take(self.root, self._router_state(self._restored_state().snapshot_id))
        if self._router is None:
            reader = FileReader(self.file_io, self.schema, self.schemas, self.options)
            self._router = CrossPartitionAssigner(self.schema, self.options, reader, self._restored_buckets)
        return self._router.route(rows)

    def _router_state(self, snapshot_id: int) -> tuple:
        return snapshot_id, self.schema.id, tuple(sorted(self.options.raw.items()))

    def keep_key_index(self, context, commit_user: str) -> None:
        """After this writer's commit landed: keep its key index for the table's next writer in
        this process, if every snapshot since the one it started from is this commit's."""
        router, self._router = self._router, None
        if router is None:
            return
        try:  # never an error after a landed commit: an index not kept is bootstrapped again
            latest = context.latest_snapshot()
            base = self._restored_state().snapshot_id
            ours = latest is not None and latest.id > base and all(
                context.snapshot(i).commit_user == commit_user for i in range(base + 1, latest.id + 1))
        except (TarnError, OSError):
            ours = False
        if ours:
            KEPT_ASSIGNERS.put(self.root, self._router_state(latest.id), router)
        else:
            router.close()

    def _restored_buckets(self) -> list[BucketFiles]:
        return restored_buckets(self._restored_state(), self.vector_files, self.root, self.schema, self.options)

    def _given_bucket_column(self, buckets, rows: int) -> pa.Array | None:
        """Checked `write(buckets=...)`; every write of one writer gives buckets or none does."""
        given = buckets is not None
        if self._given_buckets is None:
            self._given_buckets = given
        elif self._given_buckets != given:
            raise SchemaMismatch(f"table {self.name}: one writer takes buckets with every write or with none")
        if not given:
            return None
        if not self.dynamic and not self.cross:
            raise SchemaMismatch(f"table {self.name}: buckets are given only to dynamic-bucket tables "
                                 f"(bucket=-1 with a primary key), this one has bucket={self.num_buckets}")
        values = buckets.combine_chunks() if isinstance(buckets, pa.ChunkedArray) else pa.array(buckets)
        if len(values) != rows or not pa.types.is_integer(values.type) or values.null_count:
            raise SchemaMismatch(f"table {self.name}: buckets must be {rows} non-null integers")
        array = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)
        if len(array) and (array.min() < 0 or array.max() >= MAX_DYNAMIC_BUCKETS):
            raise SchemaMismatch(f"table {self.name}: bucket ids must lie in 0..{MAX_DYNAMIC_BUCKETS - 1}")
        return pa.array(array.astype(np.int32))

    @property
    def drops_update_before(self) -> bool:
        """`ignore-update-before` (or `ignore-delete`, which Java's RowKindFilter also reads)."""
        return bool(self.options.bool("ignore-update-before") or self.options.bool("ignore-delete"))

    def _row_kinds(self, table: pa.Table, row_kind, rowkind_field) -> pa.Array:
        n = table.num_rows
        if row_kind is None and rowkind_field:
            row_kind = table.column(rowkind_field)
        if row_kind is None:
            return pa.array(np.zeros(n, dtype=np.int8))
        if isinstance(row_kind, str):
            return pa.array(np.full(n, _kind_code(row_kind, self.name), dtype=np.int8))
        values = pa.chunked_array([row_kind]) if isinstance(row_kind, pa.Array) else row_kind
        if not isinstance(values, pa.ChunkedArray):
            values = pa.chunked_array([pa.array(values)])
        if len(values) != n:
            raise SchemaMismatch(f"table {self.name}: {len(values)} row kinds for {n} rows")
        if pa.types.is_integer(values.type):
            codes = values.cast(pa.int8())
        else:
            codes = pc.index_in(values.cast(pa.string()), value_set=pa.array(list(ROW_KIND_NAMES)))
            codes = codes.cast(pa.int8())
        if codes.null_count or pc.any(pc.or_(pc.less(codes, 0), pc.greater(codes, 3))).as_py():
            field = f"column '{rowkind_field}'" if rowkind_field else "row_kind"
            raise SchemaMismatch(f"table {self.name}: {field} holds values other than +I, -U, +U, -D")
        return codes.combine_chunks()

    # ------------------------------------------------------------------ flushing

    def flush(self) -> None:
        """Write the buffer as sorted level-0 runs (one per bucket), then compact if due."""
        if not self.buffered:
            return
        data = pa.concat_tables(self.buffered)
        self.buffered, self.buffered_bytes = [], 0
        if self.postpone:
            self._flush_postponed(data)
            return
        if self.layout.is_key_value:
            data = one_chunk_per_column(data)
        groups, hashes = self._groups(data)
        del data  # the groups hold the buffer until each has taken its rows
        states = [self._state(g.partition_values, g.bucket) for g in groups]
        if len(groups) > 8:  # a large write: a bar over its buckets
            with progress.task(f"writing {self.name}", total=len(groups)) as bar:
                self._flush_groups(groups, states, hashes, bar)
        else:
            self._flush_groups(groups, states, hashes, None)
        # the buffer's memory goes back to the system before the next one fills (Arrow's
        # allocator would keep it for a while: a long write's RSS is then one buffer's, not two)
        pa.default_memory_pool().release_unused()

    def _flush_groups(self, groups, states, hashes, bar) -> None:
        if hashes is not None and self._given_buckets:  # the own assigner knows which hashes are new
            for g, st in zip(groups, states):
                st.hashes.add(hashes[g.indices] if g.indices is not None else hashes[g.lo:g.hi])
        self._parallel([lambda g=g, st=st: (self.buckets.flush(g, st), bar and bar.advance())
                        for g, st in zip(groups, states)])
        if self.compacts:
            self._parallel([lambda st=st: self.buckets.compact_after_flush(st) for st in states])

    @property
    def counted(self) -> dict:
        """The rows this writer was given: written (all), and of them inserted/updated (+I/+U)
        and deleted (-D) on primary-key tables."""
        plus_i, minus_u, plus_u, minus_d = (int(n) for n in self.kind_counts)
        out = {"rows_written": plus_i + minus_u + plus_u + minus_d}
        if self.layout.is_key_value:
            out["rows_deleted"] = minus_d
        return out

    def _flush_postponed(self, data: pa.Table) -> None:
        """Postpone bucket mode: each partition's rows, as they came (unsorted, not merged), into
        `bucket-postpone/` files named after this writer, as Java's PostponeBucketWriter writes
        them (sequence number -1: the compaction numbers them; no value statistics)."""
        groups = group_rows(data, list(self.schema.partition_keys), None, [])
        writer_options = self.options.updated({"metadata.stats-mode": "none"})
        for group in groups:
            rows = group.rows()
            rows = rows.append_column(SEQUENCE, pa.array(np.full(rows.num_rows, -1, dtype=np.int64)))
            state = self._postpone_state(group.partition_values)
            writer = FileWriter(self.file_io, state.path, self.schema, writer_options, prefix=self._postpone_prefix)
            state.add_new(writer.write(rows))

    @property
    def _postpone_prefix(self) -> str:
        """`<data-file.prefix>u-<writer>-s-<n>-w-`: Java's postpone file names, which keep one
        writer's files apart (the compaction replays each writer's files in order)."""
        if self._postpone_name is None:
            base = self.options.get("data-file.prefix") or "data-"
            self._postpone_name = f"{base}u-{uuid.uuid4()}-s-{random.randrange(1 << 31)}-w-"
        return self._postpone_name

    _postpone_name: str | None = None

    def _postpone_state(self, partition_values: tuple) -> BucketState:
        """The postpone bucket of a partition: nothing restored (a postpone write reads nothing)."""
        partition_bytes = partition.to_bytes(self.schema, partition_values)
        key = (partition_bytes, POSTPONE_BUCKET)
        if key not in self.states:
            check_strict(self.name, self.options, list(self.schema.partition_keys), partition_values)
            path = partition.bucket_path(self.root, self.schema, self.options.get("partition.default-name"),
                                         partition_values, POSTPONE_BUCKET)
            self.states[key] = BucketState(partition_bytes, tuple(partition_values), POSTPONE_BUCKET, path, [], -1)
        return self.states[key]

    def prepare_commit(self, full_compaction: bool = False,
                       commit_identifier: int = BATCH_COMMIT_IDENTIFIER) -> list[CommitMessage]:
        """Flush everything, compact as the options ask, and return the messages to commit.
        `commit_identifier` (the streaming checkpoint / batch id the messages will be committed
        with) decides `full-compaction.delta-commits`; batch commits always count as due.
        On failure every file this writer wrote is deleted."""
        self.commit_identifier = commit_identifier
        try:
            self.flush()
            if self.compacts:
                full = full_compaction or self._full_compaction_due()
                touched = [st for st in self.states.values() if st.new_files or full_compaction]
                self._parallel([lambda st=st: self.buckets.compact(st, full=full) for st in touched])
            self._write_vectors()
            self._write_hash_index()
        except BaseException:
            self.delete_written()
            raise
        return self.messages()

    def messages(self) -> list[CommitMessage]:
        total = self.num_buckets if self.num_buckets > 0 or self.postpone else -1
        return [m for m in (st.message(total) for st in self.states.values()) if not m.is_empty]

    def compact(self, buckets: list[tuple[bytes, int]], full: bool) -> list[CommitMessage]:
        """Compact the given buckets as they are in the restored snapshot (`table.compact`)."""
        states = [self._state_for(partition, bucket) for partition, bucket in buckets]
        try:
            with progress.task(f"compacting {self.name}", total=len(states)) as bar:
                self._parallel([lambda st=st: (self.buckets.compact(st, full=full), bar.advance())
                                for st in states])
            self._write_vectors()
        except BaseException:
            self.delete_written()
            raise
        return self.messages()

    def delete_written(self) -> None:
        """Delete every file this writer wrote (its messages' unreferenced files)."""
        for message in self.messages():
            for path in message.unreferenced_paths(self.root, self.schema):
                self.file_io.delete(self.file_io.native(path))

    def _write_hash_index(self) -> None:
        """Dynamic buckets: each bucket that gained key hashes gets a new HASH file replacing
        its old one. A partition whose index changes declares the whole index it started from:
        its other HASH files are deleted and added again unchanged, so a commit conflicts when
        any file of the partition's index changed meanwhile (one writer per partition)."""
        if not self.dynamic or self._hash_committed:
            return
        self._hash_committed = True
        states = [st for st in self.states.values() if st.hashes is not None]
        fresh = self._assigner.new_hashes() if self._assigner is not None else {}
        self._parallel([lambda st=st: self._commit_hashes(st, fresh.get((st.partition, st.bucket)))
                        for st in states])
        changed: dict[bytes, list[BucketState]] = {}
        for st in states:
            if any(e.index_type == HASH_INDEX and e.kind == ADD for e in st.new_index):
                changed.setdefault(st.partition, []).append(st)
        restored = self._restored_state()
        for part, touched in changed.items():
            replaced = {st.bucket for st in touched}
            carrier = touched[0]
            for entry in restored.hash_entries(part):
                if entry.bucket not in replaced:
                    carrier.deleted_index.append(as_delete(entry))
                    carrier.new_index.append(entry)

    @staticmethod
    def _commit_hashes(state: BucketState, fresh) -> None:
        written = state.hashes.commit_changes(fresh)
        if written is not None:
            state.new_index.append(written)
            if state.hashes.entry is not None:
                state.deleted_index.append(as_delete(state.hashes.entry))

    def _write_vectors(self) -> None:
        """Each bucket whose deletion vectors changed gets its new index file (replacing the old)."""
        for state in self.states.values():
            if state.vectors is not None and not state.new_index and not state.deleted_index:
                state.new_index, state.deleted_index = state.vectors.commit_changes()

    def _parallel(self, tasks) -> None:
        if not tasks:
            return
        if len(tasks) == 1:
            tasks[0]()
            return
        with ThreadPoolExecutor(max_workers=min(len(tasks), os.cpu_count() or 2)) as pool:
            futures = [pool.submit(task) for task in tasks]
            errors = [f.exception() for f in futures]
        failure = next((e for e in errors if e is not None), None)
        if failure is not None:
            raise failure

    def _full_compaction_due(self) -> bool:
        delta = full_compaction_delta_commits(self.options)
        return delta is not None and full_compaction_due(self.commit_identifier, delta)

    commit_identifier = BATCH_COMMIT_IDENTIFIER

    # ------------------------------------------------------------------ bucket state

    def _restored_files(self) -> dict:
        return self._restored_state().files

    def restored_buckets(self) -> list[tuple[bytes, int]]:
        """The (partition, bucket) pairs that hold files in the snapshot this writer starts from."""
        return list(self._restored_files())

    def _restored_state(self) -> Restored:
        if self._restored is None:
            restored = self.restore()
            self._restored = restored if isinstance(restored, Restored) else Restored(dict(restored))
        return self._restored

    def _check_bucket_count(self, partition_bytes: bytes, values) -> None:
        """Java refuses to write files whose totalBuckets differs from the files already in the
        partition: keys would land in other buckets than their older versions."""
        if not self.layout.is_key_value or self.num_buckets == 0 or self.num_buckets < -1:
            return
        expected = self.num_buckets if self.num_buckets > 0 else -1
        # postponed files (totalBuckets -2) wait for their compaction, which places them here
        others = self._restored_state().total_buckets.get(partition_bytes, set()) - {expected, POSTPONE_BUCKET}
        if others:
            spec = dict(zip(self.schema.partition_keys, values))
            where = f"partition {spec} of " if self.schema.partition_keys else ""
            target = f"bucket={self.num_buckets}" + (f", partitions=[{spec}]" if spec else "")
            raise TarnError(
                f"table {self.name}: {where}the table holds files written with bucket={sorted(others)[0]} but "
                f"the table's 'bucket' option is now {self.num_buckets}; writing would leave duplicate keys. "
                f"Rescale first: table.rescale({target}) rewrites those files into the table's buckets "
                "(or set 'bucket' back)")

    def _state(self, partition_values: tuple, bucket: int) -> BucketState:
        partition_bytes = partition.to_bytes(self.schema, partition_values)
        return self._state_for(partition_bytes, bucket, partition_values)

    def _state_for(self, partition_bytes: bytes, bucket: int, partition_values=None) -> BucketState:
        key = (partition_bytes, bucket)
        state = self.states.get(key)
        if state is None:
            values = partition_values if partition_values is not None else partition.from_bytes(self.schema, partition_bytes)
            check_strict(self.name, self.options, list(self.schema.partition_keys), values)
            self._check_bucket_count(partition_bytes, values)
            files = list(self._restored_files().get(key, []))
            next_sequence = max((f.max_sequence_number for f in files), default=-1) + 1
            if sequence_init.snapshot_mode(self.options):  # above every sequence number the table used
                floor = self._restored_state().recorded_max_sequence
                next_sequence = max(next_sequence, -1 if floor is None else floor + 1)
            path = partition.bucket_path(self.root, self.schema, self.options.get("partition.default-name"),
                                         values, bucket)
            state = BucketState(partition_bytes, tuple(values), bucket, path, files, next_sequence)
            state.pick_state = PickState(estimate_last_full_compaction(files, num_levels(self.options)))
            if self.deletion_vectors:
                state.vectors = BucketVectors(self.vector_files, partition_bytes, bucket,
                                              self._restored_state().vectors.get(key),
                                              bitmap64=bool(self.options.bool("deletion-vectors.bitmap64")))
            if self.dynamic:
                state.hashes = BucketHashes(self.hash_files, partition_bytes, bucket,
                                            self._restored_state().hash_index.get(key))
            self.states[key] = state
        return state

    def _groups(self, data: pa.Table) -> tuple[list[Group], np.ndarray | None]:
        """The (partition, bucket) groups of the rows, placed by the bucket mode's router
        (BUCKET_ROUTERS); in dynamic bucket mode also each row's key hash (the bucket's HASH
        index keeps it)."""
        return BUCKET_ROUTERS[self.shape.bucket_mode](self, data)

    def _sorted_groups(self, data: pa.Table, buckets: np.ndarray | None) -> list[Group]:
        sort_columns = list(self.layout.key_names) if self.layout.is_key_value else []
        return group_rows(data, list(self.schema.partition_keys), buckets, sort_columns)

    def _route_unaware(self, data: pa.Table) -> tuple[list[Group], None]:
        """Bucket-unaware append tables: every row in bucket 0 of its partition."""
        return self._sorted_groups(data, None), None

    def _route_fixed(self, data: pa.Table) -> tuple[list[Group], None]:
        """Fixed buckets: the bucket function of the bucket key (one bucket: no hashing)."""
        if self.num_buckets == 1:
            return self._sorted_groups(data, None), None
        key_fields = [self.schema.field(k) for k in self.schema.bucket_keys]
        return self._sorted_groups(data, bucket_ids(data, key_fields, self.num_buckets,
                                                    bucket_function(self.options))), None

    def _route_given(self, data: pa.Table) -> tuple[list[Group], None]:
        """Cross-partition upserts: rows arrive placed (tarn/spark/cross_partition.py, `_route`)."""
        buckets = data.column(GIVEN_BUCKET).to_numpy()
        return self._sorted_groups(data.drop_columns([GIVEN_BUCKET]), buckets), None

    def _route_dynamic(self, data: pa.Table) -> tuple[list[Group], np.ndarray]:
        """Dynamic buckets: given by the caller, or assigned here from the HASH index while the
        key order is sorted in a thread."""
        key_fields = [self.schema.field(k) for k in self.schema.trimmed_primary_keys]
        if GIVEN_BUCKET in data.column_names:
            hashes = row_hashes(data, key_fields)
            buckets = data.column(GIVEN_BUCKET).to_numpy()
            return self._sorted_groups(data.drop_columns([GIVEN_BUCKET]), buckets), hashes
        with ThreadPoolExecutor(max_workers=1) as pool:
            order = pool.submit(key_order, data, list(self.layout.key_names))
            hashes = row_hashes(data, key_fields)
            buckets = self._assign(data, hashes)
            return group_rows(data, list(self.schema.partition_keys), buckets, [], order.result()), hashes

    def _assign(self, data: pa.Table, hashes: np.ndarray) -> np.ndarray:
        """Dynamic buckets for the rows, partition by partition, in arrival order."""
        if self._assigner is None:
            restored = self._restored_state()
            self._assigner = HashAssigner(self.hash_files, self.assigner_spec, restored.hash_entries,
                                          ids=self._assigner_ids)
        return assign_rows(self._assigner, data, self.schema, hashes, self._check_bucket_count)

    def assign_as(self, assigner: int, channels: int) -> None:
        """Assign buckets as assigner task `assigner` of `channels` (a distributed write whose
        rows were routed by key hash, `tarn.bucket.assigner_channels`): new buckets are only
        those this task owns, and a row of another task's hash range is refused."""
        spec, ids = AssignerSpec.of(self.options, channels), (assigner,)
        if self._assigner is not None and (spec, ids) != (self.assigner_spec, self._assigner_ids):
            raise TarnError(f"table {self.name}: this writer already assigns as another assigner task")
        self.assigner_spec, self._assigner_ids = spec, ids

def one_chunk_per_column(data: pa.Table) -> pa.Table:
    """The buffer with each column in one chunk, combined column by column so that each
    column's chunks are freed before the next is copied. Arrow's take concatenates a chunked
    column first; sorting a buffer of many chunks would hold it twice at once."""
    if all(column.num_chunks <= 1 for column in data.columns):
        return data
    for i in range(data.num_columns):
        data = data.set_column(i, data.field(i), pa.chunked_array([data.column(i).combine_chunks()]))
    return data


GIVEN_BUCKET = "_TARN_BUCKET"  # the buffered rows' given buckets (write(buckets=...)), never written


def restored_buckets(restored: Restored, vector_files: DeletionVectorFiles, root: str, schema: TableSchema,
                     options: Options) -> list[BucketFiles]:
    """The buckets of a restored snapshot with their files and deletion vectors (what a
    cross-partition key index is bootstrapped from)."""
    default_name = options.get("partition.default-name")
    out = []
    for (part, bucket), files in restored.files.items():
        values = partition.from_bytes(schema, part)
        path = partition.bucket_path(root, schema, default_name, values, bucket)
        entry = restored.vectors.get((part, bucket))
        deleted = BucketVectors(vector_files, part, bucket, entry).of if entry is not None else None
        out.append(BucketFiles(part, bucket, path, tuple(files), deleted))
    return out


# How a write places rows into buckets, by bucket mode (postpone-bucket writes never get here:
# their rows go to `bucket-postpone/` unplaced, `_flush_postponed`).
BUCKET_ROUTERS = {
    BucketMode.FIXED: TableWriter._route_fixed,
    BucketMode.UNAWARE: TableWriter._route_unaware,
    BucketMode.DYNAMIC: TableWriter._route_dynamic,
    BucketMode.CROSS_PARTITION: TableWriter._route_given,
}


def _is_batch_stream(data) -> bool:
    """An iterator/generator or reader of batches (written incrementally, bounded memory)."""
    if isinstance(data, pa.RecordBatchReader):
        return True
    return hasattr(data, "__next__")


def _kind_code(text: str, table_name: str) -> int:
    if text not in ROW_KIND_NAMES:
        raise SchemaMismatch(f"table {table_name}: row kind '{text}' is not one of {list(ROW_KIND_NAMES)}")
    return ROW_KIND_NAMES[text]
