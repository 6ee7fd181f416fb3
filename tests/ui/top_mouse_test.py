#!/usr/bin/python3
"""baton top's mouse, end to end: baton runs on a pseudo-terminal of our own, its output goes through
pyte (a VT100/xterm emulator, Debian's python3-pyte) and we click by writing xterm's SGR mouse reports
to the terminal, as a terminal emulator does. (tmux does not pass mouse reports typed with send-keys
on to the program, so the tmux test cannot click.)

Checks: a click on a column header sorts by that column, a click on a row selects it (k then names
its pid), the wheel moves the selection. Usage: top_mouse_test.py BATON"""
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import fcntl
import termios

import pyte

COLS, LINES = 100, 30


class Screen:
    def __init__(self, argv, env):
        self.screen = pyte.Screen(COLS, LINES)
        self.stream = pyte.ByteStream(self.screen)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLS, 0, 0))
            os.execve(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLS, 0, 0))

    def pump(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    self.stream.feed(os.read(self.fd, 65536))
                except OSError:
                    return

    def lines(self):
        return self.screen.display

    def wait_for(self, text, seconds=10):
        end = time.time() + seconds
        while time.time() < end:
            self.pump(0.1)
            if any(text in line for line in self.lines()):
                return
        fail(f"screen never showed {text!r}")

    def line_of(self, text):
        for y, line in enumerate(self.lines()):
            if text in line:
                return y, line
        fail(f"no line shows {text!r}")

    def click(self, x, y):  # 0-based cell; SGR reports are 1-based
        self.send(f"\x1b[<0;{x + 1};{y + 1}M\x1b[<0;{x + 1};{y + 1}m")

    def wheel(self, down, x, y):
        self.send(f"\x1b[<{65 if down else 64};{x + 1};{y + 1}M")

    def send(self, text):
        os.write(self.fd, text.encode())
        self.pump(0.2)


def fail(message):
    print("FAIL:", message, file=sys.stderr)
    if screen:
        print("--- screen:", *screen.lines(), sep="\n", file=sys.stderr)
    sys.exit(1)


screen = None
baton = sys.argv[1]
work = tempfile.mkdtemp()
with open(os.path.join(work, "baton.toml"), "w") as f:
    f.write("[top]\ngraphs = false\n")  # a layout that does not move under the clicks
sleeper = subprocess.Popen(["sleep", "3127"])
try:
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "TERM": "xterm", "LANG": "C.UTF-8"}
    # The filter keeps two rows: the sleeper, and baton itself (its command line holds the text).
    screen = Screen([baton, "--config", f"{work}/baton.toml", "top", "-d", "0.3", "--no-gpus", "--sort", "pid",
                     "--filter", "3127"], env)
    screen.wait_for("▼PID")
    screen.wait_for(f"{sleeper.pid} ")
    # A click on the RSS header sorts by RSS.
    y, header = screen.line_of("PID USER")
    screen.click(header.index(" RSS") + 2, y)
    screen.wait_for("▼RSS")
    # A click on the sleeper's row selects it: k names it.
    y, _ = screen.line_of(f"{sleeper.pid} root" if os.getuid() == 0 else f"{sleeper.pid} ")
    screen.click(3, y)
    screen.send("k")
    screen.wait_for(f"Signal {sleeper.pid} (sleep)?")
    screen.send("n")  # any key but y and 9 cancels
    screen.wait_for("nothing sent")
    # The wheel moves the selection (down three rows: to the last of the two), then back up.
    top_pid = int(screen.lines()[screen.line_of("PID USER")[0] + 1].split()[0])
    screen.wheel(True, 3, y)
    screen.send("k")
    last_pid = int(screen.lines()[screen.line_of("PID USER")[0] + 2].split()[0])
    screen.wait_for(f"Signal {last_pid} ")
    screen.send("n")
    screen.wheel(False, 3, y)
    screen.send("k")
    screen.wait_for(f"Signal {top_pid} ")
    screen.send("n")
    screen.send("q")
    _, status = os.waitpid(screen.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        fail(f"baton top exited with {os.waitstatus_to_exitcode(status)}")
    print("top mouse: header sort, row selection, wheel: ok")
finally:
    sleeper.kill()
    sleeper.wait()
    shutil.rmtree(work, ignore_errors=True)
    if screen:
        try:
            os.kill(screen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
