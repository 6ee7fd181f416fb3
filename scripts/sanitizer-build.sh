#!/usr/bin/env bash
# The build tree that scripts/sanitize.sh and scripts/fuzz.sh share: clang with AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage (-DBATON_SANITIZE=ON -DBATON_FUZZ=ON) in
# build-sanitize/, so the libraries are compiled once for the unit tests and the fuzz targets.
# Installs clang (and libFuzzer's runtime where it is a package of its own), configures, and
# builds the targets named as arguments (all that sanitize.sh and fuzz.sh run, without any).
set -euo pipefail
cd "$(dirname "$0")/.."
# Everything the two need, when no target is named (the one list: a new test suite goes here).
targets=("$@")
((${#targets[@]})) || targets=(fake_nvml_all baton serve_integration_test queue_integration_test core_test sample_test
  diagnose_test ui_unit_test store_test report_test run_test doctor_test serve_test queue_test launch_test
  clean_test measure_test agent_test baton_fuzzers)
./scripts/setup.sh --no-build >/dev/null  # the libraries baton builds against
./scripts/apt-install.sh clang libgtest-dev
# libFuzzer's runtime: part of clang's packages on some releases, libclang-rt-dev on Debian 12.
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  ./scripts/apt-install.sh libclang-rt-dev
fi
# The second compiler, with warnings as errors. -O1 and line tables only: what ASan's reports need
# (file:line in each frame), at less compile time than -O2 -g; unity sources, as in ./build (each
# file on its own took 2.5 times as long to build here).
CC=clang CXX=clang++ ./scripts/configure.sh build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DBATON_SANITIZE=ON -DBATON_FUZZ=ON \
  -DBATON_BUILD_TESTS=ON -DBATON_WERROR=ON -DBATON_UNITY_BUILD=ON
cmake --build build-sanitize -j "$(nproc)" --target "${targets[@]}"
