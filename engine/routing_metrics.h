// RoutingMetrics: the routing side of /metrics, on a prometheus-cpp registry.
//
//   webhooker_events_filtered_total{target_type}       event x target pairs
//       that got no delivery because the target's filter did not match
//   webhooker_deliveries_throttled_total{target_type}  times a delivery had
//       to wait in its lane for its target's rate limit
//   webhooker_routing_program_failures_total{stage, reason}  jq programs that
//       failed: stage event_type | filter | transform, reason jq_error |
//       jq_timeout | jq_memory | jq_unavailable
//
// Target types as DeliveryMetrics labels them. All series exist, at 0, from
// construction. Threading: every method from any thread.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <array>
#include <string_view>

#include "storage/target_type.h"

namespace webhooker {

enum class RoutingStage { kEventType, kFilter, kTransform };

class RoutingMetrics {
 public:
  explicit RoutingMetrics(prometheus::Registry& registry);

  void filtered(TargetType targetType);
  void throttled(TargetType targetType);
  // `reason`: the sandbox's error code (jq_sandbox.h).
  void programFailed(RoutingStage stage, std::string_view reason);

 private:
  prometheus::Family<prometheus::Counter>& filtered_;
  prometheus::Family<prometheus::Counter>& throttled_;
  prometheus::Family<prometheus::Counter>& failures_;
};

}  // namespace webhooker
