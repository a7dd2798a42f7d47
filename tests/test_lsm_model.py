"""Model-based test of the LSM merge tree and every merge engine.

Random sequences of writes (batches with row kinds, duplicate keys, several flushes per commit),
deletes, compactions (universal and full) and reads run on small primary-key tables, for every
merge engine and option combination in `ENGINE_CONFIGS` and random LSM knobs (file format,
bucket count, partitioning, `write-only`, `write-buffer-size`, compaction trigger). Every read -
full scan, key-filtered scan, time travel to each earlier snapshot - is checked against
`tests/lsm_oracle.py`, a plain-Python model of Java Paimon's merge functions applied to all of
a key's rows at once. Writes Paimon refuses must raise a TarnError and leave the table exactly
as it was (same snapshot, same files).

Inputs are kept to those whose result does not depend on how the LSM tree happened to group
rows into merges: where Java Paimon's own merge functions give different results for different
groupings (see `Policy`), the generator steers around it, since tarn may legitimately differ
from the one-merge model there too.

Profiles: the CI profile is bounded; `TARN_HYPOTHESIS_PROFILE=long` runs many more and longer
sequences.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tarn
from tarn import col

from tarn.data.reader import FileReader
from tarn.options import Options
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.codec.roaring import bitmap32_bytes, bitmap32_values, bitmap64_bytes, bitmap64_values
from tests.lsm_oracle import RETRACT_KINDS, Column, LsmOracle, Row, TableDef, merge_order
from tests.helpers import canonical_rows

settings.register_profile(
    "tarn-lsm-ci", max_examples=8, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "tarn-lsm-long", max_examples=200, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "tarn-lsm-dev", parent=settings.get_profile("tarn-lsm-ci"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile(
    "tarn-lsm-longdev", parent=settings.get_profile("tarn-lsm-long"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate])
PROFILE_NAME = os.environ.get("TARN_HYPOTHESIS_PROFILE", "ci")
LONG = PROFILE_NAME in ("long", "longdev")
PROFILE = settings.get_profile({"long": "tarn-lsm-long", "dev": "tarn-lsm-dev",
                                "longdev": "tarn-lsm-longdev"}.get(PROFILE_NAME, "tarn-lsm-ci"))
MAX_OPS = 30 if LONG else 12
MAX_ROWS = 8 if LONG else 6

# Time travel checks every snapshot an operation makes, including the APPEND snapshot of a write
# followed by the COMPACT snapshot of its own compaction (False: only the last one).
CHECK_APPEND_BEFORE_COMPACT = True

FILLER = {"int": 1, "bigint": 1, "string": "z", "bool": True}
ARROW = {"int": pa.int32(), "bigint": pa.int64(), "string": pa.string(), "bool": pa.bool_(),
         # the collection, bitmap and sketch columns of the "agg-new" family
         "ints": pa.list_(pa.int32()), "strs": pa.list_(pa.string()), "smap": pa.map_(pa.string(), pa.int32()),
         "kmap": pa.map_(pa.string(), pa.struct([("v", pa.int32()), ("ts", pa.string())])),
         "items": pa.list_(pa.struct([("id", pa.int32()), ("a", pa.int32()), ("b", pa.string())])),
         "rbm32": pa.binary(), "rbm64": pa.binary(), "hll": pa.binary(), "theta": pa.binary()}
MAP_KINDS = ("smap", "kmap")


def _hll(values) -> bytes:
    import datasketches as ds
    sketch = ds.hll_sketch(12, ds.tgt_hll_type.HLL_4)
    for v in values:
        sketch.update(v)
    return sketch.serialize_compact()


def _theta(values) -> bytes:
    import datasketches as ds
    sketch = ds.update_theta_sketch(12)
    for v in values:
        sketch.update(v)
    return sketch.compact().serialize()


def normalized(kind: str, value):
    """A value of a column kind as the checks compare it: maps as dicts, bitmaps as their values,
    sketches as their estimates (a union's bytes depend on the order of its steps)."""
    if value is None:
        return None
    if kind in MAP_KINDS:
        return dict(value)
    if kind == "rbm32":
        return tuple(bitmap32_values(value).tolist())
    if kind == "rbm64":
        return tuple(bitmap64_values(value).tolist())
    if kind in ("hll", "theta"):
        import datasketches as ds
        sketch = ds.hll_sketch.deserialize(value) if kind == "hll" else ds.compact_theta_sketch.deserialize(value)
        return round(sketch.get_estimate(), 6)
    return value

# ------------------------------------------------------------------------------------------
# Column families and their values

SMALL_INT = st.one_of(st.none(), st.integers(-3, 3))
SHORT_TEXT = st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", " "]))
TOKENS = st.one_of(st.none(), st.sampled_from(["", " ", "a", "b", "a,b", "b,a", "a|b", "c|c", ",", "a,a"]))
BOOLS = st.one_of(st.none(), st.booleans())
SEQ = st.integers(0, 4)
INT_LISTS = st.one_of(st.none(), st.lists(st.sampled_from([None, 0, 1, 2]), max_size=3))
STR_LISTS = st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c"]), max_size=3))
INT_MAPS = st.one_of(st.none(), st.dictionaries(st.sampled_from("abc"), st.one_of(st.none(), st.integers(0, 2)),
                                                max_size=3))
STAMPED = st.fixed_dictionaries({"v": st.integers(0, 2), "ts": st.one_of(st.none(), st.sampled_from(["1", "2", "3"]))})
# no null ROW: merge_map_with_keytime's removal of a key is lost when the removing row is merged
# before the row holding the key meets it (Java's merge is not associative there)
STAMPED_MAPS = st.one_of(st.none(), st.dictionaries(st.sampled_from("abc"), STAMPED, max_size=3))
ITEMS = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.fixed_dictionaries(
    {"id": st.one_of(st.none(), st.integers(1, 2)), "a": st.one_of(st.none(), st.integers(0, 2)),
     "b": st.one_of(st.none(), st.sampled_from(["x", "y"]))})), max_size=3))
