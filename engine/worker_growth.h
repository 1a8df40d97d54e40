// WorkerGrowth: how many delivery workers are due. A worker blocked on a
// slow receiver costs no CPU, and a fast target must not wait for slow ones
// to answer; workers busy with fast receivers are using the cores, and more
// threads would only share them. So the pool runs the workers it started
// with, plus one for each attempt in flight that has run slowAttempt or
// longer, up to `most`.
//
// It keeps when each attempt in flight began and answers from the times it
// is given: no clock and no threads of its own (WorkerPool has them).
//
// Ownership: a plain value. Threading: none; its owner calls it under its
// mutex.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <set>

namespace webhooker {

class WorkerGrowth {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `workers` are started (at least one), `maxWorkers` the most ever (at
  // least as many).
  WorkerGrowth(int workers, int maxWorkers, std::chrono::milliseconds slowAttempt);

  size_t started() const { return started_; }
  size_t most() const { return most_; }

  // An attempt in flight: from attemptStarted() to attemptEnded().
  using Attempt = std::multiset<TimePoint>::const_iterator;
  Attempt attemptStarted(TimePoint at) { return starts_.insert(at); }
  void attemptEnded(Attempt attempt) { starts_.erase(attempt); }

  // started(), plus one for each attempt in flight that began slowAttempt
  // or more before `now`; most() at the most.
  size_t workersDue(TimePoint now) const;
  // When workersDue() rises next, unless an attempt starts or ends first:
  // when the oldest attempt younger than slowAttempt turns that old. None
  // if no attempt is that young, or workersDue(now) is most() already.
  std::optional<TimePoint> lookAgainAt(TimePoint now) const;

 private:
  // The first attempt younger than slowAttempt at `now`.
  Attempt firstYoung(TimePoint now) const;

  const size_t started_;
  const size_t most_;
  const std::chrono::milliseconds slowAttempt_;
  std::multiset<TimePoint> starts_;  // of the attempts in flight
};

}  // namespace webhooker
