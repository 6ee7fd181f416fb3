#include "measure/disk_bench.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "measure/bench_math.hpp"
#include "measure/contention.hpp"
#include "measure/file_text.hpp"
#include "core/clock.hpp"
#include "core/text_parse.hpp"
#include "core/units.hpp"

namespace baton::measure {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kSeqBlock = 1 << 20;     // 1 MiB
constexpr std::size_t kRandBlock = 128 << 10;  // 128 KiB
constexpr std::size_t kAlign = 4096;           // O_DIRECT's alignment on every block size in use

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Writes `size` bytes of incompressible data to `path` and syncs it. "" or the error.
std::string write_test_file(const std::string& path, std::uint64_t size) {
    Fd f;
    f.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (f.fd < 0) return fmt::format("cannot create {}: {}", path, std::strerror(errno));
    std::vector<std::uint64_t> block(kSeqBlock / 8);
    std::mt19937_64 rng(42);  // random bytes: a compressing file system (ZFS, btrfs) must not shrink them
    for (auto& w : block) w = rng();
    for (std::uint64_t done = 0; done < size;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kSeqBlock, size - done));
        block[0] ^= done;  // no two blocks alike (deduplication)
        const ssize_t w = ::write(f.fd, block.data(), n);
        if (w <= 0) return fmt::format("cannot write {}: {}", path, w < 0 ? std::strerror(errno) : "short write");
        done += static_cast<std::uint64_t>(w);
    }
    if (::fsync(f.fd) != 0) return fmt::format("cannot sync {}: {}", path, std::strerror(errno));
    return "";
}

struct Pass {
    double bytes = 0, bytes_per_second = 0, ios_per_second = 0;
    std::string error;
};

// Reads `file` with `threads` threads for at most `seconds`: sequentially (thread t reads blocks
// t, t + threads, ...: one stream with several requests in flight) or at random block-aligned
// offsets until as many bytes as the file holds were read.
Pass read_pass(const std::string& file, std::uint64_t size, bool direct, bool random, std::size_t block,
               unsigned threads, double seconds) {
    Pass p;
    const std::uint64_t blocks = size / block;
    if (blocks == 0) {
        p.error = "the file is smaller than one request";
        return p;
    }
    std::atomic<std::uint64_t> bytes{0}, ios{0}, next{0};
    std::atomic<bool> failed{false};
    std::string error;
    const double start = monotonic_seconds();
    auto worker = [&](unsigned t) {
        Fd f;
        f.fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
        void* buf = std::aligned_alloc(kAlign, block);
        if (f.fd < 0 || !buf) {
            if (!failed.exchange(true)) error = fmt::format("cannot open {}: {}", file, std::strerror(errno));
            std::free(buf);
            return;
        }
        std::mt19937_64 rng(t + 1);
        for (;;) {
            const std::uint64_t i = next.fetch_add(1);
            if (i >= blocks || monotonic_seconds() - start > seconds) break;
            const std::uint64_t b = random ? rng() % blocks : i;
            const ssize_t n = ::pread(f.fd, buf, block, static_cast<off_t>(b * block));
            if (n < 0) {
                if (!failed.exchange(true)) error = fmt::format("cannot read {}: {}", file, std::strerror(errno));
                break;
            }
            bytes += static_cast<std::uint64_t>(n);
            ++ios;
        }
        std::free(buf);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (std::thread& t : pool) t.join();
    const double elapsed = std::max(monotonic_seconds() - start, 1e-6);
    if (failed) {
        p.error = error;
        return p;
    }
    p.bytes = static_cast<double>(bytes.load());
    p.bytes_per_second = p.bytes / elapsed;
    p.ios_per_second = static_cast<double>(ios.load()) / elapsed;
    return p;
}

// Drops the file's pages from the page cache (clean pages only: the file was synced).
void drop_cache(const std::string& file) {
    Fd f;
    f.fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (f.fd >= 0) ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
}

// True when the file system takes O_DIRECT opens and reads (tmpfs and some FUSE ones do not).
bool direct_works(const std::string& file) {
    Fd f;
    f.fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (f.fd < 0) return false;
    void* buf = std::aligned_alloc(kAlign, kAlign);
    const bool ok = buf && ::pread(f.fd, buf, kAlign, 0) >= 0;
    std::free(buf);
    return ok;
}

std::string mbps(double bytes_per_second) {
    return fmt::format("{:.0f}", bytes_per_second / 1e6);
}

}  // namespace

