"""What the tests of hung jobs share (hang_test.py here, tests/serve/queued_hang_test.py): the number of
a marked line of hang_ranks.py, and the processes a test left behind."""
import os

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hang_ranks.py")


def line_of(marker):
    """The line of hang_ranks.py that ends with `# MARKER` (what the verdicts name)."""
    with open(SCRIPT) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith("# " + marker):
                return n
    raise AssertionError(marker)


def processes_with(text):
    """Pids whose command line holds `text` (a test's own temporary directory)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found
