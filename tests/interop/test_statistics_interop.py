"""Table statistics between tarn and Java Paimon 1.0 (javaref):

1. Java writes a table of every type; tarn analyzes it; Java's `statistics` reads tarn's file
   (the same JSON, the same parsed min/max) and Java's next commit carries it on (Java parses
   every min/max of the file while committing).
2. Java commits statistics (`commit-statistics`, Paimon's commitStatistics) holding boundary
   values of every type and many floats and doubles; tarn reads the same values, and its text
   of them is exactly Java's (`serializeToString`); tarn's commits carry the file on while the
   schema is unchanged and drop it after an ALTER, which Java sees too.
3. Java's expiry of a table tarn analyzed keeps exactly the statistics files retained snapshots
   and tags name; tarn's orphan removal keeps Java's `stats-` files.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import time

import numpy as np
import pyarrow as pa

import tarn
from tarn.ops.orphans import remove_orphan_files
from tarn.meta.statistics import java_float_text, text_of
from tarn.types import parse_type
from tests.interop.javaref import javaref  # noqa: F401  (session fixture)
from tests.maintenance_checks import missing_files

COLUMNS = [("b", "BOOLEAN"), ("ti", "TINYINT"), ("si", "SMALLINT"), ("i", "INT"), ("l", "BIGINT"),
           ("f", "FLOAT"), ("d", "DOUBLE"), ("dec", "DECIMAL(10, 2)"), ("dec38", "DECIMAL(38, 10)"),
           ("s", "STRING"), ("c", "CHAR(5)"), ("vc", "VARCHAR(12)"), ("dt", "DATE"), ("tm", "TIME(3)"),
           ("ts0", "TIMESTAMP(0)"), ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"),
           ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("bin", "BYTES"), ("arr", "ARRAY<INT>"),
           ("row", "ROW<x INT>"), ("map", "MAP<STRING, INT>")]
JAVA_TYPES = {"DECIMAL(10, 2)": "DECIMAL(10,2)", "DECIMAL(38, 10)": "DECIMAL(38,10)",
              "TIMESTAMP(6) WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ(6)"}
FAR_FUTURE_MS = int(time.time() * 1000) + 10**9


def java_schema(columns) -> str:
    return json.dumps([{"name": n, "type": JAVA_TYPES.get(t, t)} for n, t in columns])


def repr_of(value, type_text: str):
    """javaref's value representation of a Python value of a Paimon type."""
    if value is None:
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode()
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    return value


def java_rows(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n):
        def maybe(v):
            return None if rng.random() < 0.1 else v

        rows.append({
            "b": maybe(bool(rng.random() < 0.5)), "ti": maybe(int(rng.integers(-128, 128))),
            "si": maybe(int(rng.integers(-30000, 30000))), "i": maybe(int(rng.integers(-10**9, 10**9))),
            "l": maybe(int(rng.integers(-(1 << 62), 1 << 62))),
            "f": maybe("NaN" if k == 3 else float(np.float32(rng.normal()))),
            "d": maybe(float(rng.normal() * 1e5)),
            "dec": maybe(f"{rng.integers(-10**6, 10**6) / 100:.2f}"),
            "dec38": maybe(f"{decimal.Decimal(int(rng.integers(-10**15, 10**15))).scaleb(-10):f}"),
            "s": maybe(f"s{'é' * (k % 3)}{int(rng.integers(0, 50))}"), "c": maybe(f"c{k % 7}"),
            "vc": maybe(f"v{k % 11}"),
            "dt": maybe((dt.date(1960, 1, 1) + dt.timedelta(days=int(rng.integers(0, 30000)))).isoformat()),
            "tm": maybe(dt.time(int(rng.integers(0, 24)), int(rng.integers(0, 60)), int(rng.integers(0, 60)),
                                int(rng.integers(0, 1000)) * 1000).isoformat()),
            "ts0": maybe((dt.datetime(2000, 1, 1) + dt.timedelta(seconds=int(rng.integers(0, 10**9)))).isoformat()),
            "ts3": maybe((dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=int(rng.integers(0, 10**12)))).isoformat()),
            "ts6": maybe((dt.datetime(1950, 1, 1) + dt.timedelta(microseconds=int(rng.integers(0, 10**15)))).isoformat()),
            "ltz": maybe((dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
                          + dt.timedelta(microseconds=int(rng.integers(0, 10**15)))).isoformat()),
            "bin": maybe("AAE=" if k % 2 else ""), "arr": maybe([k, k + 1]), "row": maybe({"x": k % 5}),
            "map": maybe([["a", k]]),
        })
    return rows


