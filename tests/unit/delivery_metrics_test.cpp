// DeliveryMetrics and the pieces that feed it, read back the way Prometheus
// reads them — from the TextSerializer output of the registry:
// - the label domains (typeLabel, reasonLabel) and every series existing,
//   at 0, from construction;
// - the open-breaker gauge recounted from CircuitBreakers on every state
//   change, wired exactly like app/serve.cpp (open -> 1, half-open probe
//   succeeds -> 0), with a FakeClock instead of a 30 s wait;
// - BacklogSampler on real SQLite files: pending/retrying per type, summed
//   over every events DB, deliveries of a deleted (or never known) target
//   folded into "unknown", a drained backlog back at 0; the first pass done
//   by the time start() returns;
// - "outcome counters move only after the status row is written": the real
//   targets (http against a loopback receiver, database, log) called
//   directly with a DeliveryMetrics as their AttemptObserver, on an events
//   DB whose status writes are rejected.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/random.h"
#include "base/uuid.h"
#include "engine/backlog_sampler.h"
#include "engine/delivery_metrics.h"
#include "storage/events_db.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "targets/circuit_breaker.h"
#include "targets/http_client.h"
#include "net/ssrf_guard.h"
#include "targets/target.h"
#include "targets/target_registry.h"
#include "tests/support/deliver_and_wait.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_clock.h"
#include "tests/support/receiver.h"
#include "tests/support/static_resolver.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::array<const char*, 9> kTypes = {"http", "slack", "database", "log", "redis_stream",
                                              "nats", "amqp", "pull", "unknown"};

// --- Reading the exposition text -------------------------------------------

std::string exposition(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}


// Reads one series; -1 when it does not exist (every value here is >= 0).
double read(prometheus::Registry& registry, const std::string& name, const Labels& labels) {
  return valueIn(exposition(registry), name, labels);
}

// --- Events DB helpers ------------------------------------------------------

InboundEvent someEvent(const std::string& body = R"({"order":42})") {
  InboundEvent e;
  e.entrypointId = newUuid();
  e.method = "POST";
  e.path = "/hooks/" + e.entrypointId;
  e.headers = {{"Content-Type", "application/json"}};
  e.contentType = "application/json";
  e.body = body;
  e.remoteAddr = "127.0.0.1";
  return e;
}

struct DeliveryState {
  std::string status;
  int attempts = 0;
  int resultRows = 0;
};

DeliveryState stateOf(const std::filesystem::path& file, const std::string& deliveryId) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  db.setBusyTimeout(5000);
  SQLite::Statement q(db,
                      "SELECT status, attempts, (SELECT COUNT(*) FROM delivery_results r "
                      "WHERE r.delivery_id = d.id) FROM deliveries d WHERE id = ?");
  q.bind(1, deliveryId);
  if (!q.executeStep()) throw std::runtime_error("no delivery " + deliveryId);
  return {q.getColumn(0).getString(), q.getColumn(1).getInt(), q.getColumn(2).getInt()};
}

// Marks a delivery as an attempt would, through the storage API.
void recordOutcome(EventsDb& db, const std::string& deliveryId, DeliveryStatus status) {
  AttemptRecord r;
  r.deliveryId = deliveryId;
  const auto current = db.getDelivery(deliveryId);  // the next attempt follows the recorded ones
  REQUIRE(current);
  r.attempt = current->attempts + 1;
  r.statusCode = status == DeliveryStatus::kDelivered ? 200 : 500;
  r.success = status == DeliveryStatus::kDelivered;
  r.newStatus = status;
  if (status == DeliveryStatus::kRetrying) r.nextAttemptAt = SystemClock().now() + 1h;
  if (status == DeliveryStatus::kFailed) r.failureReason = webhooker::FailureKind::kMaxAttempts;
  REQUIRE(db.recordAttempt(r));
}

// A Scheduler that only remembers what it was asked.
class RecordingScheduler final : public Scheduler {
 public:
  void scheduleRetry(Task task, std::chrono::milliseconds) override {
    scheduled.push_back(std::move(task));
  }
  std::vector<Task> scheduled;
};

}  // namespace

// --- Label domains ----------------------------------------------------------

