#include "formats/prometheus_text.hpp"

#include <charconv>
#include <cmath>

#include "core/printable.hpp"

namespace baton::formats {

void append_label_value(std::string_view value, std::string& out) {
    for (std::size_t i = 0; i < value.size();) {
        const std::size_t n = utf8_sequence_length(value, i);
        if (n == 0) {
            out.push_back('?');
            ++i;
            continue;
        }
        const char c = value[i];
        if (c == '\\')
            out.append("\\\\");
        else if (c == '"')
            out.append("\\\"");
        else if (c == '\n')
            out.append("\\n");
        else
            out.append(value.substr(i, n));
        i += n;
    }
}

void Exposition::family(const MetricFamily& f) {
    if (index_.count(f.name)) return;
    index_[f.name] = families_.size();
    families_.push_back({f.name, f.type, f.help, {}});
}

void Exposition::sample(const MetricFamily& f, const Labels& labels, double v) {
    if (!std::isfinite(v)) return;
    family(f);
    std::string& s = families_[index_.find(f.name)->second].samples;
    s.append(f.name);
    if (!labels.empty()) {
        s.push_back('{');
        bool first = true;
        for (const auto& [k, val] : labels) {
            if (!first) s.push_back(',');
            first = false;
            s.append(k).append("=\"");
            append_label_value(val, s);
            s.push_back('"');
        }
        s.push_back('}');
    }
    s.push_back(' ');
    char buf[40];
    // Integral values print as integers ("900000000", not the shortest form "9e+08").
    char* end = std::fabs(v) < 1e15 && v == std::trunc(v)
                    ? std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v)).ptr
                    : std::to_chars(buf, buf + sizeof buf, v).ptr;
    s.append(buf, end);
    s.push_back('\n');
}

void Exposition::write(std::string& out) const {
    for (const auto& f : families_) {
        if (f.samples.empty()) continue;
        out.append("# HELP ").append(f.name).append(" ").append(f.help).append("\n");
        out.append("# TYPE ").append(f.name).append(" ").append(f.type).append("\n");
        out.append(f.samples);
    }
}

}  // namespace baton::formats
