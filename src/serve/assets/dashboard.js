// baton serve's live page. Everything comes from this agent's own API (docs/api.md): the charts
// start from /api/v1/history (the last five minutes in memory) and grow every second; findings and
// processes are polled. No request leaves the agent (the Content-Security-Policy says so too).
"use strict";

const WINDOW_SECONDS = 300;
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];

// A token in the address (#token=...) or typed in the form, sent as a bearer token, kept for this tab.
let token = sessionStorage.getItem("baton-token") || "";
const hashToken = new URLSearchParams(location.hash.slice(1)).get("token");
if (hashToken) {
  token = hashToken;
  sessionStorage.setItem("baton-token", token);
  history.replaceState(null, "", location.pathname);
}

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const r = await fetch(path, { headers, cache: "no-store" });
  if (r.status === 401) {
    document.getElementById("token-form").hidden = false;
    throw new Error("this agent asks for a token");
  }
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

function text(tag, content, cls) {
  const e = document.createElement(tag);
  if (content !== undefined) e.textContent = content;
  if (cls) e.className = cls;
  return e;
}

function bytes(v) {
  if (v == null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v.toFixed(0)) + " " + units[i];
}

function rate(v) { return v == null ? "" : bytes(v) + "/s"; }
function percent(v) { return v == null ? "" : v.toFixed(0) + " %"; }

// One chart: several metrics (each with every subject), kept to the last WINDOW_SECONDS.
class Chart {
  constructor(parent, title, metrics, format, filter) {
    this.title = title;
    this.metrics = metrics;    // [{metric, label: subject => text}]
    this.format = format;
    this.filter = filter || (() => true);
    this.values = new Map();   // series key -> Map(time -> value)
    this.labels = new Map();   // series key -> label
    this.el = text("div", undefined, "chart");
    this.el.dataset.metric = metrics.map(m => m.metric).join(" ");
    this.el.dataset.points = "0";
    parent.appendChild(this.el);
    this.plot = null;
    this.shape = "";
  }

  add(metric, series) {
    const spec = this.metrics.find(m => m.metric === metric);
    for (const s of series) {
      if (!this.filter(s.subject)) continue;
      const key = metric + " " + s.subject;
      if (!this.values.has(key)) {
        this.values.set(key, new Map());
        this.labels.set(key, spec.label(s.subject));
      }
      const m = this.values.get(key);
      for (const [t, avg] of s.points) m.set(t, avg);
    }
  }

  draw(now) {
    const keys = [...this.values.keys()].sort();
    const times = new Set();
    for (const k of keys) {
      const m = this.values.get(k);
      for (const t of m.keys()) {
        if (t < now - WINDOW_SECONDS) m.delete(t); else times.add(t);
      }
    }
    const xs = [...times].sort((a, b) => a - b);
    const data = [xs, ...keys.map(k => xs.map(t => this.values.get(k).get(t) ?? null))];
    let points = 0;
    for (let i = 1; i < data.length; i++) points += data[i].filter(v => v != null).length;
    this.el.dataset.points = String(points);
    const shape = keys.join("|");
    const width = Math.max(300, this.el.clientWidth - 10);
    if (!this.plot || shape !== this.shape) {
      if (this.plot) this.plot.destroy();
      this.shape = shape;
      const fmt = this.format;
      const dark = document.documentElement.classList.contains("dark") ||
        (!document.documentElement.classList.contains("light") && matchMedia("(prefers-color-scheme: dark)").matches);
      const axis = { stroke: dark ? "#9aa4b2" : "#5d6676", grid: { stroke: dark ? "#2c3440" : "#e4e8ee" } };
      this.plot = new uPlot({
        title: this.title, width, height: 220,
        series: [{}, ...keys.map((k, i) => ({ label: this.labels.get(k), stroke: PALETTE[i % PALETTE.length], width: 1.5, value: (u, v) => fmt(v) }))],
        axes: [axis, { ...axis, size: 95, values: (u, vals) => vals.map(fmt) }],
        scales: { x: { time: true }, y: fmt === percent ? { range: [0, 100] } : {} },
        legend: { live: true },
      }, data, this.el);
    } else {
      if (Math.abs(this.plot.width - width) > 20) this.plot.setSize({ width, height: 220 });
      this.plot.setData(data);
    }
  }
}

const charts = [];
const since = new Map();  // metric -> the newest time received (Unix seconds)