TEST_CASE("typeLabel is the type's word, and unknown without a type") {
  using webhooker::TargetType;
  CHECK(DeliveryMetrics::typeLabel(TargetType::kHttp) == "http");
  CHECK(DeliveryMetrics::typeLabel(TargetType::kSlack) == "slack");
  CHECK(DeliveryMetrics::typeLabel(TargetType::kDatabase) == "database");
  CHECK(DeliveryMetrics::typeLabel(TargetType::kLog) == "log");
  CHECK(DeliveryMetrics::typeLabel(TargetType::kRedisStream) == "redis_stream");
  CHECK(DeliveryMetrics::typeLabel(std::nullopt) == "unknown");
  // Every type has its label, and the labels are the test's list.
  for (TargetType type : webhooker::kTargetTypes) {
    const auto label = DeliveryMetrics::typeLabel(type);
    CHECK(std::find(DeliveryMetrics::kTypeLabels.begin(), DeliveryMetrics::kTypeLabels.end(),
                    label) != DeliveryMetrics::kTypeLabels.end());
  }
  REQUIRE(DeliveryMetrics::kTypeLabels.size() == kTypes.size());
  for (size_t i = 0; i < kTypes.size(); ++i) CHECK(DeliveryMetrics::kTypeLabels[i] == kTypes[i]);
}

TEST_CASE("failure reasons keep their stored words, each its own metric label") {
  using webhooker::FailureKind;
  using webhooker::FailureReason;
  using webhooker::failureReasonWord;
  // Stored in deliveries.failure_reason and used by dashboards: never renamed.
  CHECK(failureReasonWord(FailureReason::httpStatus(404)) == "http_404");
  CHECK(failureReasonWord(FailureReason::httpStatus(301)) == "http_301");
  CHECK(failureReasonWord(FailureKind::kMaxAttempts) == "max_attempts");
  CHECK(failureReasonWord(FailureKind::kBlockedDestination) == "blocked_destination");
  CHECK(failureReasonWord(FailureKind::kInvalidConfig) == "invalid_config");
  CHECK(failureReasonWord(FailureKind::kTargetDeleted) == "target_deleted");
  CHECK(failureReasonWord(FailureKind::kTransformFailed) == "transform_failed");
  CHECK(failureReasonWord(FailureKind::kTlsFailed) == "tls_failed");
  CHECK(failureReasonWord(FailureKind::kAuthFailed) == "auth_failed");
  for (FailureKind kind : {FailureKind::kMaxAttempts, FailureKind::kBlockedDestination,
                           FailureKind::kInvalidConfig, FailureKind::kTargetDeleted,
                           FailureKind::kTransformFailed, FailureKind::kTlsFailed,
                           FailureKind::kAuthFailed}) {
    const std::string word = failureReasonWord(kind);
    CAPTURE(word);
    CHECK(DeliveryMetrics::reasonLabel(word) == word);
  }
  CHECK(FailureReason::httpStatus(404) == FailureReason::httpStatus(404));
  CHECK_FALSE(FailureReason::httpStatus(404) == FailureReason::httpStatus(410));
  CHECK_FALSE(FailureReason(FailureKind::kTlsFailed) == FailureKind::kAuthFailed);
}

TEST_CASE("reasonLabel keeps http_3xx/4xx codes and the known reasons, anything else is other") {
  CHECK(DeliveryMetrics::reasonLabel("http_404") == "http_404");
  CHECK(DeliveryMetrics::reasonLabel("http_410") == "http_410");
  CHECK(DeliveryMetrics::reasonLabel("http_301") == "http_301");
  CHECK(DeliveryMetrics::reasonLabel("max_attempts") == "max_attempts");
  CHECK(DeliveryMetrics::reasonLabel("blocked_destination") == "blocked_destination");
  CHECK(DeliveryMetrics::reasonLabel("invalid_config") == "invalid_config");
  CHECK(DeliveryMetrics::reasonLabel("target_deleted") == "target_deleted");
  // Not an outcome that ends a delivery, or not a code at all.
  CHECK(DeliveryMetrics::reasonLabel("http_200") == "other");
  CHECK(DeliveryMetrics::reasonLabel("http_500") == "other");
  CHECK(DeliveryMetrics::reasonLabel("http_abc") == "other");
  CHECK(DeliveryMetrics::reasonLabel("http_4044") == "other");
  CHECK(DeliveryMetrics::reasonLabel("http_40") == "other");
  CHECK(DeliveryMetrics::reasonLabel("http_") == "other");
  CHECK(DeliveryMetrics::reasonLabel("garbage") == "other");
  CHECK(DeliveryMetrics::reasonLabel("") == "other");
  CHECK(DeliveryMetrics::reasonLabel("7d9c1f0e-4a2b-4c3d-8e5f-6a7b8c9d0e1f") == "other");
}

