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
#include <prometheus/registry.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
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
#include "net/ssrf_guard.h"
#include "server/admin_token.h"
#include "server/http_server.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "targets/circuit_breaker.h"
#include "targets/http_client.h"
#include "targets/target.h"
#include "targets/target_registry.h"
#include "tests/support/eventually.h"
#include "tests/support/read_only_db.h"
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

// Counts what the targets report: attempts per target type, outcomes per
// (type, status, reason), each type by its word. An outcome is reported just after its status row
// is committed, so a test that saw the row waits for the report with
// waitForOutcomes() before counting.
class RecordingObserver final : public AttemptObserver {
 public:
  void attempted(webhooker::TargetType targetType, std::chrono::milliseconds) override;
  void outcome(std::optional<webhooker::TargetType> targetType, webhooker::DeliveryStatus status,
               std::optional<webhooker::FailureReason> failureReason) override;

  // True once at least `n` outcomes (of any kind) were reported.
  bool waitForOutcomes(int n, std::chrono::milliseconds timeout = std::chrono::seconds(2)) const;

  // Attempts of `targetType`; of every type when empty.
  int attempts(const std::string& targetType = "") const;
  int outcomes(const std::string& targetType, const std::string& status,
               const std::string& failureReason = "") const;
  int totalOutcomes() const;

 private:
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
  int maxWorkers = EngineOptions{}.maxWorkers;
  std::chrono::milliseconds workerIdleTimeout = EngineOptions{}.workerIdleTimeout;
  std::chrono::milliseconds slowAttempt = EngineOptions{}.slowAttempt;
  std::chrono::milliseconds sweepInterval{200};
  size_t maxQueuedPerTarget = EngineOptions{}.maxQueuedPerTarget;
  size_t maxQueued = EngineOptions{}.maxQueued;
  size_t maxWaitingRetries = EngineOptions{}.maxWaitingRetries;
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

RetryPolicy retryPolicy(int maxRetries, int64_t baseDelayMs, double jitter = 0.0,
                        int64_t maxDelayMs = 300000);

class EngineHarness {
 public:
  explicit EngineHarness(HarnessOptions options = {});
  ~EngineHarness();

  EngineHarness(const EngineHarness&) = delete;
  EngineHarness& operator=(const EngineHarness&) = delete;

  static constexpr const char* kToken = "whk_engine-harness-token-0123456789";

  // Recovery scan, then workers, timer and sweep.
  void startEngine();
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
  std::vector<int> breakerEvents() const;

  // --- Setup, straight into the store ---

  // A webhook with its first entrypoint and its events DB.
  Hook createWebhook(const std::string& name = "hook");

  TargetRecord createTarget(const std::string& webhookId, const std::string& type,
                            const nlohmann::json& config, RetryPolicy retry = {},
                            int maxConcurrency = 4, const std::string& name = "target");

  // An http target forwarding to `url` with `timeout_ms`.
  TargetRecord createHttpTarget(const std::string& webhookId, const std::string& url,
                                RetryPolicy retry = {}, int maxConcurrency = 4,
                                int timeoutMs = 5000, nlohmann::json extra = nlohmann::json::object());

  // (De)activates a target and tells the engine, as the admin API does.
  void setTargetActive(const TargetRecord& target, bool active);
  // Makes a target FIFO and tells the engine, as the admin API does.
  void makeFifo(TargetRecord& target);

  // --- Ingest ---

  // A webhook sender: POSTs to /hooks/<entrypoint> over HTTP (the daemon's
  // path). Returns the event id; throws unless the answer is 200.
  std::string post(const std::string& entrypointId, const std::string& body,
                   const std::string& contentType = "application/json",
                   const httplib::Headers& headers = {});

  // Stores `event` with one pending delivery per target id, as ingest does,
  // and (when `submit`) hands the tasks to the engine like ingest_handler.cpp.
  IngestOutcome ingestDirect(const std::string& webhookId, InboundEvent event,
                             const std::vector<std::string>& targetIds, bool submit = true);

  // Hands what ingestDirect stored to the engine, as ingest does after its commit.
  void handOver(const std::string& webhookId, const InboundEvent& event,
                const IngestOutcome& stored);

  // --- Reading the events DB (read-only, SQLiteCpp) ---

  std::filesystem::path eventsDbPath(const std::string& webhookId) const;

  // The delivery of `eventId` to `targetId`; throws if there is none.
  DeliveryRef deliveryOf(const std::string& webhookId, const std::string& eventId,
                         const std::string& targetId) const;

  // Every delivery to `targetId`, oldest first.
  std::vector<DeliveryRow> deliveriesOf(const std::string& webhookId,
                                        const std::string& targetId) const;

  DeliveryRow delivery(const DeliveryRef& ref) const;

  std::vector<ResultRow> resultRows(const DeliveryRef& ref) const;

  // Polls until the delivery has `status`; false at the timeout.
  bool waitForStatus(const DeliveryRef& ref, const std::string& status,
                     std::chrono::milliseconds timeout) const;

  // Polls until `n` deliveries to `targetId` have `status`; false at the timeout.
  bool waitForCount(const std::string& webhookId, const std::string& targetId,
                    const std::string& status, size_t n, std::chrono::milliseconds timeout) const;

  size_t countWithStatus(const std::string& webhookId, const std::string& targetId,
                         const std::string& status) const;

  // Polls until the engine holds no delivery: none is queued, in flight,
  // being recorded or waiting for a retry, so no attempt can follow (a
  // wrong retry or a second copy would have been held until it ran); false
  // at the timeout.
  bool waitUntilNothingHeld(std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  // cpp-httplib's stop() does nothing until the accept loop runs; an
  // answered request proves it does.
  void waitUntilServing();

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
