"""The package's own PEP 517 build backend: the package is a handful of pure-Python files, so a
wheel is a zip of them plus three metadata files. Being in the tree (pyproject.toml's
backend-path), it needs nothing from a package index: `pip install ./python` works offline, where
the usual backends would first download setuptools into an isolated build environment.
"""
import base64
import hashlib
import os
import zipfile

NAME = "baton"
HERE = os.path.dirname(os.path.abspath(__file__))


def _version():
    with open(os.path.join(HERE, NAME, "__init__.py")) as f:  # one place for the version
        for line in f:
            if line.startswith("__version__"):
                return line.split("=")[1].strip().strip("\"'")
    raise RuntimeError("no __version__ in baton/__init__.py")


VERSION = _version()
METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: The training-loop side of baton: step events, training checks, DataLoader and batch-size tuners
License: Apache-2.0
Requires-Python: >=3.8
"""
WHEEL = """Wheel-Version: 1.0
Generator: baton_build
Root-Is-Purelib: true
Tag: py3-none-any
"""


def _files():
    root = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            yield f"{NAME}/{name}", os.path.join(root, name)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _wheel(wheel_directory, files):
    dist_info = f"{NAME}-{VERSION}.dist-info"
    filename = f"{NAME}-{VERSION}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as whl:
        entries = list(files) + [(f"{dist_info}/METADATA", METADATA.encode()), (f"{dist_info}/WHEEL", WHEEL.encode())]
        for arcname, data in entries:
            whl.writestr(arcname, data)
            record.append(_record_line(arcname, data))
        record.append(f"{dist_info}/RECORD,,")
        whl.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for arcname, path in _files():
        with open(path, "rb") as f:
            files.append((arcname, f.read()))
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # An editable install: a .pth file that puts this directory on sys.path.
    return _wheel(wheel_directory, [(f"{NAME}.pth", (HERE + "\n").encode())])
