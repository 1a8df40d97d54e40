// Endpoint health in-process (EngineHarness: the daemon's engine, admin API
// and storage on real files, loopback receivers), with an injected clock
// where time matters:
// - a 410 Gone disables the target (gone); the delivery waits, so do the
//   ones made while it is disabled; an operational target.disabled event
//   arrives at a second receiver with a verifying signature; PATCH
//   {"active": true} enables it and everything is delivered, in order;
// - a dead receiver with disable_after 60 s is disabled (failing) once the
//   clock has moved a minute, its delivery waits instead of dead-lettering,
//   and auto_resume re-enables it with a probe once the receiver is back;
// - a success ends the failing streak, so a receiver failing now and then
//   is never disabled; probes go only to targets disabled as failing with
//   auto_resume, never to one without it or to one a 410 disabled, and
//   after a failed one the next waits probe_interval; enabled by hand, a
//   failing target starts a new streak;
// - the operational webhook's own failures produce no operational events;
// - an open breaker survives a restart of the real daemon: /metrics and the
//   API say open until its cooldown ends, then it probes;
// - a stalled delivery shows in webhooker_oldest_pending_age_seconds and
//   the stats API, and the documented alert rules pass `promtool check rules`;
// - the CLI: targets with --ordering, their STATE column, enable, and
//   operational-webhook set/show with a refused URL;
// - bad input: unknown states and fields, an SSRF-failing operational URL.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "engine/operational_events.h"
#include "targets/webhook_signature.h"
#include "tests/support/contains.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/engine_harness.h"
#include "tests/support/fake_clock.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/receiver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

httplib::Client adminClient(const EngineHarness& h) {
  httplib::Client c("127.0.0.1", const_cast<EngineHarness&>(h).port());
  c.set_bearer_token_auth(EngineHarness::kToken);
  c.set_read_timeout(10s);
  return c;
}

json send(EngineHarness& h, const std::string& method, const std::string& path, const json& body,
          int expectedStatus) {
  httplib::Client c = adminClient(h);
  httplib::Result res = method == "PUT"     ? c.Put(path, body.dump(), "application/json")
                        : method == "PATCH" ? c.Patch(path, body.dump(), "application/json")
                        : method == "POST"  ? c.Post(path, body.dump(), "application/json")
                        : method == "DELETE" ? c.Delete(path)
                                             : c.Get(path);
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == expectedStatus);
  return res->body.empty() ? json() : json::parse(res->body);
}

std::string targetPath(const TargetRecord& t) {
  return "/api/v1/webhooks/" + t.webhookId + "/targets/" + t.id;
}

json targetView(EngineHarness& h, const TargetRecord& t) {
  return send(h, "GET", targetPath(t), json(), 200);
}

bool waitForState(EngineHarness& h, const TargetRecord& t, const std::string& state,
                  std::chrono::milliseconds timeout = 5s) {
  return eventually([&] { return targetView(h, t).at("state") == state; }, timeout);
}

// The operational events a receiver got, parsed, with their signatures
// checked against `secret`.
std::vector<json> operationalEvents(const Receiver& receiver, const std::string& secret) {
  std::vector<json> out;
  for (const ReceivedRequest& r : receiver.requests()) {
    const std::string id = r.header("webhook-id");
    const std::string timestamp = r.header("webhook-timestamp");
    CHECK(r.header("webhook-signature") ==
          standardWebhookSignatureHeader({secret}, id, std::stoll(timestamp), r.body));
    out.push_back(json::parse(r.body));
  }
  return out;
}

bool hasEvent(const std::vector<json>& events, const std::string& type, const std::string& targetId) {
  for (const json& e : events)
    if (e.at("type") == type && e.at("data").value("target_id", "") == targetId) return true;
  return false;
}

// The harness on `clock`, its breakers out of the way: the tests using it
// are about disabling targets, not about breakers.
HarnessOptions onClock(const FakeClock& clock) {
  HarnessOptions options;
  options.clock = &clock;
  options.breakerThreshold = 1000;
  return options;
}

