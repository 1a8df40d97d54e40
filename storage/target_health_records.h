// The endpoint-health part of a target, as stored in the main DB: whether
// the engine disabled it and why, how its deliveries are ordered, when it is
// disabled automatically, and its circuit breaker (table target_health).
// Each enum has its stored word (the admin API's too) and a parser that
// answers nullopt for any other word.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/target_type.h"

namespace webhooker {

namespace health_words {
// nullopt unless `text` is the word of one of `values`.
template <typename Enum, typename WordOf, size_t N>
constexpr std::optional<Enum> parse(std::string_view text, const Enum (&values)[N], WordOf word) {
  for (Enum v : values)
    if (word(v) == text) return v;
  return std::nullopt;
}
}  // namespace health_words

// What the API shows as "state": deliveries flow (active), an operator
// paused them (inactive) or the engine did (disabled).
enum class TargetState { kActive, kInactive, kDisabled };

constexpr std::string_view targetStateWord(TargetState state) {
  switch (state) {
    case TargetState::kActive: return "active";
    case TargetState::kInactive: return "inactive";
    case TargetState::kDisabled: return "disabled";
  }
  return "active";  // not reached
}

constexpr std::optional<TargetState> parseTargetState(std::string_view text) {
  constexpr TargetState kAll[] = {TargetState::kActive, TargetState::kInactive,
                                  TargetState::kDisabled};
  return health_words::parse(text, kAll, targetStateWord);
}

// Why the engine disabled a target: the receiver answered 410 Gone, or no
// attempt succeeded for the target's disable_after.
enum class DisabledReason { kGone, kFailing };

constexpr std::string_view disabledReasonWord(DisabledReason reason) {
  switch (reason) {
    case DisabledReason::kGone: return "gone";
    case DisabledReason::kFailing: return "failing";
  }
  return "failing";  // not reached
}

constexpr std::optional<DisabledReason> parseDisabledReason(std::string_view text) {
  constexpr DisabledReason kAll[] = {DisabledReason::kGone, DisabledReason::kFailing};
  return health_words::parse(text, kAll, disabledReasonWord);
}

// parallel: up to max_concurrency attempts at once, a retrying delivery
// does not hold the others. fifo: one at a time, in the order the events
// were received; a retrying delivery holds the ones behind it.
enum class TargetOrdering { kParallel, kFifo };

constexpr std::string_view orderingWord(TargetOrdering ordering) {
  return ordering == TargetOrdering::kFifo ? "fifo" : "parallel";
}

constexpr std::optional<TargetOrdering> parseOrdering(std::string_view text) {
  constexpr TargetOrdering kAll[] = {TargetOrdering::kParallel, TargetOrdering::kFifo};
  return health_words::parse(text, kAll, orderingWord);
}

// The settings of a target's health, with their defaults.
struct TargetHealthPolicy {
  static constexpr std::chrono::milliseconds kDefaultDisableAfter = std::chrono::hours(24 * 5);
  static constexpr std::chrono::milliseconds kMinDisableAfter = std::chrono::minutes(1);
  static constexpr std::chrono::milliseconds kDefaultProbeInterval = std::chrono::hours(1);
  static constexpr std::chrono::milliseconds kMinProbeInterval = std::chrono::seconds(1);

  TargetOrdering ordering = TargetOrdering::kParallel;
  std::chrono::milliseconds disableAfter = kDefaultDisableAfter;
  bool autoResume = false;
  std::chrono::milliseconds probeInterval = kDefaultProbeInterval;
};

// Set while the engine holds a target's deliveries back.
struct TargetDisabled {
  DisabledReason reason = DisabledReason::kFailing;
  std::string at;  // ISO-8601, as stored
};

// A breaker's state; breakerStateWord() gives the stored and shown word.
enum class BreakerState { kClosed, kOpen, kHalfOpen };

constexpr std::string_view breakerStateWord(BreakerState state) {
  switch (state) {
    case BreakerState::kClosed: return "closed";
    case BreakerState::kOpen: return "open";
    case BreakerState::kHalfOpen: return "half_open";
  }
  return "closed";  // not reached
}

constexpr std::optional<BreakerState> parseBreakerState(std::string_view text) {
  constexpr BreakerState kAll[] = {BreakerState::kClosed, BreakerState::kOpen,
                                   BreakerState::kHalfOpen};
  return health_words::parse(text, kAll, breakerStateWord);
}

// One row of target_health: what a restart must not forget.
struct StoredTargetHealth {
  std::string targetId;
  std::string webhookId;   // read with the row, from targets
  TargetType targetType = TargetType::kHttp;  // likewise
  BreakerState breakerState = BreakerState::kClosed;
  std::optional<std::string> breakerOpenedAt;  // ISO-8601
  int consecutiveFailures = 0;
  std::optional<std::string> failingSince;  // ISO-8601: first failure after the last success
};

}  // namespace webhooker
