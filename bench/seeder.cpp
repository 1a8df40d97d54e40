#include "bench/seeder.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "bench/receiver.h"

namespace webhooker::bench {

namespace {

template <typename T>
T orThrow(Result<T> r, const char* what) {
  if (!r) throw std::runtime_error(std::string(what) + ": " + r.error().message);
  return std::move(r.value());
}

DbOptions seedOptions() {
  DbOptions o;
  o.sync = SyncMode::kNormal;  // setting up is not what is measured
  return o;
}

}  // namespace

Seeder::Seeder(const std::filesystem::path& dataDir)
    : dataDir_(dataDir),
      store_(orThrow(MainStore::open(dataDir / "webhooker.db", seedOptions(), clock_), "open main DB")),
      pool_(std::make_unique<EventsDbPool>(dataDir, seedOptions(), clock_, 64)) {}

SeededWebhook Seeder::createWebhook(const std::string& name, const std::vector<SeedTarget>& targets) {
  SeededWebhook seeded;
  seeded.id = orThrow(store_->createWebhook(name, "", 30), "create webhook").id;
  seeded.entrypointId = orThrow(store_->listEntrypoints(seeded.id), "list entrypoints").at(0).id;
  for (const SeedTarget& t : targets) {
    TargetRecord record;
    record.webhookId = seeded.id;
    record.name = "bench";
    record.type = t.type;
    record.maxConcurrency = t.maxConcurrency;
    record.health.ordering = t.ordering;
    record.configJson = t.type == TargetType::kHttp ? nlohmann::json{{"url", t.url}}.dump() : t.configJson;
    seeded.targetIds.push_back(orThrow(store_->createTarget(record), "create target").id);
  }
  return seeded;
}

void Seeder::addEvents(const SeededWebhook& webhook, size_t count,
                       const std::vector<std::string>& bodies, int64_t firstSeq,
                       std::optional<TimePoint> retryAt) {
  auto db = orThrow(pool_->get(webhook.id), "open events DB");
  for (size_t i = 0; i < count; ++i) {
    const std::string seq = std::to_string(firstSeq + static_cast<int64_t>(i));
    InboundEvent event;
    event.entrypointId = webhook.entrypointId;
    event.method = "POST";
    event.path = "/hooks/" + webhook.entrypointId;
    event.headers = {{"Content-Type", "application/json"}, {kSeqHeader, seq}};
    event.contentType = "application/json";
    event.body = bodies[i % bodies.size()];
    event.remoteAddr = "127.0.0.1";
    const IngestOutcome outcome =
        orThrow(db->ingest(event, webhook.targetIds, std::chrono::hours(24)), "ingest");
    if (!retryAt) continue;
    for (const StoredDelivery& d : outcome.deliveries) {
      AttemptRecord attempt;
      attempt.deliveryId = d.id;
      attempt.statusCode = 503;
      attempt.newStatus = DeliveryStatus::kRetrying;
      attempt.nextAttemptAt = retryAt;
      if (auto r = db->recordAttempt(attempt); !r)
        throw std::runtime_error("record attempt: " + r.error().message);
    }
  }
}

}  // namespace webhooker::bench
