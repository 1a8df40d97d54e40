// Delivery against hostile receivers (FaultReceiver): resets and closes in
// the middle of an answer, receivers that never answer or trickle a byte a
// second, 50 MB answers, 5xx and 429 with Retry-After. The real engine,
// http target and HttpClient deliver events ingested over HTTP; each test
// checks the delivery rows, every delivery_results row and, where it
// matters, the moment the engine hung up, as the receiver saw it.
//
// Timeouts are kept small (a few hundred ms) so that real waits stay short;
// Retry-After is checked against a fake clock, without waiting.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "base/time_format.h"
#include "tests/support/contains.h"
#include "tests/support/engine_harness.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fault_receiver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;

// No breaker in the way: these tests are about single attempts.
HarnessOptions noBreaker() {
  HarnessOptions o;
  o.breakerThreshold = 1000;
  return o;
}

// An IMF-fixdate (the Retry-After date form) for `t`.
std::string httpDate(TimePoint t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

// How long after the request the engine hung up on held answer `i`.
long long hungUpAfterMs(const FaultReceiver& r, size_t i) {
  const auto gone = r.clientGoneAt(i);
  REQUIRE(gone);
  return msBetween(r.requests().at(i).at, *gone);
}

// A webhook with one http target to `r`, and one event posted to it: the
// event's delivery to that target.
DeliveryRef deliverOne(EngineHarness& h, const FaultReceiver& r, RetryPolicy retry,
                       int timeoutMs = 5000) {
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/in"), retry, 4, timeoutMs);
  return h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
}

}  // namespace

TEST_CASE("every kind of broken answer is a retryable failure with a clear error, never a success") {
  EngineHarness h(noBreaker());
  FaultReceiver r;
  r.script({fault::respond(500), fault::respond(502, {}, "bad gateway"),
            fault::closeWithoutAnswer(), fault::resetWithoutAnswer(),
            fault::cutMidBody(200, 1000, 100, /*reset=*/true),
            fault::cutMidBody(200, 1000, 100, /*reset=*/false),
            fault::respondAfter(150ms)});  // slow but within the timeout: a success
  const DeliveryRef d = deliverOne(h, r, retryPolicy(10, 10, 0, 20));

  REQUIRE(h.waitForStatus(d, "delivered", 10s));
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 7);
  CHECK(rows[0].statusCode == 500);
  CHECK(rows[1].statusCode == 502);
  CHECK(rows[1].responseBody == "bad gateway");
  for (size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(rows[i].attempt == static_cast<int>(i) + 1);
    CHECK_FALSE(rows[i].success);
  }
  // Closed or reset before a whole answer: no status code (a cut 200 is
  // not a 200), and an error that says what happened.
  for (size_t i = 2; i < 6; ++i) {
    CAPTURE(i);
    CHECK_FALSE(rows[i].statusCode);
    REQUIRE(rows[i].error);
    CHECK(contains(*rows[i].error, "connection"));
    CHECK(contains(*rows[i].error, "receiver"));
  }
  CHECK(rows[5].responseBody == std::string(100, 'x'));  // what came before the close
  CHECK(rows[6].success);
  CHECK(rows[6].statusCode == 200);
  CHECK(rows[6].durationMs >= 150);
  CHECK(h.delivery(d).attempts == 7);
  CHECK(r.requestCount() == 7);
}

TEST_CASE("a receiver that never answers is cut at the total timeout on every attempt") {
  EngineHarness h(noBreaker());
  FaultReceiver r;
  r.setDefault(fault::neverAnswer());
  const DeliveryRef d = deliverOne(h, r, retryPolicy(2, 10, 0, 20), /*timeoutMs=*/300);

  REQUIRE(h.waitForStatus(d, "failed", 5s));
  const DeliveryRow row = h.delivery(d);
  CHECK(row.failureReason == "max_attempts");
  CHECK(row.attempts == 3);
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 3);
  for (size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    REQUIRE(rows[i].error);
    CHECK(contains(*rows[i].error, "timeout"));
    CHECK_FALSE(rows[i].statusCode);
    CHECK(rows[i].durationMs >= 300);
    // The receiver never answers: the engine hanging up at all is the
    // timeout's doing, and it did so before the next attempt.
    REQUIRE(r.waitForClientGone(i, 2s));
    CHECK(hungUpAfterMs(r, i) >= 250);
    if (i + 1 < rows.size()) CHECK(*r.clientGoneAt(i) <= r.requests().at(i + 1).at);
  }
}

TEST_CASE("a receiver trickling one byte a second is cut at the total timeout, then retried") {
  // Every byte comes well within the per-read timeout: only the attempt's
  // total timeout can end this.
  EngineHarness h(noBreaker());
  FaultReceiver r;
  r.push(fault::trickle(1000ms));  // then 200 "ok"
  const DeliveryRef d = deliverOne(h, r, retryPolicy(3, 10, 0, 20), /*timeoutMs=*/1500);

  REQUIRE(h.waitForStatus(d, "delivered", 6s));
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows[0].error);
  CHECK(contains(*rows[0].error, "timeout"));
  CHECK_FALSE(rows[0].statusCode);
  CHECK(rows[0].durationMs >= 1500);
  // The whole answer would take over 30 s: the receiver seeing the engine
  // hang up (at the next byte it sends) shows the attempt was cut.
  REQUIRE(r.waitForClientGone(0, 10s));
  CHECK(hungUpAfterMs(r, 0) >= 1000);
  CHECK(rows[1].statusCode == 200);
}

