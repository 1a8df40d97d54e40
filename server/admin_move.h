// MoveApi: the node side of `webhooker cluster move` (docs/scaling.md,
// *Moving a webhook*), below /api/v1/webhooks/{id}/move/. The command calls
// the source and the target in this order; each step can be repeated, so a
// move that stopped half-way is resumed by running the command again.
//
// On the source:
//   GET  events?after_event=N[&changed_since=T]
//        one piece of the events DB (storage/webhook_transfer.h), as
//        application/vnd.sqlite3; the cursor's next values in X-Transfer-*
//   POST out {"to": "b"}   stop taking the webhook's events (503 with
//        Retry-After, which senders and HAProxy's clients retry), stop its
//        deliveries and wait for its attempts in flight to be recorded
//   POST back              undo `out` (a move given up before the target
//        took over)
//   GET  config            the webhook's rows of the main DB, secrets
//        included: only while it is moving out, for the target
//   POST finish            once the target took over: deletes the webhook
//        and its events DB (the admin DELETE is refused while it moves)
// On the target:
//   PUT  events            merge a piece into the incoming copy (or, once
//        it took over, into its events DB)
//   POST in                take over: the rows of `config` in one
//        transaction, the incoming copy becomes the events DB (also where
//        the webhook was moved out of earlier: EventsDbPool::install), its
//        waiting deliveries go to the engine
//   DELETE in              drop an incoming copy (a move given up)
//
// Errors in the API's shape; "conflict" (409) when the webhook is not in the
// state the step needs, and nothing is changed then.
// Threading: handlers run on the HTTP server's worker pool.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "engine/dispatcher.h"
#include "server/http_message.h"
#include "server/move_fence.h"
#include "server/router.h"
#include "storage/db_options.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

namespace webhooker::server {

class MoveApi {
 public:
  // A piece carries at most this many bytes of event bodies (and one event
  // whatever its size); what a target accepts in one request.
  static constexpr size_t kPieceBodyBudget = 4 * 1024 * 1024;
  static constexpr size_t kPieceLimit = 256 * 1024 * 1024;

  // `nodeId` empty: a single node, which takes part in no move.
  MoveApi(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher, MoveFence& moveFence,
          DbOptions options, std::string nodeId);
  void registerRoutes(Router& router);

 private:
  void readEvents(const HttpRequest& req, HttpResponse& res);
  void moveOut(const HttpRequest& req, HttpResponse& res);
  void moveBack(const HttpRequest& req, HttpResponse& res);
  void config(const HttpRequest& req, HttpResponse& res);
  void finish(const HttpRequest& req, HttpResponse& res);
  void mergeEvents(const HttpRequest& req, HttpResponse& res);
  void moveIn(const HttpRequest& req, HttpResponse& res);
  void dropIncoming(const HttpRequest& req, HttpResponse& res);

  // The webhook of the path if it is moving out of this node; otherwise
  // the error is answered and nullopt returned.
  std::optional<Webhook> movingOut(const HttpRequest& req, HttpResponse& res);
  // Until the ingests that may not have seen the move are stored and the
  // webhook's attempts in flight are recorded; false on timeout.
  bool quiesce(const std::string& webhookId);
  // Tells the engine that the webhook's targets changed (moved out, back or in).
  void targetsChanged(const std::string& webhookId);
  std::filesystem::path incomingPath(const std::string& webhookId) const;
  std::filesystem::path dataDir() const;

  MainStore& store_;
  EventsDbPool& eventsDbs_;
  Dispatcher& dispatcher_;
  MoveFence& moveFence_;  // `out` starts a move with no admin write of the webhook running
  const DbOptions options_;
  const std::string nodeId_;
};

}  // namespace webhooker::server
