#!/usr/bin/env bash
# Fetches the chart library of baton serve's live page (uPlot, from the npm registry)
# into .deps/, once, and checks it against the integrity pinned here: the build embeds its files
# in the binary (src/serve/CMakeLists.txt), so the page loads nothing from outside the box.
# Nothing of it is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
name=uplot
version=1.6.32
integrity=sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==
dest=.deps/$name-$version
[ -f "$dest/package/dist/uPlot.iife.min.js" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The registry's tarball, fetched directly: what `npm pack` would fetch, without installing npm and
# Node.js (some 300 packages) on a machine that only wants to build baton.
python3 - "https://registry.npmjs.org/$name/-/$name-$version.tgz" "$tmp/$name-$version.tgz" <<'PY' || exit 1
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=60) as r, open(sys.argv[2], "wb") as f:
        f.write(r.read())
except OSError as e:
    sys.exit(f"setup: cannot fetch {sys.argv[1]}: {e}")
PY
got=sha512-$(python3 -c "import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], 'rb').read()).digest()).decode())" "$tmp/$name-$version.tgz")
if [ "$got" != "$integrity" ]; then
  echo "setup: $name@$version does not match its pinned integrity (got $got)" >&2
  exit 1
fi
mkdir -p "$dest"
tar -xzf "$tmp/$name-$version.tgz" -C "$dest"
echo "setup: fetched $name@$version into $dest"
