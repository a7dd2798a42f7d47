#!/usr/bin/env bash
# Set up (idempotent, pyspark included) and run the demo: the Spark pipeline on local[2].
# The embedded demo without Spark: .venv/bin/python examples/demo.py
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/pipeline.py "$@"
