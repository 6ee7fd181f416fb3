// Writing the Prometheus text exposition format 0.0.4: samples grouped by metric family, each
// family printed once with its HELP and TYPE, label values escaped and made valid UTF-8 (a
// process named with bytes that are not UTF-8 must not make Prometheus reject the whole scrape).
// Families declared but given no sample print nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace baton::store {

class Exposition {
  public:
    using Labels = std::vector<std::pair<const char*, std::string>>;

    // Declares a family; `type` is "gauge" or "counter". Declaring one twice keeps the first.
    void family(const char* name, const char* type, const char* help);

    // One sample of a declared family (an undeclared name or a value that is not finite is
    // dropped: NaN and infinity mean "unknown" here, and absent is how baton says that).
    void sample(const char* name, const Labels& labels, double v);

    template <typename T>
    void sample(const char* name, const Labels& labels, const std::optional<T>& v, double scale = 1.0) {
        if (v) sample(name, labels, static_cast<double>(*v) * scale);
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

}  // namespace baton::store
