#include "engine/backlog_sampler.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>

#include "base/mutex.h"

namespace webhooker {

BacklogSampler::BacklogSampler(MainStore& store, EventsDbPool& eventsDbs, DeliveryMetrics& metrics,
                               const Clock& clock, std::chrono::milliseconds interval)
    : store_(store), eventsDbs_(eventsDbs), metrics_(metrics), clock_(clock), interval_(interval) {}

BacklogSampler::~BacklogSampler() { stop(); }

void BacklogSampler::start() {
  samplerThread_ = std::jthread([this](std::stop_token stop) {
    Mutex sleepMutex;  // guards nothing: the sleep waits for a stop only
    std::condition_variable_any sleeper;
    while (!stop.stop_requested()) {
      if (auto r = sampleOnce(); !r)
        spdlog::warn("sampler.failed error=\"{}\"", r.error().message);
      MutexLock lock(sleepMutex);
      sleeper.wait_for(lock, stop, interval_, [] { return false; });
    }
  });
}

void BacklogSampler::stop() { samplerThread_ = std::jthread(); }

Result<void> BacklogSampler::sampleOnce() {
  const auto started = std::chrono::steady_clock::now();
  auto webhooks = store_.listWebhooks();
  if (!webhooks) return webhooks.error();
  auto types = store_.liveTargetTypes();
  if (!types) return types.error();
  auto held = store_.heldTargetIds();
  if (!held) return held.error();
  const TimePoint now = clock_.now();

  // Every label gets a value, 0 included, so a drained backlog reads 0.
  std::map<std::string, std::pair<double, double>> counts;
  std::map<std::string, double> oldestDueAge;  // seconds
  for (std::string_view t : DeliveryMetrics::kTypeLabels) {
    counts[std::string(t)] = {0, 0};
    oldestDueAge[std::string(t)] = 0;
  }
  std::map<std::string, ClosedCount> nextClosedCounts;  // only webhooks that still exist
  for (const Webhook& w : webhooks.value()) {
    auto backlog = backlogOf(w.id, nextClosedCounts);
    if (!backlog && backlog.error().isNotFound()) continue;  // deleted since the listing
    if (!backlog) return backlog.error();
    for (const auto& row : backlog.value()) {
      auto type = types->find(row.targetId);
      const std::string label(
          DeliveryMetrics::typeLabel(type == types->end() ? "" : type->second));
      auto& [pending, retrying] = counts[label];
      (row.status == DeliveryStatus::kPending ? pending : retrying) +=
          static_cast<double>(row.count);
      if (row.oldestDueCreatedAt && !held->count(row.targetId)) {
        const double age = std::chrono::duration<double>(now - *row.oldestDueCreatedAt).count();
        oldestDueAge[label] = std::max(oldestDueAge[label], age);
      }
    }
  }
  for (const auto& [type, c] : counts) metrics_.setBacklog(type, c.first, c.second);
  for (const auto& [type, age] : oldestDueAge) metrics_.setOldestPendingAge(type, age);
  closedCounts_ = std::move(nextClosedCounts);
  spdlog::debug("sampler.pass webhooks={} duration_ms={}", webhooks->size(),
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - started)
                    .count());
  return {};
}

Result<std::vector<EventsDb::BacklogCount>> BacklogSampler::backlogOf(
    const std::string& webhookId, std::map<std::string, ClosedCount>& next) {
  const EventsDbPool::Peek peek = eventsDbs_.peek(webhookId);
  if (peek.open) return peek.open->backlogByTarget();
  if (auto it = closedCounts_.find(webhookId);
      it != closedCounts_.end() && it->second.closings == peek.closings) {
    next.insert(*it);
    return it->second.backlog;
  }
  auto backlog = EventsDb::backlogOfFile(eventsDbs_.pathFor(webhookId), clock_.now());
  // Opened since we peeked: the count may already be old; count again next pass.
  if (backlog && !eventsDbs_.peek(webhookId).open) next[webhookId] = {peek.closings, backlog.value()};
  return backlog;
}

}  // namespace webhooker
