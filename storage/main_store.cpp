#include "storage/main_store.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "base/time_format.h"
#include "base/uuid.h"
#include "storage/group_commit.h"
#include "storage/sqlite_database.h"
#include "storage/statement_cache.h"

namespace webhooker {

namespace {

constexpr const char* kWebhookColumns =
    "id, name, description, retention_days, max_events, mask_pointers, created_at, updated_at";

// Read after kWebhookColumns (8) and kTargetColumns (21): whether the
// webhook is moving out of this node.
constexpr const char* kWebhookMoving = ", moving_to";
constexpr const char* kTargetWebhookMoving =
    ", (SELECT w.moving_to IS NOT NULL FROM webhooks w WHERE w.id = targets.webhook_id)";

constexpr const char* kTargetColumns =
    "id, webhook_id, name, type, active, max_concurrency, config, max_retries, base_delay_ms, "
    "max_delay_ms, jitter, created_at, updated_at, deleted_at, "
    // Endpoint health, from 14 on (bindTargetHealthPolicy, readTargetHealth).
    "ordering, disable_after_ms, auto_resume, probe_interval_ms, disabled_reason, disabled_at, "
    "routing";  // 20

// mask_pointers is a JSON array of strings; the API wrote it, so anything
// else in it is skipped rather than fatal.
std::vector<std::string> readPointerList(const std::string& text) {
  std::vector<std::string> out;
  const auto list = nlohmann::json::parse(text, nullptr, false);
  if (list.is_array())
    for (const auto& p : list)
      if (p.is_string()) out.push_back(p.get<std::string>());
  return out;
}

std::string pointerListText(const std::vector<std::string>& pointers) {
  return nlohmann::json(pointers).dump();
}

Webhook readWebhook(SQLite::Statement& q) {
  Webhook w;
  w.id = q.getColumn(0).getString();
  w.name = q.getColumn(1).getString();
  w.description = q.getColumn(2).getString();
  w.retentionDays = q.getColumn(3).getInt();
  w.maxEvents = q.getColumn(4).getInt64();
  w.maskPointers = readPointerList(q.getColumn(5).getString());
  w.createdAt = q.getColumn(6).getString();
  w.updatedAt = q.getColumn(7).getString();
  if (q.getColumnCount() > 8 && !q.getColumn(8).isNull()) w.movingTo = q.getColumn(8).getString();
  return w;
}

constexpr const char* kEntrypointColumns =
    "id, webhook_id, active, created_at, updated_at, verification, "
    "COALESCE(verification_secret, ''), COALESCE(event_type_rule, ''), name, "
    "COALESCE(inbound_settings, ''), COALESCE(inbound_secrets, '')";

Entrypoint readEntrypoint(SQLite::Statement& q) {
  return Entrypoint{q.getColumn(0).getString(), q.getColumn(1).getString(),
                    q.getColumn(2).getInt() != 0, q.getColumn(3).getString(),
                    q.getColumn(4).getString(),
                    parseVerificationScheme(q.getColumn(5).getString()),
                    q.getColumn(6).getString(), q.getColumn(7).getString(),
                    q.getColumn(8).getString(), q.getColumn(9).getString(),
                    q.getColumn(10).getString()};
}

// Binds what a target's create and update both write, from active to
// jitter (seven columns in that order), starting at parameter `first`.
void bindTargetSettings(SQLite::Statement& q, const TargetRecord& t, int first) {
  q.bind(first, t.active ? 1 : 0);
  q.bind(first + 1, t.maxConcurrency);
  q.bind(first + 2, t.configJson);
  q.bind(first + 3, t.retry.maxRetries);
  q.bind(first + 4, t.retry.baseDelayMs);
  q.bind(first + 5, t.retry.maxDelayMs);
  q.bind(first + 6, t.retry.jitter);
}

// Binds the health policy (ordering to probe_interval_ms, four columns)
// starting at parameter `first`.
void bindTargetHealthPolicy(SQLite::Statement& q, const TargetRecord& t, int first) {
  q.bind(first, std::string(orderingWord(t.health.ordering)));
  q.bind(first + 1, static_cast<int64_t>(t.health.disableAfter.count()));
  q.bind(first + 2, t.health.autoResume ? 1 : 0);
  q.bind(first + 3, static_cast<int64_t>(t.health.probeInterval.count()));
}

void readTargetHealth(SQLite::Statement& q, TargetRecord& t) {
  t.health.ordering = parseOrdering(q.getColumn(14).getString()).value_or(TargetOrdering::kParallel);
  t.health.disableAfter = std::chrono::milliseconds(q.getColumn(15).getInt64());
  t.health.autoResume = q.getColumn(16).getInt() != 0;
  t.health.probeInterval = std::chrono::milliseconds(q.getColumn(17).getInt64());
  if (!q.getColumn(18).isNull()) {
    t.disabled = TargetDisabled{
        parseDisabledReason(q.getColumn(18).getString()).value_or(DisabledReason::kFailing),
        q.getColumn(19).isNull() ? "" : q.getColumn(19).getString()};
  }
}

// The targets table's CHECK constraint admits only the words of TargetType.
TargetType storedTargetType(const std::string& word) {
  return parseTargetType(word).value_or(TargetType::kHttp);
}

TargetRecord readTarget(SQLite::Statement& q) {
  TargetRecord t;
  t.id = q.getColumn(0).getString();
  t.webhookId = q.getColumn(1).getString();
  t.name = q.getColumn(2).getString();
  t.type = storedTargetType(q.getColumn(3).getString());
  t.active = q.getColumn(4).getInt() != 0;
  t.maxConcurrency = q.getColumn(5).getInt();
  t.configJson = q.getColumn(6).getString();
  t.retry.maxRetries = q.getColumn(7).getInt();
  t.retry.baseDelayMs = q.getColumn(8).getInt64();
  t.retry.maxDelayMs = q.getColumn(9).getInt64();
  t.retry.jitter = q.getColumn(10).getDouble();
  t.createdAt = q.getColumn(11).getString();
  t.updatedAt = q.getColumn(12).getString();
  if (!q.getColumn(13).isNull()) t.deletedAt = q.getColumn(13).getString();
  readTargetHealth(q, t);
  t.routingJson = q.getColumn(20).getString();
  t.webhookMovingOut = q.getColumn(21).getInt() != 0;
  return t;
}

// The targets `where` (what follows FROM targets) selects, with at most one
// bound value.
std::vector<TargetRecord> selectTargets(SQLite::Database& db, const char* where,
                                        const std::string* bound = nullptr) {
  SQLite::Statement q(db, std::string("SELECT ") + kTargetColumns + kTargetWebhookMoving +
                              " FROM targets " + where);
  if (bound) q.bind(1, *bound);
  std::vector<TargetRecord> out;
  while (q.executeStep()) out.push_back(readTarget(q));
  return out;
}

Error notFound(const char* what, const std::string& id) {
  return makeError(error_code::kNotFound, std::string(what) + " " + id + " does not exist");
}

// The not_found error for a webhook that is not there, before anything is
// written for it.
std::optional<Error> missingWebhook(SQLite::Database& db, const std::string& id) {
  SQLite::Statement exists(db, "SELECT 1 FROM webhooks WHERE id = ?");
  exists.bind(1, id);
  if (exists.executeStep()) return std::nullopt;
  return notFound("webhook", id);
}

// Whether an entrypoint of the webhook other than `id` is called `name`.
bool entrypointNameTaken(SQLite::Database& db, const std::string& webhookId,
                         const std::string& name, const std::string& id) {
  SQLite::Statement q(db,
                      "SELECT 1 FROM entrypoints WHERE webhook_id = ? AND name = ? AND id <> ?");
  q.bind(1, webhookId);
  q.bind(2, name);
  q.bind(3, id);
  return q.executeStep();
}

Error nameTaken(const std::string& name) {
  return makeError(error_code::kConflict, "name: another entrypoint of this webhook is called " +
                                              nlohmann::json(name).dump());
}

// body(db), with a thrown SQLite error as storageError(operation).
template <typename Body>
auto storageCall(const char* operation, const Body& body, SQLite::Database& db)
    -> decltype(body(db)) {
  try {
    return body(db);
  } catch (const std::exception& e) {
    return storage::storageError(operation, e);
  }
}

}  // namespace

template <typename Body>
auto MainStore::read(const char* operation, const Body& body) {
  MutexLock lock(dbMutex_);
  return storageCall(operation, body, *db_);
}

template <typename Body>
auto MainStore::write(const char* operation, const Body& body) {
  WriteLock lock(*this);
  return storageCall(operation, body, *db_);
}

MainStore::MainStore(std::unique_ptr<SQLite::Database> db, const DbOptions& options,
                     const Clock& clock)
    : clock_(clock),
      options_(options),
      db_(std::move(db)),
      statements_(std::make_unique<storage::StatementCache>(*db_)),
      creates_(std::make_unique<storage::GroupCommit>(*db_, dbMutex_, *statements_, options.sync)) {
}

MainStore::~MainStore() = default;

Result<std::unique_ptr<MainStore>> MainStore::open(const std::filesystem::path& file,
                                                   const DbOptions& options, const Clock& clock) {
  auto db = storage::openDatabase(file, options, mainMigrations());
  if (!db) return db.error();
  return std::unique_ptr<MainStore>(new MainStore(std::move(db.value()), options, clock));
}

Result<bool> MainStore::checkpointWal() {
  MutexLock lock(dbMutex_);
  return storage::checkpointWal(*db_, options_, /*waitForOthers=*/false);
}

int MainStore::schemaVersion() {
  MutexLock lock(dbMutex_);
  return storage::schemaVersion(*db_);
}

Result<void> MainStore::ping() {
  return read("ping", [&](SQLite::Database& db) -> Result<void> {
    // Writes the header's user_version back unchanged: a write that must
    // reach the disk, so a full disk or a read-only file system shows here
    // (a bare SELECT is answered from memory). Not a WriteLock: nothing
    // the ingest cache holds changes.
    const int version = db.execAndGet("PRAGMA user_version").getInt();
    db.exec("PRAGMA user_version = " + std::to_string(version));
    return {};
  });
}

Result<Placement> MainStore::placement() {
  return read("read placement", [&](SQLite::Database& db) -> Result<Placement> {
    // One read transaction: the version and the list are of the same moment.
    SQLite::Transaction snapshot(db, SQLite::TransactionBehavior::DEFERRED);
    Placement out;
    out.version = db.execAndGet("SELECT version FROM placement WHERE id = 1").getInt64();
    SQLite::Statement q(db,
                        "SELECT w.id, e.id, w.moving_to FROM webhooks w "
                        "LEFT JOIN entrypoints e ON e.webhook_id = w.id "
                        "ORDER BY w.created_at, w.id, e.created_at, e.id");
    while (q.executeStep()) {
      const std::string webhookId = q.getColumn(0).getString();
      if (out.webhooks.empty() || out.webhooks.back().webhookId != webhookId) {
        out.webhooks.push_back({webhookId, {}, std::nullopt});
        if (!q.getColumn(2).isNull()) out.webhooks.back().movingTo = q.getColumn(2).getString();
      }
      if (!q.getColumn(1).isNull())
        out.webhooks.back().entrypointIds.push_back(q.getColumn(1).getString());
    }
    snapshot.commit();
    return out;
  });
}

Result<void> MainStore::setWebhookMovingTo(const std::string& id,
                                           const std::optional<std::string>& node) {
  return write("set webhook moving", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db, "UPDATE webhooks SET moving_to = ? WHERE id = ?");
    if (node) q.bind(1, *node);
    q.bind(2, id);
    if (q.exec() == 0) return notFound("webhook", id);
    return {};
  });
}

