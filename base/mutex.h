// Mutex and MutexLock: std::mutex and a scoped lock that clang's thread
// safety analysis understands (base/thread_annotations.h), so a member marked
// GUARDED_BY(m) read without m held, or a ...Locked() method (REQUIRES(m))
// called without it, fails the clang build.
//
// Waiting: std::condition_variable_any waits on a MutexLock (it has lock()
// and unlock()). Its predicate runs with the lock held; say so to the
// analysis with REQUIRES on the lambda: cv.wait(lock, [&]() REQUIRES(m) {...}).
//
// Threading: a Mutex is shared by the threads it serialises; a MutexLock
// belongs to the one thread that made it. Neither is copyable.
#pragma once

#include <mutex>

#include "base/thread_annotations.h"

namespace webhooker {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  // Tells the analysis the caller holds it where it cannot see so (checks nothing).
  void assertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mutex_;
};

// Holds a Mutex for its scope. unlock() and lock() let a holder step out
// for slow work (I/O, callbacks) and come back; the destructor releases it
// only if held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() {
    mutex_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    held_ = false;
    mutex_.unlock();
  }

 private:
  Mutex& mutex_;
  bool held_ = true;
};

}  // namespace webhooker
