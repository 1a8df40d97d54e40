// /metrics of the real daemon (WEBHOOKER_BIN, loopback receivers opened
// with WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8), read as Prometheus reads it,
// against what the events databases say happened:
// - every gauge series exists at 0 for all eight target types at start-up;
// - target_type has eight values only and no id appears anywhere;
// - attempts and durations are counted only for dispatched attempts: a
//   breaker that opened after 5 failures refuses the next deliveries, which
//   leave no result rows and move no attempt or duration series;
// - log and database targets time their own work;
// - outcome counters: delivered, a 404 dead letter, a 503-then-200 retry,
//   max_attempts; then `promtool check metrics` on the result (skipped,
//   with a message, when promtool is not installed);
// - the pending/retrying gauges follow the databases through the sampler;
// - optional basic auth on /metrics;
// - --log-format json writes only JSON lines.
// What needs a breaker cooldown, a rejected status write or a deleted
// target's rows is covered in-process in tests/unit/delivery_metrics_test.cpp.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/uuid.h"
#include "tests/support/daemon_process.h"
#include "tests/support/receiver.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_pattern.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr std::array<const char*, 9> kTypes = {"http", "slack", "database", "log", "redis_stream",
                                              "nats", "amqp", "pull", "unknown"};
constexpr std::array<const char*, 3> kGauges = {"webhooker_deliveries_pending",
                                                "webhooker_deliveries_retrying",
                                                "webhooker_circuit_breakers_open"};

// --- Reading the exposition text -------------------------------------------


bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Every delivery series carries target_type from the eight values, and no
// id appears anywhere in the text (request routes included).
void checkLabelDomains(const std::string& text) {
  int deliverySeries = 0;
  for (const Sample& s : parseSamples(text)) {
    if (!startsWith(s.name, "webhooker_delivery_") &&
        !startsWith(s.name, "webhooker_deliveries_") &&
        !startsWith(s.name, "webhooker_dead_letters") &&
        !startsWith(s.name, "webhooker_circuit_breakers_"))
      continue;
    ++deliverySeries;
    CAPTURE(s.name);
    const auto it = s.labels.find("target_type");
    REQUIRE(it != s.labels.end());
    CAPTURE(it->second);
    CHECK(std::find(kTypes.begin(), kTypes.end(), it->second) != kTypes.end());
  }
  CHECK(deliverySeries > 0);
  const std::optional<std::string> id = firstMatch(text, kUuidPattern);
  CHECK_MESSAGE(!id, "an id in /metrics: " << id.value_or(""));
}

// --- Talking to the daemon --------------------------------------------------

DaemonOptions daemonOptions(std::vector<std::string> args = {}, std::vector<std::string> env = {}) {
  DaemonOptions o;
  o.args = std::move(args);
  o.env = {"WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  o.env.insert(o.env.end(), env.begin(), env.end());
  return o;
}

httplib::Client clientOf(const DaemonProcess& daemon) {
  httplib::Client c(daemon.url());
  c.set_tcp_nodelay(true);
  c.set_connection_timeout(5s);
  c.set_read_timeout(10s);
  return c;
}

std::string scrape(const DaemonProcess& daemon) {
  auto res = clientOf(daemon).Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return res->body;
}

double metric(const DaemonProcess& daemon, const std::string& name, const Labels& labels) {
  return valueIn(scrape(daemon), name, labels);
}

// Polls /metrics until the series has `expected`; returns what it last read
// (-1: absent), so a CHECK against `expected` shows the difference.
double waitForMetric(const DaemonProcess& daemon, const std::string& name, const Labels& labels,
                     double expected, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const double v = metric(daemon, name, labels);
    if (v == expected || std::chrono::steady_clock::now() >= deadline) return v;
    std::this_thread::sleep_for(20ms);
  }
}

bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// The admin API of a daemon started on a fresh data dir (it printed its token).
class Api {
 public:
  explicit Api(const DaemonProcess& daemon) : client_(daemon.url()) {
    REQUIRE(daemon.adminToken());
    client_.set_tcp_nodelay(true);
    client_.set_connection_timeout(5s);
    client_.set_read_timeout(10s);
    client_.set_bearer_token_auth(*daemon.adminToken());
  }

  struct Hook {
    std::string id;
    std::string entrypointId;
  };

