#!/usr/bin/env bash
# Create .venv with tarn, its test dependencies and pyspark (idempotent). The pypaimon peer venv
# (.venv-pypaimon) is created by the test suite itself when it first needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# compat mode: the project directory on sys.path, so Spark finds the top-level pyspark_tarn
# module (its static registration of the "tarn" source) as it would in an installed wheel
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,spark]" --config-settings editable_mode=compat
