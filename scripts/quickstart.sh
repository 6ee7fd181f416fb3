#!/usr/bin/env bash
# Quick start: install what is missing, build, and run baton's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec ./build/src/cli/baton snapshot "$@"
