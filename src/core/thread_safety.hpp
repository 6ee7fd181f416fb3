// Thread safety stated in code and checked by clang's -Wthread-safety (the clang build, which
// scripts/sanitizer-build.sh makes with -Werror): a Mutex is a capability, the members it guards
// say so (BATON_GUARDED_BY), and functions that must be called with it held, or without it, say
// that too. GCC ignores the attributes. std::mutex is not annotated in libstdc++, hence the
// wrappers; condition variables wait on them through std::condition_variable_any.
#pragma once

#include <mutex>

#if defined(__clang__)
#define BATON_TSA(x) __attribute__((x))
#else
#define BATON_TSA(x)
#endif

#define BATON_CAPABILITY(name) BATON_TSA(capability(name))
#define BATON_SCOPED_CAPABILITY BATON_TSA(scoped_lockable)
#define BATON_GUARDED_BY(m) BATON_TSA(guarded_by(m))
#define BATON_PT_GUARDED_BY(m) BATON_TSA(pt_guarded_by(m))
#define BATON_REQUIRES(...) BATON_TSA(requires_capability(__VA_ARGS__))
#define BATON_ACQUIRE(...) BATON_TSA(acquire_capability(__VA_ARGS__))
#define BATON_RELEASE(...) BATON_TSA(release_capability(__VA_ARGS__))
#define BATON_EXCLUDES(...) BATON_TSA(locks_excluded(__VA_ARGS__))
#define BATON_NO_THREAD_SAFETY_ANALYSIS BATON_TSA(no_thread_safety_analysis)

namespace baton {

class BATON_CAPABILITY("mutex") Mutex {
  public:
    void lock() BATON_ACQUIRE() { m_.lock(); }
    void unlock() BATON_RELEASE() { m_.unlock(); }

  private:
    std::mutex m_;
};

// Holds `m` for its scope (std::lock_guard).
class BATON_SCOPED_CAPABILITY MutexLock {
  public:
    explicit MutexLock(Mutex& m) BATON_ACQUIRE(m) : m_(m) { m_.lock(); }
    ~MutexLock() BATON_RELEASE() { m_.unlock(); }
    MutexLock(const MutexLock&) = delete;
    MutexLock& operator=(const MutexLock&) = delete;

  private:
    Mutex& m_;
};

// Holds `m` for its scope but may let go of it meanwhile (std::unique_lock): what a
// std::condition_variable_any waits with, and what a thread unlocks around slow work.
class BATON_SCOPED_CAPABILITY UniqueLock {
  public:
    explicit UniqueLock(Mutex& m) BATON_ACQUIRE(m) : m_(m) { m_.lock(); }
    ~UniqueLock() BATON_RELEASE() {
        if (held_) m_.unlock();
    }
    void lock() BATON_ACQUIRE() {
        m_.lock();
        held_ = true;
    }
    void unlock() BATON_RELEASE() {
        held_ = false;
        m_.unlock();
    }
    UniqueLock(const UniqueLock&) = delete;
    UniqueLock& operator=(const UniqueLock&) = delete;

  private:
    Mutex& m_;
    bool held_ = true;
};

}  // namespace baton
