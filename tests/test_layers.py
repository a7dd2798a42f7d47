"""The import rule of docs/architecture.md, checked on the source: a module imports only from
its own or lower layers, write/ and scan/ never import each other, no modules import each other
in a cycle and no packages do. Imports under `if TYPE_CHECKING:` count like any other (a type
named from a higher layer is a dependency on it), and no module below the facade names `Table`."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tarn"

# Lowest first. A name is a top-level module or package of tarn ("__init__" is the package).
LAYERS = [
    {"errors", "types", "options", "file_fields", "fs", "s3", "paths", "progress", "arrays", "lazy", "version"},
    {"codec", "bucket", "variant"},  # variant: the public face of codec/variant.py
    {"meta", "partition", "partition_time", "stats", "features"},
    {"store", "lsm"},
    {"data"},
    {"scan", "write"},
    {"commit"},
    {"core"},  # the kernel: TableCore (a TableContext plus planner, writer, committer, commit)
    {"iceberg"},  # Iceberg metadata beside a table, written after each commit (a commit callback)
    {"ops"},  # one module per operation, on a TableCore or TableContext
    {"table"},  # the facade
    {"catalog", "__init__"},
    {"server"},  # `tarn serve`: a REST catalog server over any catalog
    {"spark", "cli"},
]
FACADE = "table"
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
    """Every tarn module `path` imports, at the top, in functions or under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
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


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `edges` (its nodes, the first repeated at the end), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles_between_files():
    known = set(GRAPH)
    edges = {m: {i for i in GRAPH[m] if i in known and i != m} for m in GRAPH}
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycles_between_packages():
    """Between top-level packages and modules (scan, ops, table, ...): ops -> validate -> ops is
    a cycle even when no two files import each other."""
    edges: dict[str, set[str]] = {}
    for module, imported in GRAPH.items():
        edges.setdefault(top(module), set()).update(top(i) for i in imported if top(i) != top(module))
    for names in list(edges.values()):
        for name in names:
            edges.setdefault(name, set())
    cycle = find_cycle(edges)
    assert cycle is None, "package import cycle: " + " -> ".join(cycle or [])


TABLE_NAME = re.compile(r"(?<![\w.])Table\b")


def names_table(path: Path) -> bool:
    """Whether code (not prose) in `path` names `Table`: a name, an attribute import, an
    annotation (also one written as a string)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Name) and node.id == "Table":
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == "Table":
            return True
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations = [a.annotation for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]]
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        for annotation in annotations:
            for part in ast.walk(annotation) if annotation is not None else ():
                if isinstance(part, ast.Constant) and isinstance(part.value, str) and TABLE_NAME.search(part.value):
                    return True
    return False


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if layer(m) < layer(f"tarn.{FACADE}")))
def test_nothing_below_the_facade_names_table(module):
    path = PACKAGE.parent / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    assert not names_table(path), f"{module} names Table: take a TableCore or TableContext"


def test_the_rule_catches_an_upward_import(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("from tarn.table import Table\nif TYPE_CHECKING:\n    from tarn.catalog import Catalog\n")
    assert imports_of(source) == {"tarn.table", "tarn.catalog"}
    assert layer("tarn.table") > layer("tarn.store.context")
    assert layer("tarn.ops.delete") > layer("tarn.core") > layer("tarn.commit.committer")
    assert layer("tarn.table") > layer("tarn.ops.delete")
    assert names_table(source)
    source.write_text('def f(table: "pa.Table", core: "TableCore") -> None:\n    """Table.commit, a Table."""\n')
    assert not names_table(source)
    source.write_text('def f(table: "Table") -> None:\n    pass\n')
    assert names_table(source)


def test_the_cycle_check_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# ---------------------------------------------------------------------------------------------
# issue 39: a table's shape is decided once (tarn/meta/shape.py) and asked there

SHAPE_DECIDERS = {"tarn/options.py", "tarn/meta/shape.py",
                  "tarn/ops/validate.py"}  # validation reads raw options before a shape can be trusted
SHAPE_QUESTIONS = [
    (re.compile(r"(?<![\w.])Options\("), "builds Options from a schema's options: ask schema.shape.options"),
    (re.compile(r"""\bint\(\s*["']bucket["']\s*\)"""), "reads the bucket option: ask schema.shape (bucket_mode, "
                                                      "num_buckets, fixed_buckets)"),
    (re.compile(r"""\bbool\(\s*["'](row-tracking|data-evolution)\.enabled["']\s*\)"""),
     "reads row tracking from options: ask schema.shape.tracks_rows / evolves"),
]


