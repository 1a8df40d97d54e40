// Delivery end to end in-process: events POSTed to the real HttpServer (or
// stored straight into the events DB), delivered by the real Engine and
// targets to scriptable loopback receivers. Every test checks what reached
// the receiver and what the events DB recorded: the delivery's final status
// and every delivery_results row.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/time_format.h"
#include "tests/support/contains.h"
#include "tests/support/engine_harness.h"
#include "tests/support/fake_clock.h"
#include "tests/support/receiver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::vector<int> statusCodes(const std::vector<ResultRow>& rows) {
  std::vector<int> out;
  for (const ResultRow& r : rows) out.push_back(r.statusCode.value_or(0));
  return out;
}

// Attempt numbers are 1, 2, ..., n with no gap or repeat.
bool attemptsNumbered(const std::vector<ResultRow>& rows) {
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].attempt != static_cast<int>(i) + 1) return false;
  return true;
}

// next_attempt_at of the delivery to `targetId` as each scripted answer's
// request arrives: the schedule that attempt was made on. With a FakeClock
// that does not move it is exactly the clock's time plus the delay chosen,
// while the real wait is that delay.
class ScheduleLog {
 public:
  ScheduleLog(EngineHarness& h, std::string webhookId, std::string targetId)
      : h_(h), webhookId_(std::move(webhookId)), targetId_(std::move(targetId)) {}
  ScriptedResponse reading(ScriptedResponse answer) {
    answer.onArrival = [this] {
      std::string next;
      for (const DeliveryRow& row : h_.deliveriesOf(webhookId_, targetId_))
        next = row.nextAttemptAt.value_or("");
      std::lock_guard lock(mutex_);
      seen_.push_back(next);
    };
    return answer;
  }
  std::vector<std::string> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  EngineHarness& h_;
  const std::string webhookId_;
  const std::string targetId_;
  mutable std::mutex mutex_;  // guards seen_
  std::vector<std::string> seen_;
};

HarnessOptions withBreaker(int threshold, std::chrono::milliseconds cooldown) {
  HarnessOptions o;
  o.breakerThreshold = threshold;
  o.breakerCooldown = cooldown;
  return o;
}

}  // namespace

TEST_CASE("503, 503, 200: delivered on the third attempt, waiting the backoff in between") {
  // Jitter at its low end: delay(n) = 200·2^(n−1) ms · 0.8 exactly.
  FakeClock clock;
  FixedRandom lowJitter(0.0);
  HarnessOptions options;
  options.clock = &clock;
  options.random = &lowJitter;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"),
                                                 retryPolicy(5, 200, 0.2));
  ScheduleLog schedule(h, hook.webhookId, target.id);
  r.script({respond(503), schedule.reading(respond(503)), schedule.reading(respond(200))});
  const std::string eventId = h.post(hook.entrypointId, R"({"n":1})");
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);

  REQUIRE(h.waitForStatus(d, "delivered", 10s));
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 3);
  CHECK(statusCodes(rows) == std::vector<int>{503, 503, 200});
  CHECK(attemptsNumbered(rows));
  CHECK_FALSE(rows[0].success);
  CHECK_FALSE(rows[1].success);
  CHECK(rows[2].success);
  CHECK(rows[2].responseBody == "ok");
  const DeliveryRow row = h.delivery(d);
  CHECK(row.attempts == 3);
  CHECK(row.lastStatusCode == 200);
  CHECK_FALSE(row.failureReason);

  const auto requests = r.requests();
  REQUIRE(requests.size() == 3);
  // Each retry was scheduled exactly its delay ahead, and waited at least
  // that long for real.
  CHECK(schedule.seen() == std::vector<std::string>{formatTime(clock.now() + 160ms),
                                                    formatTime(clock.now() + 320ms)});
  CHECK(msBetween(requests[0].at, requests[1].at) >= 160);
  CHECK(msBetween(requests[1].at, requests[2].at) >= 320);
  for (const auto& req : requests) CHECK(req.body == R"({"n":1})");

  REQUIRE(h.observer().waitForOutcomes(3));
  CHECK(h.observer().attempts("http") == 3);
  CHECK(h.observer().outcomes("http", "retrying") == 2);
  CHECK(h.observer().outcomes("http", "delivered") == 1);
}

TEST_CASE("408, 425 and 429 are retried like 5xx") {
  EngineHarness h;
  Receiver r;
  r.script({respond(408), respond(425), respond(429)});
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 100, 0, 100));
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
  REQUIRE(h.waitForStatus(d, "delivered", 10s));
  CHECK(statusCodes(h.resultRows(d)) == std::vector<int>{408, 425, 429, 200});
}