TEST_CASE("every delivery series exists at 0 from construction, for all eight types") {
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);
  const std::string text = exposition(registry);
  for (const char* type : kTypes) {
    CAPTURE(type);
    for (const char* name :
         {"webhooker_delivery_attempts_total", "webhooker_deliveries_succeeded_total",
          "webhooker_deliveries_failed_total", "webhooker_delivery_retries_total",
          "webhooker_deliveries_pending", "webhooker_deliveries_retrying",
          "webhooker_circuit_breakers_open", "webhooker_delivery_duration_seconds_count",
          "webhooker_delivery_duration_seconds_sum"}) {
      CAPTURE(name);
      CHECK(valueIn(text, name, typeIs(type)) == 0.0);
    }
    for (std::string_view reason : DeliveryMetrics::kReasons) {
      CAPTURE(reason);
      CHECK(valueIn(text, "webhooker_dead_letters_total",
                    {{"target_type", type}, {"reason", std::string(reason)}}) == 0.0);
    }
  }
  // Nothing but the eight types carries a target_type label.
  for (const Sample& s : parseSamples(text)) {
    const auto it = s.labels.find("target_type");
    REQUIRE(it != s.labels.end());
    CHECK(std::find(kTypes.begin(), kTypes.end(), it->second) != kTypes.end());
  }
}

TEST_CASE("attempted and outcome move exactly their own series") {
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);

  using webhooker::TargetType;
  metrics.attempted(TargetType::kHttp, 250ms);
  metrics.attempted(TargetType::kHttp, 750ms);
  metrics.attempted(TargetType::kNats, 10ms);
  using webhooker::FailureKind;
  using webhooker::FailureReason;
  metrics.outcome(TargetType::kHttp, DeliveryStatus::kDelivered, std::nullopt);
  metrics.outcome(TargetType::kHttp, DeliveryStatus::kRetrying, std::nullopt);
  metrics.outcome(TargetType::kLog, DeliveryStatus::kFailed, FailureReason::httpStatus(404));
  metrics.outcome(TargetType::kAmqp, DeliveryStatus::kFailed, FailureReason::httpStatus(999));
  // the target is gone
  metrics.outcome(std::nullopt, DeliveryStatus::kFailed, FailureKind::kTargetDeleted);
  // not an outcome: nothing moves
  metrics.outcome(TargetType::kHttp, DeliveryStatus::kPending, std::nullopt);

  const std::string text = exposition(registry);
  CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("http")) == 2.0);
  CHECK(valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs("http")) == 2.0);
  CHECK(valueIn(text, "webhooker_delivery_duration_seconds_sum", typeIs("http")) ==
        doctest::Approx(1.0));
  CHECK(valueIn(text, "webhooker_delivery_duration_seconds_bucket",
                {{"target_type", "http"}, {"le", "0.5"}}) == 1.0);
  CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("nats")) == 1.0);
  CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("unknown")) == 0.0);
  CHECK(valueIn(text, "webhooker_deliveries_succeeded_total", typeIs("http")) == 1.0);
  CHECK(valueIn(text, "webhooker_delivery_retries_total", typeIs("http")) == 1.0);
  CHECK(valueIn(text, "webhooker_deliveries_failed_total", typeIs("http")) == 0.0);
  CHECK(valueIn(text, "webhooker_deliveries_failed_total", typeIs("log")) == 1.0);
  CHECK(valueIn(text, "webhooker_dead_letters_total",
                {{"target_type", "log"}, {"reason", "http_404"}}) == 1.0);
  CHECK(valueIn(text, "webhooker_deliveries_failed_total", typeIs("amqp")) == 1.0);
  CHECK(valueIn(text, "webhooker_dead_letters_total",
                {{"target_type", "amqp"}, {"reason", "other"}}) == 1.0);
  CHECK_FALSE(valueOf(text, "webhooker_dead_letters_total",
                      {{"target_type", "amqp"}, {"reason", "http_999"}}));
  CHECK(valueIn(text, "webhooker_deliveries_failed_total", typeIs("unknown")) == 1.0);
  CHECK(valueIn(text, "webhooker_dead_letters_total",
                {{"target_type", "unknown"}, {"reason", "target_deleted"}}) == 1.0);
  // The pending status moved nothing.
  CHECK(valueIn(text, "webhooker_deliveries_succeeded_total", typeIs("unknown")) == 0.0);
}