  Hook createWebhook(const std::string& name) {
    auto res = client_.Post("/api/v1/webhooks", json{{"name", name}}.dump(), "application/json");
    REQUIRE(res);
    REQUIRE_MESSAGE(res->status == 201, res->body);
    const json j = json::parse(res->body);
    return {j.at("id").get<std::string>(), j.at("entrypoints").at(0).at("id").get<std::string>()};
  }

  std::string createTarget(const std::string& webhookId, json target) {
    if (!target.contains("name")) target["name"] = target.at("type");
    auto res = client_.Post("/api/v1/webhooks/" + webhookId + "/targets", target.dump(),
                            "application/json");
    REQUIRE(res);
    REQUIRE_MESSAGE(res->status == 201, res->body);
    return json::parse(res->body).at("id").get<std::string>();
  }

  // An http target forwarding to `url`; `retry` as the API takes it.
  std::string createHttpTarget(const std::string& webhookId, const std::string& url,
                               json retry = json::object(), int maxConcurrency = 4) {
    return createTarget(webhookId, {{"type", "http"},
                                    {"max_concurrency", maxConcurrency},
                                    {"config", {{"url", url}, {"timeout_ms", 5000}}},
                                    {"retry", std::move(retry)}});
  }

  void setActive(const std::string& webhookId, const std::string& targetId, bool active) {
    auto res = client_.Patch("/api/v1/webhooks/" + webhookId + "/targets/" + targetId,
                             json{{"active", active}}.dump(), "application/json");
    REQUIRE(res);
    REQUIRE_MESSAGE(res->status == 200, res->body);
  }

  // A webhook sender: POST /hooks/<entrypoint>; returns the event id.
  std::string post(const std::string& entrypointId, const std::string& body) {
    auto res = client_.Post("/hooks/" + entrypointId, body, "application/json");
    REQUIRE(res);
    REQUIRE_MESSAGE(res->status == 200, res->body);
    return json::parse(res->body).at("event_id").get<std::string>();
  }

  httplib::Client& client() { return client_; }

 private:
  httplib::Client client_;
};

// --- Reading the events DB (read-only, SQLiteCpp) ---------------------------

std::filesystem::path eventsDb(const TempDir& dir, const std::string& webhookId) {
  return dir / ("events-" + webhookId + ".db");
}

struct DeliveryRow {
  std::string id;
  std::string eventId;
  std::string status;
  int attempts = 0;
  std::optional<std::string> nextAttemptAt;
  std::optional<std::string> failureReason;
  int resultRows = 0;
};

std::vector<DeliveryRow> deliveriesOf(const std::filesystem::path& file,
                                      const std::string& targetId) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  db.setBusyTimeout(5000);
  SQLite::Statement q(db,
                      "SELECT id, event_id, status, attempts, next_attempt_at, failure_reason, "
                      "(SELECT COUNT(*) FROM delivery_results r WHERE r.delivery_id = d.id) "
                      "FROM deliveries d WHERE target_id = ? ORDER BY created_at, rowid");
  q.bind(1, targetId);
  std::vector<DeliveryRow> out;
  while (q.executeStep()) {
    DeliveryRow r;
    r.id = q.getColumn(0).getString();
    r.eventId = q.getColumn(1).getString();
    r.status = q.getColumn(2).getString();
    r.attempts = q.getColumn(3).getInt();
    if (!q.getColumn(4).isNull()) r.nextAttemptAt = q.getColumn(4).getString();
    if (!q.getColumn(5).isNull()) r.failureReason = q.getColumn(5).getString();
    r.resultRows = q.getColumn(6).getInt();
    out.push_back(std::move(r));
  }
  return out;
}

// duration_ms of every result row of the target's deliveries.
std::vector<int64_t> resultDurations(const std::filesystem::path& file,
                                     const std::string& targetId) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  db.setBusyTimeout(5000);
  SQLite::Statement q(db,
                      "SELECT r.duration_ms FROM delivery_results r JOIN deliveries d "
                      "ON d.id = r.delivery_id WHERE d.target_id = ?");
  q.bind(1, targetId);
  std::vector<int64_t> out;
  while (q.executeStep()) out.push_back(q.getColumn(0).getInt64());
  return out;
}

