#!/usr/bin/env bash
# The benchmark environment: .venv (scripts/setup.sh) plus the peers and data generators of
# bench/ (deltalake, pyiceberg, tpchgen-cli). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,spark,bench]"
