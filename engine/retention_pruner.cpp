#include "engine/retention_pruner.h"

#include <spdlog/spdlog.h>

#include <condition_variable>

#include "base/mutex.h"
#include "base/thread_name.h"

namespace webhooker {

RetentionPruner::RetentionPruner(MainStore& store, EventsDbPool& eventsDbs,
                                 std::chrono::milliseconds interval)
    : store_(store), eventsDbs_(eventsDbs), interval_(interval) {}

RetentionPruner::~RetentionPruner() { stop(); }

void RetentionPruner::start() {
  prunerThread_ = std::jthread([this](std::stop_token stop) {
    nameThisThread("wh-retention");
    Mutex sleepMutex;  // guards nothing: the sleep waits for a stop only
    std::condition_variable_any sleeper;
    while (!stop.stop_requested()) {
      if (auto r = runOnce(stop); !r)
        spdlog::warn("retention.failed error=\"{}\"", r.error().message);
      MutexLock lock(sleepMutex);
      sleeper.wait_for(lock, stop, interval_, [] { return false; });
    }
  });
}

void RetentionPruner::stop() { prunerThread_ = std::jthread(); }

Result<RetentionPruner::PassStats> RetentionPruner::runOnce(std::stop_token stop) {
  const auto started = std::chrono::steady_clock::now();
  auto webhooks = store_.listWebhooks();
  if (!webhooks) return webhooks.error();

  PassStats stats;
  for (const Webhook& w : webhooks.value()) {
    if (stop.stop_requested()) break;
    bool changed = unreclaimed_.erase(w.id) > 0;
    // A file the pool does not hold is looked at alone first. Opening every
    // webhook's DB here would keep each open (about 150 KB apiece), push the
    // busy ones out of the pool and send the sampler back to every file.
    if (!changed && w.maskPointers.empty() &&
        eventsDbs_.mayNeedPruningIfClosed(w.id, w.retentionDays, w.maxEvents) == false) {
      ++stats.webhooks;
      continue;
    }
    auto db = eventsDbs_.getIfMade(w.id);
    if (!db && db.error().isNotFound()) continue;  // deleted since the listing
    if (db && !db.value()) {                       // no events file yet: nothing to prune or mask
      ++stats.webhooks;
      continue;
    }
    // A failed step may have committed some batches: reclaim all the same.
    const auto fail = [&](const char* step, const Error& error) {
      ++stats.failures;
      changed = true;
      spdlog::warn("retention.webhook_failed webhook_id={} step={} error=\"{}\"", w.id, step,
                   error.message);
    };
    if (!db) {
      fail("open", db.error());
      unreclaimed_.insert(w.id);  // reclaim once it opens again
      continue;
    }
    ++stats.webhooks;

    auto pruned = db.value()->pruneEvents(w.retentionDays, w.maxEvents);
    if (pruned) {
      stats.expired += pruned->expired;
      stats.overCap += pruned->overCap;
      changed = changed || pruned->expired > 0 || pruned->overCap > 0;
    } else {
      fail("prune", pruned.error());
    }

    if (!w.maskPointers.empty()) {
      auto masked = db.value()->maskFinishedEvents(w.maskPointers);
      if (masked) {
        stats.masked += masked->masked;
        stats.examined += masked->masked + masked->unchanged + masked->notJson;
        changed = changed || masked->masked > 0;
      } else {
        fail("mask", masked.error());
      }
    }

    if (!changed) continue;
    auto reclaimed = db.value()->reclaimSpace();
    if (!reclaimed) {
      fail("reclaim", reclaimed.error());
      unreclaimed_.insert(w.id);
    } else if (!reclaimed.value()) {
      // Another connection is reading (a backup, the sqlite3 CLI): the old
      // bytes stay in the WAL until a checkpoint gets all of it.
      spdlog::info("retention.checkpoint_incomplete webhook_id={}", w.id);
      unreclaimed_.insert(w.id);
    }
    if (pruned && (pruned->expired > 0 || pruned->overCap > 0))
      spdlog::info("retention.pruned webhook_id={} expired={} over_cap={}", w.id,
                   pruned->expired, pruned->overCap);
  }
  // The audit log of the admin API keeps each webhook's rows as long as its events.
  if (auto audited = store_.pruneAudit(); audited)
    stats.audited = audited.value();
  else
    spdlog::warn("retention.audit_failed error=\"{}\"", audited.error().message);
  spdlog::info("retention.pass webhooks={} expired={} over_cap={} masked={} audit_rows={} "
               "failures={} duration_ms={}",
               stats.webhooks, stats.expired, stats.overCap, stats.masked, stats.audited,
               stats.failures,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count());
  return stats;
}

}  // namespace webhooker
