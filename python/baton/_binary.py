"""Where the `baton` binary of this installation is: the one the package's own wheel put beside this
Python (`pip install` of the whole tool puts it in the environment's scripts directory), else the first
on PATH. The hook never needs it to report (it talks to the running baton over a socket); `python -m
baton` runs it."""
import os
import shutil
import sysconfig


def binary():
    """The path of the baton binary to run, or None when there is none."""
    own = os.path.join(sysconfig.get_path("scripts"), "baton")
    if os.path.isfile(own) and os.access(own, os.X_OK):
        return own
    return shutil.which("baton")
