#include "tune/settings.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <nlohmann/json.hpp>

#include "core/json_writer.hpp"

namespace baton::tune {

namespace {

using json = nlohmann::json;

const char* py_bool(bool b) {
    return b ? "True" : "False";
}

template <typename F>
void each_field(const Settings& s, F&& f) {
    f("num_workers", s.num_workers);
    f("pin_memory", s.pin_memory);
    f("persistent_workers", s.persistent_workers);
    f("prefetch_factor", s.prefetch_factor);
    f("batch_size", s.batch_size);
    f("threads", s.threads);
    f("cudnn_benchmark", s.cudnn_benchmark);
    f("tf32", s.tf32);
    f("autocast", s.autocast);
    f("expandable_segments", s.expandable_segments);
}

std::string text_of(int v) {
    return std::to_string(v);
}
std::string text_of(bool v) {
    return py_bool(v);
}
std::string text_of(const std::string& v) {
    return v;
}

}  // namespace

bool Settings::empty() const {
    return *this == Settings{};
}

Settings Settings::merged(const Settings& over) const {
    Settings out = *this;
    auto take = [](auto& mine, const auto& theirs) {
        if (theirs) mine = theirs;
    };
    take(out.num_workers, over.num_workers);
    take(out.pin_memory, over.pin_memory);
    take(out.persistent_workers, over.persistent_workers);
    take(out.prefetch_factor, over.prefetch_factor);
    take(out.batch_size, over.batch_size);
    take(out.threads, over.threads);
    take(out.cudnn_benchmark, over.cudnn_benchmark);
    take(out.tf32, over.tf32);
    take(out.autocast, over.autocast);
    take(out.expandable_segments, over.expandable_segments);
    return out;
}

bool changes_numerics(const Settings& s) {
    return (s.tf32 && *s.tf32) || s.autocast.has_value();
}

bool changes_optimisation(const Settings& s) {
    return s.batch_size.has_value();
}

std::size_t changed_count(const Settings& s) {
    std::size_t n = 0;
    each_field(s, [&](const char*, const auto& v) { n += v.has_value(); });
    return n;
}

std::string label(const Settings& s) {
    std::string out;
    each_field(s, [&](const char* name, const auto& v) {
        if (v) out += (out.empty() ? "" : " ") + std::string(name) + "=" + text_of(*v);
    });
    return out.empty() ? "your settings" : out;
}

std::string to_json(const Settings& s) {
    std::string out;
    {
        JsonWriter w(out);
        w.begin_object();
        each_field(s, [&](const char* name, const auto& v) {
            if (!v) return;
            w.key(std::string_view(name));
            w.value(*v);
        });
        w.end_object();
    }
    return out;
}

Result<Settings> settings_from_json(std::string_view text) {
    const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return make_error("the settings are not a JSON object");
    Settings s;
    for (auto item = j.begin(); item != j.end(); ++item) {
        // (named, not a structured binding: the lambdas below capture them)
        const std::string& key = item.key();
        const json& v = item.value();
        auto whole = [&](std::optional<int>& into, int lo, int hi) -> Status {
            if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
                return make_error(fmt::format("'{}' must be a whole number from {} to {}", key, lo, hi));
            into = static_cast<int>(v.get<std::int64_t>());
            return Ok{};
        };
        auto flag = [&](std::optional<bool>& into) -> Status {
            if (!v.is_boolean()) return make_error("'" + key + "' must be true or false");
            into = v.get<bool>();
            return Ok{};
        };
        Status st = Ok{};
        if (key == "num_workers")
            st = whole(s.num_workers, 0, 1024);
        else if (key == "pin_memory")
            st = flag(s.pin_memory);
        else if (key == "persistent_workers")
            st = flag(s.persistent_workers);
        else if (key == "prefetch_factor")
            st = whole(s.prefetch_factor, 1, 1024);
        else if (key == "batch_size")
            st = whole(s.batch_size, 1, 1 << 24);
        else if (key == "threads")
            st = whole(s.threads, 1, 4096);
        else if (key == "cudnn_benchmark")
            st = flag(s.cudnn_benchmark);
        else if (key == "tf32")
            st = flag(s.tf32);
        else if (key == "expandable_segments")
            st = flag(s.expandable_segments);
        else if (key == "autocast") {
            if (!v.is_string() || (v.get<std::string>() != "bfloat16" && v.get<std::string>() != "float16"))
                st = make_error("'autocast' must be \"bfloat16\" or \"float16\"");
            else
                s.autocast = v.get<std::string>();
        } else {
            st = make_error("unknown setting '" + key + "'");
        }
        if (!st.ok()) return st.error();
    }
    return s;
}

std::vector<std::string> paste_lines(const Settings& s) {
    std::vector<std::string> out;
    std::string loader;
    auto arg = [&](const char* name, const std::string& v) {
        loader += (loader.empty() ? "" : ", ") + std::string(name) + "=" + v;
    };
    if (s.batch_size) arg("batch_size", text_of(*s.batch_size));
    if (s.num_workers) arg("num_workers", text_of(*s.num_workers));
    if (s.pin_memory) arg("pin_memory", text_of(*s.pin_memory));
    if (s.persistent_workers) arg("persistent_workers", text_of(*s.persistent_workers));
    if (s.prefetch_factor) arg("prefetch_factor", text_of(*s.prefetch_factor));
    if (!loader.empty()) out.push_back("DataLoader(dataset, ..., " + loader + ")");
    if (s.threads) out.push_back("torch.set_num_threads(" + text_of(*s.threads) + ")");
    if (s.cudnn_benchmark)
        out.push_back(std::string("torch.backends.cudnn.benchmark = ") + py_bool(*s.cudnn_benchmark));
    if (s.tf32) {
        out.push_back(std::string("torch.backends.cuda.matmul.allow_tf32 = ") + py_bool(*s.tf32));
        out.push_back(std::string("torch.backends.cudnn.allow_tf32 = ") + py_bool(*s.tf32));
    }
    if (s.autocast)
        out.push_back("with torch.autocast(\"cuda\", dtype=torch." + *s.autocast +
                      "):  # around the forward and the loss");
    if (s.expandable_segments && *s.expandable_segments)
        out.push_back("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # before the script starts");
    return out;
}

std::vector<std::pair<std::string, std::string>> settings_environment(const Settings& s,
                                                                      const std::optional<std::string>& alloc_conf) {
    std::vector<std::pair<std::string, std::string>> env;
    if (s.empty()) return env;
    env.emplace_back(kTuneVariable, to_json(s));
    if (s.expandable_segments && *s.expandable_segments) {
        std::string conf = alloc_conf.value_or("");
        if (conf.find("expandable_segments") == std::string::npos)
            conf += (conf.empty() ? "" : ",") + std::string("expandable_segments:True");
        env.emplace_back("PYTORCH_CUDA_ALLOC_CONF", conf);
    }
    return env;
}

}  // namespace baton::tune
