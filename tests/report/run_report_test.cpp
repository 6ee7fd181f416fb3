// The run report (HTML and Markdown) and the figures it shares with `baton compare`, on a fixture run.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "report/run_figures.hpp"
#include "profile/trace_builder.hpp"
#include "report/run_report.hpp"

using namespace baton;
using namespace baton::report;

namespace {

constexpr double kGiB = 1073741824.0;

// One GPU's figures in a sample (memory in GiB; SM activity empty: not reported).
store::RunSample::Gpu gpu(std::uint8_t index, double utilization, double memory_gib, std::optional<double> sm) {
    store::RunSample::Gpu g;
    g.index = index;
    g.utilization_percent = utilization;
    g.memory_used_bytes = memory_gib * kGiB;
    g.sm_activity_percent = sm;
    return g;
}

// 40 samples 0.5 s apart: GPU0 busy (SM activity reported), GPU1 idle (no SM activity), a swap burst
// of 10 MB/s for 2 s, disks reading 100 MB/s.
RunReportData fixture() {
    RunReportData d;
    store::RunRecord& r = d.run;
    r.id = 7;
    r.name = "train <resnet>";
    r.command = "python train.py --tag 'a|b'";
    r.cwd = "/work";
    r.host = "gpu-01";
    r.start_ms = 1'000'000;
    r.end_ms = 1'000'000 + 20'000;
    r.exit_status = 0;
    r.state = store::RunState::finished;
    r.cpu_count = 16;
    r.memory_total_bytes = 64ull << 30;
    r.gpus = {{0, "GPU-a", "NVIDIA H200", 141ull << 30}, {1, "GPU-b", "NVIDIA H200", 141ull << 30}};
    r.summary = "baton run: train exited with 0 & more";
    for (int i = 0; i < 40; ++i) {
        store::RunSample s;
        s.t_ms = r.start_ms + 500 + i * 500;
        s.cpu_percent = 50;
        s.iowait_percent = 1;
        s.memory_used_bytes = (20 + 0.1 * i) * kGiB;
        s.swap_bytes_per_second = i >= 10 && i < 14 ? 10e6 : 0;
        s.job_cpu_percent = 800;  // 8 cores of 16: half the host
        s.job_rss_bytes = 6 * kGiB;
        s.disk_read_bytes_per_second = 100e6;
        s.disk_write_bytes_per_second = 2e6;
        store::RunSample::Gpu g0 = gpu(0, 80 + i % 20, 70, 60);
        g0.power_watts = i >= 30 ? 400 : 650;  // from 15 s on, thermal slowdown: power and clock drop
        g0.temperature_celsius = i >= 30 ? 88 : 70;
        g0.sm_clock_mhz = i >= 30 ? 1100 : 1980;
        g0.throttle_reasons = i >= 30 ? (1u << 5) : 0;
        s.gpus.push_back(g0);
        s.gpus.push_back(gpu(1, 0, 1, std::nullopt));  // an older record: no power, temperature, clock or reasons
        d.samples.push_back(s);
    }
    for (int i = 0; i < 25; ++i) {  // the hook's steps: 25 of 200 ms with 50 ms of data wait, 64 samples
        store::StepEvent e;
        e.t_ms = r.start_ms + 1000 + i * 200;
        e.pid = 100;
        e.step = i;
        e.step_ms = 200;
        e.wait_ms = 50;
        e.samples = 64;
        d.steps.push_back(e);
    }
    d.findings.push_back(
        {r.start_ms + 5000, "input_bound", "warning", "gpu:1", "GPU1 waits <for> data", "num_workers=7", {}});
    d.findings.push_back(
        {r.start_ms + 15000, "cuda_oom", "critical", "pid:100", "CUDA out of memory", "smaller batch", {}});
    return d;
}

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

std::map<std::string, std::size_t> points_by_chart_and_label(const std::string& html) {
    std::map<std::string, std::size_t> out;
    const std::regex chart(R"re(<svg class="chart" id="([^"]+)")re");
    const std::regex line(R"re(<polyline class="series" data-label="([^"]*)" data-points="(\d+)")re");
    std::string current;
    std::size_t at = 0;
    while (at < html.size()) {
        std::smatch m;
        const std::string rest = html.substr(at, html.find('\n', at) - at);
        if (std::regex_search(rest, m, chart)) current = m[1];
        if (std::regex_search(rest, m, line)) out[current + "/" + std::string(m[1])] = std::stoul(m[2]);
        const std::size_t nl = html.find('\n', at);
        if (nl == std::string::npos) break;
        at = nl + 1;
    }
    return out;
}

}  // namespace

TEST(RunFigures, PerGpuAndWholeRun) {
    const RunReportData d = fixture();
    const RunFigures f = run_figures(d.run, d.samples, d.findings);
    EXPECT_DOUBLE_EQ(f.seconds, 20.0);
    EXPECT_EQ(f.samples, 40u);
    ASSERT_EQ(f.gpus.size(), 2u);
    EXPECT_EQ(f.gpus[0].name, "NVIDIA H200");
    EXPECT_DOUBLE_EQ(f.gpus[0].util_avg, 89.5);  // 80..99 twice
    EXPECT_DOUBLE_EQ(f.gpus[0].util_p95, 98.0);  // nearest rank: the 38th of 40
    EXPECT_DOUBLE_EQ(f.gpus[0].sm_avg, 60.0);
    EXPECT_DOUBLE_EQ(f.gpus[1].sm_avg, -1.0);  // never reported
    EXPECT_NEAR(f.gpus[1].memory_total_gib, 141.0, 1e-9);
    EXPECT_DOUBLE_EQ(f.gpu_util_avg, 44.75);
    EXPECT_NEAR(f.swap_mb, 20.0, 1e-9);  // 10 MB/s for 4 intervals of 0.5 s
    EXPECT_DOUBLE_EQ(f.disk_read_avg, 100.0);
    EXPECT_DOUBLE_EQ(f.job_cpu_peak, 800.0);
    EXPECT_NEAR(f.host_memory_peak_gib, 23.9, 1e-5);
    EXPECT_EQ(f.findings, (std::set<std::string>{"cuda_oom [pid:100]", "input_bound [gpu:1]"}));
    EXPECT_EQ(f.steps, 0u);  // without the hook's steps
    const RunFigures s = run_figures(d.run, d.samples, d.findings, d.steps);
    EXPECT_EQ(s.steps, 25u);
    EXPECT_DOUBLE_EQ(s.step_ms_median, 200.0);
    EXPECT_DOUBLE_EQ(s.data_wait_percent, 25.0);
    EXPECT_DOUBLE_EQ(s.samples_per_second, 320.0);
    // An interrupted run has no end: its duration runs to the last sample.
    store::RunRecord r = d.run;
    r.end_ms.reset();
    r.state = store::RunState::interrupted;
    EXPECT_DOUBLE_EQ(run_figures(r, d.samples, {}).seconds, 20.0);
    EXPECT_EQ(machine_text(d.run), "16 CPUs, 64.0 GiB memory; 2 x NVIDIA H200 141.0 GiB");
    r.gpus[1].name = "NVIDIA A100-SXM4-80GB";
    r.gpus[1].memory_total_bytes = 80ull << 30;
    EXPECT_EQ(machine_text(r),
              "16 CPUs, 64.0 GiB memory; GPU0 NVIDIA H200 141.0 GiB; GPU1 NVIDIA A100-SXM4-80GB 80.0 GiB");
}

TEST(RunReport, HtmlIsSelfContainedWithAPointPerSample) {
    const std::string html = run_report_html(fixture());
    // Nothing to fetch: a policy that forbids every request, no script, no URL but the SVG namespace.
    EXPECT_NE(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'"),
              std::string::npos);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    std::string no_ns = std::regex_replace(html, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
    EXPECT_EQ(no_ns.find("http://"), std::string::npos);
    EXPECT_EQ(no_ns.find("https://"), std::string::npos);
    EXPECT_EQ(no_ns.find("src="), std::string::npos);
    const auto points = points_by_chart_and_label(html);
    const std::map<std::string, std::size_t> want = {{"chart-gpu-utilization/GPU0", 40},
                                                     {"chart-gpu-sm/GPU0", 40},
                                                     {"chart-gpu-utilization/GPU1", 40},
                                                     {"chart-gpu-memory/GPU0", 40},
                                                     {"chart-gpu-memory/GPU1", 40},
                                                     {"chart-gpu-power/GPU0", 40},
                                                     {"chart-gpu-temperature/GPU0", 40},
                                                     {"chart-gpu-clock/GPU0", 40},
                                                     {"chart-gpu-throttled/GPU0", 40},
                                                     {"chart-cpu/host", 40},
                                                     {"chart-cpu/job", 40},
                                                     {"chart-memory/host used", 40},
                                                     {"chart-memory/job RSS", 40},
                                                     {"chart-swap/swap", 40},
                                                     {"chart-iowait/I/O wait", 40},
                                                     {"chart-disk/read", 40},
                                                     {"chart-disk/write", 40},
                                                     {"chart-step-time/step", 25},
                                                     {"chart-step-time/data wait", 25},
                                                     {"chart-throughput/samples/s", 25}};
    EXPECT_EQ(points, want);
    // Two findings, in the table and marked on each of the 14 charts; text escaped.
    EXPECT_EQ(count(html, "<tr class=\"finding\""), 2u);
    EXPECT_EQ(count(html, "<g class=\"mark "), 28u);
    EXPECT_NE(html.find("GPU1 waits &lt;for&gt; data"), std::string::npos);
    EXPECT_NE(html.find("<title>baton run 7: train &lt;resnet&gt;</title>"), std::string::npos);
    EXPECT_NE(html.find("exited with 0 &amp; more"), std::string::npos);
    // The job's CPU against the host's: 800 % of one core on 16 CPUs is half the machine, y = middle.
    EXPECT_NE(html.find("CPU: the job against the host (% of all CPUs)"), std::string::npos);
}

TEST(RunReport, OldRunsWithoutMachineOrDiskRates) {
    RunReportData d = fixture();
    d.run.cpu_count.reset();
    d.run.memory_total_bytes.reset();
    d.run.gpus.clear();
    for (store::RunSample& s : d.samples) s.disk_read_bytes_per_second = s.disk_write_bytes_per_second = std::nullopt;
    d.findings.clear();
    const std::string html = run_report_html(d);
    EXPECT_NE(html.find("CPU (host: % of all CPUs; job: % of one core)"), std::string::npos);
    const auto points = points_by_chart_and_label(html);
    EXPECT_EQ(points.count("chart-disk/read"), 0u);
    EXPECT_NE(html.find("no samples"), std::string::npos);
    EXPECT_NE(html.find("No findings"), std::string::npos);
    EXPECT_EQ(points.at("chart-cpu/job"), 40u);
}

TEST(RunReport, NoGpuSaysSo) {
    RunReportData d = fixture();
    d.run.gpus.clear();
    for (store::RunSample& s : d.samples) s.gpus.clear();
    const std::string html = run_report_html(d);
    EXPECT_NE(html.find("No GPU was seen during this run."), std::string::npos);
    EXPECT_EQ(html.find("chart-gpu-utilization"), std::string::npos);
}

TEST(RunReport, Markdown) {
    const std::string md = run_report_markdown(fixture());
    // Names are text, never HTML that a Markdown viewer would render.
    EXPECT_EQ(md.rfind("# Run 7: train &lt;resnet&gt;\n", 0), 0u) << md.substr(0, 80);
    EXPECT_NE(md.find("| command | python train.py --tag 'a\\|b' |"), std::string::npos);  // pipes escaped
    EXPECT_NE(md.find("1. **warning** `input_bound` [gpu:1] at +0:05: GPU1 waits &lt;for&gt; data"), std::string::npos);
    EXPECT_NE(md.find("2. **critical** `cuda_oom` [pid:100] at +0:15"), std::string::npos);
    EXPECT_NE(md.find("| GPU0 | NVIDIA H200 | 90 % | 98 % | 60 % | 70.0 of 141.0 GiB |"), std::string::npos) << md;
    EXPECT_NE(md.find("| GPU1 | NVIDIA H200 | 0 % | 0 % | not reported | 1.0 of 141.0 GiB |"), std::string::npos);
    EXPECT_NE(md.find("| disk read / write | avg 100.0 / 2.0 MB/s"), std::string::npos);
    EXPECT_NE(md.find("| training steps (baton hook) | 25, median 200.0 ms, p95 200.0 ms, data wait 25 % of step "
                      "time, 320 samples/s |"),
              std::string::npos)
        << md;
    // Sparklines: 40 samples give 40 characters; GPU1 at 0 % is flat at the bottom.
    std::string flat;
    for (int i = 0; i < 40; ++i) flat += "▁";
    EXPECT_NE(md.find("GPU util GPU1          " + flat + " (top 100 %)"), std::string::npos) << md;
    EXPECT_NE(md.find("CPU job                "), std::string::npos) << md;
    // No doubled labels, no exponents (a slow first step of 1.41 s read "1.41e+03 ms").
    EXPECT_EQ(md.find("I/O wait I/O wait"), std::string::npos) << md;
    EXPECT_NE(md.find("\nI/O wait               "), std::string::npos) << md;
    RunReportData slow = fixture();
    slow.steps[0].step_ms = 1410;
    const std::string md2 = run_report_markdown(slow);
    EXPECT_EQ(md2.find("e+"), std::string::npos) << md2;
    EXPECT_NE(md2.find("(top 1410 ms)"), std::string::npos) << md2;
}

TEST(RunReport, AnHourAtHalfASecondWithFourGpus) {
    // The size quoted in docs/performance.md: 7,200 samples, 4 GPUs with SM activity, disk rates.
    RunReportData d = fixture();
    d.samples.clear();
    d.run.end_ms = d.run.start_ms + 3'600'000;
    for (int i = 0; i < 7200; ++i) {
        store::RunSample s;
        s.t_ms = d.run.start_ms + 500 + i * 500;
        s.cpu_percent = 40 + i % 17;
        s.memory_used_bytes = 30 * kGiB;
        s.job_cpu_percent = 700;
        s.job_rss_bytes = 9 * kGiB;
        s.disk_read_bytes_per_second = (i % 50) * 1e6;
        s.disk_write_bytes_per_second = 1e6;
        for (std::uint8_t g = 0; g < 4; ++g) s.gpus.push_back(gpu(g, 90 + i % 9, 100, 70));
        d.samples.push_back(s);
    }
    const std::string html = run_report_html(d);
    EXPECT_EQ(points_by_chart_and_label(html).at("chart-gpu-utilization/GPU3"), 7200u);
    EXPECT_LT(html.size(), 4u << 20);
    std::printf("report of one hour, 0.5 s, 4 GPUs: %.2f MB\n", static_cast<double>(html.size()) / 1e6);
}

// The GPU that throttled at second 15: power, temperature, SM clock and a slowed-down series are
// charted from the stored samples (a point per sample); a GPU without these figures has no line.
TEST(RunReport, ThrottlingIsChartedOverTime) {
    const std::string html = run_report_html(fixture());
    const auto points = points_by_chart_and_label(html);
    for (const char* chart : {"chart-gpu-power", "chart-gpu-temperature", "chart-gpu-clock", "chart-gpu-throttled"}) {
        EXPECT_EQ(points.count(std::string(chart) + "/GPU0"), 1u) << chart;
        if (points.count(std::string(chart) + "/GPU0")) {
            EXPECT_EQ(points.at(std::string(chart) + "/GPU0"), 40u) << chart;
        }
        EXPECT_EQ(points.count(std::string(chart) + "/GPU1"), 0u) << chart;
    }
    // The slowed series is 0 before 15 s and 1 after: its polyline goes up once.
    const std::size_t at = html.find("id=\"chart-gpu-throttled\"");
    ASSERT_NE(at, std::string::npos);
    EXPECT_NE(html.find("GPU clock slowed", at), std::string::npos);
}

TEST(RunReport, AHangSectionWithTheVerdictAndEachRanksLastSteps) {
    RunReportData d = fixture();
    EXPECT_EQ(run_report_html(d).find("<section id=\"hang\">"), std::string::npos) << "no hang, no section";
    // Rank 1 stopped stepping 2 s before rank 0; the verdict came at +8 s, then again at +12 s.
    for (int i = 0; i < 10; ++i) {
        store::StepEvent e;
        e.t_ms = d.run.start_ms + 1000 + i * 200;
        e.pid = 101;
        e.rank = 1;
        e.step = i;
        e.step_ms = 150 + i;
        d.steps.push_back(e);
    }
    std::sort(d.steps.begin(), d.steps.end(), [](const auto& a, const auto& b) { return a.t_ms < b.t_ms; });
    d.hangs.push_back({d.run.start_ms + 8000, "rank_hang", "baton launch: rank_hang: first"});
    d.hangs.push_back({d.run.start_ms + 12000, "rank_desync",
                       "baton launch: rank_desync: rank 1 waits in <barrier>\n  ranks 0 (most recent call last):\n"
                       "      File \"/w/t.py\", line 9, in main\n"});
    const std::string html = run_report_html(d);
    EXPECT_NE(html.find("<section id=\"hang\">\n<h2>Hang</h2>\n<p><code>rank_desync</code> at +0:12"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("the last of 2 verdicts"), std::string::npos);
    EXPECT_NE(html.find("rank 1 waits in &lt;barrier&gt;"), std::string::npos) << "the text is escaped";
    // Rank 0: steps 0..24 end at +5.8 s (2.2 s before the first verdict); rank 1: 0..9 end at +2.8 s.
    EXPECT_NE(html.find("<tr><td>0</td><td>24</td><td>00:16:45.800</td><td>2.2 s</td><td>200, 200, 200, 200, "
                        "200</td></tr>"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("<tr><td>1</td><td>9</td><td>00:16:42.800</td><td>5.2 s</td><td>155, 156, 157, 158, "
                        "159</td></tr>"),
              std::string::npos)
        << html;
    const std::string md = run_report_markdown(d);
    EXPECT_NE(md.find("\n## Hang\n\n`rank_desync` at +0:12 (the last of 2 verdicts):\n\n"
                      "    baton launch: rank_desync: rank 1 waits in <barrier>\n"
                      "      ranks 0 (most recent call last):\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| 1 | 9 | 00:16:42.800 | 5.2 s | 155, 156, 157, 158, 159 |"), std::string::npos) << md;
}

TEST(RunReport, AStepSectionFromTheRunsProfilerWindow) {
    RunReportData d = fixture();
    EXPECT_EQ(run_report_html(d).find("<section id=\"step\">"), std::string::npos) << "no window, no section";
    EXPECT_FALSE(step_section({}).has_value());
    // Two steps on GPU0: a GEMM, an .item() at train.py(42) that drains the GPU.
    test::TraceBuilder b;
    for (int s = 0; s < 2; ++s) {
        const double o = s * 1000.0;
        b.step(5 + s, o, 1000).kernel("ampere_sgemm_128x64_nn", o + 10, o + 20, 480);
        b.python("train.py(42): train_step", o + 600, 100).op("aten::item", o + 610, 80);
        b.runtime("cudaStreamSynchronize", o + 620, 60);
    }
    const std::optional<StepSection> step = step_section({{d.run.start_ms + 5000, 0, 2, b.json()}});
    ASSERT_TRUE(step.has_value());
    ASSERT_TRUE(step->error.empty()) << step->error;
    const std::string html = run_report_html(d, &*step);
    EXPECT_NE(html.find("<section id=\"step\">\n<h2>Step</h2>\n<p>Rank 0's profiler window (<code>baton run "
                        "--profile</code>): 2 steps, 1.00 ms on average; <code>baton profile show 7</code>"),
              std::string::npos)
        << html;
    const std::regex bars("<svg class=\"step-bars\"");
    EXPECT_EQ(std::distance(std::sregex_iterator(html.begin(), html.end(), bars), std::sregex_iterator()), 2)
        << "GPU0's bars and the host's";
    EXPECT_NE(html.find(">GPU0 #6</text>"), std::string::npos);
    EXPECT_NE(html.find("<svg class=\"step-timeline\""), std::string::npos) << "one step as lanes";
    EXPECT_NE(html.find(">GPU0 stream 7</text>"), std::string::npos);
    EXPECT_NE(html.find("<td>gemm fp32</td><td><code>ampere_sgemm_128x64_nn</code>"), std::string::npos);
    EXPECT_NE(html.find("<code>aten::item (cudaStreamSynchronize)</code> at <code>train.py(42): train_step</code>"),
              std::string::npos);
    EXPECT_LT(html.find("<section id=\"step\">"), html.find("<section id=\"summary\">"));
    const std::string md = run_report_markdown(d, &*step);
    EXPECT_NE(md.find("\n## Step\n\nRank 0's profiler window: 2 step(s), 1.00 ms on average (`baton profile show "
                      "7`).\n\n| where | ms a step | share |\n|---|---|---|\n| GPU0 gemm | 0.48 | 48 % |"),
              std::string::npos)
        << md;
    // A kept trace that no longer reads is said, not skipped.
    const std::optional<StepSection> broken = step_section({{0, 0, 2, "\x1f\x8b garbage"}});
    ASSERT_TRUE(broken.has_value());
    EXPECT_NE(run_report_html(d, &*broken).find("could not be read"), std::string::npos);
}

// The Memory section: the allocator's figures at each step's end beside NVML's, and at an OOM the
// GPU's breakdown as a bar, the allocation sites and the fix; none without either.
TEST(RunReport, AMemorySectionWithTheStepsFiguresAndTheBreakdownAtTheOom) {
    RunReportData d = fixture();
    d.findings.erase(std::remove_if(d.findings.begin(), d.findings.end(),
                                    [](const store::RecordedFinding& f) { return f.rule == "cuda_oom"; }),
                     d.findings.end());
    EXPECT_EQ(run_report_html(d).find("<section id=\"memory\">"), std::string::npos);
    EXPECT_EQ(run_report_markdown(d).find("## Memory"), std::string::npos);
    for (int i = 0; i < 10; ++i) {
        store::StepEvent e;
        e.t_ms = d.run.start_ms + 1000 + i * 1000;
        e.step = i;
        e.step_ms = 100;
        e.data = fmt::format(
            R"({{"cuda":{{"device":0,"allocated_bytes":{},"reserved_bytes":{},"peak_allocated_bytes":{}}},"scale":2}})",
            (10 + i) * 1073741824ull, 70 * 1073741824ull, (60 + i) * 1073741824ull);
        d.steps.push_back(e);
    }
    std::string html = run_report_html(d);
    ASSERT_NE(html.find("<section id=\"memory\">"), std::string::npos);
    EXPECT_NE(html.find("id=\"chart-cuda-memory\""), std::string::npos);
    for (const char* label : {"allocated at step end", "step peak", "reserved", "GPU0 used (NVML)"})
        EXPECT_NE(html.find(std::string("data-label=\"") + label + "\" data-points=\""), std::string::npos) << label;
    EXPECT_EQ(html.find("At the out-of-memory error"), std::string::npos);  // no OOM

    store::RecordedFinding oom;
    oom.t_ms = d.run.start_ms + 11000;
    oom.rule = "cuda_oom";
    oom.severity = "critical";
    oom.subject = "job";
    oom.summary = "GPU0 ran out of memory at train.py:42 in forward: 2.00 GiB asked with 1.00 GiB free";
    oom.recommendation = "Activations <fill> the GPU: mixed precision";
    auto figure = [](const char* metric, double v, std::string threshold = "") {
        diagnose::Evidence e;
        e.metric = metric;
        e.average = e.minimum = e.maximum = v;
        e.threshold = std::move(threshold);
        e.samples = 1;
        return e;
    };
    oom.evidence = {figure("oom.capacity_bytes", 80 * kGiB),
                    figure("oom.free_bytes", kGiB),
                    figure("oom.parameters_bytes", 4 * kGiB),
                    figure("oom.activations_bytes", 60 * kGiB),
                    figure("oom.optimizer_state_bytes", 8 * kGiB),
                    figure("oom.reserved_unallocated_bytes", 2 * kGiB),
                    figure("oom.site_bytes", 60 * kGiB, "train.py:42 in forward (activations)")};
    d.findings.push_back(oom);
    html = run_report_html(d);
    EXPECT_NE(html.find("<h3>At the out-of-memory error</h3>"), std::string::npos);
    EXPECT_NE(html.find("(the bar: the GPU's 80.00 GiB)"), std::string::npos);
    // Each part a rect with its size (the categories in their order, then the reserve, others, free).
    for (const char* part : {"activations: 60.00 GiB", "optimizer state: 8.00 GiB", "parameters: 4.00 GiB",
                             "reserved, unallocated: 2.00 GiB", "free: 1.00 GiB"})
        EXPECT_NE(html.find(std::string("<title>") + part + "</title>"), std::string::npos) << part;
    EXPECT_NE(html.find("<code>train.py:42 in forward (activations)</code>"), std::string::npos);
    EXPECT_NE(html.find("Activations &lt;fill&gt; the GPU"), std::string::npos);  // escaped
    const std::string md = run_report_markdown(d);
    EXPECT_NE(md.find("## Memory"), std::string::npos);
    EXPECT_NE(md.find("| activations | 60.00 GiB | 75 % |"), std::string::npos) << md;
    EXPECT_NE(md.find("| `train.py:42 in forward (activations)` | 60.00 GiB |"), std::string::npos) << md;
    EXPECT_NE(md.find("allocated at step end"), std::string::npos);
}
