#!/usr/bin/env bash
# scripts/phases.sh, as scripts/test.sh uses it: each phase's seconds and status in the table, the
# table printed when the script stops at a failing phase, and the slowest tests read from ctest logs.
set -euo pipefail
phases=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/ctest.log" <<'LOG'
  1/4 Test  #3: Fast.one .........................   Passed    0.12 sec
  2/4 Test  #1: Slow.two .........................   Passed   12.50 sec
  3/4 Test  #2: Broken.three .....................***Failed    3.25 sec
  4/4 Test #14: Middle.four ......................   Passed    7.00 sec
LOG
mkdir -p "$dir/build-sanitize"
for i in $(seq 1 40); do
  printf ' %2d/40 Test #%d: Many.t%d ..........   Passed    0.%02d sec\n' "$i" "$i" "$i" "$i"
done >"$dir/build-sanitize/ctest-unit.log"
echo '  1/1 Test #9: Asan.slow ......   Passed    9.00 sec' >>"$dir/build-sanitize/ctest-unit.log"
cat >"$dir/run.sh" <<RUN
set -euo pipefail
source "$phases"
BATON_CTEST_LOGS=("$dir/ctest.log" "$dir/missing.log" "$dir/build-sanitize/ctest-unit.log")
phase "first step" sleep 1.2
phase "second step" false
phase "never reached" true
RUN
rc=0
out=$(bash "$dir/run.sh" 2>/dev/null) || rc=$?
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
[ "$rc" = 1 ] || fail "exit status $rc, not the failing phase's 1"
grep -Eq '^first step +1  ok$' <<<"$out" || fail "first phase's row"
grep -Eq '^second step +0  failed \(1\)$' <<<"$out" || fail "failing phase's row"
! grep -q 'never reached' <<<"$out" || fail "a phase after the failing one ran"
grep -Eq '^total +1$' <<<"$out" || fail "total"
slow=$(sed -n '/^slowest tests:/,$p' <<<"$out")
[ "$(sed -n 2p <<<"$slow")" = "      12.5 s  Slow.two" ] || fail "slowest first"
[ "$(sed -n 4p <<<"$slow")" = "       7.0 s  Middle.four" ] || fail "third slowest"
[ "$(sed -n 3p <<<"$slow")" = "       9.0 s  Asan.slow [ASan]" ] || fail "a sanitized test is marked"
[ "$(sed -n 5p <<<"$slow")" = "       3.2 s  Broken.three  (Failed)" ] || fail "a failed test says so"
[ "$(wc -l <<<"$slow")" = 11 ] || fail "ten slowest"
# A run whose phases all pass exits 0, with the table printed (no SIGPIPE from reading long logs).
cat >"$dir/ok.sh" <<RUN
set -euo pipefail
source "$phases"
BATON_CTEST_LOGS=("$dir/build-sanitize/ctest-unit.log")
phase "only step" true
RUN
rc=0
out=$(bash "$dir/ok.sh" 2>/dev/null) || rc=$?
[ "$rc" = 0 ] || fail "a passing run exits $rc"
grep -Eq '^only step +0  ok$' <<<"$out" || fail "passing run's row"
echo "phases table: ok"
