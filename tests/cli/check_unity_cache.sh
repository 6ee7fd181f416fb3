#!/usr/bin/env bash
# A clone in another folder hits the compiler cache for the unity sources (cmake/unity.cmake):
# the build's own compile command for baton_core's first unity source, run through the build's own
# ccache launcher, in two copies of the tree at different paths (as two clones would have it). The
# second must be a direct-mode hit, the kind that skips the preprocessor (ccache hashes the source
# text and the files it includes). Unity sources that name their files by absolute path, as
# CMake's do, miss there: their text differs from clone to clone.
# Skips (77) where the build does not compile through ccache or has no unity sources.
# Usage: check_unity_cache.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$(realpath "$1") build_dir=$(realpath "$2")
unity=$build_dir/unity/baton_core/unity_0.cpp
[ -f "$unity" ] || { echo "skipped: no unity sources (BATON_UNITY_BUILD=OFF)"; exit 77; }
case $build_dir in
  "$source_dir"/*) ;;
  *) echo "skipped: the build folder is outside the checkout"; exit 77 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The launcher (from the Ninja rule) and the command (from compile_commands.json), with the
# checkout's path replaced by a copy's.
python3 - "$source_dir" "$build_dir" "$unity" >"$work/command.txt" <<'EOF'
import json, re, sys
source, build, unity = sys.argv[1:]
rules = open(f"{build}/CMakeFiles/rules.ninja").read()
m = re.search(r"^rule CXX_COMPILER__baton_core_\w+\n(?:  .*\n)*?  command = (.*)$", rules, re.M)
if not m:
    sys.exit("no compile rule for baton_core in rules.ninja")
rule = m.group(1)
launcher = rule[:rule.index(" $DEFINES")].rsplit(" ", 1)[0] if "ccache" in rule else ""
entry = next(e for e in json.load(open(f"{build}/compile_commands.json")) if e["file"] == unity)
print(launcher)
print(entry["command"])
print(entry["command"].split(" -o ", 1)[1].split(" ", 1)[0])  # the object, relative to the build
EOF
launcher=$(sed -n 1p "$work/command.txt")
command=$(sed -n 2p "$work/command.txt")
object=$(sed -n 3p "$work/command.txt")
[ -n "$launcher" ] || { echo "skipped: the build does not compile through ccache"; exit 77; }

relative_build=${build_dir#"$source_dir"/}
export CCACHE_DIR=$work/cache CCACHE_DIRECT=1  # (direct mode is ccache's default; a user's config may differ)
for copy in a b; do
  root=$work/$copy/checkout-$copy  # different lengths and names: nothing may depend on them
  mkdir -p "$root/$relative_build/unity/baton_core" "$root/$relative_build/$(dirname "$object")"
  cp -r "$source_dir/src" "$root/src"
  sed "s|$source_dir|$root|g" "$unity" >"$root/$relative_build/unity/baton_core/unity_0.cpp"
  (cd "$root/$relative_build" && eval "${launcher//$source_dir/$root} ${command//$source_dir/$root}")
done
stats=$(ccache --print-stats)
count() { awk -v key="$1" '$1 == key { print $2 }' <<<"$stats"; }
echo "ccache: $(count direct_cache_hit) direct hit(s), $(count preprocessed_cache_hit) preprocessed hit(s)," \
  "$(count cache_miss) miss(es) for two copies of baton_core's unity source"
[ "$(count direct_cache_hit)" = 1 ] && [ "$(count cache_miss)" = 1 ] ||
  { echo "FAIL: the second copy did not hit the cache in direct mode"; exit 1; }
