#!/usr/bin/env python3
"""`baton profile` against the first step of any Python analysis of a trace (HTA, a notebook):
`json.load` of the same file, side by side in one run.

A Kineto-layout trace of SIZE MB (default 200) is written first, shaped as a real GPU training step's:
per step a ProfilerStep mark, the DataLoader's range, Python frames (with_stack), ATen operators with
their shapes and types (record_shapes), cudaLaunchKernel calls and their kernels with grid and block,
copies and an NCCL all-reduce on a second stream. Then, ROUNDS times each (default 3), alternating:
- baton: `baton profile --json FILE` (the whole analysis: read, break down, judge, print);
- python: `python3 -c "json.load(open(FILE))"` (the file read into Python objects, nothing judged).
Each one's wall time and peak RSS (wait4's ru_maxrss of that process alone) are measured.
Targets (issue 33): baton at least 5 x faster than json.load alone, baton's peak memory at most the
file's size.

usage: bench/profile_vs_json_load.py [SIZE_MB] [ROUNDS]   The baton measured is
build/src/cli/baton-portable, or $BATON. Exit status 0 when both targets are met.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE_MB = float(sys.argv[1]) if len(sys.argv) > 1 else 200
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
BATON = os.environ.get("BATON", os.path.join(ROOT, "build/src/cli/baton-portable"))


def write_trace(path, size_mb):
    """A Kineto trace of about size_mb MB; returns its step count."""
    limit = size_mb * 1e6
    correlation = 0
    step = 0
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": [\n')
        first = True
        while f.tell() < limit:
            t0 = step * 40000.0
            lines = [
                f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 7, "tid": 7, '
                f'"ts": {t0}, "dur": 40000, "args": {{}}}}',
                f'{{"ph": "X", "cat": "user_annotation", "name": '
                f'"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "pid": 7, "tid": 7, '
                f'"ts": {t0 + 1}, "dur": 1500, "args": {{}}}}',
                f'{{"ph": "X", "cat": "python_function", "name": "train.py(88): train_step", "pid": 7, "tid": 7, '
                f'"ts": {t0 + 1600}, "dur": 38000, "args": {{"Python id": {step}, "Python parent id": 1}}}}',
            ]
            t = t0 + 1700
            for k in range(1200):
                correlation += 1
                gemm = k % 3 == 0
                kernel = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
                          if gemm else
                          "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
                          "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
                          "at::detail::Array<char*, 3>)")
                op = "aten::mm" if gemm else "aten::add"
                lines.append(
                    f'{{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": 7, "tid": 7, "ts": {t}, "dur": 24, '
                    f'"args": {{"External id": {correlation}, "Record function id": 0, '
                    f'"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"], '
                    f'"Input Strides": [[4096, 1], [4096, 1]], "Ev Idx": {k}}}}}')
                lines.append(
                    f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, '
                    f'"ts": {t + 6}, "dur": 8, "args": {{"External id": {correlation}, "cbid": 211, '
                    f'"correlation": {correlation}}}}}')
                lines.append(
                    f'{{"ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, "tid": 7, "ts": {t + 20}, '
                    f'"dur": {20 if gemm else 6}, "args": {{"External id": {correlation}, "queued": 0, "device": 0, '
                    f'"context": 1, "stream": 7, "correlation": {correlation}, "registers per thread": 32, '
                    f'"shared memory": 0, "blocks per SM": 8.5, "warps per SM": 34.0, "grid": [1024, 1, 1], '
                    f'"block": [128, 1, 1], "est. achieved occupancy %": 100}}}}')
                lines.append(f'{{"ph": "f", "id": {correlation}, "pid": 0, "tid": 7, "ts": {t + 20}, "cat": "ac2g", '
                             f'"name": "ac2g", "bp": "e"}}')
                t += 30
            correlation += 1
            lines.append(
                f'{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", '
                f'"pid": 0, "tid": 20, "ts": {t0 + 20000}, "dur": 9000, "args": {{"device": 0, "stream": 20, '
                f'"correlation": {correlation}}}}}')
            lines.append(
                f'{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, '
                f'"ts": {t0 + 1560}, "dur": 40, "args": {{"device": 0, "stream": 7, "bytes": 4194304, '
                f'"memory bandwidth (GB/s)": 104.8}}}}')
            f.write(("" if first else ",\n") + ",\n".join(lines))
            first = False
            step += 1
        f.write('\n], "traceName": "bench.pt.trace.json"}\n')
    return step


def measure(argv, out_path):
    """Wall seconds and peak RSS (MB) of one process, its stdout to out_path."""
    start = time.perf_counter()
    with open(out_path, "wb") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        err = p.stderr.read().decode(errors="replace")
        _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - start
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1) or err:  # baton profile: 1 for a warning, and nothing on stderr
        sys.exit(f"{argv[0]} failed ({code}): {err}")
    return seconds, usage.ru_maxrss / 1024


def main():
    if not os.access(BATON, os.X_OK):
        sys.exit(f"no {BATON}: build first (scripts/test.sh) or set $BATON")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        steps = write_trace(path, SIZE_MB)
        size = os.path.getsize(path) / 1e6
        runs = {"baton": [], "python": []}
        out = os.path.join(d, "out.json")
        for _ in range(ROUNDS):
            runs["baton"].append(measure([BATON, "--config", "/dev/null", "profile", "--json", path], out))
            with open(out) as f:
                judged = json.load(f)
            if len(judged["steps"]) != steps:  # the analysis is checked, not only timed
                sys.exit(f"baton profile saw {len(judged['steps'])} steps of {steps}")
            runs["python"].append(measure(["/usr/bin/python3", "-c", "import json, sys; json.load(open(sys.argv[1]))",
                                           path], os.devnull))
        b = statistics.median(s for s, _ in runs["baton"])
        p = statistics.median(s for s, _ in runs["python"])
        b_rss = max(m for _, m in runs["baton"])
        p_rss = max(m for _, m in runs["python"])
        print(f"a {size:.0f} MB Kineto trace ({steps} steps), {ROUNDS} rounds each, medians (baton: {BATON})")
        print(f"baton profile --json (read, break down, judge)   {b:7.2f} s   peak RSS {b_rss:6.0f} MB")
        print(f"python3 json.load (read only)                    {p:7.2f} s   peak RSS {p_rss:6.0f} MB")
        print(f"json.load / baton: {p / b:.1f} x (target >= 5); baton's peak RSS {b_rss / size:.2f} x the file "
              f"(target <= 1)")
        return 0 if p / b >= 5 and b_rss <= size else 1


if __name__ == "__main__":
    sys.exit(main())
