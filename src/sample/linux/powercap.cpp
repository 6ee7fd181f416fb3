#include "sample/linux/powercap.hpp"

#include <cerrno>
#include <dirent.h>

#include "core/files.hpp"
#include "core/text_parse.hpp"

namespace baton::os {

std::optional<std::uint64_t> parse_counter(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
    return text::parse_digits<std::uint64_t>(s);
}

PowercapReader::PowercapReader(std::string sys_root) : sys_root_(std::move(sys_root)) {}

void PowercapReader::discover() {
    discovered_ = true;
    const std::string base = sys_root_ + "/class/powercap";
    DIR* d = ::opendir(base.c_str());
    if (!d) {
        why_not_ = "no RAPL package domain under " + base;
        return;
    }
    while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        // Top-level domains only ("intel-rapl:0"; "intel-rapl:0:0" is a core or DRAM domain inside it).
        if (name.rfind("intel-rapl:", 0) != 0 || name.find(':', 11) != std::string::npos) continue;
        const std::string dir = base + "/" + name;
        std::optional<std::string> kind = read_small_file(dir + "/name", 256);
        if (!kind || kind->rfind("package", 0) != 0) continue;
        Package p;
        p.energy_path = dir + "/energy_uj";
        p.energy.open(p.energy_path);  // a failure is said at the first read (root only since Linux 5.10)
        if (std::optional<std::string> r = read_small_file(dir + "/max_energy_range_uj", 256))
            p.range_uj = parse_counter(*r).value_or(0);
        packages_.push_back(std::move(p));
    }
    ::closedir(d);
    if (packages_.empty()) why_not_ = "no RAPL package domain under " + base;
}

std::optional<double> PowercapReader::read() {
    if (!discovered_) discover();
    bool any = false;
    for (Package& p : packages_) {
        if (!p.energy.is_open() || !p.energy.read_all(buf_)) {
            const int err = p.energy.last_errno();
            why_not_ = err == EACCES || err == EPERM
                           ? p.energy_path + " is readable by root only (Linux 5.10 and later)"
                           : "cannot read " + p.energy_path;
            continue;
        }
        std::optional<std::uint64_t> uj = parse_counter(buf_.view());
        if (!uj) continue;
        any = true;
        if (p.last_uj) {
            if (*uj >= *p.last_uj)
                joules_ += static_cast<double>(*uj - *p.last_uj) / 1e6;
            else if (p.range_uj > *p.last_uj)  // wrapped
                joules_ += static_cast<double>(p.range_uj - *p.last_uj + *uj) / 1e6;
        }
        p.last_uj = uj;
    }
    if (!any) return std::nullopt;
    why_not_.clear();
    return joules_;
}

}  // namespace baton::os
