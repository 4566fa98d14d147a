#!/usr/bin/env bash
# `make bench`: install the peers locally (idempotent), then run every benchmark and write
# the report (bench/out/report.md, raw figures in bench/out/report.json).
# Extra arguments go to `python -m bench.run` (e.g. --quick).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python="${PYTHON:-$repo/.venv/bin/python}"
bash bench/setup.sh
exec "$python" -m bench.run "$@"