function setupCharts() {
  const gpu = document.getElementById("gpu-charts");
  const host = document.getElementById("host-charts");
  const gpuLabel = s => "GPU" + s.split(":")[1];
  charts.push(new Chart(gpu, "GPU utilisation", [{ metric: "gpu.utilization_percent", label: gpuLabel }], percent));
  charts.push(new Chart(gpu, "SM activity", [{ metric: "gpu.sm_activity_percent", label: gpuLabel }], percent));
  charts.push(new Chart(gpu, "GPU memory used", [{ metric: "gpu.memory_used_percent", label: gpuLabel }], percent));
  charts.push(new Chart(host, "CPU and I/O wait", [
    { metric: "cpu.utilization_percent", label: () => "busy" },
    { metric: "cpu.iowait_percent", label: () => "I/O wait" }], percent));
  charts.push(new Chart(host, "Memory and swap", [
    { metric: "memory.used_bytes", label: () => "memory used" },
    { metric: "memory.shm_used_bytes", label: () => "/dev/shm" },
    { metric: "swap.used_bytes", label: () => "swap used" }], bytes));
  charts.push(new Chart(host, "Disks", [
    { metric: "disk.read_bytes_per_second", label: s => s.slice(5) + " read" },
    { metric: "disk.write_bytes_per_second", label: s => s.slice(5) + " write" }], rate));
  charts.push(new Chart(host, "Network", [
    { metric: "network.rx_bytes_per_second", label: s => s.slice(4) + " rx" },
    { metric: "network.tx_bytes_per_second", label: s => s.slice(4) + " tx" }], rate, s => s !== "net:lo"));
}

async function pollCharts() {
  const metrics = [...new Set(charts.flatMap(c => c.metrics.map(m => m.metric)).concat(["cpu.core_utilization_percent"]))];
  const now = Date.now() / 1000;
  const answers = await Promise.all(metrics.map(m => {
    const from = since.has(m) ? since.get(m) + 0.001 : now - WINDOW_SECONDS;
    return api("/api/v1/history?metric=" + encodeURIComponent(m) + "&subject=*&from=" + from.toFixed(3))
      .then(r => [m, r]);
  }));
  for (const [m, r] of answers) {
    for (const s of r.series) for (const p of s.points) since.set(m, Math.max(since.get(m) || 0, p[0]));
    if (m === "cpu.core_utilization_percent") drawCores(r.series);
    for (const c of charts) if (c.metrics.some(x => x.metric === m)) c.add(m, r.series);
  }
  for (const c of charts) c.draw(now);
}

function drawCores(series) {
  const el = document.getElementById("cores");
  const latest = series.filter(s => s.points.length)
    .map(s => [Number(s.subject.split(":")[1]), s.points[s.points.length - 1][1]]);
  if (!latest.length) return;
  latest.sort((a, b) => a[0] - b[0]);
  el.replaceChildren(...latest.map(([id, v]) => {
    const d = text("div", String(id));
    d.title = "cpu" + id + ": " + v.toFixed(0) + " %";
    const hue = 120 - Math.min(100, v) * 1.2;  // green to red
    d.style.background = "hsl(" + hue + ", 70%, " + (45 + (100 - Math.min(100, v)) * 0.2) + "%)";
    return d;
  }));
}

async function pollFindings() {
  const r = await api("/api/v1/findings");
  const list = document.getElementById("finding-list");
  list.dataset.count = String(r.findings.length);
  if (!r.findings.length) {
    list.replaceChildren(text("p", "No finding: nothing holds training back over the last " + Math.round(r.window.seconds) + " s.", "quiet"));
    return;
  }
  list.replaceChildren(...r.findings.map(f => {
    const card = text("article", undefined, "finding " + f.severity);
    card.dataset.rule = f.rule;
    // Warnings and critical findings open; an info one is a line, opened by a click.
    const more = text("details");
    more.open = f.severity !== "info";
    const head = text("summary");
    head.append(text("span", f.severity, "sev"), text("strong", f.summary), " ", text("span", f.rule + " [" + f.subject + "]", "rule"));
    more.append(head);
    card.append(more);
    if (f.evidence && f.evidence.length) {
      const t = text("table");
      const tr = text("tr");
      tr.append(...["metric", "average", "min", "max", "threshold", "breach share"].map(h => text("th", h)));
      t.append(tr);
      for (const e of f.evidence) {
        const row = text("tr");
        const num = v => v == null ? "" : Number(v).toFixed(1);
        row.append(text("td", e.metric), text("td", num(e.average), "n"), text("td", num(e.minimum), "n"), text("td", num(e.maximum), "n"),
          text("td", e.threshold), text("td", e.breach_share == null ? "" : (e.breach_share * 100).toFixed(0) + " %", "n"));
        t.append(row);
      }
      more.append(t);
    }
    more.append(text("p", "Fix: " + f.recommendation));
    if (f.snippet) more.append(text("pre", f.snippet));
    return card;
  }));
}