// PUT /settings/operational-webhook to `receiver` with a generated secret,
// which it returns.
std::string setOperationalWebhook(EngineHarness& h, const Receiver& receiver) {
  const json view = send(h, "PUT", "/api/v1/settings/operational-webhook",
                         {{"url", receiver.url("/ops")}, {"signing_secret", "generate"}}, 200);
  CHECK(view.at("signing_secret") == "[redacted]");
  return view.at("generated_signing_secret").get<std::string>();
}

TEST_CASE("410 Gone disables the target; deliveries wait and resume in order after re-enable") {
  EngineHarness h;
  Receiver ops;
  const std::string secret = setOperationalWebhook(h, ops);
  Receiver gone;
  gone.setDefault(respond(410));
  const Hook hook = h.createWebhook();
  // One at a time, so the order they resume in is the order they arrive in.
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, gone.url("/hook"), retryPolicy(5, 50), 1);

  const std::string first = h.post(hook.entrypointId, R"({"n":1})");
  REQUIRE(waitForState(h, target, "disabled"));
  const json view = targetView(h, target);
  CHECK(view.at("disabled_reason") == "gone");
  CHECK(view.at("disabled_at").is_string());
  CHECK(view.at("active") == true);  // the operator's switch is untouched
  // Not failed: it waits for the target.
  const DeliveryRef d1 = h.deliveryOf(hook.webhookId, first, target.id);
  // Pending again after the 410 attempt, so it goes first when enabled.
  REQUIRE(eventually([&] { return h.delivery(d1).attempts == 1; }));
  CHECK(h.delivery(d1).status == "pending");
  CHECK(h.delivery(d1).lastStatusCode == 410);

  REQUIRE(ops.waitForRequests(1, 5s));
  auto events = operationalEvents(ops, secret);
  REQUIRE(hasEvent(events, "target.disabled", target.id));
  CHECK(events.front().at("data").at("reason") == "gone");
  CHECK(events.front().at("data").at("webhook_id") == hook.webhookId);
  CHECK(events.front().at("timestamp").is_string());

  // Made while disabled: stored, not sent.
  const std::string second = h.post(hook.entrypointId, R"({"n":2})");
  std::this_thread::sleep_for(300ms);
  CHECK(gone.requestCount() == 1);
  CHECK(h.delivery(h.deliveryOf(hook.webhookId, second, target.id)).status == "pending");

  gone.setDefault(respond(200));
  // An unknown state is refused and changes nothing.
  send(h, "PATCH", targetPath(target), {{"state", "paused"}}, 400);
  send(h, "PATCH", targetPath(target), {{"state", "disabled"}}, 400);
  CHECK(targetView(h, target).at("state") == "disabled");
  const json enabled = send(h, "PATCH", targetPath(target), {{"active", true}}, 200);
  CHECK(enabled.at("state") == "active");
  CHECK(enabled.at("disabled_reason").is_null());

  REQUIRE(h.waitForStatus(d1, "delivered", 5s));
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, second, target.id), "delivered", 5s));
  const auto requests = gone.requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[1].body == R"({"n":1})");
  CHECK(requests[2].body == R"({"n":2})");
  REQUIRE(eventually([&] { return hasEvent(operationalEvents(ops, secret), "target.enabled", target.id); }));
}

TEST_CASE("a receiver failing for disable_after is disabled (failing); auto_resume enables it") {
  FakeClock clock;
  EngineHarness h(onClock(clock));
  const int port = unusedLoopbackPort();
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(
      hook.webhookId, "http://127.0.0.1:" + std::to_string(port) + "/hook",
      retryPolicy(20, 50, 0.0, 100));
  send(h, "PATCH", targetPath(target), {{"disable_after", 60000}}, 200);

  const std::string eventId = h.post(hook.entrypointId, R"({"n":1})");
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(eventually([&] { return h.delivery(d).attempts >= 2; }));
  CHECK(targetView(h, target).at("state") == "active");  // failing, not for a minute yet
  clock.advance(61s);
  REQUIRE(waitForState(h, target, "disabled"));
  CHECK(targetView(h, target).at("disabled_reason") == "failing");
  // Waits (pending); never dead-lettered for it, and no more attempts.
  REQUIRE(h.waitForStatus(d, "pending", 5s));
  const int attempts = h.delivery(d).attempts;
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(h.delivery(d).status == "pending");
  CHECK(h.delivery(d).attempts == attempts);

  // No probe until probe_interval has passed since the disable.
  send(h, "PATCH", targetPath(target), {{"auto_resume", true}, {"probe_interval", 1000}}, 200);
  Receiver back(port);
  h.health().probeDue();
  std::this_thread::sleep_for(200ms);
  CHECK(back.requestCount() == 0);
  clock.advance(2s);
  h.health().probeDue();
  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  REQUIRE(waitForState(h, target, "active"));
  CHECK(back.requestCount() == 1);
}

