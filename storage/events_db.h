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

// What a delivery forwards of an event.
struct EventPayload {
  std::string method;
  HeaderList headers;
  std::string contentType;
  std::string body;
  std::string receivedAt;
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

// Delivery statuses as stored (TEXT, readable in the sqlite3 CLI).
namespace delivery_status {
inline constexpr const char* kPending = "pending";
inline constexpr const char* kRetrying = "retrying";
inline constexpr const char* kDelivered = "delivered";
inline constexpr const char* kFailed = "failed";
}  // namespace delivery_status

// One attempt and the delivery state it leads to, written together.
struct AttemptRecord {
  std::string deliveryId;
  int attempt = 1;
  std::optional<int> statusCode;
  std::string responseBody;  // the caller caps it (4 KiB)
  std::string error;
  int64_t durationMs = 0;
  bool success = false;
  std::string newStatus;  // delivery_status::kRetrying | kDelivered | kFailed
  std::optional<TimePoint> nextAttemptAt;
  std::optional<std::string> failureReason;
};

// A delivery that is not finished, as recovery and the sweep see it.
struct UnfinishedDelivery {
  std::string id;
  std::string eventId;
  std::string targetId;
  std::string status;  // pending | retrying
  int attempts = 0;
  std::optional<TimePoint> nextAttemptAt;
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

  // Inserts the delivery_results row and updates the delivery in one
  // transaction: an attempt is never recorded without its outcome.
  Result<void> recordAttempt(const AttemptRecord& attempt);
  // Ends a delivery as `failed` with `reason` without an attempt (its
  // target is gone). Writes nothing about the target.
  Result<void> failWithoutAttempt(const std::string& deliveryId, const std::string& reason);
  // Moves next_attempt_at without an attempt (an open circuit breaker).
  Result<void> deferDelivery(const std::string& deliveryId, TimePoint nextAttemptAt);
  // What is forwarded of a stored event ("not_found" if it is gone).
  Result<EventPayload> loadPayload(const std::string& eventId);
  // When the latest attempt of a delivery was recorded, if any.
  Result<std::optional<TimePoint>> lastAttemptTime(const std::string& deliveryId);
  struct BacklogCount {
    std::string targetId;
    std::string status;  // pending | retrying
    int64_t count = 0;
  };
  // How many deliveries wait, per target and status (for the sampler).
  Result<std::vector<BacklogCount>> backlogByTarget();
  // Every pending or retrying delivery, oldest first.
  Result<std::vector<UnfinishedDelivery>> unfinishedDeliveries();

 private:
  EventsDb(std::unique_ptr<SQLite::Database> db, const Clock& clock);

  const Clock& clock_;
  std::mutex dbMutex_;  // guards db_
  std::unique_ptr<SQLite::Database> db_;
};

}  // namespace webhooker
