// PlacementApi: GET /api/v1/placement, what this node owns, for a cluster's
// router (`webhooker cluster sync` builds HAProxy's map from every node's
// answer):
//
//   {"node_id": "a" | null, "version": 7,
//    "webhooks": [{"id": "<uuid>", "entrypoints": ["<uuid>", ...],
//                  "moving_to": null | "b"}, ...]}
//
// "moving_to" names the node a webhook is moving to (server/admin_move.h).
// "version" moves whenever a webhook or an entrypoint is added or removed,
// or a webhook starts or stops moving out
// (storage/placement_records.h); node_id is null on a daemon started
// without --node-id. Authenticated like the rest of /api/v1 (HttpServer).
// Threading: the handler runs on the HTTP server's worker pool.
#pragma once

#include <string>

#include "server/http_message.h"
#include "server/router.h"
#include "storage/main_store.h"

namespace webhooker::server {

class PlacementApi {
 public:
  // `nodeId` empty: a single node.
  PlacementApi(MainStore& store, std::string nodeId);
  void registerRoutes(Router& router);

 private:
  void placement(const HttpRequest& req, HttpResponse& res);

  MainStore& store_;
  const std::string nodeId_;
};

}  // namespace webhooker::server
