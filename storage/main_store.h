// MainStore: webhooks, entrypoints, targets and settings in webhooker.db.
//
// Threading: every method may be called from any thread; one connection is
// shared behind dbMutex_. Errors: "not_found" for an unknown id (also an id
// that belongs to another webhook), "storage_busy"/"storage_error" for the
// database. The store stamps created/updated times from the injected clock.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "storage/access_records.h"
#include "storage/db_options.h"
#include "storage/history_records.h"
#include "storage/placement_records.h"
#include "storage/records.h"

namespace SQLite {
class Database;
class Statement;
}  // namespace SQLite

namespace webhooker::storage {
class GroupCommit;
class StatementCache;
}  // namespace webhooker::storage

namespace webhooker {

// A webhook with its entrypoints, oldest first (a list page's rows, a create's answer).
struct ListedWebhook {
  Webhook webhook;
  std::vector<Entrypoint> entrypoints;
};

struct WebhookPatch {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<int> retentionDays;
  std::optional<int64_t> maxEvents;
  std::optional<std::vector<std::string>> maskPointers;  // replaces the whole list
};

class MainStore {
 public:
  // Opens or creates the file and applies pending migrations.
  static Result<std::unique_ptr<MainStore>> open(const std::filesystem::path& file,
                                                 const DbOptions& options, const Clock& clock);
  ~MainStore();
  MainStore(const MainStore&) = delete;
  MainStore& operator=(const MainStore&) = delete;

  int schemaVersion();
  // The clock that stamps its rows.
  const Clock& clock() const { return clock_; }
  // Does the database take a write now? One small write transaction (an
  // fsync under synchronous=FULL); storage_unavailable on a full disk.
  Result<void> ping();

  // Creates the webhook and its first entrypoint in one transaction, with
  // `id` (a new UUID when empty). Concurrent creates share one transaction
  // and its one flush (storage/group_commit.h): an ok result means the rows
  // are durable; an error, that nothing of this webhook was written.
  Result<Webhook> createWebhook(const std::string& name, const std::string& description,
                                int retentionDays, int64_t maxEvents = Webhook::kDefaultMaxEvents,
                                const std::vector<std::string>& maskPointers = {},
                                const std::string& id = {});
  // The same, with the first entrypoint as written (what a read would give).
  Result<ListedWebhook> createWebhookWithEntrypoint(const std::string& name,
                                                    const std::string& description,
                                                    int retentionDays, int64_t maxEvents,
                                                    const std::vector<std::string>& maskPointers,
                                                    const std::string& id);
  Result<Webhook> getWebhook(const std::string& id);
  Result<std::vector<Webhook>> listWebhooks();
  // At most `limit` webhooks after `after`, oldest first by (created_at, id):
  // the admin API's pages. A webhook created during a walk sorts after every
  // page already given, so a walk sees each webhook once. `next` is the last
  // row's key when more follow. Each webhook comes with its entrypoints (as
  // listEntrypoints() gives them), all read in one query and one snapshot.
  Result<HistoryPage<ListedWebhook>> listWebhooksPage(int limit,
                                                      const std::optional<PageKey>& after);
  // Every webhook's id, in no particular order: for passes over all of them
  // that need nothing else of a webhook (a pass over 10,000 webhooks
  // reading whole rows spent half its time building them).
  Result<std::vector<std::string>> listWebhookIds();
  // Ids of the webhooks called `name`, oldest first (names need not be unique).
  Result<std::vector<std::string>> webhookIdsNamed(const std::string& name);
  Result<Webhook> updateWebhook(const std::string& id, const WebhookPatch& patch);
  // Removes the webhook with its entrypoints and targets.
  Result<void> deleteWebhook(const std::string& id);
  // The webhooks and entrypoints this node owns, with the placement version.
  Result<Placement> placement();
  // Marks the webhook as moving out to `node` (nullopt: not moving): its
  // targets stop being deliverable (TargetRecord::webhookMovingOut).
  Result<void> setWebhookMovingTo(const std::string& id, const std::optional<std::string>& node);
  // The webhook's rows (webhook, entrypoints, targets, target_health) as
  // JSON, secrets included, for the node it moves to; importWebhookRows()
  // writes them there in one transaction. "schema_mismatch" when the two
  // main DBs have different schema versions, "invalid_transfer" for rows
  // that do not fit, "conflict"-free: the caller checks the id is new.
  Result<std::string> webhookRows(const std::string& id);
  Result<void> importWebhookRows(const std::string& id, const std::string& rowsJson);

