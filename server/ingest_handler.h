// IngestHandler: POST /hooks/<entrypoint-uuid>.
//
// Looks up the entrypoint (cached, IngestRoutes), stores the event and one pending delivery per
// active target in one transaction of the webhook's events DB, answers 200
// only after that commit, then hands the deliveries to the Dispatcher.
// Never answers 200 for an event that was not stored.
//
// Threading: handle() runs on the HTTP server's worker threads, many at
// once; the stores it uses are thread-safe. setAccepting() from any thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>

#include "engine/dispatcher.h"
#include "storage/events_db_pool.h"
#include "server/ingest_routes.h"
#include "server/server_metrics.h"
#include "storage/main_store.h"

namespace webhooker::server {

struct IngestOptions {
  size_t bodyLimit = 1024 * 1024;
  std::chrono::milliseconds idempotencyWindow = std::chrono::hours(24);
};

class IngestHandler {
 public:
  IngestHandler(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                ServerMetrics& metrics, IngestOptions options);

  // Expects req.matches[1] to be the entrypoint id from the route, and the
  // body already read (and held to the limit) by the caller.
  void handle(const httplib::Request& req, std::string body, httplib::Response& res);

  // While false, every ingest answers 503 (shutting down).
  void setAccepting(bool accepting) { accepting_ = accepting; }
  bool accepting() const { return accepting_; }

 private:
  IngestRoutes routes_;
  EventsDbPool& eventsDbs_;
  Dispatcher& dispatcher_;
  ServerMetrics& metrics_;
  const IngestOptions options_;
  std::atomic<bool> accepting_{true};
};

}  // namespace webhooker::server
