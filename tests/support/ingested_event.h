// ingestEvent: one event stored straight through EventsDb for `targets` new
// target ids, with the ids of the event and its deliveries, for the tests of
// what later happens to stored events (retention, masking).
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/uuid.h"
#include "storage/events_db.h"

namespace webhooker::testing {

struct IngestedEvent {
  std::string eventId;
  std::vector<std::string> deliveryIds;
};

inline IngestedEvent ingestEvent(EventsDb& db, const std::string& body, int targets = 1,
                               const std::string& contentType = "application/json") {
  InboundEvent e;
  e.entrypointId = newUuid();
  e.method = "POST";
  e.path = "/hooks/" + e.entrypointId;
  e.contentType = contentType;
  e.body = body;
  std::vector<std::string> targetIds;
  for (int i = 0; i < targets; ++i) targetIds.push_back(newUuid());
  auto r = db.ingest(e, targetIds, std::chrono::hours(24));
  REQUIRE(r.ok());
  IngestedEvent s{r->eventId, {}};
  for (const auto& d : r->deliveries) s.deliveryIds.push_back(d.id);
  return s;
}

}  // namespace webhooker::testing
