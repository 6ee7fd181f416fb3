#include "sample/jobs/pod_resources.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "sample/jobs/grpc_unix.hpp"

namespace baton::jobs {

namespace {

constexpr std::size_t kMaxDevices = 100000;  // a node's worth, many times over

// Protobuf's wire format (varints, length-delimited fields), read from a view that shrinks.
class Wire {
  public:
    explicit Wire(std::string_view b) : b_(b) {}
    bool done() const { return b_.empty(); }

    std::optional<std::uint64_t> varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (b_.empty()) return std::nullopt;
            const auto byte = static_cast<unsigned char>(b_.front());
            b_.remove_prefix(1);
            v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return v;
        }
        return std::nullopt;  // more than ten bytes
    }

    // The next field: its number and wire type, and for length-delimited ones the bytes.
    struct Field {
        std::uint64_t number = 0;
        unsigned type = 0;
        std::string_view bytes;
    };
    std::optional<Field> field() {
        const auto key = varint();
        if (!key) return std::nullopt;
        Field f{*key >> 3, static_cast<unsigned>(*key & 7), {}};
        if (f.number == 0) return std::nullopt;
        switch (f.type) {
            case 0:
                if (!varint()) return std::nullopt;
                return f;
            case 1:
                return skip(8) ? std::optional<Field>(f) : std::nullopt;
            case 5:
                return skip(4) ? std::optional<Field>(f) : std::nullopt;
            case 2: {
                const auto len = varint();
                if (!len || *len > b_.size()) return std::nullopt;
                f.bytes = b_.substr(0, static_cast<std::size_t>(*len));
                b_.remove_prefix(static_cast<std::size_t>(*len));
                return f;
            }
            default:
                return std::nullopt;  // groups (3, 4) are not in this API; 6 and 7 do not exist
        }
    }

  private:
    bool skip(std::size_t n) {
        if (b_.size() < n) return false;
        b_.remove_prefix(n);
        return true;
    }
    std::string_view b_;
};

// A Kubernetes object name: lower-case letters, digits, '-' and '.', at most 253 bytes.
bool k8s_name(std::string_view s) {
    return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    });
}

// A resource name ("nvidia.com/gpu") and a device id ("GPU-8f6c...", "MIG-...", "0"): printable,
// no quote or backslash, bounded.
bool plain(std::string_view s) {
    return !s.empty() && s.size() <= 256 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

Error malformed(const char* what) {
    return make_error(std::string("a malformed pod-resources answer (") + what + ")");
}

struct Device {
    std::string resource;
    std::vector<std::string> ids;
};

Result<Device> container_devices(std::string_view b) {
    Device d;
    Wire w(b);
    while (!w.done()) {
        auto f = w.field();
        if (!f) return malformed("a device entry");
        if (f->type != 2) continue;
        if (f->number == 1) {
            if (!plain(f->bytes)) return malformed("a resource name");
            d.resource.assign(f->bytes);
        } else if (f->number == 2) {
            std::string_view id = f->bytes;
            id = id.substr(0, id.find("::"));  // a time-slicing replica of the device
            if (!plain(id)) return malformed("a device id");
            d.ids.emplace_back(id);
        }
    }
    return d;
}

Status container(std::string_view b, const std::string& ns, const std::string& pod, std::vector<PodDevice>& out) {
    std::string name;
    std::vector<Device> devices;
    Wire w(b);
    while (!w.done()) {
        auto f = w.field();
        if (!f) return malformed("a container entry");
        if (f->type != 2) continue;
        if (f->number == 1) {
            if (!k8s_name(f->bytes)) return malformed("a container name");
            name.assign(f->bytes);
        } else if (f->number == 2) {
            Result<Device> d = container_devices(f->bytes);
            if (!d.ok()) return d.error();
            devices.push_back(std::move(*d));
        }
    }
    for (const Device& d : devices)
        for (const std::string& id : d.ids) {
            if (out.size() >= kMaxDevices) return malformed("too many devices");
            out.push_back({ns, pod, name, d.resource, id});
        }
    return Ok{};
}

Status pod(std::string_view b, std::vector<PodDevice>& out) {
    std::string name, ns;
    std::vector<std::string_view> containers;
    Wire w(b);
    while (!w.done()) {
        auto f = w.field();
        if (!f) return malformed("a pod entry");
        if (f->type != 2) continue;
        if (f->number == 1 || f->number == 2) {
            if (!k8s_name(f->bytes)) return malformed(f->number == 1 ? "a pod name" : "a namespace");
            (f->number == 1 ? name : ns).assign(f->bytes);
        } else if (f->number == 3) {
            containers.push_back(f->bytes);
        }
    }
    for (std::string_view c : containers)
        if (Status s = container(c, ns, name, out); !s.ok()) return s;
    return Ok{};
}

}  // namespace

Result<std::vector<PodDevice>> parse_pod_resources(std::string_view message) {
    std::vector<PodDevice> out;
    Wire w(message);
    while (!w.done()) {
        auto f = w.field();
        if (!f) return malformed("the pod list");
        if (f->number != 1 || f->type != 2) continue;
        if (Status s = pod(f->bytes, out); !s.ok()) return s.error();
    }
    return out;
}

Result<std::vector<PodDevice>> list_pod_resources(const std::string& socket, double timeout_seconds) {
    Result<std::string> answer = grpc_unary_call(socket, "/v1.PodResourcesLister/List", "", timeout_seconds);
    if (!answer.ok()) return make_error("the kubelet's pod-resources socket " + socket + ": " + answer.error().message);
    return parse_pod_resources(*answer);
}

}  // namespace baton::jobs
