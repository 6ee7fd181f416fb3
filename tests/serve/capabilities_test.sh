#!/usr/bin/env bash
# Which capabilities deploy/baton.service must grant so that baton serve, running as its own
# unprivileged user, reads another user's /proc/PID/io (per-process disk I/O): measured, not
# guessed. baton runs as uid 40002 with each set of capabilities, a CPU-busy process of uid 40001
# is the target, and the snapshot says whether its I/O rates could be read. The unit grants
# exactly the set that works, and systemd-analyze accepts the unit.
# Needs root (setpriv changes uid); skips (77) otherwise.
set -euo pipefail
baton=$(realpath "$1")
src=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to change uids"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }

setpriv --reuid=40001 --regid=40001 --clear-groups sh -c 'while :; do :; done' &
target=$!
trap 'kill $target 2>/dev/null || true' EXIT
sleep 0.3

# "yes" when baton, with these ambient capabilities, read the target's I/O counters.
reads_io() {
  local caps=$1 out
  if [ -z "$caps" ]; then
    out=$(setpriv --reuid=40002 --regid=40002 --clear-groups --inh-caps=-all \
      "$baton" --config /dev/null snapshot --json --count 2 --interval 0.3 --no-gpus)
  else
    out=$(setpriv --reuid=40002 --regid=40002 --clear-groups --inh-caps="$caps" --ambient-caps="$caps" \
      "$baton" --config /dev/null snapshot --json --count 2 --interval 0.3 --no-gpus)
  fi
  printf '%s\n' "$out" | tail -1 | python3 -c "
import json, sys
snap = json.load(sys.stdin)
p = [p for p in snap['processes'] if p['pid'] == $target]
print('gone' if not p else ('yes' if 'read_bytes_per_second' in p[0] else 'no'))"
}

fail=0
expect() {
  local caps=$1 want=$2 got
  got=$(reads_io "$caps")
  echo "capabilities [${caps:-none}]: reads another user's /proc/PID/io: $got (expected $want)"
  [ "$got" = "$want" ] || fail=1
}
expect "" no
expect "+sys_ptrace" no
expect "+dac_read_search" no
expect "+dac_read_search,+sys_ptrace" yes

# The unit grants exactly these two, and nothing else.
unit=$src/deploy/baton.service
grep -qx 'AmbientCapabilities=CAP_DAC_READ_SEARCH CAP_SYS_PTRACE' "$unit" || { echo "unit: AmbientCapabilities differ"; fail=1; }
grep -qx 'CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_SYS_PTRACE' "$unit" || { echo "unit: bounding set differs"; fail=1; }
if command -v systemd-analyze >/dev/null; then
  tmp=$(mktemp -d)
  sed -e "s|^ExecStart=/usr/bin/baton|ExecStart=$baton|" -e '/^Documentation=/d' "$unit" > "$tmp/baton.service"
  systemd-analyze verify "$tmp/baton.service" || fail=1
  score=$(systemd-analyze security --offline=yes "$tmp/baton.service" 2>&1 | sed -n 's/.*Overall exposure level for baton.service: \([0-9.]*\).*/\1/p')
  echo "systemd-analyze security: exposure $score (0 best, 10 worst)"
  python3 -c "import sys; sys.exit(0 if float('$score') <= 3.0 else 1)" || { echo "exposure above 3.0"; fail=1; }
  # The queue's unit (root, Delegate=yes, jobs outlive the agent): a unit systemd accepts.
  queue_unit=$src/deploy/baton-queue.service
  sed -e "s|^ExecStart=/usr/bin/baton|ExecStart=$baton|" -e '/^Documentation=/d' "$queue_unit" > "$tmp/baton-queue.service"
  systemd-analyze verify "$tmp/baton-queue.service" || fail=1
  for line in Delegate=yes KillMode=process RuntimeDirectory=baton; do
    grep -qx "$line" "$queue_unit" || { echo "baton-queue.service: no $line"; fail=1; }
  done
  rm -rf "$tmp"
fi
[ $fail = 0 ] && echo "PASS: the unit grants the capabilities the kernel needs, no more"
exit $fail
