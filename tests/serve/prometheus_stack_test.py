#!/usr/bin/env python3
"""The monitoring stack end to end, with the real parts (docs/metrics.md, deploy/prometheus/):

Debian's Prometheus scrapes two `baton serve` agents (the fake NVML scenarios eight-busy and near-oom)
every second, evaluates deploy/prometheus/baton-rules.yml and sends alerts to Debian's Alertmanager,
which delivers them to a webhook receiver run here. Checked through Prometheus' HTTP API: rate() over
baton's CPU counters is sane, GPU series carry their labels, the near-OOM finding is active on the right
instance only; the alert arrives with the finding's summary and fix; every panel query of
deploy/grafana/baton.json returns data. A third agent, scraped as job "fleet", reads the machine fixture's
/proc (a Slurm job, 4242, allocated GPUs 0 and 1 by its environment) beside two idle fake GPUs, one of
which reports XID 13: the job's info series, its idle allocation (finding and pending alert), the XID
counter and dcgm-exporter's hpc_job and XID fields, through Prometheus.

usage: prometheus_stack_test.py BATON FAKE_NVML_DIR SCENARIO_DIR SOURCE_DIR
Everything runs on loopback, on free ports, in a temporary directory, and is stopped by pid.
"""
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from serve_helpers import agent_env, check, failures, start_agent, stop, summary

BATON, FAKE_NVML_DIR, SCENARIO_DIR, SOURCE_DIR = sys.argv[1:5]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    check(False, "in time: " + what)
    return None