namespace {

// The rows a webhook has in the main DB, table by table, for a move.
constexpr std::pair<const char*, const char*> kWebhookTables[] = {
    {"webhooks", "id = ?1"},
    {"entrypoints", "webhook_id = ?1"},
    {"targets", "webhook_id = ?1"},
    {"target_health", "target_id IN (SELECT id FROM targets WHERE webhook_id = ?1)"},
};

nlohmann::json columnValue(const SQLite::Column& c) {
  if (c.isNull()) return nullptr;
  if (c.isInteger()) return c.getInt64();
  if (c.isFloat()) return c.getDouble();
  return c.getString();
}

}  // namespace

Result<std::string> MainStore::webhookRows(const std::string& id) {
  return read("read webhook rows", [&](SQLite::Database& db) -> Result<std::string> {
    SQLite::Transaction snapshot(db, SQLite::TransactionBehavior::DEFERRED);
    nlohmann::json out = {{"schema_version", storage::schemaVersion(db)}};
    for (const auto& [table, where] : kWebhookTables) {
      nlohmann::json rows = nlohmann::json::array();
      SQLite::Statement q(db, std::string("SELECT * FROM ") + table + " WHERE " + where);
      q.bind(1, id);
      while (q.executeStep()) {
        nlohmann::json row = nlohmann::json::object();
        for (int i = 0; i < q.getColumnCount(); ++i) row[q.getColumnName(i)] = columnValue(q.getColumn(i));
        rows.push_back(std::move(row));
      }
      out[table] = std::move(rows);
    }
    snapshot.commit();
    if (out["webhooks"].empty()) return notFound("webhook", id);
    return out.dump();
  });
}