TEST_CASE("a success ends the failing streak: a receiver failing now and then is not disabled") {
  FakeClock clock;
  EngineHarness h(onClock(clock));
  Receiver flaky;
  flaky.script({respond(503), respond(200), respond(503), respond(200)});
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, flaky.url("/hook"), retryPolicy(20, 50, 0.0, 100), 1);
  send(h, "PATCH", targetPath(target), {{"disable_after", 60000}}, 200);

  for (const char* body : {R"({"n":1})", R"({"n":2})"}) {
    const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, body), target.id);
    REQUIRE(h.waitForStatus(d, "delivered", 5s));
    CHECK(h.delivery(d).attempts == 2);
  }
  // A minute after the first failure, a new one starts a streak of its own.
  clock.advance(61s);
  flaky.script({respond(503), respond(200)});
  const DeliveryRef third =
      h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, R"({"n":3})"), target.id);
  REQUIRE(h.waitForStatus(third, "delivered", 5s));
  CHECK(h.delivery(third).attempts == 2);
  CHECK(targetView(h, target).at("state") == "active");
}

TEST_CASE("probes go only to targets disabled as failing with auto_resume; a 410 stays disabled") {
  FakeClock clock;
  EngineHarness h(onClock(clock));
  Receiver noResume, gone, resumes;
  noResume.setDefault(respond(503));
  resumes.setDefault(respond(503));
  gone.setDefault(respond(410));
  const Hook hook = h.createWebhook();
  const RetryPolicy retry = retryPolicy(20, 50, 0.0, 100);
  const TargetRecord failing = h.createHttpTarget(hook.webhookId, noResume.url("/a"), retry);
  const TargetRecord goneTarget = h.createHttpTarget(hook.webhookId, gone.url("/b"), retry);
  const TargetRecord control = h.createHttpTarget(hook.webhookId, resumes.url("/c"), retry);
  const json stays = send(h, "PATCH", targetPath(failing),
                          {{"disable_after", 60000}, {"probe_interval", 1000}}, 200);
  CHECK(stays.at("auto_resume") == false);
  send(h, "PATCH", targetPath(control),
       {{"disable_after", 60000}, {"probe_interval", 1000}, {"auto_resume", true}}, 200);

  const std::string eventId = h.post(hook.entrypointId, R"({"n":1})");
  REQUIRE(waitForState(h, goneTarget, "disabled"));
  CHECK(targetView(h, goneTarget).at("disabled_reason") == "gone");
  for (const TargetRecord* t : {&failing, &control}) {
    const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, t->id);
    REQUIRE(eventually([&] { return h.delivery(d).attempts >= 2; }));
  }
  clock.advance(61s);
  for (const TargetRecord* t : {&failing, &control}) {
    REQUIRE(waitForState(h, *t, "disabled"));
    CHECK(targetView(h, *t).at("disabled_reason") == "failing");
  }
  // auto_resume set after the 410: a 410 means gone for good all the same.
  send(h, "PATCH", targetPath(goneTarget), {{"auto_resume", true}, {"probe_interval", 1000}},
       200);
  REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));
  const int failingBefore = noResume.requestCount();
  const int goneBefore = gone.requestCount();
  for (Receiver* r : {&noResume, &gone, &resumes}) r->setDefault(respond(200));

  clock.advance(2s);
  h.health().probeDue();
  // The control target's probe shows the pass ran; once nothing is held,
  // every probe it sent has ended.
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, eventId, control.id), "delivered", 5s));
  REQUIRE(waitForState(h, control, "active"));
  REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));
  CHECK(noResume.requestCount() == failingBefore);
  CHECK(gone.requestCount() == goneBefore);
  CHECK(targetView(h, failing).at("state") == "disabled");
  CHECK(targetView(h, goneTarget).at("state") == "disabled");
  CHECK(targetView(h, goneTarget).at("disabled_reason") == "gone");
}