// 410 Gone disables the target instead (target_health_test.cpp).
TEST_CASE("any other 4xx fails at once: one attempt, reason http_<code>") {
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const std::vector<int> codes = {400, 401, 403, 404, 422};
  std::vector<std::unique_ptr<Receiver>> receivers;
  std::vector<TargetRecord> targets;
  for (int code : codes) {
    receivers.push_back(std::make_unique<Receiver>());
    receivers.back()->setDefault(respond(code));
    targets.push_back(
        h.createHttpTarget(hook.webhookId, receivers.back()->url("/"), retryPolicy(5, 100)));
  }
  const std::string eventId = h.post(hook.entrypointId, R"({"kind":"test"})");
  REQUIRE(h.observer().waitForOutcomes(static_cast<int>(codes.size()), 5s));

  for (size_t i = 0; i < codes.size(); ++i) {
    const int code = codes[i];
    CAPTURE(code);
    const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, targets[i].id);
    REQUIRE(h.waitForStatus(d, "failed", 5s));
    const DeliveryRow row = h.delivery(d);
    CHECK(row.failureReason == "http_" + std::to_string(code));
    CHECK(row.lastStatusCode == code);
    CHECK(row.attempts == 1);
    const auto rows = h.resultRows(d);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].statusCode == code);
    CHECK_FALSE(rows[0].success);
    CHECK(h.observer().outcomes("http", "failed", "http_" + std::to_string(code)) == 1);
  }
  REQUIRE(h.waitUntilNothingHeld());  // no (wrong) retry can follow
  for (size_t i = 0; i < codes.size(); ++i) {
    CAPTURE(codes[i]);
    CHECK(receivers[i]->requestCount() == 1);
  }
}

TEST_CASE("4xx answers never count toward opening the breaker") {
  HarnessOptions options;
  options.breakerThreshold = 2;
  EngineHarness h(options);
  Receiver r;
  r.setDefault(respond(404));
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 100));
  // Twice the threshold, one after another: each is answered (the breaker
  // lets it through) and fails at once.
  for (int i = 0; i < 4; ++i) {
    const std::string eventId = h.post(hook.entrypointId, json{{"n", i}}.dump());
    CHECK(h.waitForStatus(h.deliveryOf(hook.webhookId, eventId, target.id), "failed", 5s));
  }
  CHECK(r.requestCount() == 4);
  const CircuitBreakers::Status status = h.breakers().status(target.id);
  CHECK(status.state == BreakerState::kClosed);
  CHECK(status.consecutiveFailures == 0);
}

TEST_CASE("a receiver that never answers times out, and the attempt is retried") {
  FakeClock clock;
  HarnessOptions options;
  options.clock = &clock;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/slow"),
                                                 retryPolicy(5, 500, 0), 4, /*timeoutMs=*/300);
  ScheduleLog schedule(h, hook.webhookId, target.id);
  r.script({neverAnswer(), schedule.reading(respond(200))});
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);

  REQUIRE(h.waitForStatus(d, "retrying", 5s));
  const auto first = h.resultRows(d);
  REQUIRE(first.size() == 1);
  CHECK_FALSE(first[0].statusCode);
  REQUIRE(first[0].error);
  CHECK(contains(*first[0].error, "timeout"));
  // The receiver never answers: only the attempt's timeout can have ended it.
  CHECK(first[0].durationMs >= 300);
  CHECK(h.delivery(d).attempts == 1);

  REQUIRE(r.waitForRequests(2, 5s));
  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].statusCode == 200);
  // Retried on the policy's schedule, not the timeout's.
  CHECK(schedule.seen() == std::vector<std::string>{formatTime(clock.now() + 500ms)});
}

TEST_CASE("connection refused six times with max_retries 5: failed, max_attempts, six rows") {
  // A high threshold keeps the breaker out of this test: it is about retries.
  EngineHarness h(withBreaker(100, 30s));
  const int port = unusedLoopbackPort();
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, "http://127.0.0.1:" + std::to_string(port) + "/x",
                         retryPolicy(5, 100, 0, 100));
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);

  REQUIRE(h.waitForStatus(d, "failed", 10s));
  const DeliveryRow row = h.delivery(d);
  CHECK(row.failureReason == "max_attempts");
  CHECK(row.attempts == 6);
  CHECK_FALSE(row.lastStatusCode);
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 6);
  CHECK(attemptsNumbered(rows));
  for (const ResultRow& res : rows) {
    CHECK_FALSE(res.statusCode);
    CHECK_FALSE(res.success);
    REQUIRE(res.error);
    CHECK_FALSE(res.error->empty());
  }
  REQUIRE(h.observer().waitForOutcomes(6));
  CHECK(h.observer().attempts("http") == 6);
  CHECK(h.observer().outcomes("http", "retrying") == 5);
  CHECK(h.observer().outcomes("http", "failed", "max_attempts") == 1);
}