Result<void> MainStore::importWebhookRows(const std::string& id, const std::string& rowsJson) {
  const auto rows = nlohmann::json::parse(rowsJson, nullptr, /*allow_exceptions=*/false);
  const auto invalid = [](const std::string& why) {
    return makeError(error_code::kInvalidTransfer,
                     "the webhook's configuration cannot be used: " + why);
  };
  if (!rows.is_object() || !rows.contains("schema_version")) return invalid("not an object");
  return write("import webhook rows", [&](SQLite::Database& db) -> Result<void> {
    if (rows["schema_version"] != storage::schemaVersion(db))
      return makeError(error_code::kSchemaMismatch,
                       "the source's main database has another schema version: run the same "
                       "webhooker version on both nodes");
    SQLite::Transaction txn(db);
    for (const auto& [table, where] : kWebhookTables) {
      if (!rows.contains(table) || !rows[table].is_array()) return invalid(std::string("no ") + table);
      const std::vector<std::string> known = storage::tableColumns(db, table);
      for (const nlohmann::json& row : rows[table]) {
        if (!row.is_object()) return invalid(std::string("a row of ") + table);
        std::string names, marks;
        std::vector<const nlohmann::json*> values;
        for (const auto& [name, value] : row.items()) {
          if (std::find(known.begin(), known.end(), name) == known.end())
            return invalid(std::string("no column ") + name + " in " + table);
          if (name == "moving_to") continue;  // the node it moves to owns it
          names += (names.empty() ? "" : ", ") + name;
          marks += marks.empty() ? "?" : ", ?";
          values.push_back(&value);
        }
        if (table == std::string("webhooks") && row.value("id", std::string()) != id)
          return invalid("another webhook's rows");
        SQLite::Statement insert(db, std::string("INSERT INTO ") + table + " (" + names +
                                         ") VALUES (" + marks + ")");
        for (size_t i = 0; i < values.size(); ++i) {
          const nlohmann::json& v = *values[i];
          const int n = static_cast<int>(i) + 1;
          if (v.is_null()) insert.bind(n);
          else if (v.is_number_integer()) insert.bind(n, v.get<int64_t>());
          else if (v.is_number()) insert.bind(n, v.get<double>());
          else if (v.is_string()) insert.bind(n, v.get<std::string>());
          else return invalid(std::string("a value in ") + table);
        }
        insert.exec();
      }
    }
    txn.commit();
    return {};
  });
}

Result<Webhook> MainStore::createWebhook(const std::string& name, const std::string& description,
                                         int retentionDays, int64_t maxEvents,
                                         const std::vector<std::string>& maskPointers,
                                         const std::string& id) {
  auto created =
      createWebhookWithEntrypoint(name, description, retentionDays, maxEvents, maskPointers, id);
  if (!created) return created.error();
  return std::move(created->webhook);
}

