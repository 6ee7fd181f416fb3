"""Training loops of every shape, with no baton import: what `baton run` must measure with no code
change (python/baton/_auto.py), and what `baton tune` tunes. `loops.py MODE [WORKERS] [EPOCHS]`; every
batch holds 4 samples, and each mode prints the steps it took, so the test compares what baton counted
with the truth.

    plain       a for-loop over a DataLoader whose dataset sleeps, with an LR scheduler: 16 steps an epoch,
                EPOCHS epochs (2)
    compute     a loop whose step computes 8 ms and whose data is ready (no worker can help)
    slowing     a step that computes 5 ms; the data is ready for 3 epochs, then takes 3 ms a sample
                (EPOCHS epochs in all: `baton run --tune-live` must raise the workers)
    fragile     plain, but the dataset fails in a DataLoader worker (a trial with workers crashes)
    stuck       plain, but the dataset never returns in a DataLoader worker (a trial with workers hangs)
    stubborn    stuck, and the script ignores SIGTERM
    accumulate  gradient accumulation over 4 batches: 4 steps of 16 samples
    gan         two optimizers stepping once per batch each: 16 steps
    wgan        a generator stepping first, then every 5th batch, and a critic every batch: 16 steps
                (the critic's: it steps most often)
    eval        a validation pass before training, after each epoch, and one that breaks off: 32 steps
    iterable    an IterableDataset: 12 steps
    scaler      GradScaler.step(optimizer) (disabled on the CPU): 16 steps
    explicit    baton.torch.watch(loader) in the script: 16 steps, from the script's own hook
    inference   no optimizer at all: no step
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset

MODE = sys.argv[1]
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 0
EPOCHS = int(sys.argv[3]) if len(sys.argv) > 3 else 2


class Slow(Dataset):
    def __init__(self, n, seconds):
        self.n, self.seconds = n, seconds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if MODE == "slowing":
            time.sleep(0.003 if SLOW.value else 0)
            return torch.randn(8), torch.randn(1)
        if MODE in ("fragile", "stuck", "stubborn") and torch.utils.data.get_worker_info() is not None:
            if MODE == "fragile":
                raise RuntimeError("this dataset cannot be read from a worker")
            time.sleep(3600)
        time.sleep(self.seconds)
        return torch.randn(8), torch.randn(1)


class Stream(IterableDataset):
    def __iter__(self):
        for _ in range(48):
            time.sleep(0.002)
            yield torch.randn(8), torch.randn(1)


def train_step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


SLOW = torch.multiprocessing.Value("b", 0)  # "slowing": shared with the DataLoader's workers
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Slow(64, 0.003), batch_size=4, num_workers=WORKERS)
steps = 0

if MODE == "stubborn":
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if MODE in ("plain", "fragile", "stuck", "stubborn"):
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
    for epoch in range(EPOCHS):
        for x, y in loader:
            train_step(model, opt, x, y)
            sched.step()
            steps += 1
elif MODE == "slowing":
    for epoch in range(EPOCHS):
        SLOW.value = 1 if epoch >= 3 else 0
        for x, y in loader:
            deadline = time.perf_counter() + 0.005
            while time.perf_counter() < deadline:
                pass
            train_step(model, opt, x, y)
            steps += 1
elif MODE == "compute":
    ready = DataLoader(Slow(64, 0.0), batch_size=4, num_workers=WORKERS)
    for epoch in range(EPOCHS):
        for x, y in ready:
            deadline = time.perf_counter() + 0.008
            while time.perf_counter() < deadline:
                pass
            train_step(model, opt, x, y)
            steps += 1
elif MODE == "accumulate":
    for i, (x, y) in enumerate(loader):
        (torch.nn.functional.mse_loss(model(x), y) / 4).backward()
        if (i + 1) % 4 == 0:
            opt.step()
            opt.zero_grad()
            steps += 1
elif MODE in ("gan", "wgan"):
    gen, critic = torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3)
    for i, (x, _) in enumerate(loader):
        if MODE == "wgan" and i % 5 == 0:  # the generator steps first: it paces until the critic outsteps it
            opt_g.zero_grad()
            (-critic(gen(torch.randn(4, 8))).mean()).backward()
            opt_g.step()
        opt_c.zero_grad()
        (critic(gen(torch.randn(4, 8)).detach()).mean() - critic(x).mean()).backward()
        opt_c.step()
        if MODE == "wgan":
            continue
        opt_g.zero_grad()
        (-critic(gen(torch.randn(4, 8))).mean()).backward()
        opt_g.step()
        steps += 1
    if MODE == "wgan":
        steps = len(loader)  # a step is the critic's: it steps most often
elif MODE == "eval":
    val = DataLoader(Slow(32, 0.01), batch_size=4)  # a pass takes 0.3 s: far longer than a step

    def validate(limit=None):
        with torch.no_grad():
            for i, (x, _) in enumerate(val):
                model(x)
                if limit is not None and i + 1 == limit:
                    break  # the iterator is dropped before its end

    validate()
    for epoch in range(2):
        for i, (x, y) in enumerate(loader):
            train_step(model, opt, x, y)
            steps += 1
            if epoch == 0 and i == 7:
                validate(limit=3)
        validate()
elif MODE == "iterable":
    for x, y in DataLoader(Stream(), batch_size=4, num_workers=WORKERS):
        train_step(model, opt, x, y)
        steps += 1
elif MODE == "scaler":
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    for x, y in loader:
        opt.zero_grad()
        scaler.scale(torch.nn.functional.mse_loss(model(x), y)).backward()
        scaler.step(opt)
        scaler.update()
        steps += 1
elif MODE == "explicit":
    import baton.torch
    for x, y in baton.torch.watch(loader):
        train_step(model, opt, x, y)
        steps += 1
elif MODE == "inference":
    with torch.no_grad():
        for x, _ in loader:
            model(x)
else:
    sys.exit(f"unknown mode {MODE}")
print(f"steps {steps}", flush=True)
