// The XIDs the NVIDIA driver wrote to the kernel log since boot (or since the log was last cleared
// with `dmesg -C`): the only record of those that came before any watcher ran, which is what a
// node's health check must see. Lines look like
//
//   NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
//   NVRM: Xid (0000:3b:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU ...
//
// read from /dev/kmsg records ("6,1234,56789012,-;NVRM: Xid ...") or from dmesg's, journalctl's or
// kern.log's text ("[ 5678.901234] NVRM: Xid ...", "Dec  5 07:03:44 node kernel: NVRM: Xid ...").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace baton::doctor {

struct KernelXid {
    std::string pci;  // "0000:3b:00" (domain:bus:device, lower case)
    unsigned xid = 0;
    std::string message;                       // the rest of the line, printable, at most 200 bytes
    std::optional<double> seconds_since_boot;  // from a kmsg record or dmesg's "[ s.us]"
};

// The XID lines among `text`'s lines (any of the formats above; other lines are skipped).
std::vector<KernelXid> parse_kernel_xids(std::string_view text);

// Reads /dev/kmsg (`path`) without blocking, from where `dmesg -C` last cleared it, and parses it;
// any other path is read as a text file. An error names the file and why (e.g. a non-root reader
// where kernel.dmesg_restrict is 1).
Result<std::vector<KernelXid>> read_kernel_xids(const std::string& path = "/dev/kmsg");

// "00000000:3B:00.0" (NVML's bus id) as "0000:3b:00", to match a kernel log line's GPU.
std::string kernel_pci_name(std::string_view nvml_bus_id);

}  // namespace baton::doctor
