#!/usr/bin/env bash
# GPU processes seen from inside a container: baton runs in a new pid (and mount) namespace
# (unshare --pid --fork --mount-proc) while the fake NVML reports the trainer by its outer (host)
# pid, as a real driver does in Docker. The trainer holds its GPU's device file open (a file
# standing in for /dev/nvidiaN, through [sample] dev_root) and has two workers that inherited it.
# Checked: the GPU process is tied to the trainer (local_pid, its GPU memory and index; not the
# workers), baton top shows no "(not in this pid namespace)" row for it, and shm_low sees the
# trainer's workers on a 64 MiB /dev/shm (Docker's default, a tmpfs mounted in the namespace).
# Needs root (unshare, mount): exit 77 (skipped) without.
#   container_test.sh BATON FAKE_NVML_LIBRARY FAKE_NVML_SCENARIO
set -euo pipefail
baton=$1
export BATON_NVML_LIBRARY=$2 BATON_FAKE_NVML_SCENARIO=$3
[ "$(id -u)" -eq 0 ] || { echo "SKIP: unshare --pid and mount need root"; exit 77; }
work=$(mktemp -d)
inner_pid=""
cleanup() {
  [ -n "${unshare_pid:-}" ] && kill "$unshare_pid" 2>/dev/null || true
  umount "$work/shm" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.txt "$work"/*.json; do [ -f "$f" ] && { echo "== $f"; head -c 3000 "$f"; echo; }; done; exit 1; }
mkdir -p "$work/dev" "$work/shm"
for n in 0 1 2 3 4 5 6 7; do : > "$work/dev/nvidia$n"; done
printf '[sample]\ndev_root = "%s/dev"\nshm_path = "%s/shm"\n' "$work" "$work" > "$work/baton.toml"
export BATON_FAKE_NVML_PROCESSES=$work/gpu-processes
: > "$BATON_FAKE_NVML_PROCESSES"
# The GPU's device file, as NVML numbers it (scenario one-idle: one GPU, no other process on it).
minor=$("$baton" --config "$work/baton.toml" snapshot --json --no-processes |
        python3 -c 'import json, sys; print(next(g["minor_number"] for g in json.load(sys.stdin)["gpus"] if g["index"] == 0))')

unshare --pid --fork --mount-proc sh -c '
  work=$1 baton=$2 minor=$3
  mount -t tmpfs -o size=64m tmpfs "$work/shm"
  sh -c "exec 3<$work/dev/nvidia$minor; sleep 60 & sleep 60 & wait" &
  trainer=$!
  for i in $(seq 200); do [ -f "$work/ready" ] && break; sleep 0.05; done
  echo "$trainer" > "$work/inner-pid.txt"
  "$baton" --config "$work/baton.toml" snapshot --json > "$work/inside.json" 2> "$work/snapshot-err.txt"
  "$baton" --config "$work/baton.toml" top --once --width 150 --height 40 --gpu-only > "$work/top.txt" 2>&1
  "$baton" --config "$work/baton.toml" diagnose --duration 1 --interval 0.5 --json > "$work/diagnose.json" 2>&1 || true
  kill $(cat /proc/$trainer/task/$trainer/children) "$trainer" 2>/dev/null
' sh "$work" "$baton" "$minor" &
unshare_pid=$!

# The trainer's outer pid: the process holding the file whose NSpid line has two pids.
outer=""
for i in $(seq 200); do
  for p in /proc/[0-9]*; do
    tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q "^sh -c exec 3<$work/dev/nvidia$minor" || continue
    ns=$(awk '/^NSpid:/ {print NF}' "$p/status" 2>/dev/null)
    [ "$ns" = 3 ] && outer=${p#/proc/} && break
  done
  [ -n "$outer" ] && break
  sleep 0.05
done
[ -n "$outer" ] || fail "the trainer did not start in the new namespace"
echo "0 $outer 5000000000" > "$BATON_FAKE_NVML_PROCESSES"
touch "$work/ready"
wait "$unshare_pid" || true
unshare_pid=""
inner=$(cat "$work/inner-pid.txt")
[ "$inner" != "$outer" ] || fail "the namespaces did not differ ($inner)"

python3 - "$work/inside.json" "$outer" "$inner" <<'PY' || fail "the GPU process was not tied to the trainer"
import json, sys
snap, outer, inner = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
gpu = next(g for g in snap["gpus"] if g["index"] == 0)
entry = next(p for p in gpu["processes"] if p["pid"] == outer)
assert entry.get("local_pid") == inner, entry
procs = {p["pid"]: p for p in snap["processes"]}
trainer = procs[inner]
assert trainer.get("gpu_memory_bytes") == 5000000000 and trainer.get("gpu_indices") == [0], trainer
workers = [p for p in snap["processes"] if p["ppid"] == inner]
assert len(workers) == 2 and all("gpu_indices" not in w for w in workers), workers
print(f"GPU0's host pid {outer} is the trainer, pid {inner} here: 5000000000 bytes; its 2 workers not")
PY
grep -q "not in this pid namespace" "$work/top.txt" && fail "baton top still lists it as an unseen process"
grep -Eq "^ *$inner .* 0 +4\.7G" "$work/top.txt" || fail "baton top's row for the trainer lacks GPU 0 and its memory"
grep -q '"rule":"shm_low"' "$work/diagnose.json" || fail "shm_low did not see the trainer's workers on a 64 MiB /dev/shm"
echo "PASS: in a new pid namespace, the trainer is tied to its GPU by its device file; top and shm_low see it"
