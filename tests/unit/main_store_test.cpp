// MainStore on a real webhooker.db: webhooks, entrypoints, targets and
// settings, checked through the API and, independently, by reading the file
// with SQLiteCpp.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/time_format.h"
#include "base/uuid.h"
#include "storage/main_store.h"
#include "storage/migration.h"
#include "tests/support/db_file.h"
#include "tests/support/eventually.h"
#include "tests/support/fault_vfs.h"

namespace {

using namespace std::chrono_literals;
using webhooker::DbOptions;
using webhooker::MainStore;
using webhooker::TargetRecord;
using webhooker::Webhook;
using webhooker::WebhookPatch;
using webhooker::testing::DbFile;
using webhooker::testing::sqlText;

// FakeClock's default start, 1,795,000,000,000 ms after the epoch.
constexpr const char* kStart = "2026-11-18T11:06:40.000Z";

struct Fixture : DbFile {
  std::unique_ptr<MainStore> store = openStore();

  Fixture() : DbFile("webhooker.db") {}

  std::unique_ptr<MainStore> openStore() {
    auto s = MainStore::open(file, DbOptions{}, clock);
    if (!s) FAIL("open failed: " << s.error().code << ": " << s.error().message);
    return std::move(s.value());
  }

  void reopen() {
    store.reset();
    store = openStore();
  }

  Webhook webhook(const std::string& name = "shop") {
    auto w = store->createWebhook(name, "orders from the shop", 30);
    if (!w) FAIL("createWebhook failed: " << w.error().message);
    return w.value();
  }

  TargetRecord target(const std::string& webhookId, const std::string& name = "orders") {
    TargetRecord t;
    t.webhookId = webhookId;
    t.name = name;
    t.type = webhooker::TargetType::kHttp;
    t.active = true;
    t.maxConcurrency = 3;
    t.configJson = R"({"url":"https://example.com/hook","signing_secret":"whsec_x"})";
    t.retry.maxRetries = 7;
    t.retry.baseDelayMs = 1500;
    t.retry.maxDelayMs = 60000;
    t.retry.jitter = 0.25;
    auto created = store->createTarget(t);
    if (!created) FAIL("createTarget failed: " << created.error().message);
    return created.value();
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "open creates the file with the full schema") {
  CHECK(std::filesystem::exists(file));
  CHECK(store->schemaVersion() == webhooker::mainMigrations().back().version);
  CHECK(count("SELECT COUNT(*) FROM schema_migrations") ==
        static_cast<int>(webhooker::mainMigrations().size()));
}

TEST_CASE_FIXTURE(Fixture, "ping answers on an open store") {
  CHECK(store->ping().ok());
}

TEST_CASE_FIXTURE(Fixture, "createWebhook stores the webhook and exactly one active entrypoint") {
  auto created = store->createWebhook("shop", "orders from the shop", 14);
  REQUIRE(created.ok());
  const Webhook& w = created.value();
  CHECK(webhooker::isUuid(w.id));
  CHECK(webhooker::normalizeUuid(w.id) == w.id);
  CHECK(w.name == "shop");
  CHECK(w.description == "orders from the shop");
  CHECK(w.retentionDays == 14);
  CHECK(w.createdAt == kStart);
  CHECK(w.updatedAt == kStart);

  SQLite::Database db = raw();
  SQLite::Statement q(db,
                      "SELECT id, name, description, retention_days, created_at, updated_at "
                      "FROM webhooks");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == w.id);
  CHECK(q.getColumn(1).getString() == "shop");
  CHECK(q.getColumn(2).getString() == "orders from the shop");
  CHECK(q.getColumn(3).getInt() == 14);
  CHECK(q.getColumn(4).getString() == kStart);
  CHECK(q.getColumn(5).getString() == kStart);
  CHECK_FALSE(q.executeStep());

  CHECK(count("SELECT COUNT(*) FROM entrypoints") == 1);
  CHECK(count("SELECT COUNT(*) FROM entrypoints WHERE webhook_id = " + sqlText(w.id) +
              " AND active = 1 AND created_at = " + sqlText(kStart)) == 1);