async function pollSnapshot() {
  const s = await api("/api/v1/snapshot");
  document.getElementById("host").textContent = s.host.hostname;
  const status = document.getElementById("status");
  status.className = "";
  status.textContent = s.gpus.length + " GPU" + (s.gpus.length === 1 ? "" : "s") + " (" + s.gpu_status + "), " +
    s.host.cpu_count + " cores, " + bytes(s.memory.total_bytes) + " RAM; " + new Date(s.time).toLocaleTimeString();
  const procs = (s.processes || []).slice().sort((a, b) =>
    (b.gpu_memory_bytes || 0) - (a.gpu_memory_bytes || 0) || (b.cpu_percent || 0) - (a.cpu_percent || 0)).slice(0, 25);
  document.querySelector("#processes tbody").replaceChildren(...procs.map(p => {
    const tr = text("tr");
    tr.append(text("td", String(p.pid), "n"), text("td", p.user), text("td", p.gpu_memory_bytes ? bytes(p.gpu_memory_bytes) : "", "n"),
      text("td", (p.gpu_indices || []).join(",")), text("td", p.cpu_percent == null ? "" : p.cpu_percent.toFixed(0) + " %", "n"),
      text("td", bytes(p.rss_bytes), "n"), text("td", p.command, "cmd"));
    return tr;
  }));
}

async function loadRuns() {
  const r = await api("/api/v1/runs");
  document.querySelector("#run-table tbody").replaceChildren(...r.runs.slice().reverse().map(run => {
    const tr = text("tr");
    const seconds = run.end ? (new Date(run.end) - new Date(run.start)) / 1000 : null;
    const link = text("a", "report");
    link.href = "/api/v1/runs/" + run.id + "/report" + (token ? "?access_token=" + encodeURIComponent(token) : "");
    link.target = "_blank";
    link.rel = "noopener";
    const cell = text("td");
    cell.append(link);
    tr.append(text("td", String(run.id), "n"), text("td", run.state), text("td", new Date(run.start).toLocaleString()),
      text("td", seconds == null ? "" : seconds.toFixed(0) + " s", "n"), text("td", run.exit_status == null ? "" : String(run.exit_status), "n"),
      text("td", String(run.findings), "n"), text("td", run.name), cell);
    return tr;
  }));
}

function fail(e) {
  const status = document.getElementById("status");
  status.className = "error";
  status.textContent = String(e.message || e);
}

function every(ms, f) {
  const run = () => f().catch(fail).finally(() => setTimeout(run, ms));
  run();
}

document.querySelectorAll("nav button").forEach(b => b.addEventListener("click", () => {
  document.querySelectorAll("nav button").forEach(x => x.classList.toggle("active", x === b));
  document.querySelectorAll(".tab").forEach(t => { t.hidden = t.id !== b.dataset.tab; });
  if (b.dataset.tab === "runs") loadRuns().catch(fail);
}));
document.getElementById("theme").addEventListener("click", () => {
  const root = document.documentElement;
  const dark = root.classList.contains("dark") || (!root.classList.contains("light") && matchMedia("(prefers-color-scheme: dark)").matches);
  root.classList.toggle("dark", !dark);
  root.classList.toggle("light", dark);
  localStorage.setItem("baton-theme", dark ? "light" : "dark");
  for (const c of charts) { if (c.plot) c.plot.destroy(); c.plot = null; c.draw(Date.now() / 1000); }
});
document.getElementById("token-form").addEventListener("submit", e => {
  e.preventDefault();
  token = document.getElementById("token").value.trim();
  sessionStorage.setItem("baton-token", token);
  document.getElementById("token-form").hidden = true;
});
const theme = localStorage.getItem("baton-theme");
if (theme) document.documentElement.classList.add(theme);

setupCharts();
every(1000, pollCharts);
every(2000, pollFindings);
every(2000, pollSnapshot);
