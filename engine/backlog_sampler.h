// BacklogSampler: every 30 s, counts the pending and retrying deliveries in
// every events DB and publishes them per target type. Counting rows, rather
// than tracking deltas, means the gauges need no seeding at start-up and
// cannot drift when a status write fails. Deliveries of deleted targets are
// folded into "unknown": the backlog nobody is watching.
//
// Threading: one thread of its own (samplerThread_); sampleOnce() may also
// be called directly (tests, benchmarks) but not concurrently with itself.
#pragma once

#include <chrono>
#include <thread>

#include "base/result.h"
#include "engine/delivery_metrics.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

namespace webhooker {

class BacklogSampler {
 public:
  static constexpr std::chrono::seconds kDefaultInterval{30};

  BacklogSampler(MainStore& store, EventsDbPool& eventsDbs, DeliveryMetrics& metrics,
                 std::chrono::milliseconds interval = kDefaultInterval);
  ~BacklogSampler();

  // Samples once at once, then every interval.
  void start();
  void stop();
  // One pass over every events DB; publishes the counts.
  Result<void> sampleOnce();

 private:
  MainStore& store_;
  EventsDbPool& eventsDbs_;
  DeliveryMetrics& metrics_;
  const std::chrono::milliseconds interval_;
  std::jthread samplerThread_;
};

}  // namespace webhooker