  auto eps = store->listEntrypoints(w.id);
  REQUIRE(eps.ok());
  REQUIRE(eps->size() == 1);
  CHECK(eps->at(0).webhookId == w.id);
  CHECK(eps->at(0).active);
  CHECK(webhooker::isUuid(eps->at(0).id));
  CHECK(eps->at(0).id != w.id);
}

TEST_CASE_FIXTURE(Fixture, "getWebhook returns what was created; unknown ids are not_found") {
  const Webhook w = webhook();
  auto got = store->getWebhook(w.id);
  REQUIRE(got.ok());
  CHECK(got->id == w.id);
  CHECK(got->name == w.name);
  CHECK(got->description == w.description);
  CHECK(got->retentionDays == w.retentionDays);
  CHECK(got->createdAt == w.createdAt);

  auto missing = store->getWebhook(webhooker::newUuid());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == "not_found");
}

TEST_CASE_FIXTURE(Fixture, "listWebhooks lists every webhook, oldest first") {
  auto empty = store->listWebhooks();
  REQUIRE(empty.ok());
  CHECK(empty->empty());

  const Webhook a = webhook("a");
  clock.advance(1s);
  const Webhook b = webhook("b");
  clock.advance(1s);
  const Webhook c = webhook("c");
  auto all = store->listWebhooks();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK(all->at(0).id == a.id);
  CHECK(all->at(1).id == b.id);
  CHECK(all->at(2).id == c.id);
  CHECK(all->at(2).createdAt == "2026-11-18T11:06:42.000Z");
}

TEST_CASE_FIXTURE(Fixture, "listWebhookIds lists every webhook's id and no deleted one") {
  REQUIRE(store->listWebhookIds()->empty());
  const Webhook a = webhook("a");
  const Webhook b = webhook("b");
  const Webhook c = webhook("c");
  REQUIRE(store->deleteWebhook(b.id).ok());
  auto ids = store->listWebhookIds();
  REQUIRE(ids.ok());
  std::sort(ids->begin(), ids->end());
  std::vector<std::string> expected = {a.id, c.id};
  std::sort(expected.begin(), expected.end());
  CHECK(ids.value() == expected);
}

TEST_CASE_FIXTURE(Fixture, "updateWebhook changes only the fields in the patch") {
  const Webhook w = webhook();
  clock.advance(1500ms);

  WebhookPatch renameOnly;
  renameOnly.name = "store";
  auto renamed = store->updateWebhook(w.id, renameOnly);
  REQUIRE(renamed.ok());
  CHECK(renamed->name == "store");
  CHECK(renamed->description == "orders from the shop");
  CHECK(renamed->retentionDays == 30);
  CHECK(renamed->createdAt == kStart);
  CHECK(renamed->updatedAt == "2026-11-18T11:06:41.500Z");

  clock.advance(1ms);
  WebhookPatch retentionOnly;
  retentionOnly.retentionDays = 7;
  auto shorter = store->updateWebhook(w.id, retentionOnly);
  REQUIRE(shorter.ok());
  CHECK(shorter->name == "store");
  CHECK(shorter->retentionDays == 7);
  CHECK(shorter->updatedAt == "2026-11-18T11:06:41.501Z");

  WebhookPatch descriptionToEmpty;
  descriptionToEmpty.description = "";
  auto emptied = store->updateWebhook(w.id, descriptionToEmpty);
  REQUIRE(emptied.ok());
  CHECK(emptied->description.empty());
  CHECK(emptied->name == "store");

  SQLite::Database db = raw();
  SQLite::Statement q(db, "SELECT name, description, retention_days, created_at FROM webhooks");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "store");
  CHECK(q.getColumn(1).getString() == "");
  CHECK(q.getColumn(2).getInt() == 7);
  CHECK(q.getColumn(3).getString() == kStart);
}

