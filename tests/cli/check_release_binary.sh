#!/usr/bin/env bash
# The quick start's binary: a Release build (the default build type) carries no debug info and
# stays under 10 MB (docs/performance.md, "Build"). Other build types skip (77).
# Usage: check_release_binary.sh BINARY CONFIG
set -euo pipefail
binary=$1 config=$2
[ "$config" = Release ] || { echo "skipped: a $config build"; exit 77; }
size=$(stat -c %s "$binary")
echo "baton: $size bytes"
[ "$size" -le $((10 * 1024 * 1024)) ] || { echo "FAIL: over 10 MB"; exit 1; }
if readelf -S "$binary" | grep -q '[.]debug_info'; then
  echo "FAIL: debug info in a Release build"
  exit 1
fi