// A webhook with a target sending to `down` (which answers 503), with
// `fields` (disable_after 60 s among them), disabled as failing once the
// clock has moved a minute; and the delivery that waits for it.
struct DisabledTarget {
  TargetRecord target;
  DeliveryRef waiting;
};

DisabledTarget disabledAsFailing(EngineHarness& h, FakeClock& clock, const Receiver& down,
                                 const json& fields) {
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, down.url("/hook"), retryPolicy(20, 50, 0.0, 100));
  send(h, "PATCH", targetPath(target), fields, 200);
  const DeliveryRef d =
      h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, R"({"n":1})"), target.id);
  REQUIRE(eventually([&] { return h.delivery(d).attempts >= 2; }));
  clock.advance(61s);
  REQUIRE(waitForState(h, target, "disabled"));
  REQUIRE(targetView(h, target).at("disabled_reason") == "failing");
  REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));
  return {target, d};
}

TEST_CASE("after a failed probe the next one waits probe_interval") {
  FakeClock clock;
  EngineHarness h(onClock(clock));
  Receiver down;
  down.setDefault(respond(503));
  const DisabledTarget disabled = disabledAsFailing(
      h, clock, down, {{"disable_after", 60000}, {"auto_resume", true}, {"probe_interval", 1000}});
  const TargetRecord& target = disabled.target;
  const DeliveryRef& d = disabled.waiting;
  const int before = down.requestCount();

  // Every pass probes at most once per probe_interval; once nothing is
  // held, every probe a pass sent has ended.
  const auto pass = [&](std::chrono::milliseconds advance) {
    clock.advance(advance);
    h.health().probeDue();
    REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));
  };
  pass(2s);
  REQUIRE(down.waitForRequests(before + 1, 5s));
  pass(500ms);
  pass(0ms);
  CHECK(down.requestCount() == before + 1);
  pass(500ms);
  REQUIRE(down.waitForRequests(before + 2, 5s));
  CHECK(down.requestCount() == before + 2);
  CHECK(targetView(h, target).at("state") == "disabled");
  CHECK(h.delivery(d).status == "pending");
}

TEST_CASE("a failing target enabled by hand starts a new streak") {
  FakeClock clock;
  EngineHarness h(onClock(clock));
  Receiver down;
  down.setDefault(respond(503));
  const DisabledTarget disabled = disabledAsFailing(h, clock, down, {{"disable_after", 60000}});
  const TargetRecord& target = disabled.target;
  const DeliveryRef& d = disabled.waiting;
  const int attempts = h.delivery(d).attempts;

  CHECK(send(h, "PATCH", targetPath(target), {{"active", true}}, 200).at("state") == "active");
  // Still failing, but for less than disable_after since it was enabled.
  REQUIRE(eventually([&] { return h.delivery(d).attempts >= attempts + 2; }));
  CHECK(targetView(h, target).at("state") == "active");
}

TEST_CASE("changing a target's config resets its open breaker; other changes keep it") {
  HarnessOptions options;
  options.breakerThreshold = 1;
  EngineHarness h(options);
  Receiver down;
  down.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, down.url("/old"), retryPolicy(5, 50));
  h.post(hook.entrypointId, R"({"n":1})");
  REQUIRE(eventually([&] { return h.breakers().status(target.id).state == BreakerState::kOpen; }));
  send(h, "PATCH", targetPath(target), {{"name", "renamed"}}, 200);
  CHECK(h.breakers().status(target.id).state == BreakerState::kOpen);
  Receiver fixed;
  send(h, "PATCH", targetPath(target), {{"config", {{"url", fixed.url("/new")}}}}, 200);
  CHECK(h.breakers().status(target.id).state == BreakerState::kClosed);
  // Tried at once, not after the old breaker's 30 s cooldown.
  REQUIRE(fixed.waitForRequests(1, 3s));
}