BITMAPS32 = st.one_of(st.none(), st.lists(st.integers(0, 200_000), max_size=4).map(bitmap32_bytes))
BITMAPS64 = st.one_of(st.none(), st.lists(st.integers(0, 2 ** 45), max_size=4).map(bitmap64_bytes))
HLLS = st.one_of(st.none(), st.lists(st.integers(0, 40), max_size=5).map(_hll))
THETAS = st.one_of(st.none(), st.lists(st.integers(0, 40), max_size=5).map(_theta))

FAMILIES = {
    # deduplicate / first-row: plain values and two candidate sequence fields
    "plain": {"v": ("int", SMALL_INT), "s": ("string", SHORT_TEXT), "sq": ("bigint", SEQ),
              "sq2": ("int", SEQ)},
    # partial-update: g1 guards a, b; (g2, g3) guard c, d; e and sq are outside groups
    "partial": {"a": ("int", SMALL_INT), "b": ("string", SHORT_TEXT), "g1": ("int", st.one_of(st.none(), SEQ)),
                "c": ("int", SMALL_INT), "d": ("bigint", SMALL_INT), "g2": ("int", st.one_of(st.none(), SEQ)),
                "g3": ("int", st.one_of(st.none(), SEQ)), "e": ("string", SHORT_TEXT), "sq": ("bigint", SEQ)},
    # aggregation: one column per function
    "agg": {"sm": ("bigint", SMALL_INT), "pr": ("bigint", st.one_of(st.none(), st.sampled_from([-1, 1, 2]))),
            "mx": ("int", SMALL_INT), "mn": ("string", SHORT_TEXT), "lv": ("int", SMALL_INT),
            "lnn": ("string", SHORT_TEXT), "la": ("string", TOKENS), "ld": ("string", TOKENS),
            "ba": ("bool", BOOLS), "bo": ("bool", BOOLS), "fv": ("int", SMALL_INT),
            "fnn": ("string", SHORT_TEXT), "sq": ("bigint", SEQ)},
    # aggregation with the collection, bitmap and sketch functions
    "agg-new": {"co": ("ints", INT_LISTS), "cd": ("strs", STR_LISTS), "mm": ("smap", INT_MAPS),
                "mk": ("kmap", STAMPED_MAPS), "np": ("items", ITEMS), "r3": ("rbm32", BITMAPS32),
                "r6": ("rbm64", BITMAPS64), "hl": ("hll", HLLS), "th": ("theta", THETAS)},
}

AGG_FUNCTIONS = {
    "fields.sm.aggregate-function": "sum", "fields.pr.aggregate-function": "product",
    "fields.mx.aggregate-function": "max", "fields.mn.aggregate-function": "min",
    "fields.lv.aggregate-function": "last_value",  # lnn: the default, last_non_null_value
    "fields.la.aggregate-function": "listagg",
    "fields.ld.aggregate-function": "listagg", "fields.ld.list-agg-delimiter": "|",
    "fields.ld.distinct": "true",
    "fields.ba.aggregate-function": "bool_and", "fields.bo.aggregate-function": "bool_or",
    "fields.fv.aggregate-function": "first_value", "fields.fnn.aggregate-function": "first_not_null_value",
}
NEW_FUNCTIONS = {
    "fields.co.aggregate-function": "collect", "fields.cd.aggregate-function": "collect",
    "fields.cd.distinct": "true", "fields.mm.aggregate-function": "merge_map",
    "fields.mk.aggregate-function": "merge_map_with_keytime", "fields.np.aggregate-function": "nested_partial_update",
    "fields.np.nested-key": "id", "fields.r3.aggregate-function": "rbm32", "fields.r6.aggregate-function": "rbm64",
    "fields.hl.aggregate-function": "hll_sketch", "fields.th.aggregate-function": "theta_sketch",
}
NOT_RETRACTABLE = ("mx", "mn", "la", "ld", "ba", "bo", "fv", "fnn")
LISTAGG_COLUMNS = ("la", "ld")
GROUPS = {"fields.g1.sequence-group": "a,b", "fields.g2,g3.sequence-group": "c,d"}


