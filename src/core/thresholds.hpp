// The indicator table (alarm value, best range): the numbers that say what is
// healthy for training. One struct, read from the [thresholds] section of the config: baton top
// colours by it and the diagnosis rules judge by it, so the two can never disagree. The right
// values depend on the hardware, which is why every one of them can be changed.
#pragma once

namespace baton {

struct Thresholds {
    // GPU memory used, percent of total: best 60-85 (below: the batch could grow), alarm above 90.
    double gpu_memory_best_min_percent = 60;
    double gpu_memory_best_max_percent = 85;
    double gpu_memory_alarm_percent = 90;
    // Host CPU utilisation (100 - idle - iowait), percent: best <= 70, alarm above 80 sustained.
    double cpu_best_max_percent = 70;
    double cpu_alarm_percent = 80;
    // Swap traffic (in + out), bytes per second: best close to 0 (up to 64 KiB/s, a few pages),
    // alarm above 1 MB/s sustained.
    double swap_best_max_bytes_per_second = 65536;
    double swap_alarm_bytes_per_second = 1e6;
    // I/O wait, percent of total CPU time: best <= 2, alarm above 5.
    double iowait_best_max_percent = 2;
    double iowait_alarm_percent = 5;
    // "Sustained": over the last window_seconds, at least sustained_share of the samples breach.
    double window_seconds = 30;
    double sustained_share = 0.8;

    // The diagnosis rules' own numbers (docs/findings.md says which rule uses which).
    double gpu_memory_near_oom_percent = 95;   // gpu_memory_near_oom is critical above this
    double oom_horizon_minutes = 10;           // ... and a warning when the trend reaches 100 % this soon
    double gpu_starved_percent = 50;           // input_bound, io_bound: average GPU utilisation below this
    double gpu_busy_percent = 80;              // gpu_underused: utilisation above this
    double gpu_active_percent = 10;            // gpu_throttled, pcie_degraded: the GPU counts as working
    double gpu_fed_percent = 1;                // input_bound, io_bound: utilisation or SM activity at least this
                                               // in a tenth of the samples (a GPU that does no work is not starved)
    double gpu_idle_percent = 5;               // gpu_idle_held: GPU utilisation and the holder's CPU at or below this
    double idle_held_minutes = 10;             // gpu_idle_held: the holder is at least this old
    double tree_cpu_saturated_percent = 90;    // input_bound: a job's processes busy at this share of their cores
    double disk_busy_percent = 80;             // io_bound
    double psi_memory_full_percent = 5;        // host_memory_pressure: PSI memory "full" avg10
    double runnable_per_core = 2;              // cpu_oversubscribed: runnable tasks per core
    double shm_used_percent = 90;              // shm_low: /dev/shm fuller than this
    double shm_min_bytes = 1073741824;         // shm_low: /dev/shm smaller than this (1 GiB) with workers about
    double gpu_memory_leak_bytes = 268435456;  // gpu_memory_leak: growth over the window (256 MiB)
    double disk_free_percent = 5;              // disk_space_low: a job's filesystem with less available
    double disk_full_minutes = 120;            // disk_space_low: ... or filling up within this at its rate
    // With step events from the Python hook:
    // One symptom, one scale: the loop waiting for its batches, measured by the hook (input_bound) or in
    // a profiler trace (data_in_step), is a finding above data_wait_percent (the PyTorch profiler's own
    // threshold for its data-loading advice) and a warning from data_wait_warning_percent.
    double data_wait_percent = 5;           // input_bound, data_in_step: raised above this share of step time
    double data_wait_warning_percent = 15;  // ... and a warning (else information) from this share
    double step_time_unstable_ratio = 2;    // step_time_unstable: p95 step time above this many medians
    double rank_straggler_ratio =
        1.5;  // rank_straggler: a rank's median step (or GPU idleness) this far off the others'
};

}  // namespace baton
