#!/usr/bin/env bash
# Side-by-side cost of a live view, in one run: `baton top -d 1` against `glances -t 1` (Debian's
# glances) and `btop` (Debian's btop, update_ms = 1000, its graphs on as always), each run for
# SECONDS (default 90: baton trusts processes idle for 30 s to stay idle, so its steady state starts
# after that) inside a detached tmux terminal of 120x40, on a box with IDLE extra idle
# processes (default 450, removed on exit). baton runs twice: with its history graphs on and 10
# minutes of history (the default), and with graphs off and the shortest history (1 minute), so the
# difference is what the graphs cost. For each run it reads, from /proc, the CPU time (utime + stime
# of the process and its reaped children) at the end and the peak RSS (VmHWM), and prints the ratios.
# baton reads 8 GPUs through the fake NVML (scenario eight-busy); glances and btop have no GPU source
# here.
#
# Usage: bench/top_vs_glances.sh [IDLE] [SECONDS]     (after scripts/test.sh; installs glances, btop)
# Exit status: 0 when baton meets its targets: CPU <= 1/10 of glances' and RSS <= 1/4 of it; with
# graphs on, CPU <= 1/2 of btop's; the graphs and their 10-minute ring add <= 2 MiB RSS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
idle=${1:-450}
seconds=${2:-90}
baton=${BATON:-$root/build/src/cli/baton}
[ -x "$baton" ] || { echo "run scripts/test.sh first" >&2; exit 2; }
"$root/scripts/apt-install.sh" glances btop tmux

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
# baton's two configurations; btop's own (its default refresh is 2 s: the same 1 s as the others here).
printf '[top]\ngraphs = true\nhistory = "10m"\n' > "$work/graphs.toml"
printf '[top]\ngraphs = false\nhistory = "1m"\n' > "$work/plain.toml"
mkdir -p "$work/xdg/btop"
printf 'update_ms = 1000\n' > "$work/xdg/btop/btop.conf"
nproc_now=$(ls -d /proc/[0-9]* | wc -l)
b=$(measure baton "$baton --config $work/graphs.toml top -d 1")
p=$(measure baton-plain "$baton --config $work/plain.toml top -d 1")
g=$(measure glances "glances -t 1 --disable-check-update")
t=$(measure btop "env XDG_CONFIG_HOME=$work/xdg LANG=C.UTF-8 btop --utf-force")

/usr/bin/python3 - "$nproc_now" "$seconds" "$b" "$p" "$g" "$t" <<'PY'
import sys
n, seconds = sys.argv[1], float(sys.argv[2])
(bc, br), (pc, pr), (gc, gr), (tc, tr) = [(float(x.split()[1]), int(x.split()[2])) for x in sys.argv[3:7]]
ratio = lambda a, b: a / b if b else float("inf")
checks = [
    ("baton / glances CPU", ratio(bc, gc), 0.1),
    ("baton / glances RSS", ratio(br, gr), 0.25),
    ("baton / btop CPU (graphs on)", ratio(bc, tc), 0.5),
]
graphs_mib = (br - pr) / 1024
print(f"live view at 1 s refresh for {seconds:.0f} s, {n} processes (CPU % of one core over the run; peak RSS)")
print(f"  baton top -d 1, graphs on, 10 min history  {100 * bc / seconds:6.2f} % CPU  {br / 1024:7.1f} MiB")
print(f"  baton top -d 1, graphs off, 1 min history  {100 * pc / seconds:6.2f} % CPU  {pr / 1024:7.1f} MiB")
print(f"  glances -t 1                               {100 * gc / seconds:6.2f} % CPU  {gr / 1024:7.1f} MiB")
print(f"  btop, update_ms = 1000                     {100 * tc / seconds:6.2f} % CPU  {tr / 1024:7.1f} MiB")
ok = True
for name, value, target in checks:
    met = value <= target
    ok &= met
    print(f"  {name:30s} {value:6.3f} x (target <= {target}: {'met' if met else 'MISSED'})")
met = graphs_mib <= 2
ok &= met
print(f"  {'graphs and their ring add':30s} {graphs_mib:6.2f} MiB RSS (target <= 2: {'met' if met else 'MISSED'})")
sys.exit(0 if ok else 1)
PY