TEST_CASE_FIXTURE(Fixture, "max_events and mask_pointers: defaults, create, update, read back") {
  const Webhook plain = webhook("plain");
  CHECK(plain.maxEvents == 100000);
  CHECK(plain.maskPointers.empty());
  CHECK(count("SELECT COUNT(*) FROM webhooks WHERE mask_pointers = '[]'") == 1);
  clock.advance(1ms);  // list order: by creation time

  auto masked = store->createWebhook("masked", "", 7, 500, {"/user/email", "/a~1b", ""});
  REQUIRE(masked.ok());
  auto got = store->getWebhook(masked->id);
  REQUIRE(got.ok());
  CHECK(got->maxEvents == 500);
  CHECK(got->maskPointers == std::vector<std::string>{"/user/email", "/a~1b", ""});

  WebhookPatch nameOnly;
  nameOnly.name = "renamed";
  auto renamed = store->updateWebhook(masked->id, nameOnly);
  REQUIRE(renamed.ok());
  CHECK(renamed->maxEvents == 500);
  CHECK(renamed->maskPointers.size() == 3);

  WebhookPatch settings;
  settings.maxEvents = 10'000'000;
  settings.maskPointers = std::vector<std::string>{};
  auto changed = store->updateWebhook(masked->id, settings);
  REQUIRE(changed.ok());
  CHECK(changed->maxEvents == 10'000'000);
  CHECK(changed->maskPointers.empty());
  auto all = store->listWebhooks();
  REQUIRE(all.ok());
  CHECK(all->at(1).maxEvents == 10'000'000);
  CHECK(all->at(0).maxEvents == 100000);

  // The schema refuses a cap below 1 even if a caller did not.
  CHECK_FALSE(store->createWebhook("bad", "", 30, 0).ok());
}

TEST_CASE_FIXTURE(Fixture, "updateWebhook of an unknown id is not_found and writes nothing") {
  const Webhook w = webhook();
  WebhookPatch patch;
  patch.name = "x";
  auto r = store->updateWebhook(webhooker::newUuid(), patch);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "not_found");
  CHECK(count("SELECT COUNT(*) FROM webhooks WHERE name = 'x'") == 0);
  CHECK(store->getWebhook(w.id)->name == "shop");
}

TEST_CASE_FIXTURE(Fixture, "deleteWebhook removes its entrypoints and targets, not another's") {
  const Webhook doomed = webhook("doomed");
  const Webhook kept = webhook("kept");
  REQUIRE(store->createEntrypoint(doomed.id).ok());
  const TargetRecord doomedTarget = target(doomed.id);
  const TargetRecord softDeleted = target(doomed.id, "old");
  REQUIRE(store->deleteTarget(doomed.id, softDeleted.id).ok());
  const TargetRecord keptTarget = target(kept.id);
  const std::string doomedEntrypoint = store->listEntrypoints(doomed.id)->at(0).id;
  REQUIRE(count("SELECT COUNT(*) FROM entrypoints WHERE webhook_id = " + sqlText(doomed.id)) == 2);

  REQUIRE(store->deleteWebhook(doomed.id).ok());

  CHECK(count("SELECT COUNT(*) FROM webhooks WHERE id = " + sqlText(doomed.id)) == 0);
  CHECK(count("SELECT COUNT(*) FROM entrypoints WHERE webhook_id = " + sqlText(doomed.id)) == 0);
  CHECK(count("SELECT COUNT(*) FROM targets WHERE webhook_id = " + sqlText(doomed.id)) == 0);
  CHECK(count("SELECT COUNT(*) FROM webhooks") == 1);
  CHECK(count("SELECT COUNT(*) FROM entrypoints WHERE webhook_id = " + sqlText(kept.id)) == 1);
  CHECK(count("SELECT COUNT(*) FROM targets WHERE id = " + sqlText(keptTarget.id)) == 1);

  CHECK(store->getWebhook(doomed.id).error().code == "not_found");
  CHECK(store->getEntrypoint(doomedEntrypoint).error().code == "not_found");
  CHECK(store->getTarget(doomed.id, doomedTarget.id).error().code == "not_found");

  auto again = store->deleteWebhook(doomed.id);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == "not_found");
}