def test_java_reads_statistics_tarn_gathered(javaref, tmp_path):
    path = tmp_path / "wh" / "db.db" / "all"
    rows = java_rows(150, 1)
    javaref.run_many([["create", path, "--schema", java_schema(COLUMNS)],
                      ["write", path, "--rows", javaref.rows_arg(rows[:100], tmp_path)],
                      ["write", path, "--rows", javaref.rows_arg(rows[100:], tmp_path)]])
    t = tarn.load_table(str(path))
    snapshot = t.analyze()
    ours = t.statistics()
    assert ours.merged_record_count == 150
    more = javaref.rows_arg(java_rows(1, 9), tmp_path)
    java, written, after = javaref.run_many([["statistics", path], ["write", path, "--rows", more],
                                             ["statistics", path]])
    stats = java["statistics"]
    assert java["statistics_file"] == snapshot.statistics
    assert java["raw"] == json.loads(open(os.path.join(t.root, "statistics", snapshot.statistics)).read())
    assert (stats["snapshotId"], stats["schemaId"]) == (ours.snapshot_id, ours.schema_id)
    assert (stats["mergedRecordCount"], stats["mergedRecordSize"]) == (ours.merged_record_count,
                                                                        ours.merged_record_size)
    types = dict(COLUMNS)
    for name, col in ours.col_stats.items():
        got = stats["colStats"][name]
        assert got["colId"] == col.col_id
        for key, value in (("distinctCount", col.distinct_count), ("nullCount", col.null_count),
                           ("avgLen", col.avg_len), ("maxLen", col.max_len)):
            assert got[key] == value, (name, key)
        assert got["min"] == repr_of(col.min, types[name]), name
        assert got["max"] == repr_of(col.max, types[name]), name
    assert ours.col_stats["f"].max != ours.col_stats["f"].max  # NaN, read back by Java as NaN
    # Java's commit read the file (parsing every min/max) and carried it on
    assert written["commit_kind"] == "APPEND"
    assert after["statistics_file"] == snapshot.statistics and after["snapshot_id"] == snapshot.id + 1


# 1e23, 2^61-ish integers, 2^83 as a float and 1e-323 are where JDK 8-18 do not write the
# shortest text (JDK-4511638): tarn writes what they write.
FLOATS = [1.1, -2.5e-7, 3.4028234663852886e38, 1.401298464324817e-45, 16777216.0, 0.1, 1e7, 123.456,
          6.7569209e17, 9.671406556917033e24]
DOUBLES = [0.1, 100.0, 1e7, 1234567.0, 0.001, 1e-4, -1.5e300, 5e-324, 1.7976931348623157e308, 123456.789,
           2.0 / 3.0, 1e23, 9.007199254740993e15, 4.35, 1e-310, -1234.5678e-20, 2.3780253101263498e18, 1e-323]