@dataclass(frozen=True)
class Policy:
    """Which row kinds a configuration gets and how the generator steers around inputs whose
    result depends on the grouping of merges in Java Paimon itself:

    - `kinds`: row kinds drawn for writes; `deletes`: whether `table.delete` is used.
    - `refused`: retracts make the write fail (first-row / partial-update without the options).
    - `null_retracts`: value columns of -U/-D rows are null (partial-update and aggregation
      start a key from a retract's values, Paimon's `initRow`, or restart from a -D).
    - `add_first`: a key's first row is an add (a merged retract would be dropped by a
      compaction reaching the top level, losing what it carries).
    - `null_retract_columns`: columns nulled in retract rows (a retraction Java cannot regroup:
      last_non_null_value / product retract through a null accumulator, sums in groups).
    - `complete_after_delete`: the first add after a key's -D has no null or blank value
      (with remove-record-on-delete a -D merged together with the adds after it no longer
      resets the row, and a -D dropped by a compaction leaves the next row unmerged).
    - `final_delete`: no row follows a key's -D (aggregation.remove-record-on-delete: a -D
      merged with the adds after it becomes a +I that no longer resets the older rows).
    - `null_empty_groups`: fields guarded by a sequence group whose sequence fields are all
      null are null in every row (tarn merges a key's single row where Java passes it through
      unmerged; the known divergence is pinned by `test_partial_update_single_row_passes_through`).
    - `monotone_sequence`: `sequence.field` values never decrease per key (partial-update and
      aggregation merge out-of-order runs differently depending on grouping); deduplicate only
      keeps an add from sorting below an earlier retract (a dropped tombstone).
    - `no_blank_lists`: listagg columns never hold a blank string (lookup tables: a compaction
      consuming level 0 merges even a key's single row - Java's LookupChangelogMergeFunctionWrapper
      has no ReducerMergeFunctionWrapper - and listagg turns a lone blank string into null).
    """

    kinds: tuple[str, ...] = ("+I", "+U", "-U", "-D")
    deletes: bool = True
    refused: bool = False
    null_retracts: bool = False
    add_first: bool = False
    null_retract_columns: tuple[str, ...] = ()
    monotone_sequence: bool = False
    null_empty_groups: bool = False
    complete_after_delete: bool = False
    final_delete: bool = False
    no_blank_lists: bool = False


ANY = Policy()
REFUSED = Policy(refused=True)
ADDS_ONLY = Policy(kinds=("+I", "+U"), deletes=False)


@dataclass(frozen=True)
class EngineConfig:
    id: str
    family: str
    options: dict
    policy: Policy = ANY


