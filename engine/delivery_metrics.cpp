#include "engine/delivery_metrics.h"

#include <algorithm>

namespace webhooker {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// 5 ms to 60 s: local targets land in the first buckets, slow receivers and
// timeouts in the last.
const prometheus::Histogram::BucketBoundaries kDurationBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

}  // namespace

DeliveryMetrics::DeliveryMetrics(prometheus::Registry& registry)
    : deadLetters_(BuildCounter()
                       .Name("webhooker_dead_letters_total")
                       .Help("Deliveries that ended failed, by target type and reason")
                       .Register(registry)) {
  auto& attempts = BuildCounter()
                       .Name("webhooker_delivery_attempts_total")
                       .Help("Delivery attempts dispatched to a target")
                       .Register(registry);
  auto& succeeded = BuildCounter()
                        .Name("webhooker_deliveries_succeeded_total")
                        .Help("Deliveries that ended delivered")
                        .Register(registry);
  auto& failed = BuildCounter()
                     .Name("webhooker_deliveries_failed_total")
                     .Help("Deliveries that ended failed (dead-lettered)")
                     .Register(registry);
  auto& retries = BuildCounter()
                      .Name("webhooker_delivery_retries_total")
                      .Help("Retries scheduled after a failed attempt")
                      .Register(registry);
  auto& duration = BuildHistogram()
                       .Name("webhooker_delivery_duration_seconds")
                       .Help("Duration of dispatched delivery attempts")
                       .Register(registry);
  auto& pending = BuildGauge()
                      .Name("webhooker_deliveries_pending")
                      .Help("Deliveries waiting for their first attempt (sampled)")
                      .Register(registry);
  auto& retrying = BuildGauge()
                       .Name("webhooker_deliveries_retrying")
                       .Help("Deliveries waiting for a retry (sampled)")
                       .Register(registry);
  auto& breakers = BuildGauge()
                      .Name("webhooker_circuit_breakers_open")
                      .Help("Circuit breakers currently open or half-open")
                      .Register(registry);
  auto& oldestPendingAge =
      BuildGauge()
          .Name("webhooker_oldest_pending_age_seconds")
          .Help("Age of the oldest delivery that is due and not delivered, of targets whose "
                "deliveries are attempted (sampled)")
          .Register(registry);
  for (std::string_view type : kTypeLabels) {
    const prometheus::Labels labels{{"target_type", std::string(type)}};
    byType_.emplace(std::string(type),
                    PerType{&attempts.Add(labels), &succeeded.Add(labels), &failed.Add(labels),
                            &retries.Add(labels), &duration.Add(labels, kDurationBuckets),
                            &pending.Add(labels), &retrying.Add(labels),
                            &breakers.Add(labels), &oldestPendingAge.Add(labels)});
    for (std::string_view reason : kReasons)
      deadLetters_.Add({{"target_type", std::string(type)}, {"reason", std::string(reason)}});
  }
}

std::string_view DeliveryMetrics::typeLabel(std::optional<TargetType> type) {
  return type ? targetTypeWord(*type) : kTypeLabels.back();
}

std::string DeliveryMetrics::reasonLabel(std::string_view reason) {
  // At most 200 http series (300-499): a bounded label domain.
  const bool httpCode = reason.size() == 8 && reason.substr(0, 5) == "http_" &&
                        (reason[5] == '3' || reason[5] == '4') &&
                        std::all_of(reason.begin() + 5, reason.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
  if (httpCode) return std::string(reason);
  auto it = std::find(kReasons.begin(), kReasons.end(), reason);
  return std::string(it == kReasons.end() ? kReasons.back() : *it);
}

DeliveryMetrics::PerType& DeliveryMetrics::series(std::string_view typeLabel) {
  auto it = byType_.find(typeLabel);
  return it == byType_.end() ? byType_.find(kTypeLabels.back())->second : it->second;
}

void DeliveryMetrics::attempted(TargetType targetType, std::chrono::milliseconds duration) {
  PerType& s = series(typeLabel(targetType));
  s.attempts->Increment();
  s.duration->Observe(static_cast<double>(duration.count()) / 1000.0);
}

void DeliveryMetrics::outcome(std::optional<TargetType> targetType, DeliveryStatus status,
                              std::optional<FailureReason> failureReason) {
  PerType& s = series(typeLabel(targetType));
  if (status == DeliveryStatus::kDelivered) {
    s.succeeded->Increment();
  } else if (status == DeliveryStatus::kRetrying) {
    s.retries->Increment();
  } else if (status == DeliveryStatus::kFailed) {
    s.failed->Increment();
    // Family::Add returns the existing series; it is thread-safe.
    deadLetters_
        .Add({{"target_type", std::string(typeLabel(targetType))},
              {"reason", reasonLabel(failureReason ? failureReasonWord(*failureReason) : "")}})
        .Increment();
  }
}

void DeliveryMetrics::setOldestPendingAge(std::string_view typeLabel, double seconds) {
  series(typeLabel).oldestPendingAge->Set(seconds);
}

void DeliveryMetrics::setBacklog(std::string_view typeLabel, double pending, double retrying) {
  PerType& s = series(typeLabel);
  s.pending->Set(pending);
  s.retrying->Set(retrying);
}

void DeliveryMetrics::setBreakersOpen(const std::map<TargetType, int>& openByType) {
  std::map<std::string_view, double> perLabel;
  for (const auto& [type, n] : openByType) perLabel[typeLabel(type)] += n;
  for (auto& [type, s] : byType_) {
    auto it = perLabel.find(type);
    s.breakersOpen->Set(it == perLabel.end() ? 0 : it->second);
  }
}

}  // namespace webhooker
