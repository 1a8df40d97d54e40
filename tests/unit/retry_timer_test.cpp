// RetryTimer: hands tasks back when due, earliest first; when full it keeps
// the earliest due and gives the latest back to the caller; a new earliest
// task is not held up by a later one the thread is sleeping for.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/retry_timer.h"

namespace webhooker {
namespace {

using namespace std::chrono_literals;

Task taskFor(const std::string& deliveryId) {
  Task t;
  t.deliveryId = deliveryId;
  return t;
}

// Records the delivery ids the timer hands back, in order.
class DueLog {
 public:
  void add(const Task& t) {
    std::lock_guard lock(mutex_);
    ids_.push_back(t.deliveryId);
    changed_.notify_all();
  }
  // The ids once `n` have come, or what came by the timeout.
  std::vector<std::string> waitFor(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return ids_.size() >= n; });
    return ids_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> ids_;
};

TEST_CASE("a full timer keeps the earliest due and hands back the latest") {
  DueLog due;
  RetryTimer timer(2, [&](Task t) { due.add(t); });
  CHECK_FALSE(timer.schedule(taskFor("a"), 300ms));
  CHECK_FALSE(timer.schedule(taskFor("b"), 100ms));
  std::optional<Task> left = timer.schedule(taskFor("c"), 200ms);  // displaces a
  REQUIRE(left);
  CHECK(left->deliveryId == "a");
  left = timer.schedule(taskFor("d"), 10s);  // due after every held one: not taken
  REQUIRE(left);
  CHECK(left->deliveryId == "d");
  CHECK(timer.waiting() == 2);
  CHECK(due.waitFor(2, 5s) == std::vector<std::string>{"b", "c"});
  CHECK(timer.waiting() == 0);
}

TEST_CASE("a task due sooner than the one the timer sleeps for goes at its own time") {
  DueLog due;
  RetryTimer timer(10, [&](Task t) { due.add(t); });
  CHECK_FALSE(timer.schedule(taskFor("later"), 30s));
  std::this_thread::sleep_for(50ms);  // the thread sleeps until `later`
  const auto scheduled = std::chrono::steady_clock::now();
  CHECK_FALSE(timer.schedule(taskFor("sooner"), 100ms));
  CHECK(due.waitFor(1, 10s) == std::vector<std::string>{"sooner"});
  CHECK(std::chrono::steady_clock::now() - scheduled < 5s);
}

}  // namespace
}  // namespace webhooker
