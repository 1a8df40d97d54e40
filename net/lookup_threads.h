// LookupThreads: runs address lookups (the SSRF guard's DNS resolution) on
// a few threads of their own, so an attempt stops waiting for DNS at its
// deadline like it stops waiting for the receiver. getaddrinfo cannot be
// cancelled: a lookup that outlives its caller's deadline runs to its end
// on its thread and its answer is dropped; one that had not started by then
// is skipped. At most `threads` lookups run at once, so a resolver that
// hangs costs those threads (until the C library's own timeout), never a
// delivery worker past the attempt's timeout.
//
// Threading: run() from any thread. The destructor joins the threads, so it
// waits for lookups that are running.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/ip_address.h"
#include "base/mutex.h"
#include "base/result.h"

namespace webhooker {

class LookupThreads {
 public:
  using Lookup = std::function<Result<IpAddress>()>;
  using Deadline = std::chrono::steady_clock::time_point;

  explicit LookupThreads(size_t threads);
  ~LookupThreads();
  LookupThreads(const LookupThreads&) = delete;
  LookupThreads& operator=(const LookupThreads&) = delete;

  // The lookup's answer, or nullopt when `deadline` passed first. `lookup`
  // must own what it uses: it may run after this call has returned.
  std::optional<Result<IpAddress>> run(Lookup lookup, Deadline deadline);

 private:
  // One lookup and its answer, shared by the caller and the thread that runs it.
  struct Job {
    Mutex mutex;
    std::condition_variable_any answered;
    Lookup lookup;
    std::optional<Result<IpAddress>> answer GUARDED_BY(mutex);  // set once, by the thread
    bool abandoned GUARDED_BY(mutex) = false;                   // the caller gave up
  };
  void work(std::stop_token stop);

  Mutex queueMutex_;
  std::condition_variable_any queued_;
  std::deque<std::shared_ptr<Job>> queue_ GUARDED_BY(queueMutex_);
  std::vector<std::jthread> threads_;
};

}  // namespace webhooker
