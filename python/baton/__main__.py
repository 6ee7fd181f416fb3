"""`python -m baton tune-loader MODULE:FACTORY --batch-size N [--budget S] [--max-workers N]`:
tunes the DataLoader for the dataset FACTORY() returns (FACTORY is a callable in MODULE, imported
from the current directory or PYTHONPATH) and prints the table and the settings to paste.

Any other `python -m baton ARGS` runs the baton binary with ARGS (`python -m baton doctor`): the one
this package's wheel installed, else the first on PATH."""
import argparse
import importlib
import os
import sys

PYTHON_COMMANDS = ("tune-loader",)


def run_binary(argv):
    from baton._binary import binary
    path = binary()
    if not path:
        sys.stderr.write("python -m baton: no baton binary in this environment or on PATH (pip install . at baton's "
                         "repository installs it with this package; README, Install, has the other ways)\n")
        return 1
    os.execv(path, [path] + list(argv))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in PYTHON_COMMANDS:
        return run_binary(argv)
    parser = argparse.ArgumentParser(prog="python -m baton", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tune = sub.add_parser("tune-loader", help="measure the fastest DataLoader settings for a dataset")
    tune.add_argument("factory", help="MODULE:FUNCTION returning the dataset")
    tune.add_argument("--batch-size", type=int, required=True)
    tune.add_argument("--budget", type=float, default=60.0, help="seconds for all settings together (default 60)")
    tune.add_argument("--max-workers", type=int, default=None)
    args = parser.parse_args(argv)
    module_name, _, function = args.factory.partition(":")
    if not module_name or not function:
        parser.error(f"factory must be MODULE:FUNCTION, not {args.factory!r}")
    if args.batch_size < 1 or args.budget <= 0:
        parser.error("--batch-size and --budget must be positive")
    sys.path.insert(0, os.getcwd())
    try:
        factory = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as e:
        parser.exit(2, f"python -m baton: error: cannot load {args.factory}: {e}\n")
    from baton.tuners import tune_loader
    best = tune_loader(factory(), args.batch_size, budget_s=args.budget, max_workers=args.max_workers)
    print("DataLoader(dataset, batch_size={}, {})".format(
        args.batch_size, ", ".join(f"{k}={v}" for k, v in best.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
