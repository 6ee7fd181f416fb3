#!/usr/bin/env bash
# Fuzzes every parser baton feeds with outside data: builds the libFuzzer targets of fuzz/ with
# clang, AddressSanitizer and UndefinedBehaviorSanitizer (in build-sanitize/, shared with
# scripts/sanitize.sh: scripts/sanitizer-build.sh), then runs each for
# SECONDS (default 30) on a copy of its seed corpus (fuzz/corpus/TARGET/), as many at once as
# there are cores. Exit status 1 on the first crash, leak, undefined behaviour or broken
# invariant, with the input kept as build-sanitize/findings/TARGET-crash-*; add it to the corpus with
# the fix. CI runs it through scripts/test.sh.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
./scripts/sanitizer-build.sh baton_fuzzers
targets=("$@")
((${#targets[@]})) || mapfile -t targets < <(ls fuzz/corpus)
rm -rf build-sanitize/work build-sanitize/findings
mkdir -p build-sanitize/findings
run_one() {
  local t=$1 seconds=$2
  mkdir -p "build-sanitize/work/$t"
  # New inputs go to work/ (the corpus in the tree stays as it is); -timeout: one input may take
  # 10 s at most (a hang is a finding too).
  if "build-sanitize/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-sanitize/findings/$t-" "build-sanitize/work/$t" "fuzz/corpus/$t" >"build-sanitize/work/$t.log" 2>&1; then
    echo "fuzz: $t: $(grep -o 'stat::number_of_executed_units: [0-9]*' "build-sanitize/work/$t.log" | cut -d' ' -f2) runs in ${seconds} s, nothing found"
  else
    echo "fuzz: $t: FOUND a failure (build-sanitize/findings/$t-*):" >&2
    grep -m 5 -E 'ERROR|runtime error|deadly|SUMMARY' "build-sanitize/work/$t.log" >&2 || tail -20 "build-sanitize/work/$t.log" >&2
    return 1
  fi
}
export -f run_one
printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c "run_one {} $seconds"
