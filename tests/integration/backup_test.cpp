// Backups: a copy of every database, taken while events keep arriving, that
// opens, passes integrity_check and holds every event acknowledged before it
// started; `webhooker backup` against the running daemon; a restore from it;
// and bad input refused with nothing written.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/backup.h"
#include "tests/support/contains.h"
#include "tests/support/daemon_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

std::set<std::string> filesIn(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    out.insert(entry.path().filename().string());
  return out;
}

std::string integrity(const fs::path& file) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  return db.execAndGet("PRAGMA integrity_check").getString();
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exitCode) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// Every copied file opens, passes integrity_check, and nothing else is there
// (no -wal, -shm or .partial left behind).
void checkCopies(const fs::path& backupDir, const std::vector<BackupFile>& copied) {
  std::set<std::string> names;
  for (const BackupFile& f : copied) {
    CAPTURE(f.name);
    names.insert(f.name);
    CHECK(f.bytes == static_cast<int64_t>(fs::file_size(backupDir / f.name)));
    CHECK(integrity(backupDir / f.name) == "ok");
  }
  CHECK(filesIn(backupDir) == names);
}

}  // namespace

TEST_CASE("a backup taken while events are ingested is consistent and holds every acked event") {
  TestServer server;
  std::vector<std::string> webhookIds, entrypoints;
  for (const char* name : {"shop", "billing", "crm"}) {
    const json w = server.createWebhook(name);
    webhookIds.push_back(w["id"].get<std::string>());
    entrypoints.push_back(w["entrypoints"][0]["id"].get<std::string>());
    server.createTarget(webhookIds.back(), {{"name", "db"}, {"type", "database"}});
  }

  // Senders keep posting for the whole test; acked[i] counts the 200s.
  std::atomic<bool> stop{false};
  std::vector<std::atomic<int64_t>> acked(entrypoints.size());
  std::vector<std::thread> senders;
  for (size_t i = 0; i < entrypoints.size(); ++i) {
    senders.emplace_back([&, i] {
      auto c = server.anonymousClient();
      const std::string body = "{\"pad\": \"" + std::string(2000, 'p') + "\"}";
      while (!stop) {
        auto res = c.Post("/hooks/" + entrypoints[i], body, "application/json");
        if (res && res->status == 200) ++acked[i];
      }
    });
  }
  const auto waitForAcks = [&](int64_t n) {
    for (int i = 0; i < 1000; ++i) {
      bool all = true;
      for (auto& a : acked) all = all && a >= n;
      if (all) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  REQUIRE(waitForAcks(50));

  // Two backups, one after another, both while the senders run.
  TempDir root;
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    std::vector<int64_t> ackedBefore;
    for (auto& a : acked) ackedBefore.push_back(a.load());
    const fs::path target = root / ("backup-" + std::to_string(round));
    auto copied = backupDataDir(server.dataDir(), target);
    REQUIRE_MESSAGE(copied.ok(), copied.error().message);
    REQUIRE(copied->size() == webhookIds.size() + 1);
    CHECK(copied->back().name == "webhooker.db");  // last: see storage/backup.h
    checkCopies(target, copied.value());

    CHECK(countRows(target / "webhooker.db", "webhooks") == 3);
    CHECK(countRows(target / "webhooker.db", "targets") == 3);
    for (size_t i = 0; i < webhookIds.size(); ++i) {
      CAPTURE(i);
      const fs::path copy = target / ("events-" + webhookIds[i] + ".db");
      const int64_t events = countRows(copy, "events");
      CHECK(events >= ackedBefore[i]);
      CHECK(countRows(copy, "deliveries") == events);  // one per event: a whole transaction each
      SQLite::Database db(copy.string(), SQLite::OPEN_READONLY);
      CHECK(db.execAndGet("SELECT COUNT(*) FROM events WHERE length(body) != body_size").getInt() ==
            0);
    }
    REQUIRE(waitForAcks(ackedBefore.front() + 20));  // more arrive between the rounds
  }
  stop = true;
  for (auto& t : senders) t.join();
}

TEST_CASE("`webhooker backup` copies a running daemon's data folder; a restore brings it back") {
  TempDir dataDir;
  TempDir root;
  std::string webhookId, entrypoint, token;
  {
    DaemonProcess daemon(dataDir.path());
    REQUIRE(daemon.adminToken());
    token = *daemon.adminToken();
    httplib::Client api(daemon.url());
    api.set_bearer_token_auth(*daemon.adminToken());
    auto created = api.Post("/api/v1/webhooks", R"({"name": "shop", "max_events": 777})",
                            "application/json");
    REQUIRE(created);
    REQUIRE(created->status == 201);
    webhookId = json::parse(created->body)["id"].get<std::string>();
    entrypoint = json::parse(created->body)["entrypoints"][0]["id"].get<std::string>();
    httplib::Client sender(daemon.url());
    for (int i = 0; i < 25; ++i) {
      auto res = sender.Post("/hooks/" + entrypoint, "{\"n\": " + std::to_string(i) + "}",
                             "application/json");
      REQUIRE(res);
      REQUIRE(res->status == 200);
    }

    const fs::path target = root / "nightly" / "copy";  // parents are created too
    const auto run =
        runWebhooker({"backup", target.string(), "--data-dir", dataDir.path().string()});
    REQUIRE_MESSAGE(run.exitCode == 0, describe(run));
    CHECK(contains(run.out, "copied webhooker.db ("));
    CHECK(contains(run.out, "copied events-" + webhookId + ".db ("));
    CHECK(contains(run.out, "2 databases"));
    CHECK(filesIn(target) == std::set<std::string>{"webhooker.db", "events-" + webhookId + ".db"});
    // Whoever can read a backup reads every tenant's data: the folder is the owner's only.
    CHECK((fs::status(target).permissions() & fs::perms::all) == fs::perms::owner_all);
    CHECK(integrity(target / "webhooker.db") == "ok");
    CHECK(integrity(target / ("events-" + webhookId + ".db")) == "ok");
    CHECK(countRows(target / ("events-" + webhookId + ".db"), "events") == 25);
    CHECK(daemon.running());  // it never noticed
    CHECK(daemon.stop() == 0);
  }

  // Restore as the README says: stop, copy the files into the data folder, start.
  TempDir restored;
  for (const auto& entry : fs::directory_iterator(root / "nightly" / "copy"))
    fs::copy_file(entry.path(), restored / entry.path().filename().string());
  DaemonProcess daemon(restored.path());
  CHECK_FALSE(daemon.adminToken());  // the copy holds the token's hash: the old token works
  httplib::Client api(daemon.url());
  api.set_bearer_token_auth(token);
  auto shown = api.Get("/api/v1/webhooks/" + webhookId);
  REQUIRE(shown);
  CHECK(shown->status == 200);
  CHECK(json::parse(shown->body)["max_events"] == 777);
  httplib::Client sender(daemon.url());
  auto more = sender.Post("/hooks/" + entrypoint, "{}", "application/json");
  REQUIRE(more);
  CHECK(more->status == 200);
  CHECK(daemon.stop() == 0);
  CHECK(countRows(restored / ("events-" + webhookId + ".db"), "events") == 26);
}

TEST_CASE("`webhooker backup` refuses bad input with a clear error and writes nothing") {
  TempDir dataDir;
  {
    DaemonProcess daemon(dataDir.path());  // a data folder with a webhooker.db
    CHECK(daemon.stop() == 0);
  }
  TempDir root;
  const std::string data = dataDir.path().string();

  SUBCASE("no target folder") {
    const auto run = runWebhooker({"backup", "--data-dir", data});
    CHECK(run.exitCode != 0);
    CHECK(contains(run.err + run.out, "DIR"));
    CHECK(filesIn(root.path()).empty());
  }
  SUBCASE("a folder that is not empty") {
    const fs::path target = root / "used";
    fs::create_directories(target);
    std::ofstream(target / "keep.txt") << "mine";
    const auto run = runWebhooker({"backup", target.string(), "--data-dir", data});
    CHECK(run.exitCode == 1);
    CHECK(contains(run.err, "not empty"));
    CHECK(filesIn(target) == std::set<std::string>{"keep.txt"});
  }
  SUBCASE("a target that is a file") {
    const fs::path target = root / "file";
    std::ofstream(target) << "x";
    const auto run = runWebhooker({"backup", target.string(), "--data-dir", data});
    CHECK(run.exitCode == 1);
    CHECK(contains(run.err, "not a folder"));
    CHECK(filesIn(root.path()) == std::set<std::string>{"file"});
  }
  SUBCASE("a data folder without webhooker.db") {
    TempDir empty;
    const fs::path target = root / "new";
    const auto run = runWebhooker({"backup", target.string(), "--data-dir", empty.path().string()});
    CHECK(run.exitCode == 1);
    CHECK(contains(run.err, "webhooker.db does not exist"));
    CHECK_FALSE(fs::exists(target));
    CHECK(filesIn(empty.path()).empty());
  }
  SUBCASE("an empty folder that exists is fine") {
    const fs::path target = root / "empty";
    fs::create_directories(target);
    const auto run = runWebhooker({"backup", target.string(), "--data-dir", data});
    CHECK_MESSAGE(run.exitCode == 0, describe(run));
    CHECK(filesIn(target) == std::set<std::string>{"webhooker.db"});
  }
}

}  // namespace webhooker::testing
