// TokenBucket: a target's rate limit (rate_limit.per_second). Holds up to
// max(1, rate) tokens, gains `rate` per second, and an attempt takes one. A
// new bucket holds one token, not a full burst: after a restart or a change
// of the limit we do not know what the receiver saw just before, and it
// should never see more than one request above its rate.
//
// A plain value: the engine keeps one per rate-limited target under its lock.
#pragma once

#include <algorithm>
#include <chrono>

#include "base/clock.h"

namespace webhooker {

class TokenBucket {
 public:
  TokenBucket(double perSecond, TimePoint now)
      : rate_(perSecond), capacity_(std::max(1.0, perSecond)), tokens_(1.0), at_(now) {}

  double rate() const { return rate_; }

  // Takes a token if one is there at `now`.
  bool take(TimePoint now) {
    refill(now);
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

  // When the next token will be there (`now` if one is).
  TimePoint nextTokenAt(TimePoint now) {
    refill(now);
    if (tokens_ >= 1.0) return now;
    const std::chrono::duration<double> wait((1.0 - tokens_) / rate_);
    return now + std::chrono::ceil<std::chrono::microseconds>(wait);
  }

 private:
  void refill(TimePoint now) {
    if (now <= at_) return;  // a clock that went back adds nothing
    const std::chrono::duration<double> elapsed = now - at_;
    tokens_ = std::min(capacity_, tokens_ + elapsed.count() * rate_);
    at_ = now;
  }

  double rate_;
  double capacity_;
  double tokens_;
  TimePoint at_;
};

}  // namespace webhooker
