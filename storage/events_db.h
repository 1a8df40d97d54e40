// EventsDb: one webhook's events-<webhook-uuid>.db — its events, their
// deliveries and every attempt. Holds no target config or credential.
//
// Threading: any thread may call; one connection behind dbMutex_ (and up to
// two read-only ones, opened when first needed: for payloads behind
// readMutex_, for the engine's reads of waiting deliveries behind
// scanMutex_, see below; the admin views open their own, see openSnapshot). The
// frequent small writes (ingest, attempt results, deferrals) of concurrent
// callers are group-committed: one transaction and one fsync for all of
// them, each caller answered once the commit holding its write is done
// (storage/group_commit.h); the submitted ones of every EventsDb share a few
// commit threads and their flushes (storage/commit_threads.h). Owned through shared_ptr by EventsDbPool and
// whoever is using it right now.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "storage/commit_journal.h"
#include "storage/db_options.h"
#include "storage/delivery_records.h"
#include "storage/event_payload.h"
#include "storage/history_records.h"
#include "storage/ingest_records.h"
#include "storage/webhook_stats.h"

namespace SQLite { class Database; }
namespace webhooker::storage {
class GroupCommit;
class StatementCache;
}  // namespace webhooker::storage

namespace webhooker {

enum class DeliveryMerge;  // storage/webhook_transfer.h

class EventsDb {
 public:
  // Opens `file`, creating and migrating it if needed.
  static Result<std::shared_ptr<EventsDb>> open(const std::filesystem::path& file,
                                                const DbOptions& options, const Clock& clock);
  // Makes `file` as a new, empty events DB of this binary's schema, in one
  // disk flush: written under `file` + kWritingSuffix, flushed, then linked
  // to its name, so a crash leaves `file` missing or whole. Keeps a file
  // already there. For EventsDbPool::get, on a webhook's first write.
  static Result<void> create(const std::filesystem::path& file, const DbOptions& options);
  static constexpr const char* kWritingSuffix = ".new";
  // The connection open() and create() use, for callers that work on an
  // events file outside an EventsDb (a move's pieces): `file` opened,
  // migrated, and made if missing, with an events DB's page size.
  static Result<std::unique_ptr<SQLite::Database>> openFile(const std::filesystem::path& file,
                                                            const DbOptions& options);
  // Replay of the commit journal into `file` (CommitJournal::Replay):
  // applies the records past the file's journal position, in one
  // transaction. ok if the file is gone (its webhook deleted or moved).
  static Result<void> applyJournal(const std::filesystem::path& file, const DbOptions& options,
                                   const std::vector<storage::CommitJournal::Record>& records);
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
  // on without a copy), once the commit holding the write is done — on a
  // commit thread (storage/commit_threads.h), with the same rules as recordAttemptAsync's
  // `then`. So a request waiting for its commit holds no thread, and one
  // commit takes as many events as are in flight.
  using IngestDone = std::function<void(Result<IngestOutcome>, InboundEvent&)>;
  void ingestAsync(InboundEvent event, std::vector<std::string> targetIds,
                   std::chrono::milliseconds idempotencyWindow, IngestDone then);

  int schemaVersion();

  // Copies the WAL into the file and empties it (wal_checkpoint(TRUNCATE)),
  // with the disk flushes that takes, so the next open of the file has no
  // WAL to read. False when another connection's read or write kept part of
  // it; with Wait::kNo at once rather than after the busy timeout.
  enum class Wait { kForOthers, kNo };
  Result<bool> checkpointWal(Wait wait);
  // The size of the file's WAL on disk now (0 when there is none).
  std::uintmax_t walBytes() const;

