"""The level-0 file of a deletion-vector commit is upgraded (same file, new level) where Java
Paimon upgrades it, and rewritten where it must be.

Java's MergeTreeCompactTask upgrades a lone file of a compaction unit instead of rewriting it,
and LookupMergeTreeCompactRewriter.upgradeStrategy (Paimon 1.0 and master) keeps a level-0 file's
bytes only when in deletion-vector mode its delete-row count is known to be 0 (-D rows must be
dropped) and either it goes to the max level or the engine is deduplicate without a sequence
field (the newest row is the merged value). Every other engine, a sequence field, or a commit
holding deletes rewrites it through the lookup merge. The old rows of the upserted keys are
marked in the older files' vectors either way.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from tarn.meta.manifest import APPEND_SOURCE, COMPACT_SOURCE
from tests.test_deletion_vectors import BASE, SCHEMA, by_key, check, dv_table, rows, with_base


def files_of(table, snapshot) -> dict[str, tuple[int, int]]:
    """{file name: (level, file source)} of one snapshot."""
    return {e.file.file_name: (e.file.level, e.file.file_source) for e in table.live_entries(snapshot)}


def commit(table, data, row_kind=None):
    """Write one commit; returns the files of its APPEND snapshot and of its COMPACT snapshot."""
    before = table.latest_snapshot().id
    table.write(data, row_kind=row_kind)
    after = table.latest_snapshot()
    assert [table.snapshot(i).commit_kind for i in range(before + 1, after.id + 1)] == ["APPEND", "COMPACT"]
    return files_of(table, table.snapshot(before + 1)), files_of(table, after)


def flushed(appended: dict) -> str:
    (name,) = [name for name, (level, _) in appended.items() if level == 0]
    return name


def test_deduplicate_upserts_keep_the_level0_file_at_a_new_level(catalog):
    table = dv_table(catalog)
    oracle = with_base(table)
    max_level = max(level for level, _ in files_of(table, table.latest_snapshot()).values())
    for step, count in enumerate([400, 40, 4]):  # each smaller: size ratio leaves the run above alone
        keys = list(range(1000 + step * 3, 1000 + step * 3 + count))
        appended, compacted = commit(table, rows(keys, [k + step for k in keys], tag="u"))
        oracle.update({k: (k + step, f"u{k + step}") for k in keys})
        name = flushed(appended)
        assert name in compacted, "the level-0 file was rewritten"
        level, source = compacted[name]
        assert 0 < level < max_level and source == APPEND_SOURCE
        check(table, oracle)
    # each upserted key's old row is marked in the newest file above that held it
    files = table.system_table("files").to_arrow().to_pylist()
    deleted = {(f["level"], f["record_count"]): f["deleted_row_count"] for f in files}
    assert deleted == {(max_level, BASE): 400, (max_level - 1, 400): 40, (max_level - 2, 40): 4,
                       (max_level - 3, 4): 0}


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    {"sequence.field": "v"},
], ids=["partial-update", "aggregation", "sequence-field"])
def test_merging_engines_rewrite_the_level0_file(catalog, options):
    plain = catalog.create_table("plain", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", **options})
    table = dv_table(catalog, "dv", **options)
    base = rows(range(1000, 1000 + BASE), range(BASE))
    plain.write(base)
    table.write(base)
    for step in range(3):
        keys = list(range(995 + step, 1030, 3))
        data = rows(keys, [50 + step] * len(keys), tag=str(step))
        plain.write(data)
        appended, compacted = commit(table, data)
        assert flushed(appended) not in compacted, "a merging engine's level-0 file was upgraded"
        assert all(source == COMPACT_SOURCE for level, source in compacted.values() if 0 < level < 5)
        check(table, by_key(plain.scan().to_arrow().to_pylist()))


def test_a_commit_with_deletes_rewrites_the_level0_file(catalog):
    table = dv_table(catalog)
    oracle = with_base(table)
    keys = list(range(1000, 1010))
    kinds = ["-D" if k % 2 else "+I" for k in keys]
    appended, compacted = commit(table, rows(keys, [7] * len(keys)), row_kind=pa.array(kinds))
    name = flushed(appended)
    assert name not in compacted, "a level-0 file holding -D rows was upgraded"
    for k in keys:
        if k % 2:
            del oracle[k]
        else:
            oracle[k] = (7, "x7")
    check(table, oracle)
    for split in table.scan().plan():
        assert all(m.delete_row_count == 0 for m in split.files)


def test_the_first_commit_goes_to_the_max_level_unchanged(catalog):
    table = dv_table(catalog, **{"merge-engine": "partial-update"})
    before = table.latest_snapshot()
    table.write(rows(range(10), range(10)))
    snapshots = [table.snapshot(i) for i in range((before.id if before else 0) + 1, table.latest_snapshot().id + 1)]
    appended, compacted = files_of(table, snapshots[0]), files_of(table, snapshots[-1])
    name = flushed(appended)
    assert compacted[name][0] == 5  # partial-update, but nothing below to merge with: upgraded
    check(table, {k: (k, f"x{k}") for k in range(10)})
