#!/usr/bin/env bash
# The quick start on a fresh machine, timed: a Debian 12 base system made by debootstrap (minbase:
# no compiler, no CMake, no Python), a clone of this checkout's HEAD in it, then
# ./scripts/quickstart.sh run twice in a chroot without a terminal (so it prints one frame): the
# first run installs, builds and shows the frame; the second, with nothing changed, only checks.
# Prints both times and setup's own split (installing / configuring and building). Needs root and
# Debian's archive; the base system is kept in WORK/base for the next run (each run copies it).
# docs/performance.md ("Build") quotes it.
# Usage: sudo bench/quickstart_on_a_fresh_machine.sh [WORK]   (default /var/tmp/baton-fresh)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/var/tmp/baton-fresh}
[ "$(id -u)" = 0 ] || { echo "quickstart_on_a_fresh_machine: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
command -v debootstrap >/dev/null || "$src/scripts/apt-install.sh" debootstrap
mkdir -p "$work"
if [ ! -x "$work/base/bin/bash" ]; then
  echo "making a Debian 12 base system in $work/base"
  debootstrap --variant=minbase bookworm "$work/base" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1
fi
root=$work/root
rm -rf "$root"
cp -a "$work/base" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A TLS-intercepting proxy's CA (some build farms have one): trusted in the chroot as on this host.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
git clone -q "$src" "$root/root/baton"
mounted=()
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}"; done; }
trap cleanup EXIT
for m in proc sys dev dev/pts; do
  mount --bind "/$m" "$root/$m"
  mounted+=("$root/$m")
done
run() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM=xterm-256color PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c 'cd /root/baton && ./scripts/quickstart.sh' >"$work/frame-$1.txt" 2>"$work/setup-$1.log"
}
for n in first second; do
  start=$EPOCHREALTIME
  run "$n"
  end=$EPOCHREALTIME
  awk -v a="$start" -v b="$end" -v n="$n" 'BEGIN { printf "%s run: %.1f s to the first frame\n", n, b - a }'
  grep '^setup: installing took' "$work/setup-$n.log" || true
done
echo "baton: $(stat -c %s "$root/root/baton/build/src/cli/baton") bytes; the frame: $work/frame-first.txt"
grep -q "quit" "$work/frame-first.txt" || { echo "no frame (see $work/setup-first.log)" >&2; exit 1; }
