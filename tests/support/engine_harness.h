// EngineHarness: the delivery path in-process, built from the real pieces —
// a temp data dir, MainStore and EventsDbPool on real SQLite files, the
// resolver (StaticResolver: no real DNS), SsrfGuard (allow-list 127.0.0.0/8
// by default so loopback receivers are reachable; SSRF tests pass an empty
// one), HttpClient, CircuitBreakers (threshold, cooldown and clock chosen by
// the test), the standard targets, a recording AttemptObserver, the Engine
// (small sweep interval) and the real server::HttpServer on 127.0.0.1:0
// handing ingested events to the engine — so an event a test POSTs to
// /hooks/<id> takes exactly the daemon's path.
//
// Also the helpers delivery tests share: creating webhooks and targets
// directly in the store (retry policies below the API's bounds allowed),
// ingesting over HTTP or straight into the events DB, and reading the
// events DB read-only (SQLiteCpp) to check what was written independently
// of the code under test.
//
// Threading: the harness is driven from the test thread; the engine and
// the server run on their own threads. RecordingObserver is thread-safe.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/random.h"
#include "base/time_format.h"
#include "engine/engine.h"
#include "engine/operational_events.h"
#include "engine/target_health_monitor.h"
#include "server/admin_token.h"
#include "server/http_server.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "targets/circuit_breaker.h"
#include "targets/http_client.h"
#include "targets/ssrf_guard.h"
#include "targets/target.h"
#include "targets/target_registry.h"
#include "tests/support/static_resolver.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

// A Random that always answers the same point of the range: 0 is the low
// end, 1 the high end, 0.5 the middle. Makes jitter deterministic.
class FixedRandom final : public Random {
 public:
  explicit FixedRandom(double position = 0.5) : position_(position) {}
  double uniform(double low, double high) override { return low + (high - low) * position_; }

 private:
  const double position_;
};

// Polls `done` every 10 ms until it holds (true) or `timeout` passes (false).
template <typename Predicate>
bool eventually(Predicate done, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Counts what the targets report: attempts per target type, outcomes per
// (type, status, reason). An outcome is reported just after its status row
// is committed, so a test that saw the row waits for the report with
// waitForOutcomes() before counting.
class RecordingObserver final : public AttemptObserver {
 public:
  void attempted(const std::string& targetType, std::chrono::milliseconds) override {
    std::lock_guard lock(mutex_);
    ++attempts_[targetType];
  }
  void outcome(const std::string& targetType, webhooker::DeliveryStatus status,
               const std::string& failureReason) override {
    {
      std::lock_guard lock(mutex_);
      ++outcomes_[key(targetType, std::string(statusWord(status)), failureReason)];
      ++totalOutcomes_;
    }
    outcomeReported_.notify_all();
  }

  // True once at least `n` outcomes (of any kind) were reported.
  bool waitForOutcomes(int n, std::chrono::milliseconds timeout = std::chrono::seconds(2)) const {
    std::unique_lock lock(mutex_);
    return outcomeReported_.wait_for(lock, timeout, [&] { return totalOutcomes_ >= n; });
  }

  // Attempts of `targetType`; of every type when empty.
  int attempts(const std::string& targetType = "") const {
    std::lock_guard lock(mutex_);
    if (!targetType.empty()) {
      const auto it = attempts_.find(targetType);
      return it == attempts_.end() ? 0 : it->second;
    }
    int total = 0;
    for (const auto& [type, n] : attempts_) total += n;
    return total;
  }
  int outcomes(const std::string& targetType, const std::string& status,
               const std::string& failureReason = "") const {
    std::lock_guard lock(mutex_);
    const auto it = outcomes_.find(key(targetType, status, failureReason));
    return it == outcomes_.end() ? 0 : it->second;
  }
  int totalOutcomes() const {
    std::lock_guard lock(mutex_);
    return totalOutcomes_;
  }

 private:
  static std::string key(const std::string& type, const std::string& status,
                         const std::string& reason) {
    return type + "|" + status + "|" + reason;
  }
  mutable std::mutex mutex_;  // guards attempts_, outcomes_ and totalOutcomes_
  mutable std::condition_variable outcomeReported_;
  std::map<std::string, int> attempts_;
  std::map<std::string, int> outcomes_;
  int totalOutcomes_ = 0;
};

struct HarnessOptions {
  // WEBHOOKER_ALLOW_NETWORKS; "" is the empty allow-list (loopback refused).
  std::string allowNetworks = "127.0.0.0/8";
  int breakerThreshold = CircuitBreakers::kDefaultThreshold;
  std::chrono::milliseconds breakerCooldown = CircuitBreakers::kDefaultCooldown;
  // nullptr: the harness clock. Must outlive the harness.
  const Clock* breakerClock = nullptr;
  // Engine, stores and targets; nullptr: the system clock. Must outlive the harness.
  const Clock* clock = nullptr;
  // Jitter source; nullptr: SystemRandom. Must outlive the harness.
  Random* random = nullptr;
  int workers = 8;
  std::chrono::milliseconds sweepInterval{200};
  size_t maxQueuedPerTarget = EngineOptions{}.maxQueuedPerTarget;
  size_t maxQueued = EngineOptions{}.maxQueued;
  bool startEngine = true;  // false: call startEngine() later (restart tests)
  // Runs routing's jq programs in worker processes (this test executable
  // again); without it jq rules match nothing and cannot be saved.
  bool jq = false;
  std::chrono::milliseconds jqTimeout{100};
};

struct Hook {
  std::string webhookId;
  std::string entrypointId;
};

struct DeliveryRef {
  std::string webhookId;
  std::string id;
};

// A deliveries row, as stored.
struct DeliveryRow {
  std::string id;
  std::string eventId;
  std::string targetId;
  std::string status;
  int attempts = 0;
  std::optional<std::string> nextAttemptAt;
  std::optional<int> lastStatusCode;
  std::optional<std::string> failureReason;
};

// A delivery_results row, as stored.
struct ResultRow {
  int attempt = 0;
  std::optional<int> statusCode;
  std::string responseBody;
  std::optional<std::string> error;
  int64_t durationMs = 0;
  bool success = false;
  std::string createdAt;
};

inline RetryPolicy retryPolicy(int maxRetries, int64_t baseDelayMs, double jitter = 0.0,
                               int64_t maxDelayMs = 300000) {
  RetryPolicy p;
  p.maxRetries = maxRetries;
  p.baseDelayMs = baseDelayMs;
  p.maxDelayMs = maxDelayMs;
  p.jitter = jitter;
  return p;
}

inline SQLite::Database openReadOnlyDb(const std::filesystem::path& file) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  db.setBusyTimeout(5000);
  return db;
}

