// AdminApi: /api/v1 routes for webhooks, entrypoints, targets, the delivery
// history and redrive.
//
// Authentication happens before routing (HttpServer); handlers assume an
// authorised caller. Every handler validates the whole request before it
// writes anything, answers errors as {"error": {"code", "message"}} and
// never shows a target secret (configs come back redacted). A write to a
// webhook that is moving out of this node (its configuration, a redrive,
// its deletion) is refused with 409 webhook_moving (server/move_fence.h).
// Threading: handlers run concurrently on the HTTP server's worker pool.
#pragma once

#include "server/http_message.h"
#include "server/router.h"
#include <nlohmann/json.hpp>

#include "engine/dispatcher.h"
#include "engine/operational_events.h"
#include "server/move_fence.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "base/random.h"
#include "targets/circuit_breaker.h"
#include "targets/target.h"
#include "routing/routing_evaluator.h"
#include "net/ssrf_guard.h"

namespace webhooker::server {

class AdminApi {
 public:
  // `operationalEvents` may be null: no operational webhook can be set;
  // `attempts` too: a pull target's acks and nacks are counted nowhere.
  AdminApi(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
           const SsrfGuard& guard, CircuitBreakers& breakers, MoveFence& moveFence,
           RoutingEvaluator* routing, OperationalEvents* operationalEvents,
           AttemptObserver* attempts = nullptr);
  void registerRoutes(Router& router);

 private:
  // admin_webhooks.cpp
  void listWebhooks(const HttpRequest& req, HttpResponse& res);
  void createWebhook(const HttpRequest& req, HttpResponse& res);
  void getWebhook(const HttpRequest& req, HttpResponse& res);
  void updateWebhook(const HttpRequest& req, HttpResponse& res);
  void deleteWebhook(const HttpRequest& req, HttpResponse& res);
  void listEntrypoints(const HttpRequest& req, HttpResponse& res);
  void createEntrypoint(const HttpRequest& req, HttpResponse& res);
  void updateEntrypoint(const HttpRequest& req, HttpResponse& res);
  void deleteEntrypoint(const HttpRequest& req, HttpResponse& res);
  // The webhook with its entrypoints, as every webhook response shows it.
  Result<nlohmann::json> webhookView(const Webhook& webhook);

  // admin_targets.cpp
  void listTargets(const HttpRequest& req, HttpResponse& res);
  void createTarget(const HttpRequest& req, HttpResponse& res);
  void getTarget(const HttpRequest& req, HttpResponse& res);
  void updateTarget(const HttpRequest& req, HttpResponse& res);
  void deleteTarget(const HttpRequest& req, HttpResponse& res);

  // --- Routing (admin_routing.cpp) ---
  // POST .../targets/{id}/preview {"event_id"}: what the target's routing
  // does with a stored event, without delivering anything.
  void previewTarget(const HttpRequest& req, HttpResponse& res);
  // The programs of a rule compile ("jq_unavailable" without an evaluator).
  Result<void> checkPrograms(const EventTypeRule& rule);
  Result<void> checkPrograms(const TargetRouting& routing);

  // --- History (admin_history.cpp): read-only, newest first, paged ---
  void listEvents(const HttpRequest& req, HttpResponse& res);
  void getEvent(const HttpRequest& req, HttpResponse& res);
  void listDeliveries(const HttpRequest& req, HttpResponse& res);

  // --- Redrive (admin_redrive.cpp): one transaction per request, then the
  // reset or new deliveries go to the engine's lanes like fresh ones ---
  void retryDelivery(const HttpRequest& req, HttpResponse& res);
  void redeliverEvent(const HttpRequest& req, HttpResponse& res);
  void replay(const HttpRequest& req, HttpResponse& res);

