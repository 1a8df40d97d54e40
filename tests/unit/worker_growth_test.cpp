// WorkerGrowth: how many workers are due and when to look again, from the
// start times of the attempts in flight, on one thread with made-up times.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>

#include "engine/worker_growth.h"

namespace {

using namespace std::chrono_literals;
using webhooker::WorkerGrowth;
using TimePoint = WorkerGrowth::TimePoint;

const TimePoint t0{std::chrono::hours(1)};

TEST_CASE("no attempt in flight: the started workers are due, nothing to look at") {
  const WorkerGrowth growth(/*workers=*/2, /*maxWorkers=*/8, /*slowAttempt=*/20ms);
  CHECK(growth.workersDue(t0) == 2);
  CHECK(growth.lookAgainAt(t0) == std::nullopt);
}

TEST_CASE("young attempts earn no worker; each one that turns slow earns one") {
  WorkerGrowth growth(2, 8, 20ms);
  growth.attemptStarted(t0);
  growth.attemptStarted(t0 + 5ms);
  CHECK(growth.workersDue(t0 + 19ms) == 2);
  // The oldest young attempt turns slow first.
  CHECK(growth.lookAgainAt(t0 + 19ms) == t0 + 20ms);
  // Exactly slowAttempt old counts as slow.
  CHECK(growth.workersDue(t0 + 20ms) == 3);
  CHECK(growth.lookAgainAt(t0 + 20ms) == t0 + 25ms);
  CHECK(growth.workersDue(t0 + 25ms) == 4);
  CHECK(growth.lookAgainAt(t0 + 25ms) == std::nullopt);  // none young is left
}

TEST_CASE("an ended attempt no longer counts") {
  WorkerGrowth growth(1, 8, 20ms);
  const WorkerGrowth::Attempt slow = growth.attemptStarted(t0);
  growth.attemptStarted(t0 + 30ms);
  CHECK(growth.workersDue(t0 + 40ms) == 2);
  growth.attemptEnded(slow);
  CHECK(growth.workersDue(t0 + 40ms) == 1);
  CHECK(growth.lookAgainAt(t0 + 40ms) == t0 + 50ms);
}

TEST_CASE("attempts that began at the same time are counted each") {
  WorkerGrowth growth(1, 8, 20ms);
  const WorkerGrowth::Attempt first = growth.attemptStarted(t0);
  growth.attemptStarted(t0);
  CHECK(growth.workersDue(t0 + 20ms) == 3);
  growth.attemptEnded(first);
  CHECK(growth.workersDue(t0 + 20ms) == 2);
}

TEST_CASE("maxWorkers caps the workers due; at the cap nothing is worth a look") {
  WorkerGrowth growth(2, 4, 20ms);
  growth.attemptStarted(t0);
  growth.attemptStarted(t0 + 10ms);
  growth.attemptStarted(t0 + 15ms);
  CHECK(growth.workersDue(t0 + 20ms) == 3);
  CHECK(growth.lookAgainAt(t0 + 20ms) == t0 + 30ms);
  CHECK(growth.workersDue(t0 + 30ms) == 4);
  // One attempt is still young, but another worker could not start.
  CHECK(growth.lookAgainAt(t0 + 30ms) == std::nullopt);
  CHECK(growth.workersDue(t0 + 35ms) == 4);  // three slow attempts, still four
}

TEST_CASE("at least one worker starts, and never fewer at most than start") {
  const WorkerGrowth none(0, 0, 20ms);
  CHECK(none.started() == 1);
  CHECK(none.most() == 1);
  const WorkerGrowth fewer(8, 4, 20ms);
  CHECK(fewer.started() == 8);
  CHECK(fewer.most() == 8);
}

}  // namespace
