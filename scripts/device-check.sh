#!/usr/bin/env bash
# The prepared check for a machine with an NVIDIA GPU (design.md, "Testing ... with one").
#
# Runs a copied baton binary's real NVML path against nvidia-smi (and nvidia-ml-py when it
# is importable) while a short PyTorch matmul load keeps the GPUs busy, compares every field
# both report; then watches an input-bound PyTorch training loop with `baton run --report`
# (scripts/device_train.py: what does baton find, and what does its report show), runs `baton
# doctor` against the real driver and PyTorch, runs a job through the queue on one GPU and the
# queue's throughput bench, `baton launch` with one rank per GPU and its start-up bench against
# torchrun, the hang verdict's Flight Recorder path on NCCL (the dump kept as a fixture) and the
# recorder's cost, a profiler window of a loop with a sync per step, pageable copies and fp32
# matmuls and of the same loop fixed (baton run --profile, baton compare; the trace kept as a fixture), a
# batch that doubles until CUDA runs out of memory under `baton run --memory-history` (the breakdown
# against PyTorch's own figures; the capture kept as a fixture) and the cost of the per-step memory
# figures and of the history, `baton bench h2d` against PyTorch's own copy bandwidth (and allreduce, and the
# summary's time), and records the real GPUs as a fake-NVML scenario
# so CI can replay them. Everything it prints is also written to OUT/device-check.log; keep that log under
# docs/device-runs/ and the scenario under tests/fake_nvml/scenarios/.
#
# Usage:
#   scripts/device-check.sh [BATON_BINARY] [OUT_DIR]    on the GPU machine (about 2 minutes)
#   scripts/device-check.sh --fake [OUT_DIR]            here: the same pipeline against the
#                                                        fake NVML and a fake nvidia-smi
# Exit status: 0 when every compared field agrees, 1 otherwise, 2 on bad usage.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fake=0
if [ "${1:-}" = "--fake" ]; then
  fake=1
  shift
  build=${BATON_BUILD_DIR:-$root/build}
  baton=$build/src/cli/baton
  export BATON_NVML_LIBRARY=$build/tests/fake_nvml/r535-records/libnvidia-ml.so.1
  export BATON_FAKE_NVML_SCENARIO=$root/tests/fake_nvml/scenarios/r535-records.json
  smi=$root/tests/fake_nvml/fake-nvidia-smi
else
  baton=${1:-$root/build/src/cli/baton}
  shift || true
  smi=${NVIDIA_SMI:-nvidia-smi}
fi
out=${1:-$root/device-check-$(date -u +%Y%m%dT%H%M%SZ)}
python=$(command -v python3 || true)
[ -x "$baton" ] || { echo "device-check: no baton binary at $baton" >&2; exit 2; }
[ -n "$python" ] || { echo "device-check: python3 is needed for the comparison" >&2; exit 2; }
mkdir -p "$out"
exec > >(tee "$out/device-check.log") 2>&1

say() { printf '\n== %s\n' "$*"; }
load_pid=""
cleanup() { [ -z "$load_pid" ] || kill "$load_pid" 2>/dev/null; }
trap cleanup EXIT

say "machine"
echo "date: $(date -u +%FT%TZ)  host: $(hostname)  kernel: $(uname -r)"
"$baton" --version
"$smi" | head -15

lib=${BATON_NVML_LIBRARY:-libnvidia-ml.so.1}
if [ $fake -eq 0 ] && "$python" -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  say "load: PyTorch matmul on every GPU for 45 s"
  "$python" - <<'PY' &
import time, torch
n = torch.cuda.device_count()
xs = [torch.randn(8192, 8192, device=f"cuda:{i}", dtype=torch.float16) for i in range(n)]
end = time.time() + 45
while time.time() < end:
    for x in xs:
        y = x @ x
    torch.cuda.synchronize()
PY
  load_pid=$!
  sleep 15  # CUDA context creation and clocks ramping up
else
  say "load: none (no CUDA PyTorch here${fake:+; fake mode})"
fi

status=0
for round in 1 2 3; do
  say "round $round: nvidia-smi and baton, back to back"
  "$smi" --query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu \
    --format=csv,noheader,nounits > "$out/smi-gpu-$round.csv"
  "$smi" --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits > "$out/smi-apps-$round.csv"
  "$baton" snapshot --json > "$out/baton-$round.jsonl"
  "$python" "$root/scripts/device_check.py" compare "$out/baton-$round.jsonl" "$out/smi-gpu-$round.csv" \
    "$out/smi-apps-$round.csv" || status=1
  sleep 2
