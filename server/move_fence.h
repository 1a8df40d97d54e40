// MoveFence: an admin write to a webhook (its configuration or a redrive)
// and the start of that webhook's move never overlap. The write either ends
// before the source stops, and the move copies what it wrote, or it is
// refused with 409 webhook_moving and changes nothing (docs/decisions.md,
// *Cluster*). A write that had read "not moving" and committed after the
// move read the configuration would be lost with the source's copy.
//
// Ingest is the other writer. It reads whether the webhook is moving from
// its cached route, and with jq routing its event then waits for a routing
// thread before it is written: a move that only waited a while could copy
// the events DB before an event it had let in was stored. So an ingest holds
// a pass from before it reads its route until its event is committed or
// refused, and a move, once it is marked, waits for every pass handed out
// before; later ingests read the mark and answer 503 webhook_moving.
//
// Threading: any thread. Writes to one webhook run side by side; a move's
// start waits for the ones running (held back meanwhile: one UPDATE).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "base/open_tickets.h"
#include "base/result.h"
#include "server/http_message.h"
#include "storage/main_store.h"

namespace webhooker::server {

class MoveFence {
 public:
  explicit MoveFence(MainStore& store) : store_(store) {}

  // Runs `write` unless the webhook is moving out of this node; then
  // answers 409 webhook_moving instead. An unknown webhook runs `write`,
  // which answers its own 404.
  void guard(const std::string& webhookId, HttpResponse& res, const std::function<void()>& write)
      EXCLUDES(mutex_);

  // Marks the webhook as moving out to `node` once none of its writes runs.
  Result<void> startMove(const std::string& webhookId, const std::string& node) EXCLUDES(mutex_);

  // Held by one ingest (see above); dropping it gives it back.
  using IngestPass = OpenTickets::Ticket;
  IngestPass admitIngest() { return ingestPasses_.open(); }
  // True once every pass handed out before the call is given back; false
  // if some are still held at `deadline`.
  bool waitForIngests(std::chrono::steady_clock::time_point deadline) {
    return ingestPasses_.waitForEarlier(deadline);
  }

 private:
  MainStore& store_;
  Mutex mutex_;
  std::condition_variable_any writeEnded_;
  // Guarded writes running now, per webhook (absent: none).
  std::unordered_map<std::string, int> writesRunning_ GUARDED_BY(mutex_);
  OpenTickets ingestPasses_;
};

}  // namespace webhooker::server