TEST_CASE_FIXTURE(Fixture, "entrypoints: create, get by id alone, list, deactivate, delete") {
  const Webhook w = webhook();
  clock.advance(10ms);
  auto second = store->createEntrypoint(w.id);
  REQUIRE(second.ok());
  CHECK(webhooker::isUuid(second->id));
  CHECK(second->webhookId == w.id);
  CHECK(second->active);
  CHECK(second->createdAt == "2026-11-18T11:06:40.010Z");

  auto byId = store->getEntrypoint(second->id);
  REQUIRE(byId.ok());
  CHECK(byId->webhookId == w.id);
  CHECK(byId->active);

  auto list = store->listEntrypoints(w.id);
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  CHECK(list->at(1).id == second->id);  // oldest first

  clock.advance(5ms);
  auto off = store->setEntrypointActive(w.id, second->id, false);
  REQUIRE(off.ok());
  CHECK_FALSE(off->active);
  CHECK(off->updatedAt == "2026-11-18T11:06:40.015Z");
  CHECK(off->createdAt == "2026-11-18T11:06:40.010Z");
  CHECK(count("SELECT active FROM entrypoints WHERE id = " + sqlText(second->id)) == 0);
  CHECK_FALSE(store->getEntrypoint(second->id)->active);

  auto on = store->setEntrypointActive(w.id, second->id, true);
  REQUIRE(on.ok());
  CHECK(on->active);

  REQUIRE(store->deleteEntrypoint(w.id, second->id).ok());
  CHECK(count("SELECT COUNT(*) FROM entrypoints WHERE id = " + sqlText(second->id)) == 0);
  CHECK(store->getEntrypoint(second->id).error().code == "not_found");
  CHECK(store->listEntrypoints(w.id)->size() == 1);
  CHECK(store->deleteEntrypoint(w.id, second->id).error().code == "not_found");
}

TEST_CASE_FIXTURE(Fixture, "createEntrypoint for an unknown webhook is not_found") {
  auto r = store->createEntrypoint(webhooker::newUuid());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "not_found");
  CHECK(count("SELECT COUNT(*) FROM entrypoints") == 0);
}

TEST_CASE_FIXTURE(Fixture, "an entrypoint id used with another webhook's id is not_found") {
  const Webhook a = webhook("a");
  const Webhook b = webhook("b");
  const std::string aEntrypoint = store->listEntrypoints(a.id)->at(0).id;

  auto deactivate = store->setEntrypointActive(b.id, aEntrypoint, false);
  REQUIRE_FALSE(deactivate.ok());
  CHECK(deactivate.error().code == "not_found");
  CHECK(count("SELECT active FROM entrypoints WHERE id = " + sqlText(aEntrypoint)) == 1);

  auto del = store->deleteEntrypoint(b.id, aEntrypoint);
  REQUIRE_FALSE(del.ok());
  CHECK(del.error().code == "not_found");
  CHECK(count("SELECT COUNT(*) FROM entrypoints WHERE id = " + sqlText(aEntrypoint)) == 1);

  CHECK(store->setEntrypointActive(a.id, webhooker::newUuid(), false).error().code ==
        "not_found");
}