TEST_CASE("max_retries 0 is one attempt and no retry") {
  EngineHarness h;
  Receiver r;
  r.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(0, 100));
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
  REQUIRE(h.waitForStatus(d, "failed", 5s));
  CHECK(h.delivery(d).failureReason == "max_attempts");
  CHECK(h.delivery(d).lastStatusCode == 503);
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(h.resultRows(d).size() == 1);
  CHECK(r.requestCount() == 1);
}

TEST_CASE("429 with Retry-After: 2 waits at least 2 s, not the 100 ms backoff") {
  FakeClock clock;
  HarnessOptions options;
  options.clock = &clock;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 100, 0));
  ScheduleLog schedule(h, hook.webhookId, target.id);
  r.script({respond(429, {{"Retry-After", "2"}}), schedule.reading(respond(200))});
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);

  REQUIRE(r.waitForRequests(2, 6s));
  const auto requests = r.requests();
  CHECK(schedule.seen() == std::vector<std::string>{formatTime(clock.now() + 2000ms)});
  CHECK(msBetween(requests[0].at, requests[1].at) >= 2000);
  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  CHECK(statusCodes(h.resultRows(d)) == std::vector<int>{429, 200});
}

TEST_CASE("redirects are never followed: 302 and 307 fail with http_<code>") {
  EngineHarness h;
  Receiver elsewhere;
  Receiver r302;
  Receiver r307;
  r302.setDefault(respond(302, {{"Location", elsewhere.url("/moved")}}));
  r307.setDefault(respond(307, {{"Location", elsewhere.url("/moved")}}));
  const Hook hook = h.createWebhook();
  const TargetRecord t302 = h.createHttpTarget(hook.webhookId, r302.url("/"), retryPolicy(5, 100));
  const TargetRecord t307 = h.createHttpTarget(hook.webhookId, r307.url("/"), retryPolicy(5, 100));
  const std::string eventId = h.post(hook.entrypointId, "{}");

  for (const auto& [target, status] : {std::pair{t302, 302}, std::pair{t307, 307}}) {
    const int code = status;  // CAPTURE cannot refer to a binding with clang 14
    CAPTURE(code);
    const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);
    REQUIRE(h.waitForStatus(d, "failed", 5s));
    CHECK(h.delivery(d).failureReason == "http_" + std::to_string(code));
    const auto rows = h.resultRows(d);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].statusCode == code);
  }
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(elsewhere.requestCount() == 0);
  CHECK(r302.requestCount() == 1);
  CHECK(r307.requestCount() == 1);
}

TEST_CASE("the circuit breaker opens after 5 failures, refuses without rows, then probes") {
  // A clock that moves only when the test moves it: the cooldown ends when
  // the test says, however slow the machine. Refused attempts still look
  // again after the (real) time the breaker gives them.
  FakeClock clock;
  HarnessOptions options = withBreaker(5, 1000ms);
  options.clock = &clock;
  EngineHarness h(options);
  Receiver r;
  r.setDefault(respond(500));
  const Hook hook = h.createWebhook();
  // max_delay 100 ms: the 6th attempt is due long before the cooldown ends.
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(10, 100, 0, 100));
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
  // A refused attempt defers the delivery to the end of the cooldown (the
  // attempt before it had set now + 100 ms).
  const auto deferredByCooldown = [&] {
    return eventually([&] {
      return h.delivery(d).nextAttemptAt == formatTime(clock.now() + 1000ms);
    });
  };

  REQUIRE(r.waitForRequests(5, 5s));
  const SteadyTime fifth = r.requests()[4].at;
  REQUIRE(deferredByCooldown());
  CHECK(r.requestCount() == 5);
  CHECK(h.breakers().openCount() == 1);
  CHECK(h.breakerEvents() == std::vector<int>{1});
  CHECK(h.resultRows(d).size() == 5);
  DeliveryRow row = h.delivery(d);
  CHECK(row.status == "retrying");
  CHECK(row.attempts == 5);  // refusals use up no attempt
  CHECK(h.observer().attempts("http") == 5);

  // Open until exactly 1000 ms on the breaker's clock, then one probe.
  clock.advance(999ms);
  CHECK(h.breakers().status(target.id).state == BreakerState::kOpen);
  CHECK(h.breakers().status(target.id).retryIn == 1ms);
  CHECK(r.requestCount() == 5);
  const SteadyTime firstCooldownOver = std::chrono::steady_clock::now();
  clock.advance(1ms);
  CHECK(h.breakers().status(target.id).state == BreakerState::kHalfOpen);

  // The probe fails and reopens the breaker for another full cooldown.
  REQUIRE(r.waitForRequests(6, 5s));
  r.setDefault(respond(200));  // the 6th request already took its 500
  const SteadyTime sixth = r.requests()[5].at;
  CHECK(sixth >= firstCooldownOver);
  CHECK(msBetween(fifth, sixth) >= 990);
  REQUIRE(deferredByCooldown());
  CHECK(h.breakers().status(target.id).state == BreakerState::kOpen);
  CHECK(h.breakers().status(target.id).retryIn == 1000ms);
  CHECK(r.requestCount() == 6);

  // After it the next probe succeeds and closes the breaker.
  const SteadyTime secondCooldownOver = std::chrono::steady_clock::now();
  clock.advance(1000ms);
  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  const auto requests = r.requests();
  REQUIRE(requests.size() == 7);
  CHECK(requests[6].at >= secondCooldownOver);
  CHECK(msBetween(sixth, requests[6].at) >= 990);
  const auto rows = h.resultRows(d);
  REQUIRE(rows.size() == 7);
  CHECK(attemptsNumbered(rows));
  CHECK(statusCodes(rows) == std::vector<int>{500, 500, 500, 500, 500, 500, 200});
  row = h.delivery(d);
  CHECK(row.attempts == 7);
  CHECK(h.breakers().openCount() == 0);
  CHECK(h.breakerEvents() == std::vector<int>{1, 0});
  // Only dispatched attempts were counted, never the refusals.
  REQUIRE(h.observer().waitForOutcomes(7));
  CHECK(h.observer().attempts("http") == 7);
  CHECK(h.observer().outcomes("http", "retrying") == 6);
  CHECK(h.observer().outcomes("http", "delivered") == 1);
}

