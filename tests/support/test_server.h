// TestServer: the daemon in-process for integration tests — a temp data dir,
// the real MainStore and EventsDbPool on real SQLite files, the real
// HttpServer on 127.0.0.1:<any free port> in its own thread, and a
// dispatcher that records what ingest handed over instead of delivering it.
//
// Also the helpers the integration tests share: JSON requests, the error
// shape, and reading the SQLite files directly (read-only) to check what was
// written — independently of the code under test.
//
// Threading: the server serves on its own thread; client() may be
// called from any thread, each caller using its own httplib::Client.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "engine/dispatcher.h"
#include "server/admin_token.h"
#include "server/http_server.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "tests/support/static_resolver.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

// Keeps every batch ingest submits and every target change the admin API
// reports, in order, so a test can check exactly what was handed over (and
// that a rejected request handed nothing).
class RecordingDispatcher final : public Dispatcher {
 public:
  Handoff openHandoff() override { return nullptr; }  // nothing here scans the events DBs
  void submit(std::vector<Task> tasks) override {
    std::lock_guard lock(mutex_);
    batches_.push_back(std::move(tasks));
  }
  void targetChanged(const std::string& webhookId, const std::string& targetId) override {
    std::lock_guard lock(mutex_);
    targetChanges_.emplace_back(webhookId, targetId);
  }
  int attemptsInFlight(const std::string&) const override { return 0; }  // it runs none

  std::vector<std::vector<Task>> batches() const {
    std::lock_guard lock(mutex_);
    return batches_;
  }
  // Every task of every batch, in submission order.
  std::vector<Task> tasks() const {
    std::lock_guard lock(mutex_);
    std::vector<Task> out;
    for (const auto& batch : batches_) out.insert(out.end(), batch.begin(), batch.end());
    return out;
  }
  size_t batchCount() const {
    std::lock_guard lock(mutex_);
    return batches_.size();
  }
  // (webhook id, target id) per targetChanged() call.
  std::vector<std::pair<std::string, std::string>> targetChanges() const {
    std::lock_guard lock(mutex_);
    return targetChanges_;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    batches_.clear();
    targetChanges_.clear();
  }

 private:
  mutable std::mutex mutex_;  // guards both lists: calls come from HTTP worker threads
  std::vector<std::vector<Task>> batches_;
  std::vector<std::pair<std::string, std::string>> targetChanges_;
};

struct TestServerOptions {
  size_t bodyLimit = 1024 * 1024;
  // Stamps events and rows; nullptr: the system clock. Must outlive the server.
  const Clock* clock = nullptr;
  int threads = 8;
  // How long the events DBs wait for another connection's write lock.
  int busyTimeoutMs = DbOptions{}.busyTimeoutMs;
  // Changes the server's options last (deadlines, caps, trusted proxies).
  std::function<void(server::ServerOptions&)> tune = nullptr;
};

class TestServer {
 public:
  // Long enough for ensureAdminToken (16+), recognisable in a dump.
  static constexpr const char* kToken = "whk_integration-test-token-0123456789";

  explicit TestServer(TestServerOptions options = {})
      : options_(options), clock_(options.clock ? *options.clock : systemClock_) {
    auto store = MainStore::open(dir_ / "webhooker.db", DbOptions{}, clock_);
    if (!store) throw std::runtime_error("TestServer: open main DB: " + store.error().message);
    store_ = std::move(store.value());
    if (auto t = server::ensureAdminToken(*store_, std::string(kToken)); !t)
      throw std::runtime_error("TestServer: admin token: " + t.error().message);
    DbOptions eventsDbOptions;
    eventsDbOptions.busyTimeoutMs = options_.busyTimeoutMs;
    eventsDbs_ = std::make_unique<EventsDbPool>(dir_.path(), eventsDbOptions, clock_);

    server::ServerOptions serverOptions;
    serverOptions.listenAddress = "127.0.0.1";
    serverOptions.port = 0;
    serverOptions.threads = options_.threads;
    serverOptions.ingest.bodyLimit = options_.bodyLimit;
    if (options_.tune) options_.tune(serverOptions);
    http_ = std::make_unique<server::HttpServer>(
        serverOptions, server::ServerParts{*store_, *eventsDbs_, dispatcher_, guard_, breakers_, registry_});
    auto port = http_->bind();
    if (!port) throw std::runtime_error("TestServer: bind: " + port.error().message);
    port_ = port.value();
    serveThread_ = std::jthread([this] { http_->run(); });
    waitUntilServing();
  }