TEST_CASE_FIXTURE(Fixture, "createTarget stores every field; getTarget and listTargets read them") {
  const Webhook w = webhook();
  clock.advance(250ms);
  const TargetRecord t = target(w.id);
  CHECK(webhooker::isUuid(t.id));
  CHECK(t.webhookId == w.id);
  CHECK(t.createdAt == "2026-11-18T11:06:40.250Z");
  CHECK(t.updatedAt == t.createdAt);
  CHECK_FALSE(t.deletedAt.has_value());

  SQLite::Database db = raw();
  SQLite::Statement q(db,
                      "SELECT webhook_id, name, type, active, max_concurrency, config, "
                      "max_retries, base_delay_ms, max_delay_ms, jitter, created_at, deleted_at "
                      "FROM targets WHERE id = ?");
  q.bind(1, t.id);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == w.id);
  CHECK(q.getColumn(1).getString() == "orders");
  CHECK(q.getColumn(2).getString() == "http");
  CHECK(q.getColumn(3).getInt() == 1);
  CHECK(q.getColumn(4).getInt() == 3);
  CHECK(q.getColumn(5).getString() ==
        R"({"url":"https://example.com/hook","signing_secret":"whsec_x"})");
  CHECK(q.getColumn(6).getInt() == 7);
  CHECK(q.getColumn(7).getInt64() == 1500);
  CHECK(q.getColumn(8).getInt64() == 60000);
  CHECK(q.getColumn(9).getDouble() == doctest::Approx(0.25));
  CHECK(q.getColumn(10).getString() == "2026-11-18T11:06:40.250Z");
  CHECK(q.getColumn(11).isNull());

  auto got = store->getTarget(w.id, t.id);
  REQUIRE(got.ok());
  CHECK(got->name == "orders");
  CHECK(got->type == webhooker::TargetType::kHttp);
  CHECK(got->active);
  CHECK(got->maxConcurrency == 3);
  CHECK(got->configJson == t.configJson);
  CHECK(got->retry.maxRetries == 7);
  CHECK(got->retry.baseDelayMs == 1500);
  CHECK(got->retry.maxDelayMs == 60000);
  CHECK(got->retry.jitter == doctest::Approx(0.25));
  CHECK_FALSE(got->deletedAt.has_value());

  clock.advance(1ms);
  const TargetRecord second = target(w.id, "audit");
  auto list = store->listTargets(w.id);
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  CHECK(list->at(0).id == t.id);
  CHECK(list->at(1).id == second.id);
}

TEST_CASE_FIXTURE(Fixture, "createTarget for an unknown webhook is not_found") {
  TargetRecord t;
  t.webhookId = webhooker::newUuid();
  t.name = "x";
  t.type = webhooker::TargetType::kLog;
  auto r = store->createTarget(t);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "not_found");
  CHECK(count("SELECT COUNT(*) FROM targets") == 0);
}

TEST_CASE_FIXTURE(Fixture, "a target id used with another webhook's id is not_found") {
  const Webhook a = webhook("a");
  const Webhook b = webhook("b");
  const TargetRecord t = target(a.id);

  CHECK(store->getTarget(b.id, t.id).error().code == "not_found");
  CHECK(store->getTarget(a.id, webhooker::newUuid()).error().code == "not_found");
  CHECK(store->listTargets(b.id)->empty());

  TargetRecord hijack = t;
  hijack.webhookId = b.id;
  hijack.name = "hijacked";
  auto update = store->updateTarget(hijack);
  REQUIRE_FALSE(update.ok());
  CHECK(update.error().code == "not_found");
  CHECK(count("SELECT COUNT(*) FROM targets WHERE name = 'hijacked'") == 0);

  auto del = store->deleteTarget(b.id, t.id);
  REQUIRE_FALSE(del.ok());
  CHECK(del.error().code == "not_found");
  CHECK(count("SELECT COUNT(*) FROM targets WHERE deleted_at IS NULL") == 1);
}

