#include "server/ingest_routing.h"

#include <spdlog/spdlog.h>

#include "base/thread_name.h"
#include "base/time_format.h"

namespace webhooker::server {

IngestRouting::IngestRouting(RoutingEvaluator* evaluator, RoutingMetrics* metrics, int threads,
                             size_t maxQueued)
    : evaluator_(evaluator),
      metrics_(metrics),
      maxQueued_(maxQueued),
      maxQueuedPerWebhook_(std::max<size_t>(1, maxQueued / 4)),
      maxRunningPerWebhook_(std::max(1, threads / 2)) {
  for (int i = 0; i < std::max(1, threads); ++i)
    threads_.emplace_back([this](std::stop_token st) { runJobs(st); });
}

IngestRouting::~IngestRouting() {
  for (auto& t : threads_) t.request_stop();
  queued_.notify_all();
  threads_.clear();
}

bool IngestRouting::post(const std::string& webhookId, std::function<void()> job) {
  {
    MutexLock lock(queueMutex_);
    WebhookJobs& mine = webhooks_[webhookId];
    if (queuedTotal_ >= maxQueued_ || mine.queued.size() >= maxQueuedPerWebhook_) {
      if (mine.queued.empty() && mine.running == 0) webhooks_.erase(webhookId);
      return false;
    }
    if (mine.queued.empty()) turns_.push_back(webhookId);
    mine.queued.push_back(std::move(job));
    ++queuedTotal_;
  }
  queued_.notify_one();
  return true;
}

std::function<void()> IngestRouting::nextJobLocked(std::string& webhookId) {
  for (size_t i = 0; i < turns_.size(); ++i) {
    WebhookJobs& jobs = webhooks_[turns_[i]];
    if (jobs.running >= maxRunningPerWebhook_) continue;
    webhookId = turns_[i];
    turns_.erase(turns_.begin() + static_cast<std::ptrdiff_t>(i));
    std::function<void()> job = std::move(jobs.queued.front());
    jobs.queued.pop_front();
    --queuedTotal_;
    ++jobs.running;
    if (!jobs.queued.empty()) turns_.push_back(webhookId);  // its next job waits its turn
    return job;
  }
  return {};
}

void IngestRouting::runJobs(std::stop_token stop) {
  nameThisThread("wh-routing");
  while (true) {
    std::function<void()> job;
    std::string webhookId;
    {
      MutexLock lock(queueMutex_);
      queued_.wait(lock, stop, [&]() REQUIRES(queueMutex_) {
        job = nextJobLocked(webhookId);
        return static_cast<bool>(job);
      });
      // Stopping, and nothing left that may run: a posted job always runs,
      // on the thread of its webhook's running job at the latest.
      if (!job) return;
    }
    job();
    {
      MutexLock lock(queueMutex_);
      WebhookJobs& jobs = webhooks_[webhookId];
      --jobs.running;
      if (jobs.queued.empty() && jobs.running == 0) webhooks_.erase(webhookId);
    }
    queued_.notify_all();  // its webhook may take a thread again
  }
}

RoutedEvent IngestRouting::route(const IngestRoute& route, const InboundEvent& event) {
  RoutedEvent out;
  const std::string receivedAt = formatTime(std::chrono::system_clock::now());
  const EventTypeRule& rule = route.eventTypeRule;
  const std::string& webhookId = route.entrypoint.webhookId;
  if (rule.source != EventTypeSource::kJq) {
    out.eventType = eventTypeWithoutJq(rule, event.headers, event.body);
  } else if (evaluator_) {
    auto type = evaluator_->eventType(rule, event.headers, event.body, receivedAt, webhookId);
    if (!type) {
      if (metrics_) metrics_->programFailed(RoutingStage::kEventType, type.error().code);
      out.retryLater = type.error();
      return out;
    }
    out.eventType = std::move(type.value());
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
      Result<bool> passed = evaluator_
                                ? evaluator_->passes(t.routing.filterJq, *input, webhookId)
                                : makeError(error_code::kJqUnavailable, "jq is not running");
      if (!passed && metrics_) metrics_->programFailed(RoutingStage::kFilter, passed.error().code);
      if (!passed && jq_error::isRetryable(passed.error())) {
        out.retryLater = passed.error();
        return out;
      }
      if (!passed)
        spdlog::warn("routing.filter_failed entrypoint_id={} target_id={} reason={} error=\"{}\"",
                     route.entrypoint.id, t.id, passed.error().code, passed.error().message);
      pass = passed && passed.value();
    }
    if (pass) out.targetIds.push_back(t.id);
    else out.skippedTypes.push_back(t.type);
  }
  return out;
}

void IngestRouting::countSkipped(const RoutedEvent& routed) {
  if (!metrics_) return;
  for (TargetType type : routed.skippedTypes) metrics_->filtered(type);
}

}  // namespace webhooker::server
