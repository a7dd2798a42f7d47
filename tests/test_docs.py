"""The guides in docs/ and the README stay true to the code: every ```python block runs.

Each guide's blocks run in order in one fresh namespace (so later blocks use earlier names),
with `tempfile` pointed at a pytest temporary directory (guides make their warehouse with
`tempfile.mkdtemp()`). A block preceded by the line `<!-- not-tested -->` is skipped.
Without pyspark and Java, a guide runs up to its first block that imports `tarn.spark`.
Tracebacks point at the guide's own line numbers.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
README = DOCS.parent / "README.md"
NOT_TESTED = "<!-- not-tested -->"
FENCE = re.compile(r"^```(\S*)[ \t]*$")
LINK = re.compile(r"\]\(([^)#\s]+\.md)(#[^)]*)?\)")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the first code line in the guide
    code: str
    tested: bool


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a markdown text, in order."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise AssertionError(f"unclosed code fence at line {i + 1}")
        if opening.group(1) == "python":
            previous = lines[i - 1].strip() if i > 0 else ""
            blocks.append(Block(start + 1, "\n".join(lines[start:end]) + "\n", previous != NOT_TESTED))
        i = end + 1
    return blocks


def spark_available() -> bool:
    """pyspark and Java: what guides using `tarn.spark` need (they share any running session)."""
    return importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None


def guides() -> list[Path]:
    return sorted(DOCS.glob("*.md")) + [README]


def guides_with_code() -> list[Path]:
    return [p for p in guides() if python_blocks(p.read_text())]


@pytest.mark.parametrize("guide", guides_with_code(), ids=lambda p: p.name)
def test_guide_examples_run(guide: Path, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs.{guide.stem}"}
    for block in python_blocks(guide.read_text()):
        if "import tarn.spark" in block.code and not spark_available():
            pytest.skip(f"from line {block.line} on: needs pyspark and Java (pip install 'tarn-lake[spark]')")
        if not block.tested:
            compile(block.code, f"{guide}:{block.line}", "exec")  # still valid Python
            continue
        padded = "\n" * (block.line - 1) + block.code  # line numbers match the guide
        exec(compile(padded, str(guide), "exec"), namespace)


def test_user_guides_have_examples():
    user_guides = [p for p in guides() if p.name.startswith("guide-")]
    assert user_guides, "no docs/guide-*.md found"
    for guide in user_guides + [DOCS / "index.md", DOCS / "format-notes.md"]:
        blocks = python_blocks(guide.read_text())
        assert any(b.tested for b in blocks), f"{guide.name} has no tested python example"


def test_readme_reaches_duckdb_and_spark():
    """The README's usage path, run above: a partitioned primary-key table, read from DuckDB and Spark."""
    code = "".join(b.code for b in python_blocks(README.read_text()) if b.tested)
    for step in ("create_table(", "primary_key=", "partition_keys=", ".to_duckdb(", 'spark.read.format("tarn")'):
        assert step in code, step
    assert "pip install tarn-lake" in README.read_text()


def undocumented_modules(text: str, package: Path) -> list[str]:
    """Modules of `package` that `text` names neither by path (`scan/reader.py`) nor by their
    directory's glob (`lsm/*`); package `__init__`/`__main__` files count with their directory."""
    missing = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        directory = relative.rsplit("/", 1)[0] if "/" in relative else None
        if path.name in ("__init__.py", "__main__.py"):
            continue
        if f"`{relative}`" in text or f"/{relative}`" in text or (directory and f"`{directory}/*`" in text):
            continue
        missing.append(relative)
    return missing


def test_architecture_lists_every_module():
    text = (DOCS / "architecture.md").read_text()
    assert undocumented_modules(text, DOCS.parent / "tarn") == []
    assert undocumented_modules("`scan/reader.py`, `lsm/*`", DOCS.parent / "tarn")[:1] == ["arrays.py"]


def test_docs_send_readers_only_to_files_in_the_repository():
    """No guide points at the project's private fact sheet or at machine paths: format facts
    live in docs/format-notes.md (which alone names FORMAT.md, to explain code comments)."""
    for guide in guides():
        text = guide.read_text()
        for outside in ("/work/", "shared/seeds", "shared/javaref"):
            assert outside not in text, f"{guide.name} points at {outside}"
        if guide.name != "format-notes.md":
            assert "FORMAT.md" not in text, f"{guide.name} cites FORMAT.md: link format-notes.md instead"


def test_not_tested_marker_is_rare():
    for guide in guides():
        blocks = python_blocks(guide.read_text())
        skipped = [b.line for b in blocks if not b.tested]
        assert len(skipped) <= 2, f"{guide.name}: too many untested blocks at lines {skipped}"


def anchors(text: str) -> set[str]:
    """GitHub-style anchors of the markdown headings in `text`."""
    found = set()
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_links_between_guides_resolve():
    for guide in guides():
        for target, anchor in LINK.findall(guide.read_text()):
            if "://" in target:
                continue
            path = guide.parent / target
            assert path.exists(), f"{guide.name} links to missing {target}"
            if anchor:
                assert anchor[1:] in anchors(path.read_text()), f"{guide.name}: no heading {target}{anchor}"


def test_anchor_slugs():
    assert anchors("## Object stores\n### `rowkind.field`: row kinds from a column\n") == {
        "object-stores", "rowkindfield-row-kinds-from-a-column"}


def test_block_extraction():
    text = "x\n```python\na = 1\n```\n<!-- not-tested -->\n```python\nb = 2\n```\n```bash\nls\n```\n"
    blocks = python_blocks(text)
    assert [(b.line, b.code, b.tested) for b in blocks] == [(3, "a = 1\n", True), (7, "b = 2\n", False)]
