// IngestHandler: POST /hooks/<entrypoint-uuid>.
//
// Looks up the entrypoint (cached, IngestRoutes), works out the event's type
// and the targets whose filters it passes (IngestRouting), stores the event
// and one pending delivery per such target in one transaction of the webhook's events DB, answers 200
// only after that commit, then hands the deliveries to the Dispatcher.
// Never answers 200 for an event that was not stored.
//
// Threading: handle() runs on the HTTP server's event loop and never waits
// for a commit: the request is parked in the events DB's group commit and
// answered from a commit thread (EventsDb::ingestAsync). It reads the
// main DB only when an entrypoint is not cached, and never opens an events
// DB: an event whose webhook's file the pool does not hold open (opening
// it reads its schema; a webhook's first event makes and flushes it), like
// an event whose routing runs jq, is routed and queued for its commit from
// IngestRouting's threads instead.
// setAccepting() from any thread.
#pragma once


#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>

#include "base/mutex.h"
#include "engine/dispatcher.h"
#include "storage/events_db_pool.h"
#include "server/http_message.h"
#include "server/ingest_routes.h"
#include "server/ingest_routing.h"
#include "server/move_fence.h"
#include "server/server_metrics.h"
#include "storage/main_store.h"

namespace webhooker::server {

struct IngestOptions {
  size_t bodyLimit = 1024 * 1024;
  std::chrono::milliseconds idempotencyWindow = std::chrono::hours(24);
  // Events waiting for a routing thread at most; beyond, ingest answers 503.
  size_t maxRoutingQueue = 1024;
  int routingThreads = 2;
};

// What routing needs (both optional: without an evaluator, jq rules find no
// type and jq filters match nothing); they must outlive the handler.
struct IngestRoutingParts {
  RoutingEvaluator* evaluator = nullptr;
  RoutingMetrics* metrics = nullptr;
};

class IngestHandler {
 public:
  // `moveFence` hands each ingest its pass (MoveFence::admitIngest).
  IngestHandler(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                ServerMetrics& metrics, MoveFence& moveFence, IngestOptions options,
                IngestRoutingParts routing = {});
  // Waits until every parked request has had its answer: their commits
  // finish on their own, within one group's time.
  ~IngestHandler();
  IngestHandler(const IngestHandler&) = delete;
  IngestHandler& operator=(const IngestHandler&) = delete;

  // Expects req.matches[1] to be the entrypoint id from the route, and the
  // body already read (and held to the limit) by the caller; takes the body.
  // Answers through `respond` once: at once for a refusal, after the commit
  // otherwise.
  void handle(HttpRequest& req, Respond respond);
  // GET /hooks/<id>: a provider's handshake (Meta, X, Dropbox), answered
  // at once, storing nothing; 405 for an entrypoint without one.
  void handleGet(HttpRequest& req, Respond respond);

  // While false, every ingest answers 503 (shutting down).
  void setAccepting(bool accepting) { accepting_ = accepting; }
  bool accepting() const { return accepting_; }

 private:
  // Routes the event and queues its write; the request is parked (counted
  // in parked_) from before the call until its answer, and holds `pass`
  // until then.
  void routeAndStore(std::shared_ptr<const IngestRoute> route, std::shared_ptr<EventsDb> db,
                     InboundEvent event, Respond respond, MoveFence::IngestPass pass);
  // On a commit thread, after the commit: the answer, then the deliveries.
  void finish(const IngestRoute& route, const RoutedEvent& routed, Result<IngestOutcome> stored,
              InboundEvent& event, const Respond& respond);
  // The route of an entrypoint that takes requests now; nullptr after
  // answering why not (404, 410, 503).
  std::shared_ptr<const IngestRoute> admit(const HttpRequest& req, const Respond& respond);
  void unpark();
  // The webhook's events DB from the pool, opened or made; null after
  // answering why not (404 for a webhook deleted meanwhile, 503).
  std::shared_ptr<EventsDb> openOrRefuse(const std::string& webhookId, const Respond& respond);
  // 503 routing_busy with Retry-After: the event was not stored, send it again.
  static HttpResponse routingBusy();

  IngestRoutes routes_;
  EventsDbPool& eventsDbs_;
  Dispatcher& dispatcher_;
  ServerMetrics& metrics_;
  MoveFence& moveFence_;
  const IngestOptions options_;
  std::atomic<bool> accepting_{true};
  Mutex parkedMutex_;
  std::condition_variable_any parkedDone_;
  size_t parked_ GUARDED_BY(parkedMutex_) = 0;  // requests waiting for their commit
  IngestRouting routing_;  // after parked_: its queued jobs run before it goes
};

}  // namespace webhooker::server
