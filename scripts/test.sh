#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, build with warnings as errors, check the
# formatting, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# Only the tests need these: a browser (the report test opens baton's HTML report in headless
# Chromium) and PyTorch (the Python hook's tests train real, small models on the CPU).
./scripts/apt-install.sh chromium python3-torch
cmake --build build --target format-check
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 300
