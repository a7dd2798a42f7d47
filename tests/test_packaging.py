"""The distribution users install: `tarn-lake` on the package index, `import tarn` in code.

Checks the installed metadata (name, version, license, long description), the files a wheel must
ship (`py.typed`, LICENSE), and that manifests are zstd-compressed through fastavro's own codec
(no patching of fastavro's block codec tables).
"""

from __future__ import annotations

import importlib.metadata
import io
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import fastavro
import pytest

import tarn
from tarn.codec import avro

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DISTRIBUTION = "tarn-lake"


def test_distribution_is_tarn_lake_and_version_is_one_source():
    meta = importlib.metadata.metadata(DISTRIBUTION)
    assert meta["Name"] == DISTRIBUTION
    assert PYPROJECT["project"]["name"] == DISTRIBUTION
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?\w+)?", tarn.__version__)
    assert importlib.metadata.version(DISTRIBUTION) == tarn.__version__
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tarn.version.__version__"}


def test_distribution_provides_the_tarn_package_and_command():
    dist = importlib.metadata.distribution(DISTRIBUTION)
    # pyspark_tarn: Spark's static registration of the "tarn" source (issue 38)
    assert sorted(dist.read_text("top_level.txt").split()) == ["pyspark_tarn", "tarn"]
    scripts = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
    assert scripts == {"tarn": "tarn.cli:main"}


def test_the_command_line_needs_no_extra():
    """`pip install tarn-lake` gives a working `tarn`: typer and rich are core dependencies; the
    `cli` extra stays (listing them) so `pip install 'tarn-lake[cli]'` still works."""
    def names(requirements):
        return {re.split(r"[\[<>=!~;\s]", r, maxsplit=1)[0] for r in requirements}

    assert {"typer", "rich"} <= names(PYPROJECT["project"]["dependencies"])
    assert names(PYPROJECT["project"]["optional-dependencies"]["cli"]) == {"typer", "rich"}


def test_license_is_apache_2():
    meta = importlib.metadata.metadata(DISTRIBUTION)
    assert meta["License-Expression"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert len(text) > 11000  # the whole license, not a pointer to it


def test_py_typed_marker_is_package_data():
    assert (Path(tarn.__file__).parent / "py.typed").is_file()
    assert PYPROJECT["tool"]["setuptools"]["package-data"]["tarn"] == ["py.typed"]


def test_long_description_installs_tarn_lake_without_repo_commands():
    meta = importlib.metadata.metadata(DISTRIBUTION)
    assert meta["Description-Content-Type"] == "text/markdown"
    description = meta.get_payload() or meta["Description"]
    assert "pip install tarn-lake" in description
    assert "import tarn" in description
    for repo_only in ("scripts/", "bash ", ".venv", "examples/", "pip install -e", "'tarn["):
        assert repo_only not in description, repo_only


def test_metadata_has_classifiers_keywords_and_urls():
    meta = importlib.metadata.metadata(DISTRIBUTION)
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Programming Language :: Python :: 3.1") for c in classifiers)
    assert "paimon" in meta["Keywords"].split(",")
    assert any("paimon.apache.org" in url for url in meta.get_all("Project-URL"))


def test_manifests_use_fastavros_own_zstandard_codec(tmp_path):
    """Writing a table leaves fastavro's codec tables as fastavro built them (no patched codec)."""
    script = f"""
import fastavro.read, fastavro.write, pyarrow as pa
readers = dict(fastavro.read.BLOCK_READERS); writers = dict(fastavro.write._write.BLOCK_WRITERS)
import tarn
t = tarn.Catalog({str(tmp_path)!r}).create_table("db.t", schema=pa.schema([("id", pa.int64())]), primary_key=["id"])
t.write(pa.table({{"id": [1, 2]}}))
assert t.scan().to_arrow().num_rows == 2
changed = [k for k in readers if fastavro.read.BLOCK_READERS[k] is not readers[k]]
changed += [k for k in writers if fastavro.write._write.BLOCK_WRITERS[k] is not writers[k]]
print(changed, "zstandard" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", "import sys\n" + script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] False"  # codec tables untouched; the `zstandard` package not used
    records = {}
    for path in (tmp_path / "db.db" / "t" / "manifest").iterdir():
        with path.open("rb") as f:
            reader = fastavro.reader(f)
            assert reader.codec == "zstandard", path.name
            records[path.name] = list(reader)  # decompressed by fastavro alone
    entries = [r for name, rs in records.items() if name.startswith("manifest-") and "list" not in name for r in rs]
    assert [e["_FILE"]["_ROW_COUNT"] for e in entries] == [2]


def test_zstandard_level_reaches_the_codec():
    records = [{"s": "x" * 50 + str(i % 7)} for i in range(5000)]
    schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    fast, small = avro.write_avro(records, schema, level=1), avro.write_avro(records, schema, level=19)
    assert fastavro.reader(io.BytesIO(fast)).metadata["avro.codec"] == "zstandard"
    assert len(small) < len(fast)
    assert avro.read_avro(small, "level-19") == records


def test_missing_zstd_library_is_a_named_missing_dependency(monkeypatch):
    """Without compression.zstd/backports.zstd fastavro's codec refuses; tarn says what to install."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "i", "type": "long"}]}
    data = avro.write_avro([{"i": 1}], schema)

    def missing(*args, **kwargs):
        raise ValueError("zstandard codec is supported but you need to install one of the following "
                         "libraries: ('backports.zstd',)")

    monkeypatch.setitem(fastavro.write._write.BLOCK_WRITERS, "zstandard", missing)
    monkeypatch.setitem(fastavro.read.BLOCK_READERS, "zstandard", missing)
    with pytest.raises(tarn.MissingDependency, match=r"fastavro\[zstandard\]"):
        avro.write_avro([{"i": 1}], schema)
    with pytest.raises(tarn.MissingDependency, match="manifest-x"):
        avro.read_avro(data, "manifest-x")
    assert avro.read_avro(avro.write_avro([{"i": 1}], schema, codec="null"), "plain") == [{"i": 1}]
