#include "engine/worker_growth.h"

#include <algorithm>
#include <iterator>

namespace webhooker {

WorkerGrowth::WorkerGrowth(int workers, int maxWorkers, std::chrono::milliseconds slowAttempt)
    : started_(static_cast<size_t>(std::max(1, workers))),
      most_(std::max(started_, static_cast<size_t>(std::max(0, maxWorkers)))),
      slowAttempt_(slowAttempt) {}

WorkerGrowth::Attempt WorkerGrowth::firstYoung(TimePoint now) const {
  return starts_.upper_bound(now - slowAttempt_);
}

size_t WorkerGrowth::workersDue(TimePoint now) const {
  const auto slow = static_cast<size_t>(std::distance(starts_.begin(), firstYoung(now)));
  return std::min(most_, started_ + slow);
}

std::optional<WorkerGrowth::TimePoint> WorkerGrowth::lookAgainAt(TimePoint now) const {
  const Attempt young = firstYoung(now);
  if (young == starts_.end() || workersDue(now) >= most_) return std::nullopt;
  return *young + slowAttempt_;
}

}  // namespace webhooker