  // --- Pull targets (admin_pull.cpp): POST .../targets/{id}/lease hands
  // waiting deliveries out under a lease token; ack, nack and extend act on
  // the ids a lease holds, answering each id ---
  void leaseDeliveries(const HttpRequest& req, HttpResponse& res);
  void ackDeliveries(const HttpRequest& req, HttpResponse& res);
  void nackDeliveries(const HttpRequest& req, HttpResponse& res);
  void extendLease(const HttpRequest& req, HttpResponse& res);
  void settle(const HttpRequest& req, HttpResponse& res, LeaseAction action);
  // The path's target if it is a live pull target; nullopt after a 404 or
  // a 409 not_pull_target.
  std::optional<TargetRecord> pullTarget(const HttpRequest& req, HttpResponse& res,
                                         const std::string& webhookId);
  // A leased delivery whose transform fails for good ends transform_failed;
  // false if that could not be written.
  bool failTransform(EventsDb& db, TargetType targetType, const LeasedDelivery& d,
                     const std::string& error);

  // --- Operational webhook (admin_operational_webhook.cpp) ---
  void getOperationalWebhook(const HttpRequest& req, HttpResponse& res);
  void putOperationalWebhook(const HttpRequest& req, HttpResponse& res);
  void deleteOperationalWebhook(const HttpRequest& req, HttpResponse& res);
  // What the operational webhook must stay, whatever route writes to it:
  // no entrypoint (nobody posts into it), targets that sign, each one (the
  // one PUT made and any added or changed later). The errors:
  // "operational_webhook" (409), "invalid_config".
  Result<void> refuseOperationalEntrypoint(const std::string& webhookId) const;
  Result<void> checkOperationalTarget(const TargetRecord& target) const;

  // --- Path references (admin_api.cpp) ---
  // The webhook the path names (matches[1]) or its target or entrypoint
  // (matches[2]): an
  // id, or a name when the segment is not shaped like an id (so an id always
  // wins). nullopt after a 404 (nothing has that id or name) or a 409
  // ambiguous_name whose "candidates" are the ids sharing the name.
  std::optional<std::string> webhookRef(const HttpRequest& req, HttpResponse& res);
  std::optional<std::string> targetRef(const HttpRequest& req, HttpResponse& res,
                                       const std::string& webhookId);
  std::optional<std::string> entrypointRef(const HttpRequest& req, HttpResponse& res,
                                           const std::string& webhookId);

  // --- Statistics (admin_stats.cpp): counts, breakers, the last 24 hours ---
  void webhookStats(const HttpRequest& req, HttpResponse& res);

  MainStore& store_;
  EventsDbPool& eventsDbs_;
  Dispatcher& dispatcher_;  // told about target changes, handed redriven deliveries
  const SsrfGuard& guard_;  // refuses literal internal addresses in target URLs
  CircuitBreakers& breakers_;  // shown by the API
  MoveFence& moveFence_;  // around every write to one webhook
  RoutingEvaluator* const routing_;  // null: programs cannot be saved
  OperationalEvents* operationalEvents_;  // told about operator enables and setting changes
  AttemptObserver* const attempts_;  // a pull target's acks and nacks (metrics); may be null
  SystemRandom random_;  // a nack's backoff jitter
};

// The id captured by the route at `index`, if it is a uuid; otherwise a 404
// is sent and nullopt returned.
std::optional<std::string> pathId(const HttpRequest& req, HttpResponse& res,
                                  size_t index, const char* what);

// The webhook the path names (matches[1]): an id, or a name when the
// segment is not shaped like an id. nullopt after a 404 or a 409
// ambiguous_name (AdminApi::webhookRef).
std::optional<std::string> webhookRefOf(MainStore& store, const HttpRequest& req,
                                        HttpResponse& res);

// Deletes the webhook's rows, then its events DB (a file left behind is
// only disk space: logged, not an error).
Result<void> deleteWebhookWithEvents(MainStore& store, EventsDbPool& eventsDbs,
                                     const std::string& webhookId);

}  // namespace webhooker::server