Result<ListedWebhook> MainStore::createWebhookWithEntrypoint(
    const std::string& name, const std::string& description, int retentionDays, int64_t maxEvents,
    const std::vector<std::string>& maskPointers, const std::string& id) {
  const std::string now = formatTime(clock_.now());
  Webhook w;
  w.id = id.empty() ? newUuid() : id;
  w.name = name;
  w.description = description;
  w.retentionDays = retentionDays;
  w.maxEvents = maxEvents;
  w.maskPointers = maskPointers;
  w.createdAt = now;
  w.updatedAt = now;
  const std::string pointers = pointerListText(w.maskPointers);
  const std::string entrypointId = newUuid();
  // An app provisioning its tenants creates many at once: each create one
  // transaction with a flush of its own made them wait in line for the
  // disk. They share the group's transaction (and flush) instead.
  auto written = creates_->run("create webhook", [&](storage::StatementCache& sql) -> Result<void> {
    auto insert = sql.get(std::string("INSERT INTO webhooks (") + kWebhookColumns +
                          ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    insert->bind(1, w.id);
    insert->bind(2, w.name);
    insert->bind(3, w.description);
    insert->bind(4, w.retentionDays);
    insert->bind(5, w.maxEvents);
    insert->bind(6, pointers);
    insert->bind(7, now);
    insert->bind(8, now);
    insert->exec();
    auto entry = sql.get(
        "INSERT INTO entrypoints (id, webhook_id, active, created_at, updated_at, name) "
        "VALUES (?, ?, 1, ?, ?, ?)");
    entry->bind(1, entrypointId);
    entry->bind(2, w.id);
    entry->bind(3, now);
    entry->bind(4, now);
    entry->bind(5, std::string(kFirstEntrypointName));
    entry->exec();
    return {};
  });
  // As a WriteLock's end would: caches of what was read see the change.
  generation_.fetch_add(1, std::memory_order_release);
  if (!written) return written.error();
  // As readEntrypoint() reads the row: the columns not written hold their
  // defaults, which are Entrypoint's.
  Entrypoint first;
  first.id = entrypointId;
  first.webhookId = w.id;
  first.createdAt = now;
  first.updatedAt = now;
  first.name = kFirstEntrypointName;
  return ListedWebhook{std::move(w), {std::move(first)}};
}

size_t MainStore::createsQueued() const { return creates_->waiting(); }

Result<Webhook> MainStore::getWebhook(const std::string& id) {
  return read("get webhook", [&](SQLite::Database& db) -> Result<Webhook> {
    SQLite::Statement q(db, std::string("SELECT ") + kWebhookColumns + kWebhookMoving +
                                  " FROM webhooks WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return notFound("webhook", id);
    return readWebhook(q);
  });
}

Result<std::vector<Webhook>> MainStore::listWebhooks() {
  return read("list webhooks", [&](SQLite::Database& db) -> Result<std::vector<Webhook>> {
    SQLite::Statement q(db, std::string("SELECT ") + kWebhookColumns + kWebhookMoving +
                                  " FROM webhooks ORDER BY created_at, id");
    std::vector<Webhook> out;
    while (q.executeStep()) out.push_back(readWebhook(q));
    return out;
  });
}

Result<HistoryPage<ListedWebhook>> MainStore::listWebhooksPage(
    int limit, const std::optional<PageKey>& after) {
  return read("list webhooks", [&](SQLite::Database& db) -> Result<HistoryPage<ListedWebhook>> {
    SQLite::Transaction snapshot(db, SQLite::TransactionBehavior::DEFERRED);
    // One more row than asked says whether another page follows.
    SQLite::Statement q(db, std::string("SELECT ") + kWebhookColumns + kWebhookMoving +
                                  " FROM webhooks WHERE (created_at, id) > (?, ?)"
                                  " ORDER BY created_at, id LIMIT ?");
    const PageKey from = after.value_or(PageKey{});
    q.bind(1, from.time);
    q.bind(2, from.id);
    q.bind(3, limit + 1);
    HistoryPage<ListedWebhook> page;
    while (q.executeStep()) page.items.push_back({readWebhook(q), {}});
    if (page.items.size() > static_cast<size_t>(limit)) {
      page.items.pop_back();
      page.next = PageKey{page.items.back().webhook.createdAt, page.items.back().webhook.id};
    }
    if (page.items.empty()) return page;
    // The page's entrypoints in one query over the page's key range (one
    // query per webhook was 501 queries for a page of 500), oldest first as
    // listEntrypoints() gives them, then handed to their webhooks.
    std::unordered_map<std::string, std::vector<Entrypoint>*> byWebhook;
    for (ListedWebhook& listed : page.items) byWebhook[listed.webhook.id] = &listed.entrypoints;
    SQLite::Statement eps(db, std::string("SELECT ") + kEntrypointColumns +
                                  " FROM entrypoints WHERE webhook_id IN (SELECT id FROM webhooks"
                                  " WHERE (created_at, id) > (?, ?) AND (created_at, id) <= (?, ?))"
                                  " ORDER BY created_at, id");
    eps.bind(1, from.time);
    eps.bind(2, from.id);
    eps.bind(3, page.items.back().webhook.createdAt);
    eps.bind(4, page.items.back().webhook.id);
    while (eps.executeStep()) {
      Entrypoint e = readEntrypoint(eps);
      if (auto it = byWebhook.find(e.webhookId); it != byWebhook.end())
        it->second->push_back(std::move(e));
    }
    snapshot.commit();
    return page;
  });
}

Result<std::vector<std::string>> MainStore::listWebhookIds() {
  return read("list webhook ids", [&](SQLite::Database& db) -> Result<std::vector<std::string>> {
    SQLite::Statement q(db, "SELECT id FROM webhooks");
    std::vector<std::string> out;
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  });
}

Result<std::vector<std::string>> MainStore::webhookIdsNamed(const std::string& name) {
  return read("find webhooks by name", [&](SQLite::Database& db) -> Result<std::vector<std::string>> {
    SQLite::Statement q(db, "SELECT id FROM webhooks WHERE name = ? ORDER BY created_at, id");
    q.bind(1, name);
    std::vector<std::string> out;
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  });
}

Result<Webhook> MainStore::updateWebhook(const std::string& id, const WebhookPatch& patch) {
  auto written = write("update webhook", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db,
                        "UPDATE webhooks SET name = COALESCE(?, name), "
                        "description = COALESCE(?, description), "
                        "retention_days = COALESCE(?, retention_days), "
                        "max_events = COALESCE(?, max_events), "
                        "mask_pointers = COALESCE(?, mask_pointers), updated_at = ? "
                        "WHERE id = ?");
    if (patch.name) q.bind(1, *patch.name);
    if (patch.description) q.bind(2, *patch.description);
    if (patch.retentionDays) q.bind(3, *patch.retentionDays);
    if (patch.maxEvents) q.bind(4, *patch.maxEvents);
    if (patch.maskPointers) q.bind(5, pointerListText(*patch.maskPointers));
    q.bind(6, formatTime(clock_.now()));
    q.bind(7, id);
    if (q.exec() == 0) return notFound("webhook", id);
    return {};
  });
  if (!written) return written.error();
  return getWebhook(id);
}

Result<void> MainStore::deleteWebhook(const std::string& id) {
  return write("delete webhook", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db, "DELETE FROM webhooks WHERE id = ?");
    q.bind(1, id);
    if (q.exec() == 0) return notFound("webhook", id);
    return {};
  });
}