TEST_CASE("a half-open probe that sends nothing (blocked) does not wedge the breaker") {
  EngineHarness h(withBreaker(5, 500ms));
  Receiver r;
  r.setDefault(respond(500));
  h.resolver().set("receiver.test", {"127.0.0.1"});
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(
      hook.webhookId, "http://receiver.test:" + std::to_string(r.port()) + "/",
      retryPolicy(10, 100, 0, 100));
  const DeliveryRef first =
      h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
  REQUIRE(r.waitForRequests(5, 5s));
  // Open. The name now points somewhere the guard refuses: the probe ends
  // the delivery as blocked_destination without sending anything.
  h.resolver().set("receiver.test", {"10.0.0.1"});
  REQUIRE(h.waitForStatus(first, "failed", 3s));
  CHECK(h.delivery(first).failureReason == "blocked_destination");
  CHECK(r.requestCount() == 5);

  // Back to a good address: the next delivery must get its probe through.
  h.resolver().set("receiver.test", {"127.0.0.1"});
  r.setDefault(respond(200));
  const DeliveryRef second =
      h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
  REQUIRE(h.waitForStatus(second, "delivered", 3s));
  CHECK(h.breakers().openCount() == 0);
}

TEST_CASE("a slow target cannot hold up another: lanes and max_concurrency") {
  EngineHarness h;
  Receiver slow;
  Receiver fast;
  slow.setDefault(respondAfter(5000ms));
  const Hook hook = h.createWebhook();
  const TargetRecord a = h.createHttpTarget(hook.webhookId, slow.url("/a"), retryPolicy(5, 2000),
                                            /*maxConcurrency=*/2, /*timeoutMs=*/10000);
  const TargetRecord b = h.createHttpTarget(hook.webhookId, fast.url("/b"), retryPolicy(5, 2000));

  for (int i = 0; i < 10; ++i) h.post(hook.entrypointId, json{{"seq", i}}.dump());

  REQUIRE(h.waitForCount(hook.webhookId, b.id, "delivered", 10, 5s));
  // All of B was delivered while A's first requests were still unanswered.
  CHECK(slow.inFlight() == static_cast<int>(slow.requestCount()));
  CHECK(fast.requestCount() == 10);
  // A is stuck: at most its two lanes' worth in flight, nothing finished.
  CHECK(slow.requestCount() >= 1);
  CHECK(slow.maxInFlight() <= 2);
  CHECK(slow.requestCount() <= 2);
  CHECK(h.countWithStatus(hook.webhookId, a.id, "delivered") == 0);
}

// Slow receivers can hold every worker the engine started with: it starts
// more, up to max workers, rather than make a fast target wait for them.
// An engine with 2 workers and three slow targets that could hold 12
// attempts at once; each answers after `answerAfter`.
struct SlowNeighbours {
  EngineHarness h;
  Receiver slow;
  Hook hook;
  std::vector<TargetRecord> targets;

