// Writing the Prometheus text exposition format 0.0.4: samples grouped by metric family, each
// family printed once with its HELP and TYPE, label values escaped and made valid UTF-8 (a
// process named with bytes that are not UTF-8 must not make Prometheus reject the whole scrape).
// Families declared but given no sample print nothing.
//
// A family is a constant (MetricFamily) declared once beside the code that writes it, and a sample
// names that constant, not a string: a misspelt family does not compile, where a name looked up at
// run time would drop its samples without a word.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::formats {

struct MetricFamily {
    const char* name;
    const char* type;  // "gauge" or "counter"
    const char* help;
};

class Exposition {
  public:
    using Labels = std::vector<std::pair<const char*, std::string>>;

    // Declares a family: the families are written in the order they were first declared. Declaring
    // one (by its name) twice keeps the first.
    void family(const MetricFamily& f);

    // One sample of the family, declared by it when it was not before (a value that is not finite is
    // dropped: NaN and infinity mean "unknown" here, and absent is how baton says that).
    void sample(const MetricFamily& f, const Labels& labels, double v);

    template <typename T>
    void sample(const MetricFamily& f, const Labels& labels, const std::optional<T>& v, double scale = 1.0) {
        if (v) sample(f, labels, static_cast<double>(*v) * scale);
    }

    // Appends every family that has samples, in the order they were declared.
    void write(std::string& out) const;

  private:
    struct Family {
        const char* name;
        const char* type;
        const char* help;
        std::string samples;
    };
    std::vector<Family> families_;
    std::map<std::string_view, std::size_t> index_;
};

// A label value as the format wants it: valid UTF-8 (other bytes become '?'), with backslash,
// double quote and newline escaped. Appended to `out`.
void append_label_value(std::string_view value, std::string& out);

}  // namespace baton::formats
