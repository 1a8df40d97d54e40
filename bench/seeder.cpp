#include "bench/seeder.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/uuid.h"

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

// Gives every row of `table` whose `column` is in `ids` a new id, and every
// row of `others` naming it too.
void renameIds(SQLite::Database& db, const std::vector<std::string>& ids, const std::string& table,
               const std::vector<std::pair<std::string, std::string>>& others) {
  std::vector<SQLite::Statement> updates;
  updates.emplace_back(db, "UPDATE " + table + " SET id = ? WHERE id = ?");
  for (const auto& [other, column] : others)
    updates.emplace_back(db, "UPDATE " + other + " SET " + column + " = ? WHERE " + column + " = ?");
  for (const std::string& id : ids) {
    const std::string renamed = newUuid();
    for (SQLite::Statement& q : updates) {
      q.bind(1, renamed);
      q.bind(2, id);
      q.exec();
      q.reset();
    }
  }
}

std::vector<std::string> column(SQLite::Database& db, const std::string& query) {
  std::vector<std::string> out;
  SQLite::Statement q(db, query);
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
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
  // As a clean stop leaves a file: the pool evicts without emptying a short
  // WAL, and a file left so would make the daemon's first open of it read
  // every commit above, which the backlog of a single webhook (held until the
  // seeder closes the pool, and emptied then) is spared.
  const auto emptied = orThrow(db->checkpointWal(EventsDb::Wait::kForOthers), "checkpoint");
  if (!emptied) throw std::runtime_error("checkpoint: the WAL was kept");
}


SeededWebhook Seeder::copyWebhook(const std::string& name, const std::vector<SeedTarget>& targets,
                                  const SeededWebhook& from, int64_t firstSeq) {
  if (targets.size() != from.targetIds.size())
    throw std::runtime_error("copy webhook: the copy needs as many targets as its template");
  const std::filesystem::path source = pool_->pathFor(from.id);
  if (template_ != from.id) {
    // addEvents left the template's WAL empty, so the file alone is a whole
    // copy; closing the pool lets go of it before it is copied.
    pool_ = std::make_unique<EventsDbPool>(dataDir_, seedOptions(), clock_, 64);
    template_ = from.id;
  }
  SeededWebhook seeded = createWebhook(name, targets);
  const std::filesystem::path copy = pool_->pathFor(seeded.id);
  std::filesystem::copy_file(source, copy);  // with the source's permissions (0600)
  SQLite::Database db(copy.string(), SQLite::OPEN_READWRITE);
  db.exec("PRAGMA synchronous = OFF");  // the scenario syncs the disk once seeded
  SQLite::Transaction transaction(db);
  // Events in the order they were stored: each takes the next number.
  const std::vector<std::string> events = column(db, "SELECT id FROM events ORDER BY rowid");
  {
    SQLite::Statement rewrite(db, "UPDATE events SET entrypoint_id = ?, path = ?, headers = ? WHERE id = ?");
    SQLite::Statement headersOf(db, "SELECT headers FROM events WHERE id = ?");
    int64_t seq = firstSeq;
    for (const std::string& id : events) {
      headersOf.bind(1, id);
      if (!headersOf.executeStep()) throw std::runtime_error("copy webhook: event vanished");
      nlohmann::json headers = nlohmann::json::parse(headersOf.getColumn(0).getString());
      headersOf.reset();
      for (auto& pair : headers)
        if (pair.at(0) == kSeqHeader) pair.at(1) = std::to_string(seq);
      ++seq;
      rewrite.bind(1, seeded.entrypointId);
      rewrite.bind(2, "/hooks/" + seeded.entrypointId);
      rewrite.bind(3, headers.dump());
      rewrite.bind(4, id);
      rewrite.exec();
      rewrite.reset();
    }
  }
  for (size_t t = 0; t < targets.size(); ++t) {
    SQLite::Statement q(db, "UPDATE deliveries SET target_id = ? WHERE target_id = ?");
    q.bind(1, seeded.targetIds[t]);
    q.bind(2, from.targetIds[t]);
    q.exec();
  }
  renameIds(db, events, "events", {{"deliveries", "event_id"}});
  renameIds(db, column(db, "SELECT id FROM deliveries"), "deliveries",
            {{"delivery_results", "delivery_id"}});
  transaction.commit();
  return seeded;
}

}  // namespace webhooker::bench