size_t countWithStatus(const std::filesystem::path& file, const std::string& targetId,
                       const std::string& status) {
  const auto rows = deliveriesOf(file, targetId);
  return static_cast<size_t>(std::count_if(
      rows.begin(), rows.end(), [&](const DeliveryRow& r) { return r.status == status; }));
}

// The delivery of the target's only (or last) event once it has `status`.
DeliveryRow waitForFinal(const std::filesystem::path& file, const std::string& targetId,
                         const std::string& status, size_t n = 1) {
  const bool reached = waitUntil([&] { return countWithStatus(file, targetId, status) >= n; }, 10s);
  const auto rows = deliveriesOf(file, targetId);
  REQUIRE_MESSAGE(reached, "deliveries of " << targetId << " did not reach " << status);
  return rows.back();
}

std::optional<std::string> promtoolPath() {
  const CommandResult r = runCommand({"sh", "-c", "command -v promtool"}, {}, 10s);
  if (r.exitCode != 0) return std::nullopt;
  std::string path = r.out;
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  return path.empty() ? std::nullopt : std::optional<std::string>(path);
}

// The request series: one per (name, labels) of webhooker_http_*, the
// histogram's buckets ("le") folded into their series.
std::set<std::string> requestSeries(const std::string& text) {
  std::set<std::string> out;
  for (Sample s : parseSamples(text)) {
    if (!startsWith(s.name, "webhooker_http_request")) continue;
    s.labels.erase("le");
    std::string key = s.name.substr(0, s.name.find("_bucket"));
    for (const auto& [name, value] : s.labels) key += "|" + name + "=" + value;
    out.insert(key);
  }
  return out;
}

}  // namespace

TEST_CASE("every gauge series exists at 0 for all eight target types right after start-up") {
  TempDir dir;
  DaemonProcess daemon(dir.path(), daemonOptions());
  const std::string text = scrape(daemon);
  INFO(text);
  for (const char* gauge : kGauges) {
    for (const char* type : kTypes) {
      CAPTURE(gauge);
      CAPTURE(type);
      CHECK(valueIn(text, gauge, typeIs(type)) == 0.0);
    }
  }
  // The counters and the histogram too, and nothing has happened yet.
  for (const char* type : kTypes) {
    CAPTURE(type);
    CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs(type)) == 0.0);
    CHECK(valueIn(text, "webhooker_deliveries_succeeded_total", typeIs(type)) == 0.0);
    CHECK(valueIn(text, "webhooker_deliveries_failed_total", typeIs(type)) == 0.0);
    CHECK(valueIn(text, "webhooker_delivery_retries_total", typeIs(type)) == 0.0);
    CHECK(valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs(type)) == 0.0);
    CHECK(valueIn(text, "webhooker_dead_letters_total",
                  {{"target_type", type}, {"reason", "max_attempts"}}) == 0.0);
  }
  CHECK(valueIn(text, "webhooker_events_received_total", {}) == 0.0);
  checkLabelDomains(text);
}

TEST_CASE("1,000 random paths add at most a few request series to /metrics") {
  TempDir dir;
  DaemonProcess daemon(dir.path(), daemonOptions());
  REQUIRE(daemon.adminToken());
  const size_t before = requestSeries(scrape(daemon)).size();

  // Route words, {id}-like segments and junk, in any order and depth, with
  // and without the admin token: real patterns, near misses and garbage.
  const std::vector<std::string> words = {
      "api", "v1", "webhooks", "targets", "entrypoints", "events", "deliveries", "retry",
      "redeliver", "replay", "stats", "hooks", "metrics", "healthz", "readyz", "assets",
      "app.js", "", "..", "%2F", "index.html"};
  std::mt19937 rng(20261201);
  const auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const auto segment = [&]() -> std::string {
    switch (pick(3)) {
      case 0: return words[pick(words.size())];
      case 1: return newUuid();
      default: return "junk" + std::to_string(rng());
    }
  };
  const std::vector<std::string> methods = {"GET", "POST", "PATCH", "DELETE"};
  httplib::Client anonymous = clientOf(daemon);
  httplib::Client admin = clientOf(daemon);
  admin.set_bearer_token_auth(*daemon.adminToken());
  std::set<std::string> paths;
  int answered = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string path = pick(2) ? "/api/v1" : "";
    for (size_t depth = 1 + pick(4); depth > 0; --depth) path += "/" + segment();
    paths.insert(path);
    httplib::Client& c = pick(2) ? admin : anonymous;
    const std::string& method = methods[pick(methods.size())];
    httplib::Result res = method == "GET"      ? c.Get(path)
                          : method == "POST"   ? c.Post(path, "{}", "application/json")
                          : method == "PATCH"  ? c.Patch(path, "{}", "application/json")
                                               : c.Delete(path);
    if (res) ++answered;
  }
  REQUIRE(answered == 1000);
  REQUIRE(paths.size() > 900);  // labels from paths would mint hundreds of series

  const std::set<std::string> after = requestSeries(scrape(daemon));
  INFO("series: " << after.size() << " before: " << before);
  // The route table bounds it: each request lands on a registered pattern
  // or "other", with one of five status classes.
  CHECK(after.size() - before <= 60);
  CHECK(std::count_if(after.begin(), after.end(), [](const std::string& series) {
          return series.find("junk") != std::string::npos;
        }) == 0);
}

