#include "engine/retry_timer.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "base/thread_name.h"

namespace webhooker {

RetryTimer::RetryTimer(size_t capacity, std::function<void(Task)> onDue)
    : capacity_(std::max<size_t>(1, capacity)),
      onDue_(std::move(onDue)),
      timerThread_([this](std::stop_token st) { run(st); }) {}

RetryTimer::~RetryTimer() { stop(); }

std::optional<Task> RetryTimer::schedule(Task task, std::chrono::milliseconds delay) {
  const SteadyTime at = std::chrono::steady_clock::now() + delay;
  std::optional<Task> left;
  bool earliest;
  {
    MutexLock lock(dueMutex_);
    if (due_.size() >= capacity_) {
      const auto last = std::prev(due_.end());
      if (at >= last->first) return task;
      left = std::move(last->second);
      due_.erase(last);
    }
    earliest = due_.empty() || at < due_.begin()->first;
    due_.emplace(at, std::move(task));
  }
  // The thread sleeps until the earliest due time: only a new earliest
  // changes that (a recovery schedules thousands, one wake-up each otherwise).
  if (earliest) wake_.notify_one();
  return left;
}

void RetryTimer::expedite(const std::string& targetId,
                          const std::function<bool(const Task&)>& which) {
  {
    MutexLock lock(dueMutex_);
    const auto now = std::chrono::steady_clock::now();
    std::vector<Task> moved;
    for (auto it = due_.begin(); it != due_.end();) {
      if (it->first > now && it->second.targetId == targetId && which(it->second)) {
        moved.push_back(std::move(it->second));
        it = due_.erase(it);
      } else {
        ++it;
      }
    }
    for (Task& t : moved) due_.emplace(now, std::move(t));
  }
  wake_.notify_one();
}

void RetryTimer::stop() {
  timerThread_.request_stop();
  wake_.notify_all();
  if (timerThread_.joinable()) timerThread_.join();
}

size_t RetryTimer::waiting() const {
  MutexLock lock(dueMutex_);
  return due_.size();
}

void RetryTimer::run(std::stop_token stop) {
  nameThisThread("wh-retry-timer");
  MutexLock lock(dueMutex_);
  while (!stop.stop_requested()) {
    if (due_.empty()) {
      wake_.wait(lock, stop, [&]() REQUIRES(dueMutex_) { return !due_.empty(); });
      continue;
    }
    const auto next = due_.begin()->first;
    if (std::chrono::steady_clock::now() < next) {
      wake_.wait_until(lock, stop, next,
                       [&]() REQUIRES(dueMutex_) { return due_.begin()->first < next; });
      continue;
    }
    std::vector<Task> ready;
    const auto now = std::chrono::steady_clock::now();
    while (!due_.empty() && due_.begin()->first <= now) {
      ready.push_back(std::move(due_.begin()->second));
      due_.erase(due_.begin());
    }
    lock.unlock();
    for (Task& t : ready) onDue_(std::move(t));
    lock.lock();
  }
}

}  // namespace webhooker