ENGINE_CONFIGS = [
    EngineConfig("dedup", "plain", {}),
    EngineConfig("dedup-ignore-delete", "plain", {"ignore-delete": "true"}),
    EngineConfig("dedup-seq", "plain", {"sequence.field": "sq"}),
    EngineConfig("dedup-seq2", "plain", {"sequence.field": "sq2,sq"}),
    EngineConfig("dedup-seq-padding", "plain", {"sequence.field": "sq", "sequence.auto-padding": "row-kind-flag"}),
    EngineConfig("dedup-seq-descending", "plain", {"sequence.field": "sq", "sequence.field.sort-order": "descending"},
                 Policy(deletes=False)),
    EngineConfig("first-row", "plain", {"merge-engine": "first-row"}, REFUSED),
    EngineConfig("first-row-ignore-delete", "plain", {"merge-engine": "first-row", "first-row.ignore-delete": "true"}),
    EngineConfig("partial", "partial", {"merge-engine": "partial-update"}, REFUSED),
    EngineConfig("partial-ignore-delete", "partial",
                 {"merge-engine": "partial-update", "partial-update.ignore-delete": "true"}),
    EngineConfig("partial-ignore-delete-defaults", "partial",
                 {"merge-engine": "partial-update", "ignore-delete": "true", "fields.b.default-value": "dflt",
                  "fields.c.default-value": "7"}),
    EngineConfig("partial-remove-on-delete", "partial",
                 {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
                 Policy(kinds=("+I", "+U", "-D"), null_retracts=True, complete_after_delete=True)),
    EngineConfig("partial-groups", "partial",
                 {"merge-engine": "partial-update", **GROUPS, "fields.d.aggregate-function": "sum"},
                 Policy(add_first=True, null_retract_columns=("e", "sq", "d"), null_empty_groups=True)),
    EngineConfig("partial-groups-aggregates", "partial",
                 {"merge-engine": "partial-update", **GROUPS, "fields.c.aggregate-function": "max",
                  "fields.d.aggregate-function": "min"},
                 Policy(kinds=("+I", "+U"), deletes=False, null_empty_groups=True)),
    EngineConfig("partial-seq", "partial",
                 {"merge-engine": "partial-update", "sequence.field": "sq", "ignore-delete": "true"},
                 Policy(monotone_sequence=True)),
    EngineConfig("agg", "agg", {"merge-engine": "aggregation", **AGG_FUNCTIONS}, ADDS_ONLY),
    EngineConfig("agg-retract", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS,
                  **{f"fields.{c}.ignore-retract": "true" for c in NOT_RETRACTABLE}},
                 Policy(add_first=True, null_retract_columns=("pr", "lnn", "sq"))),
    EngineConfig("agg-default-function", "agg",
                 {"merge-engine": "aggregation", "fields.default-aggregate-function": "max",
                  "fields.sm.aggregate-function": "sum", "fields.ld.aggregate-function": "listagg",
                  "fields.ld.list-agg-delimiter": "|", "fields.ld.distinct": "true"}, ADDS_ONLY),
    EngineConfig("agg-remove-on-delete", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS, "aggregation.remove-record-on-delete": "true",
                  "fields.fv.aggregate-function": "last_value", "fields.fnn.aggregate-function": "max"},
                 Policy(kinds=("+I", "+U", "-D"), null_retracts=True, final_delete=True)),
    EngineConfig("agg-ignore-delete", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS, "ignore-delete": "true"}),
    EngineConfig("agg-seq", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS, "sequence.field": "sq"},
                 Policy(kinds=("+I", "+U"), deletes=False, monotone_sequence=True)),
    # lookup tables: every level above 0 holds a key's full merged value (Java's
    # LookupMergeFunction), read and compacted as Java does; same content as one merge
    EngineConfig("agg-lookup", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS, "changelog-producer": "lookup"},
                 Policy(kinds=("+I", "+U"), deletes=False, no_blank_lists=True)),
    EngineConfig("agg-retract-force-lookup", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS, "force-lookup": "true",
                  **{f"fields.{c}.ignore-retract": "true" for c in NOT_RETRACTABLE}},
                 Policy(add_first=True, null_retract_columns=("pr", "lnn", "sq"), no_blank_lists=True)),
    EngineConfig("partial-lookup", "partial",
                 {"merge-engine": "partial-update", "ignore-delete": "true", "changelog-producer": "lookup"}),
    EngineConfig("partial-groups-force-lookup", "partial",
                 {"merge-engine": "partial-update", **GROUPS, "fields.d.aggregate-function": "sum",
                  "force-lookup": "true"},
                 Policy(add_first=True, null_retract_columns=("e", "sq", "d"), null_empty_groups=True)),
    EngineConfig("dedup-seq-lookup", "plain", {"sequence.field": "sq", "changelog-producer": "lookup"}),
    # deletion vectors: level 0 pushed up every commit, old rows marked; a reader that skips level
    # 0 and never merges (Java's, checked by `check_dv_read`) sees the table
    EngineConfig("dedup-dv", "plain", {"deletion-vectors.enabled": "true"}),
    EngineConfig("dedup-seq-dv", "plain", {"sequence.field": "sq", "deletion-vectors.enabled": "true"}),
    EngineConfig("partial-dv", "partial",
                 {"merge-engine": "partial-update", "ignore-delete": "true", "deletion-vectors.enabled": "true"}),
    EngineConfig("partial-groups-dv", "partial",
                 {"merge-engine": "partial-update", **GROUPS, "fields.d.aggregate-function": "sum",
                  "deletion-vectors.enabled": "true"},
                 Policy(add_first=True, null_retract_columns=("e", "sq", "d"), null_empty_groups=True)),
    EngineConfig("agg-dv", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS, "deletion-vectors.enabled": "true"},
                 Policy(kinds=("+I", "+U"), deletes=False, no_blank_lists=True)),
    # collect, merge_map, ...: a retraction's effect depends on which rows one merge holds
    # (Java's retract(null, v) is null), so retractions only pass by with ignore-retract
    EngineConfig("agg-new", "agg-new", {"merge-engine": "aggregation", **NEW_FUNCTIONS}, ADDS_ONLY),
    EngineConfig("agg-new-ignore-retract", "agg-new",
                 {"merge-engine": "aggregation", **NEW_FUNCTIONS,
                  **{f"fields.{c}.ignore-retract": "true" for c in ("co", "cd", "mm", "mk", "np", "r3", "r6", "hl", "th")}},
                 Policy(add_first=True)),
    EngineConfig("agg-retract-dv", "agg",
                 {"merge-engine": "aggregation", **AGG_FUNCTIONS, "deletion-vectors.enabled": "true",
                  **{f"fields.{c}.ignore-retract": "true" for c in NOT_RETRACTABLE}},
                 Policy(add_first=True, null_retract_columns=("pr", "lnn", "sq"), no_blank_lists=True)),
]


@dataclass(frozen=True)
class Knobs:
    """The LSM settings drawn per example."""

    file_format: str
    bucket: int
    partitioned: bool
    write_only: bool
    small_buffer: bool
    trigger: int

    def options(self) -> dict:
        opts = {"bucket": str(self.bucket), "file.format": self.file_format,
                "num-sorted-run.compaction-trigger": str(self.trigger)}
        if self.write_only:
            opts["write-only"] = "true"
        if self.small_buffer:
            opts["write-buffer-size"] = "1 b"
        return opts


