#include "tests/support/engine_harness.h"
#include "tests/support/eventually.h"

namespace webhooker::testing {

namespace {

std::string outcomeKey(const std::string& type, const std::string& status,
                       const std::string& reason) {
  return type + "|" + status + "|" + reason;
}

constexpr const char* kDeliveryColumns =
    "SELECT id, event_id, target_id, status, attempts, next_attempt_at, last_status_code, "
    "failure_reason";

DeliveryRow deliveryRowOf(SQLite::Statement& q) {
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

}  // namespace

void RecordingObserver::attempted(webhooker::TargetType targetType, std::chrono::milliseconds) {
  std::lock_guard lock(mutex_);
  ++attempts_[std::string(targetTypeWord(targetType))];
}

void RecordingObserver::outcome(std::optional<webhooker::TargetType> targetType,
                                webhooker::DeliveryStatus status,
                                std::optional<webhooker::FailureReason> failureReason) {
  {
    std::lock_guard lock(mutex_);
    ++outcomes_[outcomeKey(targetType ? std::string(targetTypeWord(*targetType)) : "unknown",
                           std::string(statusWord(status)),
                           failureReason ? failureReasonWord(*failureReason) : "")];
    ++totalOutcomes_;
  }
  outcomeReported_.notify_all();
}

bool RecordingObserver::waitForOutcomes(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return outcomeReported_.wait_for(lock, timeout, [&] { return totalOutcomes_ >= n; });
}

int RecordingObserver::attempts(const std::string& targetType) const {
  std::lock_guard lock(mutex_);
  if (!targetType.empty()) {
    const auto it = attempts_.find(targetType);
    return it == attempts_.end() ? 0 : it->second;
  }
  int total = 0;
  for (const auto& [type, n] : attempts_) total += n;
  return total;
}

int RecordingObserver::outcomes(const std::string& targetType, const std::string& status,
                                const std::string& failureReason) const {
  std::lock_guard lock(mutex_);
  const auto it = outcomes_.find(outcomeKey(targetType, status, failureReason));
  return it == outcomes_.end() ? 0 : it->second;
}

int RecordingObserver::totalOutcomes() const {
  std::lock_guard lock(mutex_);
  return totalOutcomes_;
}

RetryPolicy retryPolicy(int maxRetries, int64_t baseDelayMs, double jitter, int64_t maxDelayMs) {
  RetryPolicy p;
  p.maxRetries = maxRetries;
  p.baseDelayMs = baseDelayMs;
  p.maxDelayMs = maxDelayMs;
  p.jitter = jitter;
  return p;
}

EngineHarness::EngineHarness(HarnessOptions options)
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
  engineOptions.maxWorkers = options_.maxWorkers;
  engineOptions.workerIdleTimeout = options_.workerIdleTimeout;
  engineOptions.slowAttempt = options_.slowAttempt;
  engineOptions.sweepInterval = options_.sweepInterval;
  engineOptions.maxQueuedPerTarget = options_.maxQueuedPerTarget;
  engineOptions.maxQueued = options_.maxQueued;
  engineOptions.maxWaitingRetries = options_.maxWaitingRetries;
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

// The daemon's order (app/serve.cpp): the server stops, then what feeds the
// engine and the engine; the server goes before the engine, because its
// ingest handler waits for the commits still parked, whose callbacks hand
// their deliveries to the engine after the answer has gone out.
EngineHarness::~EngineHarness() {
  http_->stop();
  if (serveThread_.joinable()) serveThread_.join();
  health_->stop();
  operationalEvents_->stop();
  engine_->stop(std::chrono::seconds(10));
  http_.reset();
  engine_.reset();
}

void EngineHarness::startEngine() {
  engineStarted_ = std::chrono::steady_clock::now();
  engine_->start();
}

std::vector<int> EngineHarness::breakerEvents() const {
  std::lock_guard lock(breakerEventsMutex_);
  return breakerEvents_;
}

Hook EngineHarness::createWebhook(const std::string& name) {
  auto webhook = store_->createWebhook(name, "", 30);
  if (!webhook) throw std::runtime_error("createWebhook: " + webhook.error().message);
  auto entrypoints = store_->listEntrypoints(webhook->id);
  if (!entrypoints || entrypoints->empty()) throw std::runtime_error("createWebhook: no entrypoint");
  if (auto db = eventsDbs_->get(webhook->id); !db)
    throw std::runtime_error("createWebhook: events DB: " + db.error().message);
  return {webhook->id, entrypoints->front().id};
}

TargetRecord EngineHarness::createTarget(const std::string& webhookId, const std::string& type,
                                         const nlohmann::json& config, RetryPolicy retry,
                                         int maxConcurrency, const std::string& name) {
  TargetRecord t;
  t.webhookId = webhookId;
  t.name = name;
  const auto parsed = parseTargetType(type);
  if (!parsed) throw std::runtime_error("createTarget: no target type \"" + type + "\"");
  t.type = *parsed;
  t.active = true;
  t.maxConcurrency = maxConcurrency;
  t.configJson = config.dump();
  t.retry = retry;
  auto created = store_->createTarget(std::move(t));
  if (!created) throw std::runtime_error("createTarget: " + created.error().message);
  return created.value();
}

TargetRecord EngineHarness::createHttpTarget(const std::string& webhookId, const std::string& url,
                                             RetryPolicy retry, int maxConcurrency, int timeoutMs,
                                             nlohmann::json extra) {
  nlohmann::json config = std::move(extra);
  config["url"] = url;
  config["timeout_ms"] = timeoutMs;
  return createTarget(webhookId, "http", config, retry, maxConcurrency);
}

void EngineHarness::setTargetActive(const TargetRecord& target, bool active) {
  TargetRecord changed = target;
  auto current = store_->getTarget(target.webhookId, target.id);
  if (current) changed = current.value();
  changed.active = active;
  if (auto r = store_->updateTarget(changed); !r)
    throw std::runtime_error("updateTarget: " + r.error().message);
  engine_->targetChanged(target.webhookId, target.id);
}

void EngineHarness::makeFifo(TargetRecord& target) {
  target.health.ordering = TargetOrdering::kFifo;
  if (auto r = store_->updateTarget(target); !r)
    throw std::runtime_error("updateTarget: " + r.error().message);
  engine_->targetChanged(target.webhookId, target.id);
}

std::string EngineHarness::post(const std::string& entrypointId, const std::string& body,
                                const std::string& contentType, const httplib::Headers& headers) {
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

IngestOutcome EngineHarness::ingestDirect(const std::string& webhookId, InboundEvent event,
                                          const std::vector<std::string>& targetIds, bool submit) {
  auto db = eventsDbs_->get(webhookId);
  if (!db) throw std::runtime_error("ingestDirect: " + db.error().message);
  auto stored = db.value()->ingest(event, targetIds, std::chrono::hours(24));
  if (!stored) throw std::runtime_error("ingestDirect: " + stored.error().message);
  if (submit) handOver(webhookId, event, stored.value());
  return stored.value();
}

void EngineHarness::handOver(const std::string& webhookId, const InboundEvent& event,
                             const IngestOutcome& stored) {
  const auto targetType = [&](const std::string& targetId) {
    auto target = store_->getTarget(webhookId, targetId);
    return target ? target->type : webhooker::TargetType::kHttp;
  };
  engine_->submit(firstAttempts(webhookId, event, stored, targetType));
}

std::filesystem::path EngineHarness::eventsDbPath(const std::string& webhookId) const {
  return eventsDbs_->pathFor(webhookId);
}

DeliveryRef EngineHarness::deliveryOf(const std::string& webhookId, const std::string& eventId,
                                      const std::string& targetId) const {
  SQLite::Database db = openReadOnly(eventsDbPath(webhookId));
  SQLite::Statement q(db, "SELECT id FROM deliveries WHERE event_id = ? AND target_id = ?");
  q.bind(1, eventId);
  q.bind(2, targetId);
  if (!q.executeStep())
    throw std::runtime_error("no delivery of event " + eventId + " to target " + targetId);
  return {webhookId, q.getColumn(0).getString()};
}

std::vector<DeliveryRow> EngineHarness::deliveriesOf(const std::string& webhookId,
                                                     const std::string& targetId) const {
  SQLite::Database db = openReadOnly(eventsDbPath(webhookId));
  SQLite::Statement q(db, std::string(kDeliveryColumns) +
                              " FROM deliveries WHERE target_id = ? ORDER BY created_at, rowid");
  q.bind(1, targetId);
  std::vector<DeliveryRow> out;
  while (q.executeStep()) out.push_back(deliveryRowOf(q));
  return out;
}

DeliveryRow EngineHarness::delivery(const DeliveryRef& ref) const {
  SQLite::Database db = openReadOnly(eventsDbPath(ref.webhookId));
  SQLite::Statement q(db, std::string(kDeliveryColumns) + " FROM deliveries WHERE id = ?");
  q.bind(1, ref.id);
  if (!q.executeStep()) throw std::runtime_error("no delivery " + ref.id);
  return deliveryRowOf(q);
}

std::vector<ResultRow> EngineHarness::resultRows(const DeliveryRef& ref) const {
  SQLite::Database db = openReadOnly(eventsDbPath(ref.webhookId));
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

bool EngineHarness::waitForStatus(const DeliveryRef& ref, const std::string& status,
                                  std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (delivery(ref).status == status) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool EngineHarness::waitUntilNothingHeld(std::chrono::milliseconds timeout) {
  return eventually([&] { return engine().heldCount() == 0; }, timeout);
}

bool EngineHarness::waitForCount(const std::string& webhookId, const std::string& targetId,
                                 const std::string& status, size_t n,
                                 std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (countWithStatus(webhookId, targetId, status) >= n) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

size_t EngineHarness::countWithStatus(const std::string& webhookId, const std::string& targetId,
                                      const std::string& status) const {
  SQLite::Database db = openReadOnly(eventsDbPath(webhookId));
  SQLite::Statement q(db, "SELECT COUNT(*) FROM deliveries WHERE target_id = ? AND status = ?");
  q.bind(1, targetId);
  q.bind(2, status);
  q.executeStep();
  return static_cast<size_t>(q.getColumn(0).getInt64());
}

void EngineHarness::waitUntilServing() {
  httplib::Client c("127.0.0.1", port_);
  c.set_tcp_nodelay(true);
  for (int i = 0; i < 500; ++i) {
    if (auto res = c.Get("/healthz"); res && res->status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("harness: /healthz never answered");
}

}  // namespace webhooker::testing
