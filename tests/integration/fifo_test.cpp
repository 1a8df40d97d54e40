// FIFO targets ("ordering": "fifo"): one delivery at a time, in the order
// the events were received; a retrying head holds the ones behind it, a
// dead-lettered head releases the next, and the order holds across a
// disable/enable and a kill -9 of the real daemon. The receivers number
// what they see; the check is that the numbers never go down and repeat
// only the last one sent (a retry, or a resend after a crash).
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/engine_harness.h"
#include "tests/support/fault_receiver.h"
#include "tests/support/receiver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

template <typename AnyReceiver>
std::vector<int> sequenceSeen(const AnyReceiver& receiver) {
  std::vector<int> out;
  for (const ReceivedRequest& r : receiver.requests()) out.push_back(json::parse(r.body).at("seq"));
  return out;
}

// Non-decreasing, each repeat the one just sent, every number from 1 to n.
void checkFifo(const std::vector<int>& seen, int n) {
  REQUIRE(!seen.empty());
  int expectedNext = 1;
  for (size_t i = 0; i < seen.size(); ++i) {
    CAPTURE(i);
    if (i > 0 && seen[i] == seen[i - 1]) continue;  // a repeat of the last one sent
    REQUIRE(seen[i] == expectedNext);
    ++expectedNext;
  }
  CHECK(expectedNext == n + 1);
}

TEST_CASE("FIFO: 200 events in order through 503s and a dropped connection") {
  EngineHarness h;
  FaultReceiver receiver;
  // One request at a time, so the script is by position: event 1 gets two
  // 503s, event 50 two more, and the connection of event 100 is dropped.
  std::vector<Fault> script;
  for (int i = 0; i < 206; ++i) script.push_back(fault::respond(200));
  script[0] = script[1] = fault::respond(503);
  script[51] = script[52] = fault::respond(503);
  script[101] = fault::closeWithoutAnswer();
  receiver.script(script);
  const Hook hook = h.createWebhook();
  TargetRecord target = h.createHttpTarget(hook.webhookId, receiver.url("/fifo"),
                                           retryPolicy(5, 30), /*maxConcurrency=*/8);
  h.makeFifo(target);

  constexpr int kEvents = 200;
  for (int i = 1; i <= kEvents; ++i) h.post(hook.entrypointId, json{{"seq", i}}.dump());
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 30s));
  const std::vector<int> seen = sequenceSeen(receiver);
  checkFifo(seen, kEvents);
  CHECK(seen.size() == kEvents + 5);
  CHECK(seen[0] == 1);
  CHECK(seen[2] == 1);
}

TEST_CASE("FIFO: a dead-lettered head releases the next; a disabled target resumes in order") {
  EngineHarness h;
  Receiver receiver;
  // Event 1 is refused for good (404: dead letter); then a 410 disables the
  // target while event 3 is the head.
  receiver.script({respond(404), respond(200), respond(410)});
  const Hook hook = h.createWebhook();
  TargetRecord target = h.createHttpTarget(hook.webhookId, receiver.url("/fifo"), retryPolicy(5, 30));
  h.makeFifo(target);

  std::vector<std::string> events;
  for (int i = 1; i <= 6; ++i) events.push_back(h.post(hook.entrypointId, json{{"seq", i}}.dump()));
  REQUIRE(eventually([&] {
    auto t = h.store().getTarget(hook.webhookId, target.id);
    return t && t->disabled;
  }));
  CHECK(h.delivery(h.deliveryOf(hook.webhookId, events[0], target.id)).failureReason == "http_404");
  // Disabled: its head waits on disk, not in memory.
  CHECK(eventually([&] { return !h.engine().fifoHead(target.id); }));
  h.setTargetActive(target, true);  // as PATCH {"active": true} does, once it clears the disable
  REQUIRE(h.store().setTargetDisabled(hook.webhookId, target.id, std::nullopt));
  h.engine().targetChanged(hook.webhookId, target.id);
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 5, 10s));
  const std::vector<int> seen = sequenceSeen(receiver);
  CHECK(seen == std::vector<int>{1, 2, 3, 3, 4, 5, 6});
}

TEST_CASE("FIFO across kill -9: the daemon resumes with the oldest waiting delivery") {
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  Receiver receiver;
  receiver.setDefault(respondAfter(15ms));
  std::string webhookId;
  std::string targetId;
  constexpr int kEvents = 60;
  {
    DaemonProcess daemon(dir.path(), options);
    DaemonApi api(daemon.url());
    const json webhook = api.createWebhook("fifo");
    webhookId = webhook.at("id");
    targetId = api.createTarget(webhookId, {{"name", "ordered"},
                                            {"type", "http"},
                                            {"ordering", "fifo"},
                                            {"config", {{"url", receiver.url("/fifo")}}},
                                            {"retry", {{"base_delay_ms", 100}}}})
                   .at("id");
    httplib::Client sender = api.sender();
    for (int i = 1; i <= kEvents; ++i)
      REQUIRE(sender.Post(DaemonApi::hookPath(webhook), json{{"seq", i}}.dump(), "application/json")
                  ->status == 200);
    REQUIRE(receiver.waitForRequests(10, 10s));
    daemon.kill9();
  }
  const size_t beforeRestart = receiver.requestCount();
  CHECK(beforeRestart < kEvents);  // killed mid-stream
  DaemonProcess daemon(dir.path(), options);
  REQUIRE(eventually([&] { return receiver.requestCount() >= kEvents; }, 15s));
  REQUIRE(eventually(
      [&] {
        const std::vector<int> seen = sequenceSeen(receiver);
        return !seen.empty() && seen.back() == kEvents;
      },
      5s));
  checkFifo(sequenceSeen(receiver), kEvents);
}

}  // namespace
}  // namespace webhooker::testing
