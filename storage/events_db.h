// EventsDb: one webhook's events-<webhook-uuid>.db — its events, their
// deliveries and every attempt. Holds no target config or credential.
//
// Threading: any thread may call; one connection behind dbMutex_ (and a
// read-only one behind readMutex_ for payloads, see below). The
// frequent small writes (ingest, attempt results, deferrals) of concurrent
// callers are group-committed: one transaction and one fsync for all of
// them, each caller answered once the commit holding its write is done
// (storage/group_commit.h). Owned through shared_ptr by EventsDbPool and
// whoever is using it right now.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
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
namespace webhooker::storage {
class GroupCommit;
class StatementCache;
}  // namespace webhooker::storage

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
  int seriesStart = 0;  // attempts made before the current series (a redrive)
  std::optional<TimePoint> nextAttemptAt;
  std::optional<TimePoint> lastAttemptAt;  // when its latest result was written (retrying only)
};

// --- History and redrive: types --------------------------------------------

// Where a page of history ends: the sort key (a stored time, an id) of its
// last row. Pages run newest first by (time, id), so a key stays valid
// whatever arrives later.
struct PageKey {
  std::string time;
  std::string id;
};

// Which deliveries (or events with such a delivery) to show or replay.
// Times are in the stored format and select by the event's received_at:
// since <= received_at < until.
struct HistoryFilter {
  std::vector<std::string> statuses;  // empty: any
  std::optional<std::string> targetId;
  std::optional<std::string> since;
  std::optional<std::string> until;
};

// One delivery_results row.
struct AttemptRow {
  int attempt = 0;
  std::optional<int> statusCode;
  std::string responseBody;  // capped at 4 KiB when written
  std::optional<std::string> error;
  int64_t durationMs = 0;
  bool success = false;
  std::string createdAt;
};

// A deliveries row with its latest attempt.
struct DeliveryRecord {
  std::string id;
  std::string eventId;
  std::string targetId;
  std::string status;
  int attempts = 0;
  int seriesStart = 0;
  std::optional<std::string> nextAttemptAt;
  std::optional<int> lastStatusCode;
  std::optional<std::string> failureReason;
  std::string createdAt;
  std::string updatedAt;
  std::string eventReceivedAt;
  std::optional<std::string> lastAttemptAt;
  std::optional<std::string> lastError;
  std::vector<AttemptRow> attemptRows;  // every attempt, oldest first; only in showEvent()
};

// An events row. Headers and body are read only by showEvent().
struct EventRecord {
  std::string id;
  std::string entrypointId;
  std::string method;
  std::string path;
  std::string query;
  std::string contentType;
  int64_t bodySize = 0;
  std::string remoteAddr;
  std::optional<std::string> idempotencyKey;
  std::string receivedAt;
  HeaderList headers;
  std::string body;
  std::vector<DeliveryRecord> deliveries;  // oldest first
};

template <typename T>
struct HistoryPage {
  std::vector<T> items;
  std::optional<PageKey> next;  // set when more rows follow
};

// What a replay acts on: deliveries in `filter`'s statuses (failed, or
// failed and delivered) whose target is one of `targetIds` (the live ones).
struct ReplayRequest {
  HistoryFilter filter;
  std::vector<std::string> targetIds;
  bool dryRun = false;
};

struct ReplayOutcome {
  int64_t count = 0;
  std::vector<UnfinishedDelivery> reset;  // empty on a dry run
};

// --- Statistics: types ------------------------------------------------------

struct DeliveryCounts {
  int64_t pending = 0;
  int64_t retrying = 0;
  int64_t delivered = 0;
  int64_t failed = 0;
};

// The latest failed attempt to a target.
struct LastFailure {
  std::string deliveryId;
  std::string eventId;
  std::string at;
  std::optional<int> statusCode;
  std::optional<std::string> error;
};

struct TargetActivity {
  std::string targetId;
  DeliveryCounts deliveries;
  std::optional<LastFailure> lastFailure;
};