TEST_CASE("the operational webhook's own dead letters and disables produce no operational events") {
  EngineHarness h;
  Receiver ops;
  ops.setDefault(respond(410));  // the operational endpoint itself is gone
  setOperationalWebhook(h, ops);
  Receiver down;
  down.setDefault(respond(404));
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, down.url("/hook"), retryPolicy(0, 50));
  h.post(hook.entrypointId, R"({"n":1})");  // a dead letter: one operational event
  REQUIRE(ops.waitForRequests(1, 5s));
  const json setting = send(h, "GET", "/api/v1/settings/operational-webhook", json(), 200);
  const std::string opsWebhook = setting.at("webhook_id");
  const std::string opsTarget = setting.at("target_id");
  REQUIRE(eventually([&] {
    const json t = send(h, "GET", "/api/v1/webhooks/" + opsWebhook + "/targets/" + opsTarget,
                        json(), 200);
    return t.at("state") == "disabled";
  }));
  std::this_thread::sleep_for(300ms);
  // The 410 disabled the operational target; that is not announced to it.
  CHECK(ops.requestCount() == 1);
  CHECK(json::parse(ops.requests().front().body).at("type") == "delivery.dead_lettered");
  CHECK(json::parse(ops.requests().front().body).at("data").at("target_id") == target.id);
}

TEST_CASE("the operational webhook keeps its invariants: no entrypoint, a signing secret") {
  EngineHarness h;
  Receiver ops;
  setOperationalWebhook(h, ops);
  const json setting = send(h, "GET", "/api/v1/settings/operational-webhook", json(), 200);
  const std::string webhook = "/api/v1/webhooks/" + setting.at("webhook_id").get<std::string>();
  const std::string target = webhook + "/targets/" + setting.at("target_id").get<std::string>();

  // Nobody may post into it: no entrypoint, with a body or without.
  const json refused = send(h, "POST", webhook + "/entrypoints", json::object(), 409);
  CHECK(refused.at("error").at("code") == "operational_webhook");
  httplib::Client c = adminClient(h);
  auto bare = c.Post(webhook + "/entrypoints", "", "application/json");
  REQUIRE(bare);
  CHECK(bare->status == 409);
  CHECK(send(h, "GET", webhook + "/entrypoints", json(), 200).at("entrypoints").empty());

  // Its target signs every request: the secret can change, never go.
  for (const json& config : {json{{"signing_secret", nullptr}}, json{{"signing_secret", ""}}}) {
    INFO(config.dump());
    const json r = send(h, "PATCH", target, {{"config", config}}, 400);
    CHECK(r.at("error").at("code") == "invalid_config");
  }
  const json view = send(h, "GET", target, json(), 200);
  CHECK(view.at("config").at("signing_secret") == "[redacted]");
  send(h, "PATCH", target, {{"config", {{"signing_secret", "generate"}}}}, 200);
  send(h, "PATCH", target, {{"name", "ops"}}, 200);

  // So does any target added to it: one without a secret is refused, and
  // nothing is written.
  const json unsigned_ = {{"name", "unsigned"}, {"type", "http"}, {"config", {{"url", ops.url("/ops")}}}};
  const json noSecret = send(h, "POST", webhook + "/targets", unsigned_, 400);
  CHECK(noSecret.at("error").at("code") == "invalid_config");
  CHECK(noSecret.at("error").at("message").get<std::string>().find("config.signing_secret") !=
        std::string::npos);
  CHECK(send(h, "GET", webhook + "/targets", json(), 200).at("targets").size() == 1);
  json signed_ = unsigned_;
  signed_["config"]["signing_secret"] = "generate";
  const json added = send(h, "POST", webhook + "/targets", signed_, 201);
  send(h, "PATCH", webhook + "/targets/" + added.at("id").get<std::string>(),
       {{"config", {{"signing_secret", nullptr}}}}, 400);

  // Once it is no longer the operational webhook, it is an ordinary one.
  send(h, "DELETE", "/api/v1/settings/operational-webhook", json(), 204);
  send(h, "POST", webhook + "/entrypoints", json::object(), 201);
}