TEST_CASE("/metrics basic auth: 401 without or with wrong credentials, 200 with the right ones") {
  TempDir dir;
  const std::string user = "prometheus";
  const std::string password = "s3cret pass:word";
  DaemonProcess daemon(
      dir.path(), daemonOptions({}, {"METRICS_USERNAME=" + user, "METRICS_PASSWORD=" + password}));
  const auto get = [&](const std::optional<std::pair<std::string, std::string>>& credentials,
                       const httplib::Headers& headers = {}) {
    httplib::Client c = clientOf(daemon);
    if (credentials) c.set_basic_auth(credentials->first, credentials->second);
    auto res = c.Get("/metrics", headers);
    REQUIRE(res);
    return std::make_pair(res->status, std::make_pair(res->body, res->headers));
  };
  const auto refusedWithChallenge = [&](const auto& answer) {
    CHECK(answer.first == 401);
    const auto& headers = answer.second.second;
    const auto challenge = headers.find("WWW-Authenticate");
    REQUIRE(challenge != headers.end());
    CHECK(startsWith(challenge->second, "Basic "));
    CHECK(answer.second.first.find("webhooker_") == std::string::npos);  // nothing leaked
  };

  refusedWithChallenge(get(std::nullopt));
  refusedWithChallenge(get(std::make_pair(user, std::string("wrong"))));
  refusedWithChallenge(get(std::make_pair(std::string("admin"), password)));
  refusedWithChallenge(get(std::make_pair(user, password + "x")));
  refusedWithChallenge(get(std::nullopt, {{"Authorization", "Basic !!!not-base64"}}));
  // The admin token is not a metrics credential.
  REQUIRE(daemon.adminToken());
  refusedWithChallenge(get(std::nullopt, {{"Authorization", "Bearer " + *daemon.adminToken()}}));

  const auto ok = get(std::make_pair(user, password));
  CHECK(ok.first == 200);
  CHECK(ok.second.first.find("webhooker_delivery_attempts_total") != std::string::npos);

  // Without METRICS_USERNAME/METRICS_PASSWORD, /metrics is open.
  TempDir openDir;
  DaemonProcess openDaemon(openDir.path(), daemonOptions());
  auto res = clientOf(openDaemon).Get("/metrics");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body.find("webhooker_delivery_attempts_total") != std::string::npos);
}

