#!/usr/bin/env bash
# Configures a build tree as the scripts build it: with Ninja where installed (chosen when the tree
# is new: a tree keeps the generator it was made with), and CMakeLists.txt's defaults (Release: -O2,
# no debug info; ccache when installed). Extra arguments go to CMake; a tree keeps what it was
# configured with before unless they change it.
# Usage: scripts/configure.sh DIR [CMAKE_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
args=()
[ -f "$dir/CMakeCache.txt" ] || ! command -v ninja >/dev/null || args+=(-G Ninja)
cmake -S . -B "$dir" "${args[@]}" "$@" >/dev/null
