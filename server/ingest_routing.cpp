#include "server/ingest_routing.h"

#include <spdlog/spdlog.h>

#include "base/thread_name.h"
#include "base/time_format.h"

namespace webhooker::server {

IngestRouting::IngestRouting(RoutingEvaluator* evaluator, RoutingMetrics* metrics, int threads,
                             size_t maxQueued)
    : evaluator_(evaluator), metrics_(metrics), maxQueued_(maxQueued) {
  for (int i = 0; i < std::max(1, threads); ++i)
    threads_.emplace_back([this](std::stop_token st) { runJobs(st); });
}

IngestRouting::~IngestRouting() {
  for (auto& t : threads_) t.request_stop();
  queued_.notify_all();
  threads_.clear();
}

bool IngestRouting::post(std::function<void()> job) {
  {
    MutexLock lock(queueMutex_);
    if (jobs_.size() >= maxQueued_) return false;
    jobs_.push_back(std::move(job));
  }
  queued_.notify_one();
  return true;
}

void IngestRouting::runJobs(std::stop_token stop) {
  nameThisThread("wh-routing");
  while (true) {
    std::function<void()> job;
    {
      MutexLock lock(queueMutex_);
      queued_.wait(lock, stop, [&]() REQUIRES(queueMutex_) { return !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left: a posted job always runs
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

RoutedEvent IngestRouting::route(const IngestRoute& route, const InboundEvent& event) {
  RoutedEvent out;
  const std::string receivedAt = formatTime(std::chrono::system_clock::now());
  const EventTypeRule& rule = route.eventTypeRule;
  if (rule.source != EventTypeSource::kJq) {
    out.eventType = eventTypeWithoutJq(rule, event.headers, event.body);
  } else if (evaluator_) {
    out.eventType = evaluator_->eventType(rule, event.headers, event.body, receivedAt);
  }
  std::optional<std::string> input;  // built once, for the first jq filter
  for (const IngestRoute::ActiveTarget& t : route.targets) {
    if (!t.routing.hasFilter()) {
      out.targetIds.push_back(t.id);
      continue;
    }
    bool pass = eventTypesMatch(t.routing, out.eventType);
    if (pass && !t.routing.filterJq.empty()) {
      if (!input) input = jqInput(out.eventType, event.headers, event.body, receivedAt);
      Result<bool> passed = evaluator_ ? evaluator_->passes(t.routing.filterJq, *input)
                                       : makeError(error_code::kJqUnavailable, "jq is not running");
      if (!passed) {
        spdlog::warn("routing.filter_failed entrypoint_id={} target_id={} reason={} error=\"{}\"",
                     route.entrypoint.id, t.id, passed.error().code, passed.error().message);
        if (metrics_) metrics_->programFailed(RoutingStage::kFilter, passed.error().code);
      }
      pass = passed && passed.value();
    }
    if (pass) out.targetIds.push_back(t.id);
    else out.skippedTypes.push_back(t.type);
  }
  return out;
}

void IngestRouting::countSkipped(const RoutedEvent& routed) {
  if (!metrics_) return;
  for (const std::string& type : routed.skippedTypes) metrics_->filtered(type);
}

}  // namespace webhooker::server
