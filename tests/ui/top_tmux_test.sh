#!/usr/bin/env bash
# End to end: baton top inside a real terminal (tmux). Sends keys (sort, tree, filter, help,
# quit), captures the pane and checks it; checks that the terminal settings are restored after
# q, after Ctrl-C and after a crash signal.
# With HANG_LIBRARY and HANG_SCENARIO (a fake NVML whose calls never return), also checks
# that keys and the screen stay alive while the driver hangs.
# Usage: top_tmux_test.sh BATON FAKE_NVML_LIBRARY SCENARIO_JSON [HANG_LIBRARY HANG_SCENARIO]
set -euo pipefail
baton=$1
nvml=$2
scenario=$3
hang_nvml=${4:-}
hang_scenario=${5:-}
work=$(mktemp -d)
sock=$work/tmux.sock
marker="tmuxtest$$"
sleeper_pid=""

session=top
source "$(dirname "$0")/../tmux_session.sh"
cleanup() {
  t kill-server 2>/dev/null || true
  sleep 0.1  # let the pane's shell go before its files are removed
  [ -z "$sleeper_pid" ] || kill "$sleeper_pid" 2>/dev/null || true
  [ -z "$victim_pid" ] || kill "$victim_pid" 2>/dev/null || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

# Processes of ours: one to find with the filter, one to send a signal to.
exec -a "$marker-sleeper" sleep 300 &
sleeper_pid=$!
exec -a "$marker-victim" sleep 300 &
victim_pid=$!

t -f /dev/null new-session -d -s top -x 120 -y 40 \
  "env -i PATH=/usr/bin:/bin HOME=$work TERM=screen LANG=C.UTF-8 bash --norc --noprofile"
t set-option -t top remain-on-exit on >/dev/null
keys "export BATON_NVML_LIBRARY=$nvml BATON_FAKE_NVML_SCENARIO=$scenario PS1='$ '" Enter
keys "stty -g > $work/stty.before; clear" Enter

run_top() {  # run_top TAG: starts baton top, its exit status goes to the pane as EXIT-TAG=N
  # The settings are saved before the status is echoed: once the pane shows it, the file is complete.
  keys "'$baton' top -d 0.3 --sort pid; s=\$?; stty -g > $work/stty.$1; echo EXIT-$1=\$s" Enter
}

# 1. Keys.
run_top q
wait_for "PID USER"
wait_for "GPU7 H200"
pane | grep -q "▼PID" || fail "initial sort should be pid (--sort pid)"
# History graphs: shown where there is room once two samples are in, G hides and shows them.
wait_for "GPU7 util"
keys G
wait_without "GPU7 util"
keys G
wait_for "GPU7 util"
# The expanded GPU panel: eight GPUs' worth does not fit 40 lines by itself; e shows what fits, e hides it.
pane | grep -q "NVLink 18 up" && fail "the expanded panel should not fit by itself here"
keys e
wait_for "NVLink 18 up"
wait_for "rows remapped"
keys e
wait_without "NVLink 18 up"
# Columns: c opens the chooser, a adds AGE, t THR; Enter closes it.
keys c
wait_for "Columns:"
keys a t Enter
wait_for "THR    AGE COMMAND"
keys s
wait_for "Sort by:"
keys c
wait_for "▼CPU%"
keys t
wait_for "TREE%"
keys t
wait_without "TREE%"
keys /
wait_for "Filter:"
keys "$marker" Enter
wait_for "filter \"$marker\""  # the status line names the filter once the frame applies it
wait_for "$marker-sleeper 300"
pane | grep -q "/sbin/init\|bash --norc" && fail "the filter should hide other processes"
keys h
wait_for "baton top keys"
keys x
wait_without "baton top keys"
# k asks, then signals the selected process (ours). Sorted by pid again: the victim and the sleeper,
# started first, are the top rows, above any short-lived process whose command line holds the filter
# text (the `tmux send-keys` that typed it), which a CPU sort can put first.
keys s p
wait_for "▼PID"
victim_pid=$(pgrep -f -- "$marker-victim" | head -1)
keys /
keys C-u "$marker-victim" Enter
wait_for "$marker-victim 300"
keys k
wait_for "Signal $victim_pid"
keys y
wait_for "sent SIGTERM to $victim_pid"
deadline=$((SECONDS + 5))
while kill -0 "$victim_pid" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "the selected process did not receive SIGTERM"
  sleep 0.1
done
victim_pid=""
# r renices the selected process (ours): the sleeper to 5.
keys /
keys C-u "$marker-sleeper" Enter
wait_for "$marker-sleeper 300"
keys r
wait_for "Renice $sleeper_pid"
keys 5 Enter
wait_for "reniced $sleeper_pid"
[ "$(ps -o ni= -p "$sleeper_pid" | tr -d ' ')" = 5 ] || fail "the sleeper's nice value is not 5"
keys / C-u Enter  # Ctrl-U empties the filter: every process again
wait_without "filter \""
# Colours: GPU memory under 60 % is "low" (cyan, SGR 36).
t capture-pane -e -p -t top | grep -q $'\e\[36m' || fail "no colour in the pane"
# Resize: the layout follows (the status line moves to the new last row).
t resize-window -t top -x 90 -y 24
deadline=$((SECONDS + 10))
until pane | tail -n 1 | grep -q "q quit"; do
  ((SECONDS < deadline)) || fail "after a resize to 90x24 the status line is not on the last row"
  sleep 0.1
done
t resize-window -t top -x 120 -y 40
keys q
wait_for "EXIT-q=0"
same_stty "$work/stty.before" "$work/stty.q" || fail "terminal settings differ after q"
pane | grep -q "PID USER" && fail "the screen was not restored after q (alternate screen still shown)"

# 1b. An unprivileged user cannot signal another user's process (run as nobody when we are root).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups "$baton" --version >/dev/null 2>&1; then
  keys clear Enter
  # --sort pid: the sleeper (started first) is the top row, whatever short-lived process whose
  # command line holds the filter text (the `tmux send-keys` that typed it) the frame still shows.
  keys "setpriv --reuid=65534 --regid=65534 --clear-groups '$baton' top -d 0.3 --sort pid; echo EXIT-nobody=\$?" Enter
  wait_for "PID USER"
  keys / "$marker-sleeper" Enter  # typed, not --filter: baton's own command line must not match
  wait_for "$marker-sleeper 300"
  keys k
  wait_for "Signal $sleeper_pid"
  keys y
  wait_for "refused: $sleeper_pid belongs to root"
  kill -0 "$sleeper_pid" || fail "a refused signal was sent anyway"
  keys r
  wait_for "Renice $sleeper_pid"
  keys 9 Enter
  wait_for "refused: $sleeper_pid belongs to root (only root renices"
  [ "$(ps -o ni= -p "$sleeper_pid" | tr -d ' ')" = 5 ] || fail "a refused renice changed the nice value"
  keys q
  wait_for "EXIT-nobody=0"
else
  echo "skipped: the refusal check needs root and setpriv"
fi

# 1c. Rows from another /proc (--proc-root: here the test fixture's) are never signalled: their pids
# are other processes on this machine (pid 101 here is likely a kernel thread).
fixture_proc=$(cd "$(dirname "$0")/../fixtures/machine/proc" && pwd)
keys clear Enter
keys "'$baton' top -d 0.3 --no-gpus --proc-root '$fixture_proc'; echo EXIT-procroot=\$?" Enter
wait_for "fixture-host"
keys / 101 Enter  # the fixture's DataLoader worker, by pid
wait_for "filter \"101\""
wait_for "python3 train.py"
keys k
wait_for "Signal 101"
keys y
wait_for "refused: the processes shown come from --proc-root"
keys q
wait_for "EXIT-procroot=0"

# 2. NO_COLOR: attributes only, no colour.
keys clear Enter
keys "NO_COLOR=1 '$baton' top -d 0.3; echo EXIT-nocolor=\$?" Enter
wait_for "PID USER"
sleep 0.5
t capture-pane -e -p -t top | grep -Eq $'\e\\[([0-9]+;)*3[0-7](;[0-9]+)*m' && fail "NO_COLOR is set but the pane has colours"
keys q
wait_for "EXIT-nocolor=0"

# 3. TERM=dumb: plain frames, no curses (batch mode), even on a terminal.
keys clear Enter
keys "TERM=dumb '$baton' top --count 2 -d 0.2 --height 12 --width 60; echo EXIT-dumb=\$?" Enter
wait_for "EXIT-dumb=0"
[ "$(pane | grep -c 'q quit')" = 2 ] || fail "TERM=dumb should print two plain frames on the terminal"

# 3b. Ctrl-C: same clean exit, status 130.
keys clear Enter
run_top int
wait_for "PID USER"
keys C-c
wait_for "EXIT-int=130"
same_stty "$work/stty.before" "$work/stty.int" || fail "terminal settings differ after Ctrl-C"
pane | grep -q "PID USER" && fail "the screen was not restored after Ctrl-C"

# 4. A crash signal: the terminal is restored before the default action.
keys clear Enter
keys "'$baton' top -d 0.3 --filter $marker-crash; s=\$?; stty -g > $work/stty.segv; echo EXIT-segv=\$s" Enter
wait_for "PID USER"
top_pid=$(pgrep -f -- "--filter $marker-crash" | head -1)
[ -n "$top_pid" ] || fail "cannot find the baton top process"
kill -SEGV "$top_pid"
wait_for "EXIT-segv=139"
same_stty "$work/stty.before" "$work/stty.segv" || fail "terminal settings differ after SIGSEGV"
# (bash also resets the tty modes of a job killed by a signal; the alternate screen is ours.)
pane | grep -q "PID USER" && fail "the screen was not restored after SIGSEGV (alternate screen still shown)"

# 5. A hung driver: the screen and keys stay alive (the help shows within a second); q
# restores the screen at once and the shell returns once the sampling thread's current NVML
# deadline (2 s) has passed.
if [ -n "$hang_nvml" ]; then
  keys clear Enter
  keys "BATON_NVML_LIBRARY=$hang_nvml BATON_FAKE_NVML_SCENARIO=$hang_scenario '$baton' top -d 0.2; echo EXIT-hang=\$?" Enter
  wait_for "PID USER"
  sleep 1  # the driver is hanging by now (from its second reading on)
  start=$(date +%s%N)
  keys h
  wait_for "baton top keys" 2
  elapsed_ms=$((($(date +%s%N) - start) / 1000000))
  ((elapsed_ms < 1000)) || fail "the help took ${elapsed_ms} ms to show with a hung driver"
  keys x q
  wait_for "EXIT-hang=0" 4
fi
echo "top in tmux: keys, sort, tree, filter, help, quit, Ctrl-C and crash restore: ok"