def shape_question_sites(text: str, where: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for pattern, problem in SHAPE_QUESTIONS:
            if pattern.search(code):
                found.append(f"{where}:{number} {problem}: {line.strip()}")
    return found


def test_shape_questions_are_asked_of_the_shape():
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE.parent))
        if where not in SHAPE_DECIDERS:
            sites += shape_question_sites(path.read_text(), where)
    assert not sites, "\n".join(sites)


def test_the_shape_rule_catches_a_stray_question():
    stray = 'options = Options(schema.options)\nn = options.int("bucket")\nx = o.bool("row-tracking.enabled")\n'
    assert len(shape_question_sites(stray, "x.py")) == 3
    assert not shape_question_sites('pc.ScalarAggregateOptions(skip_nulls=True)  # Options(x)\n', "x.py")


# The tarn modules the Spark connector may import, pinned (issue 39): it opens tables through
# tarn/spark/ref.py and calls operations; a new reach into the kernel shows up here first.
SPARK_MAY_IMPORT = {
    "tarn", "tarn.bucket", "tarn.catalog", "tarn.catalog.loader", "tarn.lazy", "tarn.commit.abort", "tarn.commit.committer", "tarn.commit.result",
    "tarn.data.reader", "tarn.errors", "tarn.fs", "tarn.lsm.merge", "tarn.meta.manifest", "tarn.meta.row_ranges",
    "tarn.meta.schema", "tarn.meta.shape", "tarn.meta.snapshot", "tarn.ops.analyze", "tarn.ops.append_compaction",
    "tarn.data.clustering", "tarn.ops.expire", "tarn.ops.incremental", "tarn.ops.orphans", "tarn.ops.postpone", "tarn.ops.references", "tarn.ops.rollback",
    "tarn.ops.rescale", "tarn.ops.row_updates", "tarn.ops.system_tables", "tarn.ops.tags", "tarn.ops.time_travel",
    "tarn.ops.update",
    "tarn.options", "tarn.partition", "tarn.s3", "tarn.scan.changes", "tarn.scan.planner", "tarn.scan.predicate",
    "tarn.scan.scan", "tarn.scan.sql_filter", "tarn.scan.startup", "tarn.store.branches", "tarn.store.cache",
    "tarn.store.deletion_vectors", "tarn.table", "tarn.types", "tarn.write.assign", "tarn.write.conform",
    "tarn.write.cross_partition", "tarn.write.deletions", "tarn.write.message", "tarn.write.writer",
}


def test_spark_imports_stay_pinned():
    used = {i for m, imports in GRAPH.items() if m.startswith("tarn.spark") for i in imports
            if not i.startswith("tarn.spark")}
    assert used <= SPARK_MAY_IMPORT, f"tarn.spark reaches new modules: {sorted(used - SPARK_MAY_IMPORT)}"


def test_spark_opens_tables_in_one_place():
    """`tarn.load_table` appears in tarn/spark/ref.py only (a path or a URI, kept whole)."""
    sites = [f"{p.relative_to(PACKAGE.parent)}:{n}" for p in sorted((PACKAGE / "spark").glob("*.py"))
             if p.name != "ref.py" for n, line in enumerate(p.read_text().splitlines(), 1)
             if "load_table(" in line.split("#", 1)[0]]
    assert not sites, sites


# No reach-ins into another module's private members (issue 39): `obj._name` (obj not self or
# cls) only where `_name` is defined in the same module. PySpark's own gateway handles are the
# connector's way into the JVM, and are allowed there.
PYSPARK_PRIVATE = {"_jsparkSession", "_gateway", "_jvm", "_jsc"}
STDLIB_PUBLIC = {"_exit"}  # os._exit: the documented way to end a process without waiting for threads


def private_reach_ins(text: str, where: str) -> list[str]:
    tree = ast.parse(text)
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defined |= {t.attr for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Attribute)}
    defined |= {t.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value.id if isinstance(node.value, ast.Name) else None
        if owner in ("self", "cls") or node.attr in defined or node.attr in PYSPARK_PRIVATE \
                or (owner == "os" and node.attr in STDLIB_PUBLIC):
            continue
        found.append(f"{where}:{node.lineno} .{node.attr}")
    return found


def test_no_private_reach_ins_across_modules():
    found = [site for path in sorted(PACKAGE.rglob("*.py"))
             for site in private_reach_ins(path.read_text(), str(path.relative_to(PACKAGE.parent)))]
    assert not found, "\n".join(found)


def test_the_reach_in_rule_catches_one():
    text = ("class A:\n    def _own(self): ...\n\ndef f(a, deletes):\n    a._own()\n"
            "    return deletes._vector_messages()\n")
    assert private_reach_ins(text, "x.py") == ["x.py:6 ._vector_messages"]
