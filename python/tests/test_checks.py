"""baton.torch.check: each check fires on its mistake and stays silent on the corrected code
(Debian's python3-torch on the CPU; the DDP ones with two ranks on gloo under Debian's torchrun)."""
import os
import re
import socket
import subprocess
import sys
import unittest

import torch
from torch.utils.data import DataLoader, TensorDataset

import baton.torch as bt
from baton import checks

HERE = os.path.dirname(os.path.abspath(__file__))


def rules(found):
    return sorted(f["rule"] for f in found)


def data():
    return TensorDataset(torch.randn(32, 4), torch.zeros(32, dtype=torch.long))


class ChecksTest(unittest.TestCase):
    def test_loader_settings(self):
        self.assertEqual(rules(bt.check(loader=DataLoader(data()), quiet=True)), ["loader_num_workers_zero"])
        self.assertEqual(rules(bt.check(loader=DataLoader(data(), num_workers=1), quiet=True)),
                         ["loader_persistent_workers_off"])
        too_many = len(os.sched_getaffinity(0)) + 3
        self.assertIn("loader_too_many_workers",
                      rules(bt.check(loader=DataLoader(data(), num_workers=too_many, persistent_workers=True),
                                     quiet=True)))
        good = DataLoader(data(), num_workers=1, persistent_workers=True)
        self.assertEqual(bt.check(loader=good, quiet=True), [])
        f = bt.check(loader=DataLoader(data()), quiet=True)[0]
        for key in ("rule", "severity", "subject", "summary", "evidence", "recommendation", "snippet", "doc"):
            self.assertIn(key, f)
        self.assertEqual(f["evidence"], [{"metric": "loader.num_workers", "average": 0, "minimum": 0, "maximum": 0,
                                          "threshold": "> 0", "samples": 1}])
        self.assertEqual(f["doc"], "docs/findings.md#loader_num_workers_zero")

    def test_pin_memory_only_matters_on_cuda(self):
        loader = DataLoader(data(), num_workers=1, persistent_workers=True)
        self.assertEqual(checks.loader_checks(loader, torch.nn.Linear(4, 2)), [])  # a CPU model
        if torch.cuda.is_available():  # the GPU machine's run of these tests
            found = checks.loader_checks(loader, torch.nn.Linear(4, 2).cuda())
            self.assertEqual(rules(found), ["loader_pin_memory_off"])

    def test_data_parallel_over_several_gpus(self):
        class FakeDataParallel(torch.nn.DataParallel):  # DataParallel needs GPUs to be built
            def __init__(self, module, ids):
                torch.nn.Module.__init__(self)
                self.module = module
                self.device_ids = ids
        self.assertEqual(rules(checks.model_checks(FakeDataParallel(torch.nn.Linear(2, 2), [0, 1]))),
                         ["data_parallel_multi_gpu"])
        self.assertEqual(checks.model_checks(FakeDataParallel(torch.nn.Linear(2, 2), [0])), [])
        self.assertEqual(checks.model_checks(torch.nn.Linear(2, 2)), [])

    def test_synced_batchnorm_under_ddp_is_silent(self):
        class FakeDDP(torch.nn.parallel.DistributedDataParallel):  # DDP needs a process group to be built
            def __init__(self, module):
                torch.nn.Module.__init__(self)
                self.module = module
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
        self.assertEqual(rules(checks.model_checks(FakeDDP(model))), ["ddp_batchnorm_not_synced"])
        synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        self.assertEqual(checks.model_checks(FakeDDP(synced)), [])

    def test_fp16_needs_a_scaler(self):
        class Scaler:
            def __init__(self, on):
                self.on = on

            def is_enabled(self):
                return self.on
        self.assertEqual(rules(bt.check(amp_dtype=torch.float16, quiet=True)), ["fp16_without_grad_scaler"])
        self.assertEqual(rules(bt.check(amp_dtype=torch.float16, scaler=Scaler(False), quiet=True)),
                         ["fp16_without_grad_scaler"])
        self.assertEqual(bt.check(amp_dtype=torch.float16, scaler=Scaler(True), quiet=True), [])
        self.assertEqual(bt.check(amp_dtype=torch.bfloat16, quiet=True), [])

    def test_optimizer_holds_every_trainable_parameter(self):
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
        partial = torch.optim.SGD(model[0].parameters(), lr=0.1)
        self.assertEqual(rules(bt.check(model=model, optimizer=partial, quiet=True)), ["optimizer_misses_parameters"])
        self.assertEqual(bt.check(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), quiet=True), [])
        model[1].requires_grad_(False)  # frozen: rightly left out
        self.assertEqual(bt.check(model=model, optimizer=partial, quiet=True), [])

    def test_printed_unless_quiet(self):
        code = ("import torch, baton.torch as bt\nfrom torch.utils.data import DataLoader\n"
                "bt.check(loader=DataLoader(list(range(4))))\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE)))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("baton: warning loader_num_workers_zero [loader]:", p.stderr)
        self.assertIn("      fix: Use num_workers=", p.stderr)

    def ddp(self, mode):
        with socket.socket() as s:  # a free loopback port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # --redirects/--tee 1 (stdout to a log and the console, lines prefixed "[rank]:"): their
        # default, 0, fails in Debian's torchrun (torch 1.13 on Python 3.11).
        p = subprocess.run(["/usr/bin/torchrun", "--nproc_per_node=2", "--redirects=1", "--tee=1",
                            "--master_addr=127.0.0.1", f"--master_port={port}", os.path.join(HERE, "ddp_checks.py"),
                            mode],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE), OMP_NUM_THREADS="1"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.output = p
        return sorted(m.group(0).strip() for m in re.finditer(r"rank \d: [a-z_,]*", p.stdout))

    def test_ddp_mistakes_on_two_ranks(self):
        self.assertEqual(self.ddp("bad"), [
            "rank 0: ddp_batchnorm_not_synced,ddp_without_distributed_sampler,seeds_differ_across_ranks",
            "rank 1: ddp_batchnorm_not_synced,ddp_without_distributed_sampler,seeds_differ_across_ranks"])
        # One finding per job, naming the ranks, printed once (by rank 0), not once per rank.
        self.assertIn("seeds: job [0, 1]", self.output.stdout)
        self.assertEqual(self.output.stderr.count("baton: warning seeds_differ_across_ranks [job]:"), 1,
                         self.output.stderr)
        self.assertEqual(self.output.stderr.count("ddp_without_distributed_sampler [loader]:"), 1, self.output.stderr)
        self.assertIn("rank(s) 1 differ from rank 0", self.output.stderr)
        self.assertEqual(self.ddp("good"), ["rank 0:", "rank 1:"])

    def test_merged_findings_name_the_ranks_they_concern(self):
        one = {"rule": "loader_num_workers_zero", "severity": "warning", "subject": "loader", "summary": "s"}
        merged = bt._merge_ranks([[one], [], [dict(one)], [dict(one)]])
        self.assertEqual(len(merged), 1)
        self.assertEqual(merged[0]["ranks"], [0, 2, 3])
        self.assertEqual(merged[0]["summary"], "s (ranks 0, 2, 3 of 4)")
        everywhere = bt._merge_ranks([[dict(one)], [dict(one)]])
        self.assertEqual((everywhere[0]["ranks"], everywhere[0]["summary"]), ([0, 1], "s"))

    def test_workers_never_exceed_the_cores(self):
        # 2 CPUs and 2 ranks: 1 worker each (it used to say 2 each: 4 workers and 2 trainers on 2 cores).
        self.assertEqual(checks.suggested_workers(2, 2), 1)
        self.assertEqual(checks.suggested_workers(16, 2), 7)
        self.assertEqual(checks.suggested_workers(8, 1), 7)
        self.assertEqual(checks.suggested_workers(1, 1), 1)
        for cpus in range(1, 65):
            for world in range(1, 9):
                w = checks.suggested_workers(cpus, world)
                self.assertGreaterEqual(w, 1)
                if cpus >= 2 * world:
                    self.assertLessEqual((w + 1) * world, cpus)  # workers and trainers fit the cores
        # A CPU model is not told to pin memory.
        f = checks.loader_checks(DataLoader(data()), torch.nn.Linear(4, 2))[0]
        self.assertNotIn("pin_memory", f["snippet"])
        self.assertNotIn("pin_memory", f["recommendation"])


if __name__ == "__main__":
    unittest.main()
