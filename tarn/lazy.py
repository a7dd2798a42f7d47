"""Packages whose public names are imported when first used (PEP 562 `__getattr__`)."""

from __future__ import annotations

import importlib


def lazy_getattr(package: str, names: dict[str, str], namespace: dict):
    """A module-level `__getattr__` for `package`: a name of `names` (name -> the module that
    defines it) or a submodule, imported on first use and kept in `namespace` (the package's
    globals), so later lookups skip it."""

    def __getattr__(name: str):
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise  # the submodule exists but needs something missing
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value
        return value

    return __getattr__
