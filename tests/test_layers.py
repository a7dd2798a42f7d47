"""The import rule of docs/architecture.md, checked on the source: a module imports only from
its own or lower layers, write/ and scan/ never import each other, and no modules import each
other in a cycle. Imports under `if TYPE_CHECKING:` are annotations only and do not count."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tarn"

# Lowest first. A name is a top-level module or package of tarn ("__init__" is the package).
LAYERS = [
    {"errors", "types", "options", "file_fields", "fs", "s3", "paths"},
    {"codec", "bucket"},
    {"meta", "partition", "stats", "features"},
    {"store", "lsm"},
    {"data"},
    {"scan", "write"},
    {"commit"},
    {"maintenance", "system_tables", "delete", "update", "append_compaction"},
    {"validate"},
    {"table"},
    {"catalog", "__init__"},
    {"spark", "cli"},
]
SIBLINGS_APART = [{"scan", "write"}, {"store", "lsm"}]  # same layer, yet neither imports the other


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(name: str, imported: str | None) -> str:
    """`from tarn import paths` names the module tarn.paths; `from tarn import col` the package."""
    if imported is not None:
        candidate = f"{name}.{imported}"
        relative = Path(*candidate.split(".")[1:])
        if (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative).is_dir():
            return candidate
    return name


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "tarn")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tarn":
            found.update(resolve(node.module, a.name) for a in node.names)
    return found


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer(module: str) -> int:
    name = top(module)
    for number, names in enumerate(LAYERS):
        if name in names:
            return number
    raise AssertionError(f"module {module} is in no layer of tests/test_layers.py: add it")


GRAPH = {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down(module):
    for imported in sorted(GRAPH[module]):
        if top(imported) == top(module):
            continue
        assert layer(imported) <= layer(module), f"{module} imports {imported} from a higher layer"
        pair = {top(imported), top(module)}
        assert pair not in SIBLINGS_APART, f"{module} imports {imported}: those packages stay apart"


def test_no_import_cycles():
    known = {m for m in GRAPH}
    edges = {m: {i for i in GRAPH[m] if i in known and i != m} for m in GRAPH}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)


def test_the_rule_catches_an_upward_import(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("from tarn.table import Table\nif TYPE_CHECKING:\n    from tarn.catalog import Catalog\n")
    assert imports_of(source) == {"tarn.table"}
    assert layer("tarn.table") > layer("tarn.store.context")
