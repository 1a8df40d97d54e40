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
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "engine/backlog_sampler.h"
#include "engine/delivery_metrics.h"
#include "engine/dispatcher.h"
#include "server/admin_token.h"
#include "server/http_server.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "tests/support/read_only_db.h"
#include "tests/support/static_resolver.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

// Keeps every batch ingest submits and every target change the admin API
// reports, in order, so a test can check exactly what was handed over (and
// that a rejected request handed nothing).
// Inline: the ingest fuzzer (fuzz/) uses it without the test support library.
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
  void receiverChanged(const std::string& webhookId, const std::string& targetId) override {
    targetChanged(webhookId, targetId);
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
  // (webhook id, target id) per targetChanged() or receiverChanged() call.
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

  explicit TestServer(TestServerOptions options = {});
  ~TestServer();

  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }
  std::string token() const { return kToken; }

  // An admin client: bearer token preset, Nagle off (cpp-httplib's default
  // is on, which makes small requests wait on delayed ACKs).
  httplib::Client client() const;
  // What a webhook sender looks like: no admin token, so it is not stored
  // among the event's headers either.
  httplib::Client anonymousClient() const;

  const std::filesystem::path& dataDir() const { return dir_.path(); }
  std::filesystem::path mainDbPath() const;
  std::filesystem::path eventsDbPath(const std::string& webhookId) const;
  MainStore& store() { return *store_; }
  EventsDbPool& eventsDbs() { return *eventsDbs_; }
  RecordingDispatcher& dispatcher() { return dispatcher_; }
  const RecordingDispatcher& dispatcher() const { return dispatcher_; }
  server::HttpServer& http() { return *http_; }
  // Never runs on its own: a test calls sampleOnce() for GET /api/v1/summary
  // to have counts (it answers 503 until then).
  BacklogSampler& sampler() { return *sampler_; }
  CircuitBreakers& breakers() { return breakers_; }

  // --- Admin API shortcuts: throw on anything but the expected status. ---

  // POST /api/v1/webhooks; the 201 body.
  nlohmann::json createWebhook(const std::string& name);
  // POST /api/v1/webhooks/{id}/targets; the 201 body.
  nlohmann::json createTarget(const std::string& webhookId, const nlohmann::json& body);

 private:
  // An answered request proves the event loop runs.
  void waitUntilServing();

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
  DeliveryMetrics deliveryMetrics_{registry_};  // the sampler's gauges
  std::unique_ptr<BacklogSampler> sampler_;
  std::unique_ptr<server::HttpServer> http_;
  int port_ = 0;
  std::jthread serveThread_;
};

// --- Requests ---

httplib::Result postJson(httplib::Client& c, const std::string& path, const nlohmann::json& body);
httplib::Result patchJson(httplib::Client& c, const std::string& path, const nlohmann::json& body);

// Any method by name, with a JSON body for the methods that carry one and
// extra headers (which win over the client's bearer token).
httplib::Result request(httplib::Client& c, const std::string& method, const std::string& path,
                        const std::string& body = "", const httplib::Headers& headers = {});

// The response body as JSON; a discarded value when it is not JSON.
nlohmann::json jsonOf(const httplib::Result& res);

// The error code when the body is exactly {"error": {"code": "...",
// "message": "..."}} with both non-empty; otherwise a description of what
// came instead, so a CHECK against the expected code fails readably.
std::string errorCode(const httplib::Result& res);

inline int statusOf(const httplib::Result& res) { return res ? res->status : -1; }

// --- Reading the SQLite files directly, read-only (openReadOnly: read_only_db.h) ---

// 0 for a file that does not exist (a webhook's events file before its first event).
int64_t countRows(const std::filesystem::path& file, const std::string& table,
                  const std::string& where = "");

std::vector<std::string> tableNames(const std::filesystem::path& file);

// Every row of every table as text (blobs as their raw bytes, NULL as
// "NULL"), tables by name and rows by rowid: equal dumps mean nothing
// changed, and a string absent from the dump is nowhere in the file's rows.
// "(no file)" for a file that does not exist (an events file before its first event).
std::string dumpDatabase(const std::filesystem::path& file);

// The names of the events-*.db files in `dir`.
std::set<std::string> eventsDbFiles(const std::filesystem::path& dir);

}  // namespace webhooker::testing
