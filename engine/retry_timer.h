// RetryTimer: holds tasks until their retry time, then hands them back.
// It holds at most `capacity` tasks, the earliest due: a retry backlog (a
// receiver down for a day) must not grow memory. A task that does not fit
// goes back to the caller, who leaves it on disk and reads it again later.
//
// Threading: one thread of its own (timerThread_) waits for the earliest
// due time; schedule() may be called from any thread. onDue runs on the
// timer thread, with no lock of the timer held, and must not block for long.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "base/mutex.h"
#include "targets/task.h"

namespace webhooker {

class RetryTimer {
 public:
  RetryTimer(size_t capacity, std::function<void(Task)> onDue);
  ~RetryTimer();
  RetryTimer(const RetryTimer&) = delete;
  RetryTimer& operator=(const RetryTimer&) = delete;

  // Holds `task` until `delay` has passed. When the timer is full, returns
  // the task due last of those held and `task` (which may be `task` itself);
  // the timer keeps the others.
  [[nodiscard]] std::optional<Task> schedule(Task task, std::chrono::milliseconds delay);
  // Makes the waiting tasks of `targetId` that `which` selects due now.
  void expedite(const std::string& targetId, const std::function<bool(const Task&)>& which);
  // Stops the thread; tasks still waiting are dropped (they are on disk).
  void stop();
  size_t waiting() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  void run(std::stop_token stop);

  const size_t capacity_;
  const std::function<void(Task)> onDue_;
  mutable Mutex dueMutex_;
  std::condition_variable_any wake_;
  std::multimap<SteadyTime, Task> due_ GUARDED_BY(dueMutex_);
  std::jthread timerThread_;
};

}  // namespace webhooker
