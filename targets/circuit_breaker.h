// CircuitBreakers: one breaker per http/slack target, so a dead receiver
// stops being hammered and stops eating worker time.
//
//   closed --5 consecutive retryable failures--> open --30 s--> half-open
//   half-open lets exactly one probe through: success closes, failure reopens.
//
// Every change of state goes to the transition listener (logged, persisted
// in the main DB, sent as an operational event); restore() puts a persisted
// breaker back at start-up, so a restart does not close an open one.
// A delivery the breaker refuses is not an attempt: the caller records no
// result row and no attempt metric, and retries at the end of the cooldown.
// Threading: every method is safe from any thread (breakersMutex_).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"
#include "storage/target_health_records.h"

namespace webhooker {

class CircuitBreakers {
 public:
  struct Decision {
    bool allowed = true;
    std::chrono::milliseconds retryIn{0};  // when refused: until the cooldown ends
  };

  static constexpr int kDefaultThreshold = 5;
  static constexpr std::chrono::seconds kDefaultCooldown{30};

  explicit CircuitBreakers(const Clock& clock, int threshold = kDefaultThreshold,
                           std::chrono::milliseconds cooldown = kDefaultCooldown);

  // Asks to start an attempt to `targetId`. In half-open, only the first
  // caller is allowed (the probe); the rest wait for its outcome.
  Decision allow(const std::string& targetId);
  void recordSuccess(const std::string& targetId);
  // Only retryable failures count: a 404 says the receiver is up.
  // `targetType` labels the breaker in openCountByType(); `webhookId` goes
  // with its transitions.
  void recordFailure(const std::string& targetId, TargetType targetType = TargetType::kHttp,
                     std::string_view webhookId = "");
  // The attempt allow() let through ended without saying anything about the
  // receiver (nothing was sent: a refused destination, a bad config). If it
  // was the half-open probe, the next caller may probe instead; without this
  // the breaker would refuse everyone forever.
  void releaseProbe(const std::string& targetId);
  // Forgets a target's breaker (target deleted or reconfigured).
  void reset(const std::string& targetId);
  // Puts back a breaker persisted before a restart (an open one keeps its
  // opening time, so its cooldown ends when it would have). No transition
  // is reported; the state-change listener hears the new open count.
  void restore(const StoredTargetHealth& stored, TimePoint openedAt);

  // A change of a breaker's state, reported after it happened.
  struct Transition {
    std::string targetId;
    std::string webhookId;
    TargetType targetType = TargetType::kHttp;
    BreakerState from = BreakerState::kClosed;
    BreakerState to = BreakerState::kClosed;
    int consecutiveFailures = 0;
    TimePoint openedAt{};  // open and half-open: when it last opened
  };
  // Called outside the lock, on the thread that made the change. Set once,
  // before use.
  void onTransition(std::function<void(const Transition&)> listener);

  // What the admin API shows of one target's breaker.
  struct Status {
    BreakerState state = BreakerState::kClosed;
    int consecutiveFailures = 0;         // retryable failures counted while closed
    std::chrono::milliseconds retryIn{0};  // open: until a probe is let through
  };
  Status status(const std::string& targetId) const;

  int openCount() const;  // open or half-open
  std::map<TargetType, int> openCountByType() const;
  // Called (outside the lock) after any change of open/closed state, with
  // the new openCount(). Set once, before use.
  void onStateChange(std::function<void(int openCount)> listener);

 private:
  using State = BreakerState;
  struct Breaker {
    State state = State::kClosed;
    int failures = 0;
    TimePoint openedAt{};
    bool probeInFlight = false;
    TargetType type = TargetType::kHttp;
    std::string webhookId;
  };
  int openCountLocked() const REQUIRES(breakersMutex_);
  void notify(int openCount) const;
  static Transition transitionOf(const std::string& targetId, const Breaker& b, State from);
  void report(const std::optional<Transition>& transition) const;

  const Clock& clock_;
  const int threshold_;
  const std::chrono::milliseconds cooldown_;
  std::function<void(int)> listener_;
  std::function<void(const Transition&)> transitionListener_;

  mutable Mutex breakersMutex_;
  std::unordered_map<std::string, Breaker> breakers_ GUARDED_BY(breakersMutex_);
};

}  // namespace webhooker