Result<Entrypoint> MainStore::createEntrypoint(const std::string& webhookId,
                                              const EntrypointSettings& settings) {
  const std::string now = formatTime(clock_.now());
  Entrypoint ep{newUuid(),
                webhookId,
                settings.active,
                now,
                now,
                settings.verification,
                settings.verificationSecret,
                settings.eventTypeRule,
                settings.name,
                settings.inboundSettings,
                settings.inboundSecrets};
  return write("create entrypoint", [&](SQLite::Database& db) -> Result<Entrypoint> {
    if (auto missing = missingWebhook(db, webhookId)) return *missing;
    if (ep.name.empty()) {
      // "ep-" and the id's first 8 characters; its whole id should another
      // entrypoint of the webhook have taken that.
      ep.name = "ep-" + ep.id.substr(0, 8);
      if (entrypointNameTaken(db, webhookId, ep.name, ep.id)) ep.name = "ep-" + ep.id;
    } else if (entrypointNameTaken(db, webhookId, ep.name, ep.id)) {
      return nameTaken(ep.name);
    }
    SQLite::Statement q(db,
                        "INSERT INTO entrypoints (id, webhook_id, active, created_at, updated_at, "
                        "verification, verification_secret, event_type_rule, name, "
                        "inbound_settings, inbound_secrets) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    q.bind(1, ep.id);
    q.bind(2, ep.webhookId);
    q.bind(3, ep.active ? 1 : 0);
    q.bind(4, now);
    q.bind(5, now);
    q.bind(6, std::string(schemeWord(settings.verification)));
    if (settings.verification != VerificationScheme::kNone) q.bind(7, ep.verificationSecret);
    if (!ep.eventTypeRule.empty()) q.bind(8, ep.eventTypeRule);
    q.bind(9, ep.name);
    if (!ep.inboundSettings.empty()) q.bind(10, ep.inboundSettings);
    if (!ep.inboundSecrets.empty()) q.bind(11, ep.inboundSecrets);
    q.exec();
    return ep;
  });
}

Result<Entrypoint> MainStore::getEntrypoint(const std::string& id) {
  return read("get entrypoint", [&](SQLite::Database& db) -> Result<Entrypoint> {
    SQLite::Statement q(db,
                        std::string("SELECT ") + kEntrypointColumns + " FROM entrypoints " +
                        "WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return notFound("entrypoint", id);
    return readEntrypoint(q);
  });
}

Result<std::vector<Entrypoint>> MainStore::listEntrypoints(const std::string& webhookId) {
  return read("list entrypoints", [&](SQLite::Database& db) -> Result<std::vector<Entrypoint>> {
    SQLite::Statement q(db,
                        std::string("SELECT ") + kEntrypointColumns + " FROM entrypoints " +
                        "WHERE webhook_id = ? ORDER BY created_at, id");
    q.bind(1, webhookId);
    std::vector<Entrypoint> out;
    while (q.executeStep()) out.push_back(readEntrypoint(q));
    return out;
  });
}

Result<std::vector<std::string>> MainStore::entrypointIdsNamed(const std::string& webhookId,
                                                              const std::string& name) {
  return read("find entrypoints by name",
              [&](SQLite::Database& db) -> Result<std::vector<std::string>> {
                SQLite::Statement q(db,
                                    "SELECT id FROM entrypoints WHERE webhook_id = ? AND name = ?");
                q.bind(1, webhookId);
                q.bind(2, name);
                std::vector<std::string> out;
                while (q.executeStep()) out.push_back(q.getColumn(0).getString());
                return out;
              });
}

Result<Entrypoint> MainStore::patchEntrypoint(const std::string& webhookId,
                                              const std::string& id,
                                              const EntrypointPatch& patch) {
  auto written = write("update entrypoint", [&](SQLite::Database& db) -> Result<void> {
    // One statement: a refused name leaves the other fields as they were.
    if (patch.name && entrypointNameTaken(db, webhookId, *patch.name, id))
      return nameTaken(*patch.name);
    SQLite::Statement q(
        db,
        "UPDATE entrypoints SET name = COALESCE(?1, name), active = COALESCE(?2, active), "
        "verification = COALESCE(?3, verification), "
        "verification_secret = CASE WHEN ?3 IS NULL THEN verification_secret ELSE ?4 END, "
        "inbound_settings = CASE WHEN ?12 THEN ?10 ELSE inbound_settings END, "
        "inbound_secrets = CASE WHEN ?12 THEN ?11 ELSE inbound_secrets END, "
        "event_type_rule = CASE WHEN ?5 THEN NULLIF(?6, '') ELSE event_type_rule END, "
        "updated_at = ?7 WHERE id = ?8 AND webhook_id = ?9");
    if (patch.name) q.bind(1, *patch.name);
    if (patch.active) q.bind(2, *patch.active ? 1 : 0);
    q.bind(12, patch.verification ? 1 : 0);
    if (const auto& v = patch.verification) {
      // No scheme: the stored word (one this release does not know) and
      // its secret stay; the settings beside them are still written.
      if (v->verification) {
        q.bind(3, std::string(schemeWord(*v->verification)));
        if (*v->verification != VerificationScheme::kNone) q.bind(4, v->verificationSecret);
      }
      if (!v->inboundSettings.empty()) q.bind(10, v->inboundSettings);
      if (!v->inboundSecrets.empty()) q.bind(11, v->inboundSecrets);
    }
    q.bind(5, patch.eventTypeRule ? 1 : 0);
    q.bind(6, patch.eventTypeRule.value_or(""));
    q.bind(7, formatTime(clock_.now()));
    q.bind(8, id);
    q.bind(9, webhookId);
    if (q.exec() == 0) return notFound("entrypoint", id);
    return {};
  });
  if (!written) return written.error();
  return getEntrypoint(id);
}

Result<Entrypoint> MainStore::setEntrypointVerification(const std::string& webhookId,
                                                        const std::string& id,
                                                        VerificationScheme scheme,
                                                        const std::string& secret) {
  EntrypointPatch patch;
  patch.verification = EntrypointInbound{scheme, secret, "", ""};
  return patchEntrypoint(webhookId, id, patch);
}

Result<Entrypoint> MainStore::setEntrypointActive(const std::string& webhookId,
                                                  const std::string& id, bool active) {
  EntrypointPatch patch;
  patch.active = active;
  return patchEntrypoint(webhookId, id, patch);
}

Result<Entrypoint> MainStore::setEntrypointEventTypeRule(const std::string& webhookId,
                                                        const std::string& id,
                                                        const std::string& rule) {
  EntrypointPatch patch;
  patch.eventTypeRule = rule;
  return patchEntrypoint(webhookId, id, patch);
}

Result<void> MainStore::deleteEntrypoint(const std::string& webhookId, const std::string& id) {
  return write("delete entrypoint", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db, "DELETE FROM entrypoints WHERE id = ? AND webhook_id = ?");
    q.bind(1, id);
    q.bind(2, webhookId);
    if (q.exec() == 0) return notFound("entrypoint", id);
    return {};
  });
}

Result<TargetRecord> MainStore::createTarget(TargetRecord t) {
  const std::string now = formatTime(clock_.now());
  t.id = newUuid();
  t.createdAt = now;
  t.updatedAt = now;
  t.deletedAt.reset();
  t.disabled.reset();
  return write("create target", [&](SQLite::Database& db) -> Result<TargetRecord> {
    if (auto missing = missingWebhook(db, t.webhookId)) return *missing;
    SQLite::Statement q(db, std::string("INSERT INTO targets (") + kTargetColumns +
                                  ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, "
                                  "?, ?, ?, ?, NULL, NULL, ?)");
    q.bind(1, t.id);
    q.bind(2, t.webhookId);
    q.bind(3, t.name);
    q.bind(4, std::string(targetTypeWord(t.type)));
    bindTargetSettings(q, t, 5);
    q.bind(12, now);
    q.bind(13, now);
    bindTargetHealthPolicy(q, t, 14);
    q.bind(18, t.routingJson);
    q.exec();
    return t;
  });
}

Result<TargetRecord> MainStore::getTarget(const std::string& webhookId, const std::string& id) {
  return read("get target", [&](SQLite::Database& db) -> Result<TargetRecord> {
    SQLite::Statement q(db, std::string("SELECT ") + kTargetColumns + kTargetWebhookMoving +
                                  " FROM targets WHERE id = ? AND webhook_id = ?");
    q.bind(1, id);
    q.bind(2, webhookId);
    if (!q.executeStep()) return notFound("target", id);
    return readTarget(q);
  });
}

Result<std::vector<TargetRecord>> MainStore::listTargets(const std::string& webhookId) {
  return read("list targets", [&](SQLite::Database& db) -> Result<std::vector<TargetRecord>> {
    return selectTargets(db, "WHERE webhook_id = ? AND deleted_at IS NULL ORDER BY created_at, id",
                         &webhookId);
  });
}

Result<std::vector<std::string>> MainStore::targetIdsNamed(const std::string& webhookId,
                                                           const std::string& name) {
  return read("find targets by name", [&](SQLite::Database& db) -> Result<std::vector<std::string>> {
    SQLite::Statement q(db,
                        "SELECT id FROM targets WHERE webhook_id = ? AND name = ? AND "
                        "deleted_at IS NULL ORDER BY created_at, id");
    q.bind(1, webhookId);
    q.bind(2, name);
    std::vector<std::string> out;
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  });
}

