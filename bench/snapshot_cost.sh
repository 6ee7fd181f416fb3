#!/usr/bin/env bash
# Side-by-side CPU cost of one full snapshot: baton vs psutil vs a pread floor.
#
# Spawns IDLE extra idle processes (default 450; removed on exit), then measures each tool's
# CPU time (user + system, from wait4) for BASE and BASE+COUNT snapshots taken back to back;
# the difference divided by COUNT is the cost of one snapshot without start-up costs.
# Each figure is the median of REPEAT repetitions (default 5). baton reads 8 GPUs through the fake NVML
# (tests/fake_nvml, scenario eight-busy); psutil has no GPU support. baton runs twice: as shipped (idle
# processes' stat reads skipped, docs/architecture.md) and with skip_idle_processes = false, which reads
# every /proc/PID/stat like the floor does: the second shows what everything but the kernel's stat costs.
#
# With BASELINE=PATH (another baton binary, e.g. one built from an older commit in a worktree),
# each repetition also measures that binary right after this one, and the report adds this/baseline
# medians: a change's cost measured within each repetition rather than across runs on a noisy VM.
#
# Usage: bench/snapshot_cost.sh [IDLE] [COUNT] [REPEAT]     (after scripts/test.sh: it builds the fake NVML)
# Exit status: 0 when baton meets its targets (<= 1.5 x floor; system-only < 0.2 ms), 1 otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
idle=${1:-450}
count=${2:-200}
repeat=${3:-5}
base=20
baton=${BATON:-$root/build/src/cli/baton}
python=/usr/bin/python3
export BATON_NVML_LIBRARY=$root/build/tests/fake_nvml/eight-busy/libnvidia-ml.so.1
export BATON_FAKE_NVML_SCENARIO=$root/tests/fake_nvml/scenarios/eight-busy.json
[ -x "$baton" ] && [ -f "$BATON_NVML_LIBRARY" ] || { echo "run scripts/test.sh first" >&2; exit 2; }

mkdir -p "$root/build/bench"
floor=$root/build/bench/floor_pread
cc -O2 -o "$floor" "$root/bench/floor_pread.c"

pids=()
cleanup() {
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  rm -f "${results:-}" "${full_config:-}"
}
trap cleanup EXIT
for ((i = 0; i < idle; i++)); do
  sleep 3600 &
  pids+=($!)
done
sleep 1

# cpu_seconds CMD...: CPU seconds of one run.
cpu_seconds() { "$python" "$root/bench/measure_cpu.py" "$@" | cut -d' ' -f1; }

# cost_ms BUILDER N: CPU ms of one snapshot, from one run of BASE and one of BASE+N
# snapshots (BUILDER N prints the command for N snapshots, one word per line).
cost_ms() {
  local builder=$1 n=$2 small large a b
  mapfile -t small < <("$builder" "$base")
  mapfile -t large < <("$builder" $((base + n)))
  a=$(cpu_seconds "${small[@]}")
  b=$(cpu_seconds "${large[@]}")
  "$python" -c "print(($b - $a) * 1000 / $n)"
}

cmd_floor() { printf '%s\n' "$floor" "$1"; }
cmd_baton() { printf '%s\n' "$baton" snapshot --json --interval 0 --count "$1"; }
cmd_baton_full() { printf '%s\n' "$baton" --config "$full_config" snapshot --json --interval 0 --count "$1"; }
cmd_baton_system() { printf '%s\n' "$baton" snapshot --json --interval 0 --no-processes --count "$1"; }
cmd_baton_system_nogpu() { printf '%s\n' "$baton" snapshot --json --interval 0 --no-processes --no-gpus --count "$1"; }
cmd_baseline() { printf '%s\n' "$BASELINE" snapshot --json --interval 0 --count "$1"; }
cmd_baseline_system() { printf '%s\n' "$BASELINE" snapshot --json --interval 0 --no-processes --count "$1"; }
cmd_psutil() { printf '%s\n' "$python" "$root/bench/psutil_snapshot.py" "$1"; }
cmd_psutil_system() { printf '%s\n' "$python" "$root/bench/psutil_snapshot.py" "$1" --no-processes; }

