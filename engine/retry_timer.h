// RetryTimer: holds tasks until their retry time, then hands them back.
//
// Threading: one thread of its own (timerThread_) waits for the earliest
// due time; schedule() may be called from any thread. onDue runs on the
// timer thread and must not block for long.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <thread>

#include "base/mutex.h"
#include "targets/task.h"

namespace webhooker {

class RetryTimer {
 public:
  explicit RetryTimer(std::function<void(Task)> onDue);
  ~RetryTimer();
  RetryTimer(const RetryTimer&) = delete;
  RetryTimer& operator=(const RetryTimer&) = delete;

  void schedule(Task task, std::chrono::milliseconds delay);
  // Makes the waiting tasks of `targetId` that `which` selects due now.
  void expedite(const std::string& targetId, const std::function<bool(const Task&)>& which);
  // Stops the thread; tasks still waiting are dropped (they are on disk).
  void stop();
  size_t waiting() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  void run(std::stop_token stop);

  const std::function<void(Task)> onDue_;
  mutable Mutex dueMutex_;
  std::condition_variable_any wake_;
  std::multimap<SteadyTime, Task> due_ GUARDED_BY(dueMutex_);
  std::jthread timerThread_;
};

}  // namespace webhooker