  // settings.name taken by another entrypoint of the webhook: "conflict".
  Result<Entrypoint> createEntrypoint(const std::string& webhookId,
                                      const EntrypointSettings& settings = {});
  // By entrypoint id alone: the ingest path knows nothing else.
  Result<Entrypoint> getEntrypoint(const std::string& id);
  Result<std::vector<Entrypoint>> listEntrypoints(const std::string& webhookId);
  // Ids of the webhook's entrypoints called `name` (names are unique within
  // a webhook: none or one).
  Result<std::vector<std::string>> entrypointIdsNamed(const std::string& webhookId,
                                                      const std::string& name);
  // Changes what `patch` sets in one statement; "conflict" naming the field
  // when another entrypoint of the webhook has the name.
  Result<Entrypoint> patchEntrypoint(const std::string& webhookId, const std::string& id,
                                     const EntrypointPatch& patch);
  // scheme "none" clears the secret.
  Result<Entrypoint> setEntrypointVerification(const std::string& webhookId, const std::string& id,
                                               VerificationScheme scheme,
                                               const std::string& secret);
  Result<Entrypoint> setEntrypointActive(const std::string& webhookId, const std::string& id,
                                         bool active);
  // Sets the event type rule (JSON, checked by the caller; empty: the default).
  Result<Entrypoint> setEntrypointEventTypeRule(const std::string& webhookId,
                                                const std::string& id, const std::string& rule);
  Result<void> deleteEntrypoint(const std::string& webhookId, const std::string& id);

  // `target.id`, times and deletedAt are set by the store.
  Result<TargetRecord> createTarget(TargetRecord target);
  // Finds soft-deleted targets too; callers check deletedAt.
  Result<TargetRecord> getTarget(const std::string& webhookId, const std::string& id);
  // Targets not deleted, oldest first.
  Result<std::vector<TargetRecord>> listTargets(const std::string& webhookId);
  // Ids of the webhook's live targets called `name`, oldest first.
  Result<std::vector<std::string>> targetIdsNamed(const std::string& webhookId,
                                                  const std::string& name);
  // Targets not deleted, of every webhook, in no particular order.
  Result<std::vector<TargetRecord>> listLiveTargets();
  // Writes every mutable field of `target` (name, active, max_concurrency,
  // config, retry) for a target that is not deleted.
  Result<TargetRecord> updateTarget(const TargetRecord& target);
  Result<void> deleteTarget(const std::string& webhookId, const std::string& id);
  // id → type of every target that is not deleted, across all webhooks.
  Result<std::unordered_map<std::string, TargetType>> liveTargetTypes();

  // --- Endpoint health (storage/target_health_records.h) ---
  // Sets (reason) or clears (nullopt) a live target's disabled state. True
  // if it changed: a disabled target keeps its first reason and time.
  Result<bool> setTargetDisabled(const std::string& webhookId, const std::string& id,
                                 std::optional<DisabledReason> reason);
  // The breaker columns of a target's target_health row.
  Result<void> saveBreaker(const std::string& targetId, BreakerState state,
                           std::optional<TimePoint> openedAt, int consecutiveFailures);
  // Since when its attempts have failed without a success; nullopt clears it.
  Result<void> setFailingSince(const std::string& targetId, std::optional<TimePoint> since);
  // Ids of live targets whose deliveries wait on purpose (inactive or disabled).
  Result<std::unordered_set<std::string>> heldTargetIds();
  // Live targets disabled by the engine, across all webhooks.
  Result<std::vector<TargetRecord>> listDisabledTargets();
  // Every live target's target_health row.
  Result<std::vector<StoredTargetHealth>> listTargetHealth();

