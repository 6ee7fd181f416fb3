"""Training-setup checks: the mistakes that cost throughput or correctness and that only the
training script can see (the loader's settings, the model's wrapping, mixed precision, ranks).
Each finding has the C++ engine's fields (rule, severity, subject, summary, recommendation,
snippet, doc); `baton.torch.check()` prints them and sends them to `baton run`.
"""
import os

import torch

DOC = "docs/findings.md#"


def _finding(rule, severity, subject, summary, recommendation, snippet=None, evidence=()):
    """`evidence`: (metric, value, threshold) of what was read; one reading, so value is average,
    minimum and maximum at once (the C++ engine's Evidence fields)."""
    f = {"rule": rule, "severity": severity, "subject": subject, "summary": summary,
         "evidence": [{"metric": m, "average": v, "minimum": v, "maximum": v, "threshold": t, "samples": 1}
                      for m, v, t in evidence],
         "recommendation": recommendation, "doc": DOC + rule}
    if snippet:
        f["snippet"] = snippet
    return f


def cpus_available():
    """The CPUs this process may run on (its affinity: taskset, cgroup cpusets), else all of them."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _on_cuda(model):
    if model is None:
        return torch.cuda.is_available()
    for p in model.parameters():
        return p.is_cuda
    return False


def _ddp(model):
    return isinstance(model, torch.nn.parallel.DistributedDataParallel)


def _world():
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def suggested_workers(cpus, world):
    """DataLoader workers per training process: the cores each process gets, less the one that
    stays with training; at least 1 (a single worker still overlaps loading with the GPU's work),
    never more than the box has: on 2 CPUs with 2 ranks, 1 each (not 2 each: 4 workers and 2
    trainers on 2 cores)."""
    return max(1, cpus // max(1, world) - 1)


def loader_checks(loader, model):
    out = []
    if loader is None or not isinstance(loader, torch.utils.data.DataLoader):
        return out
    cpus = cpus_available()
    world, _ = _world()
    workers = loader.num_workers
    suggested = suggested_workers(cpus, world)
    on_cuda = _on_cuda(model)
    pin = "pin_memory=True, " if on_cuda else ""
    if workers == 0:
        spare = cpus // max(1, world) >= 2
        out.append(_finding(
            "loader_num_workers_zero", "warning", "loader",
            "the DataLoader loads every batch in the training process (num_workers=0): nothing prepares the "
            "next batch while the model trains",
            f"Use num_workers={suggested} ({cpus} CPUs for {world} process(es), "
            + ("one core stays with training)" if spare else "no core to spare: more workers would only fight "
               "the training processes for the CPUs)")
            + ", with persistent_workers=True" + (" and pin_memory=True (the batches go to CUDA)." if on_cuda else "."),
            f"DataLoader(dataset, batch_size=..., num_workers={suggested}, {pin}persistent_workers=True)",
            [("loader.num_workers", 0, "> 0")]))
    elif workers > cpus:
        out.append(_finding(
            "loader_too_many_workers", "warning", "loader",
            f"num_workers={workers} but this process may use {cpus} CPU(s): the workers fight for cores",
            f"Use num_workers={suggested} at most; more workers than cores only add switching and memory "
            "(each worker holds a copy of the dataset object).",
            f"DataLoader(dataset, batch_size=..., num_workers={suggested})",
            [("loader.num_workers", workers, f"<= {cpus} (CPUs available)")]))
    if workers > 0 and not loader.persistent_workers:
        out.append(_finding(
            "loader_persistent_workers_off", "info", "loader",
            "persistent_workers=False: the DataLoader starts its worker processes again every epoch",
            "Set persistent_workers=True so workers (and their warmed-up state) survive between epochs.",
            "DataLoader(dataset, ..., persistent_workers=True)",
            [("loader.persistent_workers", 0, "1 when num_workers > 0")]))
    if _on_cuda(model) and not loader.pin_memory:
        out.append(_finding(
            "loader_pin_memory_off", "warning", "loader",
            "pin_memory=False while training on CUDA: every batch is copied to a pinned buffer before it "
            "goes to the GPU, and .to(device, non_blocking=True) cannot overlap the copy",
            "Set pin_memory=True and move batches with .to(device, non_blocking=True).",
            "DataLoader(dataset, ..., pin_memory=True)\nx = x.to(device, non_blocking=True)",
            [("loader.pin_memory", 0, "1 on CUDA")]))
    if _ddp(model) and not isinstance(loader.sampler, torch.utils.data.distributed.DistributedSampler):
        out.append(_finding(
            "ddp_without_distributed_sampler", "critical", "loader",
            "the model is wrapped in DistributedDataParallel but the DataLoader has no DistributedSampler: "
            "every rank trains on the same batches",
            "Give the DataLoader a DistributedSampler (and call sampler.set_epoch(epoch) each epoch); "
            "with it, do not pass shuffle=True to the DataLoader.",
            "sampler = torch.utils.data.distributed.DistributedSampler(dataset)\n"
            "loader = DataLoader(dataset, batch_size=..., sampler=sampler)\n"
            "for epoch in range(epochs):\n    sampler.set_epoch(epoch)",
            [("loader.distributed_sampler", 0, "1 under DistributedDataParallel")]))
    return out


def model_checks(model):
    out = []
    if model is None:
        return out
    if isinstance(model, torch.nn.DataParallel) and len(model.device_ids or []) > 1:
        out.append(_finding(
            "data_parallel_multi_gpu", "warning", "model",
            f"nn.DataParallel over {len(model.device_ids)} GPUs: one process scatters inputs and gathers "
            "outputs on GPU0 every step, and the GIL serialises the replicas",
            "Use DistributedDataParallel, one process per GPU, started with torchrun "
            "(`baton launch` once it exists); it is faster even on one machine.",
            "torch.distributed.init_process_group('nccl')\n"
            "model = torch.nn.parallel.DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])",
            [("model.data_parallel_devices", len(model.device_ids), "<= 1")]))
    if _ddp(model):
        plain = [name for name, m in model.named_modules()
                 if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                 and not isinstance(m, torch.nn.SyncBatchNorm)]
        if plain:
            out.append(_finding(
                "ddp_batchnorm_not_synced", "warning", "model",
                f"{len(plain)} BatchNorm layer(s) under DistributedDataParallel are not synchronised "
                f"(e.g. {plain[0]}): each rank normalises with the statistics of its own small batch",
                "Convert them before wrapping, so the statistics span every rank's batch (needed when the "
                "per-GPU batch is small).",
                "model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)\n"
                "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])",
                [("model.unsynced_batchnorm_layers", len(plain), "0 under DistributedDataParallel")]))
    return out


def precision_checks(amp_dtype, scaler):
    if amp_dtype != torch.float16:
        return []
    if scaler is not None and scaler.is_enabled():
        return []
    return [_finding(
        "fp16_without_grad_scaler", "warning", "optimizer",
        "autocast to float16 without an enabled GradScaler: small gradients underflow to zero in fp16",
        "Scale the loss with torch.cuda.amp.GradScaler, or autocast to bfloat16 (no scaler needed) on GPUs "
        "that have it (Ampere and later).",
        "scaler = torch.cuda.amp.GradScaler()\nwith torch.autocast('cuda', dtype=torch.float16):\n"
        "    loss = model(x)\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()",
        [("amp.grad_scaler_enabled", 0, "1 with float16 autocast")])]


def optimizer_checks(model, optimizer):
    if model is None or optimizer is None:
        return []
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    missing = [name for name, p in model.named_parameters() if p.requires_grad and id(p) not in held]
    if not missing:
        return []
    return [_finding(
        "optimizer_misses_parameters", "warning", "optimizer",
        f"{len(missing)} trainable parameter(s) of the model are not in the optimizer (e.g. {missing[0]}): "
        "they get gradients but never change",
        "Build the optimizer from the model being trained, after any layer is added or replaced "
        "(and freeze layers with requires_grad_(False) rather than leaving them out).",
        "optimizer = torch.optim.AdamW(model.parameters(), lr=...)",
        [("optimizer.missing_parameters", len(missing), "0")])]


def rank_checks():
    world, rank = _world()
    if world < 2:
        return []
    seeds = [None] * world
    torch.distributed.all_gather_object(seeds, torch.initial_seed())
    if len(set(seeds)) == 1:
        return []
    differ = [str(r) for r, s in enumerate(seeds) if s != seeds[0]]
    # One finding for the job (subject "job"), the same on every rank: baton.torch.check() merges
    # the ranks' findings and rank 0 reports it once.
    return [_finding(
        "seeds_differ_across_ranks", "warning", "job",
        f"the ranks started from {len(set(seeds))} different seeds ({', '.join(str(s) for s in seeds[:4])}"
        f"{', ...' if world > 4 else ''}; rank(s) {', '.join(differ[:8])}{', ...' if len(differ) > 8 else ''} "
        "differ from rank 0): the run cannot be replayed, and anything random before "
        "DistributedDataParallel broadcasts rank 0's parameters differs between ranks",
        "Seed every rank the same (torch.manual_seed(seed), random.seed, numpy) before building the model; "
        "DistributedSampler already gives each rank its own share of the data.",
        "torch.manual_seed(seed)  # the same seed on every rank",
        [("ranks.distinct_seeds", len(set(seeds)), "1")])]
