#include "engine/backlog_sampler.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "base/mutex.h"
#include "base/thread_name.h"

namespace webhooker {

BacklogSampler::BacklogSampler(MainStore& store, EventsDbPool& eventsDbs, DeliveryMetrics& metrics,
                               const Clock& clock, std::chrono::milliseconds interval)
    : store_(store), eventsDbs_(eventsDbs), metrics_(metrics), clock_(clock), interval_(interval) {}

BacklogSampler::~BacklogSampler() { stop(); }

void BacklogSampler::start() {
  const auto pass = [this] {
    if (auto r = sampleOnce(); !r) spdlog::warn("sampler.failed error=\"{}\"", r.error().message);
  };
  pass();
  samplerThread_ = std::jthread([this, pass](std::stop_token stop) {
    nameThisThread("wh-sampler");
    Mutex sleepMutex;  // guards nothing: the sleep waits for a stop only
    std::condition_variable_any sleeper;
    while (!stop.stop_requested()) {
      {
        MutexLock lock(sleepMutex);
        sleeper.wait_for(lock, stop, interval_, [] { return false; });
      }
      if (!stop.stop_requested()) pass();
    }
  });
}

void BacklogSampler::stop() { samplerThread_ = std::jthread(); }

std::optional<BacklogSampler::Totals> BacklogSampler::latest() const {
  MutexLock lock(latestMutex_);
  return latest_;
}

void BacklogSampler::seed(const std::string& webhookId, uint64_t closings,
                          std::vector<EventsDb::BacklogCount> backlog) {
  closedCounts_[webhookId] = {closings, std::move(backlog)};
}

// What one pass adds up, per target type label.
class BacklogSampler::Tally {
 public:
  Tally(const std::unordered_map<std::string, TargetType>& types,
        const std::unordered_set<std::string>& held, TimePoint now)
      : types_(types), held_(held), now_(now) {
    totals_.sampledAt = now;
    // Every label gets a value, 0 included, so a drained backlog reads 0.
    for (std::string_view t : DeliveryMetrics::kTypeLabels) {
      counts_[t] = {0, 0};
      oldestDueAge_[t] = 0;
    }
  }

  void add(const std::string& webhookId, const std::vector<EventsDb::BacklogCount>& backlog) {
    for (const auto& row : backlog) {
      auto type = types_.find(row.targetId);
      const std::string_view label = DeliveryMetrics::typeLabel(
          type == types_.end() ? std::nullopt : std::optional<TargetType>(type->second));
      auto& [pending, retrying] = counts_[label];
      const bool isPending = row.status == DeliveryStatus::kPending;
      (isPending ? pending : retrying) += static_cast<double>(row.count);
      (isPending ? totals_.pending : totals_.retrying) += row.count;
      if (row.oldestDueCreatedAt && !held_.count(row.targetId)) {
        const double age = std::chrono::duration<double>(now_ - *row.oldestDueCreatedAt).count();
        oldestDueAge_[label] = std::max(oldestDueAge_[label], age);
        auto& oldest = totals_.oldestDue;
        if (type != types_.end() && (!oldest || *row.oldestDueCreatedAt < oldest->createdAt))
          oldest = Totals::Oldest{webhookId, row.targetId, *row.oldestDueCreatedAt};
      }
    }
  }

  const Totals& totals() const { return totals_; }

  void publish(DeliveryMetrics& metrics) const {
    for (const auto& [type, c] : counts_) metrics.setBacklog(type, c.first, c.second);
    for (const auto& [type, age] : oldestDueAge_) metrics.setOldestPendingAge(type, age);
  }

 private:
  const std::unordered_map<std::string, TargetType>& types_;
  const std::unordered_set<std::string>& held_;
  const TimePoint now_;
  std::map<std::string_view, std::pair<double, double>> counts_;  // pending, retrying
  std::map<std::string_view, double> oldestDueAge_;               // seconds
  Totals totals_;
};

Result<void> BacklogSampler::sampleOnce() {
  const auto started = std::chrono::steady_clock::now();
  auto webhookIds = store_.listWebhookIds();
  if (!webhookIds) return webhookIds.error();
  auto types = store_.liveTargetTypes();
  if (!types) return types.error();
  auto held = store_.heldTargetIds();
  if (!held) return held.error();

  Tally tally(types.value(), held.value(), clock_.now());
  ClosedCounts nextClosedCounts;  // only webhooks that still exist
  nextClosedCounts.reserve(closedCounts_.size());
  for (const std::string& id : webhookIds.value()) {
    auto counted = countBacklogOf(id, tally, nextClosedCounts);
    if (!counted && counted.error().isNotFound()) continue;  // deleted since the listing
    if (!counted) return counted.error();
  }
  tally.publish(metrics_);
  {
    MutexLock lock(latestMutex_);
    latest_ = tally.totals();
  }
  closedCounts_ = std::move(nextClosedCounts);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  // The first pass after a start is the one that may read every file.
  spdlog::log(firstPassDone_ ? spdlog::level::debug : spdlog::level::info,
              "sampler.pass webhooks={} duration_ms={} first={}", webhookIds->size(), ms,
              !firstPassDone_);
  firstPassDone_ = true;
  return {};
}

Result<void> BacklogSampler::countBacklogOf(const std::string& webhookId, Tally& tally,
                                            ClosedCounts& next) {
  const EventsDbPool::Peek peek = eventsDbs_.peek(webhookId);
  if (peek.open) {
    auto backlog = peek.open->backlogByTarget();
    if (!backlog) return backlog.error();
    tally.add(webhookId, backlog.value());
    return {};
  }
  if (peek.closedBacklog) {  // counted by the pool as it closed the DB
    tally.add(webhookId, *peek.closedBacklog);
    return {};
  }
  if (auto it = closedCounts_.find(webhookId);
      it != closedCounts_.end() && it->second.closings == peek.closings) {
    // Moved, not copied: this pass's map replaces the last one.
    tally.add(webhookId, next.insert(closedCounts_.extract(it)).position->second.backlog);
    return {};
  }
  // Read on a connection that holds the file alone: no shared WAL index,
  // and a file without a WAL (one just created) is given none.
  if (auto closed = eventsDbs_.backlogIfClosed(webhookId)) {
    tally.add(webhookId, closed->backlog);
    next[webhookId] = {closed->closings, std::move(closed->backlog)};
    return {};
  }
  // Opened meanwhile, or not readable so (of an older schema, not migrated yet).
  auto backlog = EventsDb::backlogOfFile(eventsDbs_.pathFor(webhookId), clock_.now());
  if (!backlog) return backlog.error();
  tally.add(webhookId, backlog.value());
  // Opened since we peeked: the count may already be old; count again next pass.
  if (!eventsDbs_.peek(webhookId).open)
    next[webhookId] = {peek.closings, std::move(backlog.value())};
  return {};
}

}  // namespace webhooker
