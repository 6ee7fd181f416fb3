"""`baton bench` end to end on this machine: host memory, a disk (a test file in a temporary
directory, and an existing file read as it is), TCP on loopback between two baton processes with
Debian's iperf3 measuring the same loopback in the same run, hostile bytes at the net server, the
summary with no subcommand, the history (kind `bench`, `baton compare` link by link) and bad input.

Usage: bench_test.py BATON FAKE_NVML_DIR SCENARIOS_DIR [unittest args, e.g. BenchTest.test_x]"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BATON, FAKE_NVML, SCENARIOS = sys.argv[1:4]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAKE_CUDA = os.path.join(os.path.dirname(FAKE_NVML), "fake_cuda")
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHONPATH = os.path.join(HERE, "..", "..", "..", "python")


def fake_gpu_env(scenario, **extra):
    """The fake CUDA driver, NCCL and NVML, with GPUs whose PCI bus ids match the scenario's."""
    with open(os.path.join(SCENARIOS, scenario + ".json")) as f:
        buses = sorted(d["values"]["pci_bus_id"][4:].upper() for d in json.load(f)["devices"])
    env = {"BATON_CUDA_LIBRARY": os.path.join(FAKE_CUDA, "libcuda.so.1"),
           "BATON_NCCL_LIBRARY": os.path.join(FAKE_CUDA, "libnccl.so.2"),
           "BATON_NVML_LIBRARY": os.path.join(FAKE_NVML, scenario, "libnvidia-ml.so.1"),
           "BATON_FAKE_NVML_SCENARIO": os.path.join(SCENARIOS, scenario + ".json"),
           "BATON_FAKE_CUDA_DEVICES": str(len(buses)), "BATON_FAKE_CUDA_BUS_IDS": ",".join(buses)}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def wait_listening(port, seconds=10):
    """True once a socket listens on TCP `port` (read from /proc/net/tcp*, without connecting: a probe
    connection would count as iperf3's test)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    for line in f.readlines()[1:]:
                        local, state = line.split()[1], line.split()[3]
                        if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                            return True
            except OSError:
                pass
        time.sleep(0.05)
    return False


def iperf3_streams(streams, seconds, pinned=False):
    """Bytes per second that `streams` iperf3 clients of one stream each, run at once against as many
    servers on loopback, received in all (iperf3 before 3.16 runs a process's streams on one thread).
    pinned: the server on the second CPU, the client on the first (as the one-stream test pins baton)."""
    ports = [free_port() for _ in range(streams)]
    server_cpu, client_cpu = (on_cpu(1), on_cpu(0)) if pinned else ([], [])
    servers = [subprocess.Popen(server_cpu + ["iperf3", "-s", "-1", "-p", str(p)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for p in ports]
    try:
        for p in ports:
            if not wait_listening(p):
                raise AssertionError("iperf3 -s never listened on %d" % p)
        clients = [subprocess.Popen(client_cpu + ["iperf3", "-c", "127.0.0.1", "-p", str(p), "-t", str(seconds), "-J"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for p in ports]
        total = 0.0
        for c in clients:
            out, _ = c.communicate(timeout=seconds + 60)
            if c.returncode != 0:
                raise AssertionError("iperf3 -c failed: " + out[-500:])
            total += json.loads(out)["end"]["sum_received"]["bits_per_second"] / 8
        return total
    finally:
        for s in servers:
            s.kill()
            s.wait()


def memmove_bytes_per_second(size):
    """STREAM-counted bytes per second (read + written) of one memmove of `size` bytes, best of 5."""
    src, dst = bytearray(b"\x01") * size, bytearray(size)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        dst[:] = src
        best = min(best, time.perf_counter() - start)
    return 2 * size / best


def bench(args, timeout=120, env=None, prefix=()):
    e = dict(os.environ)
    e["BATON_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"  # no GPU here: keep NVML out of it
    e.update(env or {})
    return subprocess.run(list(prefix) + [BATON, "bench"] + args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, env=e)


def on_cpu(cpu):
    """A command prefix that keeps a process on one CPU (taskset), or none with a single CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    return ["taskset", "-c", str(cpus[cpu % len(cpus)])] if len(cpus) > 1 else []


class NetServer:
    """baton bench net --listen on a free loopback port, in its own process; stopped by pid."""

    def __init__(self, *extra, prefix=()):
        self.proc = subprocess.Popen(list(prefix) + [BATON, "bench", "net", "--listen", "127.0.0.1:0"] + list(extra),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        self.port = int(line.split("127.0.0.1:")[1].split()[0])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.communicate()


class BenchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="baton-bench-test-")
        self.dir = self.tmp.name
        self.db = os.path.join(self.dir, "baton.db")

    def tearDown(self):
        self.tmp.cleanup()

    def test_memory_gives_plausible_figures(self):
        r = bench(["memory", "--json", "--no-db"])
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["bench"], "memory")
        rows = j["tables"][0]["rows"]
        self.assertEqual(rows[0]["threads"], 1)
        self.assertEqual(rows[-1]["threads"], len(os.sched_getaffinity(0)))
        for row in rows:  # any machine baton runs on moves between 1 GB/s and 10 TB/s
            for k in ("copy_bytes_per_second", "triad_bytes_per_second"):
                self.assertGreater(row[k], 1e9, row)
                self.assertLess(row[k], 1e13, row)
        # Against a copy timed here on the same machine (Python's bytearray slice copy is one memmove on
        # one thread): one thread of baton within 3 x of it either way, every thread at most 3 x it per
        # thread. A clock read by a thread that was not running read 2 TB/s on 2 CPUs (it failed CI).
        reference = memmove_bytes_per_second(64 << 20)
        one, every = rows[0]["copy_bytes_per_second"], rows[-1]["copy_bytes_per_second"]
        print(f"\nmemory copy: baton {one / 1e9:.1f} GB/s (1 thread), {every / 1e9:.1f} GB/s ({rows[-1]['threads']}"
              f" threads); memmove {reference / 1e9:.1f} GB/s (1 thread)")
        self.assertGreater(one, reference / 3)
        self.assertLess(one, reference * 3)
        self.assertLess(every, reference * 3 * rows[-1]["threads"])
        links = {l["link"]: l for l in j["links"]}
        self.assertEqual(set(links), {"memory copy", "memory triad"})
        self.assertEqual(links["memory triad"]["measured"], rows[-1]["triad_bytes_per_second"])
        # No SMBIOS here (a VM): no peak, nothing judged, and the reason said.
        if "peak" not in links["memory triad"]:
            self.assertEqual(links["memory triad"]["verdict"], "measured")
            self.assertIn("dmi", links["memory triad"]["peak_source"])
        text = bench(["memory", "--threads", "1", "--no-db"])
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("host memory bandwidth by threads (GB/s)", text.stdout)
        self.assertRegex(text.stdout, r"memory triad: [0-9.]+ GB/s")

    def test_disk_cold_and_cached_in_a_directory_and_of_a_file(self):
        r = bench(["disk", self.dir, "--size", "64M", "--need", "1MB/s", "--json", "--no-db"])
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        tests = {row["test"]: row for row in j["tables"][0]["rows"]}
        self.assertEqual(set(tests), {"seq cold", "random cold", "seq cached", "random cached"})
        for row in tests.values():
            self.assertGreater(row["bytes_per_second"], 1e6, row)
        self.assertEqual(tests["random cold"]["request_bytes"], 131072)
        self.assertEqual([l["verdict"] for l in j["links"]], ["ok", "ok"], j["links"])
        self.assertEqual(os.listdir(self.dir), [], "the test file is removed")
        # An existing file is read, never written.
        data = os.path.join(self.dir, "shard-0000.tar")
        with open(data, "wb") as f:
            f.write(os.urandom(8 << 20))
        before = os.stat(data)
        r = bench(["disk", data, "--need", "1TB/s", "--no-db"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("reading " + data, r.stdout)
        self.assertRegex(r.stdout, r"disk seq cold: .*need 1.00 TB/s: too_slow")
        after = os.stat(data)
        self.assertEqual((before.st_size, before.st_mtime_ns), (after.st_size, after.st_mtime_ns))

    def test_net_on_loopback_agrees_with_iperf3(self):
        server = NetServer("--once")
        r = bench(["net", "--connect", f"127.0.0.1:{server.port}", "--seconds", "3", "--streams", "4", "--json",
                   "--no-db"])
        out, _ = server.stop()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(server.proc.returncode, 0, "--once: the server ends after one test")
        self.assertIn("4 streams", out)
        j = json.loads(r.stdout)
        baton_rate = j["links"][0]["measured"]
        received = j["tables"][0]["rows"][-1]
        self.assertEqual(received["stream"], "received")
        sent = sum(row["bytes"] for row in j["tables"][0]["rows"][:-1])
        self.assertEqual(received["bytes"], sent, "the server counted every byte the streams sent")
        self.assertIn("lo", j["notes"][0])
        # iperf3 on the same loopback, in the same run, one stream each: the same figure within 30 %. One
        # stream, because on loopback the figure is the CPUs' copying: Debian 12's iperf3 (3.12) runs every
        # stream of a process on one thread, and four iperf3 processes against baton's eight threads measure
        # processes against threads (1.15-1.35 x on this VM), not whether baton counts bytes and time right.
        # Each twice, in turn, the better run of each compared, and both tools' senders on the first CPU
        # and receivers on the second: unpinned, where the scheduler put sender and receiver moved either
        # tool's figure by 45 % between runs on this 2-core VM (1.40 against 2.02 GB/s; it failed CI twice).
        # Two rounds, and up to two more while the best figures disagree: this VM's host takes the CPUs
        # away for seconds at a time (one CI run measured iperf3 at 0.44 and 0.53 GB/s, a sixth of its
        # usual, while baton's second run got 1.35). A real miscount does not come within 30 % however
        # often it runs; a round that the host slowed does, on the next try.
        baton_runs, iperf_runs = [], []
        for round_ in range(4):
            single = NetServer("--once", prefix=on_cpu(1))
            one = bench(["net", "--connect", f"127.0.0.1:{single.port}", "--seconds", "2", "--streams", "1",
                         "--json", "--no-db"], prefix=on_cpu(0))
            single.stop()
            self.assertEqual(one.returncode, 0, one.stderr)
            baton_runs.append(json.loads(one.stdout)["links"][0]["measured"])
            iperf_runs.append(iperf3_streams(1, 2, pinned=True))
            if round_ >= 1 and abs(max(baton_runs) / max(iperf_runs) - 1) < 0.30:
                break
        baton_rate, iperf_rate = max(baton_runs), max(iperf_runs)
        print(f"\nloopback, one stream: baton {' '.join(f'{r / 1e9:.2f}' for r in baton_runs)} GB/s, iperf3 "
              f"{' '.join(f'{r / 1e9:.2f}' for r in iperf_runs)} GB/s, best-to-best ratio {baton_rate / iperf_rate:.2f}")
        self.assertLess(abs(baton_rate / iperf_rate - 1), 0.30)

    def test_net_server_refuses_hostile_input_and_keeps_serving(self):
        server = NetServer()
        try:
            for garbage in (b"GET / HTTP/1.1\n", b"BATON-NET 1 t 0 5\n", b"BATON-NET 1 t 4 -1\n",
                            b"BATON-NET 1 t 4 nan\n", b"BATON-NET 1 t 4 inf\n", b"BATON-NET 1 t 4 5x\n", b"BATON-NET 2 t 4 5\n", b"DATA nosuchtoken\n",
                            b"BATON-NET 1 t 99999999999999999999 5\n"):
                with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                    s.sendall(garbage)
                    self.assertEqual(s.makefile().readline(), "ERR bad request\n", garbage)
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                s.sendall(b"A" * 100000)  # an endless line: closed, not buffered
                s.settimeout(5)
                try:
                    while s.recv(65536):
                        pass
                except ConnectionResetError:
                    pass
            # A client that opens a test and vanishes frees the server for the next one.
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                s.sendall(b"BATON-NET 1 abc 2 1\n")
                self.assertEqual(s.makefile().readline(), "OK\n")
            r = bench(["net", "--connect", f"127.0.0.1:{server.port}", "--seconds", "0.5", "--no-db"])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"net 127.0.0.1:\d+: [0-9.]+ [kMG]?B/s")
        finally:
            out, err = server.stop()
        self.assertEqual(server.proc.returncode, 0, err)
        self.assertIn("abandoned by the client", out)

    def test_summary_with_no_subcommand_and_the_history(self):
        start = time.time()
        r = bench(["--path", self.dir, "--db", self.db], timeout=120)
        took = time.time() - start
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLess(took, 60, "baton bench finishes within a minute")
        for link in ("memory copy", "memory triad", "disk seq cold", "disk random cold"):
            self.assertIn(link, r.stdout)
        self.assertRegex(r.stdout, r"net +- +- +- +skipped +needs a peer")
        self.assertIn("next:", r.stdout)
        self.assertRegex(r.stdout, r"recorded as run 1 ")
        second = bench(["memory", "--db", self.db, "--name", "after the BIOS update"])
        self.assertEqual(second.returncode, 0, second.stderr)
        runs = [json.loads(line) for line in subprocess.run(
            [BATON, "runs", "--db", self.db, "--json"], capture_output=True, text=True).stdout.splitlines()]
        self.assertEqual([(x["id"], x["kind"], x["name"], x["state"]) for x in runs],
                         [(1, "bench", "bench", "finished"), (2, "bench", "after the BIOS update", "finished")])
        listing = subprocess.run([BATON, "runs", "--db", self.db], capture_output=True, text=True).stdout
        self.assertRegex(listing, r"\n +2  bench  finished")
        show = subprocess.run([BATON, "runs", "show", "2", "--db", self.db], capture_output=True, text=True)
        self.assertIn("memory triad:", show.stdout)
        cmp = subprocess.run([BATON, "compare", "1", "2", "--db", self.db, "--json"], capture_output=True, text=True)
        self.assertEqual(cmp.returncode, 0, cmp.stderr)
        links = {l["link"]: l for l in json.loads(cmp.stdout)["links"]}
        self.assertIn("change", links["memory triad"])
        self.assertIsNone(links["disk seq cold"]["b"], "the second bench measured no disk")
        text = subprocess.run([BATON, "compare", "1", "2", "--db", self.db], capture_output=True, text=True).stdout
        self.assertRegex(text, r"memory triad +[0-9.]+ GB/s measured +[0-9.]+ GB/s measured +[+-]\d+ %")
        # A bench and a training run do not compare.
        run = subprocess.run([BATON, "run", "--db", self.db, "--", "true"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        mixed = subprocess.run([BATON, "compare", "1", "3", "--db", self.db], capture_output=True, text=True)
        self.assertEqual(mixed.returncode, 1)
        self.assertIn("only two runs or two benches compare", mixed.stderr)

    def test_h2d_against_the_fake_cuda_driver(self):
        env = fake_gpu_env("two-pcie", BATON_FAKE_CUDA_GBPS=1)
        r = bench(["h2d", "--max-size", "16M", "--json", "--no-db"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(len(j["tables"]), 2, "one table per GPU")
        rows = j["tables"][0]["rows"]
        self.assertEqual([row["size_bytes"] for row in rows], [4096 * 4 ** i for i in range(7)])
        big = rows[-1]
        for k in ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable", "d2d"):
            # The fake moves 1 GB/s (d2d counts its read and its write, as CUDA's bandwidthTest does).
            self.assertLess(abs(big[k + "_bytes_per_second"] / 1e9 - 1), 0.25, (k, big))
        links = {l["link"]: l for l in j["links"]}
        gpu0, gpu1 = links["h2d gpu0 pinned"], links["h2d gpu1 pinned"]
        # The protocol's ceiling, not the raw rate: PCIe 4.0 x16 = 31.5 GB/s after 128b/130b, x 256/(256+24)
        # for 256-byte payloads (the config space is not readable here: assumed) = 28.8 GB/s; the second
        # GPU's link runs at 3.0 x8: 7.88 GB/s x 256/280 = 7.20 GB/s (read under load).
        self.assertAlmostEqual(gpu0["peak"] / 1e9, 31.508 * 256 / 280, places=2)
        self.assertAlmostEqual(gpu1["peak"] / 1e9, 7.877 * 256 / 280, places=2)
        self.assertIn("16 GT/s x 16 lanes / 8 x 128/130 x 256/(256+24) = 28.8 GB/s", gpu0["peak_source"])
        self.assertIn("max payload 256 B (assumed", gpu0["peak_source"])
        self.assertAlmostEqual(gpu1["share"], gpu1["measured"] / gpu1["peak"],
                               places=3)
        self.assertEqual(gpu0["verdict"], "degraded")  # 1 GB/s of 31.5
        self.assertIn("pcie_degraded: the link runs at PCIe 3.0 x8, below its 4.0 x16", gpu1["detail"])
        self.assertNotIn("pcie_degraded", gpu0["detail"])
        self.assertIn("gpu1: pcie_degraded", " ".join(j["notes"]))
        self.assertEqual(links["d2d gpu0"]["verdict"], "measured")
        # The payload size from the device's config space where it can be read (here a sysfs fixture):
        # PCI status with a capability list, the PCI Express capability at 0x40, Device Control's
        # Max_Payload_Size 512 (code 2).
        config = bytearray(256)
        config[0x06] = 0x10
        config[0x34] = 0x40
        config[0x40], config[0x41] = 0x10, 0x00
        config[0x48] = 2 << 5
        sys_root = os.path.join(self.dir, "sys")
        os.makedirs(os.path.join(sys_root, "bus/pci/devices/0000:17:00.0"))
        with open(os.path.join(sys_root, "bus/pci/devices/0000:17:00.0/config"), "wb") as f:
            f.write(bytes(config))
        with open(os.path.join(self.dir, "sys.toml"), "w") as f:
            f.write('[sample]\nsys_root = "%s"\n' % sys_root)
        r = bench(["h2d", "--max-size", "64K", "--json", "--no-db"],
                  env=dict(env, BATON_CONFIG=os.path.join(self.dir, "sys.toml")))
        self.assertEqual(r.returncode, 0, r.stderr)
        links = {l["link"]: l for l in json.loads(r.stdout)["links"]}
        self.assertAlmostEqual(links["h2d gpu0 pinned"]["peak"] / 1e9, 31.508 * 512 / 536, places=2)
        self.assertIn("max payload 512 B (the device's config space)", links["h2d gpu0 pinned"]["peak_source"])
        self.assertIn("max payload 256 B (assumed", links["h2d gpu1 pinned"]["peak_source"])
        one = bench(["h2d", "--gpu", "1", "--max-size", "64K", "--no-db"], env=env)
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertIn("gpu1 Fake GPU 1 (0000:B1:00.0)", one.stdout)
        self.assertNotIn("gpu0", one.stdout)

    def test_h2d_without_a_driver_with_a_failing_call_and_with_a_hung_one(self):
        env = fake_gpu_env("two-pcie")
        cases = [({"BATON_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"}, [], "bench h2d: no CUDA driver: "),
                 ({"BATON_FAKE_CUDA_FAIL": "cuMemAlloc_v2:2"}, [],
                  "cuMemAlloc_v2 of 64 KiB on CUDA device 0 (0000:17:00.0): CUDA_ERROR_OUT_OF_MEMORY: out of memory"),
                 ({"BATON_FAKE_CUDA_FAIL": "cuInit:100"}, [],
                  "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"),
                 ({"BATON_FAKE_CUDA_HANG": "cuMemcpyHtoDAsync_v2"}, ["--deadline", "1"],
                  "cuMemcpyHtoDAsync_v2 did not return within 1 s"),
                 ({}, ["--gpu", "7"], "no GPU 7")]
        for extra, args, message in cases:
            start = time.time()
            r = bench(["h2d", "--max-size", "64K", "--no-db"] + args, env=dict(env, **extra), timeout=60)
            self.assertEqual(r.returncode, 1, (extra, r.stdout, r.stderr))
            self.assertIn(message, r.stderr, extra)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertLess(time.time() - start, 15, "a hung driver call ends the bench at its deadline")
        # The summary goes on without a driver and says why on the h2d row.
        r = bench(["--path", self.dir, "--no-db"], env={"BATON_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"h2d +- +- +- +skipped +no CUDA driver")

    def test_allreduce_arithmetic_and_topology_against_fake_nccl(self):
        env = fake_gpu_env("four-idle", BATON_FAKE_NCCL_ALGBW_GBPS=2)
        r = bench(["allreduce", "--max-size", "32M", "--iters", "3", "--warmup", "1", "--json", "--no-db"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        rows = j["tables"][0]["rows"]
        self.assertEqual(rows[0]["size_bytes"], 8)
        self.assertEqual(rows[-1]["size_bytes"], 8 * 4 ** 11)
        for row in rows:  # nccl-tests: algbw = size / time; all_reduce busbw = algbw x 2(n-1)/n = 1.5 x algbw
            self.assertEqual(row["count"], row["size_bytes"] // 4)
            self.assertAlmostEqual(row["algbw_gbps"], row["size_bytes"] / (row["time_us"] * 1e3), delta=0.011)
            self.assertAlmostEqual(row["busbw_gbps"], 1.5 * row["algbw_gbps"], delta=0.011)
            self.assertAlmostEqual(row["in_place_busbw_gbps"], 1.5 * row["in_place_algbw_gbps"], delta=0.011)
        self.assertLess(abs(rows[-1]["algbw_gbps"] / 2 - 1), 0.3, rows[-1])  # the fake's 2 GB/s
        notes = "\n".join(j["notes"])
        self.assertRegex(notes, r"GPU0 +X +NV6 +NV6 +NV6 +18")
        self.assertIn("NCCL 2.19.3", notes)
        self.assertIn("# Avg bus bandwidth", j["footnotes"][0])
        link = j["links"][0]
        self.assertEqual((link["link"], link["verdict"]), ("nccl all_reduce 4 GPUs", "measured"))
        self.assertAlmostEqual(link["measured"] / 1e9,
                               max(max(x["busbw_gbps"], x["in_place_busbw_gbps"]) for x in rows), places=2)
        # Two PCIe GPUs: all_gather's busbw = algbw x (n-1)/n, judged against the slowest link.
        env = fake_gpu_env("two-pcie", BATON_FAKE_NCCL_ALGBW_GBPS=2)
        r = bench(["allreduce", "--op", "all_gather", "--max-size", "8M", "--iters", "2", "--warmup", "0", "--json",
                   "--no-db"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        for row in j["tables"][0]["rows"]:
            self.assertEqual(row["size_bytes"] % 8, 0, "a whole element per GPU")
            self.assertAlmostEqual(row["busbw_gbps"], 0.5 * row["algbw_gbps"], delta=0.011)
        self.assertRegex("\n".join(j["notes"]), r"GPU0 +X +SYS +0")
        link = j["links"][0]
        self.assertAlmostEqual(link["peak"] / 1e9, 31.508 * 256 / 280, places=2)  # the protocol's ceiling
        self.assertIn("the slowest of the ring", link["peak_source"])
        self.assertEqual(link["verdict"], "degraded")
        # Faster than the PCIe links can carry: the GPUs talk over a fabric NVML did not report.
        fast = bench(["allreduce", "--max-size", "64M", "--iters", "2", "--warmup", "0", "--json", "--no-db"],
                     env=dict(env, BATON_FAKE_NCCL_ALGBW_GBPS="200"))
        self.assertEqual(fast.returncode, 0, fast.stderr)
        link = json.loads(fast.stdout)["links"][0]
        self.assertGreater(link["measured"], 1.1 * 31.508e9 * 256 / 280)
        self.assertEqual(link["verdict"], "measured")
        self.assertNotIn("peak", link)
        self.assertIn("NVLink or NVSwitch, which NVML did not report", link["peak_source"])
        text = bench(["allreduce", "--max-size", "1M", "--iters", "1", "--no-db"], env=env)
        self.assertRegex(text.stdout, r"size +count +type +redop +root +time +algbw +busbw +time +algbw +busbw")

    def test_allreduce_on_an_nvswitch_board(self):
        env = fake_gpu_env("eight-busy", BATON_FAKE_NCCL_ALGBW_GBPS=100)
        r = bench(["allreduce", "--max-size", "1M", "--iters", "2", "--warmup", "0", "--no-db"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Every pair through the switches: NV18, as nvidia-smi topo -m prints an HGX board.
        for i in range(8):
            self.assertRegex(r.stdout, rf"GPU{i}" + "".join(" +X" if k == i else " +NV18" for k in range(8)) + " +18")
        self.assertRegex(r.stdout, r"nccl all_reduce 8 GPUs: .*NVML gives no dependable NVLink rate.*: measured")

    def test_allreduce_failures_are_one_line(self):
        env = fake_gpu_env("four-idle")
        cases = [({"BATON_NCCL_LIBRARY": "/nonexistent/libnccl.so.2"}, [], "bench allreduce: no NCCL: "),
                 ({"BATON_FAKE_CUDA_DEVICES": "1"}, [], "1 GPU: a collective needs 2 or more"),
                 ({}, ["--gpus", "8"], "--gpus 8: CUDA sees 4 GPU(s)"),
                 ({"BATON_FAKE_NCCL_FAIL": "ncclCommInitAll:2"}, [],
                  "ncclCommInitAll: unhandled system error (run with NCCL_DEBUG=INFO for details) (NCCL error 2)"),
                 ({"BATON_FAKE_NCCL_HANG": "ncclAllReduce"}, ["--deadline", "1"],
                  "ncclAllReduce did not return within 1 s")]
        for extra, args, message in cases:
            start = time.time()
            r = bench(["allreduce", "--max-size", "1K", "--iters", "1", "--no-db"] + args, env=dict(env, **extra))
            self.assertEqual(r.returncode, 1, (extra, r.stdout, r.stderr))
            self.assertIn(message, r.stderr, extra)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertLess(time.time() - start, 15)

    def test_scaling_of_a_cpu_training_under_gloo(self):
        env = {"PYTHONPATH": PYTHONPATH}
        work = os.path.join(self.dir, "scaling")
        r = bench(["scaling", "--gpus", "1,2", "--seconds", "8", "--warmup", "3", "--no-gpu-check", "--python",
                   "/usr/bin/python3", "--work-dir", work, "--json", "--db", self.db, "--",
                   os.path.join(HERE, "fixed_step_train.py")], env=env, timeout=170)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        rows = j["tables"][0]["rows"]
        self.assertEqual([row["ranks"] for row in rows], [1, 2])
        one, two = rows[0]["throughput"], rows[1]["throughput"]
        # A fixed 20 ms step of 32 samples: a rank trains at most 1600 samples/s.
        self.assertGreater(one, 400)
        self.assertLess(one, 1650)
        # The arithmetic: efficiency = throughput_N / (N x throughput_1), linear = N x throughput_1.
        self.assertAlmostEqual(rows[1]["ideal"], 2 * one, places=0)
        self.assertAlmostEqual(rows[1]["efficiency"], two / (2 * one), places=2)
        self.assertGreater(rows[1]["efficiency"], 0.5, rows)  # two ranks on two cores: nearly linear
        links = {l["link"]: l for l in j["links"]}
        self.assertEqual(links["scaling 2 ranks"]["unit"], "samples/s")
        self.assertAlmostEqual(links["scaling 2 ranks"]["share"], rows[1]["efficiency"], places=2)
        # The throughputs are those of the steps the hook reported, after the warm-up.
        steps_db = os.path.join(work, "scaling.db")
        for n, row in ((1, rows[0]), (2, rows[1])):
            steps = subprocess.run([BATON, "runs", "export", str(n), "--steps", "--db", steps_db],
                                   capture_output=True, text=True, timeout=60)
            self.assertEqual(steps.returncode, 0, steps.stderr)
            events = [json.loads(line) for line in steps.stdout.splitlines()]
            self.assertEqual(sorted({e["rank"] for e in events}), list(range(n)))
        # The same with the throughput read from the ranks' output.
        r = bench(["scaling", "--gpus", "1,2", "--seconds", "6", "--warmup", "2", "--no-gpus", "--python",
                   "/usr/bin/python3", "--metric-regex", r"samples/s: ([0-9.]+)", "--work-dir", work + "-regex",
                   "--no-db", "--", os.path.join(HERE, "fixed_step_train.py")], env=env, timeout=170)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\n +2 +3200\.0 +3200\.0 +1\.00")
        runs = subprocess.run([BATON, "runs", "--db", self.db, "--json"], capture_output=True, text=True).stdout
        self.assertIn('"kind":"bench"', runs.replace(" ", ""))

    def test_scaling_refuses_what_it_cannot_run(self):
        script = os.path.join(HERE, "fixed_step_train.py")
        cases = [(["scaling", "--gpus", "2,1", "--", script], 2, "sizes go up"),
                 (["scaling", "--gpus", "1,x", "--", script], 2, "expected sizes such as 1,2,4,8"),
                 (["scaling", "--gpus", "1,2"], 2, "no training given"),
                 (["scaling", "--gpus", "1", "--metric-regex", "([0-9", "--", script], 2, "not a regular expression"),
                 (["scaling", "--gpus", "1", "--seconds", "5", "--warmup", "9", "--", script], 2, "--warmup"),
                 (["scaling", "--gpus", "1", "--seconds", "2", "--no-gpus", "--work-dir", self.dir + "/w",
                   "--no-python", "--", "sh", "-c", "exit 3"], 1, "the training failed with 1 ranks (exit 3)"),
                 (["scaling", "--gpus", "1", "--seconds", "3", "--warmup", "1", "--no-gpus", "--work-dir",
                   self.dir + "/w2", "--no-python", "--", "sleep", "30"], 1, "the training reported no steps")]
        for args, code, message in cases:
            args = args[:1] + ["--no-db"] + args[1:]  # before "--": what follows is the training's
            r = bench(args, timeout=120)
            self.assertEqual(r.returncode, code, (args, r.stdout, r.stderr))
            self.assertIn(message, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (args, r.stderr))

    def test_bad_input_gets_one_line_and_a_nonzero_exit(self):
        dead = free_port()
        cases = [
            (["disk", "/nonexistent/dir"], 1, "No such file or directory"),
            (["disk", self.dir, "--size", "1k"], 2, "expected 1M or more"),
            (["disk", self.dir, "--size", "lots"], 2, "--size lots"),
            (["disk", self.dir, "--need", "fast"], 2, "expected a rate such as 2GB/s"),
            (["disk", self.dir, "--need", "1GB/s", "--need-from-run", "1"], 2, "excludes"),
            (["disk", self.dir, "--need-from-run", "x", "--db", self.db], 2, "no run 'x'"),
            (["disk", "/dev/null"], 1, "not a directory or a regular file"),
            (["net"], 2, "give --listen"),
            (["net", "--connect", f"127.0.0.1:{dead}", "--seconds", "1"], 1, "cannot connect to 127.0.0.1"),
            (["net", "--connect", "host:99999"], 2, "the port must be 1 to 65535"),
            (["net", "--connect", "127.0.0.1", "--streams", "0"], 2, "--streams"),
            (["net", "--listen", "1.2.3:x"], 2, "--listen"),
            (["net", "--listen", "127.0.0.1:0", "--connect", "127.0.0.1"], 2, "excludes"),
            (["memory", "--threads", "0"], 2, "--threads"),
            (["nosuch"], 2, "nosuch"),
        ]
        for args, code, message in cases:
            r = bench(args + ["--no-db"] if "--db" not in args else args, timeout=60)
            self.assertEqual(r.returncode, code, (args, r.stdout, r.stderr))
            self.assertIn(message, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (args, r.stderr))
        # A run with no samples has nothing to need.
        subprocess.run([BATON, "run", "--db", self.db, "--", "true"], capture_output=True, check=True)
        r = bench(["disk", self.dir, "--need-from-run", "7", "--db", self.db])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no run 7 in the history", r.stderr)
        r = bench(["disk", self.dir, "--need-from-run", "1", "--db", self.db, "--no-db"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, r"run 1 (recorded no disk reads|read nothing from disk)")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2)
