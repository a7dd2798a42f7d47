"""tarn's version: the one source (pyproject.toml reads it; `tarn.__version__` re-exports it),
and the `writerVersion` tarn's snapshots carry, in the form pypaimon writes its own
(`python-<version>`): `python-tarn-<version>`."""

__version__ = "0.1.0"

WRITER_VERSION = f"python-tarn-{__version__}"