TEST_CASE("a delivery the open breaker refuses is no attempt: no result row, no attempt metric") {
  TempDir dir;
  DaemonProcess daemon(dir.path(), daemonOptions());
  Api api(daemon);
  Receiver receiver;
  receiver.setDefault(respond(500));
  const auto hook = api.createWebhook("breaker");
  // One at a time (max_concurrency 1), so exactly 5 attempts fail before
  // the breaker (defaults: 5 failures, 30 s cooldown) opens; the retries
  // are a minute away, after this test.
  const std::string target = api.createHttpTarget(
      hook.id, receiver.url("/down"),
      {{"max_retries", 5}, {"base_delay_ms", 60000}, {"max_delay_ms", 60000}, {"jitter", 0}}, 1);
  for (int i = 0; i < 8; ++i) api.post(hook.entrypointId, R"({"n":)" + std::to_string(i) + "}");

  const auto file = eventsDb(dir, hook.id);
  // The last three are refused: their next attempt moved to the end of the
  // cooldown without an attempt.
  const auto refused = [&] {
    int n = 0;
    for (const DeliveryRow& r : deliveriesOf(file, target))
      n += r.status == "pending" && r.attempts == 0 && r.nextAttemptAt.has_value();
    return n;
  };
  REQUIRE_MESSAGE(waitUntil([&] { return refused() == 3; }, 10s),
                  "the breaker did not refuse 3 deliveries");

  const auto rows = deliveriesOf(file, target);
  REQUIRE(rows.size() == 8);
  int results = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    results += rows[i].resultRows;
    if (i < 5) {
      CHECK(rows[i].status == "retrying");
      CHECK(rows[i].resultRows == 1);
    } else {
      CHECK(rows[i].status == "pending");
      CHECK(rows[i].resultRows == 0);
    }
  }
  CHECK(results == 5);
  CHECK(receiver.requestCount() == 5);

  std::string text = scrape(daemon);
  CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("http")) == 5.0);
  CHECK(valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs("http")) == 5.0);
  CHECK(valueIn(text, "webhooker_delivery_retries_total", typeIs("http")) == 5.0);
  CHECK(valueIn(text, "webhooker_circuit_breakers_open", typeIs("http")) == 1.0);
  for (const char* type : {"slack", "database", "log", "unknown"})
    CHECK(valueIn(text, "webhooker_circuit_breakers_open", typeIs(type)) == 0.0);

  // More deliveries while it stays open: refused too, and nothing moves.
  for (int i = 8; i < 10; ++i) api.post(hook.entrypointId, R"({"n":)" + std::to_string(i) + "}");
  REQUIRE(waitUntil([&] { return refused() == 5; }, 10s));
  std::this_thread::sleep_for(200ms);
  text = scrape(daemon);
  CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("http")) == 5.0);
  CHECK(valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs("http")) == 5.0);
  CHECK(valueIn(text, "webhooker_circuit_breakers_open", typeIs("http")) == 1.0);
  CHECK(receiver.requestCount() == 5);
  for (const DeliveryRow& r : deliveriesOf(file, target)) results -= r.resultRows;
  CHECK(results == 0);  // still exactly the 5 result rows
  checkLabelDomains(text);
}

