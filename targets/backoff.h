// How long a target waits before retry n (n = 1 is the wait after the
// first attempt): min(base * 2^(n-1), max) * (1 + U(-jitter, +jitter)).
#pragma once

#include <chrono>
#include <optional>

#include "base/random.h"
#include "storage/records.h"

namespace webhooker {

std::chrono::milliseconds retryDelay(const RetryPolicy& policy, int retryNumber, Random& random);

// A receiver's Retry-After is honoured but kept within [computed, max_delay]:
// it may slow us down, never make us hammer or stall forever.
std::chrono::milliseconds applyRetryAfter(std::chrono::milliseconds computed,
                                          std::optional<std::chrono::milliseconds> retryAfter,
                                          const RetryPolicy& policy);

}  // namespace webhooker
