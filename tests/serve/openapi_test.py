#!/usr/bin/env python3
"""docs/openapi.json against the real agent: the file is OpenAPI 3 with every endpoint baton serve answers,
and every documented GET, asked of a live agent (fake NVML near-oom, one recorded run), answers a documented
status with the documented content type and a body that has the schema's required keys and types (a small
JSON Schema subset: type, required, properties, items, enum, $ref). Unknown paths are 404.

usage: openapi_test.py BATON FAKE_NVML_LIB SCENARIO_JSON SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from serve_helpers import agent_env, check, start_agent, stop, summary

BATON, NVML, SCENARIO, SOURCE = sys.argv[1:5]


def resolve(spec, schema):
    while "$ref" in schema:
        node = spec
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def validate(spec, schema, value, where):
    schema = resolve(spec, schema)
    t = schema.get("type")
    if t == "integer":
        good = isinstance(value, int) and not isinstance(value, bool)
    elif t == "number":
        good = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif t:
        good = isinstance(value, TYPES[t])
    else:
        good = True
    if not good:
        return ["%s is %s, not %s" % (where, type(value).__name__, t)]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s = %r is not one of %s" % (where, value, schema["enum"]))
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                errors.append("%s lacks %s" % (where, k))
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                errors += validate(spec, sub, value[k], where + "." + k)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value[:50]):
            errors += validate(spec, schema["items"], item, "%s[%d]" % (where, i))
    return errors


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def main():
    spec = json.load(open(os.path.join(SOURCE, "docs", "openapi.json")))
    check(spec.get("openapi", "").startswith("3."), "docs/openapi.json is OpenAPI 3 (%s)" % spec.get("openapi"))
    for path in ["/metrics", "/api/v1/health", "/api/v1/snapshot", "/api/v1/findings", "/api/v1/history",
                 "/api/v1/runs", "/api/v1/runs/{id}", "/api/v1/runs/{id}/report", "/"]:
        check(path in spec["paths"], "documents " + path)

    tmp = tempfile.mkdtemp(prefix="baton-openapi-")
    env = agent_env(NVML, SCENARIO, tmp)
    db = os.path.join(tmp, "baton.db")
    subprocess.run([BATON, "run", "--db", db, "--quiet", "--", "/bin/sh", "-c", "sleep 1.2"], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    agent, port = start_agent(BATON, ["--interval", "0.2", "--db", db], env, tmp)
    try:
        check(port is not None, "baton serve listens")
        if not port:
            return
        time.sleep(1.5)
        base = "http://127.0.0.1:%d" % port
        asks = {"/api/v1/history": ["", "?metric=gpu.utilization_percent&subject=gpu:0",
                                    "?metric=gpu.utilization_percent&subject=*", "?metric=cpu.utilization_percent&from=-7200",
                                    "?metric=nope", "?metric=gpu.power_watts&from=x"],
                "/api/v1/runs/{id}": ["/api/v1/runs/1", "/api/v1/runs/2"],
                "/api/v1/runs/{id}/report": ["/api/v1/runs/1/report", "/api/v1/runs/7/report"]}
        for path, item in spec["paths"].items():
            op = item["get"]
            urls = [path + q for q in asks[path]] if path == "/api/v1/history" else asks.get(path, [path])
            for url in urls:
                status, ctype, body = fetch(base + url)
                documented = op["responses"].get(str(status))
                check(documented is not None, "GET %s answers %d, a documented status" % (url, status))
                if not documented:
                    continue
                want_type, media = next(iter(documented["content"].items()))
                check(ctype == want_type, "GET %s is %s" % (url, ctype))
                if want_type == "application/json":
                    errors = validate(spec, media["schema"], json.loads(body), url)
                    check(not errors, "GET %s matches its schema %s" % (url, errors[:3]))
        status, _, _ = fetch(base + "/api/v1/nothing")
        check(status == 404, "an undocumented path is 404")
    finally:
        stop([agent])
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
    sys.exit(summary("openapi"))
