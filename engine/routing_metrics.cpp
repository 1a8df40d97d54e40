#include "engine/routing_metrics.h"

#include <algorithm>
#include <string>

#include "engine/delivery_metrics.h"
#include "routing/jq_sandbox.h"

namespace webhooker {

namespace {

constexpr std::array<std::string_view, 3> kStages = {"event_type", "filter", "transform"};
constexpr std::array<std::string_view, 5> kReasons = {error_code::kJqError, error_code::kJqTimeout,
                                                      error_code::kJqMemory, error_code::kJqBusy,
                                                      error_code::kJqUnavailable};

prometheus::Labels typeLabels(std::string_view typeLabel) {
  return {{"target_type", std::string(typeLabel)}};
}

}  // namespace

RoutingMetrics::RoutingMetrics(prometheus::Registry& registry)
    : filtered_(prometheus::BuildCounter()
                    .Name("webhooker_events_filtered_total")
                    .Help("Event and target pairs left without a delivery by the target's filter")
                    .Register(registry)),
      throttled_(prometheus::BuildCounter()
                     .Name("webhooker_deliveries_throttled_total")
                     .Help("Times a delivery waited in its lane for the target's rate limit")
                     .Register(registry)),
      failures_(prometheus::BuildCounter()
                    .Name("webhooker_routing_program_failures_total")
                    .Help("Routing jq programs that failed, timed out or ran out of memory")
                    .Register(registry)) {
  for (std::string_view type : DeliveryMetrics::kTypeLabels) {
    filtered_.Add(typeLabels(type));
    throttled_.Add(typeLabels(type));
  }
  for (std::string_view stage : kStages)
    for (std::string_view reason : kReasons)
      failures_.Add({{"stage", std::string(stage)}, {"reason", std::string(reason)}});
}

void RoutingMetrics::filtered(TargetType targetType) {
  filtered_.Add(typeLabels(targetTypeWord(targetType))).Increment();
}

void RoutingMetrics::throttled(TargetType targetType) {
  throttled_.Add(typeLabels(targetTypeWord(targetType))).Increment();
}

void RoutingMetrics::programFailed(RoutingStage stage, std::string_view reason) {
  const auto known = std::find(kReasons.begin(), kReasons.end(), reason) != kReasons.end();
  failures_
      .Add({{"stage", std::string(kStages[static_cast<size_t>(stage)])},
            {"reason", std::string(known ? reason : error_code::kJqError)}})
      .Increment();
}

}  // namespace webhooker
