"""The one-line error of the `tarn` command for a package that is not installed (standard
library only: the console script imports it before anything else)."""

from __future__ import annotations

DISTRIBUTION = "tarn-lake"


def missing_package_message(error: ModuleNotFoundError) -> str | None:
    """The message for a third-party package that is not installed (None: the missing module
    is tarn's own, which is a broken install or a bug, not a missing dependency)."""
    name = (error.name or "").split(".")[0]
    if not name or name == "tarn":
        return None
    return (f"the tarn command needs the Python package '{name}', which is not installed; "
            f"reinstall tarn: pip install --force-reinstall {DISTRIBUTION}")
