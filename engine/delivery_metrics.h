// DeliveryMetrics: the delivery side of /metrics, on a prometheus-cpp
// registry. Every series carries one label, target_type: a type's word, or
// "unknown" (a delivery whose target is gone), so no series can be minted
// from an id. All series exist, at 0, from construction.
//
// The counting rules: an attempt (and its duration) is counted only where
// one was dispatched — targets call attempted(); outcome counters move only
// after the status row was written — targets call outcome() after the
// write succeeded. Threading: every method is safe from any thread.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "targets/target.h"

namespace webhooker {

class DeliveryMetrics final : public AttemptObserver {
 public:
  // Every type's word, then "unknown".
  static constexpr auto kTypeLabels = [] {
    std::array<std::string_view, std::size(kTargetTypes) + 1> out{};
    for (size_t i = 0; i < std::size(kTargetTypes); ++i) out[i] = targetTypeWord(kTargetTypes[i]);
    out.back() = "unknown";
    return out;
  }();
  // Dead-letter reasons besides http_<code> (a 3xx or 4xx status, created
  // when first seen); anything else is counted as "other".
  static constexpr std::array<std::string_view, 8> kReasons = {
      "max_attempts", "blocked_destination", "invalid_config", "target_deleted",
      "transform_failed", "tls_failed", "auth_failed", "other"};

  explicit DeliveryMetrics(prometheus::Registry& registry);

  void attempted(TargetType targetType, std::chrono::milliseconds duration) override;
  void outcome(std::optional<TargetType> targetType, DeliveryStatus status,
               std::optional<FailureReason> failureReason) override;

  // Set by the sampler from row counts, per label of kTypeLabels (any other
  // label counts as "unknown").
  void setBacklog(std::string_view typeLabel, double pending, double retrying);
  // Set by the sampler: how long the oldest delivery that is due and not
  // delivered has waited, per label (0: none).
  void setOldestPendingAge(std::string_view typeLabel, double seconds);
  // Recounted from the breaker registry on every state change: open
  // breakers per target type; types not in the map are set to 0.
  void setBreakersOpen(const std::map<TargetType, int>& openByType);

  // The type's word; no type (nullopt) is "unknown".
  static std::string_view typeLabel(std::optional<TargetType> targetType);
  // http_404 and the reasons above as they are; anything else "other".
  static std::string reasonLabel(std::string_view failureReason);

 private:
  struct PerType {
    prometheus::Counter* attempts;
    prometheus::Counter* succeeded;
    prometheus::Counter* failed;
    prometheus::Counter* retries;
    prometheus::Histogram* duration;
    prometheus::Gauge* pending;
    prometheus::Gauge* retrying;
    prometheus::Gauge* breakersOpen;
    prometheus::Gauge* oldestPendingAge;
  };
  PerType& series(std::string_view typeLabel);

  prometheus::Family<prometheus::Counter>& deadLetters_;
  std::map<std::string, PerType, std::less<>> byType_;  // fixed after construction
};

}  // namespace webhooker
