#include "server/ingest_routes.h"

#include <mutex>

namespace webhooker::server {

IngestRoutes::IngestRoutes(MainStore& store) : store_(store) {}

Result<std::shared_ptr<const IngestRoute>> IngestRoutes::lookup(const std::string& entrypointId) {
  // Read before loading: a write that lands while we load moves it past
  // what we store, so the next lookup loads again.
  const uint64_t generation = store_.generation();
  {
    std::shared_lock lock(routesMutex_);
    if (auto it = routes_.find(entrypointId);
        it != routes_.end() && it->second.generation == generation)
      return it->second.route;
  }
  auto entrypoint = store_.getEntrypoint(entrypointId);
  if (!entrypoint) {
    if (entrypoint.error().isNotFound()) {
      std::unique_lock lock(routesMutex_);
      routes_.erase(entrypointId);
    }
    return entrypoint.error();
  }
  auto targets = store_.listTargets(entrypoint->webhookId);
  if (!targets) return targets.error();
  auto webhook = store_.getWebhook(entrypoint->webhookId);
  if (!webhook) return webhook.error();
  auto route = std::make_shared<IngestRoute>();
  route->entrypoint = std::move(entrypoint.value());
  route->eventTypeRule = storedEventTypeRule(route->entrypoint.eventTypeRule);
  route->inbound = inboundSettingsOf(route->entrypoint);
  route->runsJq = route->eventTypeRule.source == EventTypeSource::kJq;
  route->webhookMovingOut = webhook->movingTo.has_value();
  for (const TargetRecord& t : targets.value()) {
    if (!t.active) continue;  // inactive: no deliveries while off
    route->targets.push_back({t.id, t.type, storedTargetRouting(t.routingJson)});
    route->runsJq = route->runsJq || !route->targets.back().routing.filterJq.empty();
  }

  std::unique_lock lock(routesMutex_);
  Entry& entry = routes_[entrypointId];
  if (!entry.route || entry.generation <= generation) entry = {generation, route};
  return std::shared_ptr<const IngestRoute>(std::move(route));
}

}  // namespace webhooker::server
