"""Events to the running baton: JSON datagrams on the Unix socket named by BATON_EVENTS.

A send never blocks the training loop: the socket is non-blocking, and an event that does not fit
(baton's queue is full, or baton is gone) is dropped and counted; the count travels with the next
event that gets through, so baton knows what it missed. Drops after the last event that got through
are said at exit by a `dropped` event, retried for half a second while baton's queue is full (the
only wait the hook ever makes, and only then).
"""
import atexit
import json
import os
import socket
import sys
import time

ENV = "BATON_EVENTS"
VERSION_ENV = "BATON_VERSION"  # the version of the baton that reads the events (it sets it)
_sender = None
_noticed = False
_version_said = False


def check_version():
    """Says once per process when the baton reading the events is another version than this package:
    they may not understand each other's events (both come from one `pip install .`)."""
    global _version_said
    from baton import __version__
    theirs = os.environ.get(VERSION_ENV)
    if _version_said or not theirs or theirs == __version__:
        return
    _version_said = True
    print(f"baton: this Python hook is baton {__version__} and the baton running this script is {theirs}: "
          "install the same version of both (pip install . at baton's repository brings both)", file=sys.stderr)


class Sender:
    def __init__(self, path):
        self.path = path
        self.pid = os.getpid()  # a forked child (a DataLoader worker) makes its own
        self.sent = 0
        self.dropped = 0
        self.dropped_said = 0  # the count the last event that got through carried
        self.sock = None
        if path:
            check_version()
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self.sock.setblocking(False)
            except OSError:
                self.sock = None
            else:
                atexit.register(self.say_dropped)

    @property
    def connected(self):
        return self.sock is not None

    def send(self, event, patience=0.0):
        """Sends one event (a dict); False when it was dropped. `patience`: seconds to retry while
        baton's queue is full (only for an event sent once at the end, such as a trial's losses)."""
        if self.sock is None:
            return False
        event.setdefault("t", time.time() * 1000.0)
        event.setdefault("pid", os.getpid())
        event["dropped"] = self.dropped
        data = json.dumps(event, separators=(",", ":")).encode()
        deadline = time.monotonic() + patience
        while True:
            try:
                self.sock.sendto(data, self.path)
                break
            except BlockingIOError:  # baton's queue is full
                if time.monotonic() >= deadline:
                    self.dropped += 1
                    return False
                time.sleep(0.01)
            except OSError:  # ECONNREFUSED/ENOENT: baton is gone
                self.dropped += 1
                return False
        self.sent += 1
        self.dropped_said = event["dropped"]
        return True

    def say_dropped(self, patience=0.5):
        """At exit: the events dropped since the last one that got through, so that baton counts them."""
        if self.sock is None or self.pid != os.getpid() or self.dropped == self.dropped_said:
            return
        event = json.dumps({"type": "dropped", "t": time.time() * 1000.0, "pid": self.pid,
                            "dropped": self.dropped}, separators=(",", ":")).encode()
        deadline = time.monotonic() + patience
        while True:
            try:
                self.sock.sendto(event, self.path)
                self.dropped_said = self.dropped
                return
            except BlockingIOError:  # baton's queue is full: it reads, give it a moment
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.01)
            except OSError:  # baton is gone
                return


def sender():
    """The process's sender (a fork, such as a DataLoader worker, gets its own)."""
    global _sender
    if _sender is None or _sender.pid != os.getpid():
        _sender = Sender(os.environ.get(ENV))
    return _sender


def notice_once(what):
    """Says once per process that baton is not listening, so the hook is a visible no-op."""
    global _noticed
    if _noticed or sender().connected:
        return
    _noticed = True
    print(f"baton: {what} records nothing: this script is not running under `baton run` "
          f"({ENV} is not set)", file=sys.stderr)
