// Every /proc and /sys parser, on any text (a hostile --proc-root, a kernel that changed its
// format): the first byte chooses the parser, the rest is the file.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sample/gpu/process_records.hpp"
#include "sample/linux/cgroup_owner.hpp"
#include "sample/linux/diskstats.hpp"
#include "sample/linux/meminfo.hpp"
#include "sample/linux/net_dev.hpp"
#include "sample/linux/pressure.hpp"
#include "sample/linux/proc_pid_files.hpp"
#include "sample/linux/proc_pid_stat.hpp"
#include "sample/linux/proc_stat.hpp"
#include "sample/linux/vmstat.hpp"

using namespace baton;
using namespace baton::os;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 12) {
        case 0: {
            ProcStat s;
            parse_proc_stat(text, s);
            break;
        }
        case 1: {
            MemInfo m;
            parse_meminfo(text, m);
            break;
        }
        case 2: {
            PidStat p;
            if (parse_pid_stat(text, p) &&
                (p.comm.data() < text.data() || p.comm.data() + p.comm.size() > text.data() + text.size()))
                __builtin_trap();  // the name must point into the text
            break;
        }
        case 3: {
            std::vector<DiskCounters> d;
            parse_diskstats(text, d);
            break;
        }
        case 4: {
            std::vector<NetCounters> n;
            parse_net_dev(text, n);
            break;
        }
        case 5: {
            PressureResource r;
            parse_pressure(text, r);
            break;
        }
        case 6: {
            VmStat v;
            parse_vmstat(text, v);
            break;
        }
        case 7: {
            PidStatus s;
            parse_pid_status(text, s);
            break;
        }
        case 8: {
            // Whatever the file says, a job's id holds only what its layout allows (it becomes a label;
            // systemd's escapes keep their backslash, which the exporters escape).
            const CgroupReading r = read_cgroup_file(text);
            for (const std::string* s : {&r.job.id, &r.job.step, &r.job.container_id})
                for (unsigned char c : *s)
                    if (c <= ' ' || c >= 0x7f || c == '"' || c == '/') __builtin_trap();
            if ((r.job.kind == JobKind::none) != r.job.id.empty()) __builtin_trap();
            break;
        }
        case 9: {
            PidIo io;
            parse_pid_io(text, io);
            break;
        }
        case 10: {
            PidSchedStat s;
            parse_pid_schedstat(text, s);
            break;
        }
        case 11: {
            // NVML's process records as a driver wrote them (16, 24 or 32 bytes each).
            const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
            const unsigned count = text.empty() ? 0 : static_cast<unsigned char>(text[0]);
            for (std::size_t stride : {16, 24})
                (void)decode_process_records(bytes, text.size(), count, stride, 141ull << 30);
            break;
        }
    }
    return 0;
}
