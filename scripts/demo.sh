#!/usr/bin/env bash
# Set up (idempotent) and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/demo.py "$@"