  // Inserts the delivery_results row and updates the delivery in one
  // transaction: an attempt is never recorded without its outcome.
  Result<void> recordAttempt(const AttemptRecord& attempt);
  // The same write without waiting for it: returns at once, and `then` gets
  // what recordAttempt() would have returned once the commit holding the
  // write is done, on a commit thread (group commit). So a
  // delivery worker goes on to its next attempt while the result is written.
  // The commit survives the process being killed; a power cut may lose it
  // (no disk flush of its own), which can only send the delivery again.
  // `then` must not throw, and must not wait for a submitted write of any
  // EventsDb (the commit threads may be the ones that would have to lead it).
  void recordAttemptAsync(AttemptRecord attempt, std::function<void(Result<void>)> then);
  // Writes queued for a group or running in one, waited for or not.
  size_t writesWaiting() const;
  // Ends a delivery as `failed` with `reason` without an attempt (its
  // target is gone). Writes nothing about the target.
  Result<void> failWithoutAttempt(const std::string& deliveryId, FailureReason reason);
  // Moves next_attempt_at without an attempt (an open circuit breaker).
  Result<void> deferDelivery(const std::string& deliveryId, TimePoint nextAttemptAt);
  // What is forwarded of a stored event ("not_found" if it is gone).
  Result<EventPayload> loadPayload(const std::string& eventId);
  struct BacklogCount {
    std::string targetId;
    DeliveryStatus status = DeliveryStatus::kPending;  // kPending or kRetrying
    int64_t count = 0;
    // created_at of the target's oldest due delivery (no next attempt
    // time, or one that has passed), on the group of its status only.
    std::optional<TimePoint> oldestDueCreatedAt;
  };
  // How many deliveries wait, per target and status (for the sampler).
  Result<std::vector<BacklogCount>> backlogByTarget();
  // The same, read on the writing connection: for a DB about to close that
  // nobody else holds (EventsDbPool's closer), so the count needs no
  // connection of its own, and stays true until the file is opened again.
  Result<std::vector<BacklogCount>> backlogOnWriter();
  // The same, read from a file nobody holds open here: opened read-only,
  // without migrating or creating it, and closed again ("not_found" if the
  // file does not exist). `now` decides what is due.
  static Result<std::vector<BacklogCount>> backlogOfFile(const std::filesystem::path& file,
                                                         TimePoint now);
  // The same, read as unfinishedOfFileAlone() reads: on a connection that
  // holds the file alone, so the read sets up no shared WAL index and gives
  // a file without a WAL none. nullopt where that cannot be done (the file
  // is missing, open elsewhere, of another schema version, or unreadable).
  static std::optional<std::vector<BacklogCount>> backlogOfFileAlone(
      const std::filesystem::path& file, TimePoint now);
  // Every pending or retrying delivery, oldest first; only those of
  // `targetId` if given (a refill of one target's queue). One query, the
  // latest result's time of each retrying one included. `limit`: at most
  // that many (a FIFO target's next delivery is the first). With `cursor`,
  // only those behind *cursor, which is then moved to the last one read: a
  // page at a time. Sees what is committed: a write in progress neither
  // shows nor holds the read up.
  Result<std::vector<UnfinishedDelivery>> unfinishedDeliveries(
      const std::string* targetId = nullptr, std::optional<int> limit = std::nullopt,
      DeliveryPosition* cursor = nullptr);
  // All of them, read from a file nobody holds open, on a connection that
  // holds it alone for the read (storage::openAlone): without setting up the
  // shared WAL index, most of what open() costs. Writes, creates and
  // migrates nothing. nullopt where that cannot be done (the file is
  // missing, open elsewhere, of another schema version, or cannot be read):
  // open() it and read it so, which also reports what is wrong. Also
  // nullopt if more than `mostRows` wait.
  // With the rows, how many wait per target and status, counted as
  // backlogByTarget() counts them (`now` decides which are due): a caller
  // that read the file anyway can spare the backlog sampler a read of it.
  struct UnfinishedOfFile {
    std::vector<UnfinishedDelivery> rows;  // oldest first
    std::vector<BacklogCount> backlog;
  };
  static std::optional<UnfinishedOfFile> unfinishedOfFileAlone(
      const std::filesystem::path& file, TimePoint now, std::optional<int> mostRows = std::nullopt);
  // Each target with a pending or retrying delivery in `file`, and whether
  // any of them is due at `now` (no next attempt time, or one not later),
  // read as unfinishedOfFileAlone() reads: the sweep's question to a file
  // nobody holds open. nullopt where that read cannot be done, or if more
  // than `mostRows` wait (the file's opens wait for the read meanwhile).
  struct WaitingTarget {
    std::string targetId;
    bool anyDue = false;
  };
  static std::optional<std::vector<WaitingTarget>> waitingTargetsOfFileAlone(
      const std::filesystem::path& file, TimePoint now, int mostRows);
  // The first target id after `after` (in byte order) with a pending or
  // retrying delivery; none when there is no such target. An index seek:
  // the sweep walks a webhook's targets with it, a target at a time.
  Result<std::optional<std::string>> nextWaitingTarget(const std::string& after);

  // --- History (events_db_history.cpp) -------------------------------------
  // Read-only views for the admin API, each read from one snapshot on a
  // connection of its own (openSnapshot). "not_found" for an unknown id.

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

  // --- Pull targets (events_db_pull.cpp) -------------------------------------
  // A pull target's deliveries wait pending or retrying until a consumer
  // leases them; a lease is lease_hash and leased_until on the row, so a
  // restart forgets nothing and one that ran out needs no cleanup. Each call
  // is one group-committed (durable) write.

  // Leases up to `count` of `targetId`'s waiting deliveries that are due and
  // held by no lease that runs past now, oldest first, to `leaseHash` until
  // `leaseFor` from now. With `fifo`, only the oldest waiting delivery, and
  // only when it is due and nobody holds it.
  Result<LeaseGrant> lease(const std::string& targetId, int count, bool fifo,
                           const std::string& leaseHash, std::chrono::seconds leaseFor);
  // Lets go of `deliveryId` if `leaseHash` holds it, without an attempt.
  Result<void> releaseLease(const std::string& deliveryId, const std::string& leaseHash);
  // Acks, nacks or extends each id the lease holds; an id it does not hold
  // (another lease's, another target's, settled) or holds no longer (run
  // out) is answered with its error and left as it was. One answer per id,
  // in order.
  Result<std::vector<LeaseAnswer>> settleLease(const LeaseSettlement& settlement);
  // What settleLease answers for a webhook with no events file (it has had
  // no event, so no lease holds anything of it): each id is not held.
  static std::vector<LeaseAnswer> settleWithoutFile(const LeaseSettlement& settlement);