// One hour of the activity chart: events received in it, and deliveries that
// are failed and failed in it (a redriven one leaves its hour).
struct HourlyCount {
  std::string hour;  // the hour's start, stored time format
  int64_t received = 0;
  int64_t failed = 0;
};

struct WebhookStats {
  int64_t events = 0;
  DeliveryCounts deliveries;
  std::vector<TargetActivity> targets;  // every target id with deliveries, by id
  std::vector<HourlyCount> hours;       // oldest first, the current hour last
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
  // event's id and deliveries come back with duplicate=true. Concurrent
  // ingests share the transaction (group commit): an error means nothing of
  // this event was stored; two of them with one key make one event.
  Result<IngestOutcome> ingest(const InboundEvent& event, const std::vector<std::string>& targetIds,
                               std::chrono::milliseconds idempotencyWindow);
  // The same write without waiting for it: returns at once, and `then` gets
  // what ingest() would have returned, with the event back (to hand its body
  // on without a copy), once the commit holding the write is done — on this
  // EventsDb's flusher thread, with the same rules as recordAttemptAsync's
  // `then`. So a request waiting for its commit holds no thread, and one
  // commit takes as many events as are in flight.
  using IngestDone = std::function<void(Result<IngestOutcome>, InboundEvent&)>;
  void ingestAsync(InboundEvent event, std::vector<std::string> targetIds,
                   std::chrono::milliseconds idempotencyWindow, IngestDone then);

  int schemaVersion();

  // Inserts the delivery_results row and updates the delivery in one
  // transaction: an attempt is never recorded without its outcome.
  Result<void> recordAttempt(const AttemptRecord& attempt);
  // The same write without waiting for it: returns at once, and `then` gets
  // what recordAttempt() would have returned once the commit holding the
  // write is done, on this EventsDb's flusher thread (group commit). So a
  // delivery worker goes on to its next attempt while the result is flushed.
  // `then` must not throw, and must not wait for another write of this
  // EventsDb (the flusher may be the thread that would have to lead it).
  void recordAttemptAsync(AttemptRecord attempt, std::function<void(Result<void>)> then);
  // Ends a delivery as `failed` with `reason` without an attempt (its
  // target is gone). Writes nothing about the target.
  Result<void> failWithoutAttempt(const std::string& deliveryId, const std::string& reason);
  // Moves next_attempt_at without an attempt (an open circuit breaker).
  Result<void> deferDelivery(const std::string& deliveryId, TimePoint nextAttemptAt);
  // What is forwarded of a stored event ("not_found" if it is gone).
  Result<EventPayload> loadPayload(const std::string& eventId);
  struct BacklogCount {
    std::string targetId;
    std::string status;  // pending | retrying
    int64_t count = 0;
  };
  // How many deliveries wait, per target and status (for the sampler).
  Result<std::vector<BacklogCount>> backlogByTarget();
  // The same, read from a file nobody holds open here: opened read-only,
  // without migrating or creating it, and closed again ("not_found" if the
  // file does not exist).
  static Result<std::vector<BacklogCount>> backlogOfFile(const std::filesystem::path& file);
  // Every pending or retrying delivery, oldest first; only those of
  // `targetId` if given (a refill of one target's queue). One query, the
  // latest result's time of each retrying one included.
  Result<std::vector<UnfinishedDelivery>> unfinishedDeliveries(const std::string* targetId = nullptr);

  // --- History (events_db_history.cpp) -------------------------------------
  // Read-only views for the admin API. "not_found" for an unknown id.

  // Events newest first by (received_at, id), at most `limit`, starting after
  // `after`; with their deliveries. Status and target filters keep the events
  // that have at least one delivery matching both.
  Result<HistoryPage<EventRecord>> listEvents(const HistoryFilter& filter, int limit,
                                              const std::optional<PageKey>& after);
  // One event with headers, body, deliveries and every attempt.
  Result<EventRecord> showEvent(const std::string& eventId);
  // Deliveries newest first by (created_at, id).
  Result<HistoryPage<DeliveryRecord>> listDeliveries(const HistoryFilter& filter, int limit,
                                                     const std::optional<PageKey>& after);
  Result<DeliveryRecord> getDelivery(const std::string& deliveryId);

