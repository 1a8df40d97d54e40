// RetentionPruner: the periodic pass that keeps each webhook's events DB
// within its retention window and event cap, and masks stored bodies.
//
// Per webhook, in order: delete events older than retention_days, then the
// oldest beyond max_events (never one with a pending or retrying delivery);
// mask the bodies of events whose deliveries are all final (when the webhook
// has mask_pointers); then, if anything changed, give the freed pages back
// (incremental_vacuum) and empty the WAL into the file
// (wal_checkpoint(TRUNCATE)), so deleted and masked bytes leave the disk.
// A DB the pool does not hold is first read on its own
// (EventsDbPool::mayNeedPruningIfClosed) and opened only if an event may go
// or bodies are to be masked: a pass leaves the pool as it found it.
// Time comes from the events DBs' clock (the pool's). Last, the audit log's
// rows past their webhook's retention go (MainStore::pruneAudit).
//
// Threading: one thread of its own (prunerThread_); runOnce() may also be
// called directly (tests) but not concurrently with itself or a started
// pruner.
#pragma once

#include <chrono>
#include <cstdint>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_set>

#include "base/result.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

namespace webhooker {

class RetentionPruner {
 public:
  static constexpr std::chrono::hours kDefaultInterval{1};

  struct PassStats {
    int webhooks = 0;
    int64_t expired = 0;
    int64_t overCap = 0;
    int64_t masked = 0;   // bodies rewritten
    int64_t examined = 0; // events checked for masking, rewritten or not
    int failures = 0;     // webhooks whose pass failed (logged; retried next pass)
    int64_t audited = 0;  // audit log rows past their webhook's retention
  };

  RetentionPruner(MainStore& store, EventsDbPool& eventsDbs,
                  std::chrono::milliseconds interval = kDefaultInterval);
  ~RetentionPruner();
  RetentionPruner(const RetentionPruner&) = delete;
  RetentionPruner& operator=(const RetentionPruner&) = delete;

  // Runs a pass at once, then every interval.
  void start();
  void stop();
  // One pass over every webhook. An error for one webhook is logged and
  // counted, and the others still get their pass; an error comes back only
  // when the webhooks cannot be listed. Stops early when `stop` is requested.
  Result<PassStats> runOnce(std::stop_token stop = {});

 private:
  MainStore& store_;
  EventsDbPool& eventsDbs_;
  const std::chrono::milliseconds interval_;
  // Webhooks whose last checkpoint could not take the whole WAL (a reader
  // held it): tried again next pass even if nothing changes. Pass-only state.
  std::unordered_set<std::string> unreclaimed_;
  std::jthread prunerThread_;
};

}  // namespace webhooker