def http_json(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


class Webhook(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Webhook.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    tmp = tempfile.mkdtemp(prefix="baton-prom-")
    procs = []

    def start(argv, name, env=None):
        log = open(os.path.join(tmp, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        procs.append(p)
        return p

    try:
        # Two agents, each with its own fake GPUs.
        agents = {}
        for scenario in ("eight-busy", "near-oom"):
            home = os.path.join(tmp, scenario)
            os.mkdir(home)
            env = agent_env(os.path.join(FAKE_NVML_DIR, scenario, "libnvidia-ml.so.1"),
                            os.path.join(SCENARIO_DIR, scenario + ".json"), home)
            agent, port = start_agent(BATON, ["--dcgm-compat"], env, tmp)
            procs.append(agent)
            check(port is not None, "baton serve (%s) listens" % scenario)
            if not port:
                return
            agents[scenario] = "127.0.0.1:%d" % port

        # The fleet agent: two of four-idle's GPUs, XID 13 on the first from its second tick; the fixture's
        # processes (Slurm job 4242, SLURM_JOB_GPUS=0,1); idle allocations reported after 6 s; no scontrol.
        fleet_home = os.path.join(tmp, "fleet")
        os.makedirs(os.path.join(fleet_home, "baton"))
        scenario = json.load(open(os.path.join(SCENARIO_DIR, "four-idle.json")))
        scenario["devices"] = scenario["devices"][:2]
        scenario["xid_events"] = [{"device": 0, "xid": 13, "tick": 2, "count": 1}]
        with open(os.path.join(fleet_home, "scenario.json"), "w") as f:
            json.dump(scenario, f)
        with open(os.path.join(fleet_home, "baton", "baton.toml"), "w") as f:
            f.write('[serve]\nidle_allocated_minutes = 0.1\n[jobs]\nscontrol = ""\n')
        env = agent_env(os.path.join(FAKE_NVML_DIR, "four-idle", "libnvidia-ml.so.1"),
                        os.path.join(fleet_home, "scenario.json"), fleet_home)
        fixture = os.path.join(SOURCE_DIR, "tests", "fixtures", "machine")
        agent, port = start_agent(BATON, ["--dcgm-compat", "--proc-root", os.path.join(fixture, "proc"),
                                          "--sys-root", os.path.join(fixture, "sys")], env, tmp)
        procs.append(agent)
        check(port is not None, "baton serve (fleet) listens")
        if not port:
            return
        fleet = "127.0.0.1:%d" % port

        hook_port = free_port()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", hook_port), Webhook)
        threading.Thread(target=server.serve_forever, daemon=True).start()

        am_port = free_port()
        with open(os.path.join(tmp, "alertmanager.yml"), "w") as f:
            f.write(
                "route:\n  receiver: hook\n  group_by: [alertname, instance, subject]\n"
                "  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
                "receivers:\n  - name: hook\n    webhook_configs:\n"
                "      - url: http://127.0.0.1:%d/alert\n        send_resolved: false\n" % hook_port)
        start(["prometheus-alertmanager", "--config.file=" + os.path.join(tmp, "alertmanager.yml"),
               "--storage.path=" + os.path.join(tmp, "am-data"), "--web.listen-address=127.0.0.1:%d" % am_port,
               "--cluster.listen-address="], "alertmanager")

        prom_port = free_port()
        rules = os.path.join(SOURCE_DIR, "deploy", "prometheus", "baton-rules.yml")
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files: ['%s']\n"
                "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:%d']\n"
                "scrape_configs:\n  - job_name: baton\n    static_configs:\n"
                "      - targets: ['%s', '%s']\n"
                "  - job_name: fleet\n    static_configs:\n      - targets: ['%s']\n"
                % (rules, am_port, agents["eight-busy"], agents["near-oom"], fleet))
        start(["prometheus", "--config.file=" + os.path.join(tmp, "prometheus.yml"),
               "--storage.tsdb.path=" + os.path.join(tmp, "prom-data"), "--web.listen-address=127.0.0.1:%d" % prom_port,
               "--web.enable-lifecycle"], "prometheus")
        api = "http://127.0.0.1:%d/api/v1/" % prom_port

        def query(expr):
            r = http_json(api + "query?" + urllib.parse.urlencode({"query": expr}))
            return r["data"]["result"] if r and r.get("status") == "success" else None

        def both_up():
            r = query('up{job="baton"} == 1')
            return r is not None and len(r) == 2

        if not wait_for("Prometheus scrapes both agents", both_up, 60):
            return
        time.sleep(20)  # 20 s of scrapes, one a second

        cores = os.cpu_count()
        rates = query('sum by (instance) (rate(baton_cpu_seconds_total{job="baton"}[15s]))') or []
        check(len(rates) == 2, "rate(baton_cpu_seconds_total[15s]) has a value per agent")
        for r in rates:
            v = float(r["value"][1])
            check(0.5 * cores <= v <= 1.5 * cores,
                  "rate of CPU seconds on %s is %.2f, close to the %d cores" % (r["metric"]["instance"], v, cores))

        util = query("baton_gpu_utilization_ratio") or []
        by_instance = {}
        for r in util:
            by_instance.setdefault(r["metric"]["instance"], []).append(r["metric"])
        busy = by_instance.get(agents["eight-busy"], [])
        check(sorted(int(m["gpu"]) for m in busy) == list(range(8)), "eight-busy has GPUs 0-7")
        check(all(m["uuid"].startswith("GPU-") and m["job"] == "baton" for m in busy), "every GPU series has its uuid")
        oom = by_instance.get(agents["near-oom"], [])
        check([m["uuid"] for m in oom] == ["GPU-00000000-0000-4000-8000-0000000000f1"], "near-oom has its one GPU")

        active = query('baton_finding_active{rule="gpu_memory_near_oom"}') or []
        check([(r["metric"]["instance"], r["value"][1]) for r in active] == [(agents["near-oom"], "1")],
              "gpu_memory_near_oom is active on the near-oom agent only")
        check(len(query('baton_gpu_throttle_active{job="baton",reason="hw_slowdown"}') or []) == 9,
              "every GPU has a hw_slowdown throttle series")
        fb_used = query('DCGM_FI_DEV_FB_USED{job="baton"}')
        check(fb_used and len(fb_used) == 9, "dcgm-compat FB_USED per GPU")

        # The alert, through Alertmanager, to the webhook.
        def delivered():
            for message in Webhook.received:
                for a in message.get("alerts", []):
                    if a["labels"].get("alertname") == "BatonCriticalFinding" and \
                            a["labels"].get("instance") == agents["near-oom"]:
                        return a
            return None

        alert = wait_for("the critical finding reaches the webhook", delivered, 60)
        if alert:
            check(alert["labels"].get("rule") == "gpu_memory_near_oom", "the alert names the rule")
            check(alert["labels"].get("instance") == agents["near-oom"], "the alert names the near-oom instance")
            summary = alert["annotations"].get("summary", "")
            check("GPU0 memory reached 97 %" in summary, "the summary arrives: " + summary)
            fix = alert["annotations"].get("fix", "")
            check("Mixed precision" in fix and "gradient accumulation" in fix, "the fix arrives: " + fix[:60])
        check(all(a["labels"].get("instance") != agents["eight-busy"] or a["labels"].get("severity") == "info"
                  for m in Webhook.received for a in m.get("alerts", [])),
              "no warning or critical alert for the healthy eight-busy agent")

        # Queries of the kind NVIDIA's dcgm-exporter dashboard runs (its variables filled in), against
        # --dcgm-compat: such a dashboard works unchanged on baton.
        dcgm = [
            'DCGM_FI_DEV_GPU_TEMP{instance=~".*", gpu=~".*"}',
            'avg(DCGM_FI_DEV_GPU_TEMP{instance=~".*", gpu=~".*"})',
            'DCGM_FI_DEV_POWER_USAGE{instance=~".*", gpu=~".*"}',
            'sum(DCGM_FI_DEV_POWER_USAGE{instance=~".*", gpu=~".*"})',
            'DCGM_FI_DEV_SM_CLOCK{instance=~".*", gpu=~".*"} * 1000000',
            'DCGM_FI_DEV_MEM_CLOCK{instance=~".*", gpu=~".*"} * 1000000',
            'DCGM_FI_DEV_GPU_UTIL{instance=~".*", gpu=~".*"}',
            'DCGM_FI_DEV_MEM_COPY_UTIL{instance=~".*", gpu=~".*"}',
            'DCGM_FI_DEV_FB_USED{instance=~".*", gpu=~".*"}',
            'DCGM_FI_DEV_FB_FREE{instance=~".*", gpu=~".*"}',
            'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance=~".*", gpu=~".*"}',
            'rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{instance=~".*", gpu=~".*"}[15s]) / 1000',
        ]
        for expr in dcgm:
            result = query(expr.replace('instance=~".*"', 'job="baton"'))
            check(bool(result) and len(result) in (1, 9), "dcgm-exporter dashboard query has data: " + expr)
        # The memory temperature where the board has the sensor: eight-busy's H200s, not near-oom's GPU.
        memory_temp = query('DCGM_FI_DEV_MEMORY_TEMP{job="baton"}') or []
        check(sorted(r["metric"]["instance"] for r in memory_temp) == [agents["eight-busy"]] * 8,
              "DCGM_FI_DEV_MEMORY_TEMP on eight-busy's 8 GPUs only")
        labels = (query("DCGM_FI_DEV_GPU_UTIL") or [{"metric": {}}])[0]["metric"]
        check(all(k in labels for k in ("gpu", "UUID", "device", "modelName", "Hostname")),
              "dcgm-exporter's labels: " + ", ".join(sorted(labels)))

        # The fleet agent: whose job each GPU serves, joined the way the dashboard joins it.
        jobs = query('baton_gpu_job_info{job="fleet"}') or []
        check(sorted((r["metric"].get("gpu"), r["metric"].get("job_id"), r["metric"].get("user"),
                      r["metric"].get("in_use")) for r in jobs) ==
              [("0", "slurm:4242", "alice", "false"), ("1", "slurm:4242", "alice", "false")],
              "baton_gpu_job_info: GPUs 0 and 1 held by slurm:4242 (alice), none of its processes there: %s"
              % [r["metric"] for r in jobs])
        by_job = query('baton_gpu_utilization_ratio{job="fleet"} * on (instance, gpu) group_right '
                       'baton_gpu_job_info{job="fleet"}') or []
        check(sorted((r["metric"].get("job_id"), r["value"][1]) for r in by_job) ==
              [("slurm:4242", "0"), ("slurm:4242", "0")], "utilisation by job: %s" % by_job)
        hpc = query('DCGM_FI_DEV_GPU_UTIL{job="fleet", hpc_job="4242"}') or []
        check(len(hpc) == 2, "dcgm-compat series carry hpc_job=4242 on both GPUs")
        # XID 13 on the scenario's first GPU, baton's GPU 1 (four-idle lists its GPUs out of PCI order): the
        # counter, dcgm-exporter's field (the newest XID's number).
        xid = wait_for("the XID reaches Prometheus",
                       lambda: query('baton_gpu_xid_errors_total{job="fleet", xid="13"} == 1'), 30) or []
        check([r["metric"].get("gpu") for r in xid] == ["1"], "baton_gpu_xid_errors_total{xid=13} is 1 on GPU 1")
        dcgm_xid = query('DCGM_FI_DEV_XID_ERRORS{job="fleet"}') or []
        check(sorted((r["metric"].get("gpu"), r["value"][1]) for r in dcgm_xid) == [("0", "0"), ("1", "13")],
              "DCGM_FI_DEV_XID_ERRORS: 0 on GPU 0, 13 on GPU 1: %s" % dcgm_xid)
        # The idle allocation: the finding names the job, and the warning alert is pending (it fires after 5 min).
        idle = wait_for("gpu_idle_allocated on the fleet agent",
                        lambda: query('baton_finding_active{job="fleet", rule="gpu_idle_allocated"}'), 60) or []
        check(sorted(r["metric"].get("job_id") for r in idle) == ["slurm:4242", "slurm:4242"],
              "gpu_idle_allocated on both GPUs, naming slurm:4242: %s" % [r["metric"] for r in idle])
        pending = wait_for("the warning alert of the idle allocation", lambda: query(
            'ALERTS{alertname="BatonWarningFinding", rule="gpu_idle_allocated", instance="%s"}' % fleet), 30) or []
        check(bool(pending) and all(r["metric"].get("job_id") == "slurm:4242" for r in pending),
              "BatonWarningFinding for gpu_idle_allocated, with the job: %s" % [r["metric"] for r in pending])

        # Every panel query of the Grafana dashboard returns data (its variables filled in).
        dashboard = json.load(open(os.path.join(SOURCE_DIR, "deploy", "grafana", "baton.json")))
        exprs = []

        def collect(panels):
            for p in panels:
                collect(p.get("panels", []))
                for t in p.get("targets", []):
                    if t.get("expr"):
                        exprs.append((p.get("title", "?"), t["expr"]))

        collect(dashboard.get("panels", []))
        check(len(exprs) >= 10, "the dashboard has %d panel queries" % len(exprs))
        for title, expr in exprs:
            e = (expr.replace("$__rate_interval", "15s").replace("$__interval", "5s").replace("$instance", ".*")
                 .replace("$gpu", ".*").replace("${instance:regex}", ".*"))
            result = query(e)
            check(bool(result), "panel '%s' has data: %s" % (title, expr))
    finally:
        stop(procs)
        if failures:
            for name in os.listdir(tmp):
                if name.endswith(".log"):
                    print("--- " + name + " (tail)")
                    print("".join(open(os.path.join(tmp, name)).readlines()[-15:]))
        subprocess.run(["rm", "-rf", tmp])



if __name__ == "__main__":
    main()
    sys.exit(summary("prometheus stack"))
