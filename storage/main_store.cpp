#include "storage/main_store.h"

#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "base/uuid.h"
#include "storage/sqlite_database.h"

namespace webhooker {

namespace {

constexpr const char* kWebhookColumns =
    "id, name, description, retention_days, max_events, mask_pointers, created_at, updated_at";

constexpr const char* kTargetColumns =
    "id, webhook_id, name, type, active, max_concurrency, config, max_retries, base_delay_ms, "
    "max_delay_ms, jitter, created_at, updated_at, deleted_at";

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
  return w;
}

constexpr const char* kEntrypointColumns =
    "id, webhook_id, active, created_at, updated_at, verification, "
    "COALESCE(verification_secret, '')";

Entrypoint readEntrypoint(SQLite::Statement& q) {
  return Entrypoint{q.getColumn(0).getString(), q.getColumn(1).getString(),
                    q.getColumn(2).getInt() != 0, q.getColumn(3).getString(),
                    q.getColumn(4).getString(), q.getColumn(5).getString(),
                    q.getColumn(6).getString()};
}

TargetRecord readTarget(SQLite::Statement& q) {
  TargetRecord t;
  t.id = q.getColumn(0).getString();
  t.webhookId = q.getColumn(1).getString();
  t.name = q.getColumn(2).getString();
  t.type = q.getColumn(3).getString();
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
  return t;
}

Error notFound(const char* what, const std::string& id) {
  return makeError(error_code::kNotFound, std::string(what) + " " + id + " does not exist");
}

}  // namespace

MainStore::MainStore(std::unique_ptr<SQLite::Database> db, const Clock& clock)
    : clock_(clock), db_(std::move(db)) {}

MainStore::~MainStore() = default;

Result<std::unique_ptr<MainStore>> MainStore::open(const std::filesystem::path& file,
                                                   const DbOptions& options, const Clock& clock) {
  auto db = storage::openDatabase(file, options, mainMigrations());
  if (!db) return db.error();
  return std::unique_ptr<MainStore>(new MainStore(std::move(db.value()), clock));
}

int MainStore::schemaVersion() {
  std::lock_guard lock(dbMutex_);
  return storage::schemaVersion(*db_);
}

Result<void> MainStore::ping() {
  std::lock_guard lock(dbMutex_);
  try {
    db_->execAndGet("SELECT 1");
    return {};
  } catch (const std::exception& e) {
    return storage::storageError("ping", e);
  }
}

Result<Webhook> MainStore::createWebhook(const std::string& name, const std::string& description,
                                         int retentionDays, int64_t maxEvents,
                                         const std::vector<std::string>& maskPointers) {
  const std::string now = formatTime(clock_.now());
  Webhook w;
  w.id = newUuid();
  w.name = name;
  w.description = description;
  w.retentionDays = retentionDays;
  w.maxEvents = maxEvents;
  w.maskPointers = maskPointers;
  w.createdAt = now;
  w.updatedAt = now;
  WriteLock lock(*this);
  try {
    SQLite::Transaction txn(*db_);
    SQLite::Statement insert(*db_, std::string("INSERT INTO webhooks (") + kWebhookColumns +
                                       ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, w.id);
    insert.bind(2, w.name);
    insert.bind(3, w.description);
    insert.bind(4, w.retentionDays);
    insert.bind(5, w.maxEvents);
    insert.bind(6, pointerListText(w.maskPointers));
    insert.bind(7, now);
    insert.bind(8, now);
    insert.exec();
    SQLite::Statement entry(*db_,
                            "INSERT INTO entrypoints (id, webhook_id, active, created_at, "
                            "updated_at) VALUES (?, ?, 1, ?, ?)");
    entry.bind(1, newUuid());
    entry.bind(2, w.id);
    entry.bind(3, now);
    entry.bind(4, now);
    entry.exec();
    txn.commit();
    return w;
  } catch (const std::exception& e) {
    return storage::storageError("create webhook", e);
  }
}

Result<Webhook> MainStore::getWebhook(const std::string& id) {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_, std::string("SELECT ") + kWebhookColumns +
                                  " FROM webhooks WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return notFound("webhook", id);
    return readWebhook(q);
  } catch (const std::exception& e) {
    return storage::storageError("get webhook", e);
  }
}

Result<std::vector<Webhook>> MainStore::listWebhooks() {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_, std::string("SELECT ") + kWebhookColumns +
                                  " FROM webhooks ORDER BY created_at, id");
    std::vector<Webhook> out;
    while (q.executeStep()) out.push_back(readWebhook(q));
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("list webhooks", e);
  }
}