// --- The open-breaker gauge -------------------------------------------------

TEST_CASE("the open-breaker gauge is recounted on every breaker state change") {
  FakeClock clock;
  CircuitBreakers breakers(clock);
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);
  // As app/serve.cpp wires it.
  breakers.onStateChange([&](int) { metrics.setBreakersOpen(breakers.openCountByType()); });
  const auto openGauge = [&](const std::string& type) {
    return read(registry, "webhooker_circuit_breakers_open", typeIs(type));
  };
  const std::string target = newUuid();
  const std::string slackTarget = newUuid();

  for (int i = 1; i < CircuitBreakers::kDefaultThreshold; ++i)
    breakers.recordFailure(target, webhooker::TargetType::kHttp);
  CHECK(openGauge("http") == 0.0);  // 4 failures: still closed
  breakers.recordFailure(target, webhooker::TargetType::kHttp);
  CHECK(openGauge("http") == 1.0);
  CHECK(openGauge("slack") == 0.0);

  for (int i = 0; i < CircuitBreakers::kDefaultThreshold; ++i)
    breakers.recordFailure(slackTarget, webhooker::TargetType::kSlack);
  CHECK(openGauge("http") == 1.0);
  CHECK(openGauge("slack") == 1.0);

  // The cooldown ends: the half-open probe is still an open breaker.
  clock.advance(CircuitBreakers::kDefaultCooldown);
  REQUIRE(breakers.allow(target).allowed);
  CHECK(openGauge("http") == 1.0);
  // The probe fails: open again, still counted once.
  breakers.recordFailure(target, webhooker::TargetType::kHttp);
  CHECK(openGauge("http") == 1.0);

  clock.advance(CircuitBreakers::kDefaultCooldown);
  REQUIRE(breakers.allow(target).allowed);
  breakers.recordSuccess(target);  // the probe succeeds: closed
  CHECK(openGauge("http") == 0.0);
  CHECK(openGauge("slack") == 1.0);

  breakers.reset(slackTarget);  // target deleted or reconfigured
  CHECK(openGauge("slack") == 0.0);
  for (const char* type : kTypes) CHECK(openGauge(type) == 0.0);
}

TEST_CASE("setBreakersOpen sets each type's count and zeroes types that are not in the map") {
  using webhooker::TargetType;
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);
  metrics.setBreakersOpen({{TargetType::kHttp, 2}, {TargetType::kNats, 1}});
  CHECK(read(registry, "webhooker_circuit_breakers_open", typeIs("http")) == 2.0);
  CHECK(read(registry, "webhooker_circuit_breakers_open", typeIs("nats")) == 1.0);
  CHECK(read(registry, "webhooker_circuit_breakers_open", typeIs("unknown")) == 0.0);
  metrics.setBreakersOpen({{TargetType::kSlack, 1}});
  CHECK(read(registry, "webhooker_circuit_breakers_open", typeIs("http")) == 0.0);
  CHECK(read(registry, "webhooker_circuit_breakers_open", typeIs("unknown")) == 0.0);
  CHECK(read(registry, "webhooker_circuit_breakers_open", typeIs("slack")) == 1.0);
}

// --- The backlog sampler ----------------------------------------------------