Result<std::vector<TargetRecord>> MainStore::listLiveTargets() {
  return read("list live targets", [&](SQLite::Database& db) -> Result<std::vector<TargetRecord>> {
    return selectTargets(db, "WHERE deleted_at IS NULL");
  });
}

Result<TargetRecord> MainStore::updateTarget(const TargetRecord& t) {
  auto written = write("update target", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db,
                        "UPDATE targets SET name = ?, active = ?, max_concurrency = ?, "
                        "config = ?, max_retries = ?, base_delay_ms = ?, max_delay_ms = ?, "
                        "jitter = ?, updated_at = ?, "
                        "ordering = ?, disable_after_ms = ?, auto_resume = ?, probe_interval_ms = ?, "
                        "routing = ? "
                        "WHERE id = ? AND webhook_id = ? AND deleted_at IS NULL");
    q.bind(1, t.name);
    bindTargetSettings(q, t, 2);
    q.bind(9, formatTime(clock_.now()));
    bindTargetHealthPolicy(q, t, 10);
    q.bind(14, t.routingJson);
    q.bind(15, t.id);
    q.bind(16, t.webhookId);
    if (q.exec() == 0) return notFound("target", t.id);
    return {};
  });
  if (!written) return written.error();
  return getTarget(t.webhookId, t.id);
}

Result<void> MainStore::deleteTarget(const std::string& webhookId, const std::string& id) {
  return write("delete target", [&](SQLite::Database& db) -> Result<void> {
    const std::string now = formatTime(clock_.now());
    SQLite::Statement q(db,
                        "UPDATE targets SET deleted_at = ?, updated_at = ?, active = 0 "
                        "WHERE id = ? AND webhook_id = ? AND deleted_at IS NULL");
    q.bind(1, now);
    q.bind(2, now);
    q.bind(3, id);
    q.bind(4, webhookId);
    if (q.exec() == 0) return notFound("target", id);
    return {};
  });
}

Result<std::unordered_map<std::string, TargetType>> MainStore::liveTargetTypes() {
  using Types = std::unordered_map<std::string, TargetType>;
  return read("list target types", [&](SQLite::Database& db) -> Result<Types> {
    SQLite::Statement q(db, "SELECT id, type FROM targets WHERE deleted_at IS NULL");
    Types out;
    while (q.executeStep())
      out.emplace(q.getColumn(0).getString(), storedTargetType(q.getColumn(1).getString()));
    return out;
  });
}

// --- Access ----------------------------------------------------------------

namespace {

constexpr const char* kTokenColumns =
    "id, webhook_id, name, scope, token_sha256, created_at, expires_at, revoked_at";

std::optional<std::string> optionalColumn(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getString();
}

AccessTokenRecord readAccessToken(SQLite::Statement& q) {
  return AccessTokenRecord{q.getColumn(0).getString(), q.getColumn(1).getString(),
                           q.getColumn(2).getString(), q.getColumn(3).getString(),
                           q.getColumn(4).getString(), q.getColumn(5).getString(),
                           optionalColumn(q.getColumn(6)), optionalColumn(q.getColumn(7))};
}

void bindOptional(SQLite::Statement& q, int index, const std::optional<std::string>& value) {
  if (value)
    q.bind(index, *value);
  else
    q.bind(index);
}

}  // namespace

// Tokens and the audit log are written under read(), not a WriteLock:
// nothing the ingest cache holds changes, so its generation stays.
Result<AccessTokenRecord> MainStore::createAccessToken(AccessTokenRecord token) {
  token.id = newUuid();
  token.createdAt = formatTime(clock_.now());
  token.revokedAt.reset();
  return read("create access token", [&](SQLite::Database& db) -> Result<AccessTokenRecord> {
    if (auto missing = missingWebhook(db, token.webhookId)) return *missing;
    SQLite::Statement q(db, std::string("INSERT INTO access_tokens (") + kTokenColumns +
                                ") VALUES (?, ?, ?, ?, ?, ?, ?, NULL)");
    q.bind(1, token.id);
    q.bind(2, token.webhookId);
    q.bind(3, token.name);
    q.bind(4, token.scope);
    q.bind(5, token.tokenSha256);
    q.bind(6, token.createdAt);
    bindOptional(q, 7, token.expiresAt);
    q.exec();
    return token;
  });
}

Result<std::vector<AccessTokenRecord>> MainStore::listAccessTokens(const std::string& webhookId) {
  return read("list access tokens",
              [&](SQLite::Database& db) -> Result<std::vector<AccessTokenRecord>> {
                SQLite::Statement q(db, std::string("SELECT ") + kTokenColumns +
                                            " FROM access_tokens WHERE webhook_id = ? "
                                            "ORDER BY created_at, id");
                q.bind(1, webhookId);
                std::vector<AccessTokenRecord> out;
                while (q.executeStep()) out.push_back(readAccessToken(q));
                return out;
              });
}

Result<std::optional<AccessTokenRecord>> MainStore::findAccessToken(
    const std::string& tokenSha256) {
  return read("find access token",
              [&](SQLite::Database& db) -> Result<std::optional<AccessTokenRecord>> {
                SQLite::Statement q(db, std::string("SELECT ") + kTokenColumns +
                                            " FROM access_tokens WHERE token_sha256 = ?");
                q.bind(1, tokenSha256);
                if (!q.executeStep()) return std::optional<AccessTokenRecord>();
                return std::optional<AccessTokenRecord>(readAccessToken(q));
              });
}

Result<AccessTokenRecord> MainStore::revokeAccessToken(const std::string& webhookId,
                                                       const std::string& id) {
  const std::string now = formatTime(clock_.now());
  return read("revoke access token", [&](SQLite::Database& db) -> Result<AccessTokenRecord> {
    SQLite::Statement update(db,
                             "UPDATE access_tokens SET revoked_at = COALESCE(revoked_at, ?) "
                             "WHERE id = ? AND webhook_id = ?");
    update.bind(1, now);
    update.bind(2, id);
    update.bind(3, webhookId);
    if (update.exec() == 0) return notFound("token", id);
    SQLite::Statement q(db, std::string("SELECT ") + kTokenColumns +
                                " FROM access_tokens WHERE id = ?");
    q.bind(1, id);
    q.executeStep();
    return readAccessToken(q);
  });
}