class EngineHarness {
 public:
  explicit EngineHarness(HarnessOptions options = {})
      : options_(std::move(options)),
        clock_(options_.clock ? *options_.clock : systemClock_),
        random_(options_.random ? *options_.random : systemRandom_) {
    auto store = MainStore::open(dir_ / "webhooker.db", DbOptions{}, clock_);
    if (!store) throw std::runtime_error("harness: open main DB: " + store.error().message);
    store_ = std::move(store.value());
    if (auto t = server::ensureAdminToken(*store_, std::string(kToken)); !t)
      throw std::runtime_error("harness: admin token: " + t.error().message);
    eventsDbs_ = std::make_unique<EventsDbPool>(dir_.path(), DbOptions{}, clock_);

    auto allow = Cidr::parseList(options_.allowNetworks);
    if (!allow) throw std::runtime_error("harness: allow-list: " + allow.error().message);
    guard_ = std::make_unique<SsrfGuard>(resolver_, allow.value());
    client_ = std::make_unique<HttpClient>(*guard_, clock_);
    breakers_ = std::make_unique<CircuitBreakers>(
        options_.breakerClock ? *options_.breakerClock : clock_, options_.breakerThreshold,
        options_.breakerCooldown);
    breakers_->onStateChange([this](int openCount) {
      std::lock_guard lock(breakerEventsMutex_);
      breakerEvents_.push_back(openCount);
    });
    registry_ =
        std::make_unique<TargetRegistry>(standardTargets(*client_, *breakers_, random_, clock_));

    EngineOptions engineOptions;
    engineOptions.workers = options_.workers;
    engineOptions.sweepInterval = options_.sweepInterval;
    engineOptions.maxQueuedPerTarget = options_.maxQueuedPerTarget;
    engineOptions.maxQueued = options_.maxQueued;
    routingMetrics_ = std::make_unique<RoutingMetrics>(metricsRegistry_);
    if (options_.jq) {
      JqSandboxOptions jqOptions;
      jqOptions.timeout = options_.jqTimeout;
      auto sandbox = JqSandbox::start(jqOptions);
      if (!sandbox) throw std::runtime_error("harness: jq: " + sandbox.error().message);
      sandbox_ = std::move(sandbox.value());
      evaluator_ = std::make_unique<RoutingEvaluator>(*sandbox_);
    }
    engine_ = std::make_unique<Engine>(engineOptions, *store_, *eventsDbs_, *registry_, clock_,
                                       observer_,
                                       EngineRouting{evaluator_.get(), routingMetrics_.get()});
    operationalEvents_ = std::make_unique<OperationalEvents>(*store_, *eventsDbs_, *engine_, clock_);
    operationalEvents_->reload();
    health_ = std::make_unique<TargetHealthMonitor>(*store_, *engine_, *operationalEvents_, clock_);
    health_->attach(*breakers_);
    engine_->setHealthReporter(*health_);
    operationalEvents_->start();

    server::ServerOptions serverOptions;
    serverOptions.listenAddress = "127.0.0.1";
    serverOptions.port = 0;
    serverOptions.threads = 8;
    http_ = std::make_unique<server::HttpServer>(
        serverOptions,
        server::ServerParts{*store_, *eventsDbs_, *engine_, *guard_, *breakers_, metricsRegistry_,
                            evaluator_.get(), routingMetrics_.get(), operationalEvents_.get()});
    auto port = http_->bind();
    if (!port) throw std::runtime_error("harness: bind: " + port.error().message);
    port_ = port.value();
    serveThread_ = std::jthread([this] { http_->run(); });
    waitUntilServing();

    if (options_.startEngine) startEngine();
  }

