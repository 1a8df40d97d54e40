// IngestRoutes: what ingest needs to know about an entrypoint — the
// entrypoint and the active targets of its webhook — kept in memory, so an
// ingest reads nothing from the main DB. An entry stays valid while the main
// store's generation read before loading it has not moved: any write to the
// main DB (an admin change to a webhook, entrypoint or target) makes the
// next lookup load again. Unknown ids are not kept.
//
// Ownership: the store must outlive it. Threading: lookup() from any thread
// (the HTTP workers); routesMutex_ guards routes_.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "storage/main_store.h"
#include "routing/routing_rules.h"
#include "server/inbound_settings.h"

namespace webhooker::server {

struct IngestRoute {
  struct ActiveTarget {
    std::string id;
    TargetType type = TargetType::kHttp;
    TargetRouting routing;
  };
  Entrypoint entrypoint;
  std::vector<ActiveTarget> targets;  // active ones, oldest first
  EventTypeRule eventTypeRule;
  InboundSettings inbound;  // verification, handshake and response, read once per load
  // Routing this event runs a jq program (its type or a target's filter):
  // ingest then works it out off the event loop.
  bool runsJq = false;
  // The webhook is moving to another node, which takes its events from now.
  bool webhookMovingOut = false;
};

class IngestRoutes {
 public:
  explicit IngestRoutes(MainStore& store);

  // "not_found" for an unknown entrypoint; the store's errors otherwise.
  Result<std::shared_ptr<const IngestRoute>> lookup(const std::string& entrypointId);

 private:
  struct Entry {
    uint64_t generation = 0;
    std::shared_ptr<const IngestRoute> route;
  };

  MainStore& store_;
  std::shared_mutex routesMutex_;  // guards routes_
  std::unordered_map<std::string, Entry> routes_;
};

}  // namespace webhooker::server