KNOBS = st.builds(Knobs, st.sampled_from(["parquet", "orc", "avro"]), st.integers(1, 2), st.booleans(),
                  st.booleans(), st.booleans(), st.integers(2, 5))


class Harness:
    """One table under test with its oracle and the expected content of each snapshot.

    `postpone`: the table has bucket = -2 (postpone bucket mode). Writes land in
    `bucket-postpone/` and no read sees them until a compaction places them; `visible` is what
    reads show (the oracle as of the last compaction, per partition)."""

    def __init__(self, config: EngineConfig, knobs: Knobs, warehouse: str, postpone: bool = False,
                 merge_on_read: bool = False):
        self.config, self.knobs = config, knobs
        self.postpone = postpone and not merge_on_read  # merged on read: every row shows at once
        family = FAMILIES[config.family]
        keys = (["p"] if knobs.partitioned else []) + ["k"]
        columns = [Column("p", "string")] if knobs.partitioned else []
        columns += [Column("k", "int")] + [Column(n, kind) for n, (kind, _) in family.items()]
        options = {**config.options, **knobs.options()}
        if postpone:
            options["bucket"] = "-2"
            options["postpone.default-bucket-num"] = str(knobs.bucket)
        if merge_on_read:
            options["postpone.merge-on-read"] = "true"
        self.visible: list[dict] = []
        self.definition = TableDef(tuple(columns), tuple(keys), options)
        self.schema = pa.schema([(c.name, ARROW[c.kind]) for c in columns])
        self.table = tarn.Catalog(warehouse).create_table(
            "db.lsm", schema=self.schema, primary_key=keys,
            partition_keys=["p"] if knobs.partitioned else None, options=options)
        self.oracle = LsmOracle(self.definition)
        self.kinds = {c.name: c.kind for c in columns}
        self.expected: dict[int, list[dict]] = {}
        self.trace: list[str] = [f"create_table(options={options})"]  # the calls made, for failures

    # -------------------------------------------------------------- generating rows

    def row(self, data) -> dict:
        values = {}
        if self.knobs.partitioned:
            values["p"] = data.draw(st.sampled_from(["x", "y"]), label="p")
        values["k"] = data.draw(st.integers(0, 3), label="k")
        for name, (_, strategy) in FAMILIES[self.config.family].items():
            values[name] = data.draw(strategy, label=name)
        return values

    def steer(self, rows: list[dict], kinds: list[str]) -> tuple[list[dict], list[str]]:
        """Apply the policy: adjust rows so their result does not depend on merge grouping."""
        policy = self.config.policy
        names = [c.name for c in self.definition.columns if c.name not in self.definition.primary_keys]
        seq = self.definition.sequence_fields
        seen: dict[tuple, list[tuple[dict, str]]] = {}
        for key, history in self.oracle.history.items():
            seen[key] = [(r.values, r.kind) for r in history]
        out_rows, out_kinds = [], []
        for values, kind in zip(rows, kinds):
            values = dict(values)
            key = self.definition.key_of(values)
            earlier = seen.setdefault(key, [])
            retract = kind in RETRACT_KINDS
            if policy.final_delete and earlier and earlier[-1][1] == "-D":
                continue
            if retract and policy.add_first and not any(k not in RETRACT_KINDS for _, k in earlier):
                kind, retract = "+I", False
            if policy.no_blank_lists:
                values.update({n: "a" for n in LISTAGG_COLUMNS
                               if isinstance(values.get(n), str) and not values[n].strip()})
            if retract and policy.null_retracts:
                values.update({n: None for n in names})
            if retract:
                values.update({n: None for n in policy.null_retract_columns})
            if not retract and policy.complete_after_delete and earlier and earlier[-1][1] == "-D":
                values.update({n: FILLER[self.kinds[n]] for n in names
                               if values[n] is None or (isinstance(values[n], str) and not values[n].strip())})
            if retract or policy.null_empty_groups:
                for order, guarded in self.definition.sequence_groups:
                    if all(values[s] is None for s in order):
                        values.update({n: None for n in guarded})
            if seq and not (retract and self.definition.ignore_delete):
                if policy.monotone_sequence:
                    bounds = [(v, k) for v, k in earlier if not (k in RETRACT_KINDS and self.definition.ignore_delete)]
                elif not retract:
                    bounds = [(v, k) for v, k in earlier if k in RETRACT_KINDS]
                else:
                    bounds = []
                for bound, bound_kind in bounds:
                    if self.sorts_before(values, kind, bound, bound_kind):
                        values.update({s: bound[s] for s in seq})
            earlier.append((values, kind))
            out_rows.append(values)
            out_kinds.append(kind)
        return out_rows, out_kinds

    def sorts_before(self, values: dict, kind: str, other: dict, other_kind: str) -> bool:
        """Would a new row merge before an earlier one (sequence fields decide)?"""
        new, old = Row(values, kind, 1), Row(other, other_kind, 0)
        return merge_order(self.definition, [old, new])[0] is new

    def arrow(self, rows: list[dict], names: list[str] | None = None) -> pa.Table:
        schema = self.schema if names is None else pa.schema([self.schema.field(n) for n in names])
        return pa.Table.from_pylist([{n: (list(r[n].items()) if self.kinds[n] in MAP_KINDS and r[n] is not None
                                          else r[n]) for n in schema.names} for r in rows], schema=schema)

    # -------------------------------------------------------------- operations

    def op_write(self, data) -> None:
        rows = [self.row(data) for _ in range(data.draw(st.integers(1, MAX_ROWS), label="batch size"))]
        policy = self.config.policy
        kinds = [data.draw(st.sampled_from(policy.kinds), label="kind") for _ in rows]
        rows, kinds = self.steer(rows, kinds)
        if not rows:
            return
        accepted = self.oracle.accepts(kinds)
        chunks = data.draw(st.integers(1, 3), label="writer.write calls") if accepted else 1
        self.trace.append(f"write({rows}, row_kind={kinds}, chunks={chunks})")
        if not accepted:
            self.expect_refused(lambda: self.table.write(self.arrow(rows), row_kind=kinds))
            return
        self.commit_and_check(lambda: self._write_chunks(rows, kinds, chunks))
        self.oracle.write(rows, kinds)
        self.record_snapshots()

    def _write_chunks(self, rows, kinds, chunks) -> None:
        if chunks == 1:
            self.table.write(self.arrow(rows), row_kind=kinds)
            return
        writer = self.table.new_writer()
        size = -(-len(rows) // chunks)
        for start in range(0, len(rows), size):
            writer.write(self.arrow(rows[start:start + size]), row_kind=kinds[start:start + size])
        self.table.commit(writer.prepare_commit())

    def op_delete(self, data) -> None:
        rows = [self.row(data) for _ in range(data.draw(st.integers(1, 3), label="delete count"))]
        if self.config.policy.add_first:
            rows = [r for r in rows if any(k not in RETRACT_KINDS for k in
                                           (x.kind for x in self.oracle.history.get(self.definition.key_of(r), [])))]
            if not rows:
                return
        keys = list(self.definition.primary_keys)
        full = [{n: (r[n] if n in keys else None) for n in self.schema.names} for r in rows]
        full, _ = self.steer(full, ["-D"] * len(full))
        if not full:
            return
        self.trace.append(f"delete({[{k: r[k] for k in keys} for r in full]})")
        if not self.oracle.accepts(["-D"]):
            self.expect_refused(lambda: self.table.delete(self.arrow(full, keys)))
            return
        self.commit_and_check(lambda: self.table.delete(self.arrow(full, keys)))
        self.oracle.write(full, ["-D"] * len(full))
        self.record_snapshots()

    def op_compact(self, data, full: bool) -> None:
        partitions = None
        if full and self.knobs.partitioned and data.draw(st.booleans(), label="one partition"):
            partitions = [{"p": data.draw(st.sampled_from(["x", "y"]), label="partition")}]
        self.trace.append(f"compact(full={full}, partitions={partitions})")
        self.commit_and_check(lambda: self.table.compact(full=full, partitions=partitions))
        if full:
            self.oracle.full_compaction(None if partitions is None else partitions[0]["p"])
        if self.postpone:  # the compaction placed every postponed row of what it compacted
            placed = partitions[0]["p"] if partitions else None
            self.visible = [r for r in self.visible if placed is not None and r["p"] != placed] + \
                [r for r in self.oracle.rows() if placed is None or r["p"] == placed]
        self.record_snapshots()

    def op_scan_keys(self, data) -> None:
        ks = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=2), label="filter keys")
        predicate = col("k") == ks[0] if len(ks) == 1 else col("k").isin(ks)
        if self.hides_level_0(self.table.latest_snapshot()):
            return
        got = self.table.scan(filter=predicate).to_arrow()
        want = [r for r in self.rows() if r["k"] in ks]
        self.same(got, want, f"scan(filter=k in {ks})")

    # -------------------------------------------------------------- checks

    def commit_and_check(self, action) -> None:
        self.before = self.table.latest_snapshot()
        action()

    def record_snapshots(self) -> None:
        """The content every snapshot the op made must show (only the last one while the
        APPEND snapshot of a self-compacting write is known to be incomplete)."""
        latest = self.table.latest_snapshot()
        first = self.before.id + 1 if self.before else 1
        last = latest.id if latest else 0
        for sid in range(first if CHECK_APPEND_BEFORE_COMPACT else max(first, last), last + 1):
            if self.hides_level_0(self.table.snapshot(sid)):
                continue
            self.expected[sid] = list(self.visible) if self.postpone else self.oracle.save()

    def rows(self) -> list[dict]:
        """What a read of the latest snapshot shows."""
        return self.visible if self.postpone else self.oracle.rows()

    def hides_level_0(self, snapshot) -> bool:
        """Paimon's batch reads leave level 0 out (deletion vectors, first-row): a snapshot with
        level-0 files shows only what earlier compactions moved up, so the oracle of the latest
        write does not describe it; such snapshots are not compared."""
        return (snapshot is not None and self.table.planner().skips_level_0()
                and any(e.file.level == 0 for e in self.table.live_entries(snapshot)))

    def expect_refused(self, action) -> None:
        before_id = _snapshot_id(self.table)
        before_files = _listing(self.table.root)
        with pytest.raises(tarn.TarnError):
            action()
        assert _snapshot_id(self.table) == before_id, "a refused write committed a snapshot"
        assert _listing(self.table.root) == before_files, "a refused write left files behind"

    def check_latest(self) -> None:
        if self.hides_level_0(self.table.latest_snapshot()):
            return
        self.same(self.table.scan().to_arrow(), self.rows(), "scan()")
        if self.table.options.bool("deletion-vectors.enabled") and not self.knobs.write_only:
            self.check_dv_read()

    def check_dv_read(self) -> None:
        """Java's deletion-vector read: level 0 skipped, each other file alone minus its vector."""
        schema = self.table.schema()
        parts = []
        for split in self.table.scan().plan():
            assert all(m.level > 0 for m in split.files), "level-0 file left behind"
            store = DeletionVectorFiles(self.table.file_io, self.table.root)
            held = split.deletion_files
            reader = FileReader(self.table.file_io, schema, self.table.schema_by_id, Options(schema.options),
                                deletions=lambda name, held=held: store.read_one(held[name], name) if name in held else None)
            for meta in split.files:
                parts.append(reader.read(split.bucket_path, meta, list(schema.fields), with_system=False))
        got = pa.concat_tables(parts) if parts else self.schema.empty_table()
        self.same(got.select(self.schema.names), self.rows(), "deletion-vector read")

    def check_time_travel(self) -> None:
        for sid, rows in self.expected.items():
            self.same(self.table.scan(snapshot_id=sid).to_arrow(), rows, f"scan(snapshot_id={sid})")

    def same(self, got: pa.Table, want: list[dict], what: str) -> None:
        names = self.schema.names
        assert got.column_names == names

        def norm(rows):
            return [{n: normalized(self.kinds[n], r[n]) for n in names} for r in rows]

        g, w = _canonical(norm(got.to_pylist()), names), _canonical(norm(want), names)
        calls = "\n  ".join(self.trace)
        assert g == w, f"{what}:\n got  {g}\n want {w}\nafter:\n  {calls}"


