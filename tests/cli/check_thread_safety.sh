#!/bin/bash
# The lock annotations bite: clang's -Wthread-safety (on in every clang build of baton, with
# -Werror in scripts/sanitizer-build.sh) refuses a guarded member read without its mutex and
# accepts it under a MutexLock; and the five classes shared between threads carry them.
# Usage: check_thread_safety.sh SOURCE_DIR. Skips (77) without clang++.
set -u
src=$1
command -v clang++ >/dev/null || { echo "no clang++: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/bad.cpp" <<'CPP'
#include "core/thread_safety.hpp"
struct Shared {
    baton::Mutex mutex;
    int value BATON_GUARDED_BY(mutex) = 0;
    int read() { return value; }  // without the mutex
};
CPP
cat >"$tmp/good.cpp" <<'CPP'
#include "core/thread_safety.hpp"
struct Shared {
    baton::Mutex mutex;
    int value BATON_GUARDED_BY(mutex) = 0;
    int read() {
        baton::MutexLock lock(mutex);
        return value;
    }
};
CPP
flags=(-std=c++20 -fsyntax-only -Wthread-safety -Werror -I"$src/src")
if clang++ "${flags[@]}" "$tmp/bad.cpp" 2>"$tmp/bad.err"; then
    echo "FAIL: a guarded read without its mutex compiled"; exit 1
fi
grep -q "requires holding mutex 'mutex'" "$tmp/bad.err" || { echo "FAIL: unexpected error:"; cat "$tmp/bad.err"; exit 1; }
clang++ "${flags[@]}" "$tmp/good.cpp" || { echo "FAIL: the locked read was refused"; exit 1; }
for header in serve/sampling_loop.hpp serve/metric_history.hpp queue/queue_server.hpp queue/job_watches.hpp store/history_writer.hpp; do
    grep -q "BATON_GUARDED_BY" "$src/src/$header" || { echo "FAIL: $header has no lock annotations"; exit 1; }
done
grep -q -- "-Wthread-safety" "$src/CMakeLists.txt" || { echo "FAIL: clang builds do not check them"; exit 1; }
echo "thread-safety annotations checked"
