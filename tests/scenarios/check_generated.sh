#!/usr/bin/env bash
# Fails when the checked-in generated scenarios differ from what generate.py writes now.
set -euo pipefail
dir=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$dir/generate.py" "$tmp"
for f in "$tmp"/*; do
  cmp -s "$f" "$dir/$(basename "$f")" || { echo "$(basename "$f") is stale: run tests/scenarios/generate.py"; exit 1; }
done
echo "generated scenarios are current ($(ls "$tmp" | wc -l) files)"
