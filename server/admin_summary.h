// NodeSummaryApi: GET /api/v1/summary, the node at a glance (what
// `webhooker status` prints):
//
//   {"sampled_at": "<time>", "sample_age_seconds": 12,
//    "webhooks": 3, "targets": 5, "targets_disabled": 1, "breakers_open": 1,
//    "backlog": 7, "pending": 4, "retrying": 3,
//    "oldest_pending_age_seconds": 42,
//    "oldest_pending": {"webhook_id", "webhook_name", "target_id",
//                       "target_name"} | null}
//
// Webhooks, targets and breakers are read now (the main DB, the breakers in
// memory); the deliveries are the backlog sampler's latest pass
// (engine/backlog_sampler.h), as of sampled_at, so the answer opens no
// events file whatever the number of webhooks. 503 "unavailable" before the
// first pass (or on a server run without a sampler). Authenticated like the
// rest of /api/v1, admin only (HttpServer).
// Threading: the handler runs on the HTTP server's worker pool.
#pragma once

#include "engine/backlog_sampler.h"
#include "server/http_message.h"
#include "server/router.h"
#include "storage/main_store.h"
#include "targets/circuit_breaker.h"

namespace webhooker::server {

class NodeSummaryApi {
 public:
  // `sampler` may be null: the route answers 503.
  NodeSummaryApi(MainStore& store, const CircuitBreakers& breakers, const BacklogSampler* sampler);
  void registerRoutes(Router& router);

 private:
  void summary(const HttpRequest& req, HttpResponse& res);

  MainStore& store_;
  const CircuitBreakers& breakers_;
  const BacklogSampler* sampler_;
};

}  // namespace webhooker::server