  // --- Redrive (events_db_redrive.cpp) --------------------------------------
  // Each call is one transaction; on an error nothing was written.

  // Starts a new attempt series on a failed delivery: pending, no reason, no
  // next time, series_start = attempts; its results stay. "conflict" unless
  // it is failed.
  Result<UnfinishedDelivery> retryDelivery(const std::string& deliveryId);
  // New pending deliveries of a stored event, one per target id.
  Result<std::vector<UnfinishedDelivery>> redeliverEvent(const std::string& eventId,
                                                         const std::vector<std::string>& targetIds);
  // Counts (dry run) or restarts as new series what `request` selects; the
  // count of a dry run is what a real run would reset at that moment.
  Result<ReplayOutcome> replay(const ReplayRequest& request);

  // --- Statistics (events_db_stats.cpp) --------------------------------------
  // Counts for the admin API and the console, read in one transaction: events,
  // deliveries by status (in all and per target), each target's latest failed
  // attempt, and the last `hours` hours (by the clock) hour by hour.
  Result<WebhookStats> stats(int hours);

  // --- Retention and masking (events_db_retention.cpp) ----------------------
  // For the periodic retention pass (one caller at a time). Work is done in
  // short batches, each its own transaction, so ingest waits one batch at most.

  struct PruneCount {
    int64_t expired = 0;  // older than the retention window
    int64_t overCap = 0;  // beyond max_events
  };
  // Deletes events received more than `retentionDays` ago (by the clock),
  // then the oldest events beyond `maxEvents`, each with its deliveries and
  // results. Never an event with a pending or retrying delivery, however old.
  Result<PruneCount> pruneEvents(int retentionDays, int64_t maxEvents);

  struct MaskCount {
    int64_t masked = 0;     // body rewritten with "[masked]" values
    int64_t unchanged = 0;  // JSON, but no pointer named anything (masked=1)
    int64_t notJson = 0;    // left as received (masked=0)
  };
  // Masks the bodies of events not examined yet (masked IS NULL) whose
  // deliveries are all delivered or failed; "invalid_config" for a pointer
  // that is not one (the API refuses those). Old bytes stay in the file until
  // reclaimSpace().
  Result<MaskCount> maskFinishedEvents(const std::vector<std::string>& pointers);
  // Marks masked events as not examined, so the next pass applies a changed
  // pointer list to them as well. Cheap: the body is not rewritten.
  Result<void> resetMasking();
  // Gives free pages back to the file system (incremental_vacuum) and copies
  // the WAL into the file and truncates it (wal_checkpoint(TRUNCATE)), so
  // deleted and masked bytes leave the disk. False when another connection's
  // open read kept part of the WAL: call again later.
  Result<bool> reclaimSpace();

 private:
  EventsDb(std::unique_ptr<SQLite::Database> db, const std::filesystem::path& file,
           const DbOptions& options, const Clock& clock);

  const Clock& clock_;
  const std::filesystem::path file_;
  const DbOptions options_;
  std::mutex dbMutex_;  // guards db_ and statements_
  std::unique_ptr<SQLite::Database> db_;
  std::unique_ptr<storage::StatementCache> statements_;  // prepared on db_, dropped before it
  std::unique_ptr<storage::GroupCommit> writes_;         // groups the frequent small writes
  // Payload reads go through a second connection, opened on first use, so
  // a delivery worker loading a body does not wait for a commit's flush.
  std::mutex readMutex_;  // guards reader_ and readStatements_
  std::unique_ptr<SQLite::Database> reader_;
  // Prepared on reader_, dropped before it.
  std::unique_ptr<storage::StatementCache> readStatements_;
};

}  // namespace webhooker
