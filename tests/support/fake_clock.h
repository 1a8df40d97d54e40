// FakeClock: a clock the test moves by hand, so time windows (idempotency,
// backoff) are tested without sleeping.
#pragma once

#include <atomic>
#include <chrono>

#include "base/clock.h"

namespace webhooker::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{std::chrono::milliseconds{1'795'000'000'000}})
      : now_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint{TimePoint::duration{now_.load()}}; }
  void advance(std::chrono::milliseconds d) {
    now_ += std::chrono::duration_cast<TimePoint::duration>(d).count();
  }

 private:
  std::atomic<TimePoint::rep> now_;
};

}  // namespace webhooker::testing