// The daemon cannot show the "unknown" fold: at start-up its recovery ends
// every delivery of a deleted target as target_deleted, and deleting a
// target through the API does the same at once. Between the soft delete and
// that terminal write the rows exist, and a sampler pass counts them; this
// builds that state on real files and runs the real sampler over it.
// A main store, an events DB pool of `capacity` and a sampler over them.
struct SamplerFixture {
  TempDir dir;
  SystemClock clock;
  std::unique_ptr<MainStore> storeOwner = openStore();
  MainStore& store = *storeOwner;
  EventsDbPool pool;
  prometheus::Registry registry;
  DeliveryMetrics metrics{registry};
  BacklogSampler sampler{store, pool, metrics, clock};

  explicit SamplerFixture(size_t capacity = EventsDbPool::kDefaultCapacity)
      : pool(dir.path(), DbOptions{}, clock, capacity) {}

  std::unique_ptr<MainStore> openStore() {
    auto opened = MainStore::open(dir / "webhooker.db", DbOptions{}, clock);
    if (!opened) throw std::runtime_error("open main DB: " + opened.error().message);
    return std::move(opened.value());
  }
};

TEST_CASE_FIXTURE(SamplerFixture,
                  "the sampler counts pending and retrying rows per type across every events DB") {

  const auto makeTarget = [&](const std::string& webhookId, const std::string& type) {
    TargetRecord t;
    t.webhookId = webhookId;
    t.name = type;
    t.type = *webhooker::parseTargetType(type);
    t.configJson = type == "http" ? R"({"url":"http://127.0.0.1:9/"})" : "{}";
    auto created = store.createTarget(t);
    REQUIRE(created);
    return created->id;
  };

  auto hookA = store.createWebhook("a", "", 30);
  auto hookB = store.createWebhook("b", "", 30);
  REQUIRE(hookA);
  REQUIRE(hookB);
  const std::string httpA = makeTarget(hookA->id, "http");
  const std::string logA = makeTarget(hookA->id, "log");
  const std::string doomed = makeTarget(hookA->id, "database");
  const std::string never = newUuid();  // no such target anywhere
  const std::string logB = makeTarget(hookB->id, "log");

  auto dbA = pool.get(hookA->id);
  auto dbB = pool.get(hookB->id);
  REQUIRE(dbA);
  REQUIRE(dbB);
  std::vector<StoredDelivery> all;
  for (int i = 0; i < 2; ++i) {
    auto stored = dbA.value()->ingest(someEvent(), {httpA, logA, doomed, never}, 24h);
    REQUIRE(stored);
    all.insert(all.end(), stored->deliveries.begin(), stored->deliveries.end());
  }
  auto storedB = dbB.value()->ingest(someEvent(), {logB}, 24h);
  REQUIRE(storedB);
  const auto firstOf = [&](const std::string& targetId) {
    for (const StoredDelivery& d : all)
      if (d.targetId == targetId) return d.id;
    throw std::runtime_error("no delivery");
  };
  recordOutcome(*dbA.value(), firstOf(httpA), DeliveryStatus::kRetrying);
  recordOutcome(*dbA.value(), firstOf(doomed), DeliveryStatus::kRetrying);
  REQUIRE(store.deleteTarget(hookA->id, doomed));

  REQUIRE(sampler.sampleOnce());
  const std::string text = exposition(registry);
  const auto gauge = [&](const char* name, const char* type) {
    return valueIn(text, name, typeIs(type));
  };
  CHECK(gauge("webhooker_deliveries_pending", "http") == 1.0);
  CHECK(gauge("webhooker_deliveries_retrying", "http") == 1.0);
  CHECK(gauge("webhooker_deliveries_pending", "log") == 3.0);  // 2 in A, 1 in B
  CHECK(gauge("webhooker_deliveries_retrying", "log") == 0.0);
  // The deleted database target's rows are not "database" any more...
  CHECK(gauge("webhooker_deliveries_pending", "database") == 0.0);
  CHECK(gauge("webhooker_deliveries_retrying", "database") == 0.0);
  // ...they fold into unknown, with those of a target nobody knows.
  CHECK(gauge("webhooker_deliveries_pending", "unknown") == 3.0);  // doomed 1 + never 2
  CHECK(gauge("webhooker_deliveries_retrying", "unknown") == 1.0);
  CHECK(gauge("webhooker_deliveries_pending", "slack") == 0.0);

  // Drained: every row ends, and the next pass reads 0 everywhere.
  for (const StoredDelivery& d : all)
    recordOutcome(*dbA.value(), d.id, DeliveryStatus::kDelivered);
  recordOutcome(*dbB.value(), storedB->deliveries.at(0).id, DeliveryStatus::kFailed);
  REQUIRE(sampler.sampleOnce());
  for (const char* type : kTypes) {
    CAPTURE(type);
    CHECK(read(registry, "webhooker_deliveries_pending", typeIs(type)) == 0.0);
    CHECK(read(registry, "webhooker_deliveries_retrying", typeIs(type)) == 0.0);
  }
}

