// IngestRouting: what an inbound event becomes before it is stored — its
// type (the entrypoint's rule) and the targets whose filters it passes
// (targets/routing_rules.h). A filter that fails (a jq error, its time or
// memory budget) counts as no match; it is logged and counted.
//
// Routing that runs a jq program waits for a worker process, up to the jq
// time budget: such events are routed on this class's own threads (post()),
// never on the event loop. Header, pointer and event-type rules are cheap
// and run where ingest is.
//
// Ownership: evaluator and metrics (both optional) must outlive it.
// Threading: route() from any thread; post() from any thread, its jobs run
// on `threads` threads of its own; queueMutex_ guards the queue.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "engine/routing_metrics.h"
#include "server/ingest_routes.h"
#include "storage/ingest_records.h"
#include "targets/routing_evaluator.h"

namespace webhooker::server {

struct RoutedEvent {
  std::optional<std::string> eventType;
  std::vector<std::string> targetIds;     // the targets it goes to, in route order
  std::vector<std::string> skippedTypes;  // the type of each target it does not
};

class IngestRouting {
 public:
  IngestRouting(RoutingEvaluator* evaluator, RoutingMetrics* metrics, int threads,
                size_t maxQueued);
  ~IngestRouting();  // runs the jobs still queued, then joins
  IngestRouting(const IngestRouting&) = delete;
  IngestRouting& operator=(const IngestRouting&) = delete;

  RoutedEvent route(const IngestRoute& route, const InboundEvent& event);
  // Counts the skipped pairs of an event that was stored.
  void countSkipped(const RoutedEvent& routed);

  // Runs `job` on a routing thread; false when maxQueued jobs already wait.
  bool post(std::function<void()> job);

 private:
  void runJobs(std::stop_token stop);

  RoutingEvaluator* const evaluator_;
  RoutingMetrics* const metrics_;
  const size_t maxQueued_;
  Mutex queueMutex_;
  std::condition_variable_any queued_;
  std::deque<std::function<void()>> jobs_ GUARDED_BY(queueMutex_);
  std::vector<std::jthread> threads_;
};

}  // namespace webhooker::server