std::string disk_of_device(const std::string& sys_root, unsigned major, unsigned minor) {
    std::error_code ec;
    fs::path dev = fs::canonical(fmt::format("{}/dev/block/{}:{}", sys_root, major, minor), ec);
    if (ec) return "";
    if (fs::exists(dev / "partition", ec)) dev = dev.parent_path();
    return dev.filename().string();
}

std::optional<double> disk_link_peak(const std::string& sys_root, const std::string& disk, std::string& source) {
    std::error_code ec;
    const fs::path dev = fs::canonical(sys_root + "/block/" + disk, ec);
    if (ec || disk.empty()) return std::nullopt;
    if (disk.rfind("nvme", 0) == 0) {
        // The NVMe controller's PCI function is the nearest ancestor with a link speed.
        for (fs::path p = dev; p.has_relative_path() && p != p.root_path(); p = p.parent_path()) {
            const std::string speed = file_value((p / "current_link_speed").string());
            const std::string width = file_value((p / "current_link_width").string());
            if (speed.empty() || width.empty()) continue;
            const std::optional<unsigned> gen = pcie_gen_from_speed(speed);
            const std::optional<std::uint64_t> lanes = text::parse_u64(width);
            if (!gen || !lanes) return std::nullopt;
            source = fmt::format("PCIe {}.0 x{} link of the NVMe drive (sysfs; the drive itself may be slower)", *gen,
                                 *lanes);
            return pcie_link_bytes_per_second(*gen, static_cast<unsigned>(*lanes));
        }
        return std::nullopt;
    }
    // SATA: the path runs through ".../ataN/hostM/...".
    for (const fs::path& part : dev) {
        const std::string s = part.string();
        if (s.rfind("ata", 0) != 0 || !text::parse_u64(s.substr(3))) continue;
        const std::string spd = file_value(sys_root + "/class/ata_link/link" + s.substr(3) + "/sata_spd");
        const std::optional<double> rate = sata_link_bytes_per_second(spd);
        if (rate) source = "SATA " + spd + " link (sysfs; the drive itself may be slower)";
        return rate;
    }
    return std::nullopt;
}

