"""The feature table as data (tarn/options.py, tarn/file_fields.py) and its rendering in
docs/guide-options.md: complete rows, valid values, and no option tarn's code reads marked as
having no effect."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tarn import options as opts
from tarn.file_fields import FILE_FIELDS, FILES, INDEX_TYPES
from tarn.options import ACTED, CARRIED, READS, WRITES, Effect, check_value, option

ROOT = Path(__file__).resolve().parents[1]
RELEASES = ("0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0", "1.1", "1.2", "1.3", "1.4", "2.0")
MASTER = "2.1"  # Paimon master (2.1-SNAPSHOT): declared after the 2.0 release
PYPAIMON = re.compile(r"pypaimon \d+\.\d+")


def _renderer():
    spec = importlib.util.spec_from_file_location("render_options_guide", ROOT / "scripts" / "render_options_guide.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def every_opt() -> list[tuple[str, opts.Opt]]:
    """(name as the guide shows it, Opt) of every row of the options half."""
    rows = [(o.name, o) for o in opts.OPTIONS]
    rows += [(f"fields.<column>.{o.name}", o) for o in opts.FIELD_OPTIONS]
    rows += [(f"file-index.{t}.<column>.{o.name}", o) for t, params in opts.FILE_INDEX_TYPES.items() for o in params]
    return rows


def valid_since(since: str) -> bool:
    return since in RELEASES or since == MASTER or PYPAIMON.fullmatch(since) is not None


# ------------------------------------------------------------------ the guide


def test_guide_holds_the_rendering():
    render = _renderer()
    section = render.guide_section((ROOT / "docs" / "guide-options.md").read_text())
    assert section is not None, "docs/guide-options.md lacks the feature-table markers"
    assert section == render.render_feature_table().strip("\n"), (
        "the feature table in docs/guide-options.md is stale: run scripts/render_options_guide.py")


def test_rendering_has_a_row_per_option_and_field():
    text = _renderer().render_feature_table()
    for name, _ in every_opt():
        assert f"| `{name}` |" in text, name
    for f in FILE_FIELDS:
        assert f"| `{f.name}` |" in text, f


# ------------------------------------------------------------------ options


@pytest.mark.parametrize("name,opt", every_opt(), ids=[n for n, _ in every_opt()])
def test_option_row_is_complete(name, opt):
    assert isinstance(opt.effect, Effect)
    assert valid_since(opt.since), f"{name}: since {opt.since!r}"
    if opt.effect in (READS, WRITES):
        assert opt.note, f"{name}: a refused option needs a note saying why"
    if opt.honoured:
        assert opt.effect in (READS, WRITES), f"{name}: honoured values only qualify a refusal"
    for value in opt.honoured:
        check_value(opt, value)  # raises ValueError for a value the option does not take
    assert "\n" not in opt.note and "|" not in opt.note


def test_option_names_unique():
    names = [o.name for o in opts.OPTIONS]
    assert len(names) == len(set(names))


# Options tarn's code reads that are nonetheless CARRIED, each with the reason.
READ_BUT_CARRIED = {
    "path": "the Spark source's load path (a read option), not the table's",
    "consumer-id": "tarn's Spark stream takes it as a read option; a table's own value changes no batch read",
    "consumer.ignore-progress": "tarn's Spark stream takes it as a read option",
    "read.changelog": "tarn's Spark source takes it as a read option",
    "bucket-append-ordered": "validated at creation only (incremental clustering of fixed buckets needs it false)",
}

_READ_CALL = re.compile(r"""\.(?:get|int|bool|enum|list|memory_bytes|duration_ms|float)\(\s*["']([^"']+)["']""")
_OPTION_CONSTANT = re.compile(r"""^[A-Z_]*OPTION\s*=\s*["']([^"']+)["']""", re.MULTILINE)


def option_names_read_by_tarn() -> dict[str, list[str]]:
    """Option names (resolved to their Opt row) that tarn's modules read: string literals in
    `.get(...)`, `.int(...)`, `.bool(...)`, ... calls and `*_OPTION = "..."` constants.
    Keys under a free prefix (`parquet.*`, `s3.*`, ...) have no row and are left out."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tarn").rglob("*.py")):
        text = path.read_text()
        for key in [*_READ_CALL.findall(text), *_OPTION_CONSTANT.findall(text)]:
            try:
                opt = option(key)
            except KeyError:
                continue  # a dict key that is no Paimon option
            if opt.name:
                found.setdefault(opt.name, []).append(str(path.relative_to(ROOT)))
    return found


def test_options_tarn_reads_are_not_carried():
    read = option_names_read_by_tarn()
    assert "merge-engine" in read and "bucket" in read  # the scan finds what it should
    carried = {name: where for name, where in read.items()
               if option(name).effect is CARRIED and name not in READ_BUT_CARRIED}
    assert not carried, f"options tarn reads but marks as having no effect (act on them or explain): {carried}"


def test_read_but_carried_list_is_current():
    read = option_names_read_by_tarn()
    for name, reason in READ_BUT_CARRIED.items():
        assert reason
        assert name in read, f"{name}: tarn no longer reads it; drop it from READ_BUT_CARRIED"
        assert option(name).effect is CARRIED, f"{name}: not CARRIED any more; drop it from READ_BUT_CARRIED"


# ------------------------------------------------------------------ metadata fields


def test_file_fields_are_complete():
    seen = set()
    for f in FILE_FIELDS:
        assert f.file in FILES, f
        assert isinstance(f.effect, Effect), f
        assert valid_since(f.since) and not f.since.startswith("pypaimon"), f
        if f.effect in (READS, WRITES):
            assert f.note, f"{f}: a field with semantics tarn lacks needs a note saying which values"
        assert "\n" not in f.note and "|" not in f.note
        assert (f.file, f.name) not in seen, f"{f.file} {f.name} twice"
        seen.add((f.file, f.name))
    assert set(FILES) == {f.file for f in FILE_FIELDS}


def test_index_types_tarn_implements():
    acted = {f.name for f in FILE_FIELDS if f.file == "index type" and f.effect is ACTED}
    assert acted == {"HASH", "DELETION_VECTORS"}
    assert {"btree", "bitmap", "full-text", "lumina-vector-ann"} <= set(INDEX_TYPES)


def test_file_fields_match_tarn_records():
    """Every Avro field tarn's manifest records write has a row (and the other way round)."""
    from tarn.meta import manifest

    def names(schema) -> set[str]:
        return {field["name"] for field in schema["fields"]}

    def rows(file: str) -> set[str]:
        return {f.name for f in FILE_FIELDS if f.file == file}

    assert names(manifest.MANIFEST_ENTRY_SCHEMA) == rows("manifest entry")
    assert names(manifest.DATA_FILE_META_TYPE("x")) == rows("data file")
    assert names(manifest.SIMPLE_STATS_TYPE("x")) == rows("stats")
    assert names(manifest.MANIFEST_FILE_META_SCHEMA) == rows("manifest list")
    assert names(manifest.INDEX_MANIFEST_ENTRY_SCHEMA) == rows("index manifest entry")
    assert names(manifest.DELETION_VECTOR_RANGE_TYPE("x")) == rows("deletion vector range")
    assert names(manifest.GLOBAL_INDEX_TYPE("x")) == rows("global index")
