#!/usr/bin/python3
"""Runs a command and prints the CPU time (user + system, seconds) and peak RSS (KiB) of
that command alone, from wait4()'s rusage. Output goes to /dev/null.
Usage: measure_cpu.py CMD [ARGS...]"""
import os
import subprocess
import sys

with open(os.devnull, "wb") as null:
    proc = subprocess.Popen(sys.argv[1:], stdout=null)
    _, status, usage = os.wait4(proc.pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"measure_cpu: {sys.argv[1]} failed with status {status}")
print(f"{usage.ru_utime + usage.ru_stime:.6f} {usage.ru_maxrss}")