  static HarnessOptions withWorkers(int maxWorkers, std::chrono::milliseconds idleTimeout) {
    HarnessOptions options;
    options.workers = 2;
    options.maxWorkers = maxWorkers;
    options.workerIdleTimeout = idleTimeout;
    return options;
  }
  explicit SlowNeighbours(int maxWorkers, std::chrono::milliseconds answerAfter = 5000ms,
                          std::chrono::milliseconds idleTimeout = EngineOptions{}.workerIdleTimeout)
      : h(withWorkers(maxWorkers, idleTimeout)), hook(h.createWebhook()) {
    slow.setDefault(respondAfter(answerAfter));
    for (int i = 0; i < 3; ++i)
      targets.push_back(h.createHttpTarget(hook.webhookId, slow.url("/slow"), retryPolicy(5, 2000),
                                           /*maxConcurrency=*/4, /*timeoutMs=*/10000));
  }
  void postEvents(int n) {
    for (int i = 0; i < n; ++i) h.post(hook.entrypointId, json{{"seq", i}}.dump());
  }
};

TEST_CASE("slow targets that hold every worker cannot hold up another: more workers start") {
  SlowNeighbours s(/*maxWorkers=*/14);
  Receiver fast;
  const TargetRecord quick = s.h.createHttpTarget(s.hook.webhookId, fast.url("/fast"));

  s.postEvents(8);

  REQUIRE(s.h.waitForCount(s.hook.webhookId, quick.id, "delivered", 8, 3s));
  // Every slow lane fills, on workers started for them; on busy cores the
  // last slow attempts may still be on their way when the fast ones are done.
  CHECK(eventually([&] { return s.slow.inFlight() == 12; }, 3s));
  CHECK(s.slow.requestCount() == static_cast<size_t>(s.slow.inFlight()));  // none answered yet
}

TEST_CASE("workers started for slow receivers end once they have waited long enough for work") {
  SlowNeighbours s(/*maxWorkers=*/14, /*answerAfter=*/500ms, /*idleTimeout=*/300ms);
  s.postEvents(8);

  REQUIRE(s.slow.waitForRequests(12, 5s));
  CHECK(s.h.engine().workerCount() >= 12);  // started for the slow lanes
  for (const TargetRecord& t : s.targets)
    REQUIRE(s.h.waitForCount(s.hook.webhookId, t.id, "delivered", 8, 10s));
  for (int i = 0; i < 300 && s.h.engine().workerCount() > 2; ++i) std::this_thread::sleep_for(10ms);
  CHECK(s.h.engine().workerCount() == 2);  // back to the workers it started with

  // The pool grows again for the next burst.
  s.postEvents(8);
  REQUIRE(s.slow.waitForRequests(24 + 12, 5s));
  CHECK(s.h.engine().workerCount() >= 12);
  for (const TargetRecord& t : s.targets)
    REQUIRE(s.h.waitForCount(s.hook.webhookId, t.id, "delivered", 16, 10s));
}

TEST_CASE("workers busy with fast receivers start no more: they already use the cores") {
  HarnessOptions options = SlowNeighbours::withWorkers(/*maxWorkers=*/14, 60s);
  // Well above what a loaded machine adds to a loopback answer: only a
  // receiver that holds its request is slow here.
  options.slowAttempt = 500ms;
  EngineHarness h(options);
  Receiver fast;
  const Hook hook = h.createWebhook();
  std::vector<TargetRecord> targets;
  for (int i = 0; i < 4; ++i)
    targets.push_back(h.createHttpTarget(hook.webhookId, fast.url("/fast"), retryPolicy(5, 2000),
                                         /*maxConcurrency=*/4));

  for (int i = 0; i < 100; ++i) h.post(hook.entrypointId, json{{"seq", i}}.dump());

  for (const TargetRecord& t : targets)
    REQUIRE(h.waitForCount(hook.webhookId, t.id, "delivered", 100, 20s));
  // 16 attempts could run at once and a lane was ready nearly always while
  // both workers were busy, each time for less than slowAttempt.
  CHECK(h.engine().workerCount() == 2);
}