def test_tarn_reads_statistics_java_committed(javaref, tmp_path):
    vectors = [
        ("b", False, True), ("ti", -128, 127), ("si", -32768, 32767), ("i", -2147483648, 2147483647),
        ("l", -9223372036854775808, 9223372036854775807), ("dec", decimal.Decimal("-12.30"), decimal.Decimal("0.05")),
        ("dec38", decimal.Decimal("-1234567890123456789012345678.0123456789"), decimal.Decimal("0E-10")),
        ("s", 'a"b', "zé"), ("c", "ab", "abcde"), ("vc", "", "x" * 12),
        ("dt", dt.date(1969, 12, 31), dt.date(2024, 2, 29)), ("tm", dt.time(0, 0), dt.time(23, 59, 59, 999000)),
        ("ts0", dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 12, 34, 56)),
        ("ts3", dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(2024, 1, 1, 12, 34, 56, 120000)),
        ("ts6", dt.datetime(1960, 1, 1), dt.datetime(2024, 1, 1, 12, 34, 56, 123456)),
        ("ltz", dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
         dt.datetime(2024, 6, 1, 12, 0, 0, 500000, tzinfo=dt.timezone.utc)),
    ]
    float_columns = [(f"f{i}", "FLOAT") for i in range(len(FLOATS) // 2)]
    double_columns = [(f"d{i}", "DOUBLE") for i in range(len(DOUBLES) // 2)]
    columns = [c for c in COLUMNS if c[0] in {v[0] for v in vectors}] + float_columns + double_columns
    types = dict(columns)
    for i, (name, _) in enumerate(float_columns):
        vectors.append((name, FLOATS[2 * i], FLOATS[2 * i + 1]))
    for i, (name, _) in enumerate(double_columns):
        vectors.append((name, DOUBLES[2 * i], DOUBLES[2 * i + 1]))
    col_stats = {name: {"min": repr_of(low, types[name]), "max": repr_of(high, types[name]),
                        "distinctCount": 2, "nullCount": 0, "avgLen": 8, "maxLen": 8}
                 for name, low, high in vectors}
    path = tmp_path / "wh" / "db.db" / "vectors"
    spec = {"mergedRecordCount": 1, "mergedRecordSize": 100, "colStats": col_stats}
    _, _, committed, java = javaref.run_many([
        ["create", path, "--schema", java_schema(columns)],
        ["write", path, "--rows", javaref.rows_arg([{"b": True}], tmp_path)],
        ["commit-statistics", path, "--stats", json.dumps(spec)], ["statistics", path]])
    assert committed["commit_kind"] == "ANALYZE"
    name = java["statistics_file"]
    assert name.startswith("stats-")  # Paimon 1.0's prefix
    t = tarn.load_table(str(path))
    ours = t.statistics()
    assert ours.snapshot_id == 1 and ours.merged_record_count == 1 and ours.merged_record_size == 100
    raw = java["raw"]["colStats"]
    for column, low, high in vectors:
        t_type = parse_type(types[column])
        col = ours.col_stats[column]
        assert (col.serialized_min, col.serialized_max) == (raw[column]["min"], raw[column]["max"])
        # tarn's text of the values is exactly Java's serializeToString
        if types[column] == "FLOAT":
            low, high = float(np.float32(low)), float(np.float32(high))
        for value, java_text in ((low, raw[column]["min"]), (high, raw[column]["max"])):
            assert text_of(value, t_type) == java_text, column
        assert col.min == low and col.max == high or (col.min == low and math.isnan(col.max)), column
        assert repr_of(col.min, types[column]) == java["statistics"]["colStats"][column]["min"], column
        assert repr_of(col.max, types[column]) == java["statistics"]["colStats"][column]["max"], column
    assert t.system_table("statistics").to_arrow().column("snapshot_id").to_pylist() == [1]

    # tarn's commits carry Java's file on while the schema holds; orphan removal keeps it
    t.write(t.scan().to_arrow())
    assert t.latest_snapshot().statistics == name
    assert remove_orphan_files(t, older_than=FAR_FUTURE_MS) == []
    assert os.path.exists(os.path.join(t.root, "statistics", name))
    seen = javaref.run("statistics", path)
    assert seen["statistics_file"] == name and seen["statistics"]["snapshotId"] == 1
    # after an ALTER tarn's commit drops it, as Java's would
    t.alter(tarn.AddColumn("extra", tarn.types.INT()))
    t.write(t.scan().to_arrow().slice(0, 1))
    assert t.latest_snapshot().statistics is None
    assert javaref.run("statistics", path)["statistics"] is None


def test_java_expiry_keeps_referenced_statistics(javaref, tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.expire", schema=schema, options={"snapshot.num-retained.min": "1"})
    names = []
    for i in range(3):
        t.write(pa.table({"k": [i], "v": [f"v{i}"]}, schema=schema))
        names.append(t.analyze().statistics)
    t.create_tag("keep", 2)  # the first ANALYZE snapshot: names[0]
    t.write(pa.table({"k": [9], "v": ["x"]}, schema=schema))
    answers = javaref.run_many([["expire", t.root, "--retain-min", "1", "--retain-max", "1"],
                                ["statistics", t.root]])
    assert answers[0]["expired"] > 0
    assert sorted(os.listdir(os.path.join(t.root, "statistics"))) == sorted([names[0], names[2]])
    assert answers[1]["statistics_file"] == names[2]
    assert not missing_files(t)
    assert t.statistics().snapshot_id == t.latest_snapshot().id - 2


def random_doubles(rng, n: int) -> list[float]:
    """Doubles of every shape: random bits, scaled normals, big integers, powers of two,
    subnormals, short decimals, powers of ten and their neighbours."""
    out: list[float] = []
    while len(out) < n:
        kind = int(rng.integers(0, 8))
        if kind == 0:
            v = float(np.int64(rng.integers(0, 2**63)).view(np.float64))
        elif kind == 1:
            v = float(rng.normal() * 10.0 ** int(rng.integers(-30, 30)))
        elif kind == 2:
            v = float(int(rng.integers(2**52, 2**62)))
        elif kind == 3:
            v = math.ldexp(1.0, int(rng.integers(-1074, 1023)))
        elif kind == 4:
            v = float(np.int64(rng.integers(1, 2**52)).view(np.float64))
        elif kind == 5:
            v = int(rng.integers(0, 10**6)) / 10 ** int(rng.integers(0, 8))
        elif kind == 6:
            v = 10.0 ** int(rng.integers(-300, 300))
        else:
            v = float(np.nextafter(10.0 ** int(rng.integers(-20, 25)), np.inf if rng.random() < 0.5 else -np.inf))
        if math.isfinite(v) and v != 0:
            out.append(v if rng.random() < 0.7 else -v)
    return out


def random_floats(rng, n: int) -> list[float]:
    out: list[float] = []
    while len(out) < n:
        kind = int(rng.integers(0, 5))
        if kind == 0:
            v = float(np.int32(rng.integers(0, 2**31)).view(np.float32))
        elif kind == 1:
            v = float(np.float32(rng.normal() * 10.0 ** int(rng.integers(-35, 35))))
        elif kind == 2:
            v = float(np.float32(math.ldexp(1.0, int(rng.integers(-149, 127)))))
        elif kind == 3:
            v = float(np.float32(int(rng.integers(2**23, 2**62))))
        else:
            v = float(np.float32(int(rng.integers(0, 10**6)) / 10 ** int(rng.integers(0, 6))))
        if math.isfinite(v) and v != 0:
            out.append(v)
    return out


def test_float_and_double_text_is_javas_for_random_values(javaref, tmp_path):
    """Java's Float/Double.toString (JDK 17 here) of 800 doubles and 400 floats, through
    Paimon's FloatSerializer/DoubleSerializer.serializeToString, equals tarn's text."""
    rng = np.random.default_rng(2024)
    doubles, floats = random_doubles(rng, 800), random_floats(rng, 400)
    columns = [(f"d{i}", "DOUBLE") for i in range(400)] + [(f"f{i}", "FLOAT") for i in range(200)]
    col_stats = {f"d{i}": {"min": doubles[2 * i], "max": doubles[2 * i + 1]} for i in range(400)}
    col_stats.update({f"f{i}": {"min": floats[2 * i], "max": floats[2 * i + 1]} for i in range(200)})
    path = tmp_path / "wh" / "db.db" / "floats"
    answers = javaref.run_many([
        ["create", path, "--schema", java_schema(columns)],
        ["write", path, "--rows", javaref.rows_arg([{"d0": 1.0}], tmp_path)],
        ["commit-statistics", path, "--stats", json.dumps({"colStats": col_stats})], ["statistics", path]])
    raw = answers[-1]["raw"]["colStats"]
    wrong = []
    for name, c in raw.items():
        values = floats if name.startswith("f") else doubles
        i = int(name[1:])
        for value, key in ((values[2 * i], "min"), (values[2 * i + 1], "max")):
            ours = java_float_text(value, single=name.startswith("f"))
            if ours != c[key]:
                wrong.append((name, key, value, c[key], ours))
    assert wrong == []