TEST_CASE("the sampler counts DBs the pool holds closed from their files, without reopening them") {
  SamplerFixture f(1);  // one DB open at a time
  MainStore& store = f.store;
  EventsDbPool& pool = f.pool;
  prometheus::Registry& registry = f.registry;
  BacklogSampler& sampler = f.sampler;

  std::map<std::string, std::string> logTargetOf;  // webhook id → its log target
  for (const char* name : {"a", "b"}) {
    auto hook = store.createWebhook(name, "", 30);
    REQUIRE(hook);
    TargetRecord t;
    t.webhookId = hook->id;
    t.name = "log";
    t.type = webhooker::TargetType::kLog;
    auto target = store.createTarget(t);
    REQUIRE(target);
    logTargetOf[hook->id] = target->id;
  }
  const auto ingest = [&](const std::string& webhookId, int n) {
    auto db = pool.get(webhookId);  // opens it, closing the other
    REQUIRE(db);
    for (int i = 0; i < n; ++i)
      REQUIRE(db.value()->ingest(someEvent(), {logTargetOf.at(webhookId)}, 24h));
  };
  const auto pendingLog = [&] {
    REQUIRE(sampler.sampleOnce());
    return read(registry, "webhooker_deliveries_pending", typeIs("log"));
  };
  const std::string a = logTargetOf.begin()->first;
  const std::string b = std::next(logTargetOf.begin())->first;

  ingest(a, 1);
  ingest(b, 2);
  CHECK(pendingLog() == 3.0);
  CHECK(pool.peek(a).open == nullptr);  // a pass opens nothing in the pool
  CHECK(pool.peek(b).open != nullptr);
  {
    // The closed one's count is reused, pass after pass: its file is not
    // read again (here it is not even there).
    const std::filesystem::path file = pool.pathFor(a);
    const std::filesystem::path away = file.string() + ".away";
    std::filesystem::rename(file, away);
    CHECK(pendingLog() == 3.0);
    CHECK(pendingLog() == 3.0);
    std::filesystem::rename(away, file);
  }

  ingest(a, 4);  // reopened and written: its old count is stale
  CHECK(pendingLog() == 7.0);
  ingest(b, 1);
  CHECK(pendingLog() == 8.0);
  CHECK(pool.openCount() == 1);
}

TEST_CASE("a pass gives no file a WAL or an -shm: closed DBs are counted by the pool or alone") {
  SamplerFixture f;
  auto quiet = f.store.createWebhook("quiet", "", 30);
  auto written = f.store.createWebhook("written", "", 30);
  REQUIRE(quiet);
  REQUIRE(written);
  std::weak_ptr<EventsDb> closing;
  {
    auto db = f.pool.get(written->id);
    REQUIRE(db);
    REQUIRE(db.value()->ingest(someEvent(), {newUuid()}, 24h));
    closing = db.value();
  }
  f.pool.letGo(written->id);  // closed as an eviction closes it: its WAL kept
  REQUIRE(eventually([&] { return closing.expired(); }));
  const std::string writtenFile = f.pool.pathFor(written->id).string();
  const std::string quietFile = f.pool.pathFor(quiet->id).string();
  const auto walBefore = std::filesystem::file_size(writtenFile + "-wal");
  REQUIRE(walBefore > 0);
  const auto filesAsTheyWere = [&] {
    CHECK_FALSE(std::filesystem::exists(quietFile));  // no event yet: no file, none made
    CHECK_FALSE(std::filesystem::exists(quietFile + "-wal"));
    CHECK_FALSE(std::filesystem::exists(quietFile + "-shm"));
    CHECK(std::filesystem::file_size(writtenFile + "-wal") == walBefore);  // not checkpointed
  };

  {
    // The pool counted both as it made or closed them: no file is read,
    // not even one that has gone away.
    const std::string away = writtenFile + ".away";
    std::filesystem::rename(writtenFile, away);
    REQUIRE(f.sampler.sampleOnce());
    std::filesystem::rename(away, writtenFile);
    CHECK(read(f.registry, "webhooker_deliveries_pending", typeIs("unknown")) == 1.0);
    filesAsTheyWere();
  }

  // After a restart the pool has counted nothing: the files are read, each
  // on a connection holding it alone.
  EventsDbPool restarted(f.dir.path(), DbOptions{}, f.clock);
  prometheus::Registry registry;
  DeliveryMetrics metrics{registry};
  BacklogSampler sampler{f.store, restarted, metrics, f.clock};
  REQUIRE(sampler.sampleOnce());
  CHECK(read(registry, "webhooker_deliveries_pending", typeIs("unknown")) == 1.0);
  filesAsTheyWere();
  CHECK(restarted.openCount() == 0);
}

