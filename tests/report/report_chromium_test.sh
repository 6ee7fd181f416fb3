#!/usr/bin/env bash
# `baton run --report` end to end, opened in Debian's headless Chromium (issue 5's report test):
# the page renders, every chart has one point per recorded sample, the page makes no request
# (Chromium's own network log, with a control page proving the log would show one), and a
# screenshot is kept as a test artefact.
#   report_chromium_test.sh BATON FAKE_NVML_LIBRARY FAKE_NVML_SCENARIO ARTEFACT_DIR
set -euo pipefail
baton=$1
export BATON_NVML_LIBRARY=$2 BATON_FAKE_NVML_SCENARIO=$3
artefacts=$4
here=$(cd "$(dirname "$0")" && pwd)
command -v chromium >/dev/null || { echo "FAIL: chromium is not installed (scripts/test.sh installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artefacts"
cd "$work"

# A short job on the eight fake GPUs (it puts its own pid in the fake's process lists, as a CUDA
# context would): a second and a half of CPU while it reports a step every 50 ms through the Python
# hook's sender (baton._events, which needs no torch), then 64 MB written with fsync (disk rates).
export BATON_FAKE_NVML_PROCESSES=$work/gpu-processes
PYTHONPATH="$here/../../python" "$baton" run --db h.db --interval 0.2 --name report-test --report report.html -- sh -c '
for i in 0 1 2 3 4 5 6 7; do echo "$i $$ 30000000000"; done > "$BATON_FAKE_NVML_PROCESSES"
exec python3 -c "$0"' '
import os, time
from baton import _events
end, step = time.time() + 1.5, 0
while time.time() < end:
    started = time.perf_counter()
    while time.perf_counter() - started < 0.05: pass
    _events.sender().send({"type": "step", "rank": 0, "step": step, "step_ms": 50.0, "wait_ms": 5.0, "samples": 32})
    step += 1
with open("data.bin", "wb") as f:
    for _ in range(16):
        f.write(os.urandom(4 << 20)); f.flush(); os.fsync(f.fileno())
' 2> run.err || { cat run.err; echo "FAIL: baton run"; exit 1; }
grep -q "report: report.html" run.err || { cat run.err; echo "FAIL: the summary does not name the report"; exit 1; }
samples=$("$baton" runs export 1 --db h.db --format csv | tail -n +2 | wc -l)
# The GPU charts have a point for each sample since the job appeared on its GPUs.
gpu_samples=$("$baton" runs export 1 --db h.db | grep -c '"index":' || true)
findings=$("$baton" runs --db h.db --json | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["findings"])')
steps=$("$baton" report 1 --db h.db --markdown | sed -n 's/^| training steps (baton hook) | \([0-9]*\),.*/\1/p')
[ -n "$steps" ] && [ "$steps" -ge 10 ] || { cat run.err; echo "FAIL: the hook's steps did not reach the run ($steps)"; exit 1; }

# Chromium with no way out: every host name resolves to nothing, background services off.
browse() {
  timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-sync \
    --disable-background-networking --disable-component-update --disable-default-apps \
    --host-resolver-rules="MAP * ~NOTFOUND" --user-data-dir="$work/profile" "$@" 2>/dev/null
}
browse --log-net-log="$work/net.json" --dump-dom "file://$work/report.html" > dom.html
browse --window-size=1200,2600 --screenshot="$artefacts/report.png" "file://$work/report.html" >/dev/null
# The control: a page that does fetch something must show up in the same kind of log.
echo '<html><body><img src="http://127.0.0.1:9/pixel.png"></body></html>' > control.html
browse --log-net-log="$work/control-net.json" --dump-dom "file://$work/control.html" >/dev/null
cp report.html "$artefacts/report.html"

python3 "$here/check_report_dom.py" dom.html "$samples" "$findings" 8 net.json control-net.json "$artefacts/report.png" 1200 2600 "$steps" "$gpu_samples"
echo "PASS: report of $samples samples, $steps steps and $findings finding(s) rendered offline; screenshot $artefacts/report.png"