  // --- Access (storage/access_records.h) ---
  // `token.id` and createdAt are set by the store.
  Result<AccessTokenRecord> createAccessToken(AccessTokenRecord token);
  // The webhook's tokens, revoked ones too, oldest first.
  Result<std::vector<AccessTokenRecord>> listAccessTokens(const std::string& webhookId);
  // The token whose hash this is, whatever its state; nullopt when none.
  Result<std::optional<AccessTokenRecord>> findAccessToken(const std::string& tokenSha256);
  // Sets revoked_at (kept if already set); not_found for another webhook's id.
  Result<AccessTokenRecord> revokeAccessToken(const std::string& webhookId, const std::string& id);
  // `link.id` and createdAt are set by the store.
  Result<PortalLinkRecord> createPortalLink(PortalLinkRecord link);
  // Uses the link whose secret has this hash, once: only an unused link
  // before its expiry is exchanged, for a session whose hash and end are
  // given. nullopt when no such link is there (unknown, used or expired).
  Result<std::optional<PortalLinkRecord>> exchangePortalLink(const std::string& secretSha256,
                                                             const std::string& sessionSha256,
                                                             const std::string& sessionExpiresAt);
  // The link whose session has this hash, while the session lasts.
  Result<std::optional<PortalLinkRecord>> findPortalSession(const std::string& sessionSha256);
  // Ends the session now (signing out); nothing when there is none.
  Result<void> endPortalSession(const std::string& sessionSha256);
  // Appends one row; id and at are set by the store. Durable when ok, its
  // commit (and flush) shared with the concurrent ones and webhook creates.
  Result<void> appendAudit(AuditRecord record);
  // Newest first, ids below `beforeId` (0: from the newest), at most
  // `limit`; only the webhook's when `webhookId` is set.
  Result<std::vector<AuditRecord>> listAudit(const std::optional<std::string>& webhookId,
                                             int64_t beforeId, int limit);
  // Removes rows older than their webhook's retention_days (a row of no
  // webhook, or of a deleted one: older than `orphanDays`); how many went.
  // Portal links whose end is older than `orphanDays` go too.
  Result<int64_t> pruneAudit(int orphanDays = Webhook::kDefaultRetentionDays);

  Result<std::optional<std::string>> getSetting(const std::string& key);
  Result<void> setSetting(const std::string& key, const std::string& value);
  Result<void> deleteSetting(const std::string& key);

  // Creates queued or being committed (a test's view of their group).
  size_t createsQueued() const;

  // For a clean stop, once nothing writes: copies the WAL into the file and
  // empties it (wal_checkpoint(TRUNCATE)), as the events DBs' are, so a
  // stopped node's folder holds its data in its .db files. False, at once,
  // when another connection (a command reading the folder) kept part of it.
  Result<bool> checkpointWal();

  // Moves after every write this store makes, once it is committed (or
  // rolled back). A cache of what was read keeps it valid while the number
  // it read *before* reading has not moved.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  // dbMutex_ for a method that writes: generation_ moves when it is
  // released, after the method's transaction has ended.
  class SCOPED_CAPABILITY WriteLock {
   public:
    explicit WriteLock(MainStore& store) ACQUIRE(store.dbMutex_)
        : store_(store), lock_(store.dbMutex_) {}
    ~WriteLock() RELEASE() { store_.generation_.fetch_add(1, std::memory_order_release); }
    WriteLock(const WriteLock&) = delete;
    WriteLock& operator=(const WriteLock&) = delete;

   private:
    MainStore& store_;
    MutexLock lock_;
  };

  // Runs body(db) on db_ with dbMutex_ held, for a method that only reads;
  // a thrown SQLite error comes back as storageError(operation).
  template <typename Body>
  auto read(const char* operation, const Body& body) EXCLUDES(dbMutex_);
  // The same for a method that writes, under a WriteLock.
  template <typename Body>
  auto write(const char* operation, const Body& body) EXCLUDES(dbMutex_);

  MainStore(std::unique_ptr<SQLite::Database> db, const DbOptions& options, const Clock& clock);

  const Clock& clock_;
  const DbOptions options_;
  Mutex dbMutex_;  // one statement sequence at a time
  const std::unique_ptr<SQLite::Database> db_ PT_GUARDED_BY(dbMutex_);
  // The group commit of webhook creates and audit rows, and its statements
  // (used under dbMutex_ by the group's leader); destroyed before db_.
  const std::unique_ptr<storage::StatementCache> statements_;
  const std::unique_ptr<storage::GroupCommit> creates_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace webhooker