TEST_CASE_FIXTURE(Fixture, "updateTarget writes the mutable fields and stamps updated_at") {
  const Webhook w = webhook();
  const TargetRecord t = target(w.id);
  clock.advance(2s);

  TargetRecord changed = t;
  changed.name = "orders-v2";
  changed.active = false;
  changed.maxConcurrency = 9;
  changed.configJson = R"({"url":"https://example.org/v2"})";
  changed.retry.maxRetries = 0;
  changed.retry.baseDelayMs = 100;
  changed.retry.maxDelayMs = 100;
  changed.retry.jitter = 0.0;
  changed.type = webhooker::TargetType::kLog;                         // not mutable: ignored
  changed.createdAt = "1999-01-01T00:00:00.000Z";  // set by the store: ignored
  auto updated = store->updateTarget(changed);
  REQUIRE(updated.ok());
  CHECK(updated->name == "orders-v2");
  CHECK_FALSE(updated->active);
  CHECK(updated->maxConcurrency == 9);
  CHECK(updated->configJson == R"({"url":"https://example.org/v2"})");
  CHECK(updated->retry.maxRetries == 0);
  CHECK(updated->retry.baseDelayMs == 100);
  CHECK(updated->retry.maxDelayMs == 100);
  CHECK(updated->retry.jitter == 0.0);
  CHECK(updated->type == webhooker::TargetType::kHttp);
  CHECK(updated->createdAt == kStart);
  CHECK(updated->updatedAt == "2026-11-18T11:06:42.000Z");

  SQLite::Database db = raw();
  SQLite::Statement q(db,
                      "SELECT name, active, max_concurrency, config, type, updated_at "
                      "FROM targets WHERE id = ?");
  q.bind(1, t.id);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "orders-v2");
  CHECK(q.getColumn(1).getInt() == 0);
  CHECK(q.getColumn(2).getInt() == 9);
  CHECK(q.getColumn(3).getString() == R"({"url":"https://example.org/v2"})");
  CHECK(q.getColumn(4).getString() == "http");
  CHECK(q.getColumn(5).getString() == "2026-11-18T11:06:42.000Z");
}

TEST_CASE_FIXTURE(Fixture, "deleteTarget is a soft delete") {
  const Webhook w = webhook();
  const TargetRecord t = target(w.id);
  const TargetRecord other = target(w.id, "other");
  clock.advance(3s);
  REQUIRE(store->deleteTarget(w.id, t.id).ok());

  // The row stays, marked deleted and inactive.
  SQLite::Database db = raw();
  SQLite::Statement q(db, "SELECT deleted_at, active, updated_at, name FROM targets WHERE id = ?");
  q.bind(1, t.id);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "2026-11-18T11:06:43.000Z");
  CHECK(q.getColumn(1).getInt() == 0);
  CHECK(q.getColumn(2).getString() == "2026-11-18T11:06:43.000Z");
  CHECK(q.getColumn(3).getString() == "orders");

  auto list = store->listTargets(w.id);
  REQUIRE(list.ok());
  REQUIRE(list->size() == 1);
  CHECK(list->at(0).id == other.id);

  auto got = store->getTarget(w.id, t.id);
  REQUIRE(got.ok());
  REQUIRE(got->deletedAt.has_value());
  CHECK(*got->deletedAt == "2026-11-18T11:06:43.000Z");
  CHECK(got->name == "orders");
  CHECK(got->type == webhooker::TargetType::kHttp);

  TargetRecord revive = got.value();
  revive.name = "revived";
  auto update = store->updateTarget(revive);
  REQUIRE_FALSE(update.ok());
  CHECK(update.error().code == "not_found");
  CHECK(count("SELECT COUNT(*) FROM targets WHERE name = 'revived'") == 0);

  auto again = store->deleteTarget(w.id, t.id);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == "not_found");
  CHECK(*store->getTarget(w.id, t.id)->deletedAt == "2026-11-18T11:06:43.000Z");
}

TEST_CASE_FIXTURE(Fixture, "settings: missing, set, overwrite") {
  auto missing = store->getSetting("admin_token_hash");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());

  REQUIRE(store->setSetting("admin_token_hash", "aaa").ok());
  auto first = store->getSetting("admin_token_hash");
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK(**first == "aaa");
  CHECK(count("SELECT COUNT(*) FROM settings WHERE updated_at = " + sqlText(kStart)) == 1);

  clock.advance(1min);
  REQUIRE(store->setSetting("admin_token_hash", "bbb").ok());
  CHECK(**store->getSetting("admin_token_hash") == "bbb");
  CHECK(count("SELECT COUNT(*) FROM settings") == 1);
  CHECK(raw().execAndGet("SELECT updated_at FROM settings").getString() ==
        "2026-11-18T11:07:40.000Z");

  REQUIRE(store->setSetting("other", "").ok());
  auto empty = store->getSetting("other");
  REQUIRE(empty.ok());
  REQUIRE(empty->has_value());
  CHECK((*empty)->empty());
  CHECK(**store->getSetting("admin_token_hash") == "bbb");
}

