// The figures of a recorded run, from its record and samples: what `baton report` and `baton
// compare` show (the live `baton run` summary keeps its own running aggregates instead).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/run_energy.hpp"

namespace baton::report {

struct GpuFigures {
    unsigned index = 0;
    std::string name;  // from the run's machine record, when known
    std::size_t samples = 0;
    double util_avg = 0, util_p95 = 0;
    double sm_avg = -1;  // -1: not reported
    double memory_peak_gib = 0;
    double memory_total_gib = -1;  // -1: not known
};

struct RunFigures {
    double seconds = 0;  // end - start; for an interrupted run, to its last sample
    int exit_status = -1;
    std::size_t samples = 0;
    std::vector<GpuFigures> gpus;
    // Over every GPU sample together (-1: no GPU samples).
    double gpu_util_avg = -1, gpu_util_p95 = -1, gpu_memory_peak_gib = -1;
    double job_cpu_avg = 0, job_cpu_peak = 0, job_rss_peak_gib = 0;  // job CPU in % of one core
    double host_cpu_avg = 0, host_memory_peak_gib = 0, iowait_avg = 0;
    double swap_mb = 0;  // swapped in + out over the run
    double disk_read_avg = -1, disk_write_avg = -1, disk_read_peak = -1,
           disk_write_peak = -1;     // MB/s; -1: not recorded
    std::set<std::string> findings;  // "rule [subject]"
    // From the Python hook's steps (-1: no steps, or no step said how many samples).
    std::size_t steps = 0;
    double step_ms_median = -1, step_ms_p95 = -1, data_wait_percent = -1, samples_per_second = -1;
    // The run's energy as recorded with its end (-1: not measured): the GPUs' and CPU packages' together.
    double energy_joules = -1, joules_per_step = -1, joules_per_sample = -1;
    store::RunEnergy energy;
};

RunFigures run_figures(const store::RunRecord& r, const std::vector<store::RunSample>& samples,
                       const std::vector<store::RecordedFinding>& findings,
                       const std::vector<store::StepEvent>& steps = {});

// "16 CPUs, 125.9 GiB memory; GPU0 NVIDIA H200 140.4 GiB": the run's machine, or "" when not recorded.
std::string machine_text(const store::RunRecord& r);

}  // namespace baton::report