TEST_CASE("dead-letter notices are capped per webhook: one webhook's flood hides no other's") {
  FakeClock clock;
  HarnessOptions options;
  options.clock = &clock;
  EngineHarness h(options);
  Receiver ops;
  const std::string secret = setOperationalWebhook(h, ops);
  Receiver down;
  down.setDefault(respond(404));
  const Hook noisy = h.createWebhook("noisy");
  const Hook quiet = h.createWebhook("quiet");
  const TargetRecord noisyTarget = h.createHttpTarget(noisy.webhookId, down.url("/n"), retryPolicy(0, 50));
  const TargetRecord quietTarget = h.createHttpTarget(quiet.webhookId, down.url("/q"), retryPolicy(0, 50));
  const int limit = OperationalEvents::kDeadLettersPerMinute;
  for (int i = 0; i < limit + 3; ++i) h.post(noisy.entrypointId, R"({"n":1})");
  REQUIRE(h.waitForCount(noisy.webhookId, noisyTarget.id, "failed", limit + 3, 10s));
  for (int i = 0; i < 2; ++i) h.post(quiet.entrypointId, R"({"n":1})");
  REQUIRE(h.waitForCount(quiet.webhookId, quietTarget.id, "failed", 2, 10s));
  REQUIRE(ops.waitForRequests(limit + 2, 10s));

  // The minute ends: the noisy webhook's summary counts what it held back.
  clock.advance(61s);
  REQUIRE(ops.waitForRequests(limit + 3, 10s));
  const std::vector<json> events = operationalEvents(ops, secret);
  int noisyNotices = 0, quietNotices = 0;
  json summary;
  for (const json& e : events) {
    const json& data = e.at("data");
    if (data.value("summary", false)) summary = data;
    else if (data.at("webhook_id") == noisy.webhookId) ++noisyNotices;
    else if (data.at("webhook_id") == quiet.webhookId) ++quietNotices;
  }
  CHECK(noisyNotices == limit);
  CHECK(quietNotices == 2);
  REQUIRE(summary.is_object());
  CHECK(summary.at("count") == 3);
  CHECK(summary.at("webhook_id") == noisy.webhookId);
}

TEST_CASE("bad input: unknown fields, states and event types, SSRF-failing URLs are 400") {
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const std::string targets = "/api/v1/webhooks/" + hook.webhookId + "/targets";
  send(h, "POST", targets,
       {{"name", "t"}, {"type", "log"}, {"state", "asleep"}}, 400);
  send(h, "POST", targets, {{"name", "t"}, {"type", "log"}, {"ordering", "lifo"}}, 400);
  send(h, "POST", targets, {{"name", "t"}, {"type", "log"}, {"disable_after", 1000}}, 400);
  send(h, "POST", targets, {{"name", "t"}, {"type", "log"}, {"health", true}}, 400);
  send(h, "POST", targets,
       {{"name", "t"}, {"type", "log"}, {"active", true}, {"state", "inactive"}}, 400);
  CHECK(h.store().listTargets(hook.webhookId)->empty());
  const json fifo = send(h, "POST", targets,
                         {{"name", "t"}, {"type", "log"}, {"ordering", "fifo"}, {"state", "inactive"}},
                         201);
  CHECK(fifo.at("ordering") == "fifo");
  CHECK(fifo.at("state") == "inactive");
  CHECK(fifo.at("disable_after") == 5 * 24 * 3600 * 1000LL);

  const std::string ops = "/api/v1/settings/operational-webhook";
  send(h, "GET", ops, json(), 404);
  const std::string secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  send(h, "PUT", ops, {{"url", "http://169.254.169.254/latest"}, {"signing_secret", secret}}, 400);
  send(h, "PUT", ops, {{"url", "http://10.0.0.1/ops"}, {"signing_secret", secret}}, 400);
  send(h, "PUT", ops, {{"url", "ftp://example.com/"}, {"signing_secret", secret}}, 400);
  send(h, "PUT", ops, {{"url", "http://127.0.0.1:9/ops"}}, 400);  // no secret
  send(h, "PUT", ops, {{"url", "http://127.0.0.1:9/ops"}, {"signing_secret", "plain"}}, 400);
  send(h, "PUT", ops,
       {{"url", "http://127.0.0.1:9/ops"}, {"signing_secret", secret}, {"event_types", {"x"}}}, 400);
  send(h, "PUT", ops, {{"url", "http://127.0.0.1:9/ops"}, {"signing_secret", secret}, {"x", 1}}, 400);
  send(h, "GET", ops, json(), 404);  // none of those changed anything
  CHECK(h.store().listWebhooks()->size() == 1);
  const json set = send(h, "PUT", ops,
                        {{"url", "http://127.0.0.1:9/ops"},
                         {"signing_secret", secret},
                         {"event_types", {"target.disabled"}}},
                        200);
  CHECK(set.at("event_types") == json::array({"target.disabled"}));
  CHECK(set.dump().find(secret) == std::string::npos);
}