TEST_CASE_FIXTURE(Fixture, "everything is still there after reopening the file") {
  const Webhook w = webhook();
  const std::string entrypoint = store->listEntrypoints(w.id)->at(0).id;
  const TargetRecord t = target(w.id);
  const TargetRecord gone = target(w.id, "gone");
  REQUIRE(store->deleteTarget(w.id, gone.id).ok());
  REQUIRE(store->setSetting("k", "v").ok());

  reopen();

  auto got = store->getWebhook(w.id);
  REQUIRE(got.ok());
  CHECK(got->name == "shop");
  CHECK(got->createdAt == kStart);
  auto ep = store->getEntrypoint(entrypoint);
  REQUIRE(ep.ok());
  CHECK(ep->webhookId == w.id);
  auto targets = store->listTargets(w.id);
  REQUIRE(targets.ok());
  REQUIRE(targets->size() == 1);
  CHECK(targets->at(0).id == t.id);
  CHECK(targets->at(0).configJson == t.configJson);
  CHECK(targets->at(0).retry.maxRetries == 7);
  CHECK(store->getTarget(w.id, gone.id)->deletedAt.has_value());
  CHECK(**store->getSetting("k") == "v");
  CHECK(store->schemaVersion() == webhooker::mainMigrations().back().version);
}

TEST_CASE_FIXTURE(Fixture, "a value the schema refuses is a storage_error and writes nothing") {
  auto r = store->createWebhook("bad", "", 0);  // retention_days must be > 0
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "storage_error");
  CHECK(count("SELECT COUNT(*) FROM webhooks") == 0);
  CHECK(count("SELECT COUNT(*) FROM entrypoints") == 0);
}

TEST_CASE("concurrent creates and audit rows share one transaction, and so one flush of the "
          "main DB") {
  using webhooker::testing::FaultVfs;
  FaultVfs& vfs = FaultVfs::install();  // before the store opens its file
  Fixture f;
  f.webhook("warm");
  // The first create's commit waits in its flush; seven more writes queue
  // behind it: creates and audit rows (each audited admin write adds one).
  vfs.inject("webhooker.db", FaultVfs::Fault::kStall);
  std::vector<std::optional<webhooker::Result<void>>> results(8);
  std::vector<std::jthread> creators;
  // Before the creators join, should a check fail.
  struct ClearOnExit {
    FaultVfs& vfs;
    ~ClearOnExit() { vfs.clear(); }
  } clearOnExit{vfs};
  const auto create = [&](size_t i) {
    creators.emplace_back([&, i] {
      if (i % 2 == 0) {
        auto w = f.store->createWebhook("t" + std::to_string(i), "", 30);
        results[i] = w ? webhooker::Result<void>() : webhooker::Result<void>(w.error());
      } else {
        webhooker::AuditRecord audit;
        audit.actor = "admin";
        audit.method = "POST";
        audit.route = "/api/v1/webhooks";
        audit.ids = audit.fields = "[]";
        audit.status = 201;
        results[i] = f.store->appendAudit(audit);
      }
    });
  };
  create(0);
  REQUIRE(vfs.waitForStalledSync(std::chrono::seconds(10)));
  const int syncsBefore = vfs.syncsOf("webhooker.db-wal");
  for (size_t i = 1; i < results.size(); ++i) create(i);
  REQUIRE(webhooker::testing::eventually([&] { return f.store->createsQueued() == 8; }));
  vfs.clear();
  creators.clear();  // joins
  CHECK(vfs.syncsOf("webhooker.db-wal") == syncsBefore + 1);  // the seven: one commit, one flush
  for (const auto& r : results) {
    REQUIRE(r.has_value());
    CHECK(r->ok());
  }
  CHECK(f.count("SELECT COUNT(*) FROM webhooks") == 5);
  CHECK(f.count("SELECT COUNT(*) FROM entrypoints") == 5);
  CHECK(f.count("SELECT COUNT(*) FROM audit_log WHERE status = 201") == 4);
}