  ~EngineHarness() {
    http_->stop();
    if (serveThread_.joinable()) serveThread_.join();
    health_->stop();
    operationalEvents_->stop();
    engine_->stop(std::chrono::seconds(10));
    engine_.reset();
  }

  EngineHarness(const EngineHarness&) = delete;
  EngineHarness& operator=(const EngineHarness&) = delete;

  static constexpr const char* kToken = "whk_engine-harness-token-0123456789";

  // Recovery scan, then workers, timer and sweep.
  void startEngine() {
    engineStarted_ = std::chrono::steady_clock::now();
    engine_->start();
  }
  std::chrono::steady_clock::time_point engineStartedAt() const { return engineStarted_; }

  // --- The pieces ---
  const std::filesystem::path& dataDir() const { return dir_.path(); }
  MainStore& store() { return *store_; }
  EventsDbPool& eventsDbs() { return *eventsDbs_; }
  StaticResolver& resolver() { return resolver_; }
  CircuitBreakers& breakers() { return *breakers_; }
  RecordingObserver& observer() { return observer_; }
  Engine& engine() { return *engine_; }
  // With options_.jq only.
  JqSandbox& jqSandbox() { return *sandbox_; }
  prometheus::Registry& metricsRegistry() { return metricsRegistry_; }
  TargetHealthMonitor& health() { return *health_; }
  OperationalEvents& operationalEvents() { return *operationalEvents_; }
  const Clock& clock() const { return clock_; }
  int port() const { return port_; }
  // openCount() after each breaker state change, in order.
  std::vector<int> breakerEvents() const {
    std::lock_guard lock(breakerEventsMutex_);
    return breakerEvents_;
  }

  // --- Setup, straight into the store ---

  // A webhook with its first entrypoint and its events DB.
  Hook createWebhook(const std::string& name = "hook") {
    auto webhook = store_->createWebhook(name, "", 30);
    if (!webhook) throw std::runtime_error("createWebhook: " + webhook.error().message);
    auto entrypoints = store_->listEntrypoints(webhook->id);
    if (!entrypoints || entrypoints->empty()) throw std::runtime_error("createWebhook: no entrypoint");
    if (auto db = eventsDbs_->get(webhook->id); !db)
      throw std::runtime_error("createWebhook: events DB: " + db.error().message);
    return {webhook->id, entrypoints->front().id};
  }

  TargetRecord createTarget(const std::string& webhookId, const std::string& type,
                            const nlohmann::json& config, RetryPolicy retry = {},
                            int maxConcurrency = 4, const std::string& name = "target") {
    TargetRecord t;
    t.webhookId = webhookId;
    t.name = name;
    t.type = type;
    t.active = true;
    t.maxConcurrency = maxConcurrency;
    t.configJson = config.dump();
    t.retry = retry;
    auto created = store_->createTarget(std::move(t));
    if (!created) throw std::runtime_error("createTarget: " + created.error().message);
    return created.value();
  }

  // An http target forwarding to `url` with `timeout_ms`.
  TargetRecord createHttpTarget(const std::string& webhookId, const std::string& url,
                                RetryPolicy retry = {}, int maxConcurrency = 4,
                                int timeoutMs = 5000, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json config = std::move(extra);
    config["url"] = url;
    config["timeout_ms"] = timeoutMs;
    return createTarget(webhookId, "http", config, retry, maxConcurrency);
  }

