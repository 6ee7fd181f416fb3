// Captures as the hook writes them (docs/memory.md), built by the tests: a training process's
// allocator at an out-of-memory failure, in the layout of torch.cuda.memory._snapshot().
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace baton::gpu_memory::testing {

inline constexpr std::uint64_t kMiB = 1048576, kGiB = 1073741824;

inline nlohmann::json frame(const std::string& file, int line, const std::string& name) {
    return {{"filename", file}, {"line", line}, {"name", name}};
}

// Stacks as PyTorch records them, innermost first.
inline nlohmann::json forward_stack() {
    return nlohmann::json::array(
        {frame("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", 114, "forward"),
         frame("/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 1501, "_call_impl"),
         frame("/home/ana/train.py", 42, "forward"), frame("/home/ana/train.py", 88, "<module>")});
}
inline nlohmann::json optimizer_stack() {
    return nlohmann::json::array({frame("/usr/lib/python3/dist-packages/torch/optim/adam.py", 130, "_init_group"),
                                  frame("/usr/lib/python3/dist-packages/torch/optim/adam.py", 160, "step"),
                                  frame("/home/ana/train.py", 95, "<module>")});
}

// A capture of one process on device 0 with `segments` and the tensors the hook found.
class CaptureBuilder {
  public:
    CaptureBuilder() {
        j_ = {{"baton_oom_capture", 1},
              {"pid", 4242},
              {"rank", 0},
              {"device", 0},
              {"t", 1.7e12},
              {"torch", "2.4.1"},
              {"step", 12},
              {"batch_size", 64},
              {"phase", "forward"},
              {"autocast", false},
              {"history", false},
              {"device_total_bytes", 80 * kGiB}};
        j_["snapshot"] = {{"segments", nlohmann::json::array()}, {"device_traces", nlohmann::json::array()}};
        j_["tensors"] = {{"parameters", nlohmann::json::array()},
                         {"gradients", nlohmann::json::array()},
                         {"optimizer_state", nlohmann::json::array()}};
    }
    CaptureBuilder& set(const std::string& key, nlohmann::json v) {
        j_[key] = std::move(v);
        return *this;
    }
    // One segment at `address` of the given blocks (size, state, frames or null), addresses in order.
    CaptureBuilder& segment(std::uint64_t address, const nlohmann::json& blocks, bool with_addresses = true) {
        nlohmann::json seg = {{"device", 0}, {"address", address}, {"stream", 0}, {"segment_type", "large"}};
        std::uint64_t at = address, total = 0, allocated = 0;
        nlohmann::json out = nlohmann::json::array();
        for (const auto& b : blocks) {
            nlohmann::json x = {{"size", b[0]}, {"requested_size", b[0]}, {"state", b[1]}};
            if (with_addresses) x["address"] = at;
            if (!b[2].is_null()) x["frames"] = b[2];
            const std::uint64_t size = b[0].get<std::uint64_t>();
            at += size;
            total += size;
            if (b[1] == "active_allocated") allocated += size;
            out.push_back(x);
        }
        seg["total_size"] = total;
        seg["allocated_size"] = allocated;
        seg["active_size"] = allocated;
        seg["blocks"] = out;
        j_["snapshot"]["segments"].push_back(seg);
        reserved_ += total;
        allocated_ += allocated;
        return *this;
    }
    CaptureBuilder& tensor(const char* kind, std::uint64_t address, std::uint64_t bytes) {
        j_["tensors"][kind].push_back({address, bytes});
        return *this;
    }
    std::string json() {
        nlohmann::json out = j_;
        if (!out.contains("stats"))
            out["stats"] = {{"allocated_bytes", allocated_}, {"reserved_bytes", reserved_}, {"num_ooms", 1}};
        return out.dump();
    }

  private:
    nlohmann::json j_;
    std::uint64_t reserved_ = 0, allocated_ = 0;
};

}  // namespace baton::gpu_memory::testing