TEST_CASE("the worker pool grows no further than max workers") {
  SlowNeighbours s(/*maxWorkers=*/5);

  s.postEvents(8);

  for (int i = 0; i < 300 && s.slow.inFlight() < 5; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(300ms);
  CHECK(s.slow.inFlight() == 5);
  CHECK(s.slow.maxInFlight() == 5);
}

TEST_CASE("a 100 KB body goes byte for byte, with headers forwarded by the rules") {
  EngineHarness h;
  Receiver r;
  r.push(respond(503));  // the retry must reload the body from the events DB
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(
      hook.webhookId, r.url("/big?x=1"), retryPolicy(5, 100, 0), 4, 5000,
      json{{"headers", {{"X-Override", "configured"}, {"X-Added", "yes"}}}});

  InboundEvent e;
  e.entrypointId = hook.entrypointId;
  e.method = "POST";
  e.path = "/hooks/" + hook.entrypointId;
  std::string body(100 * 1024, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 31 + 7) % 256);
  REQUIRE(body.size() > Task::kInlineBodyLimit);
  e.body = body;
  e.contentType = "application/octet-stream";
  e.headers = {{"Host", "sender.example"},
               {"Content-Type", "application/octet-stream"},
               {"Content-Length", "102400"},
               {"X-Custom", "kept"},
               {"X-Multi", "one"},
               {"X-Multi", "two"},
               {"X-Override", "original"},
               {"Connection", "keep-alive, X-Hop-Token"},
               {"X-Hop-Token", "hop-secret"},
               {"Keep-Alive", "timeout=5"},
               {"Transfer-Encoding", "chunked"},
               {"Proxy-Authorization", "Basic c2VjcmV0"},
               {"Proxy-Connection", "keep-alive"},
               {"TE", "trailers"},
               {"Upgrade", "h2c"},
               {"User-Agent", "sender/1.0"}};
  const IngestOutcome stored = h.ingestDirect(hook.webhookId, e, {target.id});
  const DeliveryRef d{hook.webhookId, stored.deliveries.at(0).id};

  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  const auto requests = r.requests();
  REQUIRE(requests.size() == 2);
  for (const ReceivedRequest& req : requests) {
    CHECK(req.method == "POST");
    CHECK(req.path == "/big");
    CHECK(req.body.size() == body.size());
    CHECK(req.body == body);
    CHECK(req.header("Content-Length") == "102400");
    CHECK(req.header("Content-Type") == "application/octet-stream");
    CHECK(req.headerCount("Content-Type") == 1);
    CHECK(req.header("X-Custom") == "kept");
    REQUIRE(req.headerCount("X-Multi") == 2);
    auto multi = req.headers.equal_range("X-Multi");
    CHECK(multi.first->second == "one");
    CHECK(std::next(multi.first)->second == "two");
    CHECK(req.header("User-Agent") == "sender/1.0");
    // Configured headers are added and win over the original's.
    CHECK(req.headerCount("X-Override") == 1);
    CHECK(req.header("X-Override") == "configured");
    CHECK(req.header("X-Added") == "yes");
    // Host is the receiver's, not the sender's.
    CHECK(req.header("Host") == "127.0.0.1:" + std::to_string(r.port()));
    // Hop-by-hop headers, and those the Connection header names, stay behind.
    CHECK(req.header("Connection") != "keep-alive, X-Hop-Token");
    CHECK_FALSE(req.hasHeader("X-Hop-Token"));
    CHECK_FALSE(req.hasHeader("Keep-Alive"));
    CHECK_FALSE(req.hasHeader("Transfer-Encoding"));
    CHECK_FALSE(req.hasHeader("Proxy-Authorization"));
    CHECK_FALSE(req.hasHeader("Proxy-Connection"));
    CHECK_FALSE(req.hasHeader("TE"));
    CHECK_FALSE(req.hasHeader("Upgrade"));
  }
  CHECK(statusCodes(h.resultRows(d)) == std::vector<int>{503, 200});
}

TEST_CASE("the real ingest path forwards the sender's body and headers, with the configured method") {
  EngineHarness h;
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/put-here"),
                                                 retryPolicy(5, 100), 4, 5000,
                                                 json{{"method", "PUT"}});
  const std::string body = R"({"event":"order.created","id":42,"note":"grüße"})";
  const std::string eventId =
      h.post(hook.entrypointId, body, "application/json",
             {{"X-GitHub-Event", "push"}, {"Proxy-Authorization", "Basic c2VjcmV0"}});
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  REQUIRE(r.requestCount() == 1);
  const ReceivedRequest req = r.requests()[0];
  CHECK(req.method == "PUT");
  CHECK(req.path == "/put-here");
  CHECK(req.body == body);
  CHECK(req.header("Content-Type") == "application/json");
  CHECK(req.header("X-GitHub-Event") == "push");
  CHECK_FALSE(req.hasHeader("Proxy-Authorization"));
  CHECK(req.header("Host") == "127.0.0.1:" + std::to_string(r.port()));
}