TEST_CASE(
    "outcome counters follow delivered, dead-lettered and retried deliveries; promtool agrees") {
  TempDir dir;
  DaemonProcess daemon(dir.path(), daemonOptions());
  Api api(daemon);
  const json fastRetry = {{"max_retries", 5}, {"base_delay_ms", 100}, {"jitter", 0}};

  // 1. Delivered at once.
  {
    Receiver receiver;
    const auto hook = api.createWebhook("ok");
    const std::string target = api.createHttpTarget(hook.id, receiver.url("/ok"), fastRetry);
    api.post(hook.entrypointId, R"({"case":"ok"})");
    waitForFinal(eventsDb(dir, hook.id), target, "delivered");
    CHECK(waitForMetric(daemon, "webhooker_deliveries_succeeded_total", typeIs("http"), 1) == 1.0);
    const std::string text = scrape(daemon);
    CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("http")) == 1.0);
    CHECK(valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs("http")) == 1.0);
    CHECK(valueIn(text, "webhooker_deliveries_failed_total", typeIs("http")) == 0.0);
    CHECK(valueIn(text, "webhooker_delivery_retries_total", typeIs("http")) == 0.0);
  }
  // 2. A 404 is dead-lettered at once, reason http_404.
  {
    Receiver receiver;
    receiver.setDefault(respond(404));
    const auto hook = api.createWebhook("gone");
    const std::string target = api.createHttpTarget(hook.id, receiver.url("/gone"), fastRetry);
    api.post(hook.entrypointId, R"({"case":"404"})");
    const DeliveryRow row = waitForFinal(eventsDb(dir, hook.id), target, "failed");
    CHECK(row.failureReason == "http_404");
    CHECK(waitForMetric(daemon, "webhooker_deliveries_failed_total", typeIs("http"), 1) == 1.0);
    const std::string text = scrape(daemon);
    CHECK(valueIn(text, "webhooker_dead_letters_total",
                  {{"reason", "http_404"}, {"target_type", "http"}}) == 1.0);
    CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("http")) == 2.0);
    CHECK(valueIn(text, "webhooker_delivery_retries_total", typeIs("http")) == 0.0);
    CHECK(valueIn(text, "webhooker_deliveries_succeeded_total", typeIs("http")) == 1.0);
  }
  // 3. 503, then 200: one retry, then delivered.
  {
    Receiver receiver;
    receiver.push(respond(503));
    const auto hook = api.createWebhook("flaky");
    const std::string target = api.createHttpTarget(hook.id, receiver.url("/flaky"), fastRetry);
    api.post(hook.entrypointId, R"({"case":"503-200"})");
    const DeliveryRow row = waitForFinal(eventsDb(dir, hook.id), target, "delivered");
    CHECK(row.attempts == 2);
    CHECK(receiver.requestCount() == 2);
    CHECK(waitForMetric(daemon, "webhooker_deliveries_succeeded_total", typeIs("http"), 2) == 2.0);
    const std::string text = scrape(daemon);
    CHECK(valueIn(text, "webhooker_delivery_retries_total", typeIs("http")) == 1.0);
    CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("http")) == 4.0);
    CHECK(valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs("http")) == 4.0);
    CHECK(valueIn(text, "webhooker_deliveries_failed_total", typeIs("http")) == 1.0);
  }
  // 4. Always 500 with max_retries 1 (base_delay_ms 100, the API minimum):
  //    two attempts, one retry, dead-lettered as max_attempts.
  {
    Receiver receiver;
    receiver.setDefault(respond(500));
    const auto hook = api.createWebhook("dead");
    const std::string target =
        api.createHttpTarget(hook.id, receiver.url("/dead"),
                             {{"max_retries", 1}, {"base_delay_ms", 100}, {"jitter", 0}});
    api.post(hook.entrypointId, R"({"case":"max_attempts"})");
    const DeliveryRow row = waitForFinal(eventsDb(dir, hook.id), target, "failed");
    CHECK(row.failureReason == "max_attempts");
    CHECK(row.attempts == 2);
    CHECK(waitForMetric(daemon, "webhooker_deliveries_failed_total", typeIs("http"), 2) == 2.0);
    const std::string text = scrape(daemon);
    CHECK(valueIn(text, "webhooker_dead_letters_total",
                  {{"reason", "max_attempts"}, {"target_type", "http"}}) == 1.0);
    CHECK(valueIn(text, "webhooker_dead_letters_total",
                  {{"reason", "http_404"}, {"target_type", "http"}}) == 1.0);
    CHECK(valueIn(text, "webhooker_delivery_retries_total", typeIs("http")) == 2.0);
    CHECK(valueIn(text, "webhooker_delivery_attempts_total", typeIs("http")) == 6.0);
    CHECK(valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs("http")) == 6.0);
    CHECK(valueIn(text, "webhooker_deliveries_succeeded_total", typeIs("http")) == 2.0);
  }
  // 5. Log and database targets time their own work.
  {
    const auto hook = api.createWebhook("local");
    const std::string logTarget =
        api.createTarget(hook.id, {{"type", "log"}, {"config", json::object()}});
    const std::string dbTarget =
        api.createTarget(hook.id, {{"type", "database"}, {"config", json::object()}});
    api.post(hook.entrypointId, R"({"case":"local-1"})");
    api.post(hook.entrypointId, R"({"case":"local-2"})");
    const auto file = eventsDb(dir, hook.id);
    waitForFinal(file, logTarget, "delivered", 2);
    waitForFinal(file, dbTarget, "delivered", 2);
    for (const std::string& target : {logTarget, dbTarget}) {
      const auto durations = resultDurations(file, target);
      CHECK(durations.size() == 2);
      for (int64_t d : durations) CHECK(d >= 0);
    }
    for (const char* type : {"log", "database"}) {
      CAPTURE(type);
      CHECK(waitForMetric(daemon, "webhooker_deliveries_succeeded_total", typeIs(type), 2) == 2.0);
      const std::string text = scrape(daemon);
      const double attempts = valueIn(text, "webhooker_delivery_attempts_total", typeIs(type));
      const double count = valueIn(text, "webhooker_delivery_duration_seconds_count", typeIs(type));
      const double sum = valueIn(text, "webhooker_delivery_duration_seconds_sum", typeIs(type));
      CHECK(attempts == 2.0);
      CHECK(count == attempts);
      CHECK(count > 0);
      CHECK(sum >= 0);
    }
  }

  // Requests by route pattern; an unknown entrypoint id is still {id}.
  {
    auto res = clientOf(daemon).Post("/hooks/3f2b8a9c-1d4e-4f5a-8b6c-7d8e9f0a1b2c", "{}",
                                     "application/json");
    REQUIRE(res);
    CHECK(res->status == 404);
    REQUIRE(clientOf(daemon).Get("/no/such/3f2b8a9c-1d4e-4f5a-8b6c-7d8e9f0a1b2c"));
  }
  const std::string text = scrape(daemon);
  CHECK(valueIn(text, "webhooker_events_received_total", {}) == 6.0);
  CHECK(valueIn(text, "webhooker_http_requests_total",
                {{"route", "/hooks/{id}"}, {"code", "2xx"}}) == 6.0);
  CHECK(valueIn(text, "webhooker_http_requests_total",
                {{"route", "/hooks/{id}"}, {"code", "4xx"}}) == 1.0);
  CHECK(valueIn(text, "webhooker_http_requests_total",
                {{"route", "/api/v1/webhooks/{id}/targets"}, {"code", "2xx"}}) == 6.0);
  CHECK(valueIn(text, "webhooker_http_requests_total", {{"route", "other"}, {"code", "4xx"}}) >=
        1.0);
  checkLabelDomains(text);

  // promtool, when installed, must accept the exposition silently.
  const auto promtool = promtoolPath();
  if (!promtool) {
    MESSAGE(
        "promtool is not on PATH: `promtool check metrics` skipped "
        "(Debian package prometheus)");
    return;
  }
  TempDir scratch;
  const auto file = scratch / "metrics.txt";
  {
    std::ofstream out(file);
    out << text;
  }
  const CommandResult check = runCommand(
      {"sh", "-c", "exec \"$0\" check metrics < \"$1\"", *promtool, file.string()}, {}, 30s);
  INFO("promtool stdout: " << check.out);
  INFO("promtool stderr: " << check.err);
  CHECK(check.exitCode == 0);
  CHECK(check.out.empty());
  CHECK(check.err.empty());
}

