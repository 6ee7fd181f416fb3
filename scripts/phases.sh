# Sourced by scripts/test.sh: `phase NAME COMMAND...` runs the command and notes how long it took;
# the table of phases (and ctest's slowest tests, from the logs named in BATON_CTEST_LOGS) is
# printed when the script ends, failed or not, so the next slow step is visible in every CI log.
phase_names=()
phase_seconds=()
phase_status=()
BATON_CTEST_LOGS=()

phase() {
  local name=$1 start=$EPOCHREALTIME rc=0
  shift
  echo "== $name" >&2
  "$@" || rc=$?
  phase_names+=("$name")
  phase_seconds+=("$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')")
  phase_status+=("$([ "$rc" = 0 ] && echo ok || echo "failed ($rc)")")
  return "$rc"
}

# ctest's lines "  3/539 Test  #12: Name ......   Passed   12.34 sec", from every log: the slowest 10
# (those of a log under build-sanitize/ marked [ASan]). awk reads all its input: no SIGPIPE under
# pipefail.
slowest_tests() {
  local f found=0
  for f in "${BATON_CTEST_LOGS[@]}"; do [ -f "$f" ] && found=1; done
  ((found)) || return 0
  echo "slowest tests:"
  for f in "${BATON_CTEST_LOGS[@]}"; do
    [ -f "$f" ] || continue
    sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+ *\**([A-Za-z ]+) +([0-9.]+) sec$/\3 \1 \2/p' "$f" |
      awk -v tag="$(case $f in *sanitize*) echo ' [ASan]' ;; esac)" '{ print $1, $2 tag, $3 }'
  done | sort -rn | awk 'NR <= 10 { printf "  %8.1f s  %s%s\n", $1, $2 ($3 ~ /ASan/ ? " " $3 : ""), ($NF == "Passed" ? "" : "  (" $NF ")") }'
}

print_phases() {
  local total=0 i
  echo
  echo "phase                    seconds  status"
  for i in "${!phase_names[@]}"; do
    printf '%-24s %7s  %s\n' "${phase_names[$i]}" "${phase_seconds[$i]}" "${phase_status[$i]}"
    total=$((total + phase_seconds[i]))
  done
  printf '%-24s %7s\n' "total" "$total"
  slowest_tests
}
# The script's own exit status stays what it was: the table is printed, never judged.
trap 'rc=$?; print_phases || true; exit "$rc"' EXIT