TEST_CASE("a 50 MB answer is read through, and at most 4 KiB of it is stored") {
  constexpr size_t k50MB = 50 * 1024 * 1024;
  EngineHarness h(noBreaker());
  FaultReceiver r;
  r.script({fault::hugeBody(k50MB, 503), fault::hugeBody(k50MB, 200)});
  const DeliveryRef d = deliverOne(h, r, retryPolicy(3, 10, 0, 20), /*timeoutMs=*/8000);

  REQUIRE(h.waitForStatus(d, "delivered", 20s));
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].statusCode == 503);
  CHECK(rows[1].statusCode == 200);
  for (const ResultRow& row : rows) {
    CHECK(row.responseBody.size() == HttpClient::kResponseBodyCap);
    CHECK(row.responseBody == std::string(HttpClient::kResponseBodyCap, 'x'));
  }
  // The events DB holds two capped bodies, not 100 MB.
  CHECK(std::filesystem::file_size(h.eventsDbPath(d.webhookId)) < 4 * 1024 * 1024);
}

TEST_CASE("Retry-After in seconds or as an HTTP date is honoured and clamped") {
  // A fake clock that does not move: next_attempt_at is exactly now + the
  // delay chosen, and the real retry is at least a second away.
  FakeClock clock;
  HarnessOptions options = noBreaker();
  options.clock = &clock;
  EngineHarness h(options);
  const TimePoint now = clock.now();

  struct Case {
    const char* name;
    int status;
    std::string retryAfter;
    int64_t baseDelayMs;
    int64_t maxDelayMs;
    int64_t expectedDelayMs;
  };
  const std::vector<Case> cases = {
      {"seconds above the backoff", 429, "3", 1000, 300000, 3000},
      {"seconds on a 503", 503, "2", 1000, 300000, 2000},
      {"seconds clamped to max_delay", 429, "86400", 1000, 5000, 5000},
      {"an absurd number clamped to max_delay", 429, "99999999999999999999", 1000, 7000, 7000},
      {"seconds below the backoff: the backoff", 429, "0", 1500, 300000, 1500},
      {"an HTTP date", 429, httpDate(now + 4s), 1000, 300000, 4000},
      {"an HTTP date clamped to max_delay", 429, httpDate(now + 24h), 1000, 6000, 6000},
      {"an HTTP date in the past: the backoff", 429, httpDate(now - 1h), 1200, 300000, 1200},
      {"garbage: the backoff", 429, "soon", 1300, 300000, 1300},
      {"a negative number: the backoff", 429, "-5", 1400, 300000, 1400},
  };
  const Hook hook = h.createWebhook();
  std::vector<std::unique_ptr<FaultReceiver>> receivers;
  std::vector<TargetRecord> targets;
  for (const Case& c : cases) {
    receivers.push_back(std::make_unique<FaultReceiver>());
    receivers.back()->setDefault(fault::respond(c.status, {{"Retry-After", c.retryAfter}}));
    targets.push_back(h.createHttpTarget(hook.webhookId, receivers.back()->url("/"),
                                         retryPolicy(5, c.baseDelayMs, 0, c.maxDelayMs)));
  }
  const std::string eventId = h.post(hook.entrypointId, "{}");
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i].name);
    const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, targets[i].id);
    REQUIRE(h.waitForStatus(d, "retrying", 5s));
    const DeliveryRow row = h.delivery(d);
    CHECK(row.lastStatusCode == cases[i].status);
    CHECK(row.nextAttemptAt ==
          formatTime(now + std::chrono::milliseconds(cases[i].expectedDelayMs)));
  }
}

TEST_CASE("a hostile target never takes the workers from a fast target of the same webhook") {
  // Two workers, and the hostile target may use both; its attempts end at
  // their timeout, and then the fast target has its turn.
  HarnessOptions options = noBreaker();
  options.workers = 2;
  EngineHarness h(options);
  FaultReceiver hostile;
  FaultReceiver fast;
  hostile.script({fault::neverAnswer(), fault::trickle(100ms), fault::respondAfter(5s),
                  fault::neverAnswer()});
  const Hook hook = h.createWebhook();
  const TargetRecord slow = h.createHttpTarget(hook.webhookId, hostile.url("/"),
                                               retryPolicy(0, 10), /*maxConcurrency=*/2,
                                               /*timeoutMs=*/500);
  const TargetRecord quick = h.createHttpTarget(hook.webhookId, fast.url("/"), retryPolicy(0, 10));

  for (int i = 0; i < 4; ++i) h.post(hook.entrypointId, nlohmann::json{{"seq", i}}.dump());

  REQUIRE(h.waitForCount(hook.webhookId, quick.id, "delivered", 4, 5s));
  REQUIRE(h.waitForCount(hook.webhookId, slow.id, "failed", 4, 5s));
  CHECK(hostile.requestCount() == 4);  // one attempt each, max_retries 0
  // Lanes take turns for a free worker: between two fast attempts at most
  // one hostile attempt starts (one more may reach its receiver first).
  // A target that kept the workers would send all four hostile ones first.
  const auto hostileRequests = hostile.requests();
  const auto fastRequests = fast.requests();
  REQUIRE(fastRequests.size() == 4);
  for (size_t k = 0; k < fastRequests.size(); ++k) {
    CAPTURE(k);
    size_t hostileBefore = 0;
    for (const auto& req : hostileRequests) hostileBefore += req.at < fastRequests[k].at;
    CHECK(hostileBefore <= k + 2);
  }
  for (const DeliveryRow& row : h.deliveriesOf(hook.webhookId, slow.id)) {
    const auto results = h.resultRows({hook.webhookId, row.id});
    REQUIRE(results.size() == 1);
    CHECK(results[0].durationMs >= 500);
    CHECK_FALSE(results[0].statusCode);  // cut at the timeout, not answered late
    REQUIRE(results[0].error);
    CHECK(contains(*results[0].error, "timeout"));
  }
}

}  // namespace webhooker::testing
