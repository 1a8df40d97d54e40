// Clock: the one source of "now". Injected everywhere time matters so that
// backoff, idempotency windows and recovery can be tested without sleeping.
#pragma once

#include <chrono>

namespace webhooker {

using TimePoint = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  // Thread-safe; may be called from any thread.
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace webhooker
