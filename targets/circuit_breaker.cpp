#include "targets/circuit_breaker.h"

#include <optional>

namespace webhooker {

CircuitBreakers::CircuitBreakers(const Clock& clock, int threshold,
                                 std::chrono::milliseconds cooldown)
    : clock_(clock), threshold_(threshold), cooldown_(cooldown) {}

void CircuitBreakers::onStateChange(std::function<void(int)> listener) {
  listener_ = std::move(listener);
}

void CircuitBreakers::onTransition(std::function<void(const Transition&)> listener) {
  transitionListener_ = std::move(listener);
}

void CircuitBreakers::notify(int openCount) const {
  if (listener_) listener_(openCount);
}

CircuitBreakers::Transition CircuitBreakers::transitionOf(const std::string& targetId,
                                                          const Breaker& b, State from) {
  return {targetId, b.webhookId, b.type, from, b.state, b.failures, b.openedAt};
}

void CircuitBreakers::report(const std::optional<Transition>& transition) const {
  if (transition && transitionListener_) transitionListener_(*transition);
}

int CircuitBreakers::openCountLocked() const {
  int n = 0;
  for (const auto& [id, b] : breakers_) n += b.state != State::kClosed;
  return n;
}

std::map<TargetType, int> CircuitBreakers::openCountByType() const {
  MutexLock lock(breakersMutex_);
  std::map<TargetType, int> out;
  for (const auto& [id, b] : breakers_)
    if (b.state != State::kClosed) ++out[b.type];
  return out;
}

CircuitBreakers::Status CircuitBreakers::status(const std::string& targetId) const {
  MutexLock lock(breakersMutex_);
  auto it = breakers_.find(targetId);
  if (it == breakers_.end()) return {};
  const Breaker& b = it->second;
  switch (b.state) {
    case State::kClosed:
      return {State::kClosed, b.failures, std::chrono::milliseconds(0)};
    case State::kOpen: {
      const auto elapsed =
          std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - b.openedAt);
      // Past the cooldown the next attempt is the probe: half-open in effect.
      if (elapsed >= cooldown_) return {State::kHalfOpen, b.failures, std::chrono::milliseconds(0)};
      return {State::kOpen, b.failures, cooldown_ - elapsed};
    }
    case State::kHalfOpen:
      return {State::kHalfOpen, b.failures, std::chrono::milliseconds(0)};
  }
  return {};
}

int CircuitBreakers::openCount() const {
  MutexLock lock(breakersMutex_);
  return openCountLocked();
}

CircuitBreakers::Decision CircuitBreakers::allow(const std::string& targetId) {
  std::optional<Transition> halfOpened;
  {
    MutexLock lock(breakersMutex_);
    auto it = breakers_.find(targetId);
    if (it == breakers_.end()) return {};
    Breaker& b = it->second;
    switch (b.state) {
      case State::kClosed:
        return {};
      case State::kOpen: {
        const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
            clock_.now() - b.openedAt);
        if (elapsed < cooldown_) return {false, cooldown_ - elapsed};
        b.state = State::kHalfOpen;
        b.probeInFlight = true;
        halfOpened = transitionOf(targetId, b, State::kOpen);
        break;
      }
      case State::kHalfOpen:
        if (!b.probeInFlight) {
          b.probeInFlight = true;
          return {};
        }
        // The probe is out: look again after a fraction of the cooldown.
        return {false, std::max(cooldown_ / 10, std::chrono::milliseconds(100))};
    }
  }
  report(halfOpened);
  return {};
}

void CircuitBreakers::recordSuccess(const std::string& targetId) { reset(targetId); }

void CircuitBreakers::recordFailure(const std::string& targetId, TargetType targetType,
                                    std::string_view webhookId) {
  std::optional<int> changed;
  std::optional<Transition> transition;
  {
    MutexLock lock(breakersMutex_);
    Breaker& b = breakers_[targetId];
    b.type = targetType;
    if (!webhookId.empty()) b.webhookId = webhookId;
    if (b.state == State::kHalfOpen) {
      b.state = State::kOpen;  // the probe failed: another full cooldown
      b.openedAt = clock_.now();
      b.probeInFlight = false;
      transition = transitionOf(targetId, b, State::kHalfOpen);
    } else if (b.state == State::kClosed && ++b.failures >= threshold_) {
      b.state = State::kOpen;
      b.openedAt = clock_.now();
      changed = openCountLocked();
      transition = transitionOf(targetId, b, State::kClosed);
    }
  }
  if (changed) notify(*changed);
  report(transition);
}

void CircuitBreakers::releaseProbe(const std::string& targetId) {
  MutexLock lock(breakersMutex_);
  auto it = breakers_.find(targetId);
  if (it != breakers_.end() && it->second.state == State::kHalfOpen)
    it->second.probeInFlight = false;
}

void CircuitBreakers::reset(const std::string& targetId) {
  std::optional<int> changed;
  std::optional<Transition> transition;
  {
    MutexLock lock(breakersMutex_);
    auto it = breakers_.find(targetId);
    if (it == breakers_.end()) return;
    const State from = it->second.state;
    if (from != State::kClosed) {
      Breaker closed = it->second;
      closed.state = State::kClosed;
      closed.failures = 0;
      transition = transitionOf(targetId, closed, from);
    }
    breakers_.erase(it);  // closed with no failures is the same as absent
    if (from != State::kClosed) changed = openCountLocked();
  }
  if (changed) notify(*changed);
  report(transition);
}

void CircuitBreakers::restore(const StoredTargetHealth& stored, TimePoint openedAt) {
  int openNow;
  {
    MutexLock lock(breakersMutex_);
    if (stored.breakerState == State::kClosed && stored.consecutiveFailures == 0) {
      breakers_.erase(stored.targetId);
    } else {
      Breaker& b = breakers_[stored.targetId];
      // A probe that was out when the process ended is gone: open again,
      // with the cooldown it had.
      b.state = stored.breakerState == State::kClosed ? State::kClosed : State::kOpen;
      b.failures = stored.consecutiveFailures;
      b.openedAt = openedAt;
      b.probeInFlight = false;
      b.type = stored.targetType;
      b.webhookId = stored.webhookId;
    }
    openNow = openCountLocked();
  }
  notify(openNow);
}

}  // namespace webhooker
