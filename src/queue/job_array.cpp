#include "queue/job_array.hpp"

#include <charconv>
#include <set>

namespace baton::queue {

namespace {

Error array_error(std::string message) {
    return make_error(ErrorCode::invalid_argument, std::move(message));
}

// A whole non-negative decimal number (no sign, no spaces), at most 10^9.
bool number_of(std::string_view text, std::int64_t& out) {
    if (text.empty() || text.size() > 10) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && out >= 0 && out <= 1000000000;
}

Error too_many(std::string_view what) {
    return array_error(std::string(what) + ": more than " + std::to_string(kMaxArrayElements) +
                       " elements (one array holds at most that many; submit several)");
}

}  // namespace

Result<JobArray> parse_array_spec(std::string_view spec, unsigned& max_parallel) {
    const std::string flag = "--array " + std::string(spec);
    const std::string forms = " (give indices and ranges like 1-1000, 0-99:10 or 1,5,7, and %N to run N at once)";
    max_parallel = 0;
    if (const std::size_t pct = spec.rfind('%'); pct != std::string_view::npos) {
        std::int64_t n = 0;
        if (!number_of(spec.substr(pct + 1), n) || n == 0 || n > 1000000)
            return array_error(flag + ": '%' is followed by how many run at once, a number from 1" + forms);
        max_parallel = static_cast<unsigned>(n);
        spec = spec.substr(0, pct);
    }
    if (spec.empty()) return array_error(flag + ": no indices" + forms);
    JobArray out;
    std::set<std::int64_t> seen;
    std::size_t at = 0;
    while (at <= spec.size()) {
        std::size_t comma = spec.find(',', at);
        if (comma == std::string_view::npos) comma = spec.size();
        std::string_view item = spec.substr(at, comma - at);
        at = comma + 1;
        std::int64_t first = 0, last = 0, step = 1;
        const std::size_t colon = item.find(':');
        if (colon != std::string_view::npos) {
            if (!number_of(item.substr(colon + 1), step) || step == 0)
                return array_error(flag + ": '" + std::string(item) + "' has a step that is not a number from 1" +
                                   forms);
            item = item.substr(0, colon);
        }
        const std::size_t dash = item.find('-');
        if (dash == std::string_view::npos) {
            if (!number_of(item, first))
                return array_error(flag + ": '" + std::string(item) + "' is not an index" + forms);
            if (colon != std::string_view::npos)
                return array_error(flag + ": a step goes with a range (" + std::string(item) + "-N:S)" + forms);
            last = first;
        } else if (!number_of(item.substr(0, dash), first) || !number_of(item.substr(dash + 1), last)) {
            return array_error(flag + ": '" + std::string(item) + "' is not a range" + forms);
        } else if (last < first) {
            return array_error(flag + ": the range " + std::string(item) + " ends before it starts");
        }
        // (counted before the elements are made: "0-1000000000" is refused at once)
        if (static_cast<std::uint64_t>((last - first) / step + 1) > kMaxArrayElements - out.indices.size())
            return too_many(flag);
        for (std::int64_t i = first; i <= last; i += step) {
            if (!seen.insert(i).second) return array_error(flag + ": index " + std::to_string(i) + " is given twice");
            out.indices.push_back(i);
            out.values.push_back(std::to_string(i));
        }
        if (comma == spec.size()) break;
    }
    return out;
}

Result<JobArray> parse_array_file(std::string_view text, const std::string& path, bool placeholder) {
    JobArray out;
    out.append = !placeholder;
    std::int64_t line_no = 0;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(at, end - at);
        at = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
        if (line.find('\0') != std::string_view::npos)
            return array_error("--array-file " + path + ": line " + std::to_string(line_no) +
                               " holds a NUL byte (no argument can)");
        if (out.indices.size() == kMaxArrayElements) return too_many("--array-file " + path);
        out.indices.push_back(line_no);
        out.values.emplace_back(line);
    }
    if (out.indices.empty()) return array_error("--array-file " + path + ": no lines (one job per non-blank line)");
    return out;
}

bool has_placeholder(const std::vector<std::string>& argv) {
    for (const std::string& w : argv)
        if (w.find("{}") != std::string::npos) return true;
    return false;
}

std::vector<std::string> element_argv(const std::vector<std::string>& argv, const std::string& value, bool append) {
    std::vector<std::string> out;
    out.reserve(argv.size() + 1);
    for (const std::string& w : argv) {
        std::string word;
        std::size_t at = 0;
        for (std::size_t p = w.find("{}"); p != std::string::npos; p = w.find("{}", at)) {
            word.append(w, at, p - at);
            word += value;
            at = p + 2;
        }
        word.append(w, at, std::string::npos);
        out.push_back(std::move(word));
    }
    if (append) out.push_back(value);
    return out;
}

}  // namespace baton::queue
