// EventsDb: one webhook's events-<webhook-uuid>.db — its events, their
// deliveries and every attempt. Holds no target config or credential.
//
// Threading: any thread may call; one connection behind dbMutex_. Owned
// through shared_ptr by EventsDbPool and whoever is using it right now.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "storage/db_options.h"

namespace SQLite { class Database; }

namespace webhooker {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct InboundEvent {
  std::string entrypointId;
  std::string method;
  std::string path;
  std::string query;
  HeaderList headers;  // arrival order, names as sent
  std::string contentType;
  std::string body;  // raw bytes
  std::string remoteAddr;
  std::optional<std::string> idempotencyKey;
};

struct StoredDelivery {
  std::string id;
  std::string targetId;
};

struct IngestOutcome {
  std::string eventId;
  std::string receivedAt;
  std::vector<StoredDelivery> deliveries;
  bool duplicate = false;  // an earlier event had the same idempotency key
};

class EventsDb {
 public:
  static Result<std::shared_ptr<EventsDb>> open(const std::filesystem::path& file,
                                                const DbOptions& options, const Clock& clock);
  ~EventsDb();
  EventsDb(const EventsDb&) = delete;
  EventsDb& operator=(const EventsDb&) = delete;

  // In one transaction: unless an event with the same idempotency key was
  // received within `idempotencyWindow`, stores the event and one pending
  // delivery per target id. On success the event is committed (durable under
  // synchronous=FULL). On a duplicate nothing is written and the first
  // event's id and deliveries come back with duplicate=true.
  Result<IngestOutcome> ingest(const InboundEvent& event, const std::vector<std::string>& targetIds,
                               std::chrono::milliseconds idempotencyWindow);

  int schemaVersion();

 private:
  EventsDb(std::unique_ptr<SQLite::Database> db, const Clock& clock);

  const Clock& clock_;
  std::mutex dbMutex_;  // guards db_
  std::unique_ptr<SQLite::Database> db_;
};

}  // namespace webhooker