def _snapshot_id(table) -> int | None:
    latest = table.latest_snapshot()
    return latest.id if latest else None


def _listing(root: str) -> set[str]:
    found = set()
    for directory, _, files in os.walk(root):
        found.update(os.path.relpath(os.path.join(directory, f), root) for f in files)
    return found


def _canonical(rows: list[dict], names: list[str]) -> list[tuple]:
    return canonical_rows(rows, names, as_tuples=True)


def run(config: EngineConfig, knobs: Knobs, data, postpone: bool = False, merge_on_read: bool = False) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        harness = Harness(config, knobs, warehouse, postpone, merge_on_read)
        ops = ["write", "write", "write", "compact", "full", "scan", "keys"]
        if config.policy.deletes:
            ops.append("delete")
        for _ in range(data.draw(st.integers(1, MAX_OPS), label="number of ops")):
            op = data.draw(st.sampled_from(ops), label="op")
            if op == "write":
                harness.op_write(data)
            elif op == "delete":
                harness.op_delete(data)
            elif op in ("compact", "full"):
                harness.op_compact(data, full=op == "full")
            elif op == "keys":
                harness.op_scan_keys(data)
            harness.check_latest()
        harness.check_time_travel()


@pytest.mark.parametrize("config", ENGINE_CONFIGS, ids=[c.id for c in ENGINE_CONFIGS])
@PROFILE
@given(knobs=KNOBS, data=st.data())
def test_lsm_matches_oracle(config, knobs, data):
    run(config, knobs, data)


