#!/usr/bin/env bash
# The unit tests, and the integration suites where the threads are, under AddressSanitizer and
# UndefinedBehaviorSanitizer (and LeakSanitizer): built with clang in build-sanitize/
# (scripts/sanitizer-build.sh); the first report fails its test. The unit suites are the CTest
# label `unit` (tests/CMakeLists.txt): parsers, rules, the history, the views, the NVML backend
# against the fake. The label `sanitize` is baton serve's, the queue's and baton launch's
# end-to-end suites, run against the sanitized baton binary. The other integration suites (tmux,
# the browser, the timing benches, Slurm) run unsanitized only. CI runs it through scripts/test.sh.
# Usage: scripts/sanitize.sh [CTEST_ARGS...]   (e.g. -R History)
set -euo pipefail
cd "$(dirname "$0")/.."
# The whole sanitizer tree (its one list of targets lives in sanitizer-build.sh; the fuzz targets
# in it are a few seconds more).
./scripts/sanitizer-build.sh
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-sanitize
# The unit suites first, then the end-to-end ones: run together, the end-to-end suites' load would
# stretch the unit suites' deadlines (a 300 ms NVML deadline under ASan) past what they test.
# (Each log kept, for the slowest tests in scripts/test.sh's table.)
ctest --output-on-failure -j "$(nproc)" --timeout 300 -L unit "$@" | tee ctest-unit.log
ctest --output-on-failure -j "$(nproc)" --timeout 300 -L sanitize "$@" | tee ctest-sanitize.log