  // --- Statistics (events_db_stats.cpp) --------------------------------------
  // Counts for the admin API and the console, read from one snapshot on a
  // connection of its own (openSnapshot): events, deliveries by status (in
  // all and per target), each target's latest failed attempt, and the last
  // `hours` hours (by the clock) hour by hour.
  Result<WebhookStats> stats(int hours);
  // The same, read as unfinishedOfFileAlone() reads: on a connection that
  // holds the file alone, so a view of a quiet file gives it no WAL or
  // shared index (-shm). `now` is the clock. nullopt where that cannot be
  // done (missing, open elsewhere, another schema version, unreadable).
  static std::optional<WebhookStats> statsOfFileAlone(const std::filesystem::path& file,
                                                      TimePoint now, int hours);
  // What stats() answers for a webhook with no file yet (no event).
  static WebhookStats statsOfNoEvents(TimePoint now, int hours);

  // --- Moving a webhook (webhook_transfer.cpp) -------------------------------
  // Merges the checked piece file `piece` (storage/webhook_transfer.h) in one
  // transaction on the writing connection, so that the file keeps one writer.
  Result<void> mergeTransferPiece(const std::filesystem::path& piece, DeliveryMerge deliveries);

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
  // Whether pruneEvents() may find anything to delete in `file` (an event
  // older than the window, or more events than the cap), read on a
  // connection that holds the file alone. nullopt when it cannot be read so
  // (missing, held by another connection, another schema version): open()
  // it then. A yes may still delete nothing (old events still waiting).
  static std::optional<bool> mayNeedPruningAlone(const std::filesystem::path& file, TimePoint now,
                                                 int retentionDays, int64_t maxEvents);

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
  // Gives free pages back to the file system (incremental_vacuum), then
  // checkpointWal(), so deleted and masked bytes leave the disk. False when
  // part of the WAL was kept: call again later.
  Result<bool> reclaimSpace();

 private:
  EventsDb(std::unique_ptr<SQLite::Database> db, const std::filesystem::path& file,
           const DbOptions& options, const Clock& clock);

  // `file` held alone (storage::openAlone) if it exists, nobody else holds
  // it and it has the current schema; else null (open() it then: that also
  // migrates an older file and reports what is wrong).
  static std::unique_ptr<SQLite::Database> openCurrentAlone(const std::filesystem::path& file);

  // A new read-only connection with a read transaction begun: every
  // statement on it sees the file as of its first one. An admin view reads
  // on it, not on db_, because a view of a big webhook (statistics over
  // every delivery: 55-75 ms at 200,000) would hold up the webhook's
  // ingests and result writes for as long, nor on reader_, whose lock every
  // payload load takes. Closing it ends the transaction.
  Result<std::unique_ptr<SQLite::Database>> openSnapshot() const;
  // Sets `db`'s page cache to `kib`.
  static Result<void> limitCache(SQLite::Database& db, int kib);

  // A read-only connection of the file, opened on first use
  // (openIfClosed), with the statements prepared on it.
  struct ReadConnection {
    std::unique_ptr<SQLite::Database> db;
    std::unique_ptr<storage::StatementCache> statements;  // dropped before db
  };
  Result<void> openIfClosed(ReadConnection& connection) const;
  // True if the scan connection is not open and no delivery waits, asked on
  // the writing one (an index seek): the sampler's and the sweep's passes
  // then open no scan connection on a node's many quiet files, each of
  // which it would hold, with its statements, until the file closes.
  Result<bool> nothingWaitsUnscanned() EXCLUDES(scanMutex_, dbMutex_);

  const Clock& clock_;
  const std::filesystem::path file_;
  const DbOptions options_;
  Mutex dbMutex_;
  const std::unique_ptr<SQLite::Database> db_ PT_GUARDED_BY(dbMutex_);
  // Prepared on db_, dropped before it.
  const std::unique_ptr<storage::StatementCache> statements_ PT_GUARDED_BY(dbMutex_);
  std::unique_ptr<storage::GroupCommit> writes_;         // groups the frequent small writes
  // Payload reads go through a second connection, so a delivery worker
  // loading a body does not wait for a commit's flush; a file's reads use
  // the writer instead until one finds a commit running (see loadPayload).
  Mutex readMutex_;
  ReadConnection reader_ GUARDED_BY(readMutex_);
  // The engine's reads of waiting deliveries (refills, the sweep, the
  // backlog sampler) go through a third: on db_ each read held up the
  // webhook's ingests and result writes while it ran, and on reader_ it
  // would hold up the payload loads. Its cached pages are given back after
  // each page of deliveries and each count (the next commit would make them
  // stale anyway), not after the sweep's one-row index seeks, which walk a
  // webhook's targets and would read the same index pages again each step.
  Mutex scanMutex_;
  ReadConnection scanner_ GUARDED_BY(scanMutex_);
};

}  // namespace webhooker
