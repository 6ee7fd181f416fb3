#!/usr/bin/env bash
# Fails if the binary links any shared library but glibc's (libc, libm, the loader, vdso)
# and libgcc_s (which glibc itself dlopens, so every glibc system has it).
set -euo pipefail
bin=$1
deps=$(ldd "$bin" | awk '{print $1}')
bad=$(printf '%s\n' "$deps" | grep -Ev '^(libgcc_s\.so\.1|linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|/lib64/ld-linux-x86-64\.so\.2|/lib/ld-linux-aarch64\.so\.1|libdl\.so\.2|libpthread\.so\.0)$' || true)
if [ -n "$bad" ]; then
  echo "portable binary links: $bad"
  exit 1
fi
"$bin" --version
needs=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "needs only glibc, at least $needs"
# Ubuntu 22.04 has glibc 2.35, RHEL 9 2.34: stay at or below 2.34.
[ "$(printf '%s\n' "$needs" GLIBC_2.34 | sort -V | tail -1)" = GLIBC_2.34 ] || { echo "glibc floor too high"; exit 1; }
