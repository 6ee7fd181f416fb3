#include "diagnose/xid_catalogue.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

namespace baton::diagnose {

XidMeaning xid_meaning(unsigned xid) {
    switch (xid) {
        case 8:
            return {"GPU stopped processing (an idle timeout)", XidAction::application};
        case 13:
            return {"Graphics Engine Exception", XidAction::application};
        case 31:
            return {"GPU memory page fault", XidAction::application};
        case 32:
            return {"Invalid or corrupted push buffer stream", XidAction::application};
        case 43:
            return {"GPU stopped processing", XidAction::application};
        case 45:
            return {"Preemptive cleanup, due to previous errors", XidAction::consequence};
        case 46:
            return {"GPU stopped processing", XidAction::drain};
        case 48:
            return {"Double Bit ECC Error", XidAction::drain};
        case 61:
            return {"Internal micro-controller breakpoint/warning", XidAction::drain};
        case 62:
            return {"Internal micro-controller halt", XidAction::drain};
        case 63:
            return {"ECC page retirement or row remapping recording event", XidAction::reset};
        case 64:
            return {"ECC page retirement or row remapper recording failure", XidAction::drain};
        case 68:
            return {"Video processor exception", XidAction::application};
        case 69:
            return {"Graphics Engine class error", XidAction::application};
        case 74:
            return {"NVLink Error", XidAction::drain};
        case 79:
            return {"GPU has fallen off the bus", XidAction::drain};
        case 92:
            return {"High single-bit ECC error rate", XidAction::reset};
        case 94:
            return {"Contained ECC error", XidAction::reset};
        case 95:
            return {"Uncontained ECC error", XidAction::drain};
        case 109:
            return {"Context Switch Timeout Error", XidAction::application};
        case 119:
            return {"GSP RPC Timeout", XidAction::drain};
        case 120:
            return {"GSP Error", XidAction::drain};
        case 121:
            return {"C2C Link corrected error", XidAction::reset};
        case 140:
            return {"Unrecovered ECC Error", XidAction::drain};
        case 154:
            return {"GPU recovery action changed (a reset or reboot is required)", XidAction::drain};
        default:
            return {"not in baton's catalogue", XidAction::unknown};
    }
}

std::string xid_advice(XidAction action, unsigned index) {
    switch (action) {
        case XidAction::application:
            return "Most often the job's own fault (an out-of-bounds index or a freed tensor used in a kernel: the "
                   "program saw \"an illegal memory access\"): the process that hit it was stopped, the GPU is "
                   "fine. Rerun it with CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer to find the kernel. The "
                   "same XID from different programs on this GPU points at the hardware: run dcgmi diag -r 3.";
        case XidAction::consequence:
            return "A clean-up after an earlier error or a killed process (Ctrl-C, the OOM killer): look at the "
                   "XID before it.";
        case XidAction::reset:
            return fmt::format(
                "The GPU recorded a memory fault that it repairs (remaps the row, retires the page) on its next "
                "reset: when no process is on it, reset it (nvidia-smi -r -i {}) or reboot; watch for more.",
                index);
        case XidAction::drain:
            return fmt::format(
                "The GPU or its links failed: the jobs on it have crashed or will. Drain the node (stop scheduling "
                "work on it: scontrol update nodename=$(hostname -s) state=drain reason=xid, or kubectl "
                "cordon), reset the GPU with no process on it (nvidia-smi -r -i {}) or reboot, run dcgmi diag -r "
                "3, and if it recurs collect nvidia-bug-report.sh for an RMA.",
                index);
        case XidAction::unknown:
            break;
    }
    return "Look the XID up in NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors) and the kernel log "
           "(sudo dmesg -T | grep -i xid) for its details.";
}

const char* xid_action_name(XidAction action) {
    switch (action) {
        case XidAction::application:
            return "application";
        case XidAction::consequence:
            return "consequence";
        case XidAction::reset:
            return "reset";
        case XidAction::drain:
            return "drain";
        case XidAction::unknown:
            break;
    }
    return "unknown";
}

}  // namespace baton::diagnose
