#!/usr/bin/env bash
# End to end: baton top --hosts inside a real terminal (tmux).
# 1. Golden screens: two stand-in agents that answer the same snapshot every time (fake_agent.py: the
#    fixture machine on the eight-busy and four-idle scenarios) and a port where nothing listens; the
#    pane after start, after g (free GPUs only) and after a filter is compared with tests/ui/golden/.
# 2. Live: a real agent stopped while the screen runs turns "down" without a key; Enter opens a host's
#    full view and Esc comes back; q quits at once although a silent host holds an ask for 10 s, and the
#    terminal settings are restored.
# Usage: top_hosts_tmux_test.sh BATON FAKE_NVML_DIR SCENARIOS_DIR FIXTURE_DIR
# BATON_UPDATE_GOLDEN=1 rewrites the golden files (review their diff).
set -euo pipefail
baton=$1
nvml=$2
scenarios=$3
fixtures=$4
here=$(cd "$(dirname "$0")" && pwd)
golden=$here/golden
work=$(mktemp -d)
sock=$work/tmux.sock
session=hosts
pids=()
source "$here/../tmux_session.sh"
cleanup() {
  t kill-server 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

# fake AGENT_NAME SCENARIO [fake_agent.py options]: starts a stand-in agent; its port in $work/AGENT_NAME.port.
fake() {
  local name=$1 scenario=$2
  shift 2
  python3 "$here/fake_agent.py" "$baton" "$nvml/$scenario/libnvidia-ml.so.1" "$scenarios/$scenario.json" \
    "$fixtures" "$work/$name.port" "$@" &
  pids+=($!)
}
port_of() {
  local deadline=$((SECONDS + 30))
  until [ -s "$work/$1.port" ]; do
    ((SECONDS < deadline)) || { echo "FAIL: $1 never served" >&2; exit 1; }
    sleep 0.1
  done
  cat "$work/$1.port"
}
fake busy eight-busy --owner "0=alice:python train.py --config big.yaml" --owner "1=alice:python train.py --config big.yaml" \
  --owner "2=bob:torchrun --nproc-per-node 6 finetune.py" --finding "warning:GPU3 is throttled by power (pwr-cap)"
fake idle four-idle
busy=$(port_of busy)
idle=$(port_of idle)
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# A silent host: accepts and never answers.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)' "$work/silent.port" &
pids+=($!)
silent=$(port_of silent)

t -f /dev/null new-session -d -s "$session" -x 110 -y 40 \
  "env -i PATH=/usr/bin:/bin HOME=$work TERM=screen LANG=C.UTF-8 bash --norc --noprofile"
t set-option -t "$session" remain-on-exit on >/dev/null
keys "export BATON_SYSTEM_CONFIG=/dev/null XDG_CONFIG_HOME=$work PS1='$ '" Enter
keys "stty -g > $work/stty.before; clear" Enter

# The pane with the ports named (they differ from run to run).
named_pane() {
  pane | sed -e "s/127\.0\.0\.1:$busy/busy-box/g" -e "s/127\.0\.0\.1:$idle/idle-box/g" \
    -e "s/127\.0\.0\.1:$dead/dead-box/g"
}
expect_golden() {  # expect_golden NAME: the named pane against golden/hosts-NAME.txt
  local file=$golden/hosts-$1.txt
  named_pane > "$work/$1.txt"
  if [ "${BATON_UPDATE_GOLDEN:-}" = 1 ]; then
    cp "$work/$1.txt" "$file"
  elif ! diff -u "$file" "$work/$1.txt" >&2; then
    fail "the pane differs from $file (BATON_UPDATE_GOLDEN=1 rewrites it)"
  fi
}

# 1. Golden screens.
keys "'$baton' top --hosts 127.0.0.1:$busy,127.0.0.1:$idle,127.0.0.1:$dead -d 0.5; echo EXIT-1=\$?" Enter
wait_for "3 hosts: 2 answering, 1 down"
wait_for "Connection refused"
sleep 1  # the findings come with the second ask of each host at the latest
wait_for "warning GPU3 is throttled"
expect_golden start
keys g
wait_for "free GPUs only"
expect_golden free
keys g /
wait_for "Filter:"
keys bob Enter
wait_for 'filter "bob"'
expect_golden filter-bob
keys q
wait_for "EXIT-1=0"

# 2. Live: a real agent, stopped mid-test; the full view; q while a host is silent.
env BATON_NVML_LIBRARY="$nvml/one-idle/libnvidia-ml.so.1" BATON_FAKE_NVML_SCENARIO="$scenarios/one-idle.json" \
  BATON_SYSTEM_CONFIG=/dev/null XDG_CONFIG_HOME="$work" XDG_STATE_HOME="$work" BATON_SOCKET="$work/agent.sock" \
  "$baton" serve --listen 127.0.0.1:0 --no-db --interval 0.5 2> "$work/agent.log" &
agent_pid=$!
pids+=($agent_pid)
deadline=$((SECONDS + 20))
until grep -q "serving on" "$work/agent.log"; do
  ((SECONDS < deadline)) || { cat "$work/agent.log" >&2; exit 1; }
  sleep 0.1
done
real=$(sed -n 's/.*serving on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/agent.log" | head -1)
keys clear Enter
keys "'$baton' top --hosts 127.0.0.1:$real,127.0.0.1:$idle,127.0.0.1:$silent -d 0.5 --timeout 10s; s=\$?; stty -g > $work/stty.after; echo EXIT-2=\$s" Enter
wait_for "127.0.0.1:$real (" 10
pane | grep -q "127.0.0.1:$silent  waiting" || fail "the silent host should be waiting for its first answer"
kill "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
wait_for "127.0.0.1:$real  down  cannot connect" 10  # no key pressed: the screen moves by itself
# The full view of the second host (Down, Enter), and back (Esc).
keys Down Enter
wait_for "via 127.0.0.1:$idle, ok"
wait_for "PID USER"
keys k
sleep 0.3
keys y
wait_for "k and r act on this machine's processes"
keys Escape
wait_for "3 hosts: 1 answering"
# q at once, although the silent host's ask has seconds to go.
start=$SECONDS
keys q
wait_for "EXIT-2=0" 3
((SECONDS - start <= 2)) || fail "q took $((SECONDS - start)) s"
same_stty "$work/stty.before" "$work/stty.after" || fail "terminal settings not restored after q"
echo "top_hosts_tmux_test: every check passed"