POSTPONE_CONFIGS = [c for c in ENGINE_CONFIGS if c.id in (
    "dedup", "dedup-ignore-delete", "dedup-seq", "first-row", "first-row-ignore-delete", "partial",
    "partial-ignore-delete", "agg-dv")] + [c for c in ENGINE_CONFIGS if c.family == "agg"][:1]


@pytest.mark.parametrize("merge_on_read", [False, True], ids=["compaction", "merge-on-read"])
@pytest.mark.parametrize("config", POSTPONE_CONFIGS, ids=[c.id for c in POSTPONE_CONFIGS])
@PROFILE
@given(knobs=KNOBS, data=st.data())
def test_postpone_bucket_matches_oracle(config, merge_on_read, knobs, data):
    """bucket = -2: random writes, deletes and compactions; reads show exactly what the oracle
    held at each partition's last compaction (postponed rows are invisible until then), or,
    with postpone.merge-on-read, everything written (postponed rows merged on read)."""
    run(config, knobs, data, postpone=True, merge_on_read=merge_on_read)


# ------------------------------------------------------------------------------------------
# Pinned cases: refusals, per-row semantics within one merge, known divergences from Java


def _table(tmp_path, columns: dict, options: dict, name: str = "db.t"):
    schema = pa.schema([("k", pa.int32())] + [(n, ARROW[t]) for n, t in columns.items()])
    table = tarn.Catalog(str(tmp_path)).create_table(name, schema=schema, primary_key=["k"],
                                                      options={"bucket": "1", **options})
    return table, schema


