"""`data-file.external-paths` (issue 43 item 2): roots, strategies, Java's entropy directories,
and bad options refused at creation; the files themselves are checked against pypaimon in
tests/interop/test_file_layout_interop.py."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import tarn
from tarn.data.external_paths import ExternalRoots, entropy_dirs
from tarn.errors import InvalidOption, UnsupportedFeature
from tarn.options import Options

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def test_entropy_dirs_as_java_and_pypaimon_compute_them():
    # pinned from pypaimon 2.1's EntropyInjectExternalPathProvider (Guava murmur3_32, low 20 bits)
    assert entropy_dirs("data-1.parquet") == "1001/1111/0010/10010010"
    assert entropy_dirs("data-13e84944-82d2-42e0-bb3b-3916b9152091-0.parquet") == "0011/1111/1011/10101101"
    assert entropy_dirs("x") == "1010/1001/1011/00011011"


def test_roots_and_strategies():
    roots = ExternalRoots.of(Options({"data-file.external-paths": "file:///a/, s3://b/c",
                                      "data-file.external-paths.strategy": "round-robin"}), "t")
    assert roots.roots == ("file:///a", "s3://b/c")
    picker = roots.picker("p=1/bucket-0")
    seen = {picker.location("f").rsplit("/p=1", 1)[0] for _ in range(4)}
    assert seen == {"file:///a", "s3://b/c"}  # alternating
    specific = ExternalRoots.of(Options({"data-file.external-paths": "file:///a,s3://b",
                                         "data-file.external-paths.strategy": "specific-fs",
                                         "data-file.external-paths.specific-fs": "S3"}), "t")
    assert specific.roots == ("s3://b",)
    entropy = ExternalRoots.of(Options({"data-file.external-paths": "file:///a,file:///b",
                                        "data-file.external-paths.strategy": "entropy-inject"}), "t").picker("bucket-0")
    assert entropy.location("x") == "file:///b/bucket-0/1010/1001/1011/00011011/x"  # from the second root, as Java
    assert ExternalRoots.of(Options({"data-file.external-paths": "file:///a"}), "t") is None  # strategy none


@pytest.mark.parametrize("options, message", [
    ({"data-file.external-paths": "/no/scheme", "data-file.external-paths.strategy": "round-robin"}, "no scheme"),
    ({"data-file.external-paths": "file:///a", "data-file.external-paths.strategy": "specific-fs"}, "specific-fs"),
    ({"data-file.external-paths": "file:///a", "data-file.external-paths.strategy": "specific-fs",
      "data-file.external-paths.specific-fs": "s3"}, "leaves no external path"),
    ({"data-file.external-paths": "file:///a,file:///b", "data-file.external-paths.strategy": "weight-robin",
      "data-file.external-paths.weights": "1"}, "one positive weight"),
])
def test_bad_external_options_fail_at_creation(tmp_path, options, message):
    with pytest.raises(InvalidOption, match=message):
        tarn.Catalog(str(tmp_path)).create_table("db.bad", SCHEMA, options=options)


def test_roots_on_another_store_are_refused_before_writing(tmp_path):
    t = tarn.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, options={
        "data-file.external-paths": "s3://bucket/ext", "data-file.external-paths.strategy": "round-robin"})
    with pytest.raises(UnsupportedFeature, match="not on the table's own store"):
        t.write(pa.table({"k": [1], "v": ["a"]}))
    assert t.latest_snapshot() is None


def test_weighted_append_table_writes_only_under_its_roots(tmp_path):
    roots = [tmp_path / "hot", tmp_path / "cold"]
    t = tarn.Catalog(str(tmp_path / "wh")).create_table("db.w", SCHEMA, options={
        "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
        "data-file.external-paths.strategy": "weight-robin", "data-file.external-paths.weights": "3,1"})
    for i in range(6):
        t.write(pa.table({"k": [i], "v": [str(i)]}))
    assert sorted(t.scan().to_arrow().column("k").to_pylist()) == list(range(6))
    on_roots = [n for r in roots for _, _, names in os.walk(r) for n in names]
    assert len(on_roots) == 6 and not [d for d in os.listdir(t.root) if d.startswith("bucket-")]