TEST_CASE("the pending and retrying gauges follow the databases through the sampler") {
  TempDir dir;
  DaemonProcess daemon(dir.path(), daemonOptions({"--sampler-interval-ms", "200"}));
  Api api(daemon);
  Receiver receiver;
  // The first request is held while the target is deactivated, then
  // answered 500 (retry in a minute); the rest stay pending behind it.
  receiver.push(respondAfter(2000ms, 500));
  const auto hook = api.createWebhook("paused");
  const std::string target = api.createHttpTarget(
      hook.id, receiver.url("/slow"),
      {{"max_retries", 5}, {"base_delay_ms", 60000}, {"max_delay_ms", 60000}, {"jitter", 0}}, 1);
  const auto file = eventsDb(dir, hook.id);
  for (int i = 0; i < 4; ++i) api.post(hook.entrypointId, R"({"n":)" + std::to_string(i) + "}");
  REQUIRE(receiver.waitForRequests(1, 5s));
  api.setActive(hook.id, target, false);
  REQUIRE(waitUntil([&] { return countWithStatus(file, target, "retrying") == 1; }, 5s));
  CHECK(countWithStatus(file, target, "pending") == 3);

  CHECK(waitForMetric(daemon, "webhooker_deliveries_pending", typeIs("http"), 3) == 3.0);
  CHECK(waitForMetric(daemon, "webhooker_deliveries_retrying", typeIs("http"), 1) == 1.0);
  std::string text = scrape(daemon);
  for (const char* type : {"slack", "database", "log", "unknown"}) {
    CAPTURE(type);
    CHECK(valueIn(text, "webhooker_deliveries_pending", typeIs(type)) == 0.0);
    CHECK(valueIn(text, "webhooker_deliveries_retrying", typeIs(type)) == 0.0);
  }
  CHECK(receiver.requestCount() == 1);  // paused: nothing else was sent

  // Reactivated: the three pending ones are delivered and the gauge drains.
  api.setActive(hook.id, target, true);
  CHECK(waitForMetric(daemon, "webhooker_deliveries_pending", typeIs("http"), 0) == 0.0);
  CHECK(countWithStatus(file, target, "delivered") == 3);
  text = scrape(daemon);
  CHECK(valueIn(text, "webhooker_deliveries_retrying", typeIs("http")) == 1.0);
  CHECK(valueIn(text, "webhooker_deliveries_succeeded_total", typeIs("http")) == 3.0);
  checkLabelDomains(text);
}