namespace {

constexpr const char* kPortalColumns =
    "id, webhook_id, scope, secret_sha256, created_at, expires_at, used_at, session_expires_at";

PortalLinkRecord readPortalLink(SQLite::Statement& q) {
  return PortalLinkRecord{q.getColumn(0).getString(), q.getColumn(1).getString(),
                          q.getColumn(2).getString(), q.getColumn(3).getString(),
                          q.getColumn(4).getString(), q.getColumn(5).getString(),
                          optionalColumn(q.getColumn(6)), optionalColumn(q.getColumn(7))};
}

}  // namespace

Result<PortalLinkRecord> MainStore::createPortalLink(PortalLinkRecord link) {
  link.id = newUuid();
  link.createdAt = formatTime(clock_.now());
  link.usedAt.reset();
  link.sessionExpiresAt.reset();
  return read("create portal link", [&](SQLite::Database& db) -> Result<PortalLinkRecord> {
    if (auto missing = missingWebhook(db, link.webhookId)) return *missing;
    SQLite::Statement q(db, std::string("INSERT INTO portal_links (") + kPortalColumns +
                                ") VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)");
    q.bind(1, link.id);
    q.bind(2, link.webhookId);
    q.bind(3, link.scope);
    q.bind(4, link.secretSha256);
    q.bind(5, link.createdAt);
    q.bind(6, link.expiresAt);
    q.exec();
    return link;
  });
}

Result<std::optional<PortalLinkRecord>> MainStore::exchangePortalLink(
    const std::string& secretSha256, const std::string& sessionSha256,
    const std::string& sessionExpiresAt) {
  using Found = std::optional<PortalLinkRecord>;
  const std::string now = formatTime(clock_.now());
  return read("exchange portal link", [&](SQLite::Database& db) -> Result<Found> {
    // One statement: of two requests with the same secret, one wins.
    SQLite::Statement use(db,
                          "UPDATE portal_links SET used_at = ?, session_sha256 = ?, "
                          "session_expires_at = ? WHERE secret_sha256 = ? AND used_at IS NULL "
                          "AND expires_at > ?");
    use.bind(1, now);
    use.bind(2, sessionSha256);
    use.bind(3, sessionExpiresAt);
    use.bind(4, secretSha256);
    use.bind(5, now);
    if (use.exec() == 0) return Found();
    SQLite::Statement q(db, std::string("SELECT ") + kPortalColumns +
                                " FROM portal_links WHERE secret_sha256 = ?");
    q.bind(1, secretSha256);
    if (!q.executeStep()) return Found();
    return Found(readPortalLink(q));
  });
}

Result<std::optional<PortalLinkRecord>> MainStore::findPortalSession(
    const std::string& sessionSha256) {
  using Found = std::optional<PortalLinkRecord>;
  const std::string now = formatTime(clock_.now());
  return read("find portal session", [&](SQLite::Database& db) -> Result<Found> {
    SQLite::Statement q(db, std::string("SELECT ") + kPortalColumns +
                                " FROM portal_links WHERE session_sha256 = ? "
                                "AND session_expires_at > ?");
    q.bind(1, sessionSha256);
    q.bind(2, now);
    if (!q.executeStep()) return Found();
    return Found(readPortalLink(q));
  });
}

Result<void> MainStore::endPortalSession(const std::string& sessionSha256) {
  const std::string now = formatTime(clock_.now());
  return read("end portal session", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db,
                        "UPDATE portal_links SET session_expires_at = ? "
                        "WHERE session_sha256 = ? AND session_expires_at > ?");
    q.bind(1, now);
    q.bind(2, sessionSha256);
    q.bind(3, now);
    q.exec();
    return {};
  });
}

Result<void> MainStore::appendAudit(AuditRecord record) {
  record.at = formatTime(clock_.now());
  // In the creates' group: an app provisioning tenants makes one audited
  // write per create, and each row committed alone cost a flush per create.
  return creates_->run("append audit", [&](storage::StatementCache& sql) -> Result<void> {
    auto borrowed = sql.get(
        "INSERT INTO audit_log (at, actor, actor_id, webhook_id, method, route, "
        "ids, fields, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    SQLite::Statement& q = *borrowed;
    q.bind(1, record.at);
    q.bind(2, record.actor);
    bindOptional(q, 3, record.actorId);
    bindOptional(q, 4, record.webhookId);
    q.bind(5, record.method);
    q.bind(6, record.route);
    q.bind(7, record.ids);
    q.bind(8, record.fields);
    q.bind(9, record.status);
    q.exec();
    return {};
  });
}

Result<std::vector<AuditRecord>> MainStore::listAudit(const std::optional<std::string>& webhookId,
                                                      int64_t beforeId, int limit) {
  return read("list audit", [&](SQLite::Database& db) -> Result<std::vector<AuditRecord>> {
    SQLite::Statement q(db,
                        "SELECT id, at, actor, actor_id, webhook_id, method, route, ids, fields, "
                        "status FROM audit_log WHERE (? IS NULL OR webhook_id = ?) AND id < ? "
                        "ORDER BY id DESC LIMIT ?");
    bindOptional(q, 1, webhookId);
    bindOptional(q, 2, webhookId);
    q.bind(3, beforeId > 0 ? beforeId : std::numeric_limits<int64_t>::max());
    q.bind(4, limit);
    std::vector<AuditRecord> out;
    while (q.executeStep())
      out.push_back(AuditRecord{q.getColumn(0).getInt64(), q.getColumn(1).getString(),
                                q.getColumn(2).getString(), optionalColumn(q.getColumn(3)),
                                optionalColumn(q.getColumn(4)), q.getColumn(5).getString(),
                                q.getColumn(6).getString(), q.getColumn(7).getString(),
                                q.getColumn(8).getString(), q.getColumn(9).getInt()});
    return out;
  });
}

Result<int64_t> MainStore::pruneAudit(int orphanDays) {
  const std::string now = formatTime(clock_.now());
  return read("prune audit", [&](SQLite::Database& db) -> Result<int64_t> {
    // One pass, times compared as stored text (SQLite reads and writes
    // the same ISO-8601 form).
    SQLite::Statement q(db,
                        "DELETE FROM audit_log WHERE at < strftime('%Y-%m-%dT%H:%M:%fZ', ?, '-' || "
                        "COALESCE((SELECT w.retention_days FROM webhooks w "
                        "WHERE w.id = audit_log.webhook_id), ?) || ' days')");
    q.bind(1, now);
    q.bind(2, orphanDays);
    const int64_t removed = q.exec();
    // Portal links, used or not, once their end is as old.
    SQLite::Statement links(db,
                            "DELETE FROM portal_links WHERE COALESCE(session_expires_at, "
                            "expires_at) < strftime('%Y-%m-%dT%H:%M:%fZ', ?, '-' || ? || ' days')");
    links.bind(1, now);
    links.bind(2, orphanDays);
    links.exec();
    return removed;
  });
}

Result<std::optional<std::string>> MainStore::getSetting(const std::string& key) {
  return read("get setting", [&](SQLite::Database& db) -> Result<std::optional<std::string>> {
    SQLite::Statement q(db, "SELECT value FROM settings WHERE key = ?");
    q.bind(1, key);
    if (!q.executeStep()) return std::optional<std::string>();
    return std::optional<std::string>(q.getColumn(0).getString());
  });
}

Result<void> MainStore::setSetting(const std::string& key, const std::string& value) {
  return write("set setting", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db,
                        "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                        "updated_at = excluded.updated_at");
    q.bind(1, key);
    q.bind(2, value);
    q.bind(3, formatTime(clock_.now()));
    q.exec();
    return {};
  });
}

