// What an XID means and what to do about it: the errors the NVIDIA driver reports for a GPU
// (NVIDIA's "XID Errors" catalogue, r550 to r570), grouped by the action they call for, which is
// what a fleet operator decides on: is it the job's fault, or must the node stop taking work?
// Used by the gpu_xid rule and `baton doctor --health`.
#pragma once

#include <string>

namespace baton::diagnose {

enum class XidAction {
    application,  // most often the job's own fault (an illegal address): the job failed, the GPU is fine
    consequence,  // a clean-up after an earlier error or a killed process: nothing of its own to do
    reset,        // the GPU recorded a fault it repairs on its next reset: reset it when it is idle
    drain,        // the GPU or its links failed: stop scheduling work on it, reset it, RMA if it recurs
    unknown,      // not in the catalogue: look it up
};

struct XidMeaning {
    const char* name;  // NVIDIA's name for it, e.g. "Double Bit ECC Error"
    XidAction action;
};

XidMeaning xid_meaning(unsigned xid);

// The action's advice, one sentence or two, for GPU `index`.
std::string xid_advice(XidAction action, unsigned index);

// "drain", "reset", ...: how `baton doctor --health` names the action.
const char* xid_action_name(XidAction action);

}  // namespace baton::diagnose