TEST_CASE("a sender's forwarding headers reach only a target that asks for them") {
  EngineHarness h;
  Receiver plain, asking;
  const Hook hook = h.createWebhook();
  const TargetRecord plainTarget = h.createHttpTarget(hook.webhookId, plain.url("/plain"));
  const TargetRecord askingTarget = h.createHttpTarget(
      hook.webhookId, asking.url("/asking"), retryPolicy(5, 100), 4, 5000,
      json{{"pass_forwarding_headers", true}});
  const httplib::Headers forwarding = {{"X-Forwarded-For", "203.0.113.9, 10.0.0.1"},
                                       {"X-Forwarded-Host", "sender.example"},
                                       {"X-Forwarded-Proto", "https"},
                                       {"Forwarded", "for=203.0.113.9;proto=https"},
                                       {"X-Real-IP", "203.0.113.9"},
                                       {"Via", "1.1 sender-proxy"}};
  h.post(hook.entrypointId, R"({"n":1})", "application/json", forwarding);
  REQUIRE(h.waitForCount(hook.webhookId, plainTarget.id, "delivered", 1, 5s));
  REQUIRE(h.waitForCount(hook.webhookId, askingTarget.id, "delivered", 1, 5s));
  const ReceivedRequest dropped = plain.requests().at(0);
  const ReceivedRequest passed = asking.requests().at(0);
  for (const auto& [name, value] : forwarding) {
    const auto& header = name;  // clang 14: a lambda cannot name a binding
    INFO(header);
    CHECK_FALSE(dropped.hasHeader(name));
    CHECK(passed.header(name) == value);
  }
}

TEST_CASE("slack: the receiver gets {\"text\": ...} with method, content type and body") {
  EngineHarness h;
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createTarget(hook.webhookId, "slack",
                     json{{"webhook_url", r.url("/services/T000/B000/XXXX")}}, retryPolicy(5, 100));
  h.post(hook.entrypointId, R"({"order":17,"items":["a","b"]})", "application/json");
  h.post(hook.entrypointId, "hello plain text", "text/plain");
  h.post(hook.entrypointId, "", "text/plain");

  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 3, 5s));
  const auto requests = r.requests();
  REQUIRE(requests.size() == 3);
  int sawJson = 0;
  int sawText = 0;
  int sawEmpty = 0;
  for (const ReceivedRequest& req : requests) {
    CHECK(req.method == "POST");
    CHECK(req.path == "/services/T000/B000/XXXX");
    CHECK(req.header("Content-Type") == "application/json");
    const json posted = json::parse(req.body, nullptr, false);
    REQUIRE(posted.is_object());
    CHECK(posted.size() == 1);
    REQUIRE(posted.contains("text"));
    REQUIRE(posted["text"].is_string());
    const std::string text = posted["text"].get<std::string>();
    CHECK(contains(text, "POST"));
    if (contains(text, "\"order\"")) {
      ++sawJson;
      CHECK(contains(text, "application/json"));
      CHECK(contains(text, "30 bytes"));
      CHECK(contains(text,
                     "```\n{\n  \"order\": 17,\n  \"items\": [\n    \"a\",\n    \"b\"\n  ]\n}\n```"));
    } else if (contains(text, "hello plain text")) {
      ++sawText;
      CHECK(contains(text, "text/plain"));
      CHECK(contains(text, "16 bytes"));
      CHECK(contains(text, "```\nhello plain text\n```"));
    } else {
      ++sawEmpty;
      CHECK(contains(text, "0 bytes"));
      CHECK(contains(text, "empty body"));
    }
  }
  CHECK(sawJson == 1);
  CHECK(sawText == 1);
  CHECK(sawEmpty == 1);
  CHECK(h.observer().attempts("slack") == 3);
}

TEST_CASE("a delivery whose result is still being written is not sent again by the sweep") {
  // The worker moves on once the receiver answered; the result commits in
  // the background. Another connection keeps the events DB's write lock
  // meanwhile, so the row stays pending on disk through several sweeps
  // (every 200 ms): the engine must still count the delivery as its own.
  EngineHarness h;
  Receiver r;
  r.script({respondAfter(300ms)});
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"));
  const std::string eventId = h.post(hook.entrypointId, R"({"n":1})");
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);

  SQLite::Database locker(h.eventsDbPath(hook.webhookId).string(), SQLite::OPEN_READWRITE);
  locker.exec("BEGIN IMMEDIATE");  // before the receiver answers
  REQUIRE(r.waitForRequests(1, 5s));
  std::this_thread::sleep_for(1s);
  CHECK(h.delivery(d).status == "pending");
  CHECK(h.engine().heldCount() == 1);
  locker.exec("ROLLBACK");

  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  CHECK(h.resultRows(d).size() == 1);
  CHECK_FALSE(r.waitForRequests(2, 500ms));
  CHECK(h.engine().heldCount() == 0);
}

