"""`help(tarn)` reads as a reference: every public name, method and property of the user's
surface has a docstring of its own, and every `tarn` command and option has help text.

The surface walked: `tarn.__all__`; the public methods and properties of Catalog, Table, Scan,
Snapshot, the filter objects (`tarn.col(...)` and the predicates it builds); `tarn.spark.__all__`
(needs pyspark); the `tarn` command line (needs the `cli` extra). Dunder methods count only
where users call them (`__arrow_c_stream__`, the predicate operators).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
import subprocess
import sys

import pytest

import tarn
from tarn.meta.snapshot import Snapshot
from tarn.scan import predicate

# dunders that are part of the documented surface
USER_DUNDERS = {"__arrow_c_stream__", "__and__", "__or__", "__invert__"}
FILTER_CLASSES = [predicate.Column, predicate.Predicate, predicate.Compare, predicate.In, predicate.IsNull,
                  predicate.StartsWith, predicate.And, predicate.Or, predicate.Not]


def own_doc(obj) -> str | None:
    """The docstring an object carries itself (a property's getter's, a static method's function's)."""
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    doc = getattr(obj, "__doc__", None)
    if not doc or (inspect.isclass(obj) and doc.startswith(f"{obj.__name__}(")):
        return None  # none, or the signature @dataclass writes in
    return doc.strip()


def public_members(cls) -> dict[str, object]:
    """The methods and properties a class defines itself (inherited ones are checked on their own class)."""
    members = {}
    for name, member in vars(cls).items():
        if name.startswith("_") and name not in USER_DUNDERS:
            continue
        if isinstance(member, (property, staticmethod, classmethod)) or inspect.isfunction(member):
            members[name] = member
    return members


def undocumented(classes) -> list[str]:
    missing = []
    for cls in classes:
        if not own_doc(cls):
            missing.append(cls.__qualname__)
        for name, member in public_members(cls).items():
            if name == "__eq__" and getattr(cls, "__dataclass_fields__", None):
                continue  # written by @dataclass
            if not own_doc(member):
                missing.append(f"{cls.__qualname__}.{name}")
    return missing


def test_every_exported_name_is_documented():
    missing = [name for name in tarn.__all__ if not own_doc(getattr(tarn, name))]
    assert missing == []


def with_tarn_bases(classes) -> list[type]:
    """The classes and the tarn classes they inherit from (what `help()` shows of them)."""
    found = []
    for cls in classes:
        found += [c for c in cls.__mro__ if c.__module__.startswith("tarn") and c not in found]
    return found


def test_core_classes_document_every_public_method():
    from tarn.core import TableCore

    classes = with_tarn_bases([tarn.Catalog, tarn.Table, TableCore, tarn.Scan, Snapshot])
    assert len(classes) > 5  # the kernel's storage context is walked too
    assert undocumented(classes) == []


def test_filter_objects_are_documented():
    assert undocumented(FILTER_CLASSES) == []
    assert own_doc(tarn.col) and "col(" in own_doc(tarn.col)


def test_module_help_lists_the_surface():
    """`help(tarn)` starts from the package docstring: it names the entry points and guides."""
    doc = own_doc(tarn)
    for name in ("Catalog", "load_table", "scan", "col", "docs/"):
        assert name in doc, name


def test_help_renders_the_surface_in_a_fresh_interpreter():
    """`import tarn` imports its names lazily; `help(tarn)` must still show every one of them."""
    code = "import pydoc, tarn; print(pydoc.render_doc(tarn, renderer=pydoc.plaintext))"
    text = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for name in tarn.__all__:
        assert re.search(rf"^    (class )?{name}\b", text, re.M), name
    assert "to_duckdb(self, name" in text and "A column to build a filter with" in text


def test_walker_finds_a_missing_docstring():
    @dataclasses.dataclass
    class Record:
        value: int

    assert undocumented([Record]) == ["test_walker_finds_a_missing_docstring.<locals>.Record"]

    class Bare:
        """A class whose method has no docstring."""

        def method(self):
            return 1

        @property
        def value(self):
            return 2

        def _private(self):
            return 3

    assert undocumented([Bare]) == ["test_walker_finds_a_missing_docstring.<locals>.Bare.method",
                                    "test_walker_finds_a_missing_docstring.<locals>.Bare.value"]


@pytest.mark.skipif(importlib.util.find_spec("pyspark") is None, reason="needs pyspark")
def test_spark_functions_are_documented():
    import tarn.spark

    callables = {n: getattr(tarn.spark, n) for n in tarn.spark.__all__ if callable(getattr(tarn.spark, n))}
    assert "write" in callables and "compact" in callables
    assert [n for n, f in callables.items() if not own_doc(f)] == []


@pytest.mark.skipif(importlib.util.find_spec("typer") is None, reason="needs the cli extra")
def test_every_command_and_option_has_help():
    import typer.main

    import tarn.cli

    group = typer.main.get_command(tarn.cli.app)
    assert {"info", "show", "create", "import", "lsm"} <= set(group.commands)
    missing = []
    for name, command in group.commands.items():
        if not (command.help or "").strip():
            missing.append(name)
        missing += [f"{name} {p.opts[0]}" for p in command.params
                    if p.param_type_name == "option" and not (p.help or "").strip()]
    assert missing == []
