#!/usr/bin/env bash
# The build tree that scripts/sanitize.sh and scripts/fuzz.sh share: clang with AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage (-DBATON_SANITIZE=ON -DBATON_FUZZ=ON) in
# build-sanitize/, so the libraries are compiled once for the unit tests and the fuzz targets.
# Installs clang (and libFuzzer's runtime where it is a package of its own), configures, and
# builds the targets named as arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null  # the libraries baton builds against (and baton itself, in ./build)
./scripts/apt-install.sh clang libgtest-dev
# libFuzzer's runtime: part of clang's packages on some releases, libclang-rt-dev on Debian 12.
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  ./scripts/apt-install.sh libclang-rt-dev
fi
CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_SANITIZE=ON \
  -DBATON_FUZZ=ON -DBATON_BUILD_TESTS=ON >/dev/null
cmake --build build-sanitize -j "$(nproc)" --target "$@"
