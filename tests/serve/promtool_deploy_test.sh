#!/usr/bin/env bash
# deploy/prometheus/ as Prometheus' own tool judges it: the rules load, their unit tests pass
# (promtool test rules), and the sample scrape configuration is valid (with its token file made).
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
promtool check rules "$src/deploy/prometheus/baton-rules.yml"
(cd "$src/deploy/prometheus" && promtool test rules baton-rules.test.yml)
cp "$src/deploy/prometheus/baton-rules.yml" "$tmp/"
echo token > "$tmp/baton.token"
sed "s|/etc/prometheus/baton.token|$tmp/baton.token|" "$src/deploy/prometheus/prometheus.yml" > "$tmp/prometheus.yml"
promtool check config "$tmp/prometheus.yml"
echo "PASS: deploy/prometheus checks"