Result<void> MainStore::deleteSetting(const std::string& key) {
  return write("delete setting", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db, "DELETE FROM settings WHERE key = ?");
    q.bind(1, key);
    q.exec();
    return {};
  });
}

// --- Endpoint health -------------------------------------------------------

Result<bool> MainStore::setTargetDisabled(const std::string& webhookId, const std::string& id,
                                          std::optional<DisabledReason> reason) {
  return write("set target disabled", [&](SQLite::Database& db) -> Result<bool> {
    const std::string now = formatTime(clock_.now());
    // A target already disabled keeps its first reason and time.
    SQLite::Statement q(db, reason ? "UPDATE targets SET disabled_reason = ?1, disabled_at = ?2, "
                                     "updated_at = ?2 WHERE id = ?3 AND webhook_id = ?4 "
                                     "AND deleted_at IS NULL AND disabled_reason IS NULL"
                                   : "UPDATE targets SET disabled_reason = NULL, disabled_at = NULL, "
                                     "updated_at = ?2 WHERE id = ?3 AND webhook_id = ?4 "
                                     "AND deleted_at IS NULL AND disabled_reason IS NOT NULL");
    if (reason) q.bind(1, std::string(disabledReasonWord(*reason)));
    q.bind(2, now);
    q.bind(3, id);
    q.bind(4, webhookId);
    if (q.exec() > 0) return true;
    SQLite::Statement exists(db, "SELECT 1 FROM targets WHERE id = ? AND webhook_id = ? "
                                 "AND deleted_at IS NULL");
    exists.bind(1, id);
    exists.bind(2, webhookId);
    if (!exists.executeStep()) return notFound("target", id);
    return false;
  });
}

Result<void> MainStore::saveBreaker(const std::string& targetId, BreakerState state,
                                    std::optional<TimePoint> openedAt, int consecutiveFailures) {
  return write("save breaker", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db,
                        "INSERT INTO target_health (target_id, breaker_state, breaker_opened_at, "
                        "consecutive_failures, updated_at) "
                        "SELECT id, ?2, ?3, ?4, ?5 FROM targets WHERE id = ?1 "
                        "ON CONFLICT(target_id) DO UPDATE SET breaker_state = excluded.breaker_state, "
                        "breaker_opened_at = excluded.breaker_opened_at, "
                        "consecutive_failures = excluded.consecutive_failures, "
                        "updated_at = excluded.updated_at");
    q.bind(1, targetId);
    q.bind(2, std::string(breakerStateWord(state)));
    if (openedAt) q.bind(3, formatTime(*openedAt));
    else q.bind(3);
    q.bind(4, consecutiveFailures);
    q.bind(5, formatTime(clock_.now()));
    q.exec();
    return {};
  });
}

Result<void> MainStore::setFailingSince(const std::string& targetId,
                                        std::optional<TimePoint> since) {
  return write("set failing since", [&](SQLite::Database& db) -> Result<void> {
    SQLite::Statement q(db,
                        "INSERT INTO target_health (target_id, failing_since, updated_at) "
                        "SELECT id, ?2, ?3 FROM targets WHERE id = ?1 "
                        "ON CONFLICT(target_id) DO UPDATE SET failing_since = excluded.failing_since, "
                        "updated_at = excluded.updated_at");
    q.bind(1, targetId);
    if (since) q.bind(2, formatTime(*since));
    else q.bind(2);
    q.bind(3, formatTime(clock_.now()));
    q.exec();
    return {};
  });
}

Result<std::unordered_set<std::string>> MainStore::heldTargetIds() {
  using Ids = std::unordered_set<std::string>;
  return read("list held targets", [&](SQLite::Database& db) -> Result<Ids> {
    SQLite::Statement q(db, "SELECT id FROM targets WHERE deleted_at IS NULL "
                            "AND (active = 0 OR disabled_reason IS NOT NULL OR webhook_id IN "
                            "(SELECT id FROM webhooks WHERE moving_to IS NOT NULL))");
    Ids out;
    while (q.executeStep()) out.insert(q.getColumn(0).getString());
    return out;
  });
}

Result<std::vector<TargetRecord>> MainStore::listDisabledTargets() {
  return read(
      "list disabled targets", [&](SQLite::Database& db) -> Result<std::vector<TargetRecord>> {
        return selectTargets(
            db,
            "WHERE disabled_reason IS NOT NULL AND deleted_at IS NULL ORDER BY disabled_at, id");
      });
}

Result<std::vector<StoredTargetHealth>> MainStore::listTargetHealth() {
  using Rows = std::vector<StoredTargetHealth>;
  return read("list target health", [&](SQLite::Database& db) -> Result<Rows> {
    SQLite::Statement q(db,
                        "SELECT h.target_id, t.webhook_id, t.type, h.breaker_state, "
                        "h.breaker_opened_at, h.consecutive_failures, h.failing_since "
                        "FROM target_health h JOIN targets t ON t.id = h.target_id "
                        "WHERE t.deleted_at IS NULL");
    Rows out;
    while (q.executeStep()) {
      StoredTargetHealth h;
      h.targetId = q.getColumn(0).getString();
      h.webhookId = q.getColumn(1).getString();
      h.targetType = storedTargetType(q.getColumn(2).getString());
      h.breakerState = parseBreakerState(q.getColumn(3).getString()).value_or(BreakerState::kClosed);
      if (!q.getColumn(4).isNull()) h.breakerOpenedAt = q.getColumn(4).getString();
      h.consecutiveFailures = q.getColumn(5).getInt();
      if (!q.getColumn(6).isNull()) h.failingSince = q.getColumn(6).getString();
      out.push_back(std::move(h));
    }
    return out;
  });
}

}  // namespace webhooker
