#!/usr/bin/python3
"""deploy/kubernetes/ checked offline, with what Debian offers:

- every built-in object (Namespace, ConfigMap, DaemonSet, Service) against the Kubernetes API's own
  types, as Debian's python3-kubernetes carries them (its models: each field's name and type, the required
  ones): an unknown or misspelt field, a value of the wrong type, a missing required field, a resource
  quantity that does not parse is an error naming its path;
- the Prometheus Operator's objects: ServiceMonitor against the fields of its monitoring.coreos.com/v1 API
  (written out below from the operator's API reference), PrometheusRule's groups by `promtool check rules`;
- what ties them together: the Service and ServiceMonitor select the DaemonSet's pods, the named port
  exists, every volume mount has its volume, the agent listens where the port says, the ConfigMap's
  baton.toml loads in baton itself, render.py's files are fresh (the rules and the dashboard are
  deploy/prometheus/'s and deploy/grafana/'s), and `kubectl kustomize` (Debian's kubernetes-client)
  builds the folder;
- and the checker itself bites: mutated manifests are refused with the path of the fault.

usage: kubernetes_manifests_test.py BATON SOURCE_DIR
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml
from kubernetes import client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_helpers import check, failures, summary  # noqa: E402

BATON, SOURCE = sys.argv[1:3]
KDIR = os.path.join(SOURCE, "deploy", "kubernetes")

BUILTIN = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
}
# Quantities (resources.requests and limits): the API's format, e.g. "10m", "32Mi", "1.5".
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$")


def required_fields(model):
    """The model's fields whose setter refuses None (the API's required fields)."""
    out = set()
    for attr in model.openapi_types:
        setter = getattr(model, attr).fset
        source = setter.__code__.co_consts
        if any(isinstance(c, str) and "must not be `None`" in c for c in source):
            out.add(attr)
    return out


def validate(value, type_name, path, errors):
    """`value` (parsed YAML) against the client's type name: 'str', 'int', 'bool', 'object',
    'dict(str, T)', 'list[T]', or a model class name."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append("%s: a list expected, got %r" % (path, value))
            return
        for i, v in enumerate(value):
            validate(v, type_name[5:-1], "%s[%d]" % (path, i), errors)
        return
    if type_name.startswith("dict("):
        inner = type_name[type_name.index(",") + 1:-1].strip()
        if not isinstance(value, dict):
            errors.append("%s: a map expected, got %r" % (path, value))
            return
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append("%s: key %r is not a string" % (path, k))
            validate(v, inner, "%s.%s" % (path, k), errors)
        return
    if type_name == "str":
        if not isinstance(value, str):
            errors.append("%s: a string expected, got %r" % (path, value))
        return
    if type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append("%s: an integer expected, got %r" % (path, value))
        return
    if type_name == "bool":
        if not isinstance(value, bool):
            errors.append("%s: true or false expected, got %r" % (path, value))
        return
    if type_name == "object":  # IntOrString and free-form fields
        if isinstance(value, (list, dict)):
            errors.append("%s: a number or string expected, got %r" % (path, value))
        return
    model = getattr(client, type_name)
    if not isinstance(value, dict):
        errors.append("%s: a %s object expected, got %r" % (path, type_name, value))
        return
    by_json = {j: a for a, j in model.attribute_map.items()}
    for key, v in value.items():
        attr = by_json.get(key)
        if attr is None:
            errors.append("%s.%s: not a field of %s" % (path, key, type_name))
            continue
        validate(v, model.openapi_types[attr], "%s.%s" % (path, key), errors)
    for attr in required_fields(model):
        if model.attribute_map[attr] not in value:
            errors.append("%s: %s's required field %s is missing" % (path, type_name, model.attribute_map[attr]))
    if type_name == "V1ResourceRequirements":
        for part in ("requests", "limits"):
            for k, q in (value.get(part) or {}).items():
                if not isinstance(q, str) or not QUANTITY.match(q):
                    errors.append("%s.%s.%s: %r is not a quantity" % (path, part, k, q))


