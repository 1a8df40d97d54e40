// Random: the jitter source. Injected so backoff tests can pin the draw.
#pragma once

#include <random>

#include "base/mutex.h"

namespace webhooker {

class Random {
 public:
  virtual ~Random() = default;
  // A uniform draw from [low, high]. Thread-safe.
  virtual double uniform(double low, double high) = 0;
};

class SystemRandom final : public Random {
 public:
  double uniform(double low, double high) override {
    MutexLock lock(engineMutex_);
    return std::uniform_real_distribution<double>(low, high)(engine_);
  }

 private:
  Mutex engineMutex_;
  std::mt19937_64 engine_ GUARDED_BY(engineMutex_){std::random_device{}()};
};

}  // namespace webhooker