done

# The GPU panel's fields (`baton top`'s `e`): clocks against their maxima, fan, video engines, PCIe
# link, ECC, retired pages and remapped rows, modes, NVLinks up. In fake mode, also on the
# scenarios that have what r535-records lacks (a fan, remapped rows, NVLinks, MIG, retired pages).
panel_check() {  # NAME: one panel comparison, files under $out/panel-NAME.*
  local name=$1 fields
  fields=$("$python" "$root/scripts/device_check.py" panel-fields)
  if ! "$smi" --query-gpu="uuid,$fields" --format=csv,noheader,nounits > "$out/panel-$name.csv" 2> "$out/panel-$name.err"; then
    echo "nvidia-smi refused the panel query: $(head -1 "$out/panel-$name.err")"
    return 1
  fi
  "$smi" nvlink -s > "$out/panel-$name-nvlink.txt" 2>&1 || true  # fails on a GPU without NVLink
  "$baton" snapshot --json --no-processes > "$out/panel-$name.jsonl" &&
    "$python" "$root/scripts/device_check.py" panel "$out/panel-$name.jsonl" "$out/panel-$name.csv" \
      "$out/panel-$name-nvlink.txt"
}
say "GPU panel fields: nvidia-smi and baton"
panel_check gpu || status=1
if [ $fake -eq 1 ]; then
  for scenario in throttled eight-busy mig no-v3; do
    say "GPU panel fields, fake scenario $scenario"
    BATON_NVML_LIBRARY=$build/tests/fake_nvml/$scenario/libnvidia-ml.so.1 \
      BATON_FAKE_NVML_SCENARIO=$root/tests/fake_nvml/scenarios/$scenario.json panel_check "$scenario" || status=1
  done
fi

if "$python" -c "import pynvml" 2>/dev/null; then
  say "nvidia-ml-py cross-check (memory, MiB)"
  # nvmlDeviceGetMemoryInfo (v1) counts the driver's reserved memory as used; baton reads the v2
  # struct, like nvidia-smi, and reports the reserved part on its own: v1 used = baton used + reserved.
  "$python" - "$out/baton-3.jsonl" <<'PY' || status=1
import json, sys, pynvml
pynvml.nvmlInit()
snap = json.loads(open(sys.argv[1]).read().splitlines()[-1])
bad = 0
for g in snap["gpus"]:
    h = pynvml.nvmlDeviceGetHandleByUUID(g["uuid"])
    v1 = pynvml.nvmlDeviceGetMemoryInfo(h).used // 2**20
    used = g.get("memory_used_bytes", 0) // 2**20
    reserved = g.get("memory_reserved_bytes", 0) // 2**20
    ok = abs(v1 - used - reserved) <= 2
    bad += not ok
    print(f"GPU{g['index']}: nvidia-ml-py v1 used {v1}  baton used {used} + reserved {reserved}  {'ok' if ok else 'MISMATCH'}")
sys.exit(1 if bad else 0)
PY
fi

