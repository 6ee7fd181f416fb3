#!/usr/bin/env bash
# Installs what baton needs to build (Debian 12 / Ubuntu 22.04+), then configures and builds
# the `baton` program in ./build: nothing else, so a newcomer's first frame comes as soon as
# the compiler allows. Installs only what is missing, so a second run needs no network.
# scripts/test.sh adds the test-only packages and builds the tests in the same tree.
# Usage: scripts/setup.sh [--no-build] [CMAKE_ARGS...]: --no-build installs and stops (test.sh and
# the sanitizer tree configure their own trees); extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
if [ "${1:-}" = --no-build ]; then
  build=0
  shift
fi

packages=(
  build-essential cmake pkg-config git
  ca-certificates          # the uPlot tarball comes from the npm registry over HTTPS (fetch-web-assets.sh)
  ninja-build ccache       # the build; ccache keeps what was compiled (~/.cache/ccache) for the next build
  libcli11-dev nlohmann-json3-dev libfmt-dev libtomlplusplus-dev
  libncurses-dev           # ncursesw, for baton top
  libsqlite3-dev           # the run history (baton run)
  libevent-dev             # baton serve's HTTP server (linked statically)
  zlib1g-dev               # gzipped profiler traces (baton profile; libz.a, linked statically)
  python3 python3-venv python3-pip # the Python hook's virtual environment (below)
)

scripts/apt-install.sh "${packages[@]}"
scripts/fetch-web-assets.sh  # uPlot for baton serve's live page, embedded at build time

# The Python hook (python/), installed offline into .venv, which also sees Debian's own Python
# packages (PyTorch from python3-torch, when installed): `.venv/bin/python train.py` has both.
# Editable, so it is installed once and always runs this checkout's code.
[ -x .venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv
venv_python=$(pwd)/.venv/bin/python
(cd / && "$venv_python" -c "import baton" 2>/dev/null) ||
  .venv/bin/python -m pip install --quiet --no-index --no-deps -e ./python

((build)) || exit 0
# Without -Werror (a newer compiler's new warning must not stop a user's first build: CI and
# developers build with it) and without the tests: BATON_BUILD_TESTS is left as the tree has it
# (off in a fresh tree unless GoogleTest is installed), and only the `baton` target is built.
installed=$SECONDS
scripts/configure.sh build "$@"
cmake --build build -j "$(nproc)" --target baton
# The two phases of a first run (docs/performance.md, "Build"), on stderr.
echo "setup: installing took ${installed} s, configuring and building baton $((SECONDS - installed)) s" >&2
