// Seeder: writes webhooks, targets and events straight through the storage
// layer (synchronous=NORMAL) into a data folder the daemon is started on
// afterwards. Building a backlog of 100,000s of deliveries through the HTTP
// API would take longer than the measurement itself; what is measured is
// always the daemon working on it.
//
// Threading: one thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

namespace webhooker::bench {

struct SeedTarget {
  std::string url;
  int maxConcurrency = 8;
  TargetOrdering ordering = TargetOrdering::kParallel;
  // Another type than http: its type and config (`url` is then unused).
  TargetType type = TargetType::kHttp;
  std::string configJson = "";
};

struct SeededWebhook {
  std::string id;
  std::string entrypointId;
  std::vector<std::string> targetIds;
};

class Seeder {
 public:
  explicit Seeder(const std::filesystem::path& dataDir);

  SeededWebhook createWebhook(const std::string& name, const std::vector<SeedTarget>& targets);
  // Stores `count` events numbered firstSeq.. with one pending delivery per
  // target; with `retryAt`, each delivery has then failed once with a 503 and
  // is `retrying` until that time. Leaves the file as a clean stop does:
  // its WAL emptied into it.
  void addEvents(const SeededWebhook& webhook, size_t count, const std::vector<std::string>& bodies,
                 int64_t firstSeq, std::optional<TimePoint> retryAt = std::nullopt);
  // A new webhook with `targets` whose events DB is a copy of `from`'s (made
  // by addEvents, with as many targets): the same events and deliveries in
  // the same states, under new ids, with the new webhook's entrypoint and
  // targets, and sequence numbers firstSeq.. in the order of `from`'s
  // events. Far cheaper than addEvents for many small webhooks.
  SeededWebhook copyWebhook(const std::string& name, const std::vector<SeedTarget>& targets,
                            const SeededWebhook& from, int64_t firstSeq);

 private:
  SystemClock clock_;
  std::filesystem::path dataDir_;
  std::unique_ptr<MainStore> store_;
  std::unique_ptr<EventsDbPool> pool_;
  std::optional<std::string> template_;  // the webhook whose file copyWebhook copies, once closed
};

}  // namespace webhooker::bench
