#include "gpu_memory/oom_autopsy.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/text_parse.hpp"
#include "gpu_memory/step_memory.hpp"

namespace baton::gpu_memory {

namespace {

// PyTorch's own files (and baton's hook): a stack's first frame outside them is the line users know.
bool framework_file(std::string_view f) {
    return f.find("/torch/") != std::string_view::npos || f.find("/baton/") != std::string_view::npos ||
           f.rfind("<frozen", 0) == 0;
}

std::string where(const Stack& s) {
    for (const Frame& f : s)
        if (!framework_file(f.filename)) {
            std::string_view file = f.filename;
            if (const std::size_t slash = file.rfind('/'); slash != std::string_view::npos)
                file.remove_prefix(slash + 1);
            return fmt::format("{}:{} in {}", file, f.line, f.name);
        }
    return s.empty() ? std::string() : fmt::format("{}:{} in {}", s.front().filename, s.front().line, s.front().name);
}

// What an allocation was for, from the stack that made it (--memory-history). `known`: the hook found
// the parameters, gradients and optimizer state by their tensors, so what is left of backward's
// allocations is activations' gradients in flight, not parameters' gradients.
MemoryUse use_of_stack(const Stack& s, bool known) {
    bool forward = false, backward = false, setup = false;
    for (const Frame& f : s) {
        const std::string_view file = f.filename, name = f.name;
        if (file.find("torch/optim/") != std::string_view::npos ||
            file.find("torch/distributed/optim") != std::string_view::npos)
            return MemoryUse::optimizer_state;
        if (name == "backward" && (file.find("torch/autograd") != std::string_view::npos ||
                                   file.find("torch/_tensor.py") != std::string_view::npos))
            backward = true;
        if (name == "forward" || name == "_call_impl" || name == "_wrapped_call_impl") forward = true;
        if (name == "_apply" || name == "load_state_dict" || name == "to_empty" || name == "reset_parameters")
            setup = true;
    }
    if (backward) return known ? MemoryUse::activations : MemoryUse::gradients;
    if (setup) return MemoryUse::parameters;
    if (forward) return MemoryUse::activations;
    return MemoryUse::other;
}

// Sums of sizes a capture states: a hostile one must not wrap them around.
std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct Tagged {
    std::uint64_t address = 0, bytes = 0;
    MemoryUse use = MemoryUse::other;
};

std::vector<Tagged> known_tensors(const OomCapture& c) {
    std::vector<Tagged> t;
    for (const KnownTensor& k : c.parameters) t.push_back({k.address, k.bytes, MemoryUse::parameters});
    for (const KnownTensor& k : c.gradients) t.push_back({k.address, k.bytes, MemoryUse::gradients});
    for (const KnownTensor& k : c.optimizer_state) t.push_back({k.address, k.bytes, MemoryUse::optimizer_state});
    std::sort(t.begin(), t.end(), [](const Tagged& a, const Tagged& b) { return a.address < b.address; });
    return t;
}

// The use of the first known tensor inside [address, address + size), if any.
std::optional<MemoryUse> known_use(const std::vector<Tagged>& known, std::uint64_t address, std::uint64_t size) {
    auto it = std::lower_bound(known.begin(), known.end(), address,
                               [](const Tagged& t, std::uint64_t a) { return t.address < a; });
    if (it != known.end() && it->address < address + size) return it->use;
    return std::nullopt;
}

MemoryUse use_of_phase(std::optional<StepPhase> p) {
    return p && (*p == StepPhase::forward || *p == StepPhase::backward) ? MemoryUse::activations : MemoryUse::other;
}

// What the allocated memory held, by category, with the sites of the live allocations.
void attribute(OomAutopsy& a, const OomInputs& in) {
    std::map<MemoryUse, std::uint64_t> uses;
    const OomCapture* c = in.capture;
    if (c && !c->segments.empty()) {
        const std::vector<Tagged> known = known_tensors(*c);
        const bool found = !known.empty();
        std::map<std::string, AllocationSite> sites;
        for (const Segment& s : c->segments)
            for (const Block& b : s.blocks) {
                if (b.state == BlockState::inactive) continue;
                const Stack* stack = b.stack >= 0 && static_cast<std::size_t>(b.stack) < c->stacks.size()
                                         ? &c->stacks[static_cast<std::size_t>(b.stack)]
                                         : nullptr;
                MemoryUse u = use_of_phase(a.phase);
                if (const std::optional<MemoryUse> k = known_use(known, b.address, b.size))
                    u = *k;
                else if (stack)
                    u = use_of_stack(*stack, found);
                uses[u] = add_sat(uses[u], b.size);
                if (stack) {
                    AllocationSite& site = sites[where(*stack)];
                    site.use = u;
                    site.bytes = add_sat(site.bytes, b.size);
                    ++site.blocks;
                }
            }
        a.uses_from = c->history ? "the blocks of the allocator's snapshot, by tensor and allocation stack"
                      : found    ? "the blocks of the allocator's snapshot, by the tensors the hook found"
                                 : "the blocks of the allocator's snapshot, by the step's phase";
        for (auto& [w, site] : sites) {
            site.where = w;
            a.sites.push_back(site);
        }
        std::sort(a.sites.begin(), a.sites.end(),
                  [](const AllocationSite& x, const AllocationSite& y) { return x.bytes > y.bytes; });
        if (a.sites.size() > 8) a.sites.resize(8);
    } else if (c && (!c->parameters.empty() || !c->optimizer_state.empty()) && a.allocated) {
        std::uint64_t known = 0;
        for (const auto& [list, u] :
             {std::pair{&c->parameters, MemoryUse::parameters}, std::pair{&c->gradients, MemoryUse::gradients},
              std::pair{&c->optimizer_state, MemoryUse::optimizer_state}})
            for (const KnownTensor& k : *list) {
                uses[u] = add_sat(uses[u], k.bytes);
                known = add_sat(known, k.bytes);
            }
        if (*a.allocated > known) uses[use_of_phase(a.phase)] += *a.allocated - known;
        a.uses_from = "the tensors the hook found, the rest by the step's phase";
    } else if (in.steps && in.steps->held_bytes && a.allocated) {
        // Only the per-step figures: what steps kept is the model's state, the rest this step's.
        const std::uint64_t held = std::min(in.steps->held_bytes, *a.allocated);
        uses[MemoryUse::model_state] = held;
        if (*a.allocated > held) uses[MemoryUse::activations] = *a.allocated - held;
        a.uses_from = "the per-step figures: memory kept across steps against this step's";
    }
    for (const auto& [u, bytes] : uses)
        if (bytes) a.uses.emplace_back(u, bytes);
    std::sort(a.uses.begin(), a.uses.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
}

std::uint64_t use_bytes(const OomAutopsy& a, MemoryUse u) {
    for (const auto& [x, bytes] : a.uses)
        if (x == u) return bytes;
    return 0;
}

std::string gib(std::uint64_t b) {
    return torch_size(static_cast<double>(b));
}

std::string occupant(const GpuOccupant& p) {
    std::string who = p.name.empty() ? "" : p.name;
    if (!p.user.empty()) who += (who.empty() ? "" : ", ") + std::string("user ") + p.user;
    return who.empty() ? fmt::format("pid {}", p.pid) : fmt::format("pid {} ({})", p.pid, who);
}

void choose_cause(OomAutopsy& a) {
    if (!a.requested) {
        a.cause = OomCause::unknown;
        return;
    }
    // In doubles: the figures come from a message or a file and may be anything.
    const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
    const double req = d(*a.requested), free = d(a.free.value_or(0)), others = d(a.others_bytes);
    if ((a.capacity && req > d(*a.capacity)) || (a.allowed && req > d(*a.allowed)))
        a.cause = OomCause::too_large;
    else if (a.allowed && a.reserved && d(*a.reserved) + req > d(*a.allowed) && (!a.capacity || free >= req))
        a.cause = OomCause::limit;
    // Fragmentation when the reserve's free space could have held the request and is no crumb of it
    // (5 %: a reserve that is all in use leaves a few MiB unallocated, and that is not the cause).
    else if (a.unallocated && d(*a.unallocated) >= req && (!a.reserved || d(*a.unallocated) * 20 >= d(*a.reserved)))
        a.cause = OomCause::fragmentation;
    else if (others > 0 && others + free >= req && (!a.capacity || others * 10 >= d(*a.capacity)))
        a.cause = OomCause::other_processes;
    else
        a.cause = OomCause::memory_in_use;
}

// The largest batch whose peak fits: the memory kept across steps plus a per-sample share of the
// step's peak above it, against what the GPU leaves the job.
void estimate_fit(OomAutopsy& a, const OomInputs& in) {
    const std::uint64_t activations = use_bytes(a, MemoryUse::activations);
    if (activations) {
        if (!a.autocast) a.amp_saves = activations / 2;  // 16-bit activations instead of 32-bit
        // All but the checkpointed boundaries, roughly.
        a.checkpointing_saves = static_cast<std::uint64_t>(static_cast<double>(activations) * 0.7);
    }
    if (in.steps && in.steps->steps >= 5 && in.steps->held_bytes > in.steps->held_first &&
        (in.steps->held_bytes - in.steps->held_first) * 4 >= in.steps->held_bytes) {
        a.kept_growth = std::pair(in.steps->held_first, in.steps->held_bytes);
        a.kept_steps = in.steps->steps;
        return;  // the batch is not what grew: no batch that "fits"
    }
    if (!in.steps || !a.capacity) return;
    // The GPU less other processes and a 5 % margin (the CUDA context, the allocator's rounding).
    double budget = static_cast<double>(*a.capacity) * 0.95 - static_cast<double>(a.others_bytes);
    if (a.allowed) budget = std::min(budget, static_cast<double>(*a.allowed) * 0.95);
    if (in.steps->model) a.largest_batch = largest_batch(*in.steps->model, budget);
}

void write_advice(OomAutopsy& a) {
    const std::string gpu = a.gpu           ? fmt::format("GPU{}", *a.gpu)
                            : a.cuda_device ? fmt::format("cuda:{}", *a.cuda_device)
                                            : std::string("the GPU");
    const std::string asked =
        a.requested ? fmt::format("{} asked with {} free", gib(*a.requested), a.free ? gib(*a.free) : "?") : "";
    const std::string where = a.failed_at.empty() ? "" : " at " + a.failed_at;
    switch (a.cause) {
        case OomCause::unknown:
            a.summary = fmt::format(
                "the job ran out of GPU memory on {} (CUDA out of memory, without the allocator's "
                "figures)",
                gpu);
            a.fix =
                "A CUDA library's own allocation or a new CUDA context did not fit: check for other processes on "
                "the GPU (baton top), then shrink the batch or use mixed precision. Under baton run with the "
                "hook (baton.torch.watch), the next failure is explained by what held the memory.";
            a.snippet = "baton top";
            return;
        case OomCause::too_large:
            a.summary = fmt::format("{} ran out of memory{}: one request of {} is larger than the whole GPU ({})", gpu,
                                    where, gib(*a.requested), gib(a.allowed.value_or(a.capacity.value_or(0))));
            a.fix =
                "No freeing helps: that one tensor must get smaller. Shrink what its shape grows with at that line "
                "(the batch, the sequence length, an attention matrix of sequence x sequence: use "
                "scaled_dot_product_attention), or split the layer across GPUs (tensor parallelism).";
            a.snippet = "torch.nn.functional.scaled_dot_product_attention(q, k, v)  # no sequence x sequence matrix";
            return;
        case OomCause::limit:
            a.summary = fmt::format("{} ran out of its allowed {}{}: {}", gpu, gib(*a.allowed), where, asked);
            a.fix =
                "torch.cuda.set_per_process_memory_fraction limits this process below the GPU's memory: raise the "
                "fraction, or use less (mixed precision, a smaller batch with gradient accumulation).";
            a.snippet = "torch.cuda.set_per_process_memory_fraction(0.9)";
            return;
        case OomCause::fragmentation: {
            a.summary = fmt::format(
                "{} ran out of memory{}: {}, while {} of PyTorch's reserve was unallocated "
                "(fragmentation{})",
                gpu, where, asked, gib(*a.unallocated),
                a.largest_free_block ? ": its largest free block " + gib(*a.largest_free_block) : std::string());
            const bool expandable = a.torch_version.empty() || torch_at_least(a.torch_version, 2, 1);
            a.fix = expandable
                        ? "The reserve had room, in pieces too small for the request. Expandable segments let the "
                          "allocator grow one segment instead of cutting many (PyTorch >= 2.1): set "
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before the script starts. Varying shapes "
                          "(variable sequence lengths) fragment most: padding to a few fixed lengths helps too."
                        : "The reserve had room, in pieces too small for the request. PyTorch " + a.torch_version +
                              " has no expandable segments (2.1 added them): set "
                              "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 so large free blocks are not split for "
                              "small tensors, or upgrade PyTorch.";
            a.snippet = expandable ? "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                                   : "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128";
            return;
        }
        case OomCause::other_processes: {
            std::string who;
            for (const GpuOccupant& p : a.others) {
                if (who.size() > 160) break;
                who += (who.empty() ? "" : ", ") + fmt::format("{} by {}", gib(p.bytes), occupant(p));
            }
            a.summary = fmt::format("{} ran out of memory{}: {}; other processes held {} of it ({})", gpu, where, asked,
                                    gib(a.others_bytes), who.empty() ? "not named" : who);
            a.fix =
                "The fix is not the batch size: another process holds the memory. Run on a GPU nobody uses "
                "(baton top shows who holds which; baton submit queues the job for a free one), or ask the "
                "process's owner to release it (a notebook keeps its memory until its kernel restarts).";
            a.snippet = "baton top";
            return;
        }
        case OomCause::memory_in_use:
            break;
    }
    // The job's own tensors filled the GPU: the fix depends on what they were.
    const MemoryUse top = a.uses.empty() ? MemoryUse::other : a.uses.front().first;
    std::string held;
    if (!a.uses.empty() && a.allocated)
        held = fmt::format("; of the {} allocated, {} {}", gib(*a.allocated), memory_use_label(top),
                           gib(a.uses.front().second));
    else if (a.allocated)
        held = fmt::format("; {} allocated by PyTorch", gib(*a.allocated));
    a.summary = fmt::format("{} ran out of memory{}: {}{}", gpu, where, asked, held);
    if (a.kept_growth) {
        a.fix = fmt::format(
            "What the steps keep grew from {} to {} over {} steps: a tensor is kept from each step "
            "until the GPU is full, whatever the batch. Keep numbers, not tensors (total_loss += "
            "loss.item(), not += loss), .detach() what must stay, do not append outputs that "
            "require grad to a list; baton run --memory-history records the stacks that "
            "allocated it.",
            gib(a.kept_growth->first), gib(a.kept_growth->second), a.kept_steps);
        a.snippet = "total_loss += loss.item()   # not: total_loss += loss";
        return;
    }
    std::string fit;
    if (a.largest_batch && *a.largest_batch > 0 && a.batch_size)
        fit = fmt::format(" A batch of about {} fits (this one: {}).", *a.largest_batch, *a.batch_size);
    switch (top) {
        case MemoryUse::activations: {
            std::string parts;
            if (a.amp_saves)
                parts +=
                    fmt::format("mixed precision (torch.autocast with bfloat16) saves about {}; ", gib(*a.amp_saves));
            if (a.checkpointing_saves)
                parts += fmt::format(
                    "activation checkpointing (torch.utils.checkpoint) up to {} for about a third "
                    "more compute; ",
                    gib(*a.checkpointing_saves));
            a.fix = "Activations (what the forward pass keeps for backward) fill the GPU: " + parts +
                    "or halve the micro-batch and accumulate gradients over two steps, which keeps the effective "
                    "batch." +
                    fit;
            a.snippet = a.autocast ? "from torch.utils.checkpoint import checkpoint\nx = checkpoint(block, x, "
                                     "use_reentrant=False)  # each block's activations recomputed in backward"
                                   : "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(batch)";
            return;
        }
        case MemoryUse::optimizer_state:
            a.fix =
                "The optimizer's state fills the GPU (Adam keeps two fp32 values per parameter): shard it across "
                "the data-parallel ranks (ZeroRedundancyOptimizer, FSDP), or use a lighter optimizer (8-bit Adam "
                "from bitsandbytes, Adafactor, SGD with momentum)." +
                fit;
            a.snippet =
                "from torch.distributed.optim import ZeroRedundancyOptimizer\n"
                "opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=lr)";
            return;
        case MemoryUse::parameters:
        case MemoryUse::gradients:
        case MemoryUse::model_state:
            a.fix =
                "The model itself (parameters, their gradients, the optimizer's state) fills the GPU before any "
                "activation: shard it across GPUs (FullyShardedDataParallel), keep the weights in bfloat16, or "
                "offload the optimizer's state to the CPU." +
                fit;
            a.snippet = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)";
            return;
        case MemoryUse::other:
            break;
    }
    a.fix =
        "Mixed precision (torch.autocast with a GradScaler) cuts activation memory by about 40 %; a smaller batch "
        "with gradient accumulation keeps the effective batch; activation checkpointing trades compute for memory. "
        "baton run --memory-history records the allocation stacks that tell what held the memory." +
        fit;
    a.snippet = "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(batch)";
}

diagnose::Evidence figure(const std::string& metric, double value) {
    diagnose::Evidence e;
    e.metric = metric;
    e.average = e.minimum = e.maximum = value;
    e.samples = 1;
    return e;
}

}  // namespace

const char* memory_use_label(MemoryUse u) {
    switch (u) {
        case MemoryUse::parameters:
            return "parameters";
        case MemoryUse::gradients:
            return "gradients";
        case MemoryUse::optimizer_state:
            return "optimizer state";
        case MemoryUse::model_state:
            return "parameters, gradients and optimizer state";
        case MemoryUse::activations:
            return "activations";
        case MemoryUse::other:
            return "other tensors";
    }
    return "other tensors";
}

bool torch_at_least(std::string_view version, int major, int minor) {
    std::string_view s = version;
    const std::optional<std::uint64_t> ma = text::take_u64(s);
    if (!ma || s.empty() || s.front() != '.') return false;
    s.remove_prefix(1);
    const std::optional<std::uint64_t> mi = text::take_u64(s);
    if (!mi) return false;
    return *ma > static_cast<std::uint64_t>(major) ||
           (*ma == static_cast<std::uint64_t>(major) && *mi >= static_cast<std::uint64_t>(minor));
}

OomAutopsy explain_oom(const OomInputs& in) {
    OomAutopsy a;
    if (in.message) {
        const OomMessage& m = *in.message;
        a.requested = m.requested_bytes;
        a.cuda_device = m.gpu;
        a.capacity = m.capacity_bytes;
        a.free = m.free_bytes;
        a.allowed = m.allowed_bytes;
        a.allocated = m.allocated_bytes;
        a.reserved = m.reserved_bytes;
        a.unallocated = m.unallocated_bytes;
    }
    if (const OomCapture* c = in.capture) {
        if (!a.requested) a.requested = c->requested_bytes;
        if (!a.cuda_device) a.cuda_device = c->device;
        if (!a.capacity) a.capacity = c->device_total_bytes;
        if (!a.free) a.free = c->device_free_bytes;
        if (!a.allocated && c->stats.reserved) a.allocated = c->stats.allocated;
        if (!a.reserved && c->stats.reserved) a.reserved = c->stats.reserved;
        if (!a.unallocated && a.reserved && a.allocated && *a.reserved >= *a.allocated)
            a.unallocated = *a.reserved - *a.allocated;
        a.phase = c->phase;
        a.step = c->step;
        a.batch_size = c->batch_size;
        a.autocast = c->autocast;
        a.torch_version = c->torch_version;
        a.failed_at = where(c->failure_stack);
        std::uint64_t largest = 0;
        bool any = false;
        for (const Segment& s : c->segments)
            for (const Block& b : s.blocks)
                if (b.state == BlockState::inactive) {
                    largest = std::max(largest, b.size);
                    any = true;
                }
        if (any || !c->segments.empty()) a.largest_free_block = largest;
    }
    if (in.gpu) {
        a.gpu = in.gpu->index;
        if (!a.capacity) a.capacity = in.gpu->total_bytes;
        for (const GpuOccupant& p : in.gpu->processes)
            if (!p.job && p.bytes) a.others.push_back(p);
    } else if (in.message) {
        for (const ProcessMemory& p : in.message->others) a.others.push_back({p.pid, p.bytes, "", "", false});
    }
    std::sort(a.others.begin(), a.others.end(),
              [](const GpuOccupant& x, const GpuOccupant& y) { return x.bytes > y.bytes; });
    for (const GpuOccupant& p : a.others) a.others_bytes = add_sat(a.others_bytes, p.bytes);
    if (!a.batch_size && in.steps && in.steps->batch_size) a.batch_size = in.steps->batch_size;
    attribute(a, in);
    choose_cause(a);
    estimate_fit(a, in);
    write_advice(a);
    return a;
}

diagnose::Finding oom_finding(const OomAutopsy& a, std::string_view line) {
    diagnose::Finding f;
    f.rule = "cuda_oom";
    f.severity = diagnose::Severity::critical;
    f.subject = "job";
    f.summary = a.summary;
    f.recommendation = a.fix;
    if (!a.snippet.empty()) f.snippet = a.snippet;
    f.doc = "docs/findings.md#cuda_oom";
    if (!line.empty()) {
        diagnose::Evidence e;
        e.metric = "stderr";
        e.threshold = std::string(line.substr(0, 300));
        e.samples = 1;
        f.evidence.push_back(e);
    }
    const auto add = [&](const char* metric, const std::optional<std::uint64_t>& v) {
        if (v) f.evidence.push_back(figure(metric, static_cast<double>(*v)));
    };
    add("oom.requested_bytes", a.requested);
    add("oom.free_bytes", a.free);
    add("oom.capacity_bytes", a.capacity);
    add("oom.allocated_bytes", a.allocated);
    add("oom.reserved_unallocated_bytes", a.unallocated);
    add("oom.largest_free_block_bytes", a.largest_free_block);
    if (a.others_bytes) add("oom.other_processes_bytes", a.others_bytes);
    for (const auto& [u, bytes] : a.uses)
        f.evidence.push_back(figure(fmt::format("oom.{}_bytes", enum_name(u)), static_cast<double>(bytes)));
    // The largest live allocation sites, each named in the threshold's place: "train.py:42 in forward
    // (activations)".
    for (const AllocationSite& site : a.sites) {
        diagnose::Evidence e = figure("oom.site_bytes", static_cast<double>(site.bytes));
        e.threshold = fmt::format("{} ({})", site.where, memory_use_label(site.use));
        f.evidence.push_back(std::move(e));
    }
    return f;
}

}  // namespace baton::gpu_memory
