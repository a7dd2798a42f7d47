"""VARIANT benchmark: encode N JSON documents of ~10 fields into a VARIANT column and decode
them back, against json.dumps / json.loads of the same objects and pyarrow's JSON reader.

    .venv/bin/python bench/bench_variant.py [--rows 1000000]

Printed (one run each): tarn.variant.from_json (JSON text -> VARIANT), from_python (objects ->
VARIANT), to_python (VARIANT -> objects), to_json (VARIANT -> JSON text); json.loads and
json.dumps of the same documents; pyarrow.json.read_json of them as newline-delimited JSON;
and the ratios. The codec works value by value (tarn/codec/variant.py): a variant's shape
differs per value, so no Arrow kernel does the encoding.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path

import pyarrow.json as pajson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tarn.variant  # noqa: E402


def documents(n: int) -> list[dict]:
    return [{"id": i, "user": f"user{i % 997}", "score": i * 0.5, "ok": i % 3 == 0, "tags": ["a", "b", str(i % 7)],
             "geo": {"lat": 59.9 + i % 10, "lon": 10.7}, "count": i % 1000, "note": None, "kind": "event",
             "ts": "2026-11-27T12:00:00"} for i in range(n)]


def clock(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    docs = documents(args.rows)
    dumps, texts = clock(lambda: [json.dumps(d) for d in docs])
    loads, _ = clock(lambda: [json.loads(t) for t in texts])
    ndjson = "\n".join(texts).encode()
    arrow_json, _ = clock(lambda: pajson.read_json(io.BytesIO(ndjson)))
    from_json, column = clock(lambda: tarn.variant.from_json(texts))
    from_python, _ = clock(lambda: tarn.variant.from_python(docs))
    to_python, back = clock(lambda: tarn.variant.to_python(column))
    to_json, _ = clock(lambda: tarn.variant.to_json(column))
    assert float(back[1]["geo"]["lon"]) == 10.7 and back[1]["id"] == 1
    print(f"{args.rows:,} documents of 10 fields, {os.cpu_count()} cpu(s)")
    print(f"encode: from_json {from_json:.2f}s, from_python {from_python:.2f}s | json.loads {loads:.2f}s, "
          f"pyarrow read_json {arrow_json:.2f}s | from_json / json.loads {from_json / loads:.1f}x, "
          f"from_json / read_json {from_json / arrow_json:.1f}x")
    print(f"decode: to_python {to_python:.2f}s, to_json {to_json:.2f}s | json.dumps {dumps:.2f}s | "
          f"to_python / json.loads {to_python / loads:.1f}x, to_json / json.dumps {to_json / dumps:.1f}x")


if __name__ == "__main__":
    main()