say "baton snapshot (text)"
"$baton" snapshot --top 5
say "baton snapshot --prometheus (GPU lines)"
"$baton" snapshot --prometheus --no-processes | grep '^baton_gpu' | head -40
say "baton serve: one scrape of the node agent (GPU lines, findings, energy) and its health"
[ -n "$python" ] && "$python" - "$baton" "$out" <<'PY' || status=1
import re, subprocess, sys, time, urllib.request
baton, out = sys.argv[1], sys.argv[2]
log = open(out + "/serve.log", "w+")
agent = subprocess.Popen([baton, "serve", "--listen", "127.0.0.1:0", "--no-db", "--dcgm-compat"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
try:
    port = None
    for _ in range(100):
        log.seek(0)
        m = re.search(r"serving on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            port = m.group(1)
            break
        time.sleep(0.1)
    if not port:
        sys.exit("baton serve did not start: " + open(out + "/serve.log").read())
    time.sleep(3)
    base = "http://127.0.0.1:" + port
    metrics = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    wanted = re.compile(r"^(baton_gpu_(utilization|memory_used|power|energy|throttle_active|sm_activity)|baton_finding_active|DCGM_FI_DEV_(GPU_UTIL|FB_USED|POWER_USAGE))")
    for line in metrics.splitlines():
        if wanted.match(line):
            print(line)
    print(urllib.request.urlopen(base + "/api/v1/health", timeout=10).read().decode().strip())
finally:
    agent.terminate()
    agent.wait(10)
PY
say "baton top --once (one frame of the live view)"
"$baton" top --once --width 120 --height 30 || status=1

say "baton run: a training loop watched end to end (history in $out/history.db)"
if [ $fake -eq 0 ] && [ -n "$load_pid" ]; then
  wait "$load_pid" 2>/dev/null  # the matmul load would hide the training's own GPU use
  load_pid=""
  train=("$python" "$root/scripts/device_train.py" 45 2)
else
  train=("$python" -c "import time
end = time.time() + 3
while time.time() < end: pass")  # a CPU stand-in: no CUDA PyTorch here
fi
rm -f "$out"/history.db*  # a fresh history: the run below is run 1
# Each process's CPU mid-run (the input_bound rule counts the workers, not the waiting trainer).
(sleep $(( ${#train[@]} > 3 ? 35 : 2 )); "$baton" snapshot --top 6 > "$out/mid-run.txt") &
mid_pid=$!
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$baton" run --db "$out/history.db" --interval 0.5 --name device-check --report "$out/report.html" -- "${train[@]}"
echo "baton run exit status: $?"
echo "-- the hook's steps in the history:"
"$python" - "$out/history.db" <<'PY' || status=1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, wait, total = db.execute("SELECT COUNT(*), SUM(wait_ms), SUM(step_ms) FROM steps").fetchone()
print(f"{n} steps, data wait {100 * (wait or 0) / (total or 1):.0f} % of step time")
row = db.execute("SELECT step, data FROM steps WHERE data IS NOT NULL ORDER BY step LIMIT 1 OFFSET 1").fetchone()
print("with CUDA figures, e.g. step", row[0], row[1]) if row else print("no step carried CUDA figures")
PY
wait "$mid_pid"
echo "-- mid-run snapshot:"
cat "$out/mid-run.txt"
"$baton" runs --db "$out/history.db" || status=1
"$baton" runs show 1 --db "$out/history.db" || status=1
echo "-- baton report 1 --markdown:"
"$baton" report 1 --db "$out/history.db" --markdown || status=1
[ -s "$out/report.html" ] || { echo "MISMATCH: no HTML report"; status=1; }

if [ $fake -eq 0 ] && "$python" -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  say "a hostile process name on the GPU: two jobs share GPU0, one named ESC]2;PWNED BEL ESC[2J"
  # The name comes from /proc joined to NVML's process list: every text view must print it inert.
  hostile_job() {
    "$python" - "$1" <<'PY' &
import ctypes, sys, time, torch
if sys.argv[1] == "hostile":
    ctypes.CDLL(None).prctl(15, b"\x1b]2;PWNED\x07\x1b[2J", 0, 0, 0)  # PR_SET_NAME
x = torch.randn(4096, 4096, device="cuda:0")
end = time.time() + 20
while time.time() < end:
    y = x @ x
torch.cuda.synchronize()
PY
  }
  hostile_job hostile; h1=$!
  hostile_job plain; h2=$!
  sleep 8  # both hold a context and compute
  "$baton" diagnose --duration 6 --interval 0.5 > "$out/hostile-diagnose.txt" 2>&1
  "$baton" snapshot --top 8 > "$out/hostile-snapshot.txt" 2>&1
  "$baton" snapshot --json > "$out/hostile-snapshot.jsonl" 2>&1
  kill "$h1" "$h2" 2>/dev/null; wait "$h1" "$h2" 2>/dev/null
  cat "$out/hostile-diagnose.txt"
  "$python" - "$out" <<'PY' || status=1
import json, sys
out = sys.argv[1]
bad = 0
for name in ("hostile-diagnose.txt", "hostile-snapshot.txt"):
    data = open(f"{out}/{name}", "rb").read()
    controls = [b for b in data if (b < 0x20 and b not in (9, 10)) or b == 0x7F]
    print(f"{name}: {len(controls)} control bytes, names it: {b']2;PWNED' in data}")
    bad += bool(controls)
snap = json.loads(open(f"{out}/hostile-snapshot.jsonl", encoding="utf-8").read())
names = [p["name"] for p in snap["processes"] if "PWNED" in p["name"]]
print(f"snapshot --json: parsed, the process named {names!r}")
bad += not names
sys.exit(1 if bad else 0)
PY
fi

say "baton run --profile: a loop with a sync per step, pageable copies and fp32 matmuls, then fixed (issue 33)"
# The same loop twice (scripts/device_profile_train.py): with the mistakes, then as the findings advise;
# each records a profiler window inside the hook, and baton compare prints the two. The first window's
# trace is kept as a fixture (tests/fixtures/profile/) with its verdicts. Runs 2 and 3 of the history.
psteps=$(( fake ? 20 : 120 ))
pyprof="$python"
[ $fake -eq 0 ] || pyprof=/usr/bin/python3  # Debian's, with python3-torch (CPU)
for mode in bad fixed; do
  PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
    "$baton" run --db "$out/history.db" --quiet --name "profile-$mode" --profile -- \
    "$pyprof" "$root/scripts/device_profile_train.py" "$mode" "$psteps" > "$out/profile-$mode.txt" 2>&1
  echo "baton run --profile ($mode) exit status: $?"
  grep -E "^baton profile:|^Step:|^  (GEMM|idle|copy|DataLoader|sync)|^(WARNING|INFO) |no window" "$out/profile-$mode.txt" ||
    { echo "MISMATCH: no profile window in the $mode run"; status=1; }
done
"$baton" profile show 2 --db "$out/history.db" --json > "$out/profile-bad.json"
"$baton" compare 2 3 --db "$out/history.db" || status=1
"$python" - "$out" <<'PY' || status=1
import json, sqlite3, sys
out = sys.argv[1]
verdict = json.load(open(f"{out}/profile-bad.json"))
rules = sorted(f["rule"] for f in verdict["findings"])
print(f"the bad loop's window: {len(verdict['steps'])} steps, format {verdict['format']}, GPUs {verdict['devices']}, "
      f"findings {rules}")
db = sqlite3.connect(f"{out}/history.db")
trace = db.execute("SELECT trace FROM run_profiles WHERE run_id = 2").fetchone()[0]
open(f"{out}/profile-trace-bad.json.gz", "wb").write(trace)  # for tests/fixtures/profile/
print(f"kept the trace: {len(trace)} bytes gzipped")
sys.exit(0 if verdict["steps"] else 1)
PY

say "baton run --memory-history: a batch that doubles until CUDA runs out of memory (issue 34)"
# scripts/device_oom_train.py grows the batch until the error and writes what PyTorch itself says of its
# memory at that moment; baton explains the failure from the hook's capture. The breakdown must match
# PyTorch's own figures within 5 %; the capture (trimmed) is kept for tests/fixtures/gpu_memory/. In fake
# mode the fake allocator of python/tests/ stands in (no PyTorch figures to compare).
if [ $fake -eq 0 ]; then
  PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" "$baton" run --db "$out/history.db" --quiet --name oom \
    --memory-history -- "$python" "$root/scripts/device_oom_train.py" grow "$out/oom-torch.json" > "$out/oom.txt" 2>&1
else
  PYTHONPATH="$root/python" "$baton" run --db "$out/history.db" --quiet --name oom --memory-history -- \
    /usr/bin/python3 "$root/python/tests/oom_train.py" > "$out/oom.txt" 2>&1
fi
echo "baton run --memory-history (the growing batch) exit status: $? (1: the OOM ended it)"
grep -E "^batch |cuda_oom|fix:" "$out/oom.txt" | tail -8
"$python" - "$out" "$baton" <<'PY' || status=1
import json, os, sqlite3, subprocess, sys
out, baton = sys.argv[1], sys.argv[2]
db = sqlite3.connect(f"{out}/history.db")
run = db.execute("SELECT id FROM runs WHERE name = 'oom' ORDER BY id DESC").fetchone()[0]
shown = json.loads(subprocess.run([baton, "runs", "show", str(run), "--json", "--db", f"{out}/history.db"],
                                  capture_output=True, text=True).stdout)
oom = [f for f in shown["finding_list"] if f["rule"] == "cuda_oom"]
if not oom:
    print("MISMATCH: no cuda_oom finding"); sys.exit(1)
figures = {e["metric"]: e["maximum"] for e in oom[0]["evidence"] if "maximum" in e}
print(f"cuda_oom: {oom[0]['summary']}")
for k in sorted(figures):
    if k.startswith("oom."):
        print(f"  {k} = {figures[k] / 2**30:.3f} GiB")
row = db.execute("SELECT capture FROM run_oom_captures WHERE run_id = ?", (run,)).fetchone()
if not row:
    print("MISMATCH: no capture kept"); sys.exit(1)
capture = json.loads(row[0])
uses = sum(v for k, v in figures.items() if k in ("oom.parameters_bytes", "oom.gradients_bytes",
           "oom.optimizer_state_bytes", "oom.model_state_bytes", "oom.activations_bytes", "oom.other_bytes"))
bad = False
def near(what, a, b):
    global bad
    ok = b > 0 and abs(a - b) <= 0.05 * b
    print(f"{what}: baton {a / 2**30:.3f} GiB, reference {b / 2**30:.3f} GiB: {'within 5 %' if ok else 'MISMATCH'}")
    bad |= not ok
near("the categories against the capture's allocated", uses, capture["stats"]["allocated_bytes"])
if os.path.exists(f"{out}/oom-torch.json"):
    torch_side = json.load(open(f"{out}/oom-torch.json"))
    near("allocated at the failure against torch.cuda.memory_stats()", capture["stats"]["allocated_bytes"],
         torch_side["allocated_bytes"])
    near("parameters against the model's", figures.get("oom.parameters_bytes", 0), torch_side["parameters_bytes"])
# The fixture: the capture with its newest 200 events (the history's length is the user's choice).
for i, t in enumerate(capture["snapshot"]["device_traces"]):
    capture["snapshot"]["device_traces"][i] = t[-200:]
json.dump(capture, open(f"{out}/oom-capture.json", "w"), separators=(",", ":"))
print(f"kept the capture: {os.path.getsize(out + '/oom-capture.json')} bytes (trimmed)")
sys.exit(1 if bad else 0)
PY
if [ $fake -eq 0 ]; then
  # What --memory-history costs a real loop, and what the per-step figures cost (bench/hook_overhead.sh's
  # "allocator figures (real CUDA)" line; target <= 0.5 % of a 10 ms step).
  for h in "" "--memory-history"; do
    PYTHONPATH="$root/python" "$baton" run --no-db --quiet $h -- "$python" "$root/scripts/device_oom_train.py" \
      steady 60 2>/dev/null | grep "median step" | sed "s/^/${h:-no history}: /"
  done
  PYTHONPATH="$root/python" "$baton" run --no-db --quiet --no-gpus -- "$python" "$root/bench/hook_overhead.py" 300 5 |
    grep -E "hook overhead|allocator figures"
fi

say "the queue: a job on one GPU, then the throughput bench (bench/queue_vs_task_spooler.py, issue 14)"
# An agent of its own (socket, history and config in a temporary directory), stopped by pid.
qdir=$(mktemp -d)
(
  export BATON_SOCKET=$qdir/baton.sock XDG_STATE_HOME=$qdir XDG_CONFIG_HOME=$qdir BATON_SYSTEM_CONFIG=/dev/null
  "$baton" serve --no-http --interval 0.5 2> "$out/queue-agent.log" &
  agent=$!
  for _ in $(seq 100); do [ -S "$BATON_SOCKET" ] && break; sleep 0.1; done
  if [ $fake -eq 0 ] && "$python" -c "import torch" 2>/dev/null; then
    # The job sees exactly the GPU the queue gave it, numbered as nvidia-smi numbers it.
    id=$("$baton" submit --gpus 1 --name device-queue -- "$python" -c \
      "import os, torch; print(os.environ['CUDA_VISIBLE_DEVICES'], os.environ['CUDA_DEVICE_ORDER'], torch.cuda.device_count(), torch.cuda.get_device_name(0))")
  else
    id=$("$baton" submit --name device-queue -- sh -c 'echo "${CUDA_VISIBLE_DEVICES:-none}"')
  fi
  timeout 180 "$baton" wait "$id"; echo "job $id: exit status $?"
  "$baton" show "$id"
  echo "-- its stdout:"; "$baton" logs "$id"
  "$baton" logs "$id" | "$python" -c "
import sys
w = sys.stdin.read().split()
ok = len(w) >= 3 and w[0].isdigit() and w[1] == 'PCI_BUS_ID' and w[2] == '1' if $((1 - fake)) else w == ['none']
print('the job saw the GPUs the queue gave it: ' + ' '.join(w) if ok else 'MISMATCH: the job saw ' + repr(w))
sys.exit(0 if ok else 1)" || exit 1
  kill "$agent"; wait "$agent"
) || status=1
rm -rf "$qdir"
if [ $fake -eq 0 ]; then
  BATON=$baton "$python" "$root/bench/queue_vs_task_spooler.py" 1000 50 || echo "(bench targets missed: informational)"
else
  BATON=$baton "$python" "$root/bench/queue_vs_task_spooler.py" 100 5 || echo "(bench targets missed: informational)"
fi

say "baton launch: one rank per GPU (--bind-gpus), an all_reduce over NCCL (gloo against the fake), issue 15"
ldir=$(mktemp -d)
if [ $fake -eq 0 ] && "$python" -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  cat > "$ldir/rank.py" <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
assert torch.cuda.device_count() == 1, torch.cuda.device_count()  # exactly its own GPU
t = torch.ones(1, device="cuda:0") * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']} "
      f"{torch.cuda.get_device_name(0)} sum {t.item():.0f}")
dist.destroy_process_group()
PY
  "$baton" launch --no-db --python "$python" --nproc-per-node gpu --bind-gpus --tee --log-dir "$ldir/logs" \
    "$ldir/rank.py" || status=1
else
  "$baton" launch --no-db --nproc-per-node gpu --bind-gpus --tee --log-dir "$ldir/logs" --no-python \
    sh -c 'echo "local rank $LOCAL_RANK of $LOCAL_WORLD_SIZE: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"' || status=1
fi
rm -rf "$ldir"
BATON=$baton "$python" "$root/bench/launch_vs_torchrun.py" 3 4 || echo "(bench target missed or torchrun absent: informational)"

say "the hang verdict's NCCL path: the Flight Recorder's variables, a dump asked for by its pipe and read (issue 32)"
# One rank (one GPU is enough): 20 all_reduces with the hook's steps, then it sleeps. The verdict looks
# after --hang-seconds, asks the rank's Flight Recorder for a dump through its pipe, reads it, and
# stops the job (124); with NCCL and PyTorch 2.3+ it says the dump has no collective pending (it was
# read), with gloo or an older PyTorch "no Flight Recorder pipe". The dump is kept as a fixture.
hdir=$(mktemp -d)
cat > "$hdir/hang_rank.py" <<'PY'
import os, sys, time, torch, torch.distributed as dist
import baton.torch
backend = sys.argv[1]
dist.init_process_group(backend)
dev = "cuda:0" if backend == "nccl" else "cpu"
names = ["TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT",
         "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"]
print(f"torch {torch.__version__}, {backend}; " + " ".join(f"{n}={os.environ.get(n, '<unset>')}" for n in names),
      flush=True)
t = torch.ones(1024, device=dev)
for _ in range(20):
    dist.all_reduce(t)
    baton.torch.step()
if dev != "cpu":
    torch.cuda.synchronize()
time.sleep(3600)  # no step from here: the verdict looks
PY
hpython=$python
backend=gloo
if [ $fake -eq 0 ] && "$python" -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  backend=nccl
elif ! "$hpython" -c "import torch" 2>/dev/null && [ -x /usr/bin/python3 ]; then
  hpython=/usr/bin/python3  # Debian's, with python3-torch (CPU)
fi
if "$hpython" -c "import torch" 2>/dev/null; then
  PYTHONPATH="$root/python" timeout 180 "$baton" launch --no-db --python "$hpython" --nproc-per-node 1 \
    --hang-seconds 10 --on-hang stop --log-dir "$hdir/logs" --run-id fr --tee "$hdir/hang_rank.py" "$backend" \
    > "$hdir/out.txt" 2>&1
  rc=$?
  cat "$hdir/out.txt"
  echo "baton launch exit status: $rc (124: stopped on the hang)"
  [ $rc -eq 124 ] || status=1
  grep -q "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1" "$hdir/out.txt" ||
    { echo "MISMATCH: the Flight Recorder's variables are not in the rank's environment"; status=1; }
  if [ "$backend" = nccl ]; then
    if grep -q "stacks only: the Flight Recorder dumps have no collective pending" "$hdir/out.txt"; then
      echo "the rank's Flight Recorder dump was asked for, written by PyTorch and read"
    elif grep -q "no Flight Recorder pipe" "$hdir/out.txt"; then
      echo "this PyTorch has no Flight Recorder pipe (before 2.3?): stacks only, as documented"
    else
      echo "MISMATCH: no word of the Flight Recorder in the verdict"; status=1
    fi
    [ -f "$hdir/logs/fr/stacks/fr/rank_0" ] && cp "$hdir/logs/fr/stacks/fr/rank_0" "$out/flight-recorder-rank_0.pickle" &&
      echo "kept the dump: $out/flight-recorder-rank_0.pickle (a fixture for tests/fixtures/flight_recorder/)"
    # What the recorder costs a healthy job: 5000 small all_reduces with it on (baton's default) and off.
    cat > "$hdir/fr_cost.py" <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
t = torch.ones(1, device="cuda:0")
for _ in range(200):
    dist.all_reduce(t)
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(5000):
    dist.all_reduce(t)
torch.cuda.synchronize()
print(f"FR_COST {os.environ.get('TORCH_NCCL_TRACE_BUFFER_SIZE')} {(time.perf_counter() - start) / 5000 * 1e6:.2f} us")
dist.destroy_process_group()
PY
    for size in 2000 0; do
      TORCH_NCCL_TRACE_BUFFER_SIZE=$size TORCH_FR_BUFFER_SIZE=$size timeout 120 "$baton" launch --no-db \
        --python "$hpython" --nproc-per-node 1 --log-dir "$hdir/cost" "$hdir/fr_cost.py" 2>&1 | grep FR_COST
    done
    echo "(all_reduce of one float per call, Flight Recorder of 2000 entries against none: informational)"
  else
    grep -q "stacks only: no Flight Recorder pipe\|stacks only: the Flight Recorder dumps have no collective pending" \
      "$hdir/out.txt" || { echo "MISMATCH: the verdict does not say it judged by the stacks"; status=1; }
  fi
else
  echo "no PyTorch here: skipped"
fi
rm -rf "$hdir"

say "baton bench: h2d against PyTorch's own copies, allreduce with 2+ GPUs, the summary's time (issue 16)"
if [ $fake -eq 0 ] && "$python" -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  "$baton" bench h2d --no-db --json > "$out/bench-h2d.json" || status=1
  "$baton" bench h2d --no-db --max-size 64M | tail -8
  CUDA_DEVICE_ORDER=PCI_BUS_ID "$python" "$root/scripts/device_bench_check.py" < "$out/bench-h2d.json" || status=1
  if [ "$("$python" -c 'import torch; print(torch.cuda.device_count())')" -ge 2 ]; then
    "$baton" bench allreduce --no-db --python "$python" || status=1
  else
    echo "one GPU: no allreduce (bench allreduce needs 2 or more)"
  fi
else
  # The same commands against the fake CUDA driver and NCCL, on the fake NVML's GPUs.
  fake_cuda=$build/tests/fake_cuda
  buses=$("$python" -c "import json,sys; print(','.join(sorted(d['values']['pci_bus_id'][4:].upper() for d in json.load(open(sys.argv[1]))['devices'])))" "$BATON_FAKE_NVML_SCENARIO")
  gpus=$(echo "$buses" | tr ',' '\n' | wc -l)
  export BATON_CUDA_LIBRARY=$fake_cuda/libcuda.so.1 BATON_NCCL_LIBRARY=$fake_cuda/libnccl.so.2 \
    BATON_FAKE_CUDA_BUS_IDS=$buses BATON_FAKE_CUDA_DEVICES=$gpus BATON_FAKE_CUDA_GBPS=2 BATON_FAKE_NCCL_ALGBW_GBPS=4
  "$baton" bench h2d --no-db --max-size 4M | tail -6 || status=1
  if [ "$gpus" -ge 2 ]; then
    "$baton" bench allreduce --no-db --max-size 1M --iters 2 || status=1
  else
    echo "one GPU: no allreduce (bench allreduce needs 2 or more)"
  fi
fi
SECONDS=0
"$baton" bench --no-db --path "${TMPDIR:-/tmp}" || status=1
echo "baton bench (no subcommand) took about $SECONDS s (target: at most 60 s)"

say "baton tune on the GPU: the same loop with no worker, tuned; then baton run --tuned (before and after)"
# The loop of "baton run" above with num_workers=0: its GPU waits for the per-sample CPU work, so more
# workers must win, measured; `baton run --tuned` then applies the winner with no code change. Its
# steps, GPU utilisation and energy before and after are printed (and the JSON kept for fixtures). The
# script leaves its steps to the automatic hook (DEVICE_TRAIN_NO_HOOK=1), so torch 2.x's optimizer
# post-hook path runs on a real PyTorch. Not in fake mode: its CPU stand-in would take minutes.
if [ $fake -eq 0 ]; then
  DEVICE_TRAIN_NO_HOOK=1 "$baton" tune --db "$out/history.db" --budget 3m --steps 20 --json -- \
    "$python" "$root/scripts/device_train.py" 600 0 > "$out/tune.json" 2> "$out/tune.txt"
  echo "baton tune exit status: $?"
  grep "^baton tune: trial" "$out/tune.txt" | head -20
  for mode in plain tuned; do
    flag=""; [ $mode = tuned ] && flag=--tuned
    DEVICE_TRAIN_NO_HOOK=1 "$baton" run $flag --db "$out/history.db" --name "tune-$mode" --quiet \
      --summary-json "$out/tune-$mode.json" -- "$python" "$root/scripts/device_train.py" 30 0 > /dev/null 2>&1
  done
  "$python" - "$out" <<'PY' || status=1
import json, sys
out = sys.argv[1]
r = json.load(open(f"{out}/tune.json"))
print("winner:", r["winner"]["label"] if r["winner"] else None, "gain", r["winner"]["gain"] if r["winner"] else None)
for mode in ("plain", "tuned"):
    s = json.load(open(f"{out}/tune-{mode}.json"))
    g = s["gpus"][0] if s["gpus"] else {}
    print(f"{mode}: steps {s.get('steps', {}).get('count')} ({s.get('steps', {}).get('source')}), "
          f"{s.get('steps', {}).get('samples_per_second')} samples/s, GPU {g.get('utilization_avg_percent')} %, "
          f"energy {s.get('energy')}")
auto = json.load(open(f"{out}/tune-plain.json")).get("steps", {}).get("source") == "auto"
print("steps found with no code change:", auto)
sys.exit(0 if r["winner"] and auto else 1)
PY
else
  echo "(fake mode: skipped; tests/cli/tune/tune_test.py covers baton tune on the CPU)"
fi

say "baton tune on PyTorch's MNIST example on the GPU, unchanged: whole epochs before and after (bench/tune_example.py)"
# On the GPU the example loads with one worker (its CUDA settings) and the step is short: the loader is
# the limit there, where on the CPU the threads were. Its table and the epochs' figures are printed.
if [ $fake -eq 0 ] && "$python" -c "import torchvision" 2>/dev/null; then
  "$python" "$root/bench/tune_example.py" --baton "$baton" --python "$python" --budget 2m | tee "$out/tune-example.txt" ||
    status=1
else
  echo "(skipped: fake mode, or no torchvision for $python; the CPU's figures are in docs/tune.md)"
fi

say "baton doctor (informational: its exit status does not count here)"
"$baton" doctor --python "$python" --timeout 120
echo "baton doctor exit status: $?"

if "$python" -c "import torch" 2>/dev/null; then
  say "the Python package's CUDA paths (find_batch_size's memory band, check() on a CUDA model)"
  PYTHONPATH="$root/python" "$python" "$root/scripts/device_hook_check.py" || status=1
fi

say "recording the GPUs as a fake-NVML scenario"
name=$("$baton" snapshot --json --no-processes | "$python" -c \
  "import json,sys; g=json.load(sys.stdin)['gpus']; print((g[0]['name'] if g else 'none').lower().replace('nvidia ','').replace(' ','-'))")
"$python" "$root/scripts/device_check.py" record "$lib" "$out/recorded-$name.json" 6 0.5 || status=1

say "result: $([ $status -eq 0 ] && echo 'every compared field agrees' || echo 'MISMATCHES above')"
exit $status
