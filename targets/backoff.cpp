#include "targets/backoff.h"

#include <algorithm>
#include <cmath>

namespace webhooker {

std::chrono::milliseconds retryDelay(const RetryPolicy& policy, int retryNumber, Random& random) {
  const int exponent = std::clamp(retryNumber - 1, 0, 40);
  const double uncapped = static_cast<double>(policy.baseDelayMs) * std::ldexp(1.0, exponent);
  const double capped = std::min(uncapped, static_cast<double>(policy.maxDelayMs));
  const double factor = 1.0 + random.uniform(-policy.jitter, policy.jitter);
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(capped * factor)));
}

std::chrono::milliseconds applyRetryAfter(std::chrono::milliseconds computed,
                                          std::optional<std::chrono::milliseconds> retryAfter,
                                          const RetryPolicy& policy) {
  if (!retryAfter) return computed;
  const std::chrono::milliseconds max{policy.maxDelayMs};
  return std::clamp(*retryAfter, std::min(computed, max), max);
}

}  // namespace webhooker
