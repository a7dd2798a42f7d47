"""Render the feature table of docs/guide-options.md from the data (tarn.options, tarn.file_fields).

`render_feature_table()` gives the text that sits between the guide's markers
`<!-- feature-table:start -->` and `<!-- feature-table:end -->`; run as a script, this rewrites
that part of the guide in place (adding the section at the end when the markers are missing):

    .venv/bin/python scripts/render_options_guide.py

tests/test_feature_table.py checks that the guide holds exactly this rendering.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tarn import options as opts  # noqa: E402
from tarn.file_fields import FILE_FIELDS, FILES  # noqa: E402

GUIDE = ROOT / "docs" / "guide-options.md"
START = "<!-- feature-table:start -->"
END = "<!-- feature-table:end -->"
SECTION = "## Feature table"

# Section comments of OPTIONS (`# --- <text> ---`), shown as the group titles below.
_HEADER = re.compile(r"^\s*# --- (.*?) ---\s*$")
_TITLES = (
    ("paimon-api org/apache/paimon/CoreOptions.java", "CoreOptions (paimon-api)"),
    ("Flink connector", "FlinkConnectorOptions (paimon-flink-common)"),
    ("Spark connector", "SparkConnectorOptions (paimon-spark-common)"),
    ("Iceberg compatibility", "IcebergOptions (paimon-core)"),
    ("format options", "File format options (paimon-format, paimon-mosaic)"),
    ("global index options", "Global index options (paimon-common, paimon-lumina)"),
    ("Hive connector", "HiveConnectorOptions (paimon-hive-connector-common)"),
    ("pypaimon", "pypaimon table options (Python Paimon)"),
)

INTRO = f"""\
tarn acts on everything in a table that changes what a reader sees or where a writer puts a
row, or refuses with `tarn.UnsupportedFeature`; it never guesses. The tables below are rendered
from the data tarn enforces (`Opt.effect` in `tarn/options.py`, `tarn/file_fields.py`); each row
says what one option or metadata field does to tarn:

- **{opts.ACTED.value}**: tarn does what Paimon does with it, for every value.
- **{opts.CARRIED.value}**: it changes nothing a reader sees or a writer writes (engine tuning,
  callbacks, other engines' jobs and metadata); tarn stores it and leaves it untouched.
- **{opts.READS.value}**: tarn lacks what it does to reads. A table carrying it with a value tarn
  does not honour is refused with `UnsupportedFeature` when read (scans and streams), and so are
  its writes.
- **{opts.WRITES.value}**: tarn lacks what it does to writes. Reads work and see what every
  engine sees; writes, deletes, updates and compactions are refused with `UnsupportedFeature`
  before any file is written.

The default value is always honoured; other values tarn honours are listed in the note. An
option tarn does not know at all (a newer Paimon's) is kept by reads, and refuses writes.
*since* is the first Paimon release whose sources declare the option or write the field ("2.1":
Paimon master only; "pypaimon x.y": an option only the Python Paimon declares). Issue numbers
(#27 ...) name the later tarn work that lifts a refusal.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    shown = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t") if text in ("\n", "\t") else text
    if shown == "":
        return '`""`'
    return "`" + _cell(shown) + "`"


def _default(opt: opts.Opt) -> str:
    return "—" if opt.default is None else _code(opt.default)


def _note(opt: opts.Opt) -> str:
    parts = []
    if opt.honoured:
        parts.append("tarn honours " + ", ".join(_code(v) for v in opt.honoured))
    if opt.note:
        parts.append(_cell(opt.note))
    return "; ".join(parts)


def _option_row(name: str, opt: opts.Opt) -> str:
    return f"| `{_cell(name)}` | {_default(opt)} | {opt.effect.value} | {opt.since} | {_note(opt)} |"


def _table(header: str, rows: list[str]) -> list[str]:
    columns = header.count("|") - 1
    return [header, "|" + "---|" * columns, *rows]


def option_groups() -> list[tuple[str, list[opts.Opt]]]:
    """OPTIONS grouped by the source class their section comment in tarn/options.py names."""
    text = Path(opts.__file__).read_text()
    headers = []  # (line number, title)
    for number, line in enumerate(text.splitlines(), 1):
        found = _HEADER.match(line)
        if found:
            title = next((t for prefix, t in _TITLES if found.group(1).startswith(prefix)), found.group(1))
            headers.append((number, title))
    group_of: dict[str, str] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "OPTIONS":
            for call in node.value.elts:
                titles = [title for number, title in headers if number < call.lineno]
                group_of[call.args[0].value] = titles[-1] if titles else "Other"
    groups: dict[str, list[opts.Opt]] = {}
    for opt in opts.OPTIONS:
        groups.setdefault(group_of.get(opt.name, "Other"), []).append(opt)
    return list(groups.items())


def render_feature_table() -> str:
    """The guide's feature table (the text between its markers, without them)."""
    out = [INTRO]
    header = "| option | default | effect | since | note |"
    for title, group in option_groups():
        out += [f"### Table options: {title}", ""]
        out += _table(header, [_option_row(o.name, o) for o in group])
        out.append("")
    out += ["### Per-column options", "",
            "`fields.<column>.<suffix>` (`<column>` may be a comma list of columns), and the parameters of "
            "the data-file indexes, `file-index.<type>.<column>.<param>`.", ""]
    rows = [_option_row(f"fields.<column>.{o.name}", o) for o in opts.FIELD_OPTIONS]
    rows += [_option_row(f"file-index.{index_type}.<column>.{o.name}", o)
             for index_type, params in opts.FILE_INDEX_TYPES.items() for o in params]
    out += _table(header, rows)
    out.append("")
    for file, what in FILES.items():
        fields = [f for f in FILE_FIELDS if f.file == file]
        out += [f"### Metadata fields: {file}", "", what[0].upper() + what[1:] + ".", ""]
        out += _table("| field | effect | since | note |",
                      [f"| `{_cell(f.name)}` | {f.effect.value} | {f.since} | {_cell(f.note)} |" for f in fields])
        out.append("")
    return "\n".join(out)


def guide_section(text: str) -> str | None:
    """The part of a guide's text between the markers (None without them)."""
    if START not in text or END not in text:
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


def rewrite_guide(path: Path = GUIDE) -> bool:
    """Put the rendering between the guide's markers; True when the file changed."""
    text = path.read_text()
    block = f"{START}\n{render_feature_table()}\n{END}"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        new = head + block + rest.split(END, 1)[1]
    else:
        new = text.rstrip("\n") + f"\n\n{SECTION}\n\n{block}\n"
    if new == text:
        return False
    path.write_text(new)
    return True


if __name__ == "__main__":
    changed = rewrite_guide()
    print(f"{GUIDE.relative_to(ROOT)}: {'rewritten' if changed else 'already up to date'}")
