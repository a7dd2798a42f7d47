#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite, including pypaimon interoperability.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# two workers (tests/conftest.py keeps Spark and the stress harness on one of them)
exec .venv/bin/python -m pytest -n 2 --dist loadgroup tests "$@"
