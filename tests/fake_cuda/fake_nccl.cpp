// A fake libnccl.so.2 for one process driving several (fake) GPUs: ncclCommInitAll, the four
// collectives inside ncclGroupStart/End, each group lasting as long as moving the collective's
// size (nccl-tests' "size": the gathered output of all_gather, the input of reduce_scatter) at
// $BATON_FAKE_NCCL_ALGBW_GBPS would take. Also:
//   BATON_FAKE_NCCL_FAIL   NAME:CODE: the call NAME returns CODE (e.g. ncclCommInitAll:2)
//   BATON_FAKE_NCCL_HANG   NAME: the call NAME never returns
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

using ncclResult_t = int;

struct Comm {
    int rank = 0, ranks = 1;
};

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

ncclResult_t steer(const char* name) {
    if (env("BATON_FAKE_NCCL_HANG") == name)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::string fail = env("BATON_FAKE_NCCL_FAIL");
    const std::size_t colon = fail.find(':');
    if (colon != std::string::npos && fail.substr(0, colon) == name) return std::atoi(fail.c_str() + colon + 1);
    return 0;
}

int group_depth = 0;
double group_bytes = 0;  // the largest collective size queued in the open group

// A collective of `bytes` (its nccl-tests size): at once outside a group, else at ncclGroupEnd.
void run(double bytes) {
    group_bytes = std::max(group_bytes, bytes);
    if (group_depth > 0) return;
    const double gbps = std::atof(env("BATON_FAKE_NCCL_ALGBW_GBPS").c_str());
    if (gbps > 0) std::this_thread::sleep_for(std::chrono::duration<double>(group_bytes / (gbps * 1e9)));
    group_bytes = 0;
}

double type_size(int type) {
    switch (type) {
        case 0:
        case 1:
            return 1;  // int8, uint8
        case 6:
        case 9:
            return 2;  // half, bfloat16
        case 4:
        case 5:
        case 8:
            return 8;  // int64, uint64, double
        default:
            return 4;  // int32, uint32, float32
    }
}

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default")))
#define STEER(name) \
    if (ncclResult_t rc = steer(name); rc != 0) return rc;

FAKE ncclResult_t ncclGetVersion(int* v) {
    *v = 21903;  // 2.19.3
    return 0;
}
FAKE ncclResult_t ncclCommInitAll(Comm** comms, int n, const int*) {
    STEER("ncclCommInitAll");
    for (int i = 0; i < n; ++i) comms[i] = new Comm{i, n};
    return 0;
}
FAKE ncclResult_t ncclCommDestroy(Comm* c) {
    delete c;
    return 0;
}
FAKE const char* ncclGetErrorString(ncclResult_t rc) {
    switch (rc) {
        case 1:
            return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
        case 2:
            return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
        case 3:
            return "internal error - please report this issue to the NCCL developers";
        default:
            return "unknown result code";
    }
}
FAKE ncclResult_t ncclGroupStart() {
    ++group_depth;
    return 0;
}
FAKE ncclResult_t ncclGroupEnd() {
    STEER("ncclGroupEnd");
    if (group_depth > 0 && --group_depth == 0) run(0);
    return 0;
}
FAKE ncclResult_t ncclAllReduce(const void*, void*, std::size_t count, int type, int, Comm*, void*) {
    STEER("ncclAllReduce");
    run(static_cast<double>(count) * type_size(type));
    return 0;
}
FAKE ncclResult_t ncclAllGather(const void*, void*, std::size_t count, int type, Comm* c, void*) {
    STEER("ncclAllGather");
    run(static_cast<double>(count) * type_size(type) * c->ranks);
    return 0;
}
FAKE ncclResult_t ncclReduceScatter(const void*, void*, std::size_t count, int type, int, Comm* c, void*) {
    STEER("ncclReduceScatter");
    run(static_cast<double>(count) * type_size(type) * c->ranks);
    return 0;
}
FAKE ncclResult_t ncclBroadcast(const void*, void*, std::size_t count, int type, int, Comm*, void*) {
    STEER("ncclBroadcast");
    run(static_cast<double>(count) * type_size(type));
    return 0;
}
