#!/usr/bin/env bash
# End to end: `baton run` in a real terminal (tmux, an interactive bash) under job control. Ctrl-Z
# stops the command and gives the prompt back (the shell reports the job stopped); `fg` continues
# it with the terminal; Ctrl-C then ends it, and the terminal's settings are as before.
# Usage: run_job_control_tmux_test.sh BATON
set -euo pipefail
baton=$1
work=$(mktemp -d)
sock=$work/tmux.sock

session=run
pane_history=200
source "$(dirname "$0")/../tmux_session.sh"
cleanup() {
  t kill-server 2>/dev/null || true
  sleep 0.1
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
# The last tick the command printed.
last_tick() { pane | grep -o 'tick [0-9][0-9]*' | tail -1 | cut -d' ' -f2; }

t -f /dev/null new-session -d -s run -x 120 -y 40 \
  "env -i PATH=/usr/bin:/bin HOME=$work TERM=screen LANG=C.UTF-8 bash --norc --noprofile -i"
t set-option -t run remain-on-exit on >/dev/null
keys "PS1='$ '; stty -g > $work/stty.before; clear" Enter
# A command that prints a tick every 0.1 s on stdout and stderr (stderr goes through baton).
keys "'$baton' --config /dev/null run --no-db --no-gpus -- sh -c 'i=0; while :; do i=\$((i+1)); echo tick \$i; echo err \$i >&2; sleep 0.1; done'" Enter
wait_for "tick 5"

# Ctrl-Z: the command stops, the shell gets its prompt back and knows baton as a stopped job.
keys C-z
wait_for "Stopped"
keys "echo PROMPT-BACK" Enter
wait_for "PROMPT-BACK" 5
before=$(last_tick)
sleep 1
after=$(last_tick)
[ "$before" = "$after" ] || fail "the command kept running while stopped (tick $before -> $after)"
keys "jobs -l > $work/jobs.txt" Enter
sleep 0.3
grep -q "Stopped" "$work/jobs.txt" || fail "the shell does not list baton as a stopped job: $(cat "$work/jobs.txt")"

# fg: baton and the command continue, with the terminal (Ctrl-C reaches the command).
keys clear Enter
keys "fg; echo EXIT=\$?" Enter  # (fg's status is the job's)
deadline=$((SECONDS + 10))
until [ -n "$(last_tick)" ] && [ "$(last_tick)" -gt "$after" ] 2>/dev/null; do
  ((SECONDS < deadline)) || fail "the command did not continue after fg (tick $after, now $(last_tick))"
  sleep 0.1
done
keys C-c
wait_for "EXIT=130"
keys "stty -g > $work/stty.after" Enter
sleep 0.3
cmp -s "$work/stty.before" "$work/stty.after" || fail "terminal settings differ after the run"
echo "ok: Ctrl-Z stopped the command and returned the prompt, fg continued it, Ctrl-C ended it (130)"
