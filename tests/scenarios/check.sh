#!/usr/bin/env bash
# Replays one scenario with `baton diagnose --replay --json` and compares the set of rule ids it
# reports with SCENARIO.expect; the exit status must match the most severe finding.
# Usage: check.sh BATON SCENARIO.jsonl
set -euo pipefail
baton=$1
stream=$2
expect_file=${stream%.jsonl}.expect
set +e
json=$("$baton" --config /dev/null diagnose --replay "$stream" --json)
status=$?
set -e
got=$(printf '%s' "$json" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("\n".join(sorted({f["rule"] for f in d["findings"]})))
sev = {f["severity"] for f in d["findings"]}
want = 2 if "critical" in sev else 1 if "warning" in sev else 0
sys.exit(0 if d["exit_status"] == want else 9)')
want=$(sort -u "$expect_file" | sed '/^$/d')
if [ "$got" != "$want" ]; then
  echo "$(basename "$stream"): expected [${want//$'\n'/, }] got [${got//$'\n'/, }]"
  exit 1
fi
expected_status=$(printf '%s' "$json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["exit_status"])')
[ "$status" = "$expected_status" ] || { echo "exit status $status, JSON says $expected_status"; exit 1; }
echo "$(basename "$stream"): [${got//$'\n'/, }] as expected (exit $status)"
