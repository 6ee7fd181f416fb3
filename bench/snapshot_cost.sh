#!/usr/bin/env bash
# Side-by-side CPU cost of one full snapshot: baton vs psutil vs a pread floor.
#
# Spawns IDLE extra idle processes (default 450; removed on exit), then measures each tool's
# CPU time (user + system, from wait4) for BASE and BASE+COUNT snapshots taken back to back;
# the difference divided by COUNT is the cost of one snapshot without start-up costs.
# Each figure is the median of REPEAT runs. baton reads 8 GPUs through the fake NVML
# (tests/fake_nvml, scenario eight-busy); psutil has no GPU support.
#
# Usage: bench/snapshot_cost.sh [IDLE] [COUNT] [REPEAT]     (after scripts/setup.sh)
# Exit status: 0 when baton meets its targets (<= 1.5 x floor; system-only < 0.2 ms), 1 otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
idle=${1:-450}
count=${2:-200}
repeat=${3:-3}
base=20
baton=${BATON:-$root/build/src/cli/baton}
python=/usr/bin/python3
export BATON_NVML_LIBRARY=$root/build/tests/fake_nvml/eight-busy/libnvidia-ml.so.1
export BATON_FAKE_NVML_SCENARIO=$root/tests/fake_nvml/scenarios/eight-busy.json
[ -x "$baton" ] && [ -f "$BATON_NVML_LIBRARY" ] || { echo "run scripts/setup.sh first" >&2; exit 2; }

mkdir -p "$root/build/bench"
floor=$root/build/bench/floor_pread
cc -O2 -o "$floor" "$root/bench/floor_pread.c"

pids=()
cleanup() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
for ((i = 0; i < idle; i++)); do
  sleep 3600 &
  pids+=($!)
done
sleep 1

# cpu_seconds CMD...: CPU seconds of one run.
cpu_seconds() { "$python" "$root/bench/measure_cpu.py" "$@" | cut -d' ' -f1; }

# per_snapshot_ms BUILDER: BUILDER N prints the command for N snapshots, one word per line.
per_snapshot_ms() {
  local builder=$1 runs=()
  for ((r = 0; r < repeat; r++)); do
    mapfile -t small < <("$builder" "$base")
    mapfile -t large < <("$builder" $((base + count)))
    local a b
    a=$(cpu_seconds "${small[@]}")
    b=$(cpu_seconds "${large[@]}")
    runs+=("$("$python" -c "print(($b - $a) * 1000 / $count)")")
  done
  printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(((repeat + 1) / 2))p"
}

cmd_floor() { printf '%s\n' "$floor" "$1"; }
cmd_baton() { printf '%s\n' "$baton" snapshot --json --interval 0 --count "$1"; }
cmd_baton_system() { printf '%s\n' "$baton" snapshot --json --interval 0 --no-processes --count "$1"; }
cmd_baton_system_nogpu() { printf '%s\n' "$baton" snapshot --json --interval 0 --no-processes --no-gpus --count "$1"; }
cmd_psutil() { printf '%s\n' "$python" "$root/bench/psutil_snapshot.py" "$1"; }
cmd_psutil_system() { printf '%s\n' "$python" "$root/bench/psutil_snapshot.py" "$1" --no-processes; }

nproc_now=$(ls -d /proc/[0-9]* | wc -l)
floor_ms=$(per_snapshot_ms cmd_floor)
baton_ms=$(per_snapshot_ms cmd_baton)
psutil_ms=$(per_snapshot_ms cmd_psutil)
baton_sys_ms=$(per_snapshot_ms cmd_baton_system)
baton_sys_nogpu_ms=$(per_snapshot_ms cmd_baton_system_nogpu)
psutil_sys_ms=$(per_snapshot_ms cmd_psutil_system)

"$python" - "$nproc_now" "$floor_ms" "$baton_ms" "$psutil_ms" "$baton_sys_ms" "$baton_sys_nogpu_ms" "$psutil_sys_ms" "$count" "$repeat" <<'PY'
import sys
n, floor, baton, psutil, bsys, bsys_nogpu, psys, count, repeat = sys.argv[1:]
floor, baton, psutil, bsys, bsys_nogpu, psys = map(float, (floor, baton, psutil, bsys, bsys_nogpu, psys))
full_ok = baton <= 1.5 * floor
sys_ok = bsys < 0.2
print(f"snapshot cost, {n} processes, CPU ms per snapshot (median of {repeat}, {count} snapshots each)")
print(f"  floor   pread of every /proc/PID/stat        {floor:8.3f}")
print(f"  baton   snapshot --json (+ 8 fake GPUs)      {baton:8.3f}   {baton / floor:5.2f} x floor  (target <= 1.5: {'met' if full_ok else 'MISSED'})")
print(f"  psutil  same work, no GPUs                   {psutil:8.3f}   {psutil / baton:5.1f} x baton")
print(f"  baton   --no-processes (+ 8 fake GPUs)       {bsys:8.3f}   (target < 0.2: {'met' if sys_ok else 'MISSED'})")
print(f"  baton   --no-processes --no-gpus             {bsys_nogpu:8.3f}")
print(f"  psutil  system only                          {psys:8.3f}   {psys / bsys:5.1f} x baton")
sys.exit(0 if full_ok and sys_ok else 1)
PY
