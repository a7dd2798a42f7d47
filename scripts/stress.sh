#!/usr/bin/env bash
# The issue-9 concurrency and crash harness, long versions, with figures:
#   4/8 writer processes x 30-50 commits (append, primary key, a partition per writer; with a
#   compaction process and aggressive expiry) and 50 SIGKILL trials per operation.
# Extra arguments go to `python -m tests.stress` (e.g. --s3, --what crash, --trials 200,
# --json figures.json). Exit status 1 when a promise was broken.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
exec .venv/bin/python -m tests.stress --long "$@"
