#include "hang/python_stacks.hpp"

#include <algorithm>

#include "core/text_parse.hpp"

namespace baton::hang {

namespace {

constexpr std::string_view kFirst = " (most recent call first):";

// "Thread 0x7f63543876c0 (most recent call first):" and its two other forms: whether `line` is
// a header, with its thread id and whether it is the current thread.
bool thread_header(std::string_view line, PyThreadStack& t) {
    if (line.size() < kFirst.size() || line.substr(line.size() - kFirst.size()) != kFirst) return false;
    line.remove_suffix(kFirst.size());
    t = PyThreadStack{};
    if (line == "Stack") return true;  // a dump of one thread (all_threads=False)
    if (line.rfind("Current thread 0x", 0) == 0) {
        t.current = true;
        line.remove_prefix(17);
    } else if (line.rfind("Thread 0x", 0) == 0) {
        line.remove_prefix(9);
    } else {
        return false;
    }
    if (line.empty() || line.size() > 16) return false;
    std::uint64_t id = 0;
    for (char c : line) {
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0) return false;
        id = id * 16 + static_cast<std::uint64_t>(d);
    }
    t.thread_id = id;
    return true;
}

// `  File "NAME", line N in FUNC`: the frame, or nothing for any other line.
std::optional<PyFrame> frame_line(std::string_view line) {
    constexpr std::string_view kFile = "  File \"";
    if (line.rfind(kFile, 0) != 0) return std::nullopt;
    line.remove_prefix(kFile.size());
    // The name may hold `", line ` itself (faulthandler does not escape quotes): the last one counts.
    const std::size_t at = line.rfind("\", line ");
    if (at == std::string_view::npos) return std::nullopt;
    PyFrame f;
    f.file.assign(line.substr(0, at));
    line.remove_prefix(at + 8);
    const std::size_t in = line.find(" in ");
    if (in == std::string_view::npos) return std::nullopt;
    const std::string_view number = line.substr(0, in);
    if (number != "???") {
        f.line = text::parse_digits<unsigned>(number);
        if (!f.line) return std::nullopt;
    }
    f.function.assign(line.substr(in + 4));
    return f;
}

}  // namespace

std::vector<PyThreadStack> parse_faulthandler_dump(std::string_view text) {
    std::vector<PyThreadStack> dump;
    PyThreadStack* thread = nullptr;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        PyThreadStack header;
        if (thread_header(line, header)) {
            // A thread this dump already holds, a second current one, or a one-thread dump
            // ("Stack", id 0) before or now: the next dump began.
            const bool one_thread = header.thread_id == 0 || (dump.size() == 1 && dump[0].thread_id == 0);
            const bool again = one_thread || std::any_of(dump.begin(), dump.end(), [&](const PyThreadStack& t) {
                                   return t.thread_id == header.thread_id || (t.current && header.current);
                               });
            if (again) dump.clear();
            dump.push_back(std::move(header));
            thread = &dump.back();
            continue;
        }
        if (!thread) continue;
        if (line.empty()) {
            thread = nullptr;  // the blank line between threads
        } else if (line == "  ...") {
            thread->truncated = true;
        } else if (std::optional<PyFrame> f = frame_line(line)) {
            thread->frames.push_back(std::move(*f));
        }
        // (anything else: "  <no Python frame>", a line cut by a dump still being written)
    }
    return dump;
}

const PyThreadStack* main_thread(const std::vector<PyThreadStack>& threads) {
    for (const PyThreadStack& t : threads)
        if (!t.frames.empty() && t.frames.back().function == "<module>") return &t;
    return threads.empty() ? nullptr : &threads.back();
}

std::vector<StackGroup> group_stacks(const std::vector<RankStack>& stacks) {
    std::vector<StackGroup> groups;
    for (const RankStack& s : stacks) {
        auto same =
            std::find_if(groups.begin(), groups.end(), [&](const StackGroup& g) { return g.frames == s.frames; });
        if (same == groups.end()) {
            groups.push_back({{s.rank}, s.frames, 0});
        } else {
            same->ranks.push_back(s.rank);
        }
    }
    for (StackGroup& g : groups) std::sort(g.ranks.begin(), g.ranks.end());
    std::sort(groups.begin(), groups.end(), [](const StackGroup& a, const StackGroup& b) {
        if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
        return a.ranks.front() < b.ranks.front();
    });
    // The outermost frames all groups share (frames are innermost first: compare from the back).
    std::size_t shared = groups.empty() ? 0 : groups.front().frames.size();
    for (const StackGroup& g : groups) {
        const std::vector<PyFrame>& a = groups.front().frames;
        std::size_t n = 0;
        while (n < shared && n < g.frames.size() && a[a.size() - 1 - n] == g.frames[g.frames.size() - 1 - n]) ++n;
        shared = n;
    }
    for (StackGroup& g : groups) g.shared_outer = shared;
    return groups;
}

std::string ranks_text(const std::vector<int>& ranks) {
    std::string out;
    for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
    return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

}  // namespace baton::hang
