#include "formats/snapshot_fields.hpp"

#include <array>

#include "core/json_writer.hpp"
#include "formats/prometheus_text.hpp"

namespace baton::formats {

namespace {

// More CPUs than Linux supports (NR_CPUS is at most 8192): a damaged or hostile recording (the
// advice derives worker counts from it: a recording must not ask for 4294967294 workers).
constexpr std::uint64_t kMaxCpus = 65536;
constexpr double kPercent = 0.01;  // percent -> Prometheus' ratio
constexpr double kMHz = 1e6;       // MHz -> Hz
constexpr double kMiB = 1.0 / (1024.0 * 1024.0);

// The rows, in the order the JSON writes them. (A namespace of their own keeps the one-letter
// record names from meeting other files in a unity build.)
namespace snapshot_rows {

using S = Snapshot;
constexpr std::array kSnapshot = {
    Field<S>{.key = "monotonic_seconds", .member = &S::monotonic_seconds},
    Field<S>{.key = "interval_seconds", .member = &S::interval_seconds},
    Field<S>{.key = "gpu_state", .member = &S::gpu_state, .lenient = true},  // (before: from gpu_status)
    Field<S>{.key = "gpu_status", .member = &S::gpu_status},
    Field<S>{.key = "gpu_driver_version", .member = &S::gpu_driver_version},
    Field<S>{.key = "gpu_nvml_version", .member = &S::gpu_nvml_version},
    Field<S>{.key = "gpu_cuda_driver_version", .member = &S::gpu_cuda_driver_version},
};

using H = HostInfo;
constexpr std::array kHost = {
    Field<H>{.key = "hostname", .member = &H::hostname},
    Field<H>{.key = "kernel", .member = &H::kernel},
    Field<H>{.key = "cpu_count",
             .member = &H::cpu_count,
             .metric = {"baton_cpu_cores", "gauge", 1, "Online CPU cores."},
             .max = kMaxCpus},
    Field<H>{.key = "uptime_seconds", .member = &H::uptime_seconds},
};

using CT = CpuTimes;
constexpr std::array kCpuTimes = {
    Field<CT>{.key = "utilization_percent",
              .member = &CT::utilization_percent,
              .metric = {"baton_cpu_utilization_ratio", "gauge", kPercent,
                         "Busy share of all cores (1 - idle - iowait) over baton's last sampling interval."},
              .history = true},
    Field<CT>{.key = "user_percent", .member = &CT::user_percent},
    Field<CT>{.key = "system_percent", .member = &CT::system_percent},
    Field<CT>{.key = "iowait_percent", .member = &CT::iowait_percent, .history = true},
    Field<CT>{.key = "steal_percent", .member = &CT::steal_percent},
    Field<CT>{.key = "idle_percent", .member = &CT::idle_percent},
};

using C = CpuStats;
constexpr std::array kCpu = {
    Field<C>{.key = "context_switches_per_second", .member = &C::context_switches_per_second},
    Field<C>{.key = "context_switches_total",
             .member = &C::context_switches_total,
             .metric = {"baton_context_switches_total", "counter", 1, "Context switches since boot."}},
    Field<C>{.key = "runnable_tasks",
             .member = &C::runnable_tasks,
             .metric = {"baton_procs_running", "gauge", 1, "Tasks runnable now."}},
    Field<C>{.key = "blocked_tasks",
             .member = &C::blocked_tasks,
             .metric = {"baton_procs_blocked", "gauge", 1, "Tasks blocked on I/O now."}},
    Field<C>{.key = "package_energy_joules_total",
             .member = &C::package_energy_joules_total,
             .metric = {"baton_cpu_package_energy_joules_total", "counter", 1,
                        "Energy of the CPU packages (RAPL) since baton started sampling."}},
};

using M = MemoryStats;
constexpr std::array kMemory = {
    Field<M>{.key = "total_bytes",
             .member = &M::total_bytes,
             .metric = {"baton_memory_total_bytes", "gauge", 1, "Total usable RAM."},
             .history = true},
    Field<M>{.key = "available_bytes",
             .member = &M::available_bytes,
             .metric = {"baton_memory_available_bytes", "gauge", 1,
                        "RAM available for new work without swapping (MemAvailable)."}},
    Field<M>{.key = "used_bytes",
             .member = &M::used_bytes,
             .metric = {"baton_memory_used_bytes", "gauge", 1, "RAM in use: total - available."},
             .history = true},
    Field<M>{.key = "free_bytes",
             .member = &M::free_bytes,
             .metric = {"baton_memory_free_bytes", "gauge", 1, "Untouched RAM (MemFree)."}},
    Field<M>{.key = "cached_bytes",
             .member = &M::cached_bytes,
             .metric = {"baton_memory_cached_bytes", "gauge", 1, "Page cache and reclaimable slab."}},
    Field<M>{.key = "buffers_bytes",
             .member = &M::buffers_bytes,
             .metric = {"baton_memory_buffers_bytes", "gauge", 1, "Block device buffers."}},
    Field<M>{.key = "shared_bytes",
             .member = &M::shared_bytes,
             .metric = {"baton_memory_shared_bytes", "gauge", 1, "Shared memory (Shmem): tmpfs and /dev/shm."}},
    Field<M>{.key = "shm_total_bytes",
             .member = &M::shm_total_bytes,
             .metric = {"baton_shm_size_bytes", "gauge", 1, "Size of the /dev/shm filesystem."}},
    Field<M>{.key = "shm_used_bytes",
             .member = &M::shm_used_bytes,
             .metric = {"baton_shm_used_bytes", "gauge", 1, "Bytes used in /dev/shm."},
             .history = true},
};

using W = SwapStats;
constexpr std::array kSwap = {
    Field<W>{.key = "total_bytes",
             .member = &W::total_bytes,
             .metric = {"baton_swap_total_bytes", "gauge", 1, "Swap space."}},
    Field<W>{.key = "used_bytes",
             .member = &W::used_bytes,
             .metric = {"baton_swap_used_bytes", "gauge", 1, "Swap space in use."},
             .history = true},
    Field<W>{.key = "in_bytes_per_second", .member = &W::in_bytes_per_second, .history = true},
    Field<W>{.key = "out_bytes_per_second", .member = &W::out_bytes_per_second, .history = true},
    Field<W>{.key = "major_faults_per_second", .member = &W::major_faults_per_second},
    Field<W>{.key = "in_bytes_total",
             .member = &W::in_bytes_total,
             .metric = {"baton_swap_in_bytes_total", "counter", 1, "Bytes swapped in since boot."}},
    Field<W>{.key = "out_bytes_total",
             .member = &W::out_bytes_total,
             .metric = {"baton_swap_out_bytes_total", "counter", 1, "Bytes swapped out since boot."}},
    Field<W>{.key = "major_faults_total",
             .member = &W::major_faults_total,
             .metric = {"baton_major_page_faults_total", "counter", 1, "Major page faults since boot."}},
    Field<W>{
        .key = "oom_kill_total",
        .member = &W::oom_kill_total,
        .metric = {"baton_oom_kills_total", "counter", 1, "Processes killed by the kernel OOM killer since boot."}},
};

// The counters and `stacked` came after the rates: recordings from before lack them.
using D = DiskStats;
constexpr std::array kDisk = {
    Field<D>{.key = "read_bytes_per_second", .member = &D::read_bytes_per_second, .history = true},
    Field<D>{.key = "write_bytes_per_second", .member = &D::write_bytes_per_second, .history = true},
    Field<D>{.key = "reads_per_second", .member = &D::reads_per_second},
    Field<D>{.key = "writes_per_second", .member = &D::writes_per_second},
    Field<D>{.key = "busy_percent", .member = &D::busy_percent, .history = true},
    Field<D>{.key = "average_wait_ms", .member = &D::average_wait_ms},
    Field<D>{.key = "read_bytes_total",
             .member = &D::read_bytes_total,
             .metric = {"baton_disk_read_bytes_total", "counter", 1, "Bytes read from the disk."},
             .lenient = true},
    Field<D>{.key = "written_bytes_total",
             .member = &D::written_bytes_total,
             .metric = {"baton_disk_written_bytes_total", "counter", 1, "Bytes written to the disk."},
             .lenient = true},
    Field<D>{.key = "reads_total",
             .member = &D::reads_total,
             .metric = {"baton_disk_reads_completed_total", "counter", 1, "Reads completed."},
             .lenient = true},
    Field<D>{.key = "writes_total",
             .member = &D::writes_total,
             .metric = {"baton_disk_writes_completed_total", "counter", 1, "Writes completed."},
             .lenient = true},
    Field<D>{.key = "io_time_seconds_total",
             .member = &D::io_time_seconds_total,
             .metric = {"baton_disk_io_time_seconds_total", "counter", 1, "Time the disk had I/O in flight."},
             .lenient = true},
    Field<D>{.key = "stacked", .member = &D::stacked, .lenient = true},
};

// node_exporter's filesystem families, names and labels (device, fstype, mountpoint), so its
// dashboards and alerts apply. The mount point is the record's identity (a label, written by hand as
// a disk's name is); node_filesystem_device_error and the job writers' count are derived.
using F = FilesystemStats;
constexpr std::array kFilesystem = {
    Field<F>{.key = "device", .member = &F::device},
    Field<F>{.key = "fstype", .member = &F::fstype},
    Field<F>{.key = "readonly",
             .member = &F::readonly,
             .metric = {"node_filesystem_readonly", "gauge", 1, "Filesystem read-only status."},
             .lenient = true},
    Field<F>{.key = "size_bytes",
             .member = &F::size_bytes,
             .metric = {"node_filesystem_size_bytes", "gauge", 1, "Filesystem size in bytes."}},
    Field<F>{.key = "free_bytes",
             .member = &F::free_bytes,
             .metric = {"node_filesystem_free_bytes", "gauge", 1, "Filesystem free space in bytes."}},
    Field<F>{.key = "avail_bytes",
             .member = &F::avail_bytes,
             .metric = {"node_filesystem_avail_bytes", "gauge", 1,
                        "Filesystem space available to non-root users in bytes."}},
    Field<F>{.key = "files",
             .member = &F::files,
             .metric = {"node_filesystem_files", "gauge", 1, "Filesystem total file nodes."}},
    Field<F>{.key = "files_free",
             .member = &F::files_free,
             .metric = {"node_filesystem_files_free", "gauge", 1, "Filesystem total free file nodes."}},
    Field<F>{.key = "error", .member = &F::error},
    Field<F>{.key = "fill_bytes_per_second",
             .member = &F::fill_bytes_per_second,
             .metric = {"baton_filesystem_fill_bytes_per_second", "gauge", 1,
                        "Net growth of the used bytes over up to six hours of baton's readings (absent when not "
                        "growing)."}},
    Field<F>{.key = "fill_window_seconds", .member = &F::fill_window_seconds},
    Field<F>{.key = "step_bytes", .member = &F::step_bytes},
    Field<F>{.key = "step_interval_seconds", .member = &F::step_interval_seconds},
};

using N = NetworkStats;
constexpr std::array kNetwork = {
    Field<N>{.key = "rx_bytes_per_second", .member = &N::rx_bytes_per_second, .history = true},
    Field<N>{.key = "tx_bytes_per_second", .member = &N::tx_bytes_per_second, .history = true},
    Field<N>{.key = "speed_mbps",
             .member = &N::speed_mbps,
             .metric = {"baton_network_speed_bytes", "gauge", 1e6 / 8,
                        "Link speed reported by the driver, bytes per second."}},
    Field<N>{.key = "rx_bytes_total",
             .member = &N::rx_bytes_total,
             .metric = {"baton_network_receive_bytes_total", "counter", 1, "Bytes received on the interface."},
             .lenient = true},
    Field<N>{.key = "tx_bytes_total",
             .member = &N::tx_bytes_total,
             .metric = {"baton_network_transmit_bytes_total", "counter", 1, "Bytes sent on the interface."},
             .lenient = true},
};

using G = GpuInfo;
constexpr std::array kGpu = {
    Field<G>{.key = "minor_number", .member = &G::minor_number},
    Field<G>{.key = "stale",
             .member = &G::stale,
             .metric = {"baton_gpu_stale", "gauge", 1,
                        "1 when the GPU values are from an earlier tick (NVML did not answer)."}},
    Field<G>{.key = "error", .member = &G::error},
    Field<G>{.key = "utilization_percent",
             .member = &G::utilization_percent,
             .metric = {"baton_gpu_utilization_ratio", "gauge", kPercent, "Share of time a kernel ran on the GPU."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_GPU_UTIL", "gauge", 1, "GPU utilization (in %)."},
                      FieldMetric{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", kPercent,
                                  "Ratio of time the graphics engine is active."}},
             .history = true},
    Field<G>{.key = "memory_utilization_percent",
             .member = &G::memory_utilization_percent,
             .metric = {"baton_gpu_memory_utilization_ratio", "gauge", kPercent,
                        "Share of time device memory was read or written."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", 1, "Memory utilization (in %)."}}},
    Field<G>{.key = "memory_total_bytes",
             .member = &G::memory_total_bytes,
             .metric = {"baton_gpu_memory_total_bytes", "gauge", 1, "GPU memory size."}},
    Field<G>{.key = "memory_used_bytes",
             .member = &G::memory_used_bytes,
             .metric = {"baton_gpu_memory_used_bytes", "gauge", 1, "GPU memory in use."},
             .dcgm = {FieldMetric{kDcgmFbUsed.name, kDcgmFbUsed.type, kMiB, kDcgmFbUsed.help}},
             .history = true},
    Field<G>{.key = "memory_free_bytes",
             .member = &G::memory_free_bytes,
             .metric = {"baton_gpu_memory_free_bytes", "gauge", 1, "GPU memory free."},
             .dcgm = {FieldMetric{kDcgmFbFree.name, kDcgmFbFree.type, kMiB, kDcgmFbFree.help}}},
    Field<G>{.key = "memory_reserved_bytes",
             .member = &G::memory_reserved_bytes,
             .metric = {"baton_gpu_memory_reserved_bytes", "gauge", 1, "GPU memory reserved by the driver."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_FB_RESERVED", "gauge", kMiB, "Framebuffer memory reserved (in MiB)."}}},
    Field<G>{.key = "temperature_celsius",
             .member = &G::temperature_celsius,
             .metric = {"baton_gpu_temperature_celsius", "gauge", 1, "GPU core temperature."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_GPU_TEMP", "gauge", 1, "GPU temperature (in C)."}},
             .history = true},
    Field<G>{.key = "memory_temperature_celsius",
             .member = &G::memory_temperature_celsius,
             .metric = {"baton_gpu_memory_temperature_celsius", "gauge", 1, "GPU memory (HBM) temperature."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_MEMORY_TEMP", "gauge", 1, "Memory temperature (in C)."}}},
    Field<G>{.key = "power_watts",
             .member = &G::power_watts,
             .metric = {"baton_gpu_power_watts", "gauge", 1, "GPU power draw."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_POWER_USAGE", "gauge", 1, "Power draw (in W)."}},
             .history = true},
    Field<G>{.key = "power_limit_watts",
             .member = &G::power_limit_watts,
             .metric = {"baton_gpu_power_limit_watts", "gauge", 1, "Enforced GPU power limit."}},
    Field<G>{.key = "sm_clock_mhz",
             .member = &G::sm_clock_mhz,
             .metric = {"baton_gpu_sm_clock_hertz", "gauge", kMHz, "Current SM clock."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_SM_CLOCK", "gauge", 1, "SM clock frequency (in MHz)."}}},
    Field<G>{.key = "sm_clock_max_mhz",
             .member = &G::sm_clock_max_mhz,
             .metric = {"baton_gpu_sm_clock_max_hertz", "gauge", kMHz, "Maximum SM clock."}},
    Field<G>{.key = "memory_clock_mhz",
             .member = &G::memory_clock_mhz,
             .metric = {"baton_gpu_memory_clock_hertz", "gauge", kMHz, "Current memory clock."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_MEM_CLOCK", "gauge", 1, "Memory clock frequency (in MHz)."}}},
    Field<G>{.key = "memory_clock_max_mhz",
             .member = &G::memory_clock_max_mhz,
             .metric = {"baton_gpu_memory_clock_max_hertz", "gauge", kMHz, "Maximum memory clock."}},
    Field<G>{.key = "pcie_generation",
             .member = &G::pcie_generation,
             .metric = {"baton_gpu_pcie_link_generation", "gauge", 1, "Current PCIe link generation."}},
    Field<G>{.key = "pcie_generation_max",
             .member = &G::pcie_generation_max,
             .metric = {"baton_gpu_pcie_link_generation_max", "gauge", 1, "Maximum PCIe link generation."}},
    Field<G>{.key = "pcie_width",
             .member = &G::pcie_width,
             .metric = {"baton_gpu_pcie_link_width", "gauge", 1, "Current PCIe link width (lanes)."}},
    Field<G>{.key = "pcie_width_max",
             .member = &G::pcie_width_max,
             .metric = {"baton_gpu_pcie_link_width_max", "gauge", 1, "Maximum PCIe link width (lanes)."}},
    Field<G>{.key = "pcie_rx_bytes_per_second",
             .member = &G::pcie_rx_bytes_per_second,
             .metric = {"baton_gpu_pcie_receive_bytes_per_second", "gauge", 1,
                        "PCIe bytes received by the GPU per second (NVML)."},
             // dcgm-exporter 4.10's name, and the one before it that dashboards still query.
             .dcgm = {FieldMetric{"DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", "gauge", 1,
                                  "The rate of data received over the PCIe bus, in bytes per second."},
                      FieldMetric{"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", 1,
                                  "The rate of data received over the PCIe bus, in bytes per second."}}},
    Field<G>{.key = "pcie_tx_bytes_per_second",
             .member = &G::pcie_tx_bytes_per_second,
             .metric = {"baton_gpu_pcie_transmit_bytes_per_second", "gauge", 1,
                        "PCIe bytes sent by the GPU per second (NVML)."},
             .dcgm = {FieldMetric{"DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", "gauge", 1,
                                  "The rate of data transmitted over the PCIe bus, in bytes per second."},
                      FieldMetric{"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", 1,
                                  "The rate of data transmitted over the PCIe bus, in bytes per second."}}},
    Field<G>{.key = "ecc_uncorrected_volatile",
             .member = &G::ecc_uncorrected_volatile,
             .metric = {"baton_gpu_ecc_uncorrected_errors_total", "counter", 1,
                        "Uncorrected ECC errors since the driver loaded (volatile count)."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", 1,
                                  "Total number of double-bit volatile ECC errors."}}},
    Field<G>{.key = "ecc_corrected_volatile",
             .member = &G::ecc_corrected_volatile,
             .metric = {"baton_gpu_ecc_corrected_errors_total", "counter", 1,
                        "Corrected ECC errors since the driver loaded (volatile count)."}},
    Field<G>{
        .key = "retired_pages",
        .member = &G::retired_pages,
        .metric = {"baton_gpu_retired_pages", "gauge", 1, "Memory pages retired for ECC errors (GPUs before Ampere)."}},
    Field<G>{.key = "remapped_rows_corrected",
             .member = &G::remapped_rows_corrected,
             .metric = {"baton_gpu_remapped_rows", "gauge", 1,
                        "Memory rows remapped for ECC errors (Ampere and newer), by the kind of error that caused it.",
                        "cause", "corrected"},
             // dcgm-exporter declares these counters without _total; gauges here, which queries do not tell apart
             // and promtool's linter accepts.
             .dcgm = {FieldMetric{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "gauge", 1,
                                  "Number of remapped rows for correctable errors"}}},
    Field<G>{.key = "remapped_rows_uncorrected",
             .member = &G::remapped_rows_uncorrected,
             .metric = {"baton_gpu_remapped_rows", "gauge", 1,
                        "Memory rows remapped for ECC errors (Ampere and newer), by the kind of error that caused it.",
                        "cause", "uncorrected"},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "gauge", 1,
                                  "Number of remapped rows for uncorrectable errors"}}},
    Field<G>{
        .key = "remapping_pending",
        .member = &G::remapping_pending,
        .metric = {"baton_gpu_remapping_pending", "gauge", 1, "1 when a row remapping waits for a GPU reset."},
        .dcgm = {FieldMetric{"DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", 1, "Whether remapping of rows is pending"}}},
    Field<G>{
        .key = "remapping_failed",
        .member = &G::remapping_failed,
        .metric = {"baton_gpu_remapping_failed", "gauge", 1, "1 when a row remapping failed: the GPU needs service."},
        .dcgm = {FieldMetric{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", 1, "Whether remapping of rows has failed"}}},
    Field<G>{.key = "fan_speed_percent",
             .member = &G::fan_speed_percent,
             .metric = {"baton_gpu_fan_speed_ratio", "gauge", kPercent,
                        "Intended fan speed, share of its maximum (absent without a fan)."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_FAN_SPEED", "gauge", 1, "Fan speed (in 0-100%)."}}},
    Field<G>{.key = "encoder_utilization_percent",
             .member = &G::encoder_utilization_percent,
             .metric = {"baton_gpu_encoder_utilization_ratio", "gauge", kPercent, "Video encoder (NVENC) utilisation."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_ENC_UTIL", "gauge", 1, "Encoder utilization (in %)."}}},
    Field<G>{.key = "decoder_utilization_percent",
             .member = &G::decoder_utilization_percent,
             .metric = {"baton_gpu_decoder_utilization_ratio", "gauge", kPercent, "Video decoder (NVDEC) utilisation."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_DEC_UTIL", "gauge", 1, "Decoder utilization (in %)."}}},
    Field<G>{.key = "nvlink_links_active",
             .member = &G::nvlink_links_active,
             .metric = {"baton_gpu_nvlink_links_active", "gauge", 1, "NVLinks up (absent on a GPU without NVLink)."}},
    Field<G>{
        .key = "nvlink_rx_bytes_per_second",
        .member = &G::nvlink_rx_bytes_per_second,
        .metric = {"baton_gpu_nvlink_receive_bytes_per_second", "gauge", 1, "NVLink data received, over all links."},
        .dcgm = {FieldMetric{"DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND", "gauge", 1,
                             "The rate of data received over NVLink, not including protocol headers, in bytes per "
                             "second."},
                 FieldMetric{"DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", 1,
                             "The rate of data received over NVLink, not including protocol headers, in bytes per "
                             "second."}}},
    Field<G>{.key = "nvlink_tx_bytes_per_second",
             .member = &G::nvlink_tx_bytes_per_second,
             .metric = {"baton_gpu_nvlink_transmit_bytes_per_second", "gauge", 1, "NVLink data sent, over all links."},
             .dcgm = {FieldMetric{"DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", "gauge", 1,
                                  "The rate of data transmitted over NVLink, not including protocol headers, in bytes "
                                  "per second."},
                      FieldMetric{"DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", 1,
                                  "The rate of data transmitted over NVLink, not including protocol headers, in bytes "
                                  "per second."}}},
    Field<G>{.key = "energy_joules_total",
             .member = &G::energy_joules_total,
             .metric = {"baton_gpu_energy_joules_total", "counter", 1, "Energy the GPU used since the driver loaded."},
             .dcgm = {FieldMetric{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", 1000,
                                  "Total energy consumption since boot (in mJ)."}}},
    Field<G>{
        .key = "pcie_replay_total",
        .member = &G::pcie_replay_total,
        .metric = {"baton_gpu_pcie_replays_total", "counter", 1, "PCIe transfers the GPU had to replay (link errors)."},
        .dcgm = {FieldMetric{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", 1, "Total number of PCIe retries."}}},
    Field<G>{.key = "persistence_mode",
             .member = &G::persistence_mode,
             .metric = {"baton_gpu_persistence_mode", "gauge", 1, "1 when persistence mode is on."}},
    Field<G>{.key = "compute_mode", .member = &G::compute_mode},
    Field<G>{.key = "mig_mode",
             .member = &G::mig_mode,
             .metric = {"baton_gpu_mig_mode", "gauge", 1, "1 when MIG mode is on."}},
    Field<G>{.key = "sm_activity_percent",
             .member = &G::sm_activity_percent,
             .metric = {"baton_gpu_sm_activity_ratio", "gauge", kPercent, "SM activity from GPM (Hopper and newer)."},
             .dcgm = {FieldMetric{"DCGM_FI_PROF_SM_ACTIVE", "gauge", kPercent,
                                  "The ratio of cycles an SM has at least 1 warp assigned."}},
             .history = true},
    Field<G>{.key = "tensor_activity_percent",
             .member = &G::tensor_activity_percent,
             .metric = {"baton_gpu_tensor_activity_ratio", "gauge", kPercent,
                        "Tensor-core activity from GPM (Hopper and newer)."},
             .dcgm = {FieldMetric{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", kPercent,
                                  "Ratio of cycles the tensor (HMMA) pipe is active."}},
             .history = true},
};

using P = GpuProcess;
constexpr std::array kGpuProcess = {
    Field<P>{.key = "pid", .member = &P::pid},
    Field<P>{.key = "container_pid", .member = &P::container_pid},
    Field<P>{.key = "local_pid", .member = &P::local_pid},
    Field<P>{.key = "type", .member = &P::type},
    Field<P>{.key = "used_memory_bytes",
             .member = &P::used_memory_bytes,
             .metric = {"baton_gpu_process_memory_bytes", "gauge", 1, "GPU memory held by one process on one GPU."}},
    Field<P>{.key = "sm_utilization_percent",
             .member = &P::sm_utilization_percent,
             .metric = {"baton_gpu_process_sm_utilization_ratio", "gauge", kPercent,
                        "SM utilisation of one process on one GPU."}},
    Field<P>{.key = "gpu_instance_id", .member = &P::gpu_instance_id},
    Field<P>{.key = "compute_instance_id", .member = &P::compute_instance_id},
};

}  // namespace snapshot_rows

}  // namespace

#define BATON_FIELD_TABLE(fn, Record, array, doc, history)                                \
    const FieldTable<Record>& fn() {                                                      \
        static const FieldTable<Record> t{doc, history, std::span(snapshot_rows::array)}; \
        return t;                                                                         \
    }
BATON_FIELD_TABLE(snapshot_fields, Snapshot, kSnapshot, "", "")
BATON_FIELD_TABLE(host_fields, HostInfo, kHost, "host.", "host")
BATON_FIELD_TABLE(cpu_time_fields, CpuTimes, kCpuTimes, "cpu.", "cpu")
BATON_FIELD_TABLE(cpu_fields, CpuStats, kCpu, "cpu.", "cpu")
BATON_FIELD_TABLE(memory_fields, MemoryStats, kMemory, "memory.", "memory")
BATON_FIELD_TABLE(swap_fields, SwapStats, kSwap, "swap.", "swap")
BATON_FIELD_TABLE(disk_fields, DiskStats, kDisk, "disks[].", "disk")
BATON_FIELD_TABLE(filesystem_fields, FilesystemStats, kFilesystem, "filesystems[].", "filesystem")
BATON_FIELD_TABLE(network_fields, NetworkStats, kNetwork, "networks[].", "network")
BATON_FIELD_TABLE(gpu_fields, GpuInfo, kGpu, "gpus[].", "gpu")
BATON_FIELD_TABLE(gpu_process_fields, GpuProcess, kGpuProcess, "gpus[].processes[].", "")
#undef BATON_FIELD_TABLE

namespace {

template <class T>
void write_value(JsonWriter& w, const T& v) {
    if constexpr (std::is_enum_v<T>) {
        w.value(enum_name(v));
    } else {
        w.value(v);
    }
}

}  // namespace

template <class R>
void write_fields(JsonWriter& w, const FieldTable<R>& t, const R& r) {
    for (const Field<R>& f : t.fields)
        std::visit(
            [&](auto p) {
                const auto& v = r.*p;
                if constexpr (field_detail::IsOptional<std::decay_t<decltype(v)>>::value) {
                    if (!v) return;
                    w.key(std::string_view(f.key));
                    write_value(w, *v);
                } else {
                    w.key(std::string_view(f.key));
                    write_value(w, v);
                }
            },
            f.member);
}

template <class R>
void declare_families(Exposition& e, const FieldTable<R>& t, bool dcgm) {
    auto declare = [&](const FieldMetric& m) {
        if (m.name) e.family({m.name, m.type, m.help});
    };
    for (const Field<R>& f : t.fields) {
        if (!dcgm) {
            declare(f.metric);
        } else {
            for (const FieldMetric& m : f.dcgm) declare(m);
        }
    }
}

template <class R>
void sample_fields(Exposition& e, const FieldTable<R>& t, const R& r,
                   const std::vector<std::pair<const char*, std::string>>& labels, bool dcgm) {
    auto sample = [&](const FieldMetric& m, std::optional<double> v) {
        if (!m.name || !v) return;
        if (!m.label) {
            e.sample({m.name, m.type, m.help}, labels, *v * m.scale);
            return;
        }
        Exposition::Labels with = labels;
        with.emplace_back(m.label, m.label_value);
        e.sample({m.name, m.type, m.help}, with, *v * m.scale);
    };
    for (const Field<R>& f : t.fields) {
        if (!dcgm && !f.metric.name) continue;
        if (dcgm && !f.dcgm[0].name) continue;
        const std::optional<double> v = numeric_value(r, f.member);
        if (!dcgm) {
            sample(f.metric, v);
        } else {
            for (const FieldMetric& m : f.dcgm) sample(m, v);
        }
    }
}

#define BATON_FIELD_FUNCTIONS(Record)                                                          \
    template void write_fields<Record>(JsonWriter&, const FieldTable<Record>&, const Record&); \
    template void declare_families<Record>(Exposition&, const FieldTable<Record>&, bool);      \
    template void sample_fields<Record>(Exposition&, const FieldTable<Record>&, const Record&, \
                                        const std::vector<std::pair<const char*, std::string>>&, bool);
BATON_FIELD_FUNCTIONS(Snapshot)
BATON_FIELD_FUNCTIONS(HostInfo)
BATON_FIELD_FUNCTIONS(CpuTimes)
BATON_FIELD_FUNCTIONS(CpuStats)
BATON_FIELD_FUNCTIONS(MemoryStats)
BATON_FIELD_FUNCTIONS(SwapStats)
BATON_FIELD_FUNCTIONS(DiskStats)
BATON_FIELD_FUNCTIONS(FilesystemStats)
BATON_FIELD_FUNCTIONS(NetworkStats)
BATON_FIELD_FUNCTIONS(GpuInfo)
BATON_FIELD_FUNCTIONS(GpuProcess)
#undef BATON_FIELD_FUNCTIONS

}  // namespace baton::formats
