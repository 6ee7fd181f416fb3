#!/usr/bin/env bash
# Installs what baton needs to build and test (Debian 12 / Ubuntu 22.04+), then configures
# and builds it in ./build. Installs only what is missing, so a second run needs no network.
# Used by scripts/quickstart.sh and scripts/test.sh; safe to run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config git
  libcli11-dev nlohmann-json3-dev libfmt-dev libtomlplusplus-dev
  libgtest-dev googletest
  libncurses-dev           # ncursesw, for baton top
  libsqlite3-dev           # the run history (baton run)
  tmux                     # the end-to-end test drives baton top inside tmux
  clang-format
  python3 python3-psutil   # bench/: the psutil side of the comparison
  prometheus               # promtool, to check the Prometheus output in the tests
  python3-venv python3-pip # the Python hook's virtual environment (below)
)

scripts/apt-install.sh "${packages[@]}"

# The Python hook (python/), installed offline into .venv, which also sees Debian's own Python
# packages (PyTorch from python3-torch, when installed): `.venv/bin/python train.py` has both.
# Editable, so it is installed once and always runs this checkout's code.
[ -x .venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv
venv_python=$(pwd)/.venv/bin/python
(cd / && "$venv_python" -c "import baton" 2>/dev/null) ||
  .venv/bin/python -m pip install --quiet --no-index --no-deps -e ./python

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_WERROR=ON -DBATON_BUILD_TESTS=ON "$@" >/dev/null
cmake --build build -j "$jobs"