# monitoring.coreos.com/v1 ServiceMonitor: the fields of its spec and endpoints (the operator's API
# reference; those a baton scrape can use), with their kinds.
SERVICE_MONITOR_SPEC = {"selector": dict, "endpoints": list, "namespaceSelector": dict, "jobLabel": str,
                        "targetLabels": list, "podTargetLabels": list, "sampleLimit": int}
ENDPOINT = {"port": str, "targetPort": (str, int), "path": str, "scheme": str, "interval": str,
            "scrapeTimeout": str, "honorLabels": bool, "honorTimestamps": bool, "bearerTokenSecret": dict,
            "authorization": dict, "relabelings": list, "metricRelabelings": list, "params": dict,
            "tlsConfig": dict, "followRedirects": bool}
RELABEL = {"sourceLabels": list, "separator": str, "targetLabel": str, "regex": str, "modulus": int,
           "replacement": str, "action": str}
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")


def validate_fields(value, fields, path, errors):
    if not isinstance(value, dict):
        errors.append("%s: a map expected" % path)
        return
    for k, v in value.items():
        if k not in fields:
            errors.append("%s.%s: not a field" % (path, k))
        elif not isinstance(v, fields[k]) or (fields[k] is int and isinstance(v, bool)):
            errors.append("%s.%s: %r has the wrong type" % (path, k, v))


def validate_service_monitor(obj, errors):
    validate(obj.get("metadata"), "V1ObjectMeta", "ServiceMonitor.metadata", errors)
    spec = obj.get("spec")
    validate_fields(spec, SERVICE_MONITOR_SPEC, "ServiceMonitor.spec", errors)
    if not isinstance(spec, dict):
        return
    if "selector" not in spec or "endpoints" not in spec:
        errors.append("ServiceMonitor.spec: selector and endpoints are required")
    validate(spec.get("selector", {}), "V1LabelSelector", "ServiceMonitor.spec.selector", errors)
    for i, ep in enumerate(spec.get("endpoints") or []):
        p = "ServiceMonitor.spec.endpoints[%d]" % i
        validate_fields(ep, ENDPOINT, p, errors)
        for d in ("interval", "scrapeTimeout"):
            if isinstance(ep, dict) and d in ep and not DURATION.match(str(ep[d])):
                errors.append("%s.%s: %r is not a Prometheus duration" % (p, d, ep[d]))
        for j, r in enumerate((ep or {}).get("relabelings") or []):
            validate_fields(r, RELABEL, "%s.relabelings[%d]" % (p, j), errors)


def validate_object(obj, errors):
    """Errors of one manifest object (its kind's schema)."""
    if not isinstance(obj, dict):
        errors.append("a document that is not an object")
        return
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key in BUILTIN:
        validate(obj, BUILTIN[key], obj["kind"], errors)
    elif key == ("monitoring.coreos.com/v1", "ServiceMonitor"):
        validate_service_monitor(obj, errors)
    elif key == ("monitoring.coreos.com/v1", "PrometheusRule"):
        validate(obj.get("metadata"), "V1ObjectMeta", "PrometheusRule.metadata", errors)
        if set(obj) - {"apiVersion", "kind", "metadata", "spec"} or set(obj.get("spec") or {}) != {"groups"}:
            errors.append("PrometheusRule: fields apiVersion, kind, metadata, spec.groups only")
    else:
        errors.append("%s %s: a kind this check does not know" % key)


def load_all():
    docs = {}
    for name in sorted(os.listdir(KDIR)):
        if name.endswith(".yaml") and name != "kustomization.yaml":
            with open(os.path.join(KDIR, name), encoding="utf-8") as f:
                docs[name] = [d for d in yaml.safe_load_all(f) if d is not None]
    return docs


