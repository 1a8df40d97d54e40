#include "server/admin_placement.h"

#include <nlohmann/json.hpp>

#include "server/json_io.h"

namespace webhooker::server {

PlacementApi::PlacementApi(MainStore& store, std::string nodeId)
    : store_(store), nodeId_(std::move(nodeId)) {}

void PlacementApi::registerRoutes(Router& router) {
  router.add("GET", "/api/v1/placement",
             [this](const HttpRequest& req, HttpResponse& res) { placement(req, res); });
}

void PlacementApi::placement(const HttpRequest&, HttpResponse& res) {
  auto owned = store_.placement();
  if (!owned) return sendError(res, owned.error());
  nlohmann::json webhooks = nlohmann::json::array();
  for (const OwnedWebhook& w : owned->webhooks)
    webhooks.push_back({{"id", w.webhookId},
                        {"entrypoints", w.entrypointIds},
                        {"moving_to", w.movingTo ? nlohmann::json(*w.movingTo) : nlohmann::json()}});
  sendJson(res, 200,
           {{"node_id", nodeId_.empty() ? nlohmann::json(nullptr) : nlohmann::json(nodeId_)},
            {"version", owned->version},
            {"webhooks", std::move(webhooks)}});
}

}  // namespace webhooker::server
