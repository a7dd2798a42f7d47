#!/usr/bin/env bash
# Create .venv with tarn, its test dependencies and pyspark (idempotent). The pypaimon peer venv
# (.venv-pypaimon) is created by the test suite itself when it first needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,spark]"
