#!/usr/bin/env bash
# deploy/kubernetes/'s image, built and run as the DaemonSet runs it: deploy/kubernetes/build-image.sh
# makes it FROM scratch with Debian's podman; the container gets the host's PID namespace, /proc, /sys
# and /etc/passwd read-only, a read-only root, the ConfigMap's baton.toml, and the DaemonSet's
# arguments (the listen address moved to a free loopback port, no NVML here). Then, from outside:
# /metrics answers, and the agent inside sees this host's processes (this script's own pid, under its
# user name) and its hostname. The container and the image are removed by name however the test ends.
# Needs root and podman; skips (77) otherwise.
set -euo pipefail
src=$1
build=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: podman's rootful containers need root"; exit 77; }
command -v podman >/dev/null || { echo "SKIP: podman is not installed (scripts/test.sh installs it)"; exit 77; }

name=baton-image-test-$$
image=localhost/$name:test
tmp=$(mktemp -d)
cleanup() {
  podman rm -f -t 2 "$name" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

BUILD_DIR=$build "$src/deploy/kubernetes/build-image.sh" "$image" >/dev/null
size=$(podman image inspect --format '{{.Size}}' "$image")
layers=$(podman image inspect --format '{{len .RootFS.Layers}}' "$image")
echo "image $image: $size bytes, $layers layer(s)"
[ "$layers" = 1 ] || { echo "FAIL: FROM scratch makes one layer, got $layers"; exit 1; }
[ "$size" -lt 40000000 ] || { echo "FAIL: the image is $size bytes"; exit 1; }

# The ConfigMap's baton.toml and the DaemonSet's arguments, from the manifest itself.
/usr/bin/python3 - "$src/deploy/kubernetes/baton.yaml" "$tmp" <<'EOF'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
cm = [d for d in docs if d["kind"] == "ConfigMap"][0]
open(sys.argv[2] + "/baton.toml", "w").write(cm["data"]["baton.toml"])
ds = [d for d in docs if d["kind"] == "DaemonSet"][0]
open(sys.argv[2] + "/args", "w").write("\n".join(ds["spec"]["template"]["spec"]["containers"][0]["args"]) + "\n")
EOF
mapfile -t args < "$tmp/args"
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# crun (podman's default) refuses a host with cgroup v1 and v2 mounted together (this CI's); runc
# does not. Rootful podman raises the open-file and process limits past what this host allows, so
# they are given.
runtime=()
command -v runc >/dev/null && runtime=(--runtime runc)
podman "${runtime[@]}" run -d --name "$name" --pid host --network host --read-only \
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  -v /proc:/host/proc:ro -v /sys:/host/sys:ro -v /etc/passwd:/etc/passwd:ro \
  -v "$tmp/baton.toml:/etc/baton/baton.toml:ro" --tmpfs /tmp --tmpfs /run/baton --tmpfs /var/lib/baton \
  -e XDG_STATE_HOME=/var/lib -e NODE_NAME=test-node \
  "$image" "${args[@]}" --listen "127.0.0.1:$port" --no-gpus >/dev/null

ok=
for _ in $(seq 100); do
  if /usr/bin/python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=2)" 2>/dev/null; then
    ok=1
    break
  fi
  sleep 0.2
done
[ -n "$ok" ] || { echo "FAIL: the container never answered /metrics"; podman logs "$name"; exit 1; }

/usr/bin/python3 - "$port" "$$" "$(id -un)" "$(hostname)" <<'EOF'
import json, sys, time, urllib.error, urllib.request
port, pid, user, host = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
snap = {}
for _ in range(50):  # 503 until the first sample is taken
    try:
        snap = json.load(urllib.request.urlopen("http://127.0.0.1:%s/api/v1/snapshot" % port, timeout=5))
        break
    except urllib.error.HTTPError:
        time.sleep(0.2)
metrics = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5).read().decode()
fails = []
if "baton_build_info{" not in metrics:
    fails.append("no baton_build_info in /metrics")
me = [p for p in snap.get("processes", []) if p.get("pid") == pid]
if not me:
    fails.append("this script (pid %d) is not among the container's %d processes" % (pid, len(snap.get("processes", []))))
elif me[0].get("user") != user:
    fails.append("pid %d's user is %r, not %r (the host's /etc/passwd)" % (pid, me[0].get("user"), user))
if snap.get("host", {}).get("hostname") != host:
    fails.append("hostname %r, not the host's %r" % (snap.get("host", {}).get("hostname"), host))
print("the container sees %d processes of this host, pid %d among them" % (len(snap.get("processes", [])), pid))
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
EOF
echo "container image: every check passed"
