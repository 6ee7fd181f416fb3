#!/usr/bin/env bash
# Side-by-side cost of a live view: `baton top -d 1` against `glances -t 1` (Debian's glances),
# each run for SECONDS (default 30) inside a detached tmux terminal of 120x40, on a box with IDLE
# extra idle processes (default 450, removed on exit). For each tool it reads, from /proc, the
# CPU time (utime + stime of the process and its reaped children) at the end of the run and the
# peak RSS (VmHWM), and prints the ratios. baton reads 8 GPUs through the fake NVML (scenario
# eight-busy); glances has no GPU source here.
#
# Usage: bench/top_vs_glances.sh [IDLE] [SECONDS]     (after scripts/test.sh; installs glances)
# Exit status: 0 when baton meets its targets (<= 1/10 of glances' CPU, <= 1/4 of its RSS).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
idle=${1:-450}
seconds=${2:-30}
baton=${BATON:-$root/build/src/cli/baton}
[ -x "$baton" ] || { echo "run scripts/test.sh first" >&2; exit 2; }
"$root/scripts/apt-install.sh" glances tmux

work=$(mktemp -d)
sock=$work/tmux.sock
pids=()
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for ((i = 0; i < idle; i++)); do
  sleep 3600 &
  pids+=($!)
done
sleep 1

# measure NAME COMMAND: runs COMMAND (exec'd by the pane's shell) for $seconds, prints
# "NAME cpu_seconds peak_rss_kib".
measure() {
  local name=$1 cmd=$2 pid ticks hwm
  tmux -S "$sock" -f /dev/null new-session -d -s "$name" -x 120 -y 40 "exec $cmd"
  pid=$(tmux -S "$sock" display-message -p -t "$name" '#{pane_pid}')
  sleep "$seconds"
  [ -r "/proc/$pid/stat" ] || { echo "$name exited early" >&2; exit 1; }
  # Fields 14-17: utime stime cutime cstime, in clock ticks (after the ')' of the name).
  ticks=$(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13 + $14 + $15}')
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  tmux -S "$sock" kill-session -t "$name"
  echo "$name $(python3 -c "print($ticks / $(getconf CLK_TCK))") $hwm"
}

export BATON_NVML_LIBRARY=$root/build/tests/fake_nvml/eight-busy/libnvidia-ml.so.1
export BATON_FAKE_NVML_SCENARIO=$root/tests/fake_nvml/scenarios/eight-busy.json
nproc_now=$(ls -d /proc/[0-9]* | wc -l)
b=$(measure baton "$baton top -d 1")
g=$(measure glances "glances -t 1 --disable-check-update")

/usr/bin/python3 - "$nproc_now" "$seconds" "$b" "$g" <<'PY'
import sys
n, seconds, b, g = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
bc, br, gc, gr = float(b[1]), int(b[2]), float(g[1]), int(g[2])
cpu_ratio = bc / gc if gc else float("inf")
rss_ratio = br / gr
cpu_ok, rss_ok = cpu_ratio <= 0.1, rss_ratio <= 0.25
print(f"live view at 1 s refresh for {seconds:.0f} s, {n} processes (CPU % of one core over the run; peak RSS)")
print(f"  baton top -d 1      {100 * bc / seconds:6.2f} % CPU  {br / 1024:7.1f} MiB")
print(f"  glances -t 1        {100 * gc / seconds:6.2f} % CPU  {gr / 1024:7.1f} MiB")
print(f"  baton / glances     {cpu_ratio:6.3f} x CPU (target <= 0.1: {'met' if cpu_ok else 'MISSED'})"
      f"  {rss_ratio:6.3f} x RSS (target <= 0.25: {'met' if rss_ok else 'MISSED'})")
sys.exit(0 if cpu_ok and rss_ok else 1)
PY