TEST_CASE("--log-format json writes only JSON lines to stderr") {
  TempDir dir;
  DaemonProcess daemon(dir.path(), daemonOptions({"--log-format", "json", "--log-level", "debug"}));
  Api api(daemon);
  Receiver receiver;
  receiver.setDefault(respond(404));
  const auto hook = api.createWebhook("logs");
  const std::string logTarget =
      api.createTarget(hook.id, {{"type", "log"}, {"config", json::object()}});
  const std::string httpTarget = api.createHttpTarget(hook.id, receiver.url("/gone"));
  // A closed port: the connection error lands in a quoted error= field.
  const std::string refusedTarget = api.createHttpTarget(
      hook.id, "http://127.0.0.1:" + std::to_string(unusedLoopbackPort()) + "/",
      {{"max_retries", 0}});
  // Pretty-printed JSON (newlines, a tab) with escaped quotes and
  // backslashes, `=` and spaces, non-ASCII.
  const std::string tricky =
      std::string("{\n\t\"note\": ") + R"("say \"hi\" = a\\b c=d",)" + "\n  \"name\": \"Zoë\"\n}";
  api.post(hook.entrypointId, tricky);
  const auto file = eventsDb(dir, hook.id);
  waitForFinal(file, logTarget, "delivered");
  waitForFinal(file, httpTarget, "failed");
  waitForFinal(file, refusedTarget, "failed");
  REQUIRE(daemon.stop() == 0);

  const std::string log = daemon.stderrText();
  std::istringstream lines(log);
  std::string line;
  std::map<std::string, json> byEvent;
  int count = 0;
  while (std::getline(lines, line)) {
    CAPTURE(line);
    json j;
    REQUIRE_NOTHROW(j = json::parse(line));
    REQUIRE(j.is_object());
    CHECK(j["time"].is_string());
    CHECK(j["level"].is_string());
    CHECK(j["event"].is_string());
    CHECK_FALSE(j["event"].get<std::string>().empty());
    byEvent[j["event"].get<std::string>()] = j;
    ++count;
  }
  INFO(log);
  CHECK(count >= 5);
  CHECK(log.back() == '\n');
  for (const char* event : {"daemon.started", "event.logged", "delivery.dead_lettered",
                            "daemon.stopping", "daemon.stopped"})
    CHECK_MESSAGE(byEvent.count(event) == 1, event);
  // The fields come through as fields, the logged body intact.
  CHECK(byEvent["event.logged"]["body"] == tricky);
  CHECK(byEvent["event.logged"]["webhook_id"] == hook.id);
  CHECK(byEvent["event.logged"]["target_id"] == logTarget);
  CHECK_FALSE(byEvent["event.logged"].contains("message"));
  CHECK(byEvent["event.logged"]["size"] == tricky.size());  // a number, not "54"
  CHECK(byEvent["daemon.stopped"]["level"] == "info");
}

TEST_CASE("--log-level takes \"warning\", the name its lines carry, and logs nothing below it") {
  TempDir dir;
  DaemonProcess daemon(dir.path(), daemonOptions({"--log-format", "json", "--log-level", "warning"}));
  Api api(daemon);
  const auto hook = api.createWebhook("quiet");
  const std::string refused = api.createHttpTarget(
      hook.id, "http://127.0.0.1:" + std::to_string(unusedLoopbackPort()) + "/", {{"max_retries", 0}});
  api.post(hook.entrypointId, R"({"n": 1})");
  waitForFinal(eventsDb(dir, hook.id), refused, "failed");
  REQUIRE(daemon.stop() == 0);

  std::istringstream lines(daemon.stderrText());
  std::set<std::string> levels;
  for (std::string line; std::getline(lines, line);) levels.insert(json::parse(line)["level"].get<std::string>());
  INFO(daemon.stderrText());
  CHECK(levels == std::set<std::string>{"warning"});  // the dead letter; no info line
}

}  // namespace webhooker::testing
