#!/usr/bin/env python3
"""Checks a baton report as Chromium parsed it (--dump-dom), Chromium's network log, and the
screenshot. Standard library only.

  check_report_dom.py DOM SAMPLES FINDINGS GPUS NETLOG CONTROL_NETLOG PNG WIDTH HEIGHT STEPS
"""
import html.parser
import json
import struct
import sys
import zlib


class Charts(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.charts = {}  # id -> [(label, points in the attribute, data-points)]
        self.current = None
        self.findings = 0
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "chart" in a.get("class", ""):
            self.current = a["id"]
            self.charts[self.current] = []
        elif tag == "polyline" and self.current:
            pairs = len(a.get("points", "").split())
            self.charts[self.current].append((a.get("data-label"), pairs, int(a.get("data-points", -1))))
        elif tag == "tr" and a.get("class") == "finding":
            self.findings += 1
        elif tag == "title" and self.current is None:
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def page_requests(netlog_path):
    """URLs the page itself asked for: requests whose network isolation key is the file:// page's."""
    log = json.load(open(netlog_path))
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for e in log["events"]:
        p = e.get("params", {})
        if e["type"] == start_job and "file://" in p.get("network_isolation_key", "") and not p["url"].startswith("file:"):
            urls.append(p["url"])
    return urls


def png_check(path, width, height):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG"
    w, h = struct.unpack(">II", data[16:24])
    assert (w, h) == (width, height), f"screenshot is {w}x{h}, expected {width}x{height}"
    idat, at = b"", 8
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + n]
        at += 12 + n
    pixels = zlib.decompress(idat)
    distinct = len(set(pixels[i:i + 3] for i in range(0, len(pixels) - 3, 997)))
    assert distinct > 20, f"the screenshot looks blank ({distinct} distinct colours sampled)"
    return distinct


def main():
    dom, samples, findings, gpus, netlog, control, png, width, height, steps, gpu_samples = sys.argv[1:12]
    samples, findings, gpus, steps, gpu_samples = int(samples), int(findings), int(gpus), int(steps), int(gpu_samples)
    p = Charts()
    p.feed(open(dom).read())
    failures = []
    if not p.title.startswith("baton run 1: report-test"):
        failures.append(f"page title is {p.title!r}")
    want = {"chart-gpu-utilization", "chart-gpu-sm", "chart-gpu-memory", "chart-gpu-power", "chart-gpu-temperature",
            "chart-gpu-clock", "chart-gpu-throttled", "chart-cpu", "chart-memory", "chart-swap", "chart-iowait",
            "chart-disk", "chart-step-time", "chart-throughput"}
    if set(p.charts) != want:
        failures.append(f"charts {sorted(p.charts)}, expected {sorted(want)}")
    if samples < 5:
        failures.append(f"only {samples} samples recorded")
    if gpu_samples < 3:
        failures.append(f"only {gpu_samples} samples with the job's GPUs recorded")
    for chart, lines in sorted(p.charts.items()):
        if not lines:
            failures.append(f"{chart}: no line")
        expected = (steps if chart in ("chart-step-time", "chart-throughput")  # a point per step
                    else gpu_samples if chart.startswith("chart-gpu-") else samples)
        for label, pairs, declared in lines:
            if pairs != expected or declared != expected:
                failures.append(f"{chart}/{label}: {pairs} points drawn ({declared} declared), {expected} recorded")
        print(f"{chart}: {len(lines)} line(s) of {lines[0][1] if lines else 0} points")
    gpu_lines = [l for l in p.charts.get("chart-gpu-memory", [])]
    if len(gpu_lines) != gpus:
        failures.append(f"{len(gpu_lines)} GPU memory lines, expected {gpus}")
    if p.findings != findings:
        failures.append(f"{p.findings} findings in the table, {findings} recorded")
    requests = page_requests(netlog)
    if requests:
        failures.append(f"the report made requests: {requests}")
    if not any("127.0.0.1:9" in u for u in page_requests(control)):
        failures.append("the control page's request is not in its network log: the request check cannot see requests")
    try:
        colours = png_check(png, int(width), int(height))
        print(f"screenshot: {width}x{height}, {colours} distinct colours sampled")
    except AssertionError as e:
        failures.append(str(e))
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
