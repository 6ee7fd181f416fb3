"""The package's own PEP 517 build backend: the package is a handful of pure-Python files, so a
wheel is a zip of them plus three metadata files. Being in the tree (pyproject.toml's
backend-path), it needs nothing from a package index: `pip install ./python` works offline, where
the usual backends would first download setuptools into an isolated build environment.

Two wheels come from it. `pip install ./python` (this directory's pyproject.toml): the hook alone,
py3-none-any. `pip install .` at the repository's root (its pyproject.toml names this backend too):
the whole tool, the hook and the portable `baton` binary (`baton-portable`: glibc's libraries only),
stripped, as the wheel's script, so it lands on the environment's PATH as itself (no Python wrapper
in front of it). The binary is $BATON_PORTABLE when set, else built here (scripts/configure.sh and
cmake, in build-wheel/). Its platform tag is what the binary needs: the newest GLIBC_ symbol version
it uses (objdump -T) and its machine, e.g. manylinux_2_34_x86_64; a binary whose version is not the
package's is refused.
"""
import base64
import hashlib
import os
import re
import stat
import subprocess
import sys
import tempfile
import zipfile

NAME = "baton"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # the repository


def _version():
    with open(os.path.join(HERE, NAME, "__init__.py")) as f:  # one place for the version
        for line in f:
            if line.startswith("__version__"):
                return line.split("=")[1].strip().strip("\"'")
    raise RuntimeError("no __version__ in baton/__init__.py")


VERSION = _version()
HOOK_SUMMARY = "The training-loop side of baton: step events, training checks, DataLoader and batch-size tuners"
TOOL_SUMMARY = "baton: see, judge and tune a deep-learning training machine (the binary and its Python hook)"


def _metadata(summary):
    return f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: {summary}
License: Apache-2.0
Requires-Python: >=3.8
"""


def _wheel_file(tag, purelib):
    return f"""Wheel-Version: 1.0
Generator: baton_build
Root-Is-Purelib: {"true" if purelib else "false"}
Tag: {tag}
"""


def _whole_tool():
    """Whether pip builds from the repository's root (its pyproject.toml): the wheel then carries the binary."""
    return os.path.realpath(os.getcwd()) == os.path.realpath(ROOT) and os.path.exists(os.path.join(ROOT, "CMakeLists.txt"))


def _portable_binary():
    given = os.environ.get("BATON_PORTABLE")
    if given:
        if not os.access(given, os.X_OK):
            raise RuntimeError(f"BATON_PORTABLE={given} is not an executable file")
        return given
    build = os.path.join(ROOT, "build-wheel")
    # What the quick start fetches first (the live page's chart library, from the npm registry), then
    # the build; a step that fails is one line, not a traceback inside pip's.
    _step([os.path.join(ROOT, "scripts", "fetch-web-assets.sh")],
          "fetching the live page's chart library failed (the npm registry must be reachable, or set "
          "BATON_PORTABLE to a built baton-portable)")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        _step([os.path.join(ROOT, "scripts", "configure.sh"), build],
              "configuring the build failed: ./scripts/setup.sh --no-build installs what it needs")
    _step(["cmake", "--build", build, "--target", "baton-portable"],
          "building baton-portable failed (the compiler's output is above): ./scripts/setup.sh --no-build "
          "installs what the build needs")
    return os.path.join(build, "src", "cli", "baton-portable")


def _step(argv, why):
    """Runs one step of the build; on failure, says `why` on one line and stops the backend (pip then
    reports the backend failed, without a Python traceback burying the reason)."""
    try:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL)
    except OSError as e:
        done = None
        why = f"{why} ({argv[0]}: {e.strerror})"
    if done is None or done.returncode != 0:
        print(f"baton: {why}", file=sys.stderr, flush=True)
        raise SystemExit(1)


ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def platform_tag(binary):
    """manylinux_2_N_MACHINE for an ELF binary: N the newest GLIBC_2.N it asks for (objdump -T)."""
    with open(binary, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF" or head[4] != 2:
        raise RuntimeError(f"{binary} is not a 64-bit ELF binary")
    machine = ELF_MACHINES.get(int.from_bytes(head[18:20], "little"))
    if not machine:
        raise RuntimeError(f"{binary} is for a machine baton is not built for")
    symbols = subprocess.run(["objdump", "-T", binary], check=True, capture_output=True, text=True).stdout
    minors = [int(m) for m in re.findall(r"GLIBC_2\.(\d+)", symbols)]
    return f"manylinux_2_{max(minors + [17])}_{machine}"


def _binary_files(dist_data):
    """The stripped binary as the wheel's script, and its platform tag."""
    binary = _portable_binary()
    said = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout.split()
    if len(said) < 2 or said[1] != VERSION:
        raise RuntimeError(f"{binary} says {' '.join(said)!r}, not baton {VERSION}: rebuild it (or set BATON_PORTABLE)")
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "baton")
        subprocess.run(["strip", "--strip-unneeded", "-o", stripped, binary], check=True)
        with open(stripped, "rb") as f:
            data = f.read()
    return [(f"{dist_data}/scripts/baton", data)], platform_tag(binary)


def _files():
    root = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            yield f"{NAME}/{name}", os.path.join(root, name)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _wheel(wheel_directory, files, platform="any"):
    dist_info = f"{NAME}-{VERSION}.dist-info"
    tag = f"py3-none-{platform}"
    filename = f"{NAME}-{VERSION}-{tag}.whl"
    record = []
    wheel = _wheel_file(tag, platform == "any")
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as whl:
        summary = HOOK_SUMMARY if platform == "any" else TOOL_SUMMARY
        entries = list(files) + [(f"{dist_info}/METADATA", _metadata(summary).encode()),
                                 (f"{dist_info}/WHEEL", wheel.encode())]
        for arcname, data in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            # (a regular file's mode: pip makes a script executable when the wheel says it is)
            info.external_attr = (stat.S_IFREG | (0o755 if "/scripts/" in arcname else 0o644)) << 16
            whl.writestr(info, data)
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
    if not _whole_tool():
        return _wheel(wheel_directory, files)
    binary, platform = _binary_files(f"{NAME}-{VERSION}.data")
    return _wheel(wheel_directory, files + binary, platform)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # An editable install: a .pth file that puts this directory on sys.path.
    return _wheel(wheel_directory, [(f"{NAME}.pth", (HERE + "\n").encode())])
