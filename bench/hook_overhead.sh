#!/usr/bin/env bash
# The Python hook's overhead (issue 6: at most 1 % of a 10 ms step), measured under a real
# `baton run` so every step's event goes through the socket baton reads.
#   bench/hook_overhead.sh [BATON] [STEPS] [ROUNDS]     (defaults: build/src/cli/baton 300 7)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
baton=${1:-$root/build/src/cli/baton}
PYTHONPATH=$root/python "$baton" run --no-db --quiet --no-gpus -- /usr/bin/python3 "$root/bench/hook_overhead.py" \
  "${2:-300}" "${3:-7}"
