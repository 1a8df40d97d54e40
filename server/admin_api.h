// AdminApi: /api/v1 routes for webhooks, entrypoints, targets, the delivery
// history and redrive.
//
// Authentication happens before routing (HttpServer); handlers assume an
// authorised caller. Every handler validates the whole request before it
// writes anything, answers errors as {"error": {"code", "message"}} and
// never shows a target secret (configs come back redacted).
// Threading: handlers run concurrently on the HTTP worker threads.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "engine/dispatcher.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "targets/circuit_breaker.h"
#include "targets/ssrf_guard.h"

namespace webhooker::server {

class AdminApi {
 public:
  AdminApi(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
           const SsrfGuard& guard, const CircuitBreakers& breakers);
  void registerRoutes(httplib::Server& http);

 private:
  // admin_webhooks.cpp
  void listWebhooks(const httplib::Request& req, httplib::Response& res);
  void createWebhook(const httplib::Request& req, httplib::Response& res);
  void getWebhook(const httplib::Request& req, httplib::Response& res);
  void updateWebhook(const httplib::Request& req, httplib::Response& res);
  void deleteWebhook(const httplib::Request& req, httplib::Response& res);
  void listEntrypoints(const httplib::Request& req, httplib::Response& res);
  void createEntrypoint(const httplib::Request& req, httplib::Response& res);
  void updateEntrypoint(const httplib::Request& req, httplib::Response& res);
  void deleteEntrypoint(const httplib::Request& req, httplib::Response& res);
  // The webhook with its entrypoints, as every webhook response shows it.
  Result<nlohmann::json> webhookView(const Webhook& webhook);

  // admin_targets.cpp
  void listTargets(const httplib::Request& req, httplib::Response& res);
  void createTarget(const httplib::Request& req, httplib::Response& res);
  void getTarget(const httplib::Request& req, httplib::Response& res);
  void updateTarget(const httplib::Request& req, httplib::Response& res);
  void deleteTarget(const httplib::Request& req, httplib::Response& res);

  // --- History (admin_history.cpp): read-only, newest first, paged ---
  void listEvents(const httplib::Request& req, httplib::Response& res);
  void getEvent(const httplib::Request& req, httplib::Response& res);
  void listDeliveries(const httplib::Request& req, httplib::Response& res);

  // --- Redrive (admin_redrive.cpp): one transaction per request, then the
  // reset or new deliveries go to the engine's lanes like fresh ones ---
  void retryDelivery(const httplib::Request& req, httplib::Response& res);
  void redeliverEvent(const httplib::Request& req, httplib::Response& res);
  void replay(const httplib::Request& req, httplib::Response& res);

  // --- Statistics (admin_stats.cpp): counts, breakers, the last 24 hours ---
  void webhookStats(const httplib::Request& req, httplib::Response& res);

  MainStore& store_;
  EventsDbPool& eventsDbs_;
  Dispatcher& dispatcher_;  // told about target changes, handed redriven deliveries
  const SsrfGuard& guard_;  // refuses literal internal addresses in target URLs
  const CircuitBreakers& breakers_;
};

// The id captured by the route at `index`, if it is a uuid; otherwise a 404
// is sent and nullopt returned.
std::optional<std::string> pathId(const httplib::Request& req, httplib::Response& res,
                                  size_t index, const char* what);

}  // namespace webhooker::server