# The machine is noisy (a VM's steal time moves every figure by tens of percent), so each
# repetition measures the floor and baton back to back and the ratio is taken within the
# repetition; the report gives medians. psutil is ~50x slower, so it takes count/5 snapshots.
nproc_now=$(ls -d /proc/[0-9]* | wc -l)
results=$(mktemp)
full_config=$(mktemp)
printf '[sample]\nskip_idle_processes = false\n' > "$full_config"
for ((r = 0; r < repeat; r++)); do
  f=$(cost_ms cmd_floor "$count")
  b=$(cost_ms cmd_baton "$count")
  p=$(cost_ms cmd_psutil $((count / 5)))
  bs=$(cost_ms cmd_baton_system "$count")
  bsn=$(cost_ms cmd_baton_system_nogpu "$count")
  ps=$(cost_ms cmd_psutil_system "$count")
  bf=$(cost_ms cmd_baton_full "$count")
  if [ -n "${BASELINE:-}" ]; then
    bb=$(cost_ms cmd_baseline "$count")
    bbs=$(cost_ms cmd_baseline_system "$count")
  else
    bb=0 bbs=0
  fi
  echo "$f $b $p $bs $bsn $ps $bf $bb $bbs" >> "$results"
done

"$python" - "$nproc_now" "$count" "$repeat" "$results" "${BASELINE:-}" <<'PY'
import statistics, sys
n, count, repeat, path, baseline = sys.argv[1:]
rows = [list(map(float, line.split())) for line in open(path)]
med = lambda xs: statistics.median(xs)
floor, baton, psutil, bsys, bsys_nogpu, psys, bfull = (med([r[i] for r in rows]) for i in range(7))
ratio = med([r[1] / r[0] for r in rows])
spread = (min(r[1] / r[0] for r in rows), max(r[1] / r[0] for r in rows))
full_ratio = med([r[6] / r[0] for r in rows])
full_spread = (min(r[6] / r[0] for r in rows), max(r[6] / r[0] for r in rows))
full_ok = ratio <= 1.5
sys_ok = bsys < 0.2
print(f"snapshot cost, {n} processes, CPU ms per snapshot (medians of {repeat} repetitions, {count} snapshots each)")
print(f"  floor   pread of every /proc/PID/stat        {floor:8.3f}")
print(f"  baton   snapshot --json (+ 8 fake GPUs)      {baton:8.3f}   {ratio:5.2f} x floor [{spread[0]:.2f}..{spread[1]:.2f}]  (target <= 1.5: {'met' if full_ok else 'MISSED'})")
print(f"  baton   same, skip_idle_processes = false    {bfull:8.3f}   {full_ratio:5.2f} x floor [{full_spread[0]:.2f}..{full_spread[1]:.2f}]")
print(f"  psutil  same work, no GPUs                   {psutil:8.3f}   {psutil / baton:5.1f} x baton")
print(f"  baton   --no-processes (+ 8 fake GPUs)       {bsys:8.3f}   (target < 0.2: {'met' if sys_ok else 'MISSED'})")
print(f"  baton   --no-processes --no-gpus             {bsys_nogpu:8.3f}")
print(f"  psutil  system only                          {psys:8.3f}   {psys / bsys:5.1f} x baton")
if baseline:
    for label, i, j in (("snapshot --json", 1, 7), ("--no-processes", 3, 8)):
        r = [row[i] / row[j] for row in rows if row[j] > 0]
        print(f"  baseline {label:<17} {med([row[j] for row in rows]):8.3f}   this = {med(r):4.2f} x baseline [{min(r):.2f}..{max(r):.2f}]  ({baseline})")
sys.exit(0 if full_ok and sys_ok else 1)
PY