Result<BenchReport> run_disk_bench(const DiskBenchOptions& o) {
    BenchReport r;
    r.bench = "disk";
    struct stat st {};
    if (::stat(o.path.c_str(), &st) != 0) return make_error(fmt::format("{}: {}", o.path, std::strerror(errno)));
    std::string file = o.path;
    std::uint64_t size = o.size;
    bool written = false;
    if (S_ISDIR(st.st_mode)) {
        struct statvfs vfs {};
        if (::statvfs(o.path.c_str(), &vfs) == 0 &&
            static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize) < 1.1 * static_cast<double>(size))
            return make_error(fmt::format("{}: not enough free space for a {} test file (--size sets it)", o.path,
                                          format_size(size)));
        file = (fs::path(o.path) / fmt::format(".baton-bench-{}", ::getpid())).string();
        if (std::string e = write_test_file(file, size); !e.empty()) {
            ::unlink(file.c_str());
            return make_error(e);
        }
        written = true;
        r.notes.push_back(
            fmt::format("test file: {} ({}, written and synced, removed at the end)", file, format_size(size)));
    } else if (S_ISREG(st.st_mode)) {
        size = std::min<std::uint64_t>(size, static_cast<std::uint64_t>(st.st_size));
        if (size < kSeqBlock)
            return make_error(fmt::format("{}: too small to measure (at least 1 MiB is read)", o.path));
        r.notes.push_back(fmt::format("reading {} (first {}; never written)", file, format_size(size)));
    } else {
        return make_error(fmt::format("{}: not a directory or a regular file", o.path));
    }
    struct Removal {
        std::string path;
        ~Removal() {
            if (!path.empty()) ::unlink(path.c_str());
        }
    } removal{written ? file : ""};

    const std::string disk = disk_of_device(o.sys_root, major(st.st_dev), minor(st.st_dev));
    const bool direct = direct_works(file);
    r.notes.push_back(direct ? "cold: O_DIRECT reads, past the page cache"
                             : "cold: this file system refuses O_DIRECT; the file's page cache is dropped "
                               "(posix_fadvise) before each cold test instead");

    ContentionWatch watch(o.sampler);
    watch.start();
    struct Test {
        const char* name;
        bool cold, random;
        std::size_t block;
        unsigned threads;
    };
    const Test tests[] = {{"seq cold", true, false, kSeqBlock, 4},
                          {"random cold", true, true, kRandBlock, 8},
                          {"seq cached", false, false, kSeqBlock, 1},
                          {"random cached", false, true, kRandBlock, 8}};
    Table t;
    t.title = "read throughput";
    t.keys = {"test", "request_bytes", "in_flight", "bytes_per_second", "ios_per_second"};
    t.headers = {"test", "request", "in flight", "MB/s", "IO/s"};
    t.align = "lrrrr";
    std::vector<std::pair<std::string, double>> cold;
    double own_bytes = 0;  // what the bench itself read from the device
    bool warmed = false;
    for (const Test& test : tests) {
        if (test.cold && !direct) drop_cache(file);
        if (!test.cold && !warmed) {  // bring the file into the page cache first
            own_bytes += read_pass(file, size, false, false, kSeqBlock, 4, 4 * o.seconds_per_test).bytes;
            warmed = true;
        }
        const Pass p =
            read_pass(file, size, test.cold && direct, test.random, test.block, test.threads, o.seconds_per_test);
        if (!p.error.empty()) return make_error(p.error);
        if (test.cold) {
            cold.emplace_back(test.name, p.bytes_per_second);
            own_bytes += p.bytes;
        }
        t.rows.push_back({text_cell(test.name), number_cell(static_cast<double>(test.block), format_size(test.block)),
                          number_cell(test.threads, std::to_string(test.threads)),
                          number_cell(p.bytes_per_second, mbps(p.bytes_per_second)),
                          number_cell(p.ios_per_second, fmt::format("{:.0f}", p.ios_per_second))});
    }
    r.tables.push_back(std::move(t));
    const Snapshot& after = watch.finish();
    // The cold tests' reads (and the warming pass's) are the device's; the cached ones never reach it.
    const double own_rate = after.interval_seconds > 0 ? own_bytes / after.interval_seconds : 0;
    const std::string contention =
        disk.empty() ? "" : disk_contention(after, disk, own_rate, static_cast<std::uint32_t>(::getpid()));

    std::string source;
    const std::optional<double> peak = disk_link_peak(o.sys_root, disk, source);
    if (!peak) source = disk.empty() ? "the device is not in sysfs" : "no link rate known for " + disk;
    if (!disk.empty()) r.notes.push_back("device: " + disk);
    if (o.need) r.notes.push_back(fmt::format("need: {} ({})", format_rate(*o.need), o.need_source));
    for (const auto& [name, rate] : cold) {
        LinkResult l;
        l.link = "disk " + name;
        l.measured = rate;
        l.peak = peak;
        l.peak_source = source;
        l.need = o.need;
        // Against the need when one is given; a disk's link rate is a ceiling the media rarely
        // reach, so without a need there is nothing to judge ("measured").
        if (o.need)
            l.verdict = need_verdict(rate, *o.need);
        else
            l.verdict = "measured";
        if (!contention.empty() && l.verdict != "ok") {
            l.verdict = "saturated";
            l.detail = contention;
        }
        r.links.push_back(std::move(l));
    }
    return r;
}

}  // namespace baton::measure