  // (De)activates a target and tells the engine, as the admin API does.
  void setTargetActive(const TargetRecord& target, bool active) {
    TargetRecord changed = target;
    auto current = store_->getTarget(target.webhookId, target.id);
    if (current) changed = current.value();
    changed.active = active;
    if (auto r = store_->updateTarget(changed); !r)
      throw std::runtime_error("updateTarget: " + r.error().message);
    engine_->targetChanged(target.webhookId, target.id);
  }

  // --- Ingest ---

  // A webhook sender: POSTs to /hooks/<entrypoint> over HTTP (the daemon's
  // path). Returns the event id; throws unless the answer is 200.
  std::string post(const std::string& entrypointId, const std::string& body,
                   const std::string& contentType = "application/json",
                   const httplib::Headers& headers = {}) {
    httplib::Client c("127.0.0.1", port_);
    c.set_tcp_nodelay(true);
    c.set_connection_timeout(std::chrono::seconds(5));
    c.set_read_timeout(std::chrono::seconds(30));
    auto res = c.Post("/hooks/" + entrypointId, headers, body, contentType.c_str());
    if (!res) throw std::runtime_error("post: no response: " + httplib::to_string(res.error()));
    if (res->status != 200)
      throw std::runtime_error("post: status " + std::to_string(res->status) + ": " + res->body);
    return nlohmann::json::parse(res->body).at("event_id").get<std::string>();
  }

  // Stores `event` with one pending delivery per target id, as ingest does,
  // and (when `submit`) hands the tasks to the engine like ingest_handler.cpp.
  IngestOutcome ingestDirect(const std::string& webhookId, InboundEvent event,
                             const std::vector<std::string>& targetIds, bool submit = true) {
    auto db = eventsDbs_->get(webhookId);
    if (!db) throw std::runtime_error("ingestDirect: " + db.error().message);
    auto stored = db.value()->ingest(event, targetIds, std::chrono::hours(24));
    if (!stored) throw std::runtime_error("ingestDirect: " + stored.error().message);
    if (submit) handOver(webhookId, event, stored.value());
    return stored.value();
  }

  // Hands what ingestDirect stored to the engine, as ingest does after its commit.
  void handOver(const std::string& webhookId, const InboundEvent& event,
                const IngestOutcome& stored) {
    std::vector<Task> tasks;
    for (const StoredDelivery& d : stored.deliveries) {
      Task task;
      task.deliveryId = d.id;
      task.eventId = stored.eventId;
      task.webhookId = webhookId;
      task.targetId = d.targetId;
      auto target = store_->getTarget(webhookId, d.targetId);
      task.targetType = target ? target->type : "";
      if (event.body.size() <= Task::kInlineBodyLimit)
        task.payload = EventPayload{event.method, event.headers, event.contentType, event.body,
                                    stored.receivedAt, event.eventType};
      tasks.push_back(std::move(task));
    }
    engine_->submit(std::move(tasks));
  }

  // --- Reading the events DB (read-only, SQLiteCpp) ---

  std::filesystem::path eventsDbPath(const std::string& webhookId) const {
    return eventsDbs_->pathFor(webhookId);
  }

  // The delivery of `eventId` to `targetId`; throws if there is none.
  DeliveryRef deliveryOf(const std::string& webhookId, const std::string& eventId,
                         const std::string& targetId) const {
    SQLite::Database db = openReadOnlyDb(eventsDbPath(webhookId));
    SQLite::Statement q(db, "SELECT id FROM deliveries WHERE event_id = ? AND target_id = ?");
    q.bind(1, eventId);
    q.bind(2, targetId);
    if (!q.executeStep())
      throw std::runtime_error("no delivery of event " + eventId + " to target " + targetId);
    return {webhookId, q.getColumn(0).getString()};
  }

  // Every delivery to `targetId`, oldest first.
  std::vector<DeliveryRow> deliveriesOf(const std::string& webhookId,
                                        const std::string& targetId) const {
    SQLite::Database db = openReadOnlyDb(eventsDbPath(webhookId));
    SQLite::Statement q(db, std::string(kDeliveryColumns) +
                                " FROM deliveries WHERE target_id = ? ORDER BY created_at, rowid");
    q.bind(1, targetId);
    std::vector<DeliveryRow> out;
    while (q.executeStep()) out.push_back(deliveryRowOf(q));
    return out;
  }

  DeliveryRow delivery(const DeliveryRef& ref) const {
    SQLite::Database db = openReadOnlyDb(eventsDbPath(ref.webhookId));
    SQLite::Statement q(db, std::string(kDeliveryColumns) + " FROM deliveries WHERE id = ?");
    q.bind(1, ref.id);
    if (!q.executeStep()) throw std::runtime_error("no delivery " + ref.id);
    return deliveryRowOf(q);
  }

