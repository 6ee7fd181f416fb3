# Helpers for the tests that drive baton in a real terminal (tmux). Source this file after setting
# `sock` (the tmux server's socket), `session` (the session's name) and, optionally,
# `pane_history` (lines of scroll-back that pane() includes, for output longer than the window).
t() { tmux -S "$sock" "$@"; }
pane() { t capture-pane -p ${pane_history:+-S "-$pane_history"} -t "$session"; }
keys() { t send-keys -t "$session" "$@"; }
fail() {
  echo "FAIL: $*" >&2
  echo "--- pane:" >&2
  t capture-pane -p -t "$session" >&2 || true
  exit 1
}
# wait_for TEXT [SECONDS]: until the pane shows TEXT (10 s by default).
wait_for() {
  local deadline=$((SECONDS + ${2:-10}))
  while ((SECONDS < deadline)); do
    pane | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  fail "pane never showed: $1"
}
# wait_without TEXT: until the pane no longer shows TEXT.
wait_without() {
  local deadline=$((SECONDS + 10))
  while ((SECONDS < deadline)); do
    pane | grep -qF -- "$1" || return 0
    sleep 0.1
  done
  fail "pane still shows: $1"
}
# same_stty A B: the two `stty -g` captures agree; on a difference, prints the fields that differ.
same_stty() {
  cmp -s "$1" "$2" && return 0
  diff <(tr ':' '\n' < "$1" | cat -n) <(tr ':' '\n' < "$2" | cat -n) >&2 || true
  return 1
}