Result<Webhook> MainStore::updateWebhook(const std::string& id, const WebhookPatch& patch) {
  {
    WriteLock lock(*this);
    try {
      SQLite::Statement q(*db_,
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
    } catch (const std::exception& e) {
      return storage::storageError("update webhook", e);
    }
  }
  return getWebhook(id);
}

Result<void> MainStore::deleteWebhook(const std::string& id) {
  WriteLock lock(*this);
  try {
    SQLite::Statement q(*db_, "DELETE FROM webhooks WHERE id = ?");
    q.bind(1, id);
    if (q.exec() == 0) return notFound("webhook", id);
    return {};
  } catch (const std::exception& e) {
    return storage::storageError("delete webhook", e);
  }
}

Result<Entrypoint> MainStore::createEntrypoint(const std::string& webhookId,
                                              const EntrypointSettings& settings) {
  const std::string now = formatTime(clock_.now());
  Entrypoint ep{newUuid(), webhookId, settings.active, now, now, settings.verification,
                settings.verificationSecret};
  WriteLock lock(*this);
  try {
    SQLite::Statement exists(*db_, "SELECT 1 FROM webhooks WHERE id = ?");
    exists.bind(1, webhookId);
    if (!exists.executeStep()) return notFound("webhook", webhookId);
    SQLite::Statement q(*db_,
                        "INSERT INTO entrypoints (id, webhook_id, active, created_at, updated_at, "
                        "verification, verification_secret) VALUES (?, ?, ?, ?, ?, ?, ?)");
    q.bind(1, ep.id);
    q.bind(2, ep.webhookId);
    q.bind(3, ep.active ? 1 : 0);
    q.bind(4, now);
    q.bind(5, now);
    q.bind(6, ep.verification);
    if (ep.verification != "none") q.bind(7, ep.verificationSecret);
    q.exec();
    return ep;
  } catch (const std::exception& e) {
    return storage::storageError("create entrypoint", e);
  }
}

Result<Entrypoint> MainStore::getEntrypoint(const std::string& id) {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_,
                        std::string("SELECT ") + kEntrypointColumns + " FROM entrypoints " +
                        "WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return notFound("entrypoint", id);
    return readEntrypoint(q);
  } catch (const std::exception& e) {
    return storage::storageError("get entrypoint", e);
  }
}

Result<std::vector<Entrypoint>> MainStore::listEntrypoints(const std::string& webhookId) {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_,
                        std::string("SELECT ") + kEntrypointColumns + " FROM entrypoints " +
                        "WHERE webhook_id = ? ORDER BY created_at, id");
    q.bind(1, webhookId);
    std::vector<Entrypoint> out;
    while (q.executeStep()) out.push_back(readEntrypoint(q));
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("list entrypoints", e);
  }
}

Result<Entrypoint> MainStore::setEntrypointVerification(const std::string& webhookId,
                                                        const std::string& id,
                                                        const std::string& scheme,
                                                        const std::string& secret) {
  {
    WriteLock lock(*this);
    try {
      SQLite::Statement q(*db_,
                          "UPDATE entrypoints SET verification = ?, verification_secret = ?, "
                          "updated_at = ? WHERE id = ? AND webhook_id = ?");
      q.bind(1, scheme);
      if (scheme != "none") q.bind(2, secret);
      q.bind(3, formatTime(clock_.now()));
      q.bind(4, id);
      q.bind(5, webhookId);
      if (q.exec() == 0) return notFound("entrypoint", id);
    } catch (const std::exception& e) {
      return storage::storageError("update entrypoint", e);
    }
  }
  return getEntrypoint(id);
}

Result<Entrypoint> MainStore::setEntrypointActive(const std::string& webhookId,
                                                  const std::string& id, bool active) {
  {
    WriteLock lock(*this);
    try {
      SQLite::Statement q(*db_,
                          "UPDATE entrypoints SET active = ?, updated_at = ? "
                          "WHERE id = ? AND webhook_id = ?");
      q.bind(1, active ? 1 : 0);
      q.bind(2, formatTime(clock_.now()));
      q.bind(3, id);
      q.bind(4, webhookId);
      if (q.exec() == 0) return notFound("entrypoint", id);
    } catch (const std::exception& e) {
      return storage::storageError("update entrypoint", e);
    }
  }
  return getEntrypoint(id);
}

Result<void> MainStore::deleteEntrypoint(const std::string& webhookId, const std::string& id) {
  WriteLock lock(*this);
  try {
    SQLite::Statement q(*db_, "DELETE FROM entrypoints WHERE id = ? AND webhook_id = ?");
    q.bind(1, id);
    q.bind(2, webhookId);
    if (q.exec() == 0) return notFound("entrypoint", id);
    return {};
  } catch (const std::exception& e) {
    return storage::storageError("delete entrypoint", e);
  }
}

