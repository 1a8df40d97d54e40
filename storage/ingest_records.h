// What EventsDb::ingest() stores and answers: the inbound request, and the
// event and deliveries it became. Plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "storage/event_payload.h"

namespace webhooker {

struct InboundEvent {
  std::string entrypointId;
  std::string method;
  std::string path;
  std::string query;
  // Stored in this order, names as sent. Ingest hands them over in name order
  // (cpp-httplib sorts them), repeated names in arrival order.
  HeaderList headers;
  std::string contentType;
  std::string body;  // raw bytes
  std::string remoteAddr;
  std::optional<std::string> idempotencyKey;
  std::optional<std::string> eventType;  // from the entrypoint's rule; none found: null
};

struct StoredDelivery {
  std::string id;
  std::string targetId;
};

struct IngestOutcome {
  std::string eventId;
  std::string receivedAt;
  std::vector<StoredDelivery> deliveries;
  bool duplicate = false;  // an earlier event had the same idempotency key
};

}  // namespace webhooker
