#!/usr/bin/python3
"""Side-by-side cost of watching HOSTS boxes (default 10), in one run: one `baton top --hosts` over their
agents against one `baton top` per box, all at a 1 s refresh for SECONDS (default 60) each, inside detached
tmux terminals of 120x50 (the interactive screen, as a user runs it).

The boxes are HOSTS `baton serve` agents on loopback (fake NVML, scenario eight-busy: 8 busy GPUs and their
processes each, --interval 1, no database); they run in both halves and are not counted: a box has its
agent either way. What is counted is the viewer's own CPU time (utime + stime of the process and its reaped
children, from /proc at the end) and its peak RSS (VmHWM). The single tops all run on this machine, each
reading its /proc and the fake NVML: the cost each would have on its own box.

Usage: bench/top_hosts_vs_single_tops.py [HOSTS] [SECONDS]     (after scripts/test.sh; needs tmux)
Exit status: 0 when `baton top --hosts` uses at most 1 % of a core (issue 37's target).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATON = os.environ.get("BATON", os.path.join(ROOT, "build", "src", "cli", "baton"))
TICK = os.sysconf("SC_CLK_TCK")


def start_agents(n, work, env):
    agents, ports = [], []
    for i in range(n):
        log = open(os.path.join(work, "agent-%d.log" % i), "w+")
        p = subprocess.Popen([BATON, "serve", "--listen", "127.0.0.1:0", "--interval", "1", "--no-db"],
                             env=dict(env, BATON_SOCKET=os.path.join(work, "agent-%d.sock" % i),
                                      XDG_STATE_HOME=os.path.join(work, "state-%d" % i)),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        agents.append(p)
        for _ in range(100):
            log.seek(0)
            m = re.search(r"serving on http://127\.0\.0\.1:(\d+)", log.read())
            if m:
                ports.append(int(m.group(1)))
                break
            time.sleep(0.1)
        else:
            sys.exit("agent %d never served" % i)
    return agents, ports


def cost(pid):
    """CPU seconds (self and reaped children) and peak RSS in KiB of a live process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])
    with open("/proc/%d/status" % pid) as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    return ticks / TICK, hwm


def run_in_tmux(sock, commands, seconds, env):
    """Runs each command in a tmux session of its own for `seconds`; returns [(cpu_seconds, hwm_kib)].
    Each run has a tmux server of its own (`sock`)."""
    pids = []
    for i, cmd in enumerate(commands):
        subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "s%d" % i, "-x", "120",
                        "-y", "50", "exec " + cmd], env=env, check=True)
        pids.append(int(subprocess.run(["tmux", "-S", sock, "display-message", "-p", "-t", "s%d" % i,
                                        "#{pane_pid}"], capture_output=True, text=True, check=True).stdout))
    time.sleep(seconds)
    out = []
    for i, pid in enumerate(pids):
        if not os.path.exists("/proc/%d/stat" % pid):
            sys.exit("viewer %d exited early" % i)
        out.append(cost(pid))
    subprocess.run(["tmux", "-S", sock, "kill-server"], stderr=subprocess.DEVNULL)
    return out


def main():
    hosts = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    if not os.access(BATON, os.X_OK) or not shutil.which("tmux"):
        sys.exit("run scripts/test.sh first (the build and tmux)")
    work = tempfile.mkdtemp(prefix="baton-bench-hosts-")
    env = dict(os.environ, TERM="screen", LANG="C.UTF-8", BATON_SYSTEM_CONFIG="/dev/null", XDG_CONFIG_HOME=work,
               BATON_NVML_LIBRARY=os.path.join(ROOT, "build", "tests", "fake_nvml", "eight-busy",
                                               "libnvidia-ml.so.1"),
               BATON_FAKE_NVML_SCENARIO=os.path.join(ROOT, "tests", "fake_nvml", "scenarios", "eight-busy.json"))
    agents = []
    try:
        agents, ports = start_agents(hosts, work, env)
        time.sleep(2)
        hosts_arg = ",".join("127.0.0.1:%d" % p for p in ports)
        [(one_cpu, one_rss)] = run_in_tmux(os.path.join(work, "one.sock"), ["'%s' top --hosts %s -d 1" % (BATON, hosts_arg)], seconds, env)
        singles = run_in_tmux(os.path.join(work, "singles.sock"), ["'%s' top -d 1" % BATON] * hosts, seconds, env)
        many_cpu = sum(c for c, _ in singles)
        many_rss = sum(r for _, r in singles)
        share = 100 * one_cpu / seconds
        print("%d hosts, 1 s refresh, %g s each, 120x50 terminals (tmux)" % (hosts, seconds))
        print("  baton top --hosts (one screen)      %5.2f %% of a core  %6.1f MiB" % (share, one_rss / 1024))
        print("  %2d x baton top (one per box)        %5.2f %% of a core  %6.1f MiB" %
              (hosts, 100 * many_cpu / seconds, many_rss / 1024))
        print("  one screen / %d single tops: CPU %.3f x, RSS %.3f x" %
              (hosts, one_cpu / many_cpu if many_cpu else float("nan"), one_rss / many_rss if many_rss else 0))
        met = share <= 1.0
        print("  target: <= 1 %% of a core for %d hosts: %s" % (hosts, "met" if met else "NOT met"))
        return 0 if met else 1
    finally:
        for sock in ("one.sock", "singles.sock"):
            subprocess.run(["tmux", "-S", os.path.join(work, sock), "kill-server"], stderr=subprocess.DEVNULL)
        for a in agents:
            a.terminate()
        for a in agents:
            a.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