Result<TargetRecord> MainStore::createTarget(TargetRecord t) {
  const std::string now = formatTime(clock_.now());
  t.id = newUuid();
  t.createdAt = now;
  t.updatedAt = now;
  t.deletedAt.reset();
  WriteLock lock(*this);
  try {
    SQLite::Statement exists(*db_, "SELECT 1 FROM webhooks WHERE id = ?");
    exists.bind(1, t.webhookId);
    if (!exists.executeStep()) return notFound("webhook", t.webhookId);
    SQLite::Statement q(*db_, std::string("INSERT INTO targets (") + kTargetColumns +
                                  ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)");
    q.bind(1, t.id);
    q.bind(2, t.webhookId);
    q.bind(3, t.name);
    q.bind(4, t.type);
    q.bind(5, t.active ? 1 : 0);
    q.bind(6, t.maxConcurrency);
    q.bind(7, t.configJson);
    q.bind(8, t.retry.maxRetries);
    q.bind(9, t.retry.baseDelayMs);
    q.bind(10, t.retry.maxDelayMs);
    q.bind(11, t.retry.jitter);
    q.bind(12, now);
    q.bind(13, now);
    q.exec();
    return t;
  } catch (const std::exception& e) {
    return storage::storageError("create target", e);
  }
}

Result<TargetRecord> MainStore::getTarget(const std::string& webhookId, const std::string& id) {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_, std::string("SELECT ") + kTargetColumns +
                                  " FROM targets WHERE id = ? AND webhook_id = ?");
    q.bind(1, id);
    q.bind(2, webhookId);
    if (!q.executeStep()) return notFound("target", id);
    return readTarget(q);
  } catch (const std::exception& e) {
    return storage::storageError("get target", e);
  }
}

Result<std::vector<TargetRecord>> MainStore::listTargets(const std::string& webhookId) {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_, std::string("SELECT ") + kTargetColumns +
                                  " FROM targets WHERE webhook_id = ? AND deleted_at IS NULL "
                                  "ORDER BY created_at, id");
    q.bind(1, webhookId);
    std::vector<TargetRecord> out;
    while (q.executeStep()) out.push_back(readTarget(q));
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("list targets", e);
  }
}

Result<TargetRecord> MainStore::updateTarget(const TargetRecord& t) {
  {
    WriteLock lock(*this);
    try {
      SQLite::Statement q(*db_,
                          "UPDATE targets SET name = ?, active = ?, max_concurrency = ?, "
                          "config = ?, max_retries = ?, base_delay_ms = ?, max_delay_ms = ?, "
                          "jitter = ?, updated_at = ? "
                          "WHERE id = ? AND webhook_id = ? AND deleted_at IS NULL");
      q.bind(1, t.name);
      q.bind(2, t.active ? 1 : 0);
      q.bind(3, t.maxConcurrency);
      q.bind(4, t.configJson);
      q.bind(5, t.retry.maxRetries);
      q.bind(6, t.retry.baseDelayMs);
      q.bind(7, t.retry.maxDelayMs);
      q.bind(8, t.retry.jitter);
      q.bind(9, formatTime(clock_.now()));
      q.bind(10, t.id);
      q.bind(11, t.webhookId);
      if (q.exec() == 0) return notFound("target", t.id);
    } catch (const std::exception& e) {
      return storage::storageError("update target", e);
    }
  }
  return getTarget(t.webhookId, t.id);
}

Result<void> MainStore::deleteTarget(const std::string& webhookId, const std::string& id) {
  WriteLock lock(*this);
  try {
    const std::string now = formatTime(clock_.now());
    SQLite::Statement q(*db_,
                        "UPDATE targets SET deleted_at = ?, updated_at = ?, active = 0 "
                        "WHERE id = ? AND webhook_id = ? AND deleted_at IS NULL");
    q.bind(1, now);
    q.bind(2, now);
    q.bind(3, id);
    q.bind(4, webhookId);
    if (q.exec() == 0) return notFound("target", id);
    return {};
  } catch (const std::exception& e) {
    return storage::storageError("delete target", e);
  }
}

Result<std::unordered_map<std::string, std::string>> MainStore::liveTargetTypes() {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_, "SELECT id, type FROM targets WHERE deleted_at IS NULL");
    std::unordered_map<std::string, std::string> out;
    while (q.executeStep()) out.emplace(q.getColumn(0).getString(), q.getColumn(1).getString());
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("list target types", e);
  }
}

Result<std::optional<std::string>> MainStore::getSetting(const std::string& key) {
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Statement q(*db_, "SELECT value FROM settings WHERE key = ?");
    q.bind(1, key);
    if (!q.executeStep()) return std::optional<std::string>();
    return std::optional<std::string>(q.getColumn(0).getString());
  } catch (const std::exception& e) {
    return storage::storageError("get setting", e);
  }
}

Result<void> MainStore::setSetting(const std::string& key, const std::string& value) {
  WriteLock lock(*this);
  try {
    SQLite::Statement q(*db_,
                        "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                        "updated_at = excluded.updated_at");
    q.bind(1, key);
    q.bind(2, value);
    q.bind(3, formatTime(clock_.now()));
    q.exec();
    return {};
  } catch (const std::exception& e) {
    return storage::storageError("set setting", e);
  }
}

}  // namespace webhooker