TEST_CASE("an open breaker stays open across a restart until its cooldown ends") {
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  options.args = {"--breaker-cooldown-ms", "6000"};
  const std::string deadUrl = "http://127.0.0.1:" + std::to_string(unusedLoopbackPort()) + "/";
  std::string statsPath;
  auto breakerOf = [&](const DaemonProcess& daemon) {
    auto res = DaemonApi(daemon.url()).admin().Get(statsPath);
    REQUIRE(res);
    REQUIRE(res->status == 200);
    return json::parse(res->body).at("targets").at(0).at("breaker");
  };
  auto openGauge = [&](const DaemonProcess& daemon) {
    auto res = DaemonApi(daemon.url()).sender().Get("/metrics");
    REQUIRE(res);
    return valueIn(res->body, "webhooker_circuit_breakers_open", typeIs("http"));
  };
  {
    DaemonProcess daemon(dir.path(), options);
    DaemonApi api(daemon.url());
    const json webhook = api.createWebhook("breaker");
    const std::string webhookId = webhook.at("id");
    api.createTarget(webhookId, {{"name", "dead"},
                                 {"type", "http"},
                                 {"config", {{"url", deadUrl}}},
                                 {"retry", {{"max_retries", 10}, {"base_delay_ms", 100}, {"jitter", 0}}}});
    statsPath = "/api/v1/webhooks/" + webhookId + "/stats";
    REQUIRE(api.sender().Post(DaemonApi::hookPath(webhook), "{}", "application/json")->status == 200);
    REQUIRE(eventually([&] { return breakerOf(daemon).at("state") == "open"; }, 10s));
    CHECK(openGauge(daemon) == 1);
    // Logged (and persisted) by the transition listener just after the change.
    REQUIRE(eventually([&] { return contains(daemon.stderrText(), "breaker.open "); }));
    daemon.kill9();
  }
  DaemonProcess daemon(dir.path(), options);
  const json restored = breakerOf(daemon);
  CHECK(restored.at("state") == "open");
  CHECK(restored.at("retry_in_ms").get<int64_t>() > 0);
  CHECK(restored.at("consecutive_failures") == 5);
  CHECK(openGauge(daemon) == 1);
  // Then the cooldown ends where it would have, and the next attempt probes.
  REQUIRE(eventually([&] { return contains(daemon.stderrText(), "breaker.half_open "); }, 8s));
}

TEST_CASE("a stalled delivery shows in the oldest-pending gauge and the stats API") {
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  options.args = {"--sampler-interval-ms", "100"};
  Receiver slow;
  slow.setDefault(respondAfter(2500ms));
  DaemonProcess daemon(dir.path(), options);
  DaemonApi api(daemon.url());
  const json webhook = api.createWebhook("stall");
  const std::string webhookId = webhook.at("id");
  api.createTarget(webhookId, {{"name", "slow"}, {"type", "http"}, {"config", {{"url", slow.url()}}}});
  auto gauge = [&] {
    auto res = api.sender().Get("/metrics");
    REQUIRE(res);
    return valueIn(res->body, "webhooker_oldest_pending_age_seconds", typeIs("http"));
  };
  CHECK(gauge() == 0);
  REQUIRE(api.sender().Post(DaemonApi::hookPath(webhook), "{}", "application/json")->status == 200);
  REQUIRE(eventually([&] { return gauge() >= 1.0; }, 3s));
  auto stats = api.admin().Get("/api/v1/webhooks/" + webhookId + "/stats");
  REQUIRE(stats);
  const json target = json::parse(stats->body).at("targets").at(0);
  CHECK(target.at("oldest_pending_age_seconds").get<double>() >= 1.0);
  CHECK(target.at("oldest_waiting").at("status") == "pending");
  // Delivered: nothing is due any more.
  REQUIRE(eventually([&] { return gauge() == 0; }, 5s));
}