def main():
    fresh = subprocess.run(["/usr/bin/python3", os.path.join(KDIR, "render.py"), "--check"], capture_output=True,
                           text=True)
    check(fresh.returncode == 0, "render.py's files are fresh " + fresh.stderr.strip())

    docs = load_all()
    objects = [o for name in docs for o in docs[name]]
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o.get("kind"), []).append(o)
        errors = []
        validate_object(o, errors)
        check(not errors, "%s %s matches its API's schema %s" % (o.get("kind"), o.get("metadata", {}).get("name"),
                                                                 errors))
    check(sorted(by_kind) == ["ConfigMap", "DaemonSet", "Namespace", "PrometheusRule", "Service", "ServiceMonitor"],
          "the objects: " + ", ".join(sorted(by_kind)))
    ds = by_kind["DaemonSet"][0]
    svc = by_kind["Service"][0]
    sm = by_kind["ServiceMonitor"][0]
    pod = ds["spec"]["template"]
    spec = pod["spec"]
    labels = pod["metadata"]["labels"]
    selects = lambda sel: all(labels.get(k) == v for k, v in sel.items())  # noqa: E731
    check(selects(ds["spec"]["selector"]["matchLabels"]), "the DaemonSet's selector matches its pods")
    check(selects(svc["spec"]["selector"]), "the Service selects the agent's pods")
    check(all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items()),
          "the ServiceMonitor selects the Service")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    check(all(ep["port"] in svc_ports for ep in sm["spec"]["endpoints"]), "the ServiceMonitor's port is the Service's")
    container = spec["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    check(svc_ports["metrics"]["targetPort"] in ports, "the Service's targetPort is the container's")
    check(spec.get("hostPID") is True and spec.get("automountServiceAccountToken") is False,
          "hostPID, and no service account token")
    check(spec.get("priorityClassName") == "system-node-critical", "system-node-critical")
    check({"operator": "Exists"} in spec.get("tolerations", []), "tolerates every taint")
    check(svc["spec"].get("publishNotReadyAddresses") is True, "an unready agent stays scraped")
    check(sm["spec"]["endpoints"][0].get("honorLabels") is True, "honorLabels")
    check("nvidia.com/gpu" not in json.dumps(container.get("resources", {})), "no GPU is asked for")
    env = {e["name"]: e for e in container["env"]}
    check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
          "NODE_NAME is the node's name")
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    check(all(m["name"] in volumes for m in container["volumeMounts"]), "every mount has its volume")
    for host, at in (("/proc", "/host/proc"), ("/sys", "/host/sys"), ("/var/lib/kubelet/pod-resources",
                                                                       "/var/lib/kubelet/pod-resources")):
        m = mounts.get(at)
        check(m is not None and m.get("readOnly") is True and volumes[m["name"]]["hostPath"]["path"] == host,
              "host %s read-only at %s" % (host, at))
    check("--proc-root=/host/proc" in container["args"] and "--sys-root=/host/sys" in container["args"],
          "the agent reads the host's /proc and /sys")
    check(container["securityContext"].get("readOnlyRootFilesystem") is True, "a read-only root filesystem")
    for m in container["volumeMounts"]:
        v = volumes[m["name"]]
        writable = not m.get("readOnly") and "hostPath" in v
        check(not writable or v["hostPath"]["path"] == "/var/lib/baton",
              "the host is written only in /var/lib/baton (%s)" % m["mountPath"])

    # The ConfigMap's baton.toml: what baton loads, listening where the port says.
    cm = [c for c in by_kind["ConfigMap"] if c["metadata"]["name"] == "baton-config"][0]
    toml = cm["data"]["baton.toml"]
    m = re.search(r'^listen\s*=\s*":(\d+)"', toml, re.M)
    check(m is not None and int(m.group(1)) == ports["metrics"] == svc_ports["metrics"]["port"],
          "the agent listens on the container's and the Service's port")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "baton.toml")
        with open(path, "w") as f:
            f.write(toml)
        env_vars = dict(os.environ, BATON_SYSTEM_CONFIG=path, XDG_CONFIG_HOME=tmp, XDG_STATE_HOME=tmp)
        r = subprocess.run([BATON, "snapshot", "--no-gpus", "--no-processes"], env=env_vars, capture_output=True,
                           text=True)
        check(r.returncode == 0, "the ConfigMap's baton.toml loads in baton " + r.stderr.strip())
        with open(path, "w") as f:
            f.write(toml.replace("metrics_without_token", "metrics_without_tokn"))
        r = subprocess.run([BATON, "snapshot", "--no-gpus", "--no-processes"], env=env_vars, capture_output=True,
                           text=True)
        check(r.returncode != 0, "(and a misspelt key in it would not: %s)" % r.stderr.strip())

        # The PrometheusRule: promtool checks its groups; they are deploy/prometheus/'s.
        rule = by_kind["PrometheusRule"][0]
        rules_path = os.path.join(tmp, "rules.yml")
        with open(rules_path, "w") as f:
            yaml.safe_dump({"groups": rule["spec"]["groups"]}, f)
        r = subprocess.run(["promtool", "check", "rules", rules_path], capture_output=True, text=True)
        check(r.returncode == 0, "promtool checks the PrometheusRule's groups " + r.stdout.strip()[-200:])
    with open(os.path.join(SOURCE, "deploy", "prometheus", "baton-rules.yml")) as f:
        check(yaml.safe_load(f)["groups"] == rule["spec"]["groups"], "the PrometheusRule is baton-rules.yml")
    dash = [c for c in by_kind["ConfigMap"] if c["metadata"]["name"] == "baton-grafana-dashboard"][0]
    with open(os.path.join(SOURCE, "deploy", "grafana", "baton.json")) as f:
        check(json.loads(dash["data"]["baton.json"]) == json.load(f), "the dashboard ConfigMap is baton.json")
    check(dash["metadata"]["labels"].get("grafana_dashboard") == "1", "labelled for the Grafana sidecar")

    # kubectl kustomize (Debian's kubernetes-client) builds the folder, with the image renamed.
    r = subprocess.run(["kubectl", "kustomize", KDIR], capture_output=True, text=True)
    built = [d for d in yaml.safe_load_all(r.stdout) if d] if r.returncode == 0 else []
    check(r.returncode == 0 and len(built) == len(objects), "kubectl kustomize builds %d objects %s" %
          (len(built), r.stderr.strip()[-300:]))

    # The checker bites: each mutation is refused, at its path.
    mutations = [
        ("hostPid: a misspelt field", lambda d: d["spec"]["template"]["spec"].update(hostPid=True),
         "spec.template.spec.hostPid: not a field"),
        ("hostPID: a string", lambda d: d["spec"]["template"]["spec"].update(hostPID="yes"),
         "spec.template.spec.hostPID: true or false expected"),
        ("a container without its name", lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("name"),
         "required field name is missing"),
        ("a memory limit that is no quantity",
         lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].update(memory="128MB"),
         "is not a quantity"),
        ("a port as a string", lambda d: d["spec"]["template"]["spec"]["containers"][0]["ports"][0].update(
            containerPort="22866"), "containerPort: an integer expected"),
    ]
    for what, mutate, expected in mutations:
        bad = copy.deepcopy(ds)
        mutate(bad)
        errors = []
        validate_object(bad, errors)
        check(any(expected in e for e in errors), "refused: %s (%s)" % (what, errors))
    bad = copy.deepcopy(sm)
    bad["spec"]["endpoints"][0]["honorlabels"] = True
    bad["spec"]["endpoints"][0]["interval"] = "15 seconds"
    errors = []
    validate_object(bad, errors)
    check(any("honorlabels: not a field" in e for e in errors) and any("not a Prometheus duration" in e
                                                                       for e in errors),
          "refused: a ServiceMonitor with a misspelt field and a bad interval (%s)" % errors)
    return summary("Kubernetes manifests")


if __name__ == "__main__":
    sys.exit(main())