  ~TestServer() {
    http_->stop();
    if (serveThread_.joinable()) serveThread_.join();
  }

  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }
  std::string token() const { return kToken; }

  // An admin client: bearer token preset, Nagle off (cpp-httplib's default
  // is on, which makes small requests wait on delayed ACKs).
  httplib::Client client() const {
    httplib::Client c = anonymousClient();
    c.set_bearer_token_auth(kToken);
    return c;
  }
  // What a webhook sender looks like: no admin token, so it is not stored
  // among the event's headers either.
  httplib::Client anonymousClient() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_tcp_nodelay(true);
    c.set_connection_timeout(std::chrono::seconds(5));
    c.set_read_timeout(std::chrono::seconds(30));
    return c;
  }

  const std::filesystem::path& dataDir() const { return dir_.path(); }
  std::filesystem::path mainDbPath() const { return dir_ / "webhooker.db"; }
  std::filesystem::path eventsDbPath(const std::string& webhookId) const {
    return eventsDbs_->pathFor(webhookId);
  }
  MainStore& store() { return *store_; }
  EventsDbPool& eventsDbs() { return *eventsDbs_; }
  RecordingDispatcher& dispatcher() { return dispatcher_; }
  const RecordingDispatcher& dispatcher() const { return dispatcher_; }
  server::HttpServer& http() { return *http_; }

  // --- Admin API shortcuts: throw on anything but the expected status. ---

  // POST /api/v1/webhooks; the 201 body.
  nlohmann::json createWebhook(const std::string& name) {
    return expect(client().Post("/api/v1/webhooks", nlohmann::json{{"name", name}}.dump(),
                                "application/json"),
                  201, "create webhook");
  }
  // POST /api/v1/webhooks/{id}/targets; the 201 body.
  nlohmann::json createTarget(const std::string& webhookId, const nlohmann::json& body) {
    return expect(client().Post("/api/v1/webhooks/" + webhookId + "/targets", body.dump(),
                                "application/json"),
                  201, "create target");
  }

 private:
  static nlohmann::json expect(const httplib::Result& res, int status, const char* what) {
    if (!res) throw std::runtime_error(std::string(what) + ": no response");
    if (res->status != status)
      throw std::runtime_error(std::string(what) + ": status " + std::to_string(res->status) +
                               ": " + res->body);
    return nlohmann::json::parse(res->body);
  }

  // An answered request proves the event loop runs.
  void waitUntilServing() {
    auto c = anonymousClient();
    for (int i = 0; i < 500; ++i) {
      if (auto res = c.Get("/healthz"); res && res->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // The jthread joins as the members unwind: ask the server to stop first.
    http_->stop();
    throw std::runtime_error("TestServer: /healthz never answered");
  }

  const TestServerOptions options_;
  SystemClock systemClock_;
  const Clock& clock_;
  TempDir dir_;  // first of the owned resources: removed after every file is closed
  std::unique_ptr<MainStore> store_;
  std::unique_ptr<EventsDbPool> eventsDbs_;
  RecordingDispatcher dispatcher_;
  StaticResolver resolver_;                 // no DNS: the API only vets literal addresses
  SsrfGuard guard_{resolver_, {}};
  CircuitBreakers breakers_{clock_};        // nothing delivers here: every breaker is closed
  prometheus::Registry registry_;
  std::unique_ptr<server::HttpServer> http_;
  int port_ = 0;
  std::jthread serveThread_;
};

// --- Requests ---

inline httplib::Result postJson(httplib::Client& c, const std::string& path,
                                const nlohmann::json& body) {
  return c.Post(path, body.dump(), "application/json");
}
inline httplib::Result patchJson(httplib::Client& c, const std::string& path,
                                 const nlohmann::json& body) {
  return c.Patch(path, body.dump(), "application/json");
}

// Any method by name, with a JSON body for the methods that carry one and
// extra headers (which win over the client's bearer token).
inline httplib::Result request(httplib::Client& c, const std::string& method,
                               const std::string& path, const std::string& body = "",
                               const httplib::Headers& headers = {}) {
  if (method == "GET") return c.Get(path, headers);
  if (method == "POST") return c.Post(path, headers, body, "application/json");
  if (method == "PUT") return c.Put(path, headers, body, "application/json");
  if (method == "PATCH") return c.Patch(path, headers, body, "application/json");
  if (method == "DELETE") return c.Delete(path, headers);
  throw std::invalid_argument("request: unsupported method " + method);
}

// The response body as JSON; a discarded value when it is not JSON.
inline nlohmann::json jsonOf(const httplib::Result& res) {
  if (!res) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(res->body, nullptr, false);
}

// The error code when the body is exactly {"error": {"code": "...",
// "message": "..."}} with both non-empty; otherwise a description of what
// came instead, so a CHECK against the expected code fails readably.
inline std::string errorCode(const httplib::Result& res) {
  if (!res) return "<no response: " + httplib::to_string(res.error()) + ">";
  const nlohmann::json body = jsonOf(res);
  const bool shaped = body.is_object() && body.size() == 1 && body.contains("error") &&
                      body["error"].is_object() && body["error"].size() == 2 &&
                      body["error"].contains("code") && body["error"]["code"].is_string() &&
                      body["error"].contains("message") &&
                      body["error"]["message"].is_string() &&
                      !body["error"]["code"].get<std::string>().empty() &&
                      !body["error"]["message"].get<std::string>().empty();
  if (!shaped) return "<not an error body: " + res->body + ">";
  return body["error"]["code"].get<std::string>();
}

inline int statusOf(const httplib::Result& res) { return res ? res->status : -1; }

// --- Reading the SQLite files directly, read-only ---

inline SQLite::Database openReadOnly(const std::filesystem::path& file) {
  return SQLite::Database(file.string(), SQLite::OPEN_READONLY);
}

inline int64_t countRows(const std::filesystem::path& file, const std::string& table,
                         const std::string& where = "") {
  SQLite::Database db = openReadOnly(file);
  return db.execAndGet("SELECT COUNT(*) FROM " + table + (where.empty() ? "" : " WHERE " + where))
      .getInt64();
}

inline std::vector<std::string> tableNames(const std::filesystem::path& file) {
  SQLite::Database db = openReadOnly(file);
  SQLite::Statement q(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  std::vector<std::string> out;
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

// Every row of every table as text (blobs as their raw bytes, NULL as
// "NULL"), tables by name and rows by rowid: equal dumps mean nothing
// changed, and a string absent from the dump is nowhere in the file's rows.
inline std::string dumpDatabase(const std::filesystem::path& file) {
  SQLite::Database db = openReadOnly(file);
  std::string out;
  SQLite::Statement tables(db,
                           "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (tables.executeStep()) {
    const std::string table = tables.getColumn(0).getString();
    out += "== " + table + "\n";
    SQLite::Statement rows(db, "SELECT * FROM \"" + table + "\" ORDER BY rowid");
    while (rows.executeStep()) {
      for (int i = 0; i < rows.getColumnCount(); ++i) {
        const SQLite::Column col = rows.getColumn(i);
        out += col.isNull() ? std::string("NULL") : col.getString();
        out += '\x1f';
      }
      out += '\n';
    }
  }
  return out;
}

// The names of the events-*.db files in `dir`.
inline std::set<std::string> eventsDbFiles(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("events-", 0) == 0 && name.size() > 3 &&
        name.compare(name.size() - 3, 3, ".db") == 0)
      out.insert(name);
  }
  return out;
}

}  // namespace webhooker::testing
