// IngestRouting: what an inbound event becomes before it is stored — its
// type (the entrypoint's rule) and the targets whose filters it passes
// (routing/routing_rules.h). A filter that fails (a jq error, its time or
// memory budget) counts as no match; it is logged and counted. A program
// that could not run (no jq worker for its webhook in time) is no verdict:
// the event is routed again later (RoutedEvent::retryLater).
//
// Routing that runs a jq program waits for a worker process, up to the jq
// time budget: such events are routed on this class's own threads (post()),
// never on the event loop; so are events whose webhook's events file must
// be opened first (IngestHandler). Each webhook has its own queue, at most a
// quarter of maxQueued, and at most half the threads; the threads take jobs
// from the webhooks in turn, so one webhook's burst or slow programs delay
// its own events, not every webhook's. Header, pointer and event-type rules
// are cheap and run where ingest is.
//
// Ownership: evaluator and metrics (both optional) must outlive it.
// Threading: route() from any thread; post() from any thread, its jobs run
// on `threads` threads of its own; queueMutex_ guards the queues.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "engine/routing_metrics.h"
#include "server/ingest_routes.h"
#include "storage/ingest_records.h"
#include "routing/routing_evaluator.h"

namespace webhooker::server {

struct RoutedEvent {
  std::optional<std::string> eventType;
  std::vector<std::string> targetIds;     // the targets it goes to, in route order
  std::vector<TargetType> skippedTypes;  // the type of each target it does not
  // Set when a program could not run (jq_error::isRetryable): nothing above
  // is a verdict, the event must not be stored as routed.
  std::optional<Error> retryLater;
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

  // Runs `job` on a routing thread in `webhookId`'s turn; false when
  // maxQueued jobs already wait, or that webhook's share of them.
  bool post(const std::string& webhookId, std::function<void()> job);

 private:
  struct WebhookJobs {
    std::deque<std::function<void()>> queued;
    int running = 0;
  };

  void runJobs(std::stop_token stop);
  // The next job in turn, moved out of its queue; empty when none may run.
  std::function<void()> nextJobLocked(std::string& webhookId) REQUIRES(queueMutex_);

  RoutingEvaluator* const evaluator_;
  RoutingMetrics* const metrics_;
  const size_t maxQueued_;
  const size_t maxQueuedPerWebhook_;
  const int maxRunningPerWebhook_;
  Mutex queueMutex_;
  std::condition_variable_any queued_;
  std::unordered_map<std::string, WebhookJobs> webhooks_ GUARDED_BY(queueMutex_);
  std::deque<std::string> turns_ GUARDED_BY(queueMutex_);  // webhooks with queued jobs
  size_t queuedTotal_ GUARDED_BY(queueMutex_) = 0;
  std::vector<std::jthread> threads_;
};

}  // namespace webhooker::server