TEST_CASE("CLI: ordering and state of targets, enable, and the operational webhook") {
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  DaemonProcess daemon(dir.path(), options);
  const std::vector<std::string> env = {std::string("WEBHOOKER_TOKEN=") + DaemonApi::kAdminToken,
                                        "WEBHOOKER_URL=" + daemon.url()};
  const std::string webhookId = DaemonApi(daemon.url()).createWebhook("cli").at("id");
  const CommandResult created =
      runWebhooker({"targets", "create", webhookId, "--name", "ordered", "--type", "http",
                    "--target-url", "http://127.0.0.1:9/hook", "--ordering", "fifo",
                    "--disable-after-ms", "60000", "--auto-resume", "--json"},
                   env);
  REQUIRE_MESSAGE(created.exitCode == 0, created.err);
  const json target = json::parse(created.out);
  CHECK(target.at("ordering") == "fifo");
  CHECK(target.at("disable_after") == 60000);
  CHECK(target.at("auto_resume") == true);
  const CommandResult listed = runWebhooker({"targets", "list", webhookId}, env);
  CHECK(contains(listed.out, "STATE"));
  CHECK(contains(listed.out, "fifo"));
  const CommandResult bad =
      runWebhooker({"targets", "update", webhookId, target.at("id"), "--ordering", "lifo"}, env);
  CHECK(bad.exitCode != 0);
  CHECK(contains(bad.err + bad.out, "ordering"));
  const CommandResult enabled = runWebhooker({"targets", "enable", webhookId, target.at("id")}, env);
  CHECK(enabled.exitCode == 0);

  const CommandResult refused =
      runWebhooker({"operational-webhook", "set", "--target-url", "http://10.1.2.3/ops",
                    "--signing-secret", "generate"},
                   env);
  CHECK(refused.exitCode != 0);
  CHECK(contains(refused.err + refused.out, "blocked_destination"));
  const CommandResult set = runWebhooker(
      {"operational-webhook", "set", "--target-url", "http://127.0.0.1:9/ops", "--signing-secret",
       "-", "--event-type", "target.disabled", "--event-type", "target.enabled"},
      env, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
  REQUIRE_MESSAGE(set.exitCode == 0, set.err);
  const CommandResult shown = runWebhooker({"operational-webhook", "show"}, env);
  CHECK(contains(shown.out, "[redacted]"));
  CHECK(!contains(shown.out, "MfKQ9r8"));
  CHECK(contains(shown.out, "target.enabled"));
  CHECK(runWebhooker({"operational-webhook", "remove"}, env).exitCode == 0);
  CHECK(runWebhooker({"operational-webhook", "show"}, env).exitCode != 0);
}

TEST_CASE("the documented alert rules pass promtool check rules") {
  const char* source = std::getenv("WEBHOOKER_SOURCE_DIR");
  REQUIRE(source);
  const CommandResult which = runCommand({"sh", "-c", "command -v promtool"}, {}, 10s);
  if (which.exitCode != 0) {
    MESSAGE("skipped: promtool is not installed (Debian package prometheus)");
    return;
  }
  const CommandResult r = runCommand(
      {"promtool", "check", "rules", std::string(source) + "/docs/prometheus-alerts.yml"}, {}, 30s);
  INFO(r.out, r.err);
  CHECK(r.exitCode == 0);
  CHECK(contains(r.out, "SUCCESS: 3 rules found"));
}

}  // namespace
}  // namespace webhooker::testing
