// Placement: what one node owns, as GET /api/v1/placement shows it and a
// cluster's router (HAProxy's map) is built from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace webhooker {

struct OwnedWebhook {
  std::string webhookId;
  std::vector<std::string> entrypointIds;  // oldest first
  std::optional<std::string> movingTo;     // moving out to that node
};

struct Placement {
  // Moves whenever a webhook or an entrypoint is added or removed, or a
  // webhook starts or stops moving out; never goes back, also across restarts.
  int64_t version = 0;
  std::vector<OwnedWebhook> webhooks;  // oldest first
};

}  // namespace webhooker