TEST_CASE("the sampler's first pass is done when start() returns: a first scrape reads the backlog") {
  SamplerFixture f;
  auto hook = f.store.createWebhook("a", "", 30);
  REQUIRE(hook);
  TargetRecord t;
  t.webhookId = hook->id;
  t.name = "log";
  t.type = webhooker::TargetType::kLog;
  auto target = f.store.createTarget(t);
  REQUIRE(target);
  auto db = f.pool.get(hook->id);
  REQUIRE(db);
  for (int i = 0; i < 2; ++i) REQUIRE(db.value()->ingest(someEvent(), {target->id}, 24h));

  // A restart's daemon answers once start() has returned; the next pass is
  // 30 s away.
  f.sampler.start();
  CHECK(read(f.registry, "webhooker_deliveries_pending", typeIs("log")) == 2.0);
  f.sampler.stop();
}

// --- Outcomes only after the status row ------------------------------------

// The EngineHarness has its own RecordingObserver and no way to inject a
// DeliveryMetrics, so the real targets are called directly, the way the
// engine calls them, with a DeliveryMetrics as the observer. The write is
// made to fail honestly: a second connection adds a trigger that aborts any
// UPDATE of a deliveries row, so EventsDb::recordAttempt's transaction (the
// result row and the status) is rejected by SQLite and rolled back, just as
// a full disk or a lock would reject it. (A chmod 0444 after opening would
// not do: the connection already holds a writable descriptor.)
TEST_CASE("a rejected status write moves no outcome counter") {
  TempDir dir;
  SystemClock clock;
  auto storeResult = MainStore::open(dir / "webhooker.db", DbOptions{}, clock);
  REQUIRE(storeResult);
  MainStore& store = *storeResult.value();
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  auto hook = store.createWebhook("hook", "", 30);
  REQUIRE(hook);
  auto db = pool.get(hook->id);
  REQUIRE(db);
  const std::filesystem::path file = pool.pathFor(hook->id);

  Receiver receiver;
  receiver.setDefault(respond(200));
  StaticResolver resolver;
  auto allow = Cidr::parseList("127.0.0.0/8");
  REQUIRE(allow);
  SsrfGuard guard(resolver, allow.value());
  HttpClient client(guard, clock);
  CircuitBreakers breakers(clock);
  SystemRandom random;
  const TargetRegistry targets = standardTargets(client, breakers, random, clock);
  RecordingScheduler scheduler;
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);

  const auto targetOf = [&](const std::string& type) {
    TargetRecord t;
    t.id = newUuid();
    t.webhookId = hook->id;
    t.type = *webhooker::parseTargetType(type);
    t.configJson = type == "http"
                       ? nlohmann::json{{"url", receiver.url("/hook")}, {"timeout_ms", 5000}}.dump()
                       : "{}";
    t.retry.jitter = 0;
    return t;
  };
  const TargetRecord httpTarget = targetOf("http");
  const TargetRecord dbTarget = targetOf("database");
  const TargetRecord logTarget = targetOf("log");
  const EventPayload payload{"POST",
                             {{"Content-Type", "application/json"}},
                             "application/json",
                             R"({"order":42})",
                             "2026-01-01T00:00:00.000Z",
                             std::nullopt};

  // One delivery to `target`, attempted once by the real target.
  const auto deliverOnce = [&](const TargetRecord& target) {
    auto stored = db.value()->ingest(someEvent(), {target.id}, 24h);
    REQUIRE(stored);
    Task task;
    task.deliveryId = stored->deliveries.at(0).id;
    task.eventId = stored->eventId;
    task.webhookId = hook->id;
    task.targetId = target.id;
    task.targetType = target.type;
    task.payload = std::make_shared<const EventPayload>(payload);
    Target* impl = targets.find(target.type);
    REQUIRE(impl);
    const DeliveryConfig config = readDeliveryConfig(target.type, target.configJson);
    EventPayload attempted = payload;  // the attempt may take its body
    testing::deliverAndWait(*impl, {*db.value(), target, config, attempted, scheduler, metrics, {}},
                            task);
    return task.deliveryId;
  };
  const auto counter = [&](const char* name, const char* type) {
    return read(registry, name, typeIs(type));
  };

  {
    SQLite::Database writer(file.string(), SQLite::OPEN_READWRITE);
    writer.exec(
        "CREATE TRIGGER reject_status_write BEFORE UPDATE ON deliveries "
        "BEGIN SELECT RAISE(ABORT, 'status write rejected by the test'); END");
  }

  SUBCASE("http") {
    // 200, 503 and 404: each reached the receiver, so each is an attempt;
    // none of their outcomes (delivered, retrying, failed) was written.
    receiver.script({respond(200), respond(503), respond(404)});
    const std::string delivered = deliverOnce(httpTarget);
    const std::string retried = deliverOnce(httpTarget);
    const std::string refused = deliverOnce(httpTarget);
    REQUIRE(receiver.requestCount() == 3);
    CHECK(counter("webhooker_delivery_attempts_total", "http") == 3.0);
    CHECK(counter("webhooker_delivery_duration_seconds_count", "http") == 3.0);
    CHECK(counter("webhooker_deliveries_succeeded_total", "http") == 0.0);
    CHECK(counter("webhooker_delivery_retries_total", "http") == 0.0);
    CHECK(counter("webhooker_deliveries_failed_total", "http") == 0.0);
    CHECK(read(registry, "webhooker_dead_letters_total",
               {{"target_type", "http"}, {"reason", "http_404"}}) == -1.0);
    for (const std::string& id : {delivered, retried, refused}) {
      const DeliveryState s = stateOf(file, id);
      CHECK(s.status == "pending");
      CHECK(s.attempts == 0);
      CHECK(s.resultRows == 0);
    }
  }
  SUBCASE("database and log") {
    const std::string stored = deliverOnce(dbTarget);
    const std::string logged = deliverOnce(logTarget);
    CHECK(counter("webhooker_deliveries_succeeded_total", "database") == 0.0);
    CHECK(counter("webhooker_deliveries_succeeded_total", "log") == 0.0);
    for (const std::string& id : {stored, logged}) {
      const DeliveryState s = stateOf(file, id);
      CHECK(s.status == "pending");
      CHECK(s.resultRows == 0);
    }
  }

  // The same calls with the write accepted do move the counters, so the
  // zeros above are the rejected write's doing.
  {
    SQLite::Database writer(file.string(), SQLite::OPEN_READWRITE);
    writer.exec("DROP TRIGGER reject_status_write");
  }
  receiver.clearScript();
  const std::string ok = deliverOnce(httpTarget);
  const std::string okDb = deliverOnce(dbTarget);
  const std::string okLog = deliverOnce(logTarget);
  CHECK(counter("webhooker_deliveries_succeeded_total", "http") == 1.0);
  CHECK(counter("webhooker_deliveries_succeeded_total", "database") == 1.0);
  CHECK(counter("webhooker_deliveries_succeeded_total", "log") == 1.0);
  CHECK(stateOf(file, ok).status == "delivered");
  CHECK(stateOf(file, okDb).status == "delivered");
  CHECK(stateOf(file, okLog).status == "delivered");
}

}  // namespace webhooker::testing
