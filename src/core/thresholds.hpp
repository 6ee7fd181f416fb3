// The indicator table (the seed's "alarm value, best range"): the numbers that say what is
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
};

}  // namespace baton