  std::vector<ResultRow> resultRows(const DeliveryRef& ref) const {
    SQLite::Database db = openReadOnlyDb(eventsDbPath(ref.webhookId));
    SQLite::Statement q(db,
                        "SELECT attempt, status_code, response_body, error, duration_ms, success, "
                        "created_at FROM delivery_results WHERE delivery_id = ? ORDER BY attempt, id");
    q.bind(1, ref.id);
    std::vector<ResultRow> out;
    while (q.executeStep()) {
      ResultRow r;
      r.attempt = q.getColumn(0).getInt();
      if (!q.getColumn(1).isNull()) r.statusCode = q.getColumn(1).getInt();
      r.responseBody = q.getColumn(2).isNull() ? "" : q.getColumn(2).getString();
      if (!q.getColumn(3).isNull()) r.error = q.getColumn(3).getString();
      r.durationMs = q.getColumn(4).getInt64();
      r.success = q.getColumn(5).getInt() != 0;
      r.createdAt = q.getColumn(6).getString();
      out.push_back(std::move(r));
    }
    return out;
  }

  // Polls until the delivery has `status`; false at the timeout.
  bool waitForStatus(const DeliveryRef& ref, const std::string& status,
                     std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (delivery(ref).status == status) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Polls until `n` deliveries to `targetId` have `status`; false at the timeout.
  bool waitForCount(const std::string& webhookId, const std::string& targetId,
                    const std::string& status, size_t n, std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (countWithStatus(webhookId, targetId, status) >= n) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  size_t countWithStatus(const std::string& webhookId, const std::string& targetId,
                         const std::string& status) const {
    SQLite::Database db = openReadOnlyDb(eventsDbPath(webhookId));
    SQLite::Statement q(db, "SELECT COUNT(*) FROM deliveries WHERE target_id = ? AND status = ?");
    q.bind(1, targetId);
    q.bind(2, status);
    q.executeStep();
    return static_cast<size_t>(q.getColumn(0).getInt64());
  }

 private:
  static constexpr const char* kDeliveryColumns =
      "SELECT id, event_id, target_id, status, attempts, next_attempt_at, last_status_code, "
      "failure_reason";

  static DeliveryRow deliveryRowOf(SQLite::Statement& q) {
    DeliveryRow d;
    d.id = q.getColumn(0).getString();
    d.eventId = q.getColumn(1).getString();
    d.targetId = q.getColumn(2).getString();
    d.status = q.getColumn(3).getString();
    d.attempts = q.getColumn(4).getInt();
    if (!q.getColumn(5).isNull()) d.nextAttemptAt = q.getColumn(5).getString();
    if (!q.getColumn(6).isNull()) d.lastStatusCode = q.getColumn(6).getInt();
    if (!q.getColumn(7).isNull()) d.failureReason = q.getColumn(7).getString();
    return d;
  }

  // cpp-httplib's stop() does nothing until the accept loop runs; an
  // answered request proves it does.
  void waitUntilServing() {
    httplib::Client c("127.0.0.1", port_);
    c.set_tcp_nodelay(true);
    for (int i = 0; i < 500; ++i) {
      if (auto res = c.Get("/healthz"); res && res->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("harness: /healthz never answered");
  }

  const HarnessOptions options_;
  SystemClock systemClock_;
  const Clock& clock_;
  SystemRandom systemRandom_;
  Random& random_;
  TempDir dir_;  // first of the owned resources: removed after every file is closed
  std::unique_ptr<MainStore> store_;
  std::unique_ptr<EventsDbPool> eventsDbs_;
  StaticResolver resolver_;
  std::unique_ptr<SsrfGuard> guard_;
  std::unique_ptr<HttpClient> client_;
  std::unique_ptr<CircuitBreakers> breakers_;
  mutable std::mutex breakerEventsMutex_;  // guards breakerEvents_
  std::vector<int> breakerEvents_;
  std::unique_ptr<TargetRegistry> registry_;
  RecordingObserver observer_;
  std::unique_ptr<JqSandbox> sandbox_;  // with options_.jq
  std::unique_ptr<RoutingEvaluator> evaluator_;
  std::unique_ptr<RoutingMetrics> routingMetrics_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<OperationalEvents> operationalEvents_;
  std::unique_ptr<TargetHealthMonitor> health_;
  prometheus::Registry metricsRegistry_;
  std::unique_ptr<server::HttpServer> http_;
  int port_ = 0;
  std::jthread serveThread_;
  std::chrono::steady_clock::time_point engineStarted_{};
};

}  // namespace webhooker::testing
