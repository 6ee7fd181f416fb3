// baton serve's live page in a real browser (Debian's Chromium, headless, driven by playwright-core):
// the page loads with the fake NVML scenario near-oom, its charts have points and grow over 3 s, the
// near-OOM finding is shown with its fix, the runs tab lists a recorded run whose report opens, the
// page throws no error and breaks no Content-Security-Policy, and no request leaves 127.0.0.1.
// Screenshots (light and dark) are kept as test artefacts.
//
// usage: node dashboard_chromium_test.cjs BATON FAKE_NVML_LIB SCENARIO_JSON NODE_MODULES ARTEFACT_DIR
"use strict";
const { spawn, spawnSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [baton, nvml, scenario, nodeModules, artefacts] = process.argv.slice(2);
const { chromium } = require(path.join(nodeModules, "playwright-core"));

const failures = [];
function check(ok, what) {
  console.log((ok ? "ok:   " : "FAIL: ") + what);
  if (!ok) failures.push(what);
}
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "baton-page-"));
  const env = { ...process.env, BATON_NVML_LIBRARY: nvml, BATON_FAKE_NVML_SCENARIO: scenario,
                BATON_SYSTEM_CONFIG: "/dev/null", XDG_CONFIG_HOME: tmp, XDG_STATE_HOME: tmp };
  const db = path.join(tmp, "baton.db");
  const run = spawnSync(baton, ["run", "--db", db, "--name", "page-test", "--quiet", "--", "/bin/sh", "-c", "sleep 1.2"],
                        { env, encoding: "utf8" });
  check(run.status === 0, "a run is recorded first (" + (run.stderr || "").trim().split("\n").pop() + ")");

  const agent = spawn(baton, ["serve", "--listen", "127.0.0.1:0", "--interval", "0.5", "--db", db],
                      { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  agent.stderr.on("data", d => { stderr += d; });
  let browser;
  try {
    let port = null;
    for (let i = 0; i < 100 && !port; i++) {
      const m = /serving on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
      if (m) port = m[1];
      else await sleep(100);
    }
    check(port !== null, "baton serve listens");
    if (!port) return;
    const origin = "http://127.0.0.1:" + port;
    await sleep(1500);  // a few samples first

    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync"],
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const requests = [];
    const errors = [];
    page.on("request", r => requests.push(r.url()));
    page.on("pageerror", e => errors.push("page error: " + e.message));
    page.on("console", m => { if (m.type() === "error") errors.push("console: " + m.text()); });

    const response = await page.goto(origin + "/");
    check(response.status() === 200, "/ answers 200");
    await page.waitForSelector('.finding[data-rule="gpu_memory_near_oom"]', { timeout: 15000 }).catch(() => {});
    const finding = await page.$('.finding[data-rule="gpu_memory_near_oom"]');
    check(finding !== null, "the near-OOM finding is shown");
    if (finding) {
      const words = await finding.innerText();
      check(/GPU0 memory reached 97 %/.test(words), "with its summary");
      check(/Mixed precision/.test(words) && /GradScaler/.test(words), "with its fix and snippet");
    }
    const points = () => page.$$eval(".chart", cs => cs.map(c => [c.dataset.metric, Number(c.dataset.points)]));
    await sleep(1000);
    const before = await points();
    await sleep(3000);
    const after = await points();
    check(before.length >= 7, "the page has " + before.length + " charts");
    for (const [metric, n] of before) check(n > 0, "chart " + metric + " has points (" + n + ")");
    const gpuBefore = before.filter(([m]) => m.startsWith("gpu.")).reduce((a, [, n]) => a + n, 0);
    const gpuAfter = after.filter(([m]) => m.startsWith("gpu.")).reduce((a, [, n]) => a + n, 0);
    check(gpuAfter > gpuBefore, "the GPU charts grow over 3 s (" + gpuBefore + " -> " + gpuAfter + " points)");
    const cores = await page.$$eval("#cores div", d => d.length);
    check(cores === os.cpus().length, "a heat cell per core (" + cores + ")");
    const rows = await page.$$eval("#processes tbody tr", r => r.length);
    check(rows > 0, "the process table has rows (" + rows + ")");
    fs.mkdirSync(artefacts, { recursive: true });
    await page.screenshot({ path: path.join(artefacts, "serve-page-light.png"), fullPage: true });
    await page.screenshot({ path: path.join(artefacts, "serve-page.png") });  // the first screen (README)
    await page.click("#theme");
    await sleep(300);
    await page.screenshot({ path: path.join(artefacts, "serve-page-dark.png"), fullPage: true });

    await page.click('nav button[data-tab="runs"]');
    await page.waitForSelector("#run-table tbody tr", { timeout: 5000 }).catch(() => {});
    const runRows = await page.$$eval("#run-table tbody tr", r => r.map(x => x.innerText));
    check(runRows.length === 1 && /page-test/.test(runRows[0]), "the runs tab lists the recorded run");
    const href = await page.$eval("#run-table a", a => a.href).catch(() => "");
    const report = await page.goto(href || origin + "/api/v1/runs/1/report");
    const html = report ? await report.text() : "";
    check(report && report.status() === 200 && html.includes("<svg"), "its report opens: " + href);

    check(errors.length === 0, "no page error, no CSP violation" + (errors.length ? ": " + errors.join("; ") : ""));
    const outside = requests.filter(u => !u.startsWith(origin + "/"));
    check(requests.length > 10 && outside.length === 0,
          requests.length + " requests, none outside " + origin + (outside.length ? ": " + outside.join(", ") : ""));
  } finally {
    if (browser) await browser.close();
    agent.kill("SIGTERM");
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch(e => { failures.push(String(e)); console.log("FAIL: " + e.stack); }).finally(() => {
  console.log(failures.length ? failures.length + " check(s) failed" : "the live page: every check passed");
  process.exit(failures.length ? 1 : 0);
});