def _listing_and_snapshot(table):
    return _listing(table.root), _snapshot_id(table)


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update"},
    {"merge-engine": "first-row"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "max"},
], ids=["partial-update", "first-row", "aggregation-max"])
def test_refused_retract_commits_nothing(tmp_path, options):
    """A record the engine cannot take fails the write; no snapshot, no file is left. (Two
    buckets and a 1-byte buffer: the other bucket's flush has already written its file.)"""
    table, schema = _table(tmp_path, {"v": "int"}, {**options, "bucket": "2", "write-buffer-size": "1 b"})
    table.write(pa.table({"k": [1, 2], "v": [1, 2]}, schema=schema))
    before = _listing_and_snapshot(table)
    rows = pa.table({"k": [1, 1, 2, 3], "v": [5, 1, 6, 7]}, schema=schema)
    with pytest.raises(tarn.TarnError):
        table.write(rows, row_kind=["+I", "-U", "+I", "+I"])
    assert _listing_and_snapshot(table) == before
    assert sorted(table.scan().to_arrow().column("k").to_pylist()) == [1, 2]


def test_one_merge_applies_rows_in_order(tmp_path):
    """Within one merge, rows fold one by one: product retraction divides the running product
    (Java's integer division), listagg distinct keeps the first string whole."""
    options = {"merge-engine": "aggregation", "fields.pr.aggregate-function": "product",
               "fields.ld.aggregate-function": "listagg", "fields.ld.list-agg-delimiter": "|",
               "fields.ld.distinct": "true", "fields.ld.ignore-retract": "true"}
    table, schema = _table(tmp_path, {"pr": "bigint", "ld": "string"}, options)
    rows = [{"k": 1, "pr": 6, "ld": "a|a"}, {"k": 1, "pr": 4, "ld": "x"}, {"k": 1, "pr": -7, "ld": "b|a|x|b"}]
    table.write(pa.Table.from_pylist(rows, schema=schema), row_kind=["+I", "-U", "+I"])
    oracle = LsmOracle(TableDef((Column("k", "int"), Column("pr", "bigint"), Column("ld", "string")),
                                ("k",), options))
    oracle.write(rows, ["+I", "-U", "+I"])
    assert oracle.rows() == [{"k": 1, "pr": -7, "ld": "a|a|b|x"}]  # 6 / 4 = 1 (truncated), * -7; x skipped
    assert table.scan().to_arrow().to_pylist() == oracle.rows()


def test_partial_update_single_row_passes_through(tmp_path):
    table, schema = _table(tmp_path, {"a": "int", "g": "int"},
                           {"merge-engine": "partial-update", "fields.g.sequence-group": "a"})
    table.write(pa.table({"k": [1], "a": [5], "g": [None]}, schema=schema))
    assert table.scan().to_arrow().to_pylist() == [{"k": 1, "a": 5, "g": None}]


def test_partial_update_remove_on_delete_ignores_lone_update_before(tmp_path):
    table, schema = _table(tmp_path, {"a": "int"}, {"merge-engine": "partial-update",
                                                     "partial-update.remove-record-on-delete": "true"})
    table.write(pa.table({"k": [1], "a": [1]}, schema=schema))
    table.write(pa.table({"k": [1], "a": [None]}, schema=schema), row_kind="-U")
    assert table.scan().to_arrow().to_pylist() == [{"k": 1, "a": 1}]


def test_append_snapshot_keeps_files_compacted_in_the_same_commit(tmp_path):
    """New files the writer's own compaction merged stay in the APPEND snapshot (Java keeps them
    in newFiles and lists them in compactBefore); the COMPACT snapshot then replaces them."""
    schema = pa.schema([("p", pa.string()), ("k", pa.int32()), ("v", pa.int32())])
    table = tarn.Catalog(str(tmp_path)).create_table(
        "db.t", schema=schema, primary_key=["p", "k"], partition_keys=["p"],
        options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})
    table.write(pa.table({"p": ["x"], "k": [1], "v": [1]}, schema=schema))
    table.write(pa.table({"p": ["x", "y"], "k": [1, 1], "v": [2, 2]}, schema=schema))
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds == ["APPEND", "APPEND", "COMPACT"]
    rows = table.scan(snapshot_id=2).to_arrow().to_pylist()
    assert sorted(rows, key=lambda r: r["p"]) == [{"p": "x", "k": 1, "v": 2}, {"p": "y", "k": 1, "v": 2}]
