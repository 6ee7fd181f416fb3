#include "doctor/kernel_xids.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "core/files.hpp"
#include "core/text_parse.hpp"

namespace baton::doctor {

namespace {

constexpr std::size_t kMaxXids = 100000;  // a log full of a storm, many times over
constexpr std::size_t kMaxMessage = 200;

bool hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char lower(char c) {
    return c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c;
}

// "0000:3b:00" from "PCI:0000:3b:00" or "0000:3b:00" (a domain of 4 or 8 digits), else "".
std::string pci_of(std::string_view s) {
    if (s.substr(0, 4) == "PCI:") s.remove_prefix(4);
    // domain:bus:device, each hex; the domain's last four digits kept.
    const std::size_t c1 = s.find(':');
    if (c1 == std::string_view::npos || (c1 != 4 && c1 != 8)) return {};
    const std::size_t c2 = s.find(':', c1 + 1);
    if (c2 != c1 + 3 || s.size() != c2 + 3) return {};
    std::string out;
    for (std::size_t i = c1 - 4; i < s.size(); ++i) {
        const char c = s[i];
        if (c != ':' && !hex(c)) return {};
        out.push_back(lower(c));
    }
    return out;
}

std::optional<KernelXid> parse_line(std::string_view line) {
    static constexpr std::string_view kMark = "NVRM: Xid (";
    const std::size_t at = line.find(kMark);
    if (at == std::string_view::npos) return std::nullopt;
    KernelXid x;
    // Where it came from: a kmsg record's "PRIO,SEQ,MICROSECONDS,FLAGS;" or dmesg's "[ 5678.901234]".
    const std::string_view head = line.substr(0, at);
    if (const std::size_t semi = head.find(';'); semi != std::string_view::npos && head.find(',') < semi) {
        const std::size_t c1 = head.find(',');
        const std::size_t c2 = head.find(',', c1 + 1);
        if (c2 != std::string_view::npos && c2 < semi) {
            const std::string_view us = head.substr(c2 + 1, head.find(',', c2 + 1) - c2 - 1);
            if (const auto v = text::parse_digits<std::uint64_t>(us))
                x.seconds_since_boot = static_cast<double>(*v) / 1e6;
        }
    } else if (const std::size_t open = head.find('['); open != std::string_view::npos) {
        const std::size_t close = head.find(']', open);
        if (close != std::string_view::npos) {
            std::string_view t = head.substr(open + 1, close - open - 1);
            while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
            std::string_view number = t;
            if (const auto v = text::take_double(number); v && number.empty() && *v >= 0) x.seconds_since_boot = *v;
        }
    }
    std::string_view rest = line.substr(at + kMark.size());
    const std::size_t close = rest.find("): ");
    if (close == std::string_view::npos) return std::nullopt;
    x.pci = pci_of(rest.substr(0, close));
    if (x.pci.empty()) return std::nullopt;
    rest.remove_prefix(close + 3);
    std::size_t digits = 0;
    while (digits < rest.size() && digits < 6 && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 0 || digits == 6 || (digits < rest.size() && rest[digits] != ',')) return std::nullopt;
    x.xid = *text::parse_digits<unsigned>(rest.substr(0, digits));
    rest.remove_prefix(digits);
    if (!rest.empty()) rest.remove_prefix(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    for (char c : rest.substr(0, kMaxMessage)) x.message.push_back(c >= ' ' && c < 0x7f ? c : '?');
    return x;
}

}  // namespace

std::vector<KernelXid> parse_kernel_xids(std::string_view text) {
    std::vector<KernelXid> out;
    while (!text.empty() && out.size() < kMaxXids) {
        const std::size_t nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (auto x = parse_line(line)) out.push_back(std::move(*x));
    }
    return out;
}

Result<std::vector<KernelXid>> read_kernel_xids(const std::string& path) {
    if (path != "/dev/kmsg") {
        errno = 0;
        const std::optional<std::string> log = read_small_file(path, 256u << 20);
        if (!log)
            return make_error("cannot read the kernel log " + path +
                              (errno ? std::string(": ") + std::strerror(errno) : ""));
        return parse_kernel_xids(*log);
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        return make_error("cannot read the kernel log (" + path + ": " + std::strerror(e) + ")" +
                          (e == EPERM || e == EACCES ? ": run as root, or set kernel.dmesg_restrict=0" : ""));
    }
    // Where `dmesg -C` (or --read-clear) left it: XIDs the operator has dealt with are gone.
    ::lseek(fd, 0, SEEK_DATA);
    std::string records;
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);  // one record per read
        if (n > 0) {
            records.append(buf, static_cast<std::size_t>(n));
            if (records.back() != '\n') records.push_back('\n');
            if (records.size() > (64u << 20)) break;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EPIPE) continue;  // a record overwritten while we read: go on with the next
        break;                                  // EAGAIN: the end of the log (or another error)
    }
    ::close(fd);
    return parse_kernel_xids(records);
}

std::string kernel_pci_name(std::string_view id) {
    // NVML: "00000000:3B:00.0" (8-digit domain) or "0000:3b:00.0".
    const std::size_t dot = id.rfind('.');
    return pci_of(dot == std::string_view::npos ? id : id.substr(0, dot));
}

}  // namespace baton::doctor
