#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up (scripts/setup.sh), install what only the tests
# need, build everything with warnings as errors, check the formatting, run every test; then the
# tests under sanitizers (scripts/sanitize.sh) and the fuzzers (scripts/fuzz.sh). Prints a table of
# its phases with their seconds, and ctest's slowest tests, at the end (scripts/phases.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/phases.sh
phase setup ./scripts/setup.sh --no-build
test_packages=(
  libgtest-dev googletest  # the unit and integration tests
  tmux                     # the end-to-end test drives baton top inside tmux
  python3-pyte             # the mouse test reads baton top's screen through pyte's terminal emulator
  clang-format             # the format-check target
  clang                    # scripts/fuzz.sh: libFuzzer targets
  python3-psutil           # bench/: the psutil side of the comparison
  task-spooler             # bench/queue_vs_task_spooler.py: the other queue of the comparison
  slurmctld slurmd slurm-client munge  # the Slurm hand-off's test runs its own controller, node and munged
  slurmdbd mariadb-server  # the jobstats epilog's test: accounting (sacct, sacctmgr) on a MariaDB of its own
  prometheus               # promtool, and the Prometheus that scrapes baton serve in the tests
  prometheus-node-exporter # bench/serve_vs_node_exporter.py: the other agent of the comparison
  prometheus-alertmanager  # delivers the alerts of deploy/prometheus/ in the end-to-end test
  systemd                  # systemd-analyze verify and security on deploy/baton.service
  chromium                 # the report test opens baton's HTML report in headless Chromium
  python3-torch            # the Python hook's tests train real, small models on the CPU
  python3-torchvision      # baton tune's test runs PyTorch's MNIST example (tests/fixtures/pytorch-examples)
  python3-grpcio python3-protobuf  # the fake kubelet of the pod-resources test (gRPC on a Unix socket)
  python3-kubernetes       # the Kubernetes API's types: deploy/kubernetes/ is checked against them
  podman runc              # deploy/kubernetes/'s image is built and run (runc: crun refuses hybrid cgroups)
  iperf3 fio               # bench net is measured beside iperf3 (tests); bench/bench_vs_tools.py adds fio
  man-db zsh fish bash-completion  # the package test: man -w, and each shell's completion
)
# (A function run by `phase` does not stop at a failing command by itself: each step says || return.)
test_setup() {
  ./scripts/apt-install.sh "${test_packages[@]}" || return
  # playwright-core drives Debian's Chromium in the live-page test (no browser of its own is fetched),
  # installed with npm: Debian's where there is no npm yet (Node.js from elsewhere brings its own).
  command -v npm >/dev/null || ./scripts/apt-install.sh npm || return
  # kubectl kustomize builds deploy/kubernetes/ in its test: Debian's kubernetes-client, unless a
  # kubectl is there already (another package's would collide with it).
  command -v kubectl >/dev/null || ./scripts/apt-install.sh kubernetes-client || return
  [ -d .deps/node/node_modules/playwright-core ] ||
    npm install --silent --no-audit --no-fund --prefix .deps/node playwright-core@1.64.1 >/dev/null
}
phase "test packages" test_setup
# The quick start's build (scripts/configure.sh: Ninja, ccache, no debug info) with the tests and
# with warnings as errors.
phase configure ./scripts/configure.sh build -DBATON_BUILD_TESTS=ON -DBATON_WERROR=ON
phase build cmake --build build -j "$(nproc)"
phase "format check" cmake --build build --target format-check
BATON_CTEST_LOGS=(build/ctest.log build-sanitize/ctest-unit.log build-sanitize/ctest-sanitize.log)
rm -f "${BATON_CTEST_LOGS[@]}"  # an earlier run's, in a tree used before
run_tests() { (cd build && ctest --output-on-failure -j "$(nproc)" --timeout 300 | tee ctest.log; exit "${PIPESTATUS[0]}"); }
phase tests run_tests
# Then the same tests under AddressSanitizer and UndefinedBehaviorSanitizer (built with clang, with
# warnings as errors: the second compiler), and every libFuzzer target for 20 s on its corpus
# (docs/security.md); the sanitizer tree is built once for both.
phase "sanitizer build" ./scripts/sanitizer-build.sh
phase "sanitizer tests" ./scripts/sanitize.sh
phase fuzz ./scripts/fuzz.sh 20
