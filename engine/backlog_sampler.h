// BacklogSampler: every 30 s, counts the pending and retrying deliveries in
// every events DB and publishes them per target type, with the age of the
// oldest delivery that is due and not delivered (a stall shows as a growing
// age; targets paused or disabled are left out: their deliveries wait on
// purpose and have their own signals). Counting rows, rather
// than tracking deltas, means the gauges need no seeding at start-up and
// cannot drift when a status write fails. Deliveries of deleted targets are
// folded into "unknown": the backlog nobody is watching.
//
// A pass leaves the pool's LRU alone: a DB the pool holds open is counted
// through it; one it holds closed is counted from what the pool counted as
// it closed it (EventsDbPool::Peek::closedBacklog), else once from its file,
// on a connection holding it alone, and that count is reused until the pool
// opens the DB again (nothing here writes a closed DB). So a pass over 1,000 webhooks with 256 open reopens
// no file that has not been written since the last pass. After a restart,
// the counts recovery took while it read each file (seed()) stand in for
// the first pass's reads.
//
// Each pass also keeps its node-wide totals (latest()): what the admin API's
// node summary answers from, so a summary opens no events file.
//
// Threading: one thread of its own (samplerThread_); sampleOnce() may also
// be called directly (tests, benchmarks) but not concurrently with itself.
// closedCounts_ belongs to the pass; latest() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "engine/delivery_metrics.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

namespace webhooker {

class BacklogSampler {
 public:
  static constexpr std::chrono::seconds kDefaultInterval{30};

  // One pass's totals over every events DB.
  struct Totals {
    TimePoint sampledAt;  // the clock when the pass began
    int64_t pending = 0;  // every pending delivery, deleted targets' included
    int64_t retrying = 0;
    // The delivery due the longest (no next attempt time, or one passed),
    // among targets whose deliveries do not wait on purpose (not paused,
    // not disabled, not deleted).
    struct Oldest {
      std::string webhookId;
      std::string targetId;
      TimePoint createdAt;
    };
    std::optional<Oldest> oldestDue;
  };

  BacklogSampler(MainStore& store, EventsDbPool& eventsDbs, DeliveryMetrics& metrics,
                 const Clock& clock, std::chrono::milliseconds interval = kDefaultInterval);
  ~BacklogSampler();

  // Samples once on the caller's thread, then every interval on its own.
  // When it returns the gauges hold the backlog: a restart's first scrape
  // never reads 0 for it, and the first pass (which takes recovery's
  // counts, seed()) is not slowed by passes started after it that read
  // every file (the start-up retention pass): with 100,000 webhooks it took
  // 1.4 s beside that pass where it takes 0.4 s alone.
  void start();
  void stop();
  // One pass over every events DB; publishes the counts.
  Result<void> sampleOnce();
  // The totals of the latest pass that completed; nullopt before the first.
  std::optional<Totals> latest() const;
  // The backlog of a closed events DB read by someone else (a restart's
  // recovery), as if a pass had read it while the pool's Peek::closings was
  // `closings`: the next pass reads that file only if the pool has closed
  // it since. Not concurrently with a pass: before start().
  void seed(const std::string& webhookId, uint64_t closings,
            std::vector<EventsDb::BacklogCount> backlog);

 private:
  using ClosedCounts =
      std::unordered_map<std::string, EventsDbPool::ClosedBacklog>;  // by webhook id
  class Tally;  // one pass's sums per target type
  // Adds the webhook's backlog to `tally`; a count read from its closed
  // file, or reused, goes into `next`.
  Result<void> countBacklogOf(const std::string& webhookId, Tally& tally, ClosedCounts& next);

  MainStore& store_;
  EventsDbPool& eventsDbs_;
  DeliveryMetrics& metrics_;
  const Clock& clock_;
  const std::chrono::milliseconds interval_;
  ClosedCounts closedCounts_;  // each closed DB's last count from its file
  bool firstPassDone_ = false;
  mutable Mutex latestMutex_;
  std::optional<Totals> latest_ GUARDED_BY(latestMutex_);
  std::jthread samplerThread_;
};

}  // namespace webhooker
