#!/usr/bin/env bash
# Quick start: install what is missing, build, and run baton's main job: `baton top`, the live
# view (q quits). Without a terminal (a pipe, a CI log) it prints one frame instead.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if [ -t 0 ] && [ -t 1 ]; then
  exec ./build/src/cli/baton top "$@"
fi
exec ./build/src/cli/baton top --once "$@"