TEST_CASE("database and log targets: delivered after one successful attempt") {
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const TargetRecord db = h.createTarget(hook.webhookId, "database", json::object());
  const TargetRecord log = h.createTarget(hook.webhookId, "log", json::object());
  const std::string eventId = h.post(hook.entrypointId, R"({"stored":true})");
  REQUIRE(h.observer().waitForOutcomes(2, 5s));

  for (const TargetRecord* t : {&db, &log}) {
    CAPTURE(t->type);
    const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, t->id);
    REQUIRE(h.waitForStatus(d, "delivered", 5s));
    const DeliveryRow row = h.delivery(d);
    CHECK(row.attempts == 1);
    CHECK_FALSE(row.failureReason);
    const auto rows = h.resultRows(d);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].success);
    CHECK(rows[0].attempt == 1);
    CHECK_FALSE(rows[0].statusCode);
    CHECK_FALSE(rows[0].error);
    CHECK(rows[0].durationMs >= 0);
    CHECK(h.observer().attempts(std::string(targetTypeWord(t->type))) == 1);
    CHECK(h.observer().outcomes(std::string(targetTypeWord(t->type)), "delivered") == 1);
  }
}

TEST_CASE("SSRF: with an empty allow-list loopback and private destinations are refused") {
  HarnessOptions options;
  options.allowNetworks = "";
  EngineHarness h(options);
  Receiver r;
  h.resolver().set("hooks.internal.test", {"10.1.2.3"});
  const Hook hook = h.createWebhook();
  const TargetRecord loopback =
      h.createHttpTarget(hook.webhookId, "http://127.0.0.1:" + std::to_string(r.port()) + "/",
                         retryPolicy(5, 100));
  const TargetRecord named = h.createHttpTarget(
      hook.webhookId, "http://hooks.internal.test:" + std::to_string(r.port()) + "/",
      retryPolicy(5, 100));
  const std::string eventId = h.post(hook.entrypointId, "{}");

  for (const TargetRecord* t : {&loopback, &named}) {
    const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, t->id);
    REQUIRE(h.waitForStatus(d, "failed", 5s));
    CHECK(h.delivery(d).failureReason == "blocked_destination");
    const auto rows = h.resultRows(d);
    REQUIRE(rows.size() == 1);
    CHECK_FALSE(rows[0].statusCode);
    REQUIRE(rows[0].error);
    CHECK_FALSE(rows[0].error->empty());
    // The message never names the internal address a name resolved to.
    CHECK_FALSE(contains(*rows[0].error, "10.1.2.3"));
  }
  REQUIRE(h.observer().waitForOutcomes(2));
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(r.requestCount() == 0);
  CHECK(h.observer().attempts("http") == 0);  // nothing was dispatched
  CHECK(h.observer().outcomes("http", "failed", "blocked_destination") == 2);
}

TEST_CASE("a host name is resolved by our resolver and the connection pinned to it") {
  EngineHarness h;
  Receiver r;
  h.resolver().set("receiver.test", {"127.0.0.1"});
  const Hook hook = h.createWebhook();
  const TargetRecord named = h.createHttpTarget(
      hook.webhookId, "http://receiver.test:" + std::to_string(r.port()) + "/named",
      retryPolicy(5, 100));
  const TargetRecord unknown = h.createHttpTarget(
      hook.webhookId, "http://no-such-host.test:" + std::to_string(r.port()) + "/",
      retryPolicy(0, 100));
  const std::string eventId = h.post(hook.entrypointId, "{}");

  const DeliveryRef ok = h.deliveryOf(hook.webhookId, eventId, named.id);
  REQUIRE(h.waitForStatus(ok, "delivered", 5s));
  REQUIRE(r.requestCount() == 1);
  CHECK(r.requests()[0].header("Host") == "receiver.test:" + std::to_string(r.port()));

  // A DNS failure is retryable; with max_retries 0 it ends max_attempts.
  const DeliveryRef failed = h.deliveryOf(hook.webhookId, eventId, unknown.id);
  REQUIRE(h.waitForStatus(failed, "failed", 5s));
  CHECK(h.delivery(failed).failureReason == "max_attempts");
  const auto rows = h.resultRows(failed);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].error);
  CHECK(contains(*rows[0].error, "no-such-host.test"));
}

TEST_CASE("a delivery refused as blocked_destination says which flag opens the address") {
  EngineHarness h;
  h.resolver().set("inside.test", {"10.0.0.7"});
  const Hook hook = h.createWebhook();
  const TargetRecord inside =
      h.createHttpTarget(hook.webhookId, "http://inside.test/", retryPolicy(3, 100));
  const DeliveryRef refused =
      h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), inside.id);
  REQUIRE(h.waitForStatus(refused, "failed", 5s));
  CHECK(h.delivery(refused).failureReason == "blocked_destination");
  const auto rows = h.resultRows(refused);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].error);
  CHECK(contains(*rows[0].error, "inside.test resolves to a forbidden address (private)"));
  CHECK(contains(*rows[0].error, "--allow-networks"));
  CHECK_FALSE(contains(*rows[0].error, "10.0.0.7"));
}

}  // namespace webhooker::testing
